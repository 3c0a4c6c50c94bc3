"""Programmatic dependent launch (Hopper): a kernel launched with the driver's programmatic stream serialization may
start while the kernel before it on the stream finishes. Its blocks take SMs as the earlier kernel's blocks leave
and wait (griddepcontrol.wait, `gemmc_grid_wait` in hopper/hopper_device.cuh.j2) before they touch global memory
until the earlier kernel has completed and its writes are visible, so the launch's latency hides under the earlier
kernel's end. An earlier kernel that never executes griddepcontrol.launch_dependents (none of gemmc's does) lets the
dependent start as its last blocks exit; one that executes it earlier (another library's) lets it start sooner, and
the wait still holds the dependent's memory accesses until that kernel has completed.

CuPy's kernel call has no launch attributes, so the launch goes through the driver's cuLaunchKernelEx (ctypes: libcuda
is loaded by any CUDA process), from an argument block built once (runtime/launcher.py)."""

from __future__ import annotations

import ctypes
from functools import cache
from typing import Any

from gemmc.errors import GemmcError
from gemmc.runtime.device import driver_error, driver_function

ENABLED = True  # off: the plain launch (the benchmarks' ablation)
PROGRAMMATIC_STREAM_SERIALIZATION = 6  # CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION (cuda.h)


class _Attribute(ctypes.Structure):  # CUlaunchAttribute: the id, padding to 8 bytes, a 64-byte value union
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_int), ("rest", ctypes.c_char * 60)]


class _Config(ctypes.Structure):  # CUlaunchConfig
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("smem", ctypes.c_uint),
                ("stream", ctypes.c_void_p), ("attrs", ctypes.POINTER(_Attribute)), ("count", ctypes.c_uint)]


@cache
def _launch_ex() -> Any:
    return driver_function("cuLaunchKernelEx", (ctypes.POINTER(_Config), ctypes.c_void_p, ctypes.c_void_p,
                                                ctypes.c_void_p), "for a dependent launch (CUDA 12+)")


_ATTRIBUTE = ctypes.pointer(_Attribute(PROGRAMMATIC_STREAM_SERIALIZATION, b"", 1))  # allowed: 1


def launch_params(func: int, grid: int, block: int, smem: int, stream: int, params: int,
                  config: _Config | None = None) -> None:
    """Launch the CUfunction `func` with programmatic stream serialization, its arguments the array of pointers at
    host address `params` (cuLaunchKernel's kernelParams). `config`: a launch configuration (`new_config`) that the
    caller keeps and no other thread uses at once, filled in place rather than made for each launch."""
    if config is None:
        config = new_config()
    config.grid[0], config.block[0], config.smem, config.stream = grid, block, smem, stream
    status = _launch_ex()(config, func, params, None)
    if status != 0:
        raise GemmcError(f"the CUDA driver refused a launch (cuLaunchKernelEx, CUfunction 0x{func:x}, grid {grid}, "
                         f"block {block}, {smem} B of shared memory): {driver_error(status)}")


def new_config() -> _Config:
    """A launch configuration with the attribute, its grid, block, shared memory and stream set by each launch."""
    return _Config((0, 1, 1), (0, 1, 1), 0, None, _ATTRIBUTE, 1)

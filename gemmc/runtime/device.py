"""Hardware facts read off the current device, in the same record offline compiles use, and the driver's own calls
that CuPy does not wrap."""

from __future__ import annotations

import ctypes
import dataclasses
from functools import cache
from typing import Any

from gemmc.errors import GemmcError, NoGpuError
from gemmc.ir.hardware import TARGETS, Hardware


def cupy():
    try:
        import cupy as cp
    except ImportError:
        raise NoGpuError("running a kernel needs CuPy and a GPU (compiling and inspecting schedules does not): "
                         "pip install 'gemmc[gpu]', in a clone pip install -e '.[gpu]' ('.[gpu-cuda12]' with "
                         "CUDA 12)") from None
    return cp


@cache
def _libcuda() -> Any:
    """libcuda.so.1 (which any CUDA process has loaded), or None without a CUDA driver (HIP): opened once either way,
    since a failed dlopen costs tens of microseconds and a launch path may ask on every call."""
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None


@cache
def driver_call(name: str) -> Any:
    """The CUDA driver's function `name` (ctypes), looked up once: the caller sets its argtypes. OSError where there is
    no driver or it lacks the function."""
    lib = _libcuda()
    if lib is None:
        raise OSError("no CUDA driver (libcuda.so.1)")
    try:
        return getattr(lib, name)
    except AttributeError as err:
        raise OSError(f"the CUDA driver has no {name}: {err}") from None


def driver_function(name: str, argtypes: tuple[Any, ...], needed_for: str) -> Any:
    """The driver's function `name` (driver_call) with its argument types set and a CUresult returned; a GemmcError
    saying what needs it (`needed_for`: "to ...") where there is no driver or it lacks the function."""
    try:
        fn = driver_call(name)
    except OSError as err:
        raise GemmcError(f"the CUDA driver's {name} (libcuda.so.1) is needed {needed_for}: {err}") from None
    fn.argtypes = list(argtypes)
    fn.restype = ctypes.c_int
    return fn


def driver_error(status: int) -> str:
    """A CUresult as its name and number (`CUDA_ERROR_INVALID_VALUE (1)`), for the errors that report one."""
    try:
        name = driver_call("cuGetErrorName")
    except OSError:
        return f"CUresult {status}"
    text = ctypes.c_char_p()
    name.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    if name(status, ctypes.byref(text)) != 0 or not text.value:
        return f"CUresult {status}"
    return f"{text.value.decode()} ({status})"


def require_gpu() -> None:
    """Raise NoGpuError unless CuPy sees a device (`gemmc run` asks before it allocates anything)."""
    cp = cupy()
    try:
        count = cp.cuda.runtime.getDeviceCount()
    except Exception as err:  # noqa: BLE001 - CuPy's own errors for no driver / no device: all mean "no GPU"
        raise NoGpuError(f"no GPU: CuPy found no usable device ({err})") from None
    if count < 1:
        raise NoGpuError("no GPU: CuPy found no device")


@cache
def hardware() -> Hardware:
    """The current device as a `Hardware` record: SMs, registers, shared memory and limits from its properties;
    bandwidth, FP32 rate and the cluster fill from the target table of its architecture (they are not device
    properties; the cluster fill only where the SM count matches the part it was measured on)."""
    cp = cupy()
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    if cp.cuda.runtime.is_hip:
        arch = props["gcnArchName"].decode().split(":")[0] if isinstance(props["gcnArchName"], bytes) \
            else str(props["gcnArchName"]).split(":")[0]
    else:
        arch = f"sm_{props['major']}{props['minor']}"
    base = TARGETS.get(arch) or TARGETS["sm_90" if not cp.cuda.runtime.is_hip else "gfx90a"]
    sms = props["multiProcessorCount"]
    return dataclasses.replace(
        base, arch=arch, sm_count=sms, warp_size=props["warpSize"],
        cluster_fill=base.cluster_fill if sms == base.sm_count else (),  # measured for that part's GPCs only
        max_threads_per_block=props["maxThreadsPerBlock"],
        max_threads_per_sm=props["maxThreadsPerMultiProcessor"],
        max_blocks_per_sm=props.get("maxBlocksPerMultiProcessor", base.max_blocks_per_sm),
        regs_per_sm=props["regsPerMultiprocessor"],
        smem_per_sm=props["sharedMemPerMultiprocessor"],
        smem_per_block=props.get("sharedMemPerBlockOptin", base.smem_per_block) or base.smem_per_block,
        smem_per_block_default=props["sharedMemPerBlock"],
        l2_bytes=props["l2CacheSize"])


def device_name() -> str:
    cp = cupy()
    name = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)

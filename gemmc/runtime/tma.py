"""Launch a kernel that reads A and B through TMA tensor maps (FamilyPlan.tensor_maps: the hopper family).

The tensor maps are 128-byte descriptors the host encodes with the driver's cuTensorMapEncodeTiled (through ctypes:
libcuda is loaded by any CUDA process) and the kernel takes by value as `__grid_constant__` parameters. They name
the arrays' addresses, so they are encoded once per set of arrays and kept (a training loop reuses a few buffers).
TMA reads lines whose distance is a multiple of 16 bytes from a 16-byte aligned base; an operand that is not (lines
not a multiple of 16 bytes, or a view at an odd offset) is first copied into scratch memory with padded lines.
A plan with `tma_store` also takes a map of row-major C, whose epilogue TMA stores; a C that TMA cannot describe gets
a zeroed map and the flag that has the kernel store from its accumulators instead.
A plan with a pre-pass (an f16/bf16 split of f32 data) has it write the parts of A and B as planes into the kernel's
scratch, and the maps read those planes instead of A and B; the kernel also takes the inverse line scales there.
"""

from __future__ import annotations

import ctypes
from functools import cache
from typing import Any, Protocol, cast

import numpy as np

from gemmc.errors import GemmcError
from gemmc.families.tma_loop import TMA_ALIGN, TMAP_BYTES
from gemmc.ir.types import DType, Layout
from gemmc.runtime.device import cupy, driver_error, driver_function, hardware
from gemmc.runtime.executable import Executable
from gemmc.runtime.launcher import Launcher

TMAP_DTYPE = {DType.F16: 6, DType.F32: 7, DType.BF16: 9}  # CU_TENSOR_MAP_DATA_TYPE_FLOAT16 / _FLOAT32 / _BFLOAT16
SWIZZLE_128B = 3  # CU_TENSOR_MAP_SWIZZLE_128B: the layout the kernel's wgmma descriptors describe
L2_PROMOTION_256B = 3  # CU_TENSOR_MAP_L2_PROMOTION_L2_256B
TMAP = np.dtype([("opaque", "<u8", (TMAP_BYTES // 8,))])  # a CUtensorMap, passed by value (a 1-element array)
TMAP_ARG = ctypes.c_uint64 * (TMAP_BYTES // 8)  # the same as a cuLaunchKernel argument (by value)
class Tensor(Protocol):
    """How TMA sees one operand: `outer` lines of `inner` elements, boxes of `box`; `padded`: a staged line."""

    inner: int
    outer: int
    box: tuple[int, int]

    @property
    def padded(self) -> int: ...


class TmaPlan(Protocol):
    """What a plan with `tensor_maps` tells the launch (the hopper family's HopperPlan)."""

    @property
    def threads(self) -> int: ...

    @property
    def smem_bytes(self) -> int: ...

    @property
    def tma_store(self) -> bool: ...

    @property
    def c_box(self) -> tuple[int, int]: ...

    @property
    def c_bytes(self) -> int: ...

    @property
    def elem(self) -> int: ...

    @property
    def tma_dtype(self) -> str: ...

    @property
    def prologue(self) -> tuple[int, int] | None: ...

    @property
    def regions(self) -> tuple[int, int, int, int, int]: ...

    def tensors(self, m: int, n: int, k: int) -> tuple[Tensor, Tensor]: ...

    def grid(self, m: int, n: int, sm_count: int) -> int: ...


MAPS_KEPT = 32  # tensor maps per kernel, by (operand, address, line pitch)


@cache
def _driver() -> Any:
    u64p, u32p = ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32)
    return driver_function("cuTensorMapEncodeTiled", (ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p,
                                                      u64p, u64p, u32p, u32p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                                      ctypes.c_int), "to encode TMA tensor maps")


def encode(dtype: DType, ptr: int, inner: int, outer: int, pitch: int, box: tuple[int, int]) -> np.ndarray:
    """The tensor map of a 2-D tensor of `outer` lines of `inner` elements `pitch` bytes apart, read in boxes of
    `box` (innermost first) with the 128-byte swizzle; out-of-bounds elements read as zero."""
    return encode_tensor(dtype, ptr, (inner, outer), (pitch,), box)


def encode_tensor(dtype: DType, ptr: int, dims: tuple[int, ...], pitches: tuple[int, ...],
                  box: tuple[int, ...]) -> np.ndarray:
    """The tensor map of a tensor of `dims` elements (innermost first), each dimension but the first `pitches` bytes
    apart, read in boxes of `box` with the 128-byte swizzle; out-of-bounds elements read as zero."""
    out = np.zeros(1, dtype=TMAP)
    rank = len(dims)
    c_dims = (ctypes.c_uint64 * rank)(*dims)
    strides = (ctypes.c_uint64 * max(1, rank - 1))(*pitches)
    boxes = (ctypes.c_uint32 * rank)(*box)
    unit = (ctypes.c_uint32 * rank)(*([1] * rank))
    status = _driver()(out.ctypes.data, TMAP_DTYPE[dtype], rank, ptr, c_dims, strides, boxes, unit, 0, SWIZZLE_128B,
                       L2_PROMOTION_256B, 0)
    if status != 0:
        shape = " x ".join(map(str, dims))
        raise GemmcError(f"cuTensorMapEncodeTiled refused a {shape} tensor at 0x{ptr:x} (pitches {pitches} B, "
                         f"box {box}): {driver_error(status)}")
    return out


def _staged(kernel: Executable, name: str, ptr: int, inner: int, outer: int, padded: int, elem: int,
            stream: Any) -> int:
    """A copy of the operand with lines of `padded` elements (16-byte multiples) in scratch kept per kernel and
    stream: the copy is enqueued on `stream` before the kernel that reads it, and a call of the same kernel on
    another stream at once (copies of one GEMM in a concurrent group) stages into scratch of its own."""
    cp = cupy()
    scratch = kernel.staging
    size = padded * outer * elem
    key = (name, int(stream.ptr))
    buf = scratch.get(key)
    if buf is None or buf.nbytes < size:
        buf = scratch[key] = cp.empty(size, dtype=cp.uint8)
    cp.cuda.runtime.memcpy2DAsync(buf.data.ptr, padded * elem, ptr, inner * elem, inner * elem, outer,
                                  cp.cuda.runtime.memcpyDeviceToDevice, stream.ptr)
    return int(buf.data.ptr)


def _kept(kernel: Executable, key: tuple[str, int, int], dtype: DType, inner: int, outer: int,
          box: tuple[int, int]) -> tuple[np.ndarray, int]:
    """The tensor map of (operand, address, pitch) and the host address of its bytes, encoded on first use and kept
    (the MAPS_KEPT most recent). The caller holds the returned map until its launch has copied it: another thread's
    calls may evict it meanwhile."""
    maps = kernel.tensor_maps
    found = maps.get(key)
    if found is None:
        tmap = encode(dtype, key[1], inner, outer, key[2], box)
        found = maps[key] = (tmap, tmap.ctypes.data)
        if len(maps) > MAPS_KEPT:
            maps.popitem(last=False)
    else:
        try:
            maps.move_to_end(key)
        except KeyError:  # evicted by another thread's calls since the lookup: `found` still holds its bytes
            pass
    return found


_NO_MAP = np.zeros(1, dtype=TMAP)  # the C map of a kernel that stores C from its accumulators (never read)
_NO_MAP_AT = (_NO_MAP, _NO_MAP.ctypes.data)
# The arguments after the three maps: TMA-stores flag, C, ldc, m, n, k, alpha, beta (hopper.cu.j2's parameters), then
# with a pre-pass the addresses of the line scales
_AFTER_MAPS = (ctypes.c_int32, ctypes.c_uint64, ctypes.c_int64, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32,
               ctypes.c_float, ctypes.c_float)


def _launcher(kernel: Executable, plan: TmaPlan) -> Launcher:
    """The kernel's argument block (made on its first launch, kept on the Executable): the maps passed from their
    kept bytes, the other arguments stored by each call."""
    if kernel.launcher is None:
        kinds = _AFTER_MAPS + (ctypes.c_uint64, ctypes.c_uint64) * (plan.prologue is not None)
        kernel.launcher = Launcher(kernel.function, [TMAP_ARG() for _ in range(3)] + [k() for k in kinds], None,
                                   first=3, dependent=True)
    return kernel.launcher


def enqueue_tma(kernel: Executable, a: int, b: int, c: int, alpha: Any, beta: Any, stream: Any) -> None:
    """C = alpha A B + beta C for the kernel's one problem, with A, B, C at device addresses a, b, c (checked)."""
    ir = kernel.ir
    plan = cast(TmaPlan, ir.plan)
    p = ir.problems[0]
    elem, dtype = plan.elem, DType(plan.tma_dtype)
    maps: list[tuple[np.ndarray, int]] = []
    tail: tuple = ()
    if plan.prologue is not None:  # the pre-pass writes the planes the maps read, and the line scales
        base = int(kernel.scratch(stream).data.ptr)
        kernel.prologue_function((plan.prologue[0], 1, 1), (plan.prologue[1], 1, 1),
                                 (np.uint64(a), np.uint64(b), np.uint64(base)), stream=stream)
        at = plan.regions
        a, b = base + at[0], base + at[1]
        tail = (base + at[2], base + at[3])
    for name, ptr, op in zip("AB", (a, b), plan.tensors(p.m, p.n, p.k), strict=True):
        pitch = op.inner * elem
        if pitch % TMA_ALIGN or ptr % TMA_ALIGN:
            ptr, pitch = _staged(kernel, name, ptr, op.inner, op.outer, op.padded, elem, stream), op.padded * elem
        maps.append(_kept(kernel, (name, ptr, pitch), dtype, op.inner, op.outer, op.box))
    ldc = p.n if ir.layout_c is Layout.ROW else p.m
    c_pitch = ldc * plan.c_bytes
    c_by_tma = plan.tma_store and c_pitch % TMA_ALIGN == 0 and c % TMA_ALIGN == 0
    maps.append(_kept(kernel, ("C", c, c_pitch), ir.c_dtype, p.n, p.m, plan.c_box) if c_by_tma else _NO_MAP_AT)
    grid = plan.grid(p.m, p.n, hardware().sm_count)
    values = (int(c_by_tma), c, ldc, p.m, p.n, p.k, float(alpha), float(beta), *tail)
    # the kernel waits for the one before it (gemmc_grid_wait): a dependent launch (runtime/pdl.py)
    _launcher(kernel, plan)(grid, plan.threads, plan.smem_bytes, int(stream.ptr), values,
                            structs=tuple(at for _, at in maps))

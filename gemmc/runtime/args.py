"""Argument checks before any launch: every problem names the argument and what was expected."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gemmc.errors import GemmcError
from gemmc.ir.nodes import Kernel
from gemmc.ir.types import DType, Layout
from gemmc.runtime.device import cupy

NUMPY_DTYPES = {DType.F32: "float32", DType.F64: "float64", DType.F16: "float16", DType.BF16: "bfloat16"}


def as_device_array(obj: Any, what: str) -> Any:
    """A CuPy view of `obj` (CuPy array, __cuda_array_interface__, or DLPack), without copying."""
    cp = cupy()
    if isinstance(obj, cp.ndarray):
        return obj
    if hasattr(obj, "__cuda_array_interface__"):
        return cp.asarray(obj)
    if hasattr(obj, "__dlpack__"):
        try:
            return cp.from_dlpack(obj)
        except Exception as err:  # noqa: BLE001 - DLPack producers raise anything; report it as the argument's
            raise GemmcError(f"{what}: cannot view it on the GPU through DLPack ({err})") from None
    raise GemmcError(f"{what}: expected a GPU array (CuPy, or an object with __cuda_array_interface__ or DLPack), "
                     f"got {type(obj).__name__}")


def _dense(arr: Any, layout: Layout) -> bool:
    """True when a 2-D array is densely packed in `layout` (row: C order, col: Fortran order)."""
    rows, cols = arr.shape
    item = arr.itemsize
    if layout is Layout.ROW:
        return (cols <= 1 or arr.strides[1] == item) and (rows <= 1 or arr.strides[0] == cols * item)
    return (rows <= 1 or arr.strides[0] == item) and (cols <= 1 or arr.strides[1] == rows * item)


@dataclass(frozen=True, slots=True)
class Operand:
    letter: str
    layout: Layout
    shape: tuple[int, int]


def operands(kernel: Kernel, index: int) -> tuple[Operand, Operand, Operand]:
    p = kernel.problems[index % len(kernel.problems)]
    return (Operand("A", kernel.layout_a, (p.m, p.k)), Operand("B", kernel.layout_b, (p.k, p.n)),
            Operand("C", kernel.layout_c, (p.m, p.n)))


def check_matrix(arr: Any, what: str, op: Operand, dtype: DType, device: int, problem: str) -> None:
    if arr.ndim != 2:
        raise GemmcError(f"{what}: expected a 2-D array, got {arr.ndim}-D with shape {tuple(arr.shape)}")
    if str(arr.dtype) != NUMPY_DTYPES[dtype]:
        raise GemmcError(f"{what}: expected dtype {NUMPY_DTYPES[dtype]} (the schedule's dtype {dtype.value}), "
                         f"got {arr.dtype}")
    if tuple(arr.shape) != op.shape:
        raise GemmcError(f"{what}: expected shape {op.shape} for {op.letter} of problem '{problem}', "
                         f"got {tuple(arr.shape)}")
    if arr.device.id != device:
        raise GemmcError(f"{what}: lives on GPU {arr.device.id}, but the current device is GPU {device}")
    if not _dense(arr, op.layout):
        other = Layout.COL if op.layout is Layout.ROW else Layout.ROW
        if _dense(arr, other):
            raise GemmcError(f"{what}: the array is {other.value}-major but the schedule says "
                             f"`layout {op.letter} {op.layout.value}`; write `layout {op.letter} {other.value}` "
                             f"or pass a {op.layout.value}-major copy")
        raise GemmcError(f"{what}: expected a densely packed {op.layout.value}-major array, got strides "
                         f"{tuple(arr.strides)} (a view the kernel cannot read); pass a contiguous copy")


def batch_pointers(kernel: Kernel, As: Any, Bs: Any, Cs: Any) -> tuple[list[int], list[int], list[int], list[Any]]:
    """Check every argument and return the per-problem data pointers of A, B and C (and the arrays, to keep
    them alive until the launch is queued)."""
    cp = cupy()
    device = cp.cuda.Device().id
    batch = kernel.batch_size
    ptrs: tuple[list[int], list[int], list[int]] = ([], [], [])
    keep: list[Any] = []
    for slot, (name, group) in enumerate((("As", As), ("Bs", Bs), ("Cs", Cs))):
        if kernel.count is not None and not isinstance(group, Sequence):
            arr = as_device_array(group, name)
            if arr.ndim != 3 or arr.shape[0] != batch:
                raise GemmcError(f"{name}: expected a 3-D array of {batch} matrices (the schedule's count), "
                                 f"got shape {tuple(arr.shape)}")
            matrices = [arr[i] for i in range(batch)]
            keep.append(arr)
        else:
            if not isinstance(group, Sequence) or isinstance(group, str):
                raise GemmcError(f"{name}: expected a list of {batch} arrays in batch order, got {type(group).__name__}")
            if len(group) != batch:
                raise GemmcError(f"{name}: expected {batch} arrays (one per problem), got {len(group)}")
            matrices = [as_device_array(m, f"{name}[{i}]") for i, m in enumerate(group)]
            keep.extend(matrices)
        for i, arr in enumerate(matrices):
            op = operands(kernel, i)[slot]
            check_matrix(arr, f"{name}[{i}]", op, kernel.dtype, device, kernel.problems[i % len(kernel.problems)].name)
            ptrs[slot].append(arr.data.ptr)
    if len(set(ptrs[2])) != len(ptrs[2]):
        raise GemmcError("Cs: two problems write the same output array; each C must be its own memory")
    return ptrs[0], ptrs[1], ptrs[2], keep

"""Argument checks before any launch: every problem names the argument and what was expected."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from gemmc.errors import GemmcError
from gemmc.ir.nodes import Kernel
from gemmc.ir.types import DType, Layout
from gemmc.runtime.device import cupy


class ShapeMismatch(GemmcError):
    """The arrays are fine but their sizes (or count) are not the plan's: the caller may re-plan."""


NUMPY_DTYPES = {DType.F32: "float32", DType.F64: "float64", DType.F16: "float16", DType.BF16: "bfloat16"}


class ArrayInfo(NamedTuple):
    """What the checks need of one device array, read without building a CuPy view when possible: a call on a
    batch of hundreds of arrays spends its host time here, so this is a plain tuple and strides are in elements."""

    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # elements
    dtype: str  # numpy-style name: float32, float64, float16, bfloat16
    itemsize: int
    device: int | None  # None: unknown (a bare __cuda_array_interface__), taken to be the current device

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def matrix(self, i: int) -> ArrayInfo:
        """The i-th matrix of a 3-D array."""
        return ArrayInfo(self.ptr + i * self.strides[0] * self.itemsize, self.shape[1:], self.strides[1:],
                         self.dtype, self.itemsize, self.device)


# numpy dtype characters and torch dtypes -> names; looked up, never formatted, on the hot path.
_CHAR_NAMES = {"f": "float32", "d": "float64", "e": "float16"}
_TORCH_NAMES: dict[Any, str] = {}


def _torch_name(dtype: Any) -> str:
    name = _TORCH_NAMES.get(dtype)
    if name is None:
        name = _TORCH_NAMES[dtype] = str(dtype).removeprefix("torch.")
    return name


def _from_cupy(arr: Any) -> ArrayInfo:
    data, item, dt = arr.data, arr.itemsize, arr.dtype
    name = _CHAR_NAMES.get(dt.char) or dt.name
    return ArrayInfo(data.ptr, arr.shape, tuple(s // item for s in arr.strides), name, item, data.device_id)


def describe(obj: Any, group: str, index: int | None = None) -> ArrayInfo:
    """ArrayInfo of a CuPy array, a torch tensor, anything with __cuda_array_interface__, or a DLPack producer.
    `group[index]` names the argument in errors."""
    kind = type(obj)
    module = kind.__module__.split(".")[0]
    if module == "cupy":
        return _from_cupy(obj)
    what = group if index is None else f"{group}[{index}]"
    if module == "torch" and kind.__name__ in ("Tensor", "Parameter"):
        if not obj.is_cuda:
            raise GemmcError(f"{what}: the tensor is on the CPU; move it to the GPU (.cuda()) first")
        return ArrayInfo(obj.data_ptr(), tuple(obj.shape), obj.stride(), _torch_name(obj.dtype), obj.element_size(),
                         obj.get_device())
    if module == "numpy":
        raise GemmcError(f"{what}: expected a GPU array, got a host (numpy) array; copy it to the GPU first")
    if hasattr(obj, "__cuda_array_interface__"):
        import numpy as np

        cai = obj.__cuda_array_interface__
        dt = np.dtype(cai["typestr"])
        shape = tuple(cai["shape"])
        strides = cai.get("strides")
        if strides is None:  # C-contiguous
            acc, out = dt.itemsize, []
            for extent in reversed(shape):
                out.append(acc)
                acc *= extent
            strides = tuple(reversed(out))
        return ArrayInfo(int(cai["data"][0]), shape, tuple(x // dt.itemsize for x in strides), dt.name, dt.itemsize,
                         None)
    if hasattr(obj, "__dlpack__"):
        try:
            return _from_cupy(cupy().from_dlpack(obj))
        except Exception as err:  # noqa: BLE001 - DLPack producers raise anything; report it as the argument's
            raise GemmcError(f"{what}: cannot view it on the GPU through DLPack ({err})") from None
    raise GemmcError(f"{what}: expected a GPU array (CuPy, or an object with __cuda_array_interface__ or DLPack), "
                     f"got {kind.__name__}")


def _dense(arr: ArrayInfo, layout: Layout) -> bool:
    """True when a 2-D array is densely packed in `layout` (row: C order, col: Fortran order)."""
    rows, cols = arr.shape
    if layout is Layout.ROW:
        return (cols <= 1 or arr.strides[1] == 1) and (rows <= 1 or arr.strides[0] == cols)
    return (rows <= 1 or arr.strides[0] == 1) and (cols <= 1 or arr.strides[1] == rows)


@dataclass(frozen=True, slots=True)
class Operand:
    letter: str
    layout: Layout
    shape: tuple[int, int]


def expected_operands(kernel: Kernel) -> list[tuple[Operand, Operand, Operand, str]]:
    """Per problem in batch order: what A, B and C must look like, and the problem's name."""
    return [(*operands(kernel, i), kernel.problems[i % len(kernel.problems)].name) for i in range(kernel.batch_size)]


def operands(kernel: Kernel, index: int) -> tuple[Operand, Operand, Operand]:
    p = kernel.problems[index % len(kernel.problems)]
    return (Operand("A", kernel.layout_a, (p.m, p.k)), Operand("B", kernel.layout_b, (p.k, p.n)),
            Operand("C", kernel.layout_c, (p.m, p.n)))


def check_matrix(arr: ArrayInfo, group: str, index: int, op: Operand, dtype: str, device: int, problem: str) -> None:
    """Raise GemmcError naming `group[index]` unless the array is what `op` needs. The common case (all good)
    is a handful of comparisons: the argument's name is only formatted for an error."""
    if (arr.shape == op.shape and arr.dtype == dtype and (arr.device is None or arr.device == device)
            and _dense(arr, op.layout)):
        return
    what = f"{group}[{index}]"
    if arr.ndim != 2:
        raise GemmcError(f"{what}: expected a 2-D array, got {arr.ndim}-D with shape {tuple(arr.shape)}")
    if arr.dtype != dtype:
        raise GemmcError(f"{what}: expected dtype {dtype} (the schedule's dtype), "
                         f"got {arr.dtype}")
    if tuple(arr.shape) != op.shape:
        raise ShapeMismatch(f"{what}: expected shape {op.shape} for {op.letter} of problem '{problem}', "
                         f"got {tuple(arr.shape)}")
    if arr.device is not None and arr.device != device:
        raise GemmcError(f"{what}: lives on GPU {arr.device}, but the current device is GPU {device}")
    if not _dense(arr, op.layout):
        other = Layout.COL if op.layout is Layout.ROW else Layout.ROW
        if _dense(arr, other):
            raise GemmcError(f"{what}: the array is {other.value}-major but the schedule says "
                             f"`layout {op.letter} {op.layout.value}`; write `layout {op.letter} {other.value}` "
                             f"or pass a {op.layout.value}-major copy")
        raise GemmcError(f"{what}: expected a densely packed {op.layout.value}-major array, got element strides "
                         f"{tuple(arr.strides)} (a view the kernel cannot read); pass a contiguous copy")


def batch_pointers(kernel: Kernel, As: Any, Bs: Any, Cs: Any, expected: list[tuple[Operand, Operand, Operand, str]],
                   device: int) -> tuple[list[int], list[int], list[int]]:
    """Check every argument against `expected` (from expected_operands) and the current `device`; return the data
    pointers of A, B and C."""
    dtype = NUMPY_DTYPES[kernel.dtype]
    batch = kernel.batch_size
    ptrs: tuple[list[int], list[int], list[int]] = ([], [], [])
    for slot, (name, group) in enumerate((("As", As), ("Bs", Bs), ("Cs", Cs))):
        if kernel.count is not None and not isinstance(group, (list, tuple)):
            whole = describe(group, name)
            if whole.ndim != 3 or whole.shape[0] != batch:
                raise GemmcError(f"{name}: expected a 3-D array of {batch} matrices (the schedule's count), "
                                 f"got shape {whole.shape}")
            matrices = [whole.matrix(i) for i in range(batch)]
        else:
            if not isinstance(group, (list, tuple)) and (not isinstance(group, Sequence) or isinstance(group, str)):
                raise GemmcError(f"{name}: expected a list of {batch} arrays in batch order, "
                                 f"got {type(group).__name__}")
            if len(group) != batch:
                raise ShapeMismatch(f"{name}: expected {batch} arrays (one per problem), got {len(group)}")
            matrices = [describe(m, name, i) for i, m in enumerate(group)]
        out = ptrs[slot]
        for i, arr in enumerate(matrices):
            want = expected[i]
            op = want[0] if slot == 0 else want[1] if slot == 1 else want[2]
            check_matrix(arr, name, i, op, dtype, device, want[3])
            out.append(arr.ptr)
    if len(set(ptrs[2])) != len(ptrs[2]):
        raise GemmcError("Cs: two problems write the same output array; each C must be its own memory")
    return ptrs


def call_shapes(As: Any, Bs: Any, Cs: Any) -> list[tuple[int, int, int]]:
    """(M, N, K) of each problem of a list batch, read off its A and B (for re-planning)."""
    if not all(isinstance(g, (list, tuple)) for g in (As, Bs, Cs)) or not len(As) == len(Bs) == len(Cs):
        raise GemmcError("As, Bs, Cs: a batch of other sizes than the schedule's must be three lists of equal "
                         "length")
    if not As:
        raise GemmcError("As: the batch is empty")
    shapes = []
    for i, (a, b) in enumerate(zip(As, Bs, strict=True)):
        ia, ib = describe(a, "As", i), describe(b, "Bs", i)
        if ia.ndim != 2 or ib.ndim != 2:
            raise GemmcError(f"As[{i}], Bs[{i}]: expected 2-D arrays, got shapes {ia.shape} and {ib.shape}")
        if ia.shape[1] != ib.shape[0]:
            raise GemmcError(f"As[{i}] is {ia.shape[0]} x {ia.shape[1]} but Bs[{i}] is {ib.shape[0]} x {ib.shape[1]}: "
                             "the inner dimensions differ")
        if min(ia.shape[0], ib.shape[1], ia.shape[1]) < 1:
            raise GemmcError(f"As[{i}], Bs[{i}]: every size must be at least 1")
        shapes.append((ia.shape[0], ib.shape[1], ia.shape[1]))
    return shapes

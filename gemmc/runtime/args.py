"""Argument checks before any launch: every problem names the argument and what was expected.

A call on a batch of a thousand arrays per operand must cost well under the kernel's device time (about a
millisecond), so a list of arrays of one library is read in bulk, one list comprehension per attribute, and
checked against the plan's columns (`Expected`) with a few list compares. Only when that finds a difference are
the arrays checked one by one in batch order, which names the first bad one and says what is wrong with it.
"""

from __future__ import annotations

import math
import numbers
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
    readonly: str = ""  # why the array may not be written ('' when it may): refused as C

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def matrix(self, i: int) -> ArrayInfo:
        """The i-th matrix of a 3-D array."""
        return ArrayInfo(self.ptr + i * self.strides[0] * self.itemsize, self.shape[1:], self.strides[1:],
                         self.dtype, self.itemsize, self.device, self.readonly)


# numpy dtype characters and torch dtypes -> names; looked up, never formatted, on the hot path.
_CHAR_NAMES = {"f": "float32", "d": "float64", "e": "float16"}
_TORCH_NAMES: dict[Any, str] = {}


def _torch_name(dtype: Any) -> str:
    name = _TORCH_NAMES.get(dtype)
    if name is None:
        name = _TORCH_NAMES[dtype] = str(dtype).removeprefix("torch.")
    return name


_TYPESTRS: dict[str, tuple[str, int]] = {}


def _typestr(typestr: str) -> tuple[str, int]:
    """The numpy-style name and item size of a __cuda_array_interface__ typestr (numpy's dtype.name is Python).
    An array in the other byte order than the host's gets a name of its own, so that it never passes for the
    schedule's dtype: the kernels read the GPU's native (little-endian) order."""
    found = _TYPESTRS.get(typestr)
    if found is None:
        import numpy as np

        dt = np.dtype(typestr)
        name = dt.name if dt.isnative else f"{dt.name} in {'big' if dt.byteorder == '>' else 'little'}-endian order"
        found = _TYPESTRS[typestr] = (name, dt.itemsize)
    return found


def _dtype_name(dt: Any) -> str:
    """The numpy-style name of a numpy/CuPy dtype object."""
    return (_CHAR_NAMES.get(dt.char) or dt.name) if dt.isnative else _typestr(dt.str)[0]


def _elements(strides: Sequence[int], item: int, what: str) -> tuple[int, ...]:
    """Byte strides in elements. A byte stride that is not a whole number of items would be rounded down: the
    view is refused instead (the kernels address elements)."""
    if any(s % item for s in strides):
        raise GemmcError(f"{what}: byte strides {tuple(strides)} are not multiples of the item size ({item} bytes); "
                         "the kernel addresses whole elements, so pass a contiguous copy")
    return tuple(s // item for s in strides)


def c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Byte strides of a C-contiguous array: what a __cuda_array_interface__ without strides means."""
    if len(shape) == 2:
        return (shape[1] * itemsize, itemsize)
    acc, out = itemsize, []
    for extent in reversed(shape):
        out.append(acc)
        acc *= extent
    return tuple(reversed(out))


def _from_cupy(arr: Any, what: str) -> ArrayInfo:
    data, item = arr.data, arr.itemsize
    return ArrayInfo(data.ptr, arr.shape, _elements(arr.strides, item, what), _dtype_name(arr.dtype), item,
                     data.device_id)


READ_ONLY = "the array is read-only (its __cuda_array_interface__ says so)"
REQUIRES_GRAD = ("the tensor requires grad, and autograd would not see gemmc's write (torch refuses in-place "
                 "writes to such a tensor too); pass C.detach() to write it anyway")


def describe(obj: Any, group: str, index: int | None = None) -> ArrayInfo:
    """ArrayInfo of a CuPy array, a torch tensor, anything with __cuda_array_interface__, or a DLPack producer.
    `group[index]` names the argument in errors."""
    kind = type(obj)
    module = kind.__module__.split(".")[0]
    what = group if index is None else f"{group}[{index}]"
    if module == "cupy":
        return _from_cupy(obj, what)
    if module == "torch" and kind.__name__ in ("Tensor", "Parameter"):
        if not obj.is_cuda:
            raise GemmcError(f"{what}: the tensor is on the CPU; move it to the GPU (.cuda()) first")
        return ArrayInfo(obj.data_ptr(), tuple(obj.shape), obj.stride(), _torch_name(obj.dtype), obj.element_size(),
                         obj.get_device(), REQUIRES_GRAD if obj.requires_grad else "")
    if module == "numpy":
        raise GemmcError(f"{what}: expected a GPU array, got a host (numpy) array; copy it to the GPU first")
    if hasattr(obj, "__cuda_array_interface__"):
        cai = obj.__cuda_array_interface__
        name, item = _typestr(cai["typestr"])
        shape = tuple(cai["shape"])
        strides = cai.get("strides") or c_strides(shape, item)
        data = cai["data"]
        return ArrayInfo(int(data[0]), shape, _elements(strides, item, what), name, item, None,
                         READ_ONLY if data[1] else "")
    if hasattr(obj, "__dlpack__"):
        try:
            viewed = cupy().from_dlpack(obj)
        except Exception as err:  # noqa: BLE001 - DLPack producers raise anything; report it as the argument's
            raise GemmcError(f"{what}: cannot view it on the GPU through DLPack ({err})") from None
        return _from_cupy(viewed, what)
    raise GemmcError(f"{what}: expected a GPU array (CuPy, or an object with __cuda_array_interface__ or DLPack), "
                     f"got {kind.__name__}")


def check_array(info: ArrayInfo, label: str, ndim: int, dtype: str, device: int, holds: str = "") -> None:
    """Raise GemmcError naming the argument `label` unless the array is `ndim`-D, of the schedule's `dtype` and on
    GPU `device` (an array whose device is unknown passes), in that order: the checks every argument of a dynamic kernel
    passes. `holds`, where given, says in the message about the dimensions what the array holds."""
    if info.ndim != ndim:
        said = f" ({holds})" if holds else ""
        raise GemmcError(f"{label}: expected a {ndim}-D array{said}, got shape {tuple(info.shape)}")
    if info.dtype != dtype:
        raise GemmcError(f"{label}: expected dtype {dtype} (the schedule's dtype), got {info.dtype}")
    if info.device is not None and info.device != device:
        raise GemmcError(f"{label}: lives on GPU {info.device}, but the current device is GPU {device}")


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

    @property
    def strides(self) -> tuple[int, int]:
        """Element strides of a densely packed array of this shape and layout."""
        rows, cols = self.shape
        return (cols, 1) if self.layout is Layout.ROW else (1, rows)


@dataclass(frozen=True, slots=True, eq=False)
class Expected:
    """What the arguments of one plan must be: per problem (the one-by-one checks and their messages), and per
    operand A, B, C as columns of shapes and dense strides (the bulk check of a whole list)."""

    dtype: str  # numpy-style name of A and B
    c_dtype: str  # numpy-style name of C (the same, or float32 under `dtype A bf16, B bf16, C f32`)
    operands: tuple[tuple[Operand, Operand, Operand], ...]  # per problem in batch order
    problems: tuple[str, ...]
    shapes: tuple[list[tuple[int, int]], ...]  # per operand, per problem
    strides: tuple[list[tuple[int, int]], ...]  # elements (torch)
    byte_strides: tuple[list[tuple[int, int]], ...]  # bytes (CuPy, __cuda_array_interface__)

    def dtype_of(self, slot: int) -> str:
        """The dtype of operand `slot` (0 A, 1 B, 2 C)."""
        return self.c_dtype if slot == 2 else self.dtype

    def reordered(self, order: list[int]) -> Expected:
        """The same for arrays passed in another order: `order[p]` is the caller's index of problem p."""
        at = sorted(range(len(order)), key=order.__getitem__)  # caller's index -> problem

        def pick(column: Sequence[Any]) -> list[Any]:
            return [column[p] for p in at]

        return Expected(self.dtype, self.c_dtype, tuple(pick(self.operands)), tuple(pick(self.problems)),
                        tuple(map(pick, self.shapes)), tuple(map(pick, self.strides)),
                        tuple(map(pick, self.byte_strides)))


def expected_operands(kernel: Kernel) -> Expected:
    ops = tuple(operands(kernel, i) for i in range(kernel.batch_size))
    items = (kernel.dtype.nbytes, kernel.dtype.nbytes, kernel.c_dtype.nbytes)
    strides = tuple([op[slot].strides for op in ops] for slot in range(3))
    return Expected(NUMPY_DTYPES[kernel.dtype], NUMPY_DTYPES[kernel.c_dtype], ops,
                    tuple(kernel.problems[i % len(kernel.problems)].name for i in range(kernel.batch_size)),
                    tuple([op[slot].shape for op in ops] for slot in range(3)), strides,
                    tuple([(r * item, c * item) for r, c in column]
                          for column, item in zip(strides, items, strict=True)))


def operands(kernel: Kernel, index: int) -> tuple[Operand, Operand, Operand]:
    p = kernel.problems[index % len(kernel.problems)]
    return (Operand("A", kernel.layout_a, (p.m, p.k)), Operand("B", kernel.layout_b, (p.k, p.n)),
            Operand("C", kernel.layout_c, (p.m, p.n)))


def check_matrix(arr: ArrayInfo, group: str, index: int, op: Operand, dtype: str, device: int, problem: str) -> None:
    """Raise GemmcError naming `group[index]` unless the array is what `op` needs. The common case (all good)
    is a handful of comparisons: the argument's name is only formatted for an error."""
    if (arr.shape == op.shape and arr.dtype == dtype and (arr.device is None or arr.device == device)
            and _dense(arr, op.layout) and (not arr.readonly or op.letter != "C")):
        return
    what = f"{group}[{index}]"
    if arr.ndim != 2:
        raise GemmcError(f"{what}: expected a 2-D array, got {arr.ndim}-D with shape {tuple(arr.shape)}")
    if arr.dtype != dtype:
        raise GemmcError(f"{what}: expected dtype {dtype} (the schedule's dtype of {op.letter}), "
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
    raise GemmcError(f"{what}: gemmc writes C in place, but {arr.readonly}")


def count_outputs_apart(whole: ArrayInfo, name: str) -> None:
    """The matrices of a 3-D C (a `count` batch) must not overlap one another: a first stride shorter than a
    matrix (0 included, a broadcast view) makes every problem write its neighbour's output. A 3-D A or B may
    overlap itself (a broadcast weight is a common, valid input)."""
    count, rows, cols = whole.shape
    if count > 1 and rows * cols > 0 and abs(whole.strides[0]) < rows * cols:
        raise GemmcError(f"{name}: the matrices of the 3-D array overlap: each holds {rows * cols} elements but they "
                         f"start {whole.strides[0]} elements apart (its first stride), so the problems would write "
                         f"each other's outputs; pass an array whose matrices lie apart (a contiguous one)")


class Columns(NamedTuple):
    """A list of arrays of one library, read in bulk (one comprehension per attribute), in the list's order."""

    ptrs: list[int]
    shapes: list[tuple[int, ...]]
    strides: list[tuple[int, ...]]
    in_bytes: bool  # strides in bytes (CuPy, __cuda_array_interface__) or in elements (torch)
    dtype: str | None  # the numpy-style name when every array has the same dtype, else None
    devices: list[int] | None  # None: unknown (bare __cuda_array_interface__), taken to be the current device
    writable: bool = True  # False: some array is read-only or a torch tensor that requires grad (read for C only)


def _same(values: list[Any]) -> Any:
    """The one value of a list whose items are all that object (dtypes are singletons: `count` compares by
    identity first), else None."""
    return values[0] if values.count(values[0]) == len(values) else None


def read_list(group: Any, output: bool = False) -> Columns | None:
    """The columns of a non-empty list of CuPy arrays, torch tensors or __cuda_array_interface__ objects, all of one
    class; None for anything else (mixed kinds, host arrays, DLPack: then the arrays are described one by one, and a
    bad one is named). Reading checks nothing: `_fits` compares the columns with the plan. `output`: the list is C,
    so whether every array may be written is read too (CuPy arrays always may)."""
    if not isinstance(group, (list, tuple)) or not group:
        return None
    classes = list(map(type, group))
    cls = classes[0]
    if classes.count(cls) != len(classes):
        return None
    module = cls.__module__.split(".")[0]
    if module == "cupy":
        dt = _same([x.dtype for x in group])
        return Columns([x.data.ptr for x in group], [x.shape for x in group], [x.strides for x in group], True,
                       None if dt is None else _dtype_name(dt), [x.data.device_id for x in group])
    if module == "torch" and cls.__name__ in ("Tensor", "Parameter"):
        dt = _same([x.dtype for x in group])
        return Columns([x.data_ptr() for x in group], [x.shape for x in group], [x.stride() for x in group], False,
                       None if dt is None else _torch_name(dt), [x.get_device() for x in group],  # CPU: -1
                       not (output and any([x.requires_grad for x in group])))
    if module == "numpy":
        return None
    try:  # a class's property, or each object's own attribute
        cais = [x.__cuda_array_interface__ for x in group]
    except AttributeError:
        return None
    typestr = _same([c["typestr"] for c in cais])
    if typestr is None:
        return None
    name, item = _typestr(typestr)
    shapes = [c["shape"] for c in cais]
    strides = [c.get("strides") for c in cais]
    if None in strides:  # C-contiguous
        strides = [s or c_strides(shape, item) for s, shape in zip(strides, shapes, strict=True)]
    data = [c["data"] for c in cais]
    return Columns([d[0] for d in data], shapes, strides, True, name, None, not (output and any([d[1] for d in data])))


def read_batch(As: Any, Bs: Any, Cs: Any) -> tuple[Columns | None, Columns | None, Columns | None]:
    return read_list(As), read_list(Bs), read_list(Cs, output=True)


def _fits(cols: Columns, expected: Expected, slot: int, device: int) -> bool:
    """Every array is what operand `slot` of the plan needs: shape, dtype, device, dense strides, writable C."""
    return (cols.writable and cols.dtype == expected.dtype_of(slot) and cols.shapes == expected.shapes[slot]
            and cols.strides == (expected.byte_strides if cols.in_bytes else expected.strides)[slot]
            and (cols.devices is None or cols.devices.count(device) == len(cols.devices)))


def batch_pointers(kernel: Kernel, As: Any, Bs: Any, Cs: Any, expected: Expected, device: int,
                   columns: tuple[Columns | None, ...] | None = None) -> tuple[list[int], list[int], list[int]]:
    """Check every argument against `expected` (from expected_operands, in the order of the lists) and the current
    `device`; return the data pointers of A, B and C. `columns`: the lists as read_batch read them, where the
    caller has them already."""
    batch = kernel.batch_size
    columns = columns or read_batch(As, Bs, Cs)
    ptrs: list[list[int]] = []
    for slot, (name, group) in enumerate((("As", As), ("Bs", Bs), ("Cs", Cs))):
        if kernel.count is not None and not isinstance(group, (list, tuple)):
            whole = describe(group, name)
            if whole.ndim != 3 or whole.shape[0] != batch:
                raise GemmcError(f"{name}: expected a 3-D array of {batch} matrices (the schedule's count), "
                                 f"got shape {whole.shape}")
            # The matrices differ only in their address: checking the first checks them all.
            check_matrix(whole.matrix(0), name, 0, expected.operands[0][slot], expected.dtype_of(slot), device,
                         expected.problems[0])
            if slot == 2:
                count_outputs_apart(whole, name)
            step = whole.strides[0] * whole.itemsize
            ptrs.append([whole.ptr + i * step for i in range(batch)])
            continue
        if not isinstance(group, (list, tuple)) and (not isinstance(group, Sequence) or isinstance(group, str)):
            one = " (a kernel of one GEMM too: k([A], [B], [C]))" if batch == 1 else ""
            raise GemmcError(f"{name}: expected a list of {batch} arrays in batch order{one}, "
                             f"got {type(group).__name__}")
        if len(group) != batch:
            raise ShapeMismatch(f"{name}: expected {batch} arrays (one per problem), got {len(group)}")
        cols = columns[slot]
        if cols is not None and _fits(cols, expected, slot, device):
            ptrs.append(cols.ptrs)
            continue
        out = []  # one by one, in batch order: the first bad array is named
        for i, x in enumerate(group):
            arr = describe(x, name, i)
            check_matrix(arr, name, i, expected.operands[i][slot], expected.dtype_of(slot), device,
                         expected.problems[i])
            out.append(arr.ptr)
        ptrs.append(out)
    return ptrs[0], ptrs[1], ptrs[2]


F32_MAX = 3.4028234663852886e38  # the largest finite float32


def scalar(name: str, value: Any, double: bool) -> float:
    """`alpha` or `beta` of a call as a float the kernel's scalar type holds (float64 for f64 kernels, float32 for
    the others): a real, finite number. NaN and infinity are refused rather than passed on: their result would
    depend on where a family applies the scalar (an epilogue multiply, or scaling in a pre-pass) and on the
    `beta == 0` shortcut that never reads C, so no one answer could be promised; and a non-finite scale is almost
    always an upstream bug. A huge int or a finite value past float32's range is refused for the same reason."""
    if type(value) is not float:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise GemmcError(f"{name}: expected a real number (a Python int or float), got {type(value).__name__} "
                             f"{value!r:.60}")
        try:
            value = float(value)
        except (OverflowError, ValueError):
            raise GemmcError(f"{name}: {value!r:.60} is past float64's range") from None
    if not math.isfinite(value):
        raise GemmcError(f"{name}: expected a finite number, got {value}")
    if not double and abs(value) > F32_MAX:
        raise GemmcError(f"{name}: {value:g} is past float32's range (largest {F32_MAX:g}); this kernel takes "
                         f"{name} as a float32")
    return value


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

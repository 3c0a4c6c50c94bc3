"""The list form of a dynamic kernel (`grouped list`): `k(As, Bs, Cs)` with any sizes, new ones every call.

The arrays are read in bulk (one pass per attribute and operand) and checked as NumPy columns; the problem table
(sizes, leading dimensions, pointers: gemmc_dyn_problem) goes into a pinned staging buffer and to the device with
one asynchronous copy on the launch's stream. A ring of staging buffers, each released by an event after its
kernel, lets calls follow each other without waiting for the GPU. No planning, tuning or compiling per call.
"""

from __future__ import annotations

from itertools import chain
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import numpy as np

from gemmc.errors import GemmcError
from gemmc.ir.dynamic import INT32_MAX
from gemmc.ir.types import Layout
from gemmc.runtime.args import NUMPY_DTYPES, describe
from gemmc.runtime.device import cupy

if TYPE_CHECKING:
    from gemmc.runtime.dynamic_state import DynamicState
    from gemmc.runtime.executable import Executable

RING = 8  # staging buffers: a ninth call in flight waits for the first one's kernel
FIELDS = 9  # int64 per problem: m, n, k, lda, ldb, ldc, a, b, c (gemmc_dyn_problem)


class Ring:
    """Pinned host buffers and device tables for the problem tables, reused in turn."""

    def __init__(self, capacity: int):
        cp = cupy()
        nbytes = capacity * FIELDS * 8
        self.host = [cp.cuda.alloc_pinned_memory(nbytes) for _ in range(RING)]
        self.views = [np.frombuffer(h, dtype=np.int64, count=capacity * FIELDS).reshape(capacity, FIELDS)
                      for h in self.host]
        self.device = [cp.empty(capacity * FIELDS, dtype=cp.int64) for _ in range(RING)]
        self.events: list[Any] = [None] * RING
        self.next = 0

    def stage(self, table: np.ndarray, stream: Any) -> Any:
        """Copy `table` (problems x FIELDS) to the device on `stream`; return the device table. The caller records
        `done(stream)` after the kernel that reads it."""
        cp = cupy()
        slot = self.next
        self.next = (slot + 1) % RING
        if self.events[slot] is not None:
            self.events[slot].synchronize()  # its last kernel has read the device table and the copy is done
        rows = len(table)
        self.views[slot][:rows] = table
        self.slot = slot
        dev = self.device[slot]
        cp.cuda.runtime.memcpyAsync(dev.data.ptr, self.host[slot].ptr, rows * FIELDS * 8,
                                    cp.cuda.runtime.memcpyHostToDevice, stream.ptr)
        return dev

    def done(self, stream: Any) -> None:
        event = self.events[self.slot]
        if event is None:
            event = self.events[self.slot] = cupy().cuda.Event(block=False, disable_timing=True)
        event.record(stream)


def columns(group: Any, name: str) -> tuple[list[int], np.ndarray, np.ndarray, set, set]:
    """Pointers, shapes (n x 2), element strides (n x 2), dtypes and devices of a list of 2-D arrays of one library,
    one pass per attribute. Anything else (mixed kinds, DLPack, host arrays) is described array by array."""
    cls = type(group[0])
    module = cls.__module__.split(".")[0]
    same = len(set(map(type, group))) == 1  # one pass in C (a generator over the list took a seventh of the call)
    n = len(group)
    try:
        if same and module == "torch":
            ptrs = list(map(cls.data_ptr, group))
            shapes = list(map(cls.size, group))
            strides = list(map(cls.stride, group))
            dtypes = {str(d).removeprefix("torch.") for d in set(map(attrgetter("dtype"), group))}
            devices = set(map(cls.get_device, group))
        elif same and module == "cupy":
            ptrs = [x.data.ptr for x in group]
            shapes = list(map(attrgetter("shape"), group))
            strides = list(map(attrgetter("strides"), group))  # bytes: divided below (one dtype, or refused)
            dtypes = {dt.name for dt in set(map(attrgetter("dtype"), group))}
            devices = {x.data.device_id for x in group}
        else:
            raise TypeError
        flat_shapes = np.fromiter(chain.from_iterable(shapes), dtype=np.int64)
        flat_strides = np.fromiter(chain.from_iterable(strides), dtype=np.int64)
        if len(flat_shapes) != 2 * n or len(flat_strides) != 2 * n:
            raise TypeError
        if module == "cupy":
            flat_strides //= group[0].itemsize
        return ptrs, flat_shapes.reshape(n, 2), flat_strides.reshape(n, 2), dtypes, devices
    except TypeError:
        infos = [describe(x, name, i) for i, x in enumerate(group)]
        for i, info in enumerate(infos):
            if info.ndim != 2:
                raise GemmcError(f"{name}[{i}]: expected a 2-D array, got shape {tuple(info.shape)}") from None
        return ([i.ptr for i in infos], np.array([i.shape for i in infos], dtype=np.int64).reshape(n, 2),
                np.array([i.strides for i in infos], dtype=np.int64).reshape(n, 2), {i.dtype for i in infos},
                {i.device if i.device is not None else -2 for i in infos})


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def dense(shape: np.ndarray, strides: np.ndarray, layout: Layout) -> np.ndarray:
    """Per array: densely packed in `layout` (a stride only matters where its extent exceeds 1; an empty array holds
    nothing to misread)."""
    rows, cols = shape[:, 0], shape[:, 1]
    empty = (rows == 0) | (cols == 0)
    if layout is Layout.ROW:
        return empty | (((cols <= 1) | (strides[:, 1] == 1)) & ((rows <= 1) | (strides[:, 0] == cols)))
    return empty | (((rows <= 1) | (strides[:, 0] == 1)) & ((cols <= 1) | (strides[:, 1] == rows)))


def problem_table(kernel: Executable, As: Any, Bs: Any, Cs: Any, device: int) -> np.ndarray:
    """Check a list call; return its problem table (problems x FIELDS, int64)."""
    ir = kernel.ir
    dyn = ir.dynamic
    assert dyn is not None
    for name, group in (("As", As), ("Bs", Bs), ("Cs", Cs)):
        if not isinstance(group, (list, tuple)):
            raise GemmcError(f"{name}: expected a list of arrays, got {type(group).__name__}")
    count = len(As)
    if len(Bs) != count or len(Cs) != count:
        raise GemmcError(f"As, Bs, Cs: expected lists of one length, got {count}, {len(Bs)} and {len(Cs)}")
    if count > dyn.max_groups:
        raise GemmcError(f"As: {count} problems, but the schedule allows at most {dyn.max_groups}")
    dtype = NUMPY_DTYPES[ir.dtype]
    cols = []
    for name, group, layout in (("As", As, ir.layout_a), ("Bs", Bs, ir.layout_b), ("Cs", Cs, ir.layout_c)):
        ptrs, shape, strides, dtypes, devices = columns(group, name)
        if dtypes != {dtype}:
            bad = next(i for i, x in enumerate(group) if describe(x, name, i).dtype != dtype)
            raise GemmcError(f"{name}[{bad}]: expected dtype {dtype} (the schedule's dtype), "
                             f"got {describe(group[bad], name, bad).dtype}")
        if devices - {device, -2}:  # -2: a bare __cuda_array_interface__, taken to be on the current device
            bad = next(i for i, x in enumerate(group) if describe(x, name, i).device not in (None, device))
            raise GemmcError(f"{name}[{bad}]: lives on GPU {describe(group[bad], name, bad).device}, but the "
                             f"current device is GPU {device}")
        ok = dense(shape, strides, layout)
        if not ok.all():
            bad = _first(~ok)
            raise GemmcError(f"{name}[{bad}]: expected a densely packed {layout.value}-major array (the schedule's "
                             f"`layout {name[0]} {layout.value}`), got element strides {tuple(strides[bad].tolist())}")
        cols.append((ptrs, shape))
    (pa, sa), (pb, sb), (pc, sc) = cols
    m, k, n = sa[:, 0], sa[:, 1], sb[:, 1]
    for name, got, want, what, other, other_what in (("Bs", sb[:, 0], k, "rows", "As", "columns"),
                                                       ("Cs", sc[:, 0], m, "rows", "As", "rows"),
                                                       ("Cs", sc[:, 1], n, "columns", "Bs", "columns")):
        if (got != want).any():
            i = _first(got != want)
            raise GemmcError(f"{name}[{i}] has {int(got[i])} {what} but {other}[{i}] has {int(want[i])} {other_what}")
    out = (m > 0) & (n > 0)
    written = np.asarray(pc, dtype=np.uint64)[out]
    if len(np.unique(written)) != len(written):
        raise GemmcError("Cs: two problems write the same output array; each C must be its own memory")
    smallest = min(min(c.variant.bm, c.variant.bn) for c in ir.plan.classes)  # type: ignore[union-attr]
    if int((-(-m // smallest) * -(-n // smallest)).sum()) > INT32_MAX:
        raise GemmcError("As, Bs: the problems give more tiles than the int32 tile numbering holds")
    table = np.empty((count, FIELDS), dtype=np.int64)
    table[:, 0], table[:, 1], table[:, 2] = m, n, k
    lds = ((k, m), (n, k), (n, m))  # (row-major, column-major) leading dimension of A, B, C
    for j, (layout, (r, c)) in enumerate(zip((ir.layout_a, ir.layout_b, ir.layout_c), lds, strict=True)):
        table[:, 3 + j] = np.maximum(r if layout is Layout.ROW else c, 1)
    for j, ptrs in enumerate((pa, pb, pc)):
        table[:, 6 + j] = np.asarray(ptrs, dtype=np.uint64).view(np.int64)
    return table


def launch_list(kernel: Executable, st: DynamicState, As: Any, Bs: Any, Cs: Any, alpha_: Any, beta_: Any,
                stream: Any, device: int) -> None:
    table = problem_table(kernel, As, Bs, Cs, device)
    if not len(table):
        return
    if st.ring is None:
        st.ring = Ring(kernel.ir.dynamic.max_groups)  # type: ignore[union-attr]
    dev = st.ring.stage(table, stream)
    counter = st.counter(stream.ptr)
    if st.fast is not None:
        st.fast(st.grid, st.block, st.smem, stream.ptr, (0, 0, 0, 0, dev.data.ptr, len(table), 0), counter,
                (float(alpha_), float(beta_)))
        st.ring.done(stream)
        return
    zero = np.uint64(0)
    st.fn((st.grid, 1, 1), (st.block, 1, 1),
          (zero, zero, zero, zero, dev, np.int32(len(table)), np.int64(0), np.int64(0), np.int64(0), np.int64(0),
           np.int64(st.threshold), np.uint64(counter), alpha_, beta_), shared_mem=st.smem, stream=stream)
    st.ring.done(stream)


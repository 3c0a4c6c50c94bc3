"""The list form of a dynamic kernel (`grouped list`): `k(As, Bs, Cs)` with any sizes, new ones every call.

The arrays are read in bulk (one pass per attribute over all 3n arrays) and checked with a few NumPy operations;
the problem table (sizes, leading dimensions, pointers: gemmc_dyn_problem) is written into a pinned staging buffer
and goes to the device with one asynchronous copy on the launch's stream. Host time per call is the attribute reads
themselves: with torch tensors about 0.5 us per tensor (the shape alone 0.23 us) on the H100 machine's host, which
no check done from Python goes below (bench/results/dynamic/2026-11-27_h100_list-host.json). A ring of staging
buffers, each released by an event after its kernel, lets calls follow each other without waiting for the GPU. No
planning, tuning or compiling per call.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Sequence
from itertools import chain
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import numpy as np

from gemmc.errors import GemmcError
from gemmc.families.dynamic.plan import DynamicPlan
from gemmc.ir.dynamic import INT32_MAX
from gemmc.ir.types import Layout
from gemmc.runtime.args import NUMPY_DTYPES, ArrayInfo, _torch_name, check_array, describe
from gemmc.runtime.device import cupy
from gemmc.runtime.dynamic_state import CAPTURES, COUNTER_INTS, Captured
from gemmc.runtime.memory import check_views, view_fields
from gemmc.runtime.streams import FIRST_LOADS, relaxed_capture

if TYPE_CHECKING:
    from gemmc.runtime.dynamic_state import DynamicState
    from gemmc.runtime.executable import Executable

RING = 8  # staging buffers: a ninth call in flight waits for a buffer whose call has launched, then for its kernel
FIELDS = 9  # int64 per problem: m, n, k, lda, ldb, ldc, a, b, c (gemmc_dyn_problem)


class Ring:
    """Pinned host buffers and device tables for the problem tables, reused in turn, and per slot `map_bytes` of
    tensor maps (the tensor-core list's: its planning kernel writes a call's maps, its main kernel reads them). A slot
    is a call's from `host_table` until the call records the launch that reads it (`done`) or gives it back unsent
    (`give_back`): with more calls in flight than slots (calls from several threads, on one stream or several), a
    call waits for one, and no two calls ever write one pinned buffer, device table or set of maps."""

    def __init__(self, capacity: int, slots: int = RING, map_bytes: int = 0):
        cp = cupy()
        nbytes = capacity * FIELDS * 8
        self.host = [cp.cuda.alloc_pinned_memory(nbytes) for _ in range(slots)]
        self.views = [np.frombuffer(h, dtype=np.int64, count=capacity * FIELDS).reshape(capacity, FIELDS)
                      for h in self.host]
        self.device = [cp.empty(capacity * FIELDS, dtype=cp.int64) for _ in range(slots)]
        self.maps = [cp.empty(map_bytes, dtype=np.uint8) for _ in range(slots)] if map_bytes else []
        self.events: list[Any] = [None] * slots
        self.taken = [False] * slots
        self.next = 0
        self.free = threading.Condition()  # a slot given back wakes a call waiting for one

    @classmethod
    def single(cls, capacity: int, map_bytes: int = 0) -> Ring:
        """One buffer pair of its own: a call captured in a CUDA graph, whose graph reads it at every replay (never
        `done`; `captured`). Its reservation (`DynamicState.capture`) keeps it the graph's, not its slot: the call
        gives the slot back when it ends, so that a later capture takes the buffers once the reservation is free again
        (`DynamicState.keep`: its graph is gone; `DynamicState.uncapture`: the call put nothing in its graph)."""
        return cls(capacity, slots=1, map_bytes=map_bytes)

    def host_table(self) -> tuple[int, np.ndarray]:
        """A slot not taken, the next in turn first, and its pinned staging buffer (capacity x FIELDS) to write a
        table into, once the copy and the kernel of the slot's last use are done."""
        n = len(self.host)
        with self.free:
            while all(self.taken):
                self.free.wait()
            slot = next(s % n for s in range(self.next, self.next + n) if not self.taken[s % n])
            self.taken[slot] = True
            self.next = (slot + 1) % n
        if self.events[slot] is not None:
            try:
                # its last kernel has read the device table and maps, and the copy is done: a wait, which another
                # thread's CUDA-graph capture in the global mode (torch's) would refuse and end, unless relaxed
                with relaxed_capture():
                    self.events[slot].synchronize()
            except BaseException:
                self.give_back(slot)  # the caller never holds it: its next call waits on the same event
                raise
        return slot, self.views[slot]

    def send(self, slot: int, rows: int, stream: Any) -> int:
        """Copy the first `rows` of the slot's buffer to the device on `stream`; return the device table's address.
        The caller records `done(slot, stream)` after the kernel that reads it."""
        cp = cupy()
        dev = self.device[slot]
        cp.cuda.runtime.memcpyAsync(dev.data.ptr, self.host[slot].ptr, rows * FIELDS * 8,
                                    cp.cuda.runtime.memcpyHostToDevice, stream.ptr)
        return int(dev.data.ptr)

    def done(self, slot: int, stream: Any) -> None:
        """The slot's copy and kernel are on `stream`: its next call waits for them (an event), then takes it. Where
        the event cannot be recorded, the stream is waited for instead, and the slot goes back with the error either
        way: a ring whose slots were never given back would make every later call wait forever."""
        try:
            event = self.events[slot]
            if event is None:
                event = self.events[slot] = cupy().cuda.Event(block=False, disable_timing=True)
            event.record(stream)
        except BaseException:
            try:
                with relaxed_capture():  # as host_table's wait
                    stream.synchronize()  # the pinned buffer is free once the copy has run
            finally:
                self.give_back(slot)
            raise
        self.give_back(slot)

    def give_back(self, slot: int) -> None:
        with self.free:
            self.taken[slot] = False
            self.free.notify()


class Staging:
    """Where one list call stages its problem table, as a context manager around the call. A call inside a CUDA-graph
    capture reserves buffers of its own (`DynamicState.capture`: a table in `captures`, tile counters, and on the
    tensor cores tensor maps), which its graph reads at every replay and no other graph or call shares while that
    graph exists (`DynamicState.keep`: they come back once it is destroyed); its one slot goes back when the block
    ends, and the reservation too where the call sent no table (the block raises before `send`, or the call has no
    work: `DynamicState.uncapture`). Any other
    call takes a slot of the ring and its stream's tile counters, and holds the slot until it records its launch
    (`done`); where the block ends before that, it gives the slot back unsent, or behind the copy where it sent the
    table."""

    __slots__ = ("st", "stream", "index", "ring", "slot", "out", "sent_on", "finished")

    def __init__(self, st: DynamicState, stream: Any):
        self.st = st
        self.stream = stream
        self.index: int | None = None
        self.slot: int | None = None
        self.sent_on: Any = None  # the stream of the table's copy, once sent
        self.finished = False

    def __enter__(self) -> Staging:
        st = self.st
        self.index = st.capture() if cupy().cuda.runtime.streamIsCapturing(self.stream.ptr) != 0 else None
        self.ring: Ring = st.ring if self.index is None else st.captures[self.index].ring
        try:
            self.slot, self.out = self.ring.host_table()  # `out`: the pinned buffer the table is written into
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *raised: object) -> None:
        if self.index is not None:
            if self.slot is not None:
                self.ring.give_back(self.slot)
            if self.sent_on is None:
                self.st.uncapture(self.index)
            else:  # the graph reads the buffers at every replay: they come back when it is destroyed
                self.st.keep(self.index, int(self.stream.ptr))
        elif self.slot is not None and not self.finished:
            if self.sent_on is None:
                self.ring.give_back(self.slot)
            else:
                self.ring.done(self.slot, self.sent_on)

    def counter(self, stream: int) -> int:
        """The tile counters of the call's launch on `stream` (a raw handle): a captured call's own, else the
        stream's."""
        return self.st.counter(stream) if self.index is None else self.st.capture_counter(self.index)

    def maps(self) -> int:
        """The device address of the tensor maps of the call's slot (Ring's `map_bytes`): the call's own until it
        records its launch, as its table is."""
        return int(self.ring.maps[self.slot].data.ptr)  # type: ignore[index]

    def send(self, rows: int, stream: Any) -> int:
        """Copy the table's first `rows` to the device on `stream` (Ring.send; captured: a copy node that reads this
        capture's own host buffer, or a copy on a stream outside the graph); return the device table's address."""
        self.sent_on = stream
        return self.ring.send(self.slot, rows, stream)  # type: ignore[arg-type]

    def done(self, stream: Any) -> None:
        """After the launch that reads the table on `stream`: the ring's buffer is free once it has run."""
        self.finished = True
        if self.index is None:
            self.ring.done(self.slot, stream)  # type: ignore[arg-type]


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


def lines(shape: np.ndarray, strides: np.ndarray, layout: Layout) -> tuple[np.ndarray, np.ndarray]:
    """Per array: whether it is made of lines in `layout` (unit stride along them, lines at least a line apart: a view
    of a wider matrix included), and its leading dimension (the stride between lines; where it has one line or none,
    its line length rounded up to 8 elements, which addresses nothing and keeps a TMA line pitch a 16-byte multiple
    for 16-bit elements)."""
    inner_axis = 1 if layout is Layout.ROW else 0
    inner, outer = shape[:, inner_axis], shape[:, 1 - inner_axis]
    empty = (inner == 0) | (outer == 0)
    step_in, step_out = strides[:, inner_axis], strides[:, 1 - inner_axis]
    ok = empty | (((inner <= 1) | (step_in == 1)) & ((outer <= 1) | (step_out >= inner)))
    ld = np.where(outer > 1, step_out, (np.maximum(inner, 1) + 7) // 8 * 8)
    return ok, ld


def _dense_steps(shape: np.ndarray, layout: Layout) -> np.ndarray:
    """The element strides (n x 2) of densely packed arrays of these shapes in `layout`."""
    ones = np.ones(len(shape), dtype=np.int64)
    if layout is Layout.ROW:
        return np.stack([shape[:, 1], ones], axis=1)
    return np.stack([ones, shape[:, 0]], axis=1)


# The table's first six fields (m, n, k, lda, ldb, ldc) as (operand, axis) of the shapes, operands A, B, C: the
# leading dimension of a row-major array is its columns, of a column-major one its rows.
_OPERAND = np.array([0, 1, 0, 0, 1, 2])
_AXIS = {(a, b, c): np.array([0, 1, 1, int(a is Layout.ROW), int(b is Layout.ROW), int(c is Layout.ROW)])
         for a in Layout for b in Layout for c in Layout}
# Shape agreement: B's rows = A's columns, C's rows = A's rows, C's columns = B's columns (operand, axis pairs).
_GOT = (np.array([1, 2, 2]), np.array([0, 0, 1]))
_WANT = (np.array([0, 0, 1]), np.array([1, 0, 1]))
_DTYPE, _GRAD, _SHAPE = attrgetter("dtype"), attrgetter("requires_grad"), attrgetter("shape")
_CUPY = (attrgetter("data.ptr"), _SHAPE, attrgetter("strides"), attrgetter("data.device_id"))


def _bulk(everything: list, n: int, layouts: tuple[Layout, Layout, Layout], dtypes: tuple[str, str], device: int,
          views: bool = False) -> tuple[Sequence[int], np.ndarray, np.ndarray | None] | None:
    """Pointers (A, B, C in turn) and shapes (3 x n x 2) of 3n arrays of one library (torch or CuPy), read one
    attribute at a time over the whole list, or None when any check fails or the arrays are of another kind (then
    `_described` finds and names the first bad one). Checked here: 2-D, the dtypes (A's and B's, C's), the device,
    densely packed in each operand's layout, C writable. The library is the first array's: an array of another kind
    fails its methods' type checks (torch's descriptors refuse other objects) or the dtype and device checks, and
    that costs no pass over the list's types. `views`: arrays of lines (`lines`) instead of densely packed ones, and
    their leading dimensions (3 x n) returned too."""
    try:
        return _read(everything, n, layouts, dtypes, device, views)
    except (TypeError, AttributeError):  # an array of another kind than the first one's
        return None


def _read(everything: list, n: int, layouts: tuple[Layout, Layout, Layout], dtypes: tuple[str, str], device: int,
          views: bool) -> tuple[Sequence[int], np.ndarray, np.ndarray | None] | None:
    cls = type(everything[0])
    module = cls.__module__.split(".")[0]
    if module == "torch":
        shapes = list(map(_SHAPE, everything))  # the getter: 12% less than size(), which parses its arguments
        if set(map(len, shapes)) != {2} or _dtypes(everything, n, _torch_name) != dtypes:
            return None
        if set(map(cls.get_device, everything)) != {device} or any(map(_GRAD, everything[2 * n:])):
            return None
        # torch's contiguity flag is the row-major density test (strides of extents of 1 ignored, empty is dense)
        strides = None
        if all(layout is Layout.ROW for layout in layouts) and all(map(cls.is_contiguous, everything)):
            pass  # densely packed: the leading dimensions follow from the shapes
        elif all(layout is Layout.ROW for layout in layouts) and not views:
            return None
        else:
            strides = list(map(cls.stride, everything))
        ptrs = list(map(cls.data_ptr, everything))
        item = 1
    elif module == "cupy":
        ptr, shape, stride, dev = _CUPY
        shapes = list(map(shape, everything))
        if set(map(len, shapes)) != {2} or _dtypes(everything, n, attrgetter("name")) != dtypes:
            return None
        if set(map(dev, everything)) != {device}:
            return None
        strides = list(map(stride, everything))
        ptrs = list(map(ptr, everything))
        item = everything[0].itemsize
    else:
        return None
    return _columns(ptrs, shapes, strides, item, n, layouts, views)


def _columns(ptrs: Sequence[int], shapes: Any, strides: Any, item: int, n: int, layouts: tuple[Layout, Layout, Layout],
             views: bool) -> tuple[Sequence[int], np.ndarray, np.ndarray | None] | None:
    """`_bulk`'s result of the 3n arrays' pointers, shapes and strides (in units of `item` bytes; None: densely
    packed row-major arrays, read by their shapes), or None where an array is not laid out as its operand's layout
    (and `views`) asks."""
    flat = np.fromiter(chain.from_iterable(shapes), dtype=np.int64, count=6 * n).reshape(3, n, 2)
    lds = None
    if strides is not None:
        steps = np.fromiter(chain.from_iterable(strides), dtype=np.int64, count=6 * n).reshape(3, n, 2)
        if item != 1:
            steps //= item
        got = [lines(flat[j], steps[j], layout) if views else (dense(flat[j], steps[j], layout), None)
               for j, layout in enumerate(layouts)]
        if not all(ok.all() for ok, _ in got):
            return None
        if views:
            lds = np.stack([ld for _, ld in got if ld is not None])
    return ptrs, flat, lds


def _dtypes(everything: list, n: int, name: Any) -> tuple[str, str] | None:
    """The dtype name of the 2n operands A and B and of the n outputs C, or None where either set holds several."""
    ab = {name(d) for d in set(map(_DTYPE, everything[:2 * n]))}
    c = {name(d) for d in set(map(_DTYPE, everything[2 * n:]))}
    return (ab.pop(), c.pop()) if len(ab) == len(c) == 1 else None


def _described(name: str, group: Any, dtype: str, device: int, layout: Layout, views: bool = False
               ) -> tuple[list[int], np.ndarray, np.ndarray]:
    """Pointers, shapes (n x 2) and leading dimensions (`views`; else those of dense arrays) of one operand's arrays,
    read and checked one by one (any kind of array): the error names the first bad one."""
    infos = [describe(x, name, i) for i, x in enumerate(group)]
    for i, info in enumerate(infos):
        check_array(info, f"{name}[{i}]", 2, dtype, device)
        if name == "Cs" and info.readonly:
            raise GemmcError(f"{name}[{i}]: {info.readonly}")
    n = len(infos)
    shape = np.array([i.shape for i in infos], dtype=np.int64).reshape(n, 2)
    strides = np.array([i.strides for i in infos], dtype=np.int64).reshape(n, 2)
    ok, ld = lines(shape, strides, layout) if views else (dense(shape, strides, layout), shape[:, 0])
    if not ok.all():
        bad = _first(~ok)
        what = "an array of unit-stride lines," if views else "a densely packed"
        raise GemmcError(f"{name}[{bad}]: expected {what} {layout.value}-major array (the schedule's "
                         f"`layout {name[0]} {layout.value}`), got element strides {tuple(strides[bad].tolist())}")
    return [i.ptr for i in infos], shape, ld


class _Consts:
    """What a kernel's list calls check against, looked up once per kernel."""

    def __init__(self, kernel: Executable):
        ir = kernel.ir
        assert ir.dynamic is not None
        self.max_groups = ir.dynamic.max_groups
        self.dtype = NUMPY_DTYPES[ir.dtype]
        self.dtypes = (self.dtype, NUMPY_DTYPES[ir.c_dtype])  # A's and B's, C's
        self.layouts = (ir.layout_a, ir.layout_b, ir.layout_c)
        self.views = view_fields(tuple(layout is Layout.ROW for layout in self.layouts),
                                 (ir.dtype.nbytes, ir.dtype.nbytes, ir.c_dtype.nbytes))
        self.axis = _AXIS[self.layouts]
        plan = ir.plan  # the dynamic family's size classes; hopper_grouped: one tile
        self.smallest = plan.min_tile if isinstance(plan, DynamicPlan) else min(plan.bm, plan.bn)  # type: ignore[union-attr]


_CONSTS: dict[int, tuple[Any, _Consts]] = {}


def _consts(kernel: Executable) -> _Consts:
    found = _CONSTS.get(id(kernel))
    if found is None or found[0] is not kernel:
        found = _CONSTS[id(kernel)] = (kernel, _Consts(kernel))
    return found[1]


def problem_table(kernel: Executable, As: Any, Bs: Any, Cs: Any, device: int, out: np.ndarray | None = None,
                  views: bool = False, exact: bool = False, infos: Sequence[Sequence[ArrayInfo]] | None = None
                  ) -> np.ndarray:
    """Check a list call; return its problem table (problems x FIELDS, int64), written into `out` where given (at
    least as many rows as problems). `views`: each array may be a view of unit-stride lines (a leading dimension
    past its line length), its leading dimension from its strides (`lines`); else each must be densely packed.
    Outputs: a C at the address of another C or of an A or B is refused; `exact` (a call's `validate=True`) also
    refuses any C that shares a byte with another array (`memory.check_views`: 68 us a call for 64 problems on the
    H100's host, 29% more than the checks and table without it:
    bench/results/dynamic/2026-11-27_h100_list-overlap-cost.json).

    The arrays' attributes are read in bulk, one pass per attribute over all 3n arrays (the host time of a call is
    these reads: the torch or CuPy attribute calls themselves), and checked with a few NumPy operations; where that
    finds anything wrong, the arrays are read one by one to name the first bad one. `infos`: the As', Bs' and Cs'
    ArrayInfo, read by the caller, which has checked each (2-D, the schedule's dtypes, on `device`, C writable: a
    fused concurrent group's members' checks): the table is made of them, the arrays not read again."""
    for name, group in (("As", As), ("Bs", Bs), ("Cs", Cs)):
        if not isinstance(group, (list, tuple)):
            raise GemmcError(f"{name}: expected a list of arrays, got {type(group).__name__}")
    consts = _consts(kernel)
    count = len(As)
    if len(Bs) != count or len(Cs) != count:
        raise GemmcError(f"As, Bs, Cs: expected lists of one length, got {count}, {len(Bs)} and {len(Cs)}")
    if count > consts.max_groups:
        raise GemmcError(f"As: {count} problems, but the schedule allows at most {consts.max_groups}")
    if not count:
        return np.empty((0, FIELDS), dtype=np.int64)
    ptrs: Sequence[int]
    if infos is not None:  # strides in elements
        given = tuple(zip(*chain.from_iterable(infos), strict=True))  # the columns: ptr, shape, strides, ...
        found = _columns(given[0], given[1], given[2], 1, count, consts.layouts, views)
    else:
        # The reads make 3n shape tuples, which the cyclic collector tracks: past a few hundred problems they set
        # off collections in the middle of the reads, and nothing here makes a cycle to collect.
        collecting = gc.isenabled()
        if collecting:
            gc.disable()
        try:
            found = _bulk([*As, *Bs, *Cs], count, consts.layouts, consts.dtypes, device, views)
        finally:
            if collecting:
                gc.enable()
    if found is None:
        cols = [_described(name, group, dtype, device, layout, views)
                for name, group, dtype, layout in zip(("As", "Bs", "Cs"), (As, Bs, Cs), consts.dtypes[:1] * 2
                                                      + consts.dtypes[1:], consts.layouts, strict=True)]
        ptrs = [p for c in cols for p in c[0]]
        flat = np.stack([c[1] for c in cols])
        lds = np.stack([c[2] for c in cols]) if views else None
    else:
        ptrs, flat, lds = found
    got, want = flat[_GOT[0], :, _GOT[1]], flat[_WANT[0], :, _WANT[1]]
    if (got != want).any():
        for row, (name, what, other, other_what) in enumerate((("Bs", "rows", "As", "columns"),
                                                                ("Cs", "rows", "As", "rows"),
                                                                ("Cs", "columns", "Bs", "columns"))):
            if (got[row] != want[row]).any():
                i = _first(got[row] != want[row])
                raise GemmcError(f"{name}[{i}] has {int(got[row][i])} {what} but {other}[{i}] has "
                                 f"{int(want[row][i])} {other_what}")
    m, n = flat[0, :, 0], flat[1, :, 1]
    for name, what, extent in (("As", "rows", m), ("Cs", "columns", n)):
        if (extent > INT32_MAX).any():  # the kernels' tile arithmetic is 32-bit (gemmc_dyn_tiles, gemmc_list_place)
            i = _first(extent > INT32_MAX)
            raise GemmcError(f"{name}[{i}] has {int(extent[i])} {what}, but a problem's m and n are at most "
                             f"{INT32_MAX} (the kernels' tile arithmetic is 32-bit)")
    _same_address(ptrs, count, m, n, flat[0, :, 1])
    # tiles <= outputs (each tile holds at least one): the exact count only where the outputs could overflow int32
    if int(m @ n) > INT32_MAX:
        small = consts.smallest
        if int((-(-m // small) * -(-n // small)).sum()) > INT32_MAX:
            raise GemmcError("As, Bs: the problems give more tiles than the int32 tile numbering holds")
    table = np.empty((count, FIELDS), dtype=np.int64) if out is None else out[:count]
    table[:, :6] = flat[_OPERAND, :, consts.axis].T
    if views and lds is None:  # densely packed arrays, read by their shapes: their lines' strides as lines() takes them
        lds = np.stack([lines(flat[j], _dense_steps(flat[j], layout), layout)[1]
                        for j, layout in enumerate(consts.layouts)])
    if lds is not None:
        table[:, 3:6] = lds.T
    np.maximum(table[:, 3:6], 1, out=table[:, 3:6])
    table[:, 6:] = _addresses(ptrs).reshape(3, count).T
    if exact:
        check_views(table, consts.views)
    return table


def _same_address(ptrs: Sequence[int], count: int, m: np.ndarray, n: np.ndarray, k: np.ndarray) -> None:
    """Refuse a C that writes something at the address of another C or of an A or B that holds something (an output
    passed twice, or a call in place): the check every call pays; `validate=True` also compares every byte
    (`memory.check_views`)."""
    outputs = ptrs[2 * count:]
    written = set(outputs)
    if len(written) == count and written.isdisjoint(ptrs[:2 * count]):
        return
    seen: dict[int, int] = {}
    for i in np.flatnonzero((m > 0) & (n > 0)).tolist():
        if outputs[i] in seen:
            raise GemmcError(f"Cs[{seen[outputs[i]]}] and Cs[{i}] are one array: two problems would write the same "
                             "memory; each C must be memory of its own")
        seen[outputs[i]] = i
    held = np.concatenate([m * k > 0, k * n > 0])  # an empty A or B reads nothing
    for j in np.flatnonzero(held).tolist():
        if ptrs[j] in seen:
            raise GemmcError(f"Cs[{seen[ptrs[j]]}] is {('As', 'Bs')[j // count]}[{j % count}]'s memory: a problem "
                             "would write an input while the batch reads it; C must not share memory with any A or B")


def _addresses(ptrs: Sequence[int]) -> np.ndarray:
    """The pointers as the table's int64 bits: a conversion to int64 takes a third of the time of one to uint64, and
    device addresses stay below 2^63 (48-bit virtual addresses); any other is converted as uint64."""
    try:
        return np.fromiter(ptrs, dtype=np.int64, count=len(ptrs))
    except OverflowError:
        return np.fromiter(ptrs, dtype=np.uint64, count=len(ptrs)).view(np.int64)


def list_arguments(offsets: Any) -> None:
    """Refuse the contiguous forms' group ends in a `grouped list` call."""
    if offsets is not None:
        raise GemmcError("offsets: a `grouped list` kernel takes lists of arrays, not group ends")


def make_tables(st: DynamicState, capacity: int, map_bytes: int = 0) -> None:
    """A list-form state's table buffers for `capacity` problems: the staging ring, and the buffers of CAPTURES
    captured calls (`captured`; a later capture makes its own, `DynamicState.capture`), each slot and each with
    `map_bytes` of tensor maps where the kernel takes them. Allocated outside any graph (the relaxed capture mode, for
    a first call inside a capture)."""
    with relaxed_capture():
        st.side = cupy().cuda.Stream(non_blocking=True)
        side = st.side
        st.new_capture = lambda: captured(side, capacity, map_bytes)
        st.captures = [st.new_capture() for _ in range(CAPTURES)]
        # from the side stream's blocks (none freed while in use: the captures' are kept): the ring's tables are
        # written on any stream, and a block the current stream freed may still be read by its queued kernels
        with side:
            st.ring = Ring(capacity, map_bytes=map_bytes)  # last: a call that finds the ring finds the captures' too


def captured(side: Any, capacity: int, map_bytes: int) -> Captured:
    """The buffers of one captured call (`Captured`: a problem table for `capacity` problems with `map_bytes` of
    tensor maps or none, zeroed tile counters), made while this thread may be capturing a CUDA graph: allocated with its
    capture mode relaxed, from the memory pool's blocks of `side` (a stream outside every graph), the counters zeroed
    there and waited for, so that the graph's first replay finds them zero."""
    cp = cupy()
    with relaxed_capture():
        with side:
            ring = Ring.single(capacity, map_bytes)
            counters = cp.zeros(COUNTER_INTS, dtype=cp.int32)
        side.synchronize()  # relaxed too: a wait during another stream's capture
    return Captured(ring, counters)


def launch_list(kernel: Executable, st: DynamicState, As: Any, Bs: Any, Cs: Any, alpha_: Any, beta_: Any,
                stream: Any, device: int, views: bool = False, exact: bool = False) -> None:
    """The list form's launch: the problem table (`views`: arrays may be views of unit-stride lines, their leading
    dimensions read from their strides; `exact`: every byte of the outputs checked, `problem_table`), staged through
    the ring (a captured call: a table and counters of its own), then the kernel."""
    if st.ring is None:
        with FIRST_LOADS:  # two threads' first list calls make one set of tables
            if st.ring is None:
                make_tables(st, kernel.ir.dynamic.max_groups)  # type: ignore[union-attr]
    with Staging(st, stream) as call:
        count = len(problem_table(kernel, As, Bs, Cs, device, out=call.out, views=views, exact=exact))
        if not count:
            return
        dev = call.send(count, stream)
        counter = call.counter(stream.ptr)
        if st.fast is not None:
            st.fast(st.grid, st.block, st.smem, stream.ptr, (0, 0, 0, 0, dev, count, 0), counter,
                    (float(alpha_), float(beta_)))
        else:
            zero = np.uint64(0)
            st.fn((st.grid, 1, 1), (st.block, 1, 1),
                  (zero, zero, zero, zero, np.uint64(dev), np.int32(count), np.int64(0), np.int64(0), np.int64(0),
                   np.int64(0), np.int64(st.threshold), np.uint64(counter), alpha_, beta_), shared_mem=st.smem,
                  stream=stream)
        call.done(stream)

"""The list form's argument checks and problem table without a GPU (runtime/dynamic_list.py): fake device arrays of
every kind the runtime reads (bare __cuda_array_interface__, CuPy, torch), read in bulk or one by one."""

from __future__ import annotations

import itertools
import re
import time

import numpy as np
import pytest

import gemmc
from gemmc.runtime.dynamic_list import FIELDS, problem_table
from tests.test_args import FakeArray, FakeCupy, FakeTensor, describe

KINDS = {"cai": FakeArray, "cupy": FakeCupy, "torch": FakeTensor}
F32 = gemmc.compile_string("kernel varlen { alpha runtime beta runtime grouped list problems 64 }")["varlen"].executable
F64 = gemmc.compile_string("kernel v64 { dtype f64 layout A col, B col grouped list problems 64 }")["v64"].executable
SIZES = [(0, 5, 3), (4, 0, 3), (5, 6, 0), (1, 1, 1), (97, 31, 13), (2, 300, 7), (33, 1, 5), (1, 200, 64)]


def operands(kind, kernel=F32, sizes=SIZES):
    make = KINDS[kind]
    f64 = kernel is F64
    typestr, a_order, b_order = ("<f8", "F", "F") if f64 else ("<f4", "C", "C")
    return ([make((m, k), a_order, typestr) for m, n, k in sizes],
            [make((k, n), b_order, typestr) for m, n, k in sizes], [make((m, n), "C", typestr) for m, n, k in sizes])


def expected(kernel, As, Bs, Cs):
    """The table built one problem at a time."""
    rows = []
    col_a = kernel is F64
    for a, b, c in zip(As, Bs, Cs, strict=True):
        (m, k), n = describe(a, "a").shape, describe(b, "b").shape[1]
        rows.append([m, n, k, max(m if col_a else k, 1), max(k if col_a else n, 1), max(n, 1),
                     describe(a, "a").ptr, describe(b, "b").ptr, describe(c, "c").ptr])
    return np.array(rows, dtype=np.int64)


@pytest.mark.parametrize("kernel", [F32, F64], ids=["f32-rrr", "f64-ccr"])
@pytest.mark.parametrize("kind", KINDS)
def test_the_table_holds_every_problem_in_order(kind, kernel):
    As, Bs, Cs = operands(kind, kernel)
    table = problem_table(kernel, As, Bs, Cs, device=0)
    assert table.shape == (len(SIZES), FIELDS)
    np.testing.assert_array_equal(table, expected(kernel, As, Bs, Cs))
    out = np.full((64, FIELDS), -1, dtype=np.int64)  # written in place (the pinned staging buffer)
    assert problem_table(kernel, As, Bs, Cs, device=0, out=out) is not None
    np.testing.assert_array_equal(out[:len(SIZES)], table)
    assert (out[len(SIZES):] == -1).all()



@pytest.mark.parametrize("m, n, words", [(2**32 + 5, 1, "As[1] has 4294967301 rows"),
                                         (1, 2**31, "Cs[1] has 2147483648 columns")])
def test_a_problem_past_32_bits_is_refused(m, n, words):
    """The kernels' tile arithmetic takes m and n as 32-bit: a problem of 2^32 + 5 rows would get the tiles of 5 rows,
    though its tiles pass the bound of the int32 tile numbering."""
    As, Bs, Cs = operands("torch", sizes=[(1, 1, 1), (m, n, 1)])
    with pytest.raises(gemmc.GemmcError) as info:
        problem_table(F32, As, Bs, Cs, device=0)
    assert words + ", but a problem's m and n are at most 2147483647" in str(info.value)

def test_a_list_of_mixed_kinds_is_read_one_by_one():
    As, Bs, Cs = operands("torch")
    mixed = [*As[:3], *operands("cupy")[0][3:]]
    got = problem_table(F32, mixed, Bs, Cs, device=0)
    np.testing.assert_array_equal(got, expected(F32, mixed, Bs, Cs))


def test_empty_outputs_may_share_an_address():
    As, Bs, Cs = operands("torch", sizes=[(0, 5, 3), (4, 0, 3), (2, 2, 2)])
    Cs[1]._ptr = Cs[0]._ptr
    assert len(problem_table(F32, As, Bs, Cs, device=0)) == 3


def _swap(group, i, new):
    return [new if j == i else x for j, x in enumerate(group)]


BAD = [
    (lambda mk, a, b, c: (_swap(a, 2, mk((5, 1))), b, c), "Bs[2] has 0 rows but As[2] has 1 columns"),
    (lambda mk, a, b, c: (a, b, _swap(c, 4, mk((97, 30)))), "Cs[4] has 30 columns but Bs[4] has 31 columns"),
    (lambda mk, a, b, c: (a, b, _swap(c, 5, mk((3, 300)))), "Cs[5] has 3 rows but As[5] has 2 rows"),
    (lambda mk, a, b, c: (_swap(a, 3, mk((1, 1), typestr="<f8")), b, c), "As[3]: expected dtype float32"),
    (lambda mk, a, b, c: (a, b, _swap(c, 4, mk((97, 31), strides=(248, 4)))),
     "Cs[4]: expected a densely packed row-major array (the schedule's `layout C row`), got element strides (62, 1)"),
    (lambda mk, a, b, c: (a, _swap(b, 4, mk((13, 31), "F")), c), "Bs[4]: expected a densely packed row-major"),
    (lambda mk, a, b, c: (_swap(a, 1, mk((4, 3, 1))), b, c), "As[1]: expected a 2-D array"),
    # a 1-D and a 3-D array: as many extents in all as two 2-D ones
    (lambda mk, a, b, c: (_swap(_swap(a, 0, mk((3,))), 1, mk((4, 3, 1))), b, c), "As[0]: expected a 2-D array"),
    (lambda mk, a, b, c: (a, b, _swap(c, 6, c[4])), "Cs[6] has 97 rows but As[6] has 33 rows"),
    (lambda mk, a, b, c: (a, b, c[:-1]), "As, Bs, Cs: expected lists of one length, got 8, 8 and 7"),
    (lambda mk, a, b, c: (a, b, tuple(c[:7]) + ("not an array",)), "Cs[7]: expected a GPU array"),
    (lambda mk, a, b, c: (a[0], b, c), "As: expected a list of arrays"),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("change, message", BAD)
def test_bad_arguments_are_named(kind, change, message):
    with pytest.raises(gemmc.GemmcError) as info:
        problem_table(F32, *change(KINDS[kind], *operands(kind)), device=0)
    assert message in str(info.value)


@pytest.mark.parametrize("kind", KINDS)
def test_two_problems_writing_one_array_are_refused(kind):
    As, Bs, Cs = operands(kind, sizes=[(3, 4, 2), (3, 4, 5)])
    with pytest.raises(gemmc.GemmcError, match=r"Cs\[0\] and Cs\[1\] are one array: two problems would write"):
        problem_table(F32, As, Bs, [Cs[0], Cs[0]], device=0)


def test_torch_tensors_on_another_device_the_cpu_or_requiring_grad_are_refused():
    As, Bs, Cs = operands("torch")
    with pytest.raises(gemmc.GemmcError, match=r"Bs\[3\]: lives on GPU 1"):
        problem_table(F32, As, _swap(Bs, 3, FakeTensor((1, 1), device=1)), Cs, device=0)
    with pytest.raises(gemmc.GemmcError, match=r"As\[4\]: the tensor is on the CPU"):
        problem_table(F32, _swap(As, 4, FakeTensor((97, 13), device=-1)), Bs, Cs, device=0)
    grad = FakeTensor((2, 300))
    grad.requires_grad = True
    with pytest.raises(gemmc.GemmcError, match=r"Cs\[5\]: the tensor requires grad"):
        problem_table(F32, As, Bs, _swap(Cs, 5, grad), device=0)
    problem_table(F32, _swap(As, 5, FakeTensor((2, 7))), Bs, Cs, device=0)  # A may require grad: it is only read


def test_more_problems_than_the_schedule_allows_are_refused():
    As, Bs, Cs = operands("cupy", sizes=[(1, 1, 1)] * 65)
    with pytest.raises(gemmc.GemmcError, match="65 problems, but the schedule allows at most 64"):
        problem_table(F32, As, Bs, Cs, device=0)


def test_addresses_past_2_63_keep_their_bits():
    As, Bs, Cs = operands("torch", sizes=[(2, 3, 4)])
    Cs[0]._ptr = 2**63 + 4096
    table = problem_table(F32, As, Bs, Cs, device=0)
    assert int(table[0, 8].astype(np.uint64)) == 2**63 + 4096


def test_the_collector_is_paused_for_the_reads_and_left_as_it_was(monkeypatch):
    import gc

    from gemmc.runtime import dynamic_list

    during: list[bool] = []
    read = dynamic_list._read

    def watched(*args):
        during.append(gc.isenabled())
        return read(*args)

    monkeypatch.setattr(dynamic_list, "_read", watched)
    As, Bs, Cs = operands("torch")
    was = gc.isenabled()
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            problem_table(F32, As, Bs, Cs, device=0)
            assert gc.isenabled() is enabled and during[-1] is False
            with pytest.raises(gemmc.GemmcError):
                problem_table(F32, As, Bs, Cs[:-1], device=0)
            assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


@pytest.mark.parametrize("kind", KINDS)
def test_views_take_their_leading_dimensions_from_their_strides(kind):
    """views=True (the tensor-core list form): an array of unit-stride lines a leading dimension apart is read in
    place, its leading dimension from its strides; a dense one's from its shape, rounded up to 8 where it has one
    line; without views the same view is refused."""
    mk = KINDS[kind]
    As, Bs, Cs = operands(kind, sizes=[(4, 5, 3), (1, 3, 7)])
    As[0] = mk((4, 3), strides=(4 * 16, 4))
    table = problem_table(F32, As, Bs, Cs, device=0, views=True)
    assert table[:, 3].tolist() == [16, 8] and table[:, 4].tolist() == [5, 3] and table[:, 5].tolist() == [5, 8]
    dense = problem_table(F32, *operands(kind, sizes=[(4, 5, 3), (1, 3, 7)]), device=0, views=True)
    assert dense[:, 3].tolist() == [3, 8] and dense[:, 5].tolist() == [5, 8]
    with pytest.raises(gemmc.GemmcError, match="densely packed"):
        problem_table(F32, As, Bs, Cs, device=0)
    As[0] = mk((4, 3), strides=(4 * 16, 8))  # no unit stride along the lines
    with pytest.raises(gemmc.GemmcError, match=r"As\[0\]: expected an array of unit-stride lines"):
        problem_table(F32, As, Bs, Cs, device=0, views=True)


_CAPTURED = itertools.count(1)  # each stand-in capture's counters 32 bytes past the last one's


def _captured(base: int, ring: object = None) -> object:
    """A dynamic_state.Captured (no device) whose tile counters lie past `base`, apart from every other one's."""
    from types import SimpleNamespace

    from gemmc.runtime.dynamic_state import Captured

    return Captured(ring, SimpleNamespace(data=SimpleNamespace(ptr=base + 32 * next(_CAPTURED))))


def test_a_grouped_forms_captures_take_counters_of_their_own_per_graph_and_stream(monkeypatch):
    """Grouped M/K launches inside a capture (the driver's capture id and graph, stubbed) share counters per (capture,
    stream), apart from every stream's, every other capture's and the list form's captured calls', inside
    zeroed_counters' allocation; plain launches take their stream's. Each pair's graph holds a release; while
    CAPTURED_COUNTERS pairs' graphs exist a capture takes its stream's, with one warning; once a graph is gone the
    next capture takes its pair's counters. The graphs' table and the list form's captures count apart."""
    from types import SimpleNamespace

    from gemmc.runtime import dynamic_state, graph_release
    from gemmc.runtime.dynamic_state import CAPTURED_COUNTERS, CAPTURES, COUNTER_INTS, COUNTER_SLOTS, DynamicState

    capturing: dict[int, int] = {}  # stream -> the capture it takes part in (its graph: the id + 0x1000)
    monkeypatch.setattr(dynamic_state, "capture_of",
                        lambda stream: (capturing[stream], capturing[stream] + 0x1000) if stream in capturing else None)
    monkeypatch.setattr(graph_release, "GraphRelease", _Release)
    st = DynamicState("moe", None, None, 1, 0, 0, 1, captures=[_captured(1 << 30) for _ in range(CAPTURES)],
                      counters=SimpleNamespace(data=SimpleNamespace(ptr=4096)))
    plain = st.launch_counter(7)
    capturing[7] = 100
    first = st.launch_counter(7)
    assert st.launch_counter(7) == first != plain  # a graph's calls on one stream share its counters
    capturing[8] = 100
    side = st.launch_counter(8)  # the same capture, forked onto another stream
    capturing[7] = 101
    second = st.launch_counter(7)
    assert len({plain, first, side, second, st.counter(8)}) == 5
    assert st.captures_held == 0 and st.capture() == 0  # the list form's captures are a table of their own
    # the list form's captured calls' counters are their own sets' (Captured), outside zeroed_counters' allocation
    assert [st.capture_counter(i) for i in range(CAPTURES)] == [c.counter for c in st.captures]
    del capturing[7]
    assert st.launch_counter(7) == plain
    end = 4096 + 4 * COUNTER_INTS * (COUNTER_SLOTS + CAPTURED_COUNTERS)
    graphs = {first, side, second}
    for capture in range(102, 102 + CAPTURED_COUNTERS - 3):
        capturing[7] = capture
        graphs.add(st.launch_counter(7))
    assert len(graphs) == CAPTURED_COUNTERS == len(st.graph_counters) == st.graph_counters.held
    assert min(graphs) > max(st.counter(8), plain) and max(graphs) + 4 * COUNTER_INTS == end
    releases = st.graph_counters.pool.releases
    assert [r.graphs for r in releases[:3]] == [[100 + 0x1000], [100 + 0x1000], [101 + 0x1000]]
    capturing[7] = 1000
    with pytest.warns(UserWarning, match=fr"^gemmc: kernel 'moe' keeps tile counters of their own for "
                                         fr"{CAPTURED_COUNTERS} \(graph, capture stream\) pairs whose CUDA graphs "
                                         "still exist, the most it keeps; until one of those graphs is destroyed, a "
                                         "capture shares its stream's counters") as record:
        assert st.launch_counter(7) == plain
    assert record[0].filename == __file__  # the caller's line, outside gemmc
    capturing[7] = 1001
    assert st.launch_counter(7) == plain  # warned once
    releases[2].gone = True  # capture 101's graph is destroyed: its pair's counters go to the next capture
    capturing[7] = 1002
    assert st.launch_counter(7) == second and st.launch_counter(7) == second
    assert releases[2].graphs[-1] == 1002 + 0x1000 and not releases[2].gone  # reset, then attached to the new graph
    assert (101, 7) not in st.graph_counters.found and st.graph_counters.held == CAPTURED_COUNTERS
    capturing[7] = 1003
    assert st.launch_counter(7) == plain  # every pair's graph exists again
    assert len(st.graph_counters) == CAPTURED_COUNTERS and st.captures_held == 1


def test_views_of_one_matrix_may_interleave_but_not_share_an_element():
    """Column blocks of one row-major matrix as the Cs (views, as the tensor-core list reads them): their spans
    interleave, no two share an element, so the call is taken; blocks one column too wide, or an A over a C's
    columns, share elements: refused with `exact` (validate=True), naming both arrays. A C at an A's address is
    refused on every call."""
    base = FakeTensor((6, 12))  # the matrix the views are column blocks of

    def block(col, width=4):
        view = FakeTensor((6, width), strides=(12 * 4, 4))
        view._ptr = base._ptr + 4 * col
        return view

    As, Bs, _ = operands("torch", sizes=[(6, 4, 3)] * 3)
    problem_table(F32, As, Bs, [block(0), block(4), block(8)], device=0, views=True, exact=True)
    problem_table(F32, As, Bs, [block(0), block(3), block(8)], device=0, views=True)  # apart by address
    with pytest.raises(gemmc.GemmcError, match=r"Cs\[0\] and Cs\[1\] overlap"):
        problem_table(F32, As, Bs, [block(0), block(3), block(8)], device=0, views=True, exact=True)
    As[1] = block(9, width=3)  # columns 9-11 of the matrix: Cs[2]'s last three
    with pytest.raises(gemmc.GemmcError, match=r"Cs\[2\] overlaps As\[1\]: a problem would write an input"):
        problem_table(F32, As, Bs, [block(0), block(4), block(8)], device=0, views=True, exact=True)
    with pytest.raises(gemmc.GemmcError, match=r"Cs\[1\] is As\[1\]'s memory"):  # in place: refused every call
        problem_table(F32, As, Bs, [block(0), block(9, width=4), block(4)], device=0, views=True)
    for exact in (False, True):  # an A of no columns at its C's address reads nothing: taken either way
        empty = FakeTensor((6, 0))
        c = FakeTensor((6, 4))
        empty._ptr = c._ptr
        problem_table(F32, [empty], [FakeTensor((0, 4))], [c], device=0, views=True, exact=exact)


def test_the_overlap_check_agrees_with_the_bytes_the_arrays_hold():
    """check_views against the sets of bytes each array holds, on random small lists: strided views at random
    addresses, both layouts, 2- and 4-byte C, empty problems, one-line arrays (whose leading dimension is no pitch)."""
    from gemmc.runtime.memory import check_views, view_fields

    def held(p, lines, width, pitch):
        return {p + r * pitch + b for r in range(lines) for b in range(width)}

    rng = np.random.default_rng(1)
    verdicts = set()
    for _ in range(400):
        count = int(rng.integers(1, 6))
        row_major = tuple(bool(x) for x in rng.integers(0, 2, 3))
        items = (2, 2, int(rng.choice([2, 4])))
        rows, bytes_ = [], [[], [], []]
        for _ in range(count):
            m, n, k = (int(x) for x in rng.integers(0, 5, 3))
            row = [m, n, k]
            for slot, (r, c) in enumerate(((m, k), (k, n), (m, n))):
                lines, width = (r, c) if row_major[slot] else (c, r)
                ld = width + int(rng.integers(0, 6))
                ptr = 1000 + int(rng.integers(0, 80)) * items[slot]
                row.insert(3 + slot, max(ld, 1))
                row.append(ptr)
                bytes_[slot].append(held(ptr, lines, width * items[slot], max(ld, width) * items[slot])
                                    if lines and width else set())
            rows.append(row)
        c_pairs = {(i, j) for i in range(count) for j in range(i + 1, count) if bytes_[2][i] & bytes_[2][j]}
        in_pairs = {(c, name, k) for name, group in (("As", bytes_[0]), ("Bs", bytes_[1]))
                    for k, x in enumerate(group) for c in range(count) if x & bytes_[2][c]}
        try:
            check_views(np.array(rows, dtype=np.int64), view_fields(row_major, items))
            got = "none"
        except gemmc.GemmcError as err:
            pair = re.search(r"Cs\[(\d+)\] and Cs\[(\d+)\] overlap", str(err))
            one = re.search(r"Cs\[(\d+)\] overlaps (As|Bs)\[(\d+)\]", str(err))
            got = "C" if pair else "input"
            # the arrays it names share a byte
            assert ((int(pair[1]), int(pair[2])) in c_pairs) if pair else \
                ((int(one[1]), one[2], int(one[3])) in in_pairs), (str(err), rows)
        want = "C" if c_pairs else "input" if in_pairs else "none"
        assert got == want, (rows, row_major, items)
        verdicts.add(want)
    assert verdicts == {"none", "C", "input"}


def test_each_capture_takes_buffers_of_its_own_and_gives_back_an_unused_one():
    """Captured list calls reserve the sets of buffers (Captured: table, tile counters, maps) in turn: the CAPTURES made
    with the state, then one made for each later capture (`new_capture`), up to MAX_CAPTURES (E900 past it, naming
    the kernel); a reservation whose call launched nothing is given back where it was the last, and its buffers are
    taken again, not made anew. No two of the streams' and captures' counter pairs overlap; the streams' lie in
    zeroed_counters' allocation, past COUNTER_SLOTS streams E900."""
    from types import SimpleNamespace

    from gemmc.errors import GemmcError
    from gemmc.runtime.dynamic_state import (
        CAPTURED_COUNTERS,
        CAPTURES,
        COUNTER_INTS,
        COUNTER_SLOTS,
        MAX_CAPTURES,
        DynamicState,
    )

    made: list[object] = []

    def new_capture() -> object:
        made.append(_captured(1 << 30))
        return made[-1]

    st = DynamicState("moe", None, None, 1, 0, 0, 1, captures=[_captured(1 << 30) for _ in range(CAPTURES)],
                      new_capture=new_capture, counters=SimpleNamespace(data=SimpleNamespace(ptr=4096)))
    first, second = st.capture(), st.capture()
    assert (first, second) == (0, 1)
    st.uncapture(first)  # given back (its call sent nothing): the next capture takes it
    assert st.capture() == 0
    st.uncapture(second)
    assert st.capture() == 1
    streams = [st.counter(s) for s in range(COUNTER_SLOTS)]  # every stream's slot
    with pytest.raises(GemmcError, match=f"stream: kernel 'moe' has run on {COUNTER_SLOTS} streams, the most it "
                                         "keeps tile counters for; launch it on fewer streams"):
        st.counter(COUNTER_SLOTS)
    end = 4096 + 4 * COUNTER_INTS * (COUNTER_SLOTS + CAPTURED_COUNTERS)
    assert min(streams) >= 4096 and max(streams) + 4 * COUNTER_INTS <= end
    for _ in range(CAPTURES - 2):
        st.capture()
    assert made == [] and st.captures_held == CAPTURES
    assert st.capture() == CAPTURES and made == [st.captures[CAPTURES]]  # the first made while capturing
    st.uncapture(CAPTURES)
    assert st.capture() == CAPTURES and len(made) == 1  # given back, taken again
    while st.captures_held < MAX_CAPTURES:
        st.capture()
    assert len(st.captures) == MAX_CAPTURES and len(made) == MAX_CAPTURES - CAPTURES
    assert [st.capture_counter(k) for k in range(MAX_CAPTURES)] == [c.counter for c in st.captures]
    assert min(b - a for a, b in zip(streams, streams[1:], strict=False)) >= 4 * COUNTER_INTS  # no two pairs overlap
    with pytest.raises(GemmcError, match=f"kernel 'moe' is captured in {MAX_CAPTURES} CUDA graphs that still exist, "
                                         r"the most it keeps problem tables for \(a graph that is destroyed gives "
                                         r"its tables back\)$") as info:
        st.capture()
    assert info.value.code == "E900" and st.captures_held == MAX_CAPTURES


@pytest.mark.parametrize("views", [False, True], ids=["dense", "views"])
@pytest.mark.parametrize("kernel", [F32, F64], ids=["f32-rrr", "f64-ccr"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_table_of_metadata_read_by_the_caller_is_the_one_read_in_bulk(kind, kernel, views):
    """problem_table's `infos` (a fused concurrent group's checked ArrayInfo): the same table, and the arrays are not
    read again (stand-ins that cannot be read take their place)."""
    As, Bs, Cs = operands(kind, kernel)
    infos = [[describe(x, "x") for x in group] for group in (As, Bs, Cs)]
    unread = [[object()] * len(As)] * 3
    got = problem_table(kernel, *unread, device=0, views=views, infos=infos)
    np.testing.assert_array_equal(got, problem_table(kernel, As, Bs, Cs, device=0, views=views))


def test_each_stream_takes_a_slot_of_its_own_up_to_the_limit():
    """StreamSlots, the tile counters' per-stream slots: a stream keeps its slot, slots lie `size` apart from the
    allocation's start, and a stream past the limit is refused (E900) naming what the slots hold."""
    from types import SimpleNamespace

    from gemmc.errors import GemmcError
    from gemmc.runtime.dynamic_state import COUNTER_SLOTS, DynamicState

    st = DynamicState("moe", None, None, 1, 0, 0, 1, counters=SimpleNamespace(data=SimpleNamespace(ptr=1 << 30)))
    streams = [101 + s for s in range(COUNTER_SLOTS)]
    assert [st.counter(s) for s in streams] == [(1 << 30) + 32 * i for i in range(COUNTER_SLOTS)]
    assert st.counter(streams[3]) == (1 << 30) + 32 * 3
    with pytest.raises(GemmcError, match=f"stream: kernel 'moe' has run on {COUNTER_SLOTS} streams, the most it "
                                         "keeps tile counters for; launch it on fewer streams") as info:
        st.counter(7)
    assert info.value.code == "E900"


def test_calls_in_flight_on_one_stream_take_tensor_maps_of_their_own(monkeypatch):
    """The tensor-core list's maps are its ring slot's: two calls in flight at once on one stream (two threads on
    torch's default stream), whose planning and main launches may interleave there (P1 P2 M1 M2), each write and
    read maps of their own; a slot's next call takes the slot's maps again once the last one has recorded its
    launch; a captured call's maps are its Captured ring's, apart from every slot's."""
    from types import SimpleNamespace

    from gemmc.runtime import dynamic_list
    from gemmc.runtime.dynamic_list import Ring
    from gemmc.runtime.dynamic_state import CAPTURES, DynamicState

    _stub_ring_device(monkeypatch)
    monkeypatch.setattr(dynamic_list, "captured", lambda side, capacity, map_bytes: _captured(
        1 << 40, Ring.single(capacity, map_bytes)))
    class Side(SimpleNamespace):  # CuPy's stream as make_tables uses it: current inside `with`
        def __enter__(self):
            return self

        def __exit__(self, *_):
            pass

    dynamic_list.cupy().cuda.Stream = lambda **_: Side(ptr=9)
    capturing = {7: 0}
    dynamic_list.cupy().cuda.runtime.streamIsCapturing = capturing.get
    st = DynamicState("moe_list", None, None, 1, 0, 0, 1, counters=SimpleNamespace(data=SimpleNamespace(ptr=1 << 16)))
    dynamic_list.make_tables(st, 4, map_bytes=384)
    stream = SimpleNamespace(ptr=7)
    with dynamic_list.Staging(st, stream) as first, dynamic_list.Staging(st, stream) as second:
        assert first.slot != second.slot and first.maps() != second.maps()
        assert first.counter(stream.ptr) == second.counter(stream.ptr)  # kernels in stream order share counters
        for call in (first, second):
            call.send(1, stream)
            call.done(stream)
    held = {first.maps(), second.maps()}
    capturing[7] = 1
    with dynamic_list.Staging(st, stream) as captured:
        assert captured.index == 0 and captured.maps() not in held
        assert captured.maps() == int(st.captures[0].ring.maps[0].data.ptr)
    capturing[7] = 0
    slots = [int(m.data.ptr) for m in st.ring.maps]
    assert len(set(slots)) == len(slots) == dynamic_list.RING and len(st.captures) == CAPTURES
    again = [dynamic_list.Staging(st, stream) for _ in range(dynamic_list.RING)]
    for call in again:
        call.__enter__()
    assert {call.maps() for call in again} == set(slots)  # each slot's maps, taken again
    for call in again:
        call.__exit__()


class _Release:
    """Stands in for graph_release.GraphRelease (no driver): the test says when the graph it is attached to is gone."""

    def __init__(self) -> None:
        self.attached, self.gone, self.graphs = False, False, []

    def attach(self, graph: int) -> bool:
        self.graphs.append(graph)
        self.attached = True
        return True

    def posted(self) -> bool:
        return self.gone

    def reset(self) -> None:
        self.attached = self.gone = False


def _graphs(monkeypatch, graph: int | None = 0xCAFE) -> None:
    """Every capture is into `graph` (None: the driver cannot say), whose releases the test posts."""
    from gemmc.runtime import dynamic_state, graph_release

    monkeypatch.setattr(dynamic_state, "capture_graph", lambda stream: graph)
    monkeypatch.setattr(graph_release, "GraphRelease", _Release)


def test_a_staged_call_gives_back_its_capture_unless_it_sent_its_table(monkeypatch):
    """Staging, the list launchers' one capture sequence: a call being captured reserves buffers of its own and gives
    them back where it raises or has no work before sending its table; once sent they are the graph's (the reservation
    kept, the capture's one slot given back with the call); a plain call takes the ring's next buffer and its stream's
    counters."""
    from types import SimpleNamespace

    from gemmc.errors import GemmcError
    from gemmc.runtime import dynamic_list
    from gemmc.runtime.dynamic_state import CAPTURES, DynamicState

    capturing = [1]
    runtime = SimpleNamespace(streamIsCapturing=lambda ptr: capturing[0])
    monkeypatch.setattr(dynamic_list, "cupy", lambda: SimpleNamespace(cuda=SimpleNamespace(runtime=runtime)))
    _graphs(monkeypatch)

    class Ring:
        def __init__(self):
            self.sent, self.released = [], []

        def host_table(self):
            return 0, np.zeros((4, FIELDS), dtype=np.int64)

        def send(self, slot, rows, stream):
            self.sent.append(rows)
            return 4096

        def done(self, slot, stream):
            self.released.append(stream)

        def give_back(self, slot):
            self.released.append("given back")

    st = DynamicState("moe", None, None, 1, 0, 0, 1, ring=Ring(),
                      captures=[_captured(1 << 20, Ring()) for _ in range(CAPTURES)],
                      counters=SimpleNamespace(data=SimpleNamespace(ptr=1 << 16)))
    stream = SimpleNamespace(ptr=7)
    first = st.captures[0].ring
    with pytest.raises(GemmcError, match="a bad list"), dynamic_list.Staging(st, stream) as call:
        raise GemmcError("a bad list")
    assert st.captures_held == 0 and first.released == ["given back"]
    with dynamic_list.Staging(st, stream) as call:
        pass  # no work
    assert st.captures_held == 0 and first.released == ["given back"] * 2
    first.released.clear()
    with dynamic_list.Staging(st, stream) as call:
        assert call.index == 0 and call.counter(stream.ptr) == st.captures[0].counter != st.counter(stream.ptr)
        assert call.send(3, stream) == 4096
        call.done(stream)
    # the reservation stays the graph's; the slot goes back, for a call taking the reservation once it is given back
    assert st.captures_held == 1 and first.sent == [3] and first.released == ["given back"]
    capturing[0] = 0
    with dynamic_list.Staging(st, stream) as call:
        assert call.index is None and call.counter(stream.ptr) == st.counter(stream.ptr)
        call.send(2, stream)
        call.done(stream)
    assert st.captures_held == 1 and st.ring.sent == [2] and st.ring.released == [stream]
    with pytest.raises(GemmcError, match="a failed launch"), dynamic_list.Staging(st, stream) as call:
        call.send(2, stream)
        raise GemmcError("a failed launch")
    assert st.ring.released == [stream] * 2  # behind its copy, which may still read the pinned buffer


def _stub_ring_device(monkeypatch, failing: list[int] | None = None, records: list[int] | None = None):
    """dynamic_list's CuPy as far as Ring uses it, on the host: pinned buffers are bytearrays, copies do nothing, an
    event's synchronize raises while `failing` holds a count above 0, its record while `records` does (counting it
    down)."""
    from types import SimpleNamespace

    from gemmc.runtime import dynamic_list

    class Pinned(bytearray):
        ptr = 0

    class Event:
        def __init__(self, **_):
            pass

        def record(self, stream):
            if records and records[0] > 0:
                records[0] -= 1
                raise RuntimeError("cudaErrorIllegalAddress")

        def synchronize(self):
            if failing and failing[0] > 0:
                failing[0] -= 1
                raise RuntimeError("cudaErrorLaunchFailure")

    cuda = SimpleNamespace(alloc_pinned_memory=Pinned, Event=Event,
                           runtime=SimpleNamespace(memcpyAsync=lambda *a: None, memcpyHostToDevice=1))
    addresses = itertools.count(4096, 1 << 16)  # each device array at an address of its own
    fake = SimpleNamespace(cuda=cuda, int64=np.int64,
                           empty=lambda n, dtype: SimpleNamespace(data=SimpleNamespace(ptr=next(addresses))))
    monkeypatch.setattr(dynamic_list, "cupy", lambda: fake)


def test_ring_slots_are_never_held_by_two_calls_at_once(monkeypatch):
    """Twelve threads filling tables through a ring of 3 slots: a call holds its slot from host_table to done, so no
    other call writes its pinned buffer in between (each call finds its own table as it wrote it), and every slot is
    free once the calls are done."""
    import threading
    from types import SimpleNamespace

    from gemmc.runtime.dynamic_list import Ring

    _stub_ring_device(monkeypatch)
    ring = Ring(4, slots=3)
    stream = SimpleNamespace(ptr=7)
    clashes: list[tuple[int, int]] = []
    failed: list[BaseException] = []

    def calls(me: int) -> None:
        try:
            for i in range(300):
                slot, out = ring.host_table()
                out[:] = me
                time.sleep(0)  # another thread runs here: with a slot of its own it writes another buffer
                if not (out == me).all():
                    clashes.append((me, i))
                ring.send(slot, 1, stream)
                ring.done(slot, stream)
        except BaseException as e:  # noqa: BLE001 - reported below
            failed.append(e)

    threads = [threading.Thread(target=calls, args=(me,), daemon=True) for me in range(12)]
    for th in threads:
        th.start()
    deadline = time.monotonic() + 60
    for th in threads:
        th.join(max(0.0, deadline - time.monotonic()))
    assert not failed, failed
    assert not any(th.is_alive() for th in threads), "a call waits for a slot that is never given back"
    assert clashes == [] and ring.taken == [False] * 3


def test_a_call_finding_every_slot_taken_waits_until_one_is_given_back(monkeypatch):
    import threading

    from gemmc.runtime.dynamic_list import Ring

    _stub_ring_device(monkeypatch)
    ring = Ring(4, slots=2)
    held = [ring.host_table()[0] for _ in range(2)]
    got: list[int] = []
    waiter = threading.Thread(target=lambda: got.append(ring.host_table()[0]), daemon=True)
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive() and got == []  # both slots are their calls'
    ring.give_back(held[1])
    waiter.join(30)
    assert got == [held[1]] and ring.taken == [True, True]


def test_a_capture_given_back_after_its_graph_is_gone_is_taken_again(monkeypatch):
    """A captured list call sends its table into its reservation's own buffer (Ring.single) and leaves the buffers to
    its graph (DynamicState.keep); once the graph is destroyed (its release posted), the next captured call takes the
    same buffers without waiting for a slot the first call never gives back."""
    import threading
    from types import SimpleNamespace

    from gemmc.runtime import dynamic_list
    from gemmc.runtime.dynamic_list import Ring
    from gemmc.runtime.dynamic_state import CAPTURES, DynamicState

    _stub_ring_device(monkeypatch)
    _graphs(monkeypatch)
    device = dynamic_list.cupy()
    device.cuda.runtime.streamIsCapturing = lambda ptr: 1
    st = DynamicState("moe", None, None, 1, 0, 0, 1, ring=Ring(4),
                      captures=[_captured(1 << 20, Ring.single(4)) for _ in range(CAPTURES)],
                      counters=SimpleNamespace(data=SimpleNamespace(ptr=1 << 16)))
    stream = SimpleNamespace(ptr=7)

    def captured_call() -> None:
        with dynamic_list.Staging(st, stream) as call:
            assert call.index == 0
            call.send(1, stream)
            call.done(stream)

    captured_call()
    assert st.captures_held == 1 and st.capture_graphs.releases[0].graphs == [0xCAFE]
    st.capture_graphs.releases[0].gone = True  # its graph is destroyed: the driver posted the release
    again = threading.Thread(target=captured_call, daemon=True)
    again.start()
    again.join(30)
    assert not again.is_alive(), "the second capture waits for the first one's slot"
    assert st.captures_held == 1 and st.captures[0].ring.taken == [False]


def test_a_slot_whose_last_launch_failed_is_given_back_with_the_error(monkeypatch):
    """host_table waits on the event of the slot's last launch; where that wait raises (a failed kernel), the slot
    goes back to the ring instead of staying taken with no call to give it back."""
    from gemmc.runtime.dynamic_list import Ring

    failing = [0]
    _stub_ring_device(monkeypatch, failing)
    ring = Ring(4, slots=1)
    slot, _ = ring.host_table()
    ring.done(slot, None)  # the slot's event, recorded
    failing[0] = 1
    with pytest.raises(RuntimeError, match="cudaErrorLaunchFailure"):
        ring.host_table()
    assert ring.taken == [False]
    assert ring.host_table()[0] == slot  # the next call takes it (the wait passes)


def test_a_slot_whose_launch_cannot_be_recorded_is_given_back_after_its_stream(monkeypatch):
    """Ring.done: where the slot's event cannot be recorded, the call waits for its stream (the copy out of the pinned
    buffer is done) and gives the slot back with the error, so that later calls take it rather than wait forever."""
    from types import SimpleNamespace

    from gemmc.runtime.dynamic_list import Ring

    records = [1]
    _stub_ring_device(monkeypatch, records=records)
    ring = Ring(4, slots=1)
    waited: list[int] = []
    stream = SimpleNamespace(ptr=7, synchronize=lambda: waited.append(7))
    slot, _ = ring.host_table()
    with pytest.raises(RuntimeError, match="cudaErrorIllegalAddress"):
        ring.done(slot, stream)
    assert waited == [7] and ring.taken == [False]
    assert ring.host_table()[0] == slot


def test_a_launcher_stores_a_calls_values_from_its_first_per_call_argument(monkeypatch):
    """Launcher, both list kernels' argument block: a call's values go from argument `first` on, the tile counters
    to `counter` (None: none), the scalars to the last two; the arguments before `first` keep what they hold."""
    import ctypes
    import sys
    from types import ModuleType, SimpleNamespace

    from gemmc.runtime.launcher import Launcher

    launched = []
    cuda = ModuleType("cupy.cuda")
    cuda.driver = SimpleNamespace(launchKernel=lambda *a: launched.append(a))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupy", ModuleType("cupy"))
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)
    fn = SimpleNamespace(kernel=SimpleNamespace(ptr=77))
    template = (ctypes.c_uint64 * 2)(5, 6)
    planner = Launcher(fn, [template, ctypes.c_uint64(0), ctypes.c_int32(0), ctypes.c_uint64(0)], counter=None,
                       first=1)
    planner(3, 128, 0, 9, (100, 4, 200))
    assert list(template) == [5, 6] and [v.value for v in planner.values[1:]] == [100, 4, 200]
    assert launched[-1] == (77, 3, 1, 1, 128, 1, 1, 0, 9, planner.address, 0)
    main = Launcher(fn, [ctypes.c_uint64(0), ctypes.c_int32(0), ctypes.c_uint64(0), ctypes.c_uint64(0),
                         ctypes.c_float(0.0), ctypes.c_float(0.0)], counter=3)
    main(132, 384, 1000, 9, (100, 4, 200), 4096, (2.0, 0.5))
    assert [v.value for v in main.values] == [100, 4, 200, 4096, 2.0, 0.5]
    assert launched[-1] == (77, 132, 1, 1, 384, 1, 1, 1000, 9, main.address, 0)
    # the hopper list kernel's (it waits for the kernel before it): programmatic stream serialization, unless the
    # benchmarks' ablation turns it off
    from gemmc.runtime import pdl

    monkeypatch.setattr(pdl, "launch_params", lambda *a: launched.append(("dependent", *a)))
    dependent = Launcher(fn, [ctypes.c_uint64(0), ctypes.c_int32(0), ctypes.c_uint64(0), ctypes.c_uint64(0),
                              ctypes.c_float(0.0), ctypes.c_float(0.0)], counter=3, dependent=True)
    dependent(132, 384, 1000, 9, (100, 4, 200), 4096, (2.0, 0.5))
    assert launched[-1] == ("dependent", 77, 132, 384, 1000, 9, dependent.address, dependent.config)
    monkeypatch.setattr(pdl, "ENABLED", False)
    dependent(132, 384, 1000, 9, (100, 4, 200), 4096, (2.0, 0.5))
    assert launched[-1] == (77, 132, 1, 1, 384, 1, 1, 1000, 9, dependent.address, 0)


def test_a_first_call_loads_outside_a_capture_and_is_refused_inside_one(monkeypatch):
    """streams.load_outside_capture, the four first-call guards' one helper: the load where the call's stream is not
    being captured; inside a capture, the error naming the kernel and what the call loads, and nothing loaded."""
    from types import SimpleNamespace

    from gemmc.errors import GemmcError
    from gemmc.runtime import streams

    capturing = [0]
    runtime = SimpleNamespace(streamIsCapturing=lambda ptr: capturing[0])
    monkeypatch.setattr(streams, "cupy", lambda: SimpleNamespace(cuda=SimpleNamespace(runtime=runtime)))
    kernel = SimpleNamespace(ir=SimpleNamespace(name="moe"))
    loads = []
    stream = SimpleNamespace(ptr=5)  # a CuPy stream: launched on as it is
    assert streams.load_outside_capture(kernel, lambda k: loads.append(k) or "state", stream, False) == "state"
    capturing[0] = 1
    with pytest.raises(GemmcError, match=r"kernel 'moe': the first call \(it loads the kernel\) cannot run inside a "
                                         r"CUDA-graph capture; make one such call before capturing$"):
        streams.load_outside_capture(kernel, loads.append, stream, False)
    assert loads == [kernel]


def test_first_calls_from_threads_load_a_kernel_once(monkeypatch):
    """Two threads' first calls of one kernel at once: the loads run one at a time (streams.FIRST_LOADS), so the
    second finds what the first kept instead of building a state of its own."""
    import threading
    import time
    from types import SimpleNamespace

    from gemmc.runtime import streams

    runtime = SimpleNamespace(streamIsCapturing=lambda ptr: 0)
    monkeypatch.setattr(streams, "cupy", lambda: SimpleNamespace(cuda=SimpleNamespace(runtime=runtime)))
    kernel = SimpleNamespace(ir=SimpleNamespace(name="moe"), dynamic=None)
    built = []

    def load(k):  # as dynamic.state: what the kernel keeps, else a new state, kept
        if k.dynamic is None:
            time.sleep(0.05)  # a compile: the other thread's call arrives meanwhile
            built.append(object())
            k.dynamic = built[-1]
        return k.dynamic

    got = []
    threads = [threading.Thread(target=lambda: got.append(
        streams.load_outside_capture(kernel, load, SimpleNamespace(ptr=5), False))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(built) == 1 and got == built * 4


def test_validate_on_a_list_call_asks_for_the_byte_check(monkeypatch, launches):
    """The CUDA-core list form: `validate=True` reaches the launch as `exact` (memory.check_views on every byte of the
    outputs), a plain call does not; group ends stay refused."""
    from types import SimpleNamespace

    from gemmc.errors import GemmcError
    from gemmc.runtime import dynamic, dynamic_list, launch

    seen = []
    monkeypatch.setattr(dynamic_list, "launch_list", lambda *args, **kw: seen.append(kw.get("exact")))
    monkeypatch.setattr(dynamic, "cupy", launch.cupy)  # the stand-in CuPy of the `launches` fixture
    monkeypatch.setattr(dynamic, "launch_stream", lambda stream, torch_args: SimpleNamespace(ptr=0))
    As, Bs, Cs = operands("cai")
    for validate in (False, True):
        dynamic._launch_checked(F32, None, As, Bs, Cs, offsets=None, alpha=1.0, beta=0.0, stream=None,
                                validate=validate)
    assert seen == [False, True]
    with pytest.raises(GemmcError, match="offsets: a `grouped list` kernel takes lists of arrays"):
        dynamic._launch_checked(F32, None, As, Bs, Cs, offsets=object(), alpha=1.0, beta=0.0, stream=None,
                                validate=True)


def test_a_graph_release_is_a_semaphore_the_destructor_posts(monkeypatch):
    """graph_release.GraphRelease without a driver: its semaphore reads unposted until sem_post (the user object's
    destructor, which the driver calls once the graph is gone) posts it, and reset makes it ready for the next graph;
    where the driver has no user objects, attach says so and nothing will post it."""
    import ctypes

    from gemmc.runtime import graph_release

    release = graph_release.GraphRelease()
    assert not release.posted() and not release.attached
    monkeypatch.setattr(graph_release, "_driver", lambda: None)
    assert release.attach(0xCAFE) is False and not release.attached
    libc = ctypes.CDLL(None)
    libc.sem_post(release.sem)  # what the driver's thread runs as the destructor
    assert release.posted()
    release.reset()
    assert not release.posted() and not release.attached


@pytest.fixture
def no_driver(monkeypatch):
    """HIP: no libcuda.so.1, so every lookup of a driver call fails; yields the names looked up, in order."""
    from gemmc.runtime import streams

    looked: list[str] = []

    def missing(name: str) -> None:
        looked.append(name)
        raise OSError("libcuda.so.1: cannot open shared object file")

    monkeypatch.setattr(streams, "driver_call", missing)
    streams._capture_info.cache_clear()
    yield looked
    streams._capture_info.cache_clear()


def test_without_a_cuda_driver_a_capture_names_no_graph(no_driver):
    """HIP (no libcuda): capture_graph says it cannot name the graph, so a captured list call keeps its buffers
    (DynamicState.keep) instead of raising after its launch."""
    from gemmc.runtime import streams

    assert streams.capture_graph(7) is None and streams.capture_graph(8) is None
    assert no_driver == ["cuStreamGetCaptureInfo_v2"]  # looked up once


def test_a_graph_release_outlives_its_python_object():
    """The driver may run a graph's destructor after the GraphRelease is freed (a graph destroyed after its kernel, or
    at interpreter exit once the modules' objects are gone): the semaphore's memory is never freed, so the post lands
    in a semaphore, not in memory Python has handed to other objects."""
    import ctypes
    import gc

    from gemmc.runtime import graph_release

    release = graph_release.GraphRelease()
    address = release.sem.value
    del release
    gc.collect()
    others = [bytes(range(48)) + bytes([i % 256]) for i in range(4096)]  # blocks of the size a freed buffer would go to
    libc = ctypes.CDLL(None)
    assert libc.sem_post(ctypes.c_void_p(address)) == 0
    value = ctypes.c_int(0)
    libc.sem_getvalue(ctypes.c_void_p(address), ctypes.byref(value))
    assert value.value == 1
    assert all(o == bytes(range(48)) + bytes([i % 256]) for i, o in enumerate(others))


def test_a_capture_whose_graph_the_driver_cannot_name_keeps_its_buffers(monkeypatch):
    """Where the driver gives no graph for the capturing stream (or cannot attach a release), a captured call's
    buffers stay reserved for the process's lifetime: no later capture takes them."""
    from types import SimpleNamespace

    from gemmc.runtime.dynamic_state import CAPTURES, DynamicState

    _graphs(monkeypatch, graph=None)
    st = DynamicState("moe", None, None, 1, 0, 0, 1, captures=[_captured(1 << 20) for _ in range(CAPTURES)],
                      counters=SimpleNamespace(data=SimpleNamespace(ptr=1 << 16)))
    first = st.capture()
    st.keep(first, 7)
    assert st.capture_graphs.releases[first] is None and st.capture() == first + 1 and st.captures_held == 2


def test_without_a_cuda_driver_a_grouped_launch_asks_the_runtime_whether_it_is_captured(monkeypatch, no_driver):
    """HIP (no libcuda): capture_of falls back to the runtime's streamIsCapturing, so plain grouped calls keep their
    stream's counters, and a call being captured, whose capture nothing can name, is refused with the reason. The
    driver's call is looked up once, not at every launch (a failed dlopen of libcuda.so.1 costs tens of
    microseconds, more than the grouped call's host time)."""
    from types import SimpleNamespace

    from gemmc.runtime import streams

    capturing = {7: 1}
    runtime = SimpleNamespace(streamIsCapturing=lambda stream: capturing.get(stream, 0))
    monkeypatch.setattr(streams, "cupy", lambda: SimpleNamespace(cuda=SimpleNamespace(runtime=runtime)))
    assert streams.capture_of(8) is None and streams.capture_of(8) is None
    with pytest.raises(gemmc.GemmcError, match="not supported yet: a grouped call captured in a graph") as info:
        streams.capture_of(7)
    assert info.value.code == "E900" and no_driver == ["cuStreamGetCaptureInfo_v2"]


def test_a_capture_whose_buffers_cannot_be_made_gives_its_reservation_back(monkeypatch):
    """A capture that finds no set free makes one (new_capture, allocated while the stream captures); where that
    raises (out of device memory), the reservation goes back and the next capture makes the same set. A graph holds
    its set until it is gone: the set is never given back, nor left to a second graph."""
    from types import SimpleNamespace

    from gemmc.errors import InternalError
    from gemmc.runtime.dynamic_state import DynamicState

    _graphs(monkeypatch)
    failures = [MemoryError("out of device memory")]

    def new_capture() -> object:
        if failures:
            raise failures.pop()
        return _captured(1 << 30)

    st = DynamicState("moe", None, None, 1, 0, 0, 1, captures=[_captured(1 << 30)], new_capture=new_capture,
                      counters=SimpleNamespace(data=SimpleNamespace(ptr=1 << 16)))
    first = st.capture()
    with pytest.raises(MemoryError):
        st.capture()
    assert (first, len(st.captures), st.captures_held) == (0, 1, 1)
    assert st.capture() == 1 and len(st.captures) == 2 and st.captures_held == 2
    st.keep(first, 7)
    with pytest.raises(InternalError, match="entry 0 left to a graph without a reservation of its own"):
        st.keep(first, 7)
    with pytest.raises(InternalError, match="entry 0 given back while a graph holds it"):
        st.uncapture(first)
    st.capture_graphs.releases[first].gone = True  # its graph is destroyed: the driver posted the release
    assert st.captures_held == 1 and st.capture() == first and st.capture_graphs.releases[first].graphs == [0xCAFE]

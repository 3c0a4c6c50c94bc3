"""Batches sized at run time on the GPU: random routings (empty groups, one group with everything, sizes 1, primes,
sizes no tile divides) against float64 with NaN-poisoned outputs, the three forms in f32 and f64, rows outside every
group left untouched, zero sizes, CUDA-graph replay with new group ends, garbage ends (clamped; validate=True names
the first bad group; run once under compute-sanitizer memcheck), argument errors, no compile, plan or tuning
run after warm-up, and bf16/f16 storage widened to f32 (grouped K, the list form with f32 C, grouped M of a k TMA
cannot read)."""

from __future__ import annotations

import numpy as np
import pytest

import gemmc
from gemmc.families.dynamic import scheduler
from tests.gpu.helpers import capture_and_destroy, check_graphs_of_one_stream, check_moe_graph_replay, in_threads, rel

pytestmark = pytest.mark.gpu

# One schedule per kernel source (the fixed sizes are launch arguments: the tests' sizes share these compiles).
M32 = "kernel moe {{ layout B col  grouped M n {n} k {k} groups 128 }}"
M64 = "kernel moe64 {{ dtype f64 layout A col, C col alpha runtime beta runtime grouped M n {n} k {k} groups 64 }}"
K32 = "kernel wgrad {{ layout A col alpha runtime beta runtime grouped K m {m} n {n} groups 64 }}"
K64 = "kernel wgrad64 {{ dtype f64 layout B col, C col grouped K m {m} n {n} groups 64 }}"
L32 = "kernel varlen {{ alpha runtime beta runtime grouped list problems 512 }}"
L64 = "kernel varlen64 {{ dtype f64 layout A col, B col grouped list problems 64 }}"
# bf16/f16 storage computed in f32 on CUDA cores (grouped M: k 41 is no 16-byte line, which TMA cannot read, so sm_90
# runs it here too)
KH = "kernel wgrad_bf16 {{ dtype bf16 layout A col alpha runtime beta runtime grouped K m {m} n {n} groups 64 }}"
# f16 A and B with f32 C: on sm_90a the tensor-core list, whose calls with lines TMA cannot read (most of the sizes
# below) run on CUDA cores (the dynamic family)
LH = "kernel varlen_f16 {{ dtype A f16, B f16, C f32 alpha runtime beta runtime grouped list problems 64 }}"
MH = "target cuda sm_90\nkernel moe_bf16_simt {{ dtype bf16 layout B col grouped M n {n} k {k} groups 64 }}"
# Past SPLIT_GROUPS: one part a group, and static (the scheduler's) with dynamic shared memory past 48 KiB
MANY = "kernel moe_many {{ layout B col  grouped M n {n} k {k} groups 2000 }}"
SCHEDULES = [s.format(m=8, n=8, k=41) for s in (M32, M64, K32, K64, L32, L64, KH, LH, MH, MANY)]  # k 41: MH dynamic
TOL = {"f32": 2e-5, "f64": 1e-12, "bf16": 8e-3}  # bf16: C rounded to bf16 (the inputs are exact in f32)


def _compile(text: str) -> str:
    from gemmc.runtime.compile import device_function

    for k in gemmc.compile_string(text):
        device_function(k.rendered, k.rendered.entry)
    return text


@pytest.fixture(scope="module", autouse=True)
def compiled():
    """Every kernel of this file compiled at once, in processes (NVRTC's disk cache then serves the tests). Each
    process opens a CUDA context: under pytest-xdist, whose dozen workers each run this fixture, two processes a
    worker (ten a worker ran the H100 out of memory:
    bench/results/checks/2026-11-27_h100_compile-pool-oom_gpu-tests.log)."""
    import os
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    processes = 2 if os.environ.get("PYTEST_XDIST_WORKER") else len(SCHEDULES)
    with ProcessPoolExecutor(processes, mp_context=get_context("spawn")) as pool:
        list(pool.map(_compile, SCHEDULES))


def torch():
    import torch as t

    return t


def kernel(schedule: str, **dims: int) -> gemmc.CompiledKernel:
    return next(iter(gemmc.compile_string(schedule.format(**dims))))


def matrix(rows: int, cols: int, layout: str, dtype, fill: float | None = None):
    """A rows x cols CUDA tensor in `layout` ("r" or "c"), random (or filled)."""
    t = torch()
    shape = (rows, cols) if layout == "r" else (cols, rows)
    x = t.randn(*shape, device="cuda", dtype=dtype) if fill is None else t.full(shape, fill, device="cuda",
                                                                                  dtype=dtype)
    return x if layout == "r" else x.t()


def stack(groups: int, rows: int, cols: int, layout: str, dtype, fill: float | None = None):
    t = torch()
    shape = (groups, rows, cols) if layout == "r" else (groups, cols, rows)
    x = t.randn(*shape, device="cuda", dtype=dtype) if fill is None else t.full(shape, fill, device="cuda",
                                                                                  dtype=dtype)
    return x if layout == "r" else x.transpose(1, 2)


ROUTINGS = {
    "primes": [0, 1, 2, 3, 5, 7, 13, 31, 61, 127, 131, 257, 0, 0, 17],
    "one": [0, 0, 0, 700, 0],
    "empty": [0, 0, 0],
    "ones": [1] * 40,
    "big": [1000, 3, 515, 64, 129],
}


def ends_of(sizes, t):
    return t.tensor(np.cumsum(sizes), dtype=t.int32, device="cuda")


@pytest.mark.parametrize("routing", list(ROUTINGS))
@pytest.mark.parametrize("schedule, dtype, layouts, scalars",
                         [(M32, "f32", "rcr", None), (M64, "f64", "crc", (1.5, -0.5))],
                         ids=["f32", "f64"])
def test_grouped_m(schedule, dtype, layouts, scalars, routing):
    t = torch()
    n, k, extra = 97, 41, 5  # primes; 5 rows after the last group stay untouched
    kern = kernel(schedule, n=n, k=k)
    tdt = t.float32 if dtype == "f32" else t.float64
    sizes = ROUTINGS[routing]
    rows = sum(sizes) + extra
    A = matrix(rows, k, layouts[0], tdt)
    B = stack(len(sizes), k, n, layouts[1], tdt)
    C = matrix(rows, n, layouts[2], tdt, fill=float("nan") if scalars is None else None)
    C[rows - extra:] = 7.0
    C0 = C.clone()
    kw = {} if scalars is None else {"alpha": scalars[0], "beta": scalars[1]}
    kern(A, B, C, offsets=ends_of(sizes, t), **kw)
    alpha, beta = scalars or (1.0, 0.0)
    start = 0
    ref = C0.double().clone()
    for g, s in enumerate(sizes):
        ref[start:start + s] = alpha * (A[start:start + s].double() @ B[g].double())
        if beta:
            ref[start:start + s] += beta * C0[start:start + s].double()
        start += s
    used = rows - extra
    if used:
        assert rel(C[:used], ref[:used]) < TOL[dtype]
    assert t.equal(C[used:], C0[used:]), "rows outside every group were written"


def check_f32_grouped_m(kern: gemmc.CompiledKernel, sizes: list[int], n: int, k: int) -> None:
    """One f32 grouped M call (A row-major, B column-major) on a NaN-poisoned C against float64."""
    t = torch()
    rows = sum(sizes)
    A, B = matrix(rows, k, "r", t.float32), stack(len(sizes), k, n, "c", t.float32)
    C = matrix(rows, n, "r", t.float32, fill=float("nan"))
    kern(A, B, C, offsets=ends_of(sizes, t))
    ends = np.cumsum(sizes)
    ref = t.cat([A[e - s:e].double() @ B[g].double() for g, (s, e) in enumerate(zip(sizes, ends, strict=True))])
    assert rel(C, ref) < TOL["f32"]


def test_an_explicit_tile_runs_one_size_class():
    """An explicit 32 x 64 tile: one size class on 128 threads, no cap to choose and no TLP sums."""
    n, k = 97, 41
    kern = kernel("kernel one {{ tile 32x64x8  layout B col  grouped M n {n} k {k} groups 8 }}", n=n, k=k)
    assert kern.ir.plan.threads == 128 and len(kern.ir.plan.levels) == 1
    check_f32_grouped_m(kern, ROUTINGS["big"], n, k)


@pytest.mark.parametrize("tail_split", [True, False])
def test_last_round_in_column_halves(tail_split):
    """DynamicPlan.tail_split: 8 groups of 511 rows by n 548 (edge tiles in the last column) make 160 tiles of 128 x
    128 on H100's 132 blocks, so the last 28 run as 56 column halves (the same sizes with the plan toggled: whole
    tiles); both against float64 on a NaN-poisoned C, the rows after the groups untouched."""
    import dataclasses

    t = torch()
    n, k, sizes, extra = 548, 64, [511] * 8, 3
    base = kernel(M32, n=n, k=k)
    kern = base if base.ir.plan.tail_split == tail_split else \
        base.with_plan(dataclasses.replace(base.ir.plan, tail_split=tail_split), "toggled")
    rows = sum(sizes) + extra
    A, B = matrix(rows, k, "r", t.float32), stack(len(sizes), k, n, "c", t.float32)
    C = matrix(rows, n, "r", t.float32, fill=float("nan"))
    C[rows - extra:] = 7.0
    kern(A, B, C, offsets=ends_of(sizes, t))
    ref = t.cat([A[511 * g:511 * (g + 1)].double() @ B[g].double() for g in range(len(sizes))])
    assert rel(C[:rows - extra], ref) < TOL["f32"]
    assert bool((C[rows - extra:] == 7.0).all()), "rows outside every group were written"


def test_many_groups_past_the_default_shared_memory():
    """2000 groups: the scheduler's 24 KB of static shared memory and the tiles' 33 KB pass the 48 KiB a block gets
    without opting in (the launch opts in; without it, CUDA_ERROR_INVALID_VALUE); one part a group."""
    n, k = 97, 41
    kern = kernel(MANY, n=n, k=k)
    assert kern.executable.ir.plan.smem_bytes > 48 * 1024 and kern.executable.ir.plan.parts == 1
    check_f32_grouped_m(kern, np.random.default_rng(5).choice([0, 1, 3, 17, 64, 65, 129], size=1999).tolist(), n, k)


@pytest.mark.parametrize("schedule, dtype, layouts, scalars",
                         [(K32, "f32", "crr", (1.5, -0.5)), (K64, "f64", "rcc", None)],
                         ids=["f32", "f64"])
@pytest.mark.parametrize("routing", ["primes", "one", "ones"])
def test_grouped_k(schedule, dtype, layouts, scalars, routing):
    t = torch()
    m, n = 53, 67
    kern = kernel(schedule, m=m, n=n)
    tdt = t.float32 if dtype == "f32" else t.float64
    sizes = ROUTINGS[routing]
    rows = sum(sizes)
    A = matrix(m, rows, layouts[0], tdt)
    B = matrix(rows, n, layouts[1], tdt)
    C = stack(len(sizes), m, n, layouts[2], tdt, fill=float("nan") if scalars is None else None)
    C0 = C.clone()
    kw = {} if scalars is None else {"alpha": scalars[0], "beta": scalars[1]}
    kern(A, B, C, offsets=ends_of(sizes, t), **kw)
    alpha, beta = scalars or (1.0, 0.0)
    start = 0
    for g, s in enumerate(sizes):
        ref = alpha * (A[:, start:start + s].double() @ B[start:start + s].double()) + beta * (
            C0[g].double() if beta else 0)
        if s == 0 and not beta:
            assert t.equal(C[g], t.zeros_like(C[g])), "an empty group must give C = beta C = 0"
        else:
            assert rel(C[g], ref) < TOL[dtype], f"group {g} ({s} rows)"
        start += s


LIST_SIZES = [(0, 5, 3), (4, 0, 3), (5, 6, 0), (1, 1, 1), (97, 31, 13), (2, 300, 7), (129, 65, 17), (16, 16, 16),
              (33, 1, 5), (1, 200, 64), (257, 131, 3)]


@pytest.mark.parametrize("schedule, dtype, layouts, scalars",
                         [(L32, "f32", "rrr", (1.5, -0.5)), (L64, "f64", "ccr", None)],
                         ids=["f32", "f64"])
@pytest.mark.parametrize("lib", ["torch", "cupy"])
def test_grouped_list(schedule, dtype, layouts, scalars, lib):
    t = torch()
    kern = kernel(schedule)
    tdt = t.float32 if dtype == "f32" else t.float64
    rng = np.random.default_rng(3)
    for trial in range(3):  # new sizes every call
        sizes = LIST_SIZES if trial == 0 else [tuple(int(x) for x in rng.integers(0, 150, 3)) for _ in range(30)]
        As = [matrix(m, k, layouts[0], tdt) for m, n, k in sizes]
        Bs = [matrix(k, n, layouts[1], tdt) for m, n, k in sizes]
        Cs = [matrix(m, n, layouts[2], tdt, fill=float("nan") if scalars is None else None) for m, n, k in sizes]
        C0 = [c.clone() for c in Cs]
        kw = {} if scalars is None else {"alpha": scalars[0], "beta": scalars[1]}
        if lib == "cupy":
            import cupy as cp

            kern([cp.from_dlpack(a) for a in As], [cp.from_dlpack(b) for b in Bs], [cp.from_dlpack(c) for c in Cs],
                 **kw)
        else:
            kern(As, Bs, Cs, **kw)
        t.cuda.synchronize()
        alpha, beta = scalars or (1.0, 0.0)
        for i, ((m, n, k), a, b, c, c0) in enumerate(zip(sizes, As, Bs, Cs, C0, strict=True)):
            if m == 0 or n == 0:
                continue
            ref = alpha * (a.double() @ b.double()) + (beta * c0.double() if beta else 0)
            if k == 0 and not beta:
                assert t.equal(c, t.zeros_like(c)), f"problem {i}: K = 0 must give C = beta C"
            else:
                assert rel(c, ref) < TOL[dtype], f"problem {i} {m}x{n}x{k}"


THREADS_BF16 = "target cuda sm_90\nkernel list_threads_bf16 {{ dtype bf16 grouped list problems 64 }}"


def list_kernel(schedule: str) -> tuple:
    """The list kernel of L32 or THREADS_BF16 and what its calls take: (torch, the kernel, the arrays' dtype, its
    scalars, the tolerance against float64); an sm_90 schedule skips without an sm_90 GPU."""
    t = torch()
    if "sm_90" in schedule and t.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs an sm_90 GPU")
    f32 = schedule is L32
    return (t, kernel(schedule), t.float32 if f32 else t.bfloat16, {"alpha": 1.0, "beta": 0.0} if f32 else {},
            TOL["f32" if f32 else "bf16"])


def random_list(rng, dtype, problems: int | None = None, top: int = 96) -> tuple[list, list, list]:
    """As, Bs and NaN-poisoned Cs of `problems` random problems (1-8 where None), each size up to `top`: any size in
    f32; multiples of 8 in bf16, whose lines TMA reads in place (the tensor-core list, not its CUDA-core fallback)."""
    step = 1 if dtype == torch().float32 else 8
    count = int(rng.integers(1, 9)) if problems is None else problems
    sizes = [tuple(int(x) * step for x in rng.integers(1, top // step + 1, 3)) for _ in range(count)]
    return ([matrix(m, k, "r", dtype) for m, n, k in sizes], [matrix(k, n, "r", dtype) for m, n, k in sizes],
            [matrix(m, n, "r", dtype, fill=float("nan")) for m, n, k in sizes])


@pytest.mark.parametrize("shared", [False, True], ids=["own-streams", "one-stream"])
@pytest.mark.parametrize("schedule", [L32, THREADS_BF16], ids=["f32", "bf16"])
def test_list_calls_from_threads_past_the_rings_slots(schedule, shared):
    """Twelve threads, each on a stream of its own, queue four list calls each with no wait between them: six times
    as many calls in flight as the ring's staging slots, each table its call's own (a call waits for a slot its
    previous user has released), on more streams than the ring has slots, and every C right, NaN-poisoned. `shared`:
    every thread on one stream, where two calls' planning and main launches interleave (the tensor-core list's maps
    are each call's ring slot's, not the stream's)."""
    t, kern, tdt, scalars, tol = list_kernel(schedule)
    threads = 12
    streams = [t.cuda.Stream() for _ in range(1 if shared else threads)] * (threads if shared else 1)
    with t.cuda.stream(streams[0]):  # the first call's load
        kern([matrix(8, 8, "r", tdt)], [matrix(8, 8, "r", tdt)], [matrix(8, 8, "r", tdt)], **scalars)
    t.cuda.synchronize()
    calls: list[list] = [[] for _ in range(threads)]

    def queue(me: int) -> None:
        rng = np.random.default_rng(me)
        with t.cuda.stream(streams[me]):
            for _ in range(4):
                lists = random_list(rng, tdt)
                kern(*lists, **scalars)
                calls[me].append(lists)
        streams[me].synchronize()

    in_threads(queue, threads, "a list call waits for a ring slot that is never released")
    for me, queued in enumerate(calls):
        for j, (As, Bs, Cs) in enumerate(queued):
            for a, b, c in zip(As, Bs, Cs, strict=True):
                assert rel(c, a.double() @ b.double()) < tol, (me, j)


def test_first_calls_from_threads_load_one_state():
    """Four threads make a new kernel's first list call at once, each on a stream of its own: one state and one set
    of tables are loaded (streams.FIRST_LOADS), and every call is right."""
    t = torch()
    kern = kernel(L32)
    results: list = [None] * 4

    def first(me: int) -> None:
        stream = t.cuda.Stream()
        with t.cuda.stream(stream):
            sizes = [(8 * (me + 1), 16, 24), (5, 7, 9)]
            As = [matrix(m, k, "r", t.float32) for m, n, k in sizes]
            Bs = [matrix(k, n, "r", t.float32) for m, n, k in sizes]
            Cs = [matrix(m, n, "r", t.float32, fill=float("nan")) for m, n, k in sizes]
            kern(As, Bs, Cs, alpha=1.0, beta=0.0)
        stream.synchronize()
        results[me] = (As, Bs, Cs, kern.executable.dynamic)

    in_threads(first, 4, "a first call never returned")
    assert len({id(r[3]) for r in results}) == 1  # one state, the kernel's
    for As, Bs, Cs, _ in results:
        for a, b, c in zip(As, Bs, Cs, strict=True):
            assert rel(c, a.double() @ b.double()) < TOL["f32"]


@pytest.mark.parametrize("schedule", [L32, THREADS_BF16], ids=["f32", "bf16"])
def test_destroyed_graphs_give_their_list_buffers_back(schedule):
    """More captured list calls than MAX_CAPTURES, in graphs captured, replayed and destroyed in turn: each graph
    gives its buffers back once it is gone (a CUDA user object whose destructor posts a semaphore), so no capture is
    refused, the buffers made stay far below the bound, and every replay computes its own list, NaN-poisoned; four
    graphs kept alive throughout still replay right at the end."""

    from gemmc.runtime.dynamic_state import MAX_CAPTURES

    t, kern, tdt, scalars, tol = list_kernel(schedule)
    rng = np.random.default_rng(9)
    kern(*random_list(rng, tdt), **scalars)  # the first call (loads the kernel) outside any capture
    t.cuda.synchronize()
    st = kern.executable.dynamic

    def captured() -> tuple:
        As, Bs, Cs = random_list(rng, tdt, problems=3, top=64)
        g = t.cuda.CUDAGraph()
        with t.cuda.graph(g):
            kern(As, Bs, Cs, **scalars)
        return g, As, Bs, Cs

    def replayed_right(g, As, Bs, Cs) -> bool:
        for c in Cs:
            c.fill_(float("nan"))
        g.replay()
        t.cuda.synchronize()
        return all(rel(c, a.double() @ b.double()) < tol for a, b, c in zip(As, Bs, Cs, strict=True))

    kept = [captured() for _ in range(4)]
    # each kept graph holds its set through a user object the driver accepted (else the set stays reserved for good)
    graphs = st.capture_graphs
    assert sum(graphs.reserved[i] and (r := graphs.releases[i]) is not None and r.attached
               for i in range(len(graphs))) == 4
    capture_and_destroy(captured, replayed_right, MAX_CAPTURES + 44)
    assert len(st.captures) < MAX_CAPTURES // 2, f"{len(st.captures)} sets of buffers made"
    assert all(replayed_right(*k) for k in kept)


@pytest.mark.parametrize("schedule", [L32, THREADS_BF16], ids=["f32", "bf16"])
def test_grouped_list_captured_in_graphs_reads_each_graphs_own_table(schedule):
    """Twelve calls of one list kernel captured in twelve CUDA graphs (past the CAPTURES sets of buffers made with the
    kernel's state: the later ones made while their calls are captured), then plain calls on other lists in between:
    each replay computes its own list (its problem table, counters and maps are the graph's, not a staging buffer a
    later call reuses), NaN-poisoned, the graphs replayed in reverse order of capture."""
    from gemmc.runtime.dynamic_state import CAPTURES

    t, kern, tdt, scalars, tol = list_kernel(schedule)
    rng = np.random.default_rng(5)

    def draw():
        return random_list(rng, tdt, problems=12, top=136)

    lists = [draw() for _ in range(CAPTURES + 4)]
    kern(*lists[0], **scalars)  # the first call (loads the kernel) outside any capture
    t.cuda.synchronize()
    graphs = []
    for As, Bs, Cs in lists:
        g = t.cuda.CUDAGraph()
        with t.cuda.graph(g):
            kern(As, Bs, Cs, **scalars)
        graphs.append(g)
    assert kern.executable.dynamic.captures_held == len(lists)
    for _ in range(10):  # plain calls cycle the staging ring past its eight buffers
        kern(*draw(), **scalars)
    for g, (As, Bs, Cs) in reversed(list(zip(graphs, lists, strict=True))):
        for a in As:
            a.copy_(t.randn_like(a))
        for c in Cs:
            c.fill_(float("nan"))
        g.replay()
        t.cuda.synchronize()
        for a, b, c in zip(As, Bs, Cs, strict=True):
            assert rel(c, a.double() @ b.double()) < tol


@pytest.mark.parametrize("schedule", [L32, THREADS_BF16], ids=["f32", "bf16"])
def test_plain_list_calls_beside_another_threads_capture(schedule):
    """One thread captures CAPTURES + 1 list calls in a torch CUDA graph (the global capture mode: another thread's
    waits would end it), the last one's buffers made while it is captured, and between its first call and its
    others a second thread queues twelve plain calls of the same kernel on a stream of its own (past the ring's
    slots: each waits for a slot's last launch, in the relaxed mode; the thread itself never waits, which the global
    mode would refuse). Neither fails; the graph's replay and the plain calls are right against float64,
    NaN-poisoned."""
    import threading

    from gemmc.runtime.dynamic_state import CAPTURES

    t, kern, tdt, scalars, tol = list_kernel(schedule)
    rng = np.random.default_rng(11)
    # allocated before capturing
    captured, plain = [random_list(rng, tdt) for _ in range(CAPTURES + 1)], [random_list(rng, tdt) for _ in range(12)]
    kern(*random_list(rng, tdt), **scalars)  # the first call (loads the kernel) outside any capture
    t.cuda.synchronize()
    graph = t.cuda.CUDAGraph()
    started, finished = threading.Event(), threading.Event()

    def run(me: int) -> None:
        if me == 0:
            try:
                with t.cuda.graph(graph):
                    kern(*captured[0], **scalars)
                    started.set()
                    for lists in captured[1:]:
                        kern(*lists, **scalars)
                    assert finished.wait(60), "the plain calls did not end"
            finally:
                started.set()
            return
        assert started.wait(60)
        with t.cuda.stream(stream):  # queued, not waited for: the test's own wait would end the capture
            for lists in plain:
                kern(*lists, **scalars)
        finished.set()

    stream = t.cuda.Stream()  # made before the capture starts
    in_threads(run, 2, "a capture or a plain call never returned")
    t.cuda.synchronize()
    graph.replay()
    t.cuda.synchronize()
    for As, Bs, Cs in captured + plain:
        for a, b, c in zip(As, Bs, Cs, strict=True):
            assert rel(c, a.double() @ b.double()) < tol


@pytest.mark.parametrize("routing", ["primes", "one", "empty"])
def test_half_storage_grouped_m_and_k(routing):
    """bf16 storage widened to f32: grouped M (NaN-poisoned C, rows past the groups untouched) and grouped K with
    runtime alpha and beta, against float64 of the bf16 inputs."""
    t = torch()
    sizes = ROUTINGS[routing]
    rows, n, k, m = sum(sizes), 97, 41, 53
    moe = kernel(MH, n=n, k=k)
    assert moe.ir.family == "dynamic"
    A, B = matrix(rows + 5, k, "r", t.bfloat16), stack(len(sizes), k, n, "c", t.bfloat16)
    C = t.full((rows + 5, n), float("nan"), device="cuda", dtype=t.bfloat16)
    C[rows:] = 7.0
    moe(A, B, C, offsets=ends_of(sizes, t))
    start = 0
    for g, s in enumerate(sizes):
        if s:
            assert rel(C[start:start + s], A[start:start + s].double() @ B[g].double()) < TOL["bf16"], f"group {g}"
        start += s
    assert bool((C[rows:] == 7.0).all()), "rows outside every group were written"
    wgrad = kernel(KH, m=m, n=n)
    A, B = matrix(m, rows, "c", t.bfloat16), matrix(rows, n, "r", t.bfloat16)
    C = stack(len(sizes), m, n, "r", t.bfloat16)
    C0 = C.clone()
    wgrad(A, B, C, offsets=ends_of(sizes, t), alpha=1.5, beta=-0.5)
    start = 0
    for g, s in enumerate(sizes):
        ref = 1.5 * (A[:, start:start + s].double() @ B[start:start + s].double()) - 0.5 * C0[g].double()
        assert rel(C[g], ref) < TOL["bf16"], f"group {g} ({s} rows)"
        start += s


@pytest.mark.parametrize("lib", ["torch", "cupy"])
def test_half_storage_list_with_f32_c(lib):
    """The list form of f16 A and B with f32 C, new sizes every call, torch tensors and CuPy arrays."""
    t = torch()
    kern = kernel(LH)
    rng = np.random.default_rng(5)
    for trial in range(2):
        sizes = LIST_SIZES if trial == 0 else [tuple(int(x) for x in rng.integers(0, 150, 3)) for _ in range(30)]
        As = [matrix(m, k, "r", t.float16) for m, n, k in sizes]
        Bs = [matrix(k, n, "r", t.float16) for m, n, k in sizes]
        Cs = [matrix(m, n, "r", t.float32) for m, n, k in sizes]
        C0 = [c.clone() for c in Cs]
        if lib == "cupy":
            import cupy as cp

            kern(*([cp.from_dlpack(x) for x in xs] for xs in (As, Bs, Cs)), alpha=1.5, beta=-0.5)
        else:
            kern(As, Bs, Cs, alpha=1.5, beta=-0.5)
        t.cuda.synchronize()
        for i, ((m, n, _), a, b, c, c0) in enumerate(zip(sizes, As, Bs, Cs, C0, strict=True)):
            if m and n:
                assert rel(c, 1.5 * (a.double() @ b.double()) - 0.5 * c0.double()) < TOL["f32"], f"problem {i}"
    with pytest.raises(gemmc.GemmcError, match=r"Cs\[0\]: expected dtype float32"):
        kern([As[0]], [Bs[0]], [Cs[0].half()], alpha=1.0, beta=0.0)


def test_graph_replay_with_new_routing():
    """A MoE step (routing, gemmc, combine) captured once in a CUDA graph, replayed with new routings."""
    torch()
    check_moe_graph_replay(kernel(M32, n=97, k=41), experts=16, tokens=999, n=97, k=41, dtype="float32", b_col=True,
                           tolerance=TOL["f32"])


def test_garbage_ends_are_clamped_and_validate_names_the_first_bad_group():
    t = torch()
    n, k, rows, groups = 33, 17, 300, 20
    kern = kernel(M32, n=n, k=k)
    rng = np.random.default_rng(11)
    A = t.randn(rows, k, device="cuda")
    B = t.randn(groups, n, k, device="cuda")
    for trial in range(4):
        raw = rng.integers(-200, rows + 200, groups).astype(np.int32)
        if trial == 0:
            raw[:] = np.iinfo(np.int32).max  # every end past the rows
        C = t.full((rows, n), 7.0, device="cuda")
        kern(A, B, C, offsets=t.tensor(raw, device="cuda"))
        t.cuda.synchronize()
        starts = scheduler.clamped_starts(raw, rows)
        ref = t.full((rows, n), 7.0, device="cuda", dtype=t.float64)
        for g in range(groups):
            s, e = int(starts[g]), int(starts[g + 1])
            ref[s:e] = A[s:e].double() @ B[g].double().t()
        assert rel(C, ref) < TOL["f32"], "clamped groups computed wrongly"
        bad = int(next(i for i in range(groups) if raw[i] < 0 or raw[i] > rows or raw[i] < (raw[i - 1] if i else 0)))
        with pytest.raises(gemmc.GemmcError, match=rf"offsets\[{bad}\] = "):
            kern(A, B, C, offsets=t.tensor(raw, device="cuda"), validate=True)
    good = t.tensor([0, 10, 10, 300] + [300] * (groups - 4), dtype=t.int32, device="cuda")
    kern(A, B, t.empty(rows, n, device="cuda"), offsets=good, validate=True)


def test_garbage_ends_of_the_reduction_form():
    t = torch()
    m, n, rows, groups = 19, 23, 150, 9
    kern = kernel(K32, m=m, n=n)
    raw = np.array([40, 10, -5, 149, 500, 120, 150, 2**31 - 1, 0], dtype=np.int32)
    A, B = matrix(m, rows, "c", t.float32), t.randn(rows, n, device="cuda")
    C = t.randn(groups, m, n, device="cuda")
    C0 = C.clone()
    kern(A, B, C, offsets=t.tensor(raw, device="cuda"), alpha=1.0, beta=0.5)
    starts = scheduler.clamped_starts(raw, rows)
    for g in range(groups):
        s, e = int(starts[g]), int(starts[g + 1])
        ref = A[:, s:e].double() @ B[s:e].double() + 0.5 * C0[g].double()
        assert rel(C[g], ref) < TOL["f32"], f"group {g}"


def test_arguments_are_checked_before_the_launch():
    t = torch()
    kern = kernel(M32, n=16, k=8)
    A, B, C = t.randn(10, 8, device="cuda"), t.randn(2, 16, 8, device="cuda"), t.empty(10, 16, device="cuda")
    ends = t.tensor([4, 10], dtype=t.int32, device="cuda")
    cases = [
        ((A, B, C), {"offsets": ends.long()}, "offsets: expected a 1-D int32"),
        ((A, B, C), {}, "offsets: a grouped kernel needs"),
        ((A, B[:1], C), {"offsets": ends}, r"B: expected shape \(2 x 8 x 16"),
        ((A, B, C[:9]), {"offsets": ends}, r"C: expected shape \(10 x 16"),
        ((A.double(), B, C), {"offsets": ends}, "A: expected dtype float32"),
        ((A.cpu(), B, C), {"offsets": ends}, "A: the tensor is on the CPU"),
        ((A, B, t.empty(16, 10, device="cuda").t()), {"offsets": ends}, "C: expected a densely packed row-major"),
        ((A, B.transpose(1, 2).contiguous(), C), {"offsets": ends}, "B: expected 2 matrices 8 x 16"),
    ]
    for args, kw, message in cases:
        with pytest.raises(gemmc.GemmcError, match=message):
            kern(*args, **kw)
    lst = kernel(L32)
    with pytest.raises(gemmc.GemmcError, match=r"Bs\[1\] has 3 rows but As\[1\] has 4 columns"):
        lst([t.randn(2, 2, device="cuda"), t.randn(2, 4, device="cuda")],
            [t.randn(2, 2, device="cuda"), t.randn(3, 2, device="cuda")],
            [t.empty(2, 2, device="cuda"), t.empty(2, 2, device="cuda")], alpha=1.0, beta=0.0)


def test_no_compile_plan_or_tuning_after_warm_up():
    t = torch()
    moe, lst = kernel(M32, n=64, k=32), kernel(L32)
    A, B = t.randn(4096, 32, device="cuda"), t.randn(32, 64, 32, device="cuda")
    C = t.empty(4096, 64, device="cuda")
    moe(A, B, C, offsets=ends_of([128] * 32, t))
    lst([t.randn(5, 32, device="cuda")], [t.randn(32, 7, device="cuda")], [t.empty(5, 7, device="cuda")], alpha=1.0,
        beta=0.0)
    before = gemmc.stats()
    rng = np.random.default_rng(5)
    for _ in range(20):
        moe(A, B, C, offsets=ends_of(rng.multinomial(4096, np.full(32, 1 / 32)), t))
        sizes = [tuple(int(x) for x in rng.integers(1, 64, 3)) for _ in range(int(rng.integers(1, 50)))]
        lst([t.randn(m, k, device="cuda") for m, n, k in sizes], [t.randn(k, n, device="cuda") for m, n, k in sizes],
            [t.empty(m, n, device="cuda") for m, n, k in sizes], alpha=1.0, beta=0.0)
    t.cuda.synchronize()
    assert gemmc.stats() == before


def test_calls_in_stream_order_share_the_tile_counters_and_leave_them_zeroed():
    """Many launches back to back without a synchronisation (each claims tiles from the same counters, which the last
    block of each launch resets), then the quick path: a call with the arguments of a checked call launches without
    the checks; other arguments take them again."""
    from gemmc.runtime.dynamic_state import COUNTER_INTS

    t = torch()
    n, k, rows, groups = 130, 24, 2000, 12
    kern = kernel(M32, n=n, k=k)
    A, B = t.randn(rows, k, device="cuda"), t.randn(groups, n, k, device="cuda")
    rng = np.random.default_rng(3)
    pool = [rng.multinomial(rows, rng.dirichlet(np.ones(groups))) for _ in range(6)]
    ends = [ends_of(p, t) for p in pool]
    outs = [t.full((rows, n), float("nan"), device="cuda") for _ in pool]
    for _ in range(3):  # the second and third rounds take the quick path (the same tensors)
        for C, e in zip(outs, ends, strict=True):
            C.fill_(float("nan"))
            kern(A, B, C, offsets=e)
    t.cuda.synchronize()
    st = kern.executable.dynamic
    assert st is not None and len(st.seen) == len(pool), "each argument set is checked once"
    assert not st.counters.get().reshape(-1, COUNTER_INTS)[:, :2].any(), "the counters are left zeroed"
    for C, p in zip(outs, pool, strict=True):
        starts = np.concatenate([[0], np.cumsum(p)])
        bounds = zip(starts[:-1], starts[1:], strict=True)
        ref = t.cat([A[s:e].double() @ B[g].double().t() for g, (s, e) in enumerate(bounds)])
        assert rel(C, ref) < TOL["f32"]
    with pytest.raises(gemmc.GemmcError, match=r"C: expected shape"):
        kern(A, B, outs[0][:-1], offsets=ends[0])  # new metadata: checked again, and refused
    C = t.empty(rows, n, device="cuda", requires_grad=True)
    with pytest.raises(gemmc.GemmcError, match="C: the tensor requires grad"):
        kern(A, B, C, offsets=ends[0])


def test_a_second_stream_takes_its_own_counters():
    t = torch()
    n, k, rows, groups = 64, 16, 900, 5
    kern = kernel(M32, n=n, k=k)
    A, B = t.randn(rows, k, device="cuda"), t.randn(groups, n, k, device="cuda")
    sizes = [100, 0, 300, 200, 300]
    e = ends_of(sizes, t)
    C1, C2 = t.full((rows, n), float("nan"), device="cuda"), t.full((rows, n), float("nan"), device="cuda")
    side = t.cuda.Stream()
    side.wait_stream(t.cuda.current_stream())
    kern(A, B, C1, offsets=e)
    with t.cuda.stream(side):
        kern(A, B, C2, offsets=e)
    t.cuda.synchronize()
    st = kern.executable.dynamic
    assert st is not None and len(st.stream_counters) >= 2
    starts = np.concatenate([[0], np.cumsum(sizes)])
    bounds = zip(starts[:-1], starts[1:], strict=True)
    ref = t.cat([A[s:e_].double() @ B[g].double().t() for g, (s, e_) in enumerate(bounds)])
    assert rel(C1, ref) < TOL["f32"] and rel(C2, ref) < TOL["f32"]


WGRAD = (40, 72, 700, 9)  # m, n, rows, groups of the grouped K graph tests (m, n multiples of 8: lines TMA reads)


def wgrad_routing(t, rng, dtype=None) -> tuple:
    """A routing of WGRAD's rows over its groups: the sizes, their device ends and a C (groups x m x n) for it."""
    m, n, rows, groups = WGRAD
    sizes = rng.multinomial(rows, rng.dirichlet(np.ones(groups)))
    return sizes, ends_of(sizes, t), t.empty(groups, m, n, device="cuda", dtype=dtype)


def wgrad_operands(t, dtype=None) -> tuple:
    """X (rows x m: A = X^T, `layout A col`) and dY (rows x n) of the grouped K graph tests."""
    m, n, rows, _ = WGRAD
    return t.randn(rows, m, device="cuda", dtype=dtype), t.randn(rows, n, device="cuda", dtype=dtype)


def wgrad_reference(t, X, dY, sizes):
    """dW_g = X_g^T dY_g in float64, the groups `sizes` rows each."""
    starts = np.concatenate([[0], np.cumsum(sizes)])
    return t.stack([X[s:e].double().t() @ dY[s:e].double() for s, e in zip(starts[:-1], starts[1:], strict=True)])


# grouped K in bf16 on the hopper_grouped TMA loop (sm_90), whose blocks claim tiles from counters as the dynamic
# family's do
KH_TMA = "target cuda sm_90\nkernel wgrad_bf16_tma {{ dtype bf16 layout A col grouped K m {m} n {n} groups 64 }}"


@pytest.mark.parametrize("schedule, dtype", [(K32, "f32"), (KH_TMA, "bf16")], ids=["f32", "bf16-tma"])
def test_destroyed_graphs_give_their_grouped_counters_back(schedule, dtype):
    """More captures of a grouped K call than CAPTURED_COUNTERS, in graphs captured, replayed and destroyed in turn
    (the dynamic family in f32, the hopper_grouped TMA kernel in bf16): each graph gives its tile counters back once
    it is gone, so no capture shares its stream's (no warning), the pairs taken stay far below the bound, and
    replays compute their own routing, NaN-poisoned; graphs kept alive throughout keep theirs and replay right."""
    import warnings

    from gemmc.runtime.dynamic_state import CAPTURED_COUNTERS

    t = torch()
    if dtype == "bf16" and t.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs an sm_90 GPU")
    m, n, rows, groups = WGRAD
    kern = kernel(schedule, m=m, n=n)
    assert kern.ir.family == ("dynamic" if dtype == "f32" else "hopper_grouped")
    tdt = t.float32 if dtype == "f32" else t.bfloat16
    rng = np.random.default_rng(13)
    X, dY = wgrad_operands(t, tdt)
    scalars = {"alpha": 1.0, "beta": 0.0} if dtype == "f32" else {}  # K32: alpha and beta runtime

    def captured() -> tuple:
        sizes, ends, C = wgrad_routing(t, rng, tdt)  # the ends kept with the graph, which reads them at every replay
        g = t.cuda.CUDAGraph()
        with t.cuda.graph(g):
            kern(X.t(), dY, C, offsets=ends, **scalars)
        return g, sizes, ends, C

    def replayed_right(g, sizes, ends, C) -> bool:
        C.fill_(float("nan"))
        g.replay()
        t.cuda.synchronize()
        return rel(C, wgrad_reference(t, X, dY, sizes)) < TOL[dtype]

    kern(X.t(), dY, t.empty(groups, m, n, device="cuda", dtype=tdt), offsets=ends_of([rows] + [0] * (groups - 1), t),
         **scalars)
    t.cuda.synchronize()  # the first call (loads the kernel) outside any capture
    st = kern.executable.dynamic
    kept = [captured() for _ in range(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a capture sharing its stream's counters warns
        capture_and_destroy(captured, replayed_right, CAPTURED_COUNTERS + 44)
    assert 3 < len(st.graph_counters) < CAPTURED_COUNTERS // 2, f"{len(st.graph_counters)} pairs of counters taken"
    assert st.graph_counters.held == 3 and not st.warned
    assert all(replayed_right(*g) for g in kept)


def test_grouped_counters_stay_taken_while_a_clone_or_a_parent_of_the_graph_exists():
    """A grouped K call captured into a graph (the driver's capture, relaxed mode, on a stream of its own): its pair
    of tile counters stays taken while a copy of the graph exists, as the CUDA Programming Guide's user objects
    promise (a clone and an instantiation retain the source graph's references; a child-graph node holds a clone):
    after the graph is destroyed while a clone exists, after the clone is destroyed while a parent embeds it as a
    child node, and after the parent is destroyed while its executable graph exists, whose replay computes right;
    the pair comes back once that executable graph is destroyed too."""
    import ctypes
    import time

    from gemmc.runtime.device import driver_call

    def call(name: str, *args) -> None:
        status = driver_call(name)(*args)
        assert status == 0, f"{name}: CUresult {status}"

    t = torch()
    kern = kernel(K32, m=WGRAD[0], n=WGRAD[1])
    X, dY = wgrad_operands(t)
    sizes, ends, C = wgrad_routing(t, np.random.default_rng(29))
    side = t.cuda.Stream()
    handle = ctypes.c_void_p(side.cuda_stream)
    t.cuda.synchronize()
    kern(X.t(), dY, C, offsets=ends, alpha=1.0, beta=0.0, stream=side.cuda_stream)  # loads, outside the capture
    side.synchronize()
    st = kern.executable.dynamic
    before = st.graph_counters.held

    def held_after(seconds: float, want: int) -> bool:  # the driver runs destructors on a thread of its own
        deadline = time.monotonic() + seconds
        while st.graph_counters.held != want and time.monotonic() < deadline:
            time.sleep(0.01)
        return st.graph_counters.held == want

    graph, clone, parent, node, exe = (ctypes.c_void_p() for _ in range(5))
    call("cuStreamBeginCapture_v2", handle, 2)  # CU_STREAM_CAPTURE_MODE_RELAXED
    kern(X.t(), dY, C, offsets=ends, alpha=1.0, beta=0.0, stream=side.cuda_stream)
    call("cuStreamEndCapture", handle, ctypes.byref(graph))
    assert st.graph_counters.held == before + 1
    call("cuGraphClone", ctypes.byref(clone), graph)
    call("cuGraphDestroy", graph)
    assert not held_after(0.3, before), "the clone's counters were given back"
    call("cuGraphCreate", ctypes.byref(parent), 0)
    call("cuGraphAddChildGraphNode", ctypes.byref(node), parent, None, ctypes.c_size_t(0), clone)
    call("cuGraphDestroy", clone)
    assert not held_after(0.3, before), "the child graph's counters were given back"
    call("cuGraphInstantiateWithFlags", ctypes.byref(exe), parent, ctypes.c_ulonglong(0))
    call("cuGraphDestroy", parent)
    assert not held_after(0.3, before), "the executable graph's counters were given back"
    C.fill_(float("nan"))
    t.cuda.synchronize()
    call("cuGraphLaunch", exe, handle)
    side.synchronize()
    assert rel(C, wgrad_reference(t, X, dY, sizes)) < TOL["f32"]
    call("cuGraphExecDestroy", exe)
    assert held_after(5.0, before), "the counters stayed taken after every copy of the graph was destroyed"


@pytest.mark.parametrize("form", ["M", "K"])
def test_grouped_graphs_of_one_stream_replay_at_once_beside_plain_calls(form):
    """Grouped M and K, whose blocks claim tiles from counters: two graphs captured on torch's one capture stream
    replayed at once beside plain calls on a third stream; each captured call claims from counters of its own."""
    t = torch()
    n, k, rows, groups = 130, 24, 3000, 12
    kern = kernel(M32, n=n, k=k) if form == "M" else kernel(K32, m=k, n=n)
    rng = np.random.default_rng(5)
    sizes = [rng.multinomial(rows, rng.dirichlet(np.ones(groups))) for _ in range(3)]
    ends = [ends_of(s, t) for s in sizes]
    A = t.randn(rows, k, device="cuda") if form == "M" else matrix(k, rows, "c", t.float32)
    B = t.randn(groups, n, k, device="cuda") if form == "M" else t.randn(rows, n, device="cuda")
    outs = [t.empty(rows, n, device="cuda") if form == "M" else t.empty(groups, k, n, device="cuda") for _ in sizes]

    def verify(i, what):
        starts = np.concatenate([[0], np.cumsum(sizes[i])])
        bounds = list(zip(starts[:-1], starts[1:], strict=True))
        if form == "M":
            ref = t.cat([A[s:e].double() @ B[g].double().t() for g, (s, e) in enumerate(bounds)])
        else:
            ref = t.stack([A[:, s:e].double() @ B[s:e].double() for s, e in bounds])
        assert rel(outs[i], ref) < TOL["f32"], what

    scalars = {} if form == "M" else {"alpha": 1.0, "beta": 0.0}  # K32: alpha and beta runtime
    check_graphs_of_one_stream(t, lambda i: kern(A, B, outs[i], offsets=ends[i], **scalars),
                               lambda i: outs[i].fill_(float("nan")), verify)
    st = kern.executable.dynamic
    assert st is not None and len(st.graph_counters) == 2, "each captured call took counters of its own"

"""`grouped M` of bf16/f16 storage on the GPU (the hopper_grouped family, sm_90a): random routings (empty groups, one
group with every row, groups of 1, 40, 64, 65, 127, 128, 129 rows, primes) against float64 with NaN-poisoned outputs,
both B layouts, C in the storage type and f32, runtime alpha and beta, rows outside every group left untouched,
CUDA-graph replay with new ends, garbage ends (clamped; validate=True names the first bad group; run once under
compute-sanitizer memcheck), argument errors, no compile, plan or tuning after warm-up, and the C++ launcher built with
nvcc, called and captured in a graph."""

from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pytest

import gemmc
from gemmc.families.dynamic import scheduler
from tests.gpu.helpers import TOL, check_moe_graph_replay, launcher, rel

pytestmark = pytest.mark.gpu

BF16 = "target cuda sm_90\nkernel moe_bf16 {{ dtype bf16 {layout} grouped M n {n} k {k} groups 128 }}"
F16 = ("target cuda sm_90\nkernel moe_f16 {{ dtype A f16, B f16, C f32 {layout} alpha runtime beta runtime "
       "grouped M n {n} k {k} groups 64 }}")


def torch():
    import torch as t

    if not t.cuda.is_available() or t.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs an sm_90 GPU")
    return t


def kernel(schedule: str, **dims) -> gemmc.CompiledKernel:
    return next(iter(gemmc.compile_string(schedule.format(**dims))))


ROUTINGS = {
    "primes": [0, 1, 2, 3, 5, 7, 13, 31, 61, 127, 131, 257, 0, 0, 17],
    "classes": [40, 64, 65, 127, 128, 129, 192, 193, 256, 1],
    "one": [0, 0, 0, 700, 0],
    "empty": [0, 0, 0],
    "ones": [1] * 40,
    "big": [1000, 3, 515, 64, 129],
}


def ends_of(sizes, t):
    return t.tensor(np.cumsum(sizes), dtype=t.int32, device="cuda")


def weights(t, groups, k, n, col, dtype):
    """groups x k x n: with `layout B col` each group's matrix column-major (groups x n x k in memory)."""
    return t.randn(groups, n, k, device="cuda").to(dtype).transpose(1, 2) if col else \
        t.randn(groups, k, n, device="cuda").to(dtype)


def reference(A, B, C0, sizes, alpha, beta):
    ref = C0.double().clone()
    start = 0
    for g, s in enumerate(sizes):
        ref[start:start + s] = alpha * (A[start:start + s].double() @ B[g].double())
        if beta:
            ref[start:start + s] += beta * C0[start:start + s].double()
        start += s
    return ref


@pytest.mark.parametrize("routing", list(ROUTINGS))
@pytest.mark.parametrize("form", ["bf16-colB", "bf16-rowB", "f16-f32C-colB"])
def test_grouped_m(form, routing):
    t = torch()
    col = form.endswith("colB")
    n, k, extra = (97 if col else 200), 72, 5  # n: no tile divides it; 5 rows after the last group stay untouched
    if form.startswith("bf16"):
        kern, dt, cdt, scalars = kernel(BF16, layout="layout B col" if col else "", n=n, k=k), t.bfloat16, \
            t.bfloat16, None
    else:
        kern, dt, cdt, scalars = kernel(F16, layout="layout B col", n=96, k=k), t.float16, t.float32, (1.5, -0.5)
        n = 96  # f32 C lines of 384 bytes: the TMA-store epilogue
    sizes = ROUTINGS[routing]
    rows = sum(sizes) + extra
    A = t.randn(rows, k, device="cuda").to(dt)
    B = weights(t, len(sizes), k, n, col, dt)
    C = (t.full((rows, n), float("nan"), device="cuda") if scalars is None else t.randn(rows, n, device="cuda")).to(cdt)
    C[rows - extra:] = 7.0
    C0 = C.clone()
    kw = {} if scalars is None else {"alpha": scalars[0], "beta": scalars[1]}
    kern(A, B, C, offsets=ends_of(sizes, t), **kw)
    t.cuda.synchronize()
    alpha, beta = scalars or (1.0, 0.0)
    ref = reference(A, B, C0, sizes, alpha, beta)
    used = rows - extra
    if used:
        assert rel(C[:used], ref[:used]) < TOL[str(cdt).removeprefix("torch.")]
    assert t.equal(C[used:], C0[used:]), "rows outside every group were written"


@pytest.mark.parametrize("routing", ["primes", "classes", "big"])
@pytest.mark.parametrize("col", [True, False], ids=["colB", "rowB"])
def test_grouped_m_with_the_other_cluster_size(col, routing):
    """The same kernel with the cluster size its plan does not pick at this k (clusters of 2 below
    calibration.CLUSTER_MIN_K: a unit's two tile rows on a pair of blocks, B multicast where they share a group). A
    cluster's blocks share a unit's rows, so its last round is not split (a plan limit)."""
    t = torch()
    n, k = 200, 72
    kern = kernel(BF16, layout="layout B col" if col else "", n=n, k=k)
    kern = kern.with_plan(dataclasses.replace(kern.ir.plan, cluster=3 - kern.ir.plan.cluster, tail_split=False))
    sizes = ROUTINGS[routing]
    rows = sum(sizes)
    A = t.randn(rows, k, device="cuda").to(t.bfloat16)
    B = weights(t, len(sizes), k, n, col, t.bfloat16)
    C = t.full((rows, n), float("nan"), device="cuda").to(t.bfloat16)
    kern(A, B, C, offsets=ends_of(sizes, t))
    t.cuda.synchronize()
    assert rel(C, reference(A, B, C, sizes, 1.0, 0.0)) < TOL["bfloat16"]


@pytest.mark.parametrize("band", [2, 3, 8])
@pytest.mark.parametrize("cluster", [1, 2])
@pytest.mark.parametrize(("routing", "n"), [("primes", 1000), ("big", 4000)])
def test_grouped_m_in_raster_bands(routing, n, cluster, band):
    """Units walked in bands of unit rows, rows-fastest (HopperGroupedPlan.band), with and without clusters and the
    split last round: a band height that divides no row count, N of several tiles (big: 17 tile rows x 16 n-tiles,
    three rounds of units), NaN-poisoned C, rows outside every group untouched."""
    t = torch()
    k = 72
    kern = kernel(BF16, layout="layout B col", n=n, k=k)
    kern = kern.with_plan(dataclasses.replace(kern.ir.plan, cluster=cluster, band=band,
                                              tail_split=cluster == 1 and kern.ir.plan.tail_split))
    sizes = ROUTINGS[routing]
    used = sum(sizes)
    A = t.randn(used + 5, k, device="cuda").to(t.bfloat16)
    B = weights(t, len(sizes), k, n, True, t.bfloat16)
    C = t.full((used + 5, n), float("nan"), device="cuda").to(t.bfloat16)
    C[used:] = 7.0
    C0 = C.clone()
    kern(A, B, C, offsets=ends_of(sizes, t))
    t.cuda.synchronize()
    assert rel(C[:used], reference(A, B, C0, sizes, 1.0, 0.0)[:used]) < TOL["bfloat16"]
    assert t.equal(C[used:], C0[used:]), "rows outside every group were written"


@pytest.mark.parametrize("tail_split", [True, False])
@pytest.mark.parametrize(("routing", "n"), [("big", 4000), ("classes", 1000), ("primes", 200), ("one", 2100)])
def test_tail_split_both_ways(routing, n, tail_split):
    """The last round of units in column halves (the plan's tail_split) and whole, on routings whose unit counts
    leave 8 of a third round (big: 17 tile rows x 16 n-tiles = 272 units on 132 blocks) or fit in one round (every
    unit split): 64-row units (whose second half is empty), N no tile divides, beta 0 on NaN-poisoned C."""
    t = torch()
    k = 72
    kern = kernel(BF16, layout="layout B col", n=n, k=k)
    assert kern.ir.plan.cluster == 1 and kern.ir.plan.tail_split
    kern = kern.with_plan(dataclasses.replace(kern.ir.plan, tail_split=tail_split))
    sizes = ROUTINGS[routing]
    rows = sum(sizes)
    A = t.randn(rows, k, device="cuda").to(t.bfloat16)
    B = weights(t, len(sizes), k, n, True, t.bfloat16)
    C = t.full((rows, n), float("nan"), device="cuda").to(t.bfloat16)
    kern(A, B, C, offsets=ends_of(sizes, t))
    t.cuda.synchronize()
    assert rel(C, reference(A, B, C, sizes, 1.0, 0.0)) < TOL["bfloat16"]


def test_large_moe_step_against_torch_grouped_mm():
    """64 experts, 32768 tokens, N 2048, K 1024 with Zipf routing: the suite's size, against float64 on samples."""
    t = torch()
    experts, tokens, n, k = 64, 32768, 2048, 1024
    kern = kernel(BF16, layout="layout B col", n=n, k=k)
    rng = np.random.default_rng(3)
    p = 1.0 / np.arange(1, experts + 1)
    sizes = rng.multinomial(tokens, p / p.sum())
    A = t.randn(tokens, k, device="cuda").to(t.bfloat16)
    B = weights(t, experts, k, n, True, t.bfloat16)
    C = t.full((tokens, n), float("nan"), device="cuda").to(t.bfloat16)
    kern(A, B, C, offsets=ends_of(sizes, t))
    t.cuda.synchronize()
    start = 0
    for g, s in enumerate(sizes):
        if s and g % 7 == 0:
            ref = A[start:start + s].double() @ B[g].double()
            assert rel(C[start:start + s], ref) < TOL["bfloat16"], f"expert {g}"
        start += s
    assert t.isfinite(C).all()


def test_graph_replay_with_new_routing():
    """A MoE step (routing, gemmc, combine) captured once in a CUDA graph, replayed with new routings."""
    torch()
    check_moe_graph_replay(kernel(BF16, layout="layout B col", n=256, k=64), experts=16, tokens=999, n=256, k=64,
                           dtype="bfloat16", b_col=True, tolerance=TOL["bfloat16"])


def test_garbage_ends_are_clamped_and_validate_names_the_first_bad_group():
    t = torch()
    n, k, rows, groups = 72, 64, 300, 20
    kern = kernel(BF16, layout="", n=n, k=k)
    rng = np.random.default_rng(11)
    A = t.randn(rows, k, device="cuda").to(t.bfloat16)
    B = weights(t, groups, k, n, False, t.bfloat16)
    for trial in range(4):
        raw = rng.integers(-200, rows + 200, groups).astype(np.int32)
        if trial == 0:
            raw[:] = np.iinfo(np.int32).max  # every end past the rows
        C = t.full((rows, n), 7.0, device="cuda").to(t.bfloat16)
        kern(A, B, C, offsets=t.tensor(raw, device="cuda"))
        t.cuda.synchronize()
        starts = scheduler.clamped_starts(raw, rows)
        ref = t.full((rows, n), 7.0, device="cuda", dtype=t.float64)
        for g in range(groups):
            s, e = int(starts[g]), int(starts[g + 1])
            ref[s:e] = A[s:e].double() @ B[g].double()
        assert rel(C, ref) < TOL["bfloat16"], "clamped groups computed wrongly"
        bad = int(next(i for i in range(groups) if raw[i] < 0 or raw[i] > rows or raw[i] < (raw[i - 1] if i else 0)))
        with pytest.raises(gemmc.GemmcError, match=rf"offsets\[{bad}\] = "):
            kern(A, B, C, offsets=t.tensor(raw, device="cuda"), validate=True)
    good = t.tensor([0, 10, 10, 300] + [300] * (groups - 4), dtype=t.int32, device="cuda")
    kern(A, B, t.empty(rows, n, device="cuda", dtype=t.bfloat16), offsets=good, validate=True)


def test_arguments_are_checked_before_the_launch():
    t = torch()
    kern = kernel(BF16, layout="layout B col", n=16, k=8)
    bf = t.bfloat16
    A, B = t.randn(10, 8, device="cuda").to(bf), weights(t, 2, 8, 16, True, bf)
    C = t.empty(10, 16, device="cuda", dtype=bf)
    ends = t.tensor([4, 10], dtype=t.int32, device="cuda")
    cases = [
        ((A, B, C), {"offsets": ends.long()}, "offsets: expected a 1-D int32"),
        ((A, B, C), {}, "offsets: a grouped kernel needs"),
        ((A, B[:1], C), {"offsets": ends}, r"B: expected shape \(2 x 8 x 16"),
        ((A, B, C[:9]), {"offsets": ends}, r"C: expected shape \(10 x 16"),
        ((A.float(), B, C), {"offsets": ends}, "A: expected dtype bfloat16"),
        ((A, B, C.float()), {"offsets": ends}, "C: expected dtype bfloat16"),
        ((A, B, t.empty(16, 10, device="cuda", dtype=bf).t()), {"offsets": ends}, "C: expected a densely packed"),
        ((t.randn(81, device="cuda").to(bf)[1:].view(10, 8), B, C), {"offsets": ends}, "A: TMA reads it in place"),
    ]
    for args, kw, message in cases:
        with pytest.raises(gemmc.GemmcError, match=message):
            kern(*args, **kw)


def test_no_compile_plan_or_tuning_after_warm_up_and_the_quick_path():
    t = torch()
    kern = kernel(BF16, layout="layout B col", n=128, k=64)
    A = t.randn(4096, 64, device="cuda").to(t.bfloat16)
    B = weights(t, 32, 64, 128, True, t.bfloat16)
    C = t.empty(4096, 128, device="cuda", dtype=t.bfloat16)
    kern(A, B, C, offsets=ends_of([128] * 32, t))
    t.cuda.synchronize()
    before = gemmc.stats()
    rng = np.random.default_rng(5)
    ends = t.empty(32, dtype=t.int32, device="cuda")
    for _ in range(20):  # the same buffers: after the first call, the quick path
        sizes = rng.multinomial(4096, np.full(32, 1 / 32))
        ends.copy_(ends_of(sizes, t))
        C.fill_(float("nan"))
        kern(A, B, C, offsets=ends)
    t.cuda.synchronize()
    assert gemmc.stats() == before
    assert rel(C, reference(A, B, C, sizes, 1.0, 0.0)) < TOL["bfloat16"]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_cpp_launcher_runs_and_is_captured_in_a_graph(tmp_path):
    """The standalone .cu built with nvcc into a library, called through ctypes on torch's stream, plain and inside a
    CUDA graph capture, with new ends between replays."""
    t = torch()
    n, k, groups, rows = 192, 128, 9, 1500
    kern = kernel(BF16, layout="", n=n, k=k)
    fn, size = launcher(kern, tmp_path)
    work = t.zeros(int(size(groups)), dtype=t.uint8, device="cuda")
    A = t.randn(rows, k, device="cuda").to(t.bfloat16)
    B = weights(t, groups, k, n, False, t.bfloat16)
    C = t.full((rows, n), float("nan"), device="cuda").to(t.bfloat16)
    ends = t.empty(groups, dtype=t.int32, device="cuda")
    rng = np.random.default_rng(2)

    def call():
        return fn(A.data_ptr(), B.data_ptr(), C.data_ptr(), ends.data_ptr(), groups, rows, work.data_ptr(),
                  t.cuda.current_stream().cuda_stream)

    sizes = rng.multinomial(rows, np.full(groups, 1 / groups))
    ends.copy_(ends_of(sizes, t))
    assert call() == 0
    t.cuda.synchronize()
    assert rel(C, reference(A, B, C, sizes, 1.0, 0.0)) < TOL["bfloat16"]
    graph = t.cuda.CUDAGraph()
    with t.cuda.graph(graph):
        assert call() == 0
    for trial in range(2):
        sizes = rng.multinomial(rows, np.full(groups, 1 / groups))
        ends.copy_(ends_of(sizes, t))
        C.fill_(float("nan"))
        graph.replay()
        t.cuda.synchronize()
        assert rel(C, reference(A, B, C, sizes, 1.0, 0.0)) < TOL["bfloat16"], f"replay {trial}"

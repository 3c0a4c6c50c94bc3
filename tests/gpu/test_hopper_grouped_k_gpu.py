"""`grouped K` of bf16/f16 storage on the GPU (the hopper_grouped family's weight gradient, sm_90a): dW_g = X_g^T dY_g
over random routings (empty groups, one group with every row, group starts not multiples of 8, primes) against float64
with NaN-poisoned outputs, odd M and N, Inf in the next group's rows (which the last k-tile of a group reads and must
zero), C in the storage type and f32, beta != 0, CUDA-graph replay with new ends, garbage ends (clamped; validate=True
names the first bad group; run under compute-sanitizer memcheck), argument errors, and the C++ launcher built with
nvcc, called and captured in a graph."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import gemmc
from gemmc.families.dynamic import scheduler
from tests.gpu.helpers import TOL, check_graphs_of_one_stream, launcher, rel

pytestmark = pytest.mark.gpu

BF16 = "target cuda sm_90\nkernel wgrad_bf16 {{ dtype bf16 layout A col grouped K m {m} n {n} groups 64 }}"
F16 = ("target cuda sm_90\nkernel wgrad_f16 {{ dtype A f16, B f16, C f32 layout A col alpha runtime beta runtime "
       "grouped K m {m} n {n} groups 64 }}")
MANY = "target cuda sm_90\nkernel wgrad_many {{ dtype bf16 layout A col grouped K m {m} n {n} groups 1024 }}"

ROUTINGS = {
    "primes": [0, 1, 2, 3, 5, 7, 13, 31, 61, 127, 131, 257, 0, 0, 17],  # starts off multiples of 8
    "edges": [63, 64, 65, 127, 128, 129, 1, 200],
    "one": [0, 0, 0, 700, 0],
    "empty": [0, 0, 0],
    "skew": [1500, 3, 515, 64, 9, 0, 1],
}


def torch():
    import torch as t

    if not t.cuda.is_available() or t.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs an sm_90 GPU")
    return t


def kernel(schedule: str, **dims) -> gemmc.CompiledKernel:
    k = next(iter(gemmc.compile_string(schedule.format(**dims))))
    assert k.ir.family == "hopper_grouped"
    return k


def ends_of(sizes, t):
    return t.tensor(np.cumsum(sizes), dtype=t.int32, device="cuda")


def reference(X, dY, C0, starts, alpha, beta):
    """C_g = alpha X[s:e]^T dY[s:e] + beta C0_g in float64, groups given by their clamped starts (len groups + 1)."""
    ref = beta * C0.double() if beta else C0.new_zeros(C0.shape, dtype=C0.double().dtype)  # beta 0: a NaN C0 stays out
    for g in range(len(starts) - 1):
        s, e = int(starts[g]), int(starts[g + 1])
        ref[g] += alpha * (X[s:e].double().t() @ dY[s:e].double())
    return ref


def starts_of(sizes):
    return np.concatenate([[0], np.cumsum(sizes)])


@pytest.mark.parametrize("routing", list(ROUTINGS))
@pytest.mark.parametrize("form", ["bf16", "f16-f32C"])
def test_grouped_k(form, routing):
    """Odd M and N (no tile divides them), 5 rows after the last group, Inf in every row past a group's end that its
    last k-tile reads (the next group's first rows hold finite values: Inf only in the rows no group owns)."""
    t = torch()
    sizes = ROUTINGS[routing]
    extra = 5
    rows = sum(sizes) + extra
    if form == "bf16":
        m, n = 200, 136  # lines of 400 and 272 bytes; C_g's 200 rows end inside a 128-row tile
        kern, dt, cdt, alpha, beta = kernel(BF16, m=m, n=n), t.bfloat16, t.bfloat16, 1.0, 0.0
        C = t.full((len(sizes), m, n), float("nan"), device="cuda").to(cdt)
        kw = {}
    else:
        m, n = 72, 96
        kern, dt, cdt, alpha, beta = kernel(F16, m=m, n=n), t.float16, t.float32, 1.5, -0.5
        C = t.randn(len(sizes), m, n, device="cuda").to(cdt)
        kw = {"alpha": alpha, "beta": beta}
    X = t.randn(rows, m, device="cuda").to(dt)
    dY = t.randn(rows, n, device="cuda").to(dt)
    X[rows - extra:] = float("inf")
    dY[rows - extra:] = float("inf")
    C0 = C.clone()
    kern(X.t(), dY, C, offsets=ends_of(sizes, t), **kw)
    t.cuda.synchronize()
    ref = reference(X, dY, C0, starts_of(sizes), alpha, beta)
    assert t.isfinite(C).all()
    if ref.abs().sum() > 0:
        assert rel(C, ref) < TOL[str(cdt).removeprefix("torch.")]
    else:
        assert (C == 0).all()


def test_inf_and_nan_in_the_next_groups_rows_stay_out():
    """Group g's last k-tile covers rows of group g + 1 that hold Inf and NaN: no group but the one owning them sees
    them (a group of 3 rows, then one whose first rows are Inf; C of the first must stay finite)."""
    t = torch()
    m, n = 128, 128
    kern = kernel(BF16, m=m, n=n)
    sizes = [3, 70, 11, 64]
    rows = sum(sizes)
    X = t.randn(rows, m, device="cuda").to(t.bfloat16)
    dY = t.randn(rows, n, device="cuda").to(t.bfloat16)
    starts = starts_of(sizes)
    C = t.full((len(sizes), m, n), float("nan"), device="cuda").to(t.bfloat16)
    X[starts[1]:starts[1] + 2] = float("inf")
    dY[starts[3]:starts[3] + 1] = float("nan")
    kern(X.t(), dY, C, offsets=ends_of(sizes, t))
    t.cuda.synchronize()
    for g in (0, 2):  # the groups before the poisoned ones
        assert t.isfinite(C[g]).all(), f"group {g} read the next group's rows"
        ref = X[starts[g]:starts[g + 1]].double().t() @ dY[starts[g]:starts[g + 1]].double()
        assert rel(C[g], ref) < TOL["bfloat16"]


def test_large_weight_gradient_against_torch_grouped_mm():
    """32 experts, 8192 tokens, M 1024, N 512, Zipf routing: against torch._grouped_mm and float64 on samples."""
    t = torch()
    experts, tokens, m, n = 32, 8192, 1024, 512
    kern = kernel(BF16, m=m, n=n)
    rng = np.random.default_rng(3)
    p = 1.0 / np.arange(1, experts + 1)
    sizes = rng.multinomial(tokens, p / p.sum())
    X = t.randn(tokens, m, device="cuda").to(t.bfloat16)
    dY = t.randn(tokens, n, device="cuda").to(t.bfloat16)
    C = t.full((experts, m, n), float("nan"), device="cuda").to(t.bfloat16)
    ends = ends_of(sizes, t)
    kern(X.t(), dY, C, offsets=ends)
    ref_t = t._grouped_mm(X.t(), dY, offs=ends)
    t.cuda.synchronize()
    starts = starts_of(sizes)
    for g in range(0, experts, 5):
        ref = X[starts[g]:starts[g + 1]].double().t() @ dY[starts[g]:starts[g + 1]].double()
        if sizes[g]:
            assert rel(C[g], ref) < TOL["bfloat16"], f"expert {g}"
    assert rel(C, ref_t.double()) < TOL["bfloat16"]


@pytest.mark.parametrize("groups", [40, 1000])
def test_many_groups_and_launches_in_stream_order_share_the_tile_counter(groups):
    """More groups than a warp (the ends' scan) and than the block's threads (the longest-first order), more tiles
    than SMs (blocks claim tiles from the counter), and three launches queued back to back with new ends: each
    leaves the counter zeroed for the next."""
    t = torch()
    m, n, rows = 200, 136, 7 * groups  # 2 x 2 tiles a group: 160 and 4000 tiles, more than the SMs
    kern = kernel(MANY, m=m, n=n)
    X = t.randn(rows, m, device="cuda").to(t.bfloat16)
    dY = t.randn(rows, n, device="cuda").to(t.bfloat16)
    rng = np.random.default_rng(groups)
    calls = []
    for trial in range(3):
        weights = rng.random(groups) * (rng.random(groups) > 0.2)  # about a fifth of the groups empty
        sizes = rng.multinomial(rows - trial, weights / weights.sum())
        C = t.full((groups, m, n), float("nan"), device="cuda").to(t.bfloat16)
        kern(X.t(), dY, C, offsets=ends_of(sizes, t))
        calls.append((sizes, C))
    t.cuda.synchronize()
    for trial, (sizes, C) in enumerate(calls):
        assert rel(C, reference(X, dY, C, starts_of(sizes), 1.0, 0.0)) < TOL["bfloat16"], f"launch {trial}"


def test_graph_replay_with_new_ends():
    """One call captured in a torch CUDA graph, replayed with new ends (one of them every row in one group) on a
    NaN-poisoned C; nothing compiles, plans or tunes during the replays."""
    t = torch()
    experts, rows, m, n = 16, 999, 256, 192
    kern = kernel(BF16, m=m, n=n)
    X = t.randn(rows, m, device="cuda").to(t.bfloat16)
    dY = t.randn(rows, n, device="cuda").to(t.bfloat16)
    C = t.empty(experts, m, n, device="cuda", dtype=t.bfloat16)
    ends = ends_of([rows // experts] * experts, t)
    kern(X.t(), dY, C, offsets=ends)
    t.cuda.synchronize()
    before = gemmc.stats()
    graph = t.cuda.CUDAGraph()
    with t.cuda.graph(graph):
        kern(X.t(), dY, C, offsets=ends)
    rng = np.random.default_rng(4)
    for trial in range(3):
        sizes = rng.multinomial(rows, np.full(experts, 1 / experts)) if trial != 1 else \
            np.array([0] * 3 + [rows] + [0] * (experts - 4))
        ends.copy_(ends_of(sizes, t))
        C.fill_(float("nan"))
        graph.replay()
        t.cuda.synchronize()
        assert rel(C, reference(X, dY, C, starts_of(sizes), 1.0, 0.0)) < TOL["bfloat16"], f"replay {trial}"
    assert gemmc.stats() == before


def test_garbage_ends_are_clamped_and_validate_names_the_first_bad_group():
    t = torch()
    m, n, rows, groups = 72, 64, 300, 20
    kern = kernel(BF16, m=m, n=n)
    rng = np.random.default_rng(11)
    X = t.randn(rows, m, device="cuda").to(t.bfloat16)
    dY = t.randn(rows, n, device="cuda").to(t.bfloat16)
    for trial in range(4):
        raw = rng.integers(-200, rows + 200, groups).astype(np.int32)
        if trial == 0:
            raw[:] = np.iinfo(np.int32).max  # every end past the rows
        C = t.full((groups, m, n), float("nan"), device="cuda").to(t.bfloat16)
        kern(X.t(), dY, C, offsets=t.tensor(raw, device="cuda"))
        t.cuda.synchronize()
        starts = scheduler.clamped_starts(raw, rows)
        assert rel(C, reference(X, dY, C, starts, 1.0, 0.0)) < TOL["bfloat16"], "clamped groups computed wrongly"
        bad = int(next(i for i in range(groups) if raw[i] < 0 or raw[i] > rows or raw[i] < (raw[i - 1] if i else 0)))
        with pytest.raises(gemmc.GemmcError, match=rf"offsets\[{bad}\] = "):
            kern(X.t(), dY, C, offsets=t.tensor(raw, device="cuda"), validate=True)
    good = t.tensor([0, 10, 10, 300] + [300] * (groups - 4), dtype=t.int32, device="cuda")
    kern(X.t(), dY, t.empty(groups, m, n, device="cuda", dtype=t.bfloat16), offsets=good, validate=True)


def test_no_rows_gives_beta_c():
    t = torch()
    kern = kernel(F16, m=64, n=64)
    X = t.empty(0, 64, device="cuda", dtype=t.float16)
    dY = t.empty(0, 64, device="cuda", dtype=t.float16)
    C = t.randn(3, 64, 64, device="cuda")
    C0 = C.clone()
    kern(X.t(), dY, C, offsets=t.zeros(3, dtype=t.int32, device="cuda"), alpha=2.0, beta=0.5)
    t.cuda.synchronize()
    assert t.equal(C, 0.5 * C0)


def test_arguments_are_checked_before_the_launch():
    t = torch()
    kern = kernel(BF16, m=16, n=8)
    bf = t.bfloat16
    X, dY = t.randn(10, 16, device="cuda").to(bf), t.randn(10, 8, device="cuda").to(bf)
    C = t.empty(2, 16, 8, device="cuda", dtype=bf)
    ends = t.tensor([4, 10], dtype=t.int32, device="cuda")
    cases = [
        ((X.t(), dY, C), {"offsets": ends.long()}, "offsets: expected a 1-D int32"),
        ((X.t(), dY, C), {}, "offsets: a grouped kernel needs"),
        ((X.t(), dY[:9], C), {"offsets": ends}, r"B: expected shape \(10 x 8"),
        ((X.t(), dY, C[:1]), {"offsets": ends}, r"C: expected shape \(2 x 16 x 8"),
        ((X.t().float(), dY, C), {"offsets": ends}, "A: expected dtype bfloat16"),
        ((X.t(), dY, C.float()), {"offsets": ends}, "C: expected dtype bfloat16"),
        ((t.randn(161, device="cuda").to(bf)[1:].view(10, 16).t(), dY, C), {"offsets": ends},
         "A: TMA reads it in place"),
    ]
    for args, kw, message in cases:
        with pytest.raises(gemmc.GemmcError, match=message):
            kern(*args, **kw)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_cpp_launcher_runs_and_is_captured_in_a_graph(tmp_path):
    """The standalone .cu built with nvcc into a library, called through ctypes on torch's stream, plain and inside a
    CUDA graph capture, with new ends between replays; 64 groups of 3 row tiles: more tiles than SMs, so the blocks
    claim tiles from the counter in the caller's workspace, which every launch leaves zeroed for the next."""
    t = torch()
    m, n, groups, rows = 320, 136, 64, 1500
    kern = kernel(BF16, m=m, n=n)
    fn, size = launcher(kern, tmp_path)
    work = t.zeros(int(size(groups)), dtype=t.uint8, device="cuda")
    X = t.randn(rows, m, device="cuda").to(t.bfloat16)
    dY = t.randn(rows, n, device="cuda").to(t.bfloat16)
    C = t.full((groups, m, n), float("nan"), device="cuda").to(t.bfloat16)
    ends = t.empty(groups, dtype=t.int32, device="cuda")
    rng = np.random.default_rng(2)

    def call():
        return fn(X.data_ptr(), dY.data_ptr(), C.data_ptr(), ends.data_ptr(), groups, rows, work.data_ptr(),
                  t.cuda.current_stream().cuda_stream)

    sizes = rng.multinomial(rows, np.full(groups, 1 / groups))
    ends.copy_(ends_of(sizes, t))
    assert call() == 0
    t.cuda.synchronize()
    assert rel(C, reference(X, dY, C, starts_of(sizes), 1.0, 0.0)) < TOL["bfloat16"]
    graph = t.cuda.CUDAGraph()
    with t.cuda.graph(graph):
        assert call() == 0
    for trial in range(2):
        sizes = rng.multinomial(rows, np.full(groups, 1 / groups))
        ends.copy_(ends_of(sizes, t))
        C.fill_(float("nan"))
        graph.replay()
        t.cuda.synchronize()
        assert rel(C, reference(X, dY, C, starts_of(sizes), 1.0, 0.0)) < TOL["bfloat16"], f"replay {trial}"


def test_cupy_float16_arrays():
    """CuPy float16 arrays (A a transposed view of X), C in f32 with runtime alpha and beta."""
    torch()
    import cupy as cp

    m, n, sizes = 136, 72, [5, 0, 130, 67]
    kern = kernel(F16, m=m, n=n)
    rows = sum(sizes)
    rng = cp.random.default_rng(9)
    X = rng.standard_normal((rows, m), dtype=cp.float32).astype(cp.float16)
    dY = rng.standard_normal((rows, n), dtype=cp.float32).astype(cp.float16)
    C = rng.standard_normal((len(sizes), m, n), dtype=cp.float32)
    C0 = C.copy()
    kern(X.T, dY, C, offsets=cp.asarray(np.cumsum(sizes), dtype=cp.int32), alpha=0.5, beta=2.0)
    cp.cuda.runtime.deviceSynchronize()
    starts = starts_of(sizes)
    Xd, dYd = cp.asnumpy(X).astype(np.float64), cp.asnumpy(dY).astype(np.float64)
    ref = 2.0 * cp.asnumpy(C0).astype(np.float64)
    for g in range(len(sizes)):
        s, e = int(starts[g]), int(starts[g + 1])
        ref[g] += 0.5 * Xd[s:e].T @ dYd[s:e]
    got = cp.asnumpy(C).astype(np.float64)
    assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < TOL["float32"] * 50


def test_graphs_of_one_stream_replay_at_once_beside_plain_calls():
    """Two graphs captured on torch's one capture stream replayed at once beside plain calls on a third stream: each
    captured call claims tiles from counters of its own (grouped K's blocks claim from counters)."""
    t = torch()
    m, n, rows, groups = 200, 136, 3000, 12
    kern = kernel(BF16, m=m, n=n)
    rng = np.random.default_rng(8)
    sizes = [rng.multinomial(rows, rng.dirichlet(np.ones(groups))) for _ in range(3)]
    ends = [ends_of(s, t) for s in sizes]
    X = t.randn(rows, m, device="cuda").to(t.bfloat16)
    dY = t.randn(rows, n, device="cuda").to(t.bfloat16)
    outs = [t.empty(groups, m, n, device="cuda", dtype=t.bfloat16) for _ in sizes]

    def verify(i, what):
        assert rel(outs[i], reference(X, dY, outs[i], starts_of(sizes[i]), 1.0, 0.0)) < TOL["bfloat16"], what

    check_graphs_of_one_stream(t, lambda i: kern(X.t(), dY, outs[i], offsets=ends[i]),
                               lambda i: outs[i].fill_(float("nan")), verify)
    assert len(kern.executable.dynamic.graph_counters) == 2, "each captured call took counters of its own"


def test_the_quick_paths_block_launches_with_each_streams_own_counters():
    """The argument blocks the checked calls built (runtime/grouped_tma.py: a Launcher each) launched by the quick path
    on two torch streams at once, three times: each launch stores its stream's tile counters into its block, so the
    launches on the two streams claim tiles apart and every C is right (NaN-poisoned, float64)."""
    t = torch()
    m, n, rows, groups = 200, 136, 3000, 12
    kern = kernel(BF16, m=m, n=n)
    rng = np.random.default_rng(11)
    X = t.randn(rows, m, device="cuda").to(t.bfloat16)
    dY = t.randn(rows, n, device="cuda").to(t.bfloat16)
    sides = [t.cuda.Stream(), t.cuda.Stream()]
    sizes = [rng.multinomial(rows, rng.dirichlet(np.ones(groups))) for _ in sides]
    ends = [ends_of(s, t) for s in sizes]
    outs = [t.empty(groups, m, n, device="cuda", dtype=t.bfloat16) for _ in sides]
    for i in range(2):  # each set checked once: later calls take the quick path
        kern(X.t(), dY, outs[i], offsets=ends[i])
    t.cuda.synchronize()
    st = kern.executable.dynamic
    blocks = dict(st.blocks)
    for _ in range(3):
        for i, side in enumerate(sides):
            outs[i].fill_(float("nan"))
            side.wait_stream(t.cuda.current_stream())
        for i, side in enumerate(sides):
            with t.cuda.stream(side):
                kern(X.t(), dY, outs[i], offsets=ends[i])
        t.cuda.synchronize()
        for i in range(2):
            assert rel(outs[i], reference(X, dY, outs[i], starts_of(sizes[i]), 1.0, 0.0)) < TOL["bfloat16"], i
    assert st.blocks == blocks, "the quick path launched the blocks built by the checked calls"
    mine = sorted(st.counter(side.cuda_stream) for side in sides)
    assert len(set(mine)) == 2 and sorted(b.counter.value for b in blocks.values()) == mine

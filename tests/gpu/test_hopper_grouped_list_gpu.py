"""`grouped list` of bf16/f16 storage on the GPU (the hopper_grouped family's list form, sm_90a: tensor maps built on
the device): random lists with sizes 0, 1, primes and odd K against float64 with NaN-poisoned outputs, bf16 and f16
with C in f32, beta != 0, views of wider matrices (and a C that TMA cannot store), more tiles than SMs and up to the
schedule's bound of problems, launches in stream order sharing the workspace, a CUDA graph replayed with new data in
the same arrays, no compile after warm-up, CuPy float16, a call with arrays TMA cannot read run on CUDA cores, and
the C++ launcher built with nvcc, called and captured in a graph."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import gemmc
from tests.gpu.helpers import TOL, check_graphs_of_one_stream, launcher, rel

pytestmark = pytest.mark.gpu

BF16 = "target cuda sm_90\nkernel list_bf16 { dtype bf16 layout B col grouped list problems 1024 }"
F16 = ("target cuda sm_90\nkernel list_f16 { dtype A f16, B f16, C f32 alpha runtime beta runtime "
       "grouped list problems 64 }")
BF16_ROW = "target cuda sm_90\nkernel list_bf16_row { dtype bf16 beta runtime grouped list problems 512 }"
# (m, n, k): zeros, ones, primes, odd K and N, a tile edge, more than one tile each way
SHAPES = [(0, 64, 64), (64, 0, 64), (1, 1, 1), (37, 41, 0), (127, 129, 131), (128, 128, 128), (1, 300, 521),
          (257, 7, 63), (131, 73, 1001), (300, 136, 24), (64, 200, 8), (5, 17, 2053), (600, 263, 67)]


def torch():
    import torch as t

    if not t.cuda.is_available() or t.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs an sm_90 GPU")
    return t


def kernel(schedule: str) -> gemmc.CompiledKernel:
    k = next(iter(gemmc.compile_string(schedule)))
    assert k.ir.family == "hopper_grouped"
    return k


def pad8(x: int) -> int:
    return (x + 7) // 8 * 8


def operands(t, shapes, dtype, c_dtype, b_col: bool, seed: int = 0):
    """A (m x k), B (k x n; `b_col`: the transpose of a row-major n x k array), C (m x n) per shape, random (C too:
    the beta != 0 cases read it). A and B are views whose lines are padded to 8 elements where k or n is not a
    multiple of 8 (TMA reads lines at 16-byte multiples); C is dense."""
    g = t.Generator(device="cuda").manual_seed(seed)
    As = [t.randn(m, pad8(k), device="cuda", generator=g).to(dtype)[:, :k] for m, n, k in shapes]
    Bs = [t.randn(n, pad8(k), device="cuda", generator=g).to(dtype)[:, :k].t() if b_col else
          t.randn(k, pad8(n), device="cuda", generator=g).to(dtype)[:, :n] for m, n, k in shapes]
    Cs = [t.randn(m, n, device="cuda", generator=g).to(c_dtype) for m, n, k in shapes]
    return As, Bs, Cs


def check(As, Bs, Cs, C0s, alpha, beta, tol, where=""):
    for i, (a, b, c, c0) in enumerate(zip(As, Bs, Cs, C0s, strict=True)):
        if c.numel() == 0:
            continue
        ref = alpha * (a.double() @ b.double())
        if beta:
            ref = ref + beta * c0.double()
        if float(ref.abs().max()) == 0.0:  # K = 0 and beta = 0: C = 0
            assert (c == 0).all(), f"{where} problem {i}"
            continue
        assert rel(c, ref) < tol, f"{where} problem {i} {tuple(a.shape)} x {tuple(b.shape)}"


WIDE = " tile 128x256x64 grouped"  # tile N 256 (its 64-row tiles m64n128)


@pytest.mark.parametrize("case", ["bf16", "f16_f32", "bf16_row", "bf16 N256", "bf16_row N256", "f16_f32 N256"])
def test_random_list_against_float64(case):
    """Every shape of SHAPES twice over in random order, NaN-poisoned C (beta 0) or random C (beta != 0); tile N 128
    and 256."""
    t = torch()
    case, _, wide = case.partition(" ")
    schedule, dtype, c_dtype, b_col, runtime = {
        "bf16": (BF16, t.bfloat16, t.bfloat16, True, False),
        "f16_f32": (F16, t.float16, t.float32, False, True),
        "bf16_row": (BF16_ROW, t.bfloat16, t.bfloat16, False, False)}[case]
    kern = kernel(schedule.replace(" grouped", WIDE) if wide else schedule)
    assert kern.ir.plan.bn == (256 if wide else 128)
    rng = np.random.default_rng(1)
    shapes = [SHAPES[i] for i in rng.permutation(2 * len(SHAPES)) % len(SHAPES)]
    As, Bs, Cs = operands(t, shapes, dtype, c_dtype, b_col)
    for beta in (0.0, -0.75):
        if beta and not runtime and case == "bf16":
            continue  # the schedule's beta is 0
        C0s = [c.clone() for c in Cs]
        if not beta:
            for c in Cs:
                c.fill_(float("nan"))
        alpha = 1.5 if runtime else 1.0
        kwargs = {"alpha": alpha, "beta": beta} if runtime else {"beta": beta} if case == "bf16_row" else {}
        kern(As, Bs, Cs, **kwargs)
        t.cuda.synchronize()
        check(As, Bs, Cs, C0s, alpha, beta, TOL[str(c_dtype).removeprefix("torch.")], f"beta {beta}")


def test_views_and_a_c_that_tma_cannot_store():
    """A and B views of wider matrices (leading dimensions past their lines, 16-byte multiples), C a view with an odd
    leading dimension (stored from the accumulators) and one at an odd offset; every element of the wide C outside
    the views stays as it was."""
    t = torch()
    kern = kernel(BF16_ROW)
    shapes = [(130, 70, 90), (64, 128, 64), (3, 5, 57), (200, 33, 16)]
    big_a = t.randn(256, 264, device="cuda").to(t.bfloat16)
    big_b = t.randn(264, 200, device="cuda").to(t.bfloat16)
    wide_c = t.full((256, 301), float("nan"), device="cuda").to(t.bfloat16)
    As = [big_a[:m, :k] for m, n, k in shapes]
    Bs = [big_b[:k, 8:8 + n] for m, n, k in shapes]
    cols = 0
    Cs = []
    for m, n, _k in shapes:
        Cs.append(wide_c[:m, cols + 1:cols + 1 + n])  # odd offset, ldc 301: no TMA store
        cols += n + 1
    kern(As, Bs, Cs, beta=0.0)
    t.cuda.synchronize()
    check(As, Bs, Cs, Cs, 1.0, 0.0, TOL["bfloat16"])
    mask = t.ones_like(wide_c, dtype=t.bool)
    cols = 0
    for m, n, _k in shapes:
        mask[:m, cols + 1:cols + 1 + n] = False
        cols += n + 1
    assert t.isnan(wide_c[mask]).all(), "an element outside every C was written"


@pytest.mark.parametrize("problems", [40, 1024])
def test_many_problems_and_launches_in_stream_order_share_the_workspace(problems):
    """More problems than a warp (the tile scan), more tiles than SMs (claims), the schedule's bound of problems, and
    three launches queued back to back with new sizes: each reads its own tensor maps and leaves the counter zeroed."""
    t = torch()
    kern = kernel(BF16)
    rng = np.random.default_rng(problems)
    calls = []
    for trial in range(3):
        shapes = [(int(m), int(n), int(k)) for m, n, k in zip(rng.integers(0, 300, problems),
                                                               rng.integers(1, 40, problems) * 8,
                                                               rng.integers(0, 30, problems) * 8, strict=True)]
        As, Bs, Cs = operands(t, shapes, t.bfloat16, t.bfloat16, True, seed=trial)
        for c in Cs:
            c.fill_(float("nan"))
        kern(As, Bs, Cs)
        calls.append((As, Bs, Cs))
    t.cuda.synchronize()
    for trial, (As, Bs, Cs) in enumerate(calls):
        check(As, Bs, Cs, Cs, 1.0, 0.0, TOL["bfloat16"], f"launch {trial}")


def test_new_sizes_compile_nothing_and_graph_replays_new_data():
    """After the first call, new sizes every call compile, plan and tune nothing; a call captured in a CUDA graph and
    replayed with new data in the same arrays gives the new products."""
    t = torch()
    kern = kernel(BF16)
    rng = np.random.default_rng(7)

    def shapes():
        return [(int(m), 256, 512) for m in rng.multinomial(2000, np.full(16, 1 / 16))]

    As, Bs, Cs = operands(t, shapes(), t.bfloat16, t.bfloat16, True)
    kern(As, Bs, Cs)
    t.cuda.synchronize()
    before = gemmc.stats()
    for trial in range(3):
        As, Bs, Cs = operands(t, shapes(), t.bfloat16, t.bfloat16, True, seed=10 + trial)
        for c in Cs:
            c.fill_(float("nan"))
        kern(As, Bs, Cs)
        t.cuda.synchronize()
        check(As, Bs, Cs, Cs, 1.0, 0.0, TOL["bfloat16"], f"call {trial}")
    assert gemmc.stats() == before
    graph = t.cuda.CUDAGraph()
    with t.cuda.graph(graph):
        kern(As, Bs, Cs)
    for trial in range(2):
        for a, b in zip(As, Bs, strict=True):
            a.copy_(t.randn_like(a, dtype=t.float32).to(t.bfloat16))
            b.copy_(t.randn_like(b, dtype=t.float32).to(t.bfloat16))
        for c in Cs:
            c.fill_(float("nan"))
        graph.replay()
        t.cuda.synchronize()
        check(As, Bs, Cs, Cs, 1.0, 0.0, TOL["bfloat16"], f"replay {trial}")
    assert gemmc.stats() == before


def test_graphs_of_one_stream_replay_at_once_beside_plain_calls():
    """Two torch graphs (both captured on torch's one capture stream) replayed at once on two streams, while plain
    calls of the same kernel run on a third: each captured call has its own table, maps and tile counters, so every
    output is right against float64 (NaN-poisoned)."""
    t = torch()
    kern = kernel(BF16)
    rng = np.random.default_rng(21)
    sets = []
    for i in range(3):
        shapes = [(int(m), 136, 264) for m in rng.integers(1, 700, 24)]
        sets.append(operands(t, shapes, t.bfloat16, t.bfloat16, True, seed=30 + i))

    def poison(i):
        for c in sets[i][2]:
            c.fill_(float("nan"))

    def verify(i, what):
        As, Bs, Cs = sets[i]
        check(As, Bs, Cs, Cs, 1.0, 0.0, TOL["bfloat16"], what)

    check_graphs_of_one_stream(t, lambda i: kern(*sets[i]), poison, verify)


def test_validate_compares_the_outputs_bytes():
    """validate=True: column blocks of one matrix as the Cs (their spans interleave, no element shared) run and are
    right against float64; blocks that share a column are refused before any launch, every C left as it was."""
    t = torch()
    kern = kernel(BF16)
    As, Bs, _ = operands(t, [(96, 136, 264)] * 3, t.bfloat16, t.bfloat16, True, seed=5)
    big = t.full((96, 3 * 136), float("nan"), device="cuda").to(t.bfloat16)
    Cs = [big[:, j * 136:(j + 1) * 136] for j in range(3)]
    kern(As, Bs, Cs, validate=True)
    t.cuda.synchronize()
    check(As, Bs, Cs, Cs, 1.0, 0.0, TOL["bfloat16"], "column blocks")
    big.fill_(float("nan"))
    clashing = [big[:, :136], big[:, 128:264], big[:, 272:]]
    with pytest.raises(gemmc.GemmcError, match=r"Cs\[0\] and Cs\[1\] overlap"):
        kern(As, Bs, clashing, validate=True)
    t.cuda.synchronize()
    assert big.isnan().all(), "a refused call writes nothing"


def test_a_call_with_arrays_tma_cannot_read_runs_on_cuda_cores(monkeypatch):
    """A leading dimension that is not a 16-byte multiple (k = 7 of a dense A) or a base at an odd offset: that
    problem runs the schedule in the dynamic family (CUDA cores, planned on the first such call), the call's others on
    the tensor cores, right against float64 with NaN-poisoned C; the next aligned call runs only on the tensor cores.
    A problem of K = 0 never reads A or B, so its odd line stays on the tensor cores."""
    t = torch()
    kern = kernel(BF16_ROW)
    bf = t.bfloat16
    ok = (t.randn(16, 16, device="cuda").to(bf), t.randn(16, 16, device="cuda").to(bf))
    odd = ([ok[0], t.randn(9, 7, device="cuda").to(bf), t.randn(33, 24, device="cuda").to(bf)],
           [ok[1], t.randn(7, 16, device="cuda").to(bf), t.randn(24, 16, device="cuda").to(bf)])
    shifted = t.randn(16 * 17, device="cuda").to(bf)[1:1 + 16 * 16].view(16, 16)
    from gemmc.runtime import dynamic_list

    on_cores = []  # the problems each call sends to CUDA cores
    launch_list = dynamic_list.launch_list
    monkeypatch.setattr(dynamic_list, "launch_list", lambda k, st, As, *rest, **kw: (
        on_cores.append([tuple(a.shape) for a in As]), launch_list(k, st, As, *rest, **kw)))
    for As, Bs in (odd, ([ok[0]], [shifted])):
        Cs = [t.full((a.shape[0], 16), float("nan"), device="cuda").to(bf) for a in As]
        kern(As, Bs, Cs, beta=0.0)
        t.cuda.synchronize()
        check(As, Bs, Cs, Cs, 1.0, 0.0, TOL["bfloat16"], "cuda cores")
    assert on_cores == [[(9, 7)], [(16, 16)]]  # only the problem TMA cannot read, each time
    fallback = kern.executable.dynamic.fallback
    assert fallback is not None and fallback.ir.family == "dynamic"
    # a view of a wider matrix at an odd pitch: CUDA cores too (the fallback reads the lines' strides)
    wide = t.randn(16, 263, device="cuda").to(bf)[:, :20]
    Cw = t.full((16, 16), float("nan"), device="cuda").to(bf)
    Bw = t.randn(20, 16, device="cuda").to(bf)
    kern([wide], [Bw], [Cw], beta=0.0)
    t.cuda.synchronize()
    check([wide], [Bw], [Cw], [Cw], 1.0, 0.0, TOL["bfloat16"], "a view on CUDA cores")
    slot = fallback.dynamic.ring.next
    C = t.full((16, 16), float("nan"), device="cuda").to(bf)
    before = gemmc.stats()
    kern([ok[0]], [ok[1]], [C], beta=0.0)
    t.cuda.synchronize()
    check([ok[0]], [ok[1]], [C], [C], 1.0, 0.0, TOL["bfloat16"], "tensor cores")
    assert gemmc.stats() == before and fallback.dynamic.ring.next == slot  # the aligned call ran no CUDA-core table
    empty_k = [t.empty(5, 0, device="cuda").to(bf)], [t.empty(0, 3, device="cuda").to(bf)]
    C3 = t.randn(5, 3, device="cuda").to(bf)
    C30 = C3.clone()
    kern(*empty_k, [C3], beta=2.0)
    t.cuda.synchronize()
    assert rel(C3, 2.0 * C30.double()) < TOL["bfloat16"]


def test_cupy_float16_arrays():
    torch()
    import cupy as cp

    kern = kernel(F16)
    shapes = [(33, 24, 40), (0, 8, 8), (128, 136, 200)]
    rng = cp.random.default_rng(3)
    As = [rng.standard_normal((m, k), dtype=cp.float32).astype(cp.float16) for m, n, k in shapes]
    Bs = [rng.standard_normal((k, n), dtype=cp.float32).astype(cp.float16) for m, n, k in shapes]
    Cs = [rng.standard_normal((m, n), dtype=cp.float32) for m, n, k in shapes]
    C0s = [c.copy() for c in Cs]
    kern(As, Bs, Cs, alpha=0.5, beta=2.0)
    cp.cuda.runtime.deviceSynchronize()
    for a, b, c, c0 in zip(As, Bs, Cs, C0s, strict=True):
        if c.size:
            ref = 0.5 * cp.asnumpy(a).astype(np.float64) @ cp.asnumpy(b).astype(np.float64) + 2.0 * cp.asnumpy(c0)
            assert np.linalg.norm(cp.asnumpy(c) - ref) / np.linalg.norm(ref) < TOL["float16"]


def test_cpp_launcher_runs_and_is_captured_in_a_graph(tmp_path):
    """The standalone .cu built with nvcc into a library, called through ctypes with a problem table on the device,
    plain and inside a CUDA graph capture replayed with new data; more tiles than SMs, so the blocks claim tiles from
    the counter in the caller's workspace, which every launch leaves zeroed for the next."""
    t = torch()
    kern = kernel(BF16)
    fn, size = launcher(kern, tmp_path, [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p])
    work = t.zeros(int(size(1024)), dtype=t.uint8, device="cuda")
    shapes = [(int(m), 264, 136) for m in np.random.default_rng(5).integers(0, 700, 48)]
    As, Bs, Cs = operands(t, shapes, t.bfloat16, t.bfloat16, True)
    rows = [[m, n, k, k, k, n, a.data_ptr(), b.data_ptr(), c.data_ptr()]
            for (m, n, k), a, b, c in zip(shapes, As, Bs, Cs, strict=True)]
    table = t.tensor(rows, dtype=t.int64, device="cuda")

    def call():
        return fn(table.data_ptr(), len(shapes), work.data_ptr(), t.cuda.current_stream().cuda_stream)

    for c in Cs:
        c.fill_(float("nan"))
    assert call() == 0
    t.cuda.synchronize()
    check(As, Bs, Cs, Cs, 1.0, 0.0, TOL["bfloat16"], "plain")
    graph = t.cuda.CUDAGraph()
    with t.cuda.graph(graph):
        assert call() == 0
    for trial in range(2):
        for a in As:
            a.copy_(t.randn_like(a, dtype=t.float32).to(t.bfloat16))
        for c in Cs:
            c.fill_(float("nan"))
        graph.replay()
        t.cuda.synchronize()
        check(As, Bs, Cs, Cs, 1.0, 0.0, TOL["bfloat16"], f"replay {trial}")

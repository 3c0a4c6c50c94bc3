"""Concurrent groups on the GPU: every mode computes what the GEMMs compute one by one (float64 references,
NaN-poisoned outputs, odd sizes, mixed layouts), also replayed from a CUDA graph; GO-kernel tuning under green
contexts; the runtime refuses dependent GEMMs."""

from __future__ import annotations

import pytest

import gemmc
from gemmc.errors import GemmcError
from tests.gpu.helpers import run_group_driver

pytestmark = pytest.mark.gpu

MIXED = """
group g {
  concurrency auto
  gemm a 97 x 131 x 251
  gemm b 1 x 7 x 3 { layout A col }
  gemm c 300 x 5 x 17 { layout B col, C col }
  gemm d 130 x 129 x 128 copies 3 { beta -0.5 alpha 1.5 }
  gemm e 257 x 63 x 31 { dtype f64 }
}
"""
SAME = "group s { gemm a 97 x 131 x 251 gemm b 1 x 7 x 3 gemm c 300 x 5 x 17 copies 2 gemm d 196 x 192 x 192 }"
# exact f32 by three tf32 products (the tensorcore family): a pre-pass splits A and B into scratch, which copies of
# one GEMM running at once on two streams must not share
SPLIT = "group p { precision split tf32 x3 gemm a 300 x 200 x 500 copies 2 gemm b 97 x 131 x 251 { layout A col } }"


def operands(group, seed=0):
    import cupy as cp

    rng = cp.random.default_rng(seed)
    As, Bs, Cs, C0 = [], [], [], []
    for k in group.members:
        ir, p = k.ir, k.ir.problems[0]
        dt = cp.float64 if ir.dtype.value == "f64" else cp.float32

        def make(rows, cols, layout, dt=dt):
            x = rng.standard_normal((rows, cols) if layout == "row" else (cols, rows)).astype(dt)
            return x if layout == "row" else x.T

        As.append(make(p.m, p.k, ir.layout_a.value))
        Bs.append(make(p.k, p.n, ir.layout_b.value))
        c0 = make(p.m, p.n, ir.layout_c.value)
        C0.append(c0.copy(order="C" if ir.layout_c.value == "row" else "F"))
        Cs.append(c0)
    return As, Bs, Cs, C0


def check(group, run, seed=0):
    """Poison the outputs whose beta is 0, run, compare each GEMM with float64."""
    import cupy as cp

    As, Bs, Cs, C0 = operands(group, seed)
    for k, c, c0 in zip(group.members, Cs, C0, strict=True):
        if k.ir.beta == 0:
            c.fill(cp.nan)
        else:
            c[...] = c0
    run(As, Bs, Cs)
    cp.cuda.Device().synchronize()
    for k, a, b, c, c0 in zip(group.members, As, Bs, Cs, C0, strict=True):
        ref = k.ir.alpha * (a.astype(cp.float64) @ b.astype(cp.float64)) + k.ir.beta * c0.astype(cp.float64)
        err = float(cp.linalg.norm(c.astype(cp.float64) - ref) / cp.linalg.norm(ref))
        assert err < (1e-12 if k.ir.dtype.value == "f64" else 1e-5), (k.name, err)


def modes(group):
    out = [("as planned", group), ("sequential", group.with_mode("sequential"))]
    for d in (2, 4, 16):
        out.append((f"streams {d}", group.with_mode("streams", d)))
        out.append((f"isolated streams {d}", group.with_mode("streams", d, kernels="isolated")))
    if group.group_plan.fused is not None:
        out.append(("fused", group.with_mode("fused")))
    return out


@pytest.mark.parametrize("text", [MIXED, SAME, SPLIT], ids=["mixed", "same", "split"])
def test_every_mode_matches_one_by_one(text):
    group = next(iter(gemmc.compile_string(text).groups))
    for seed, (_, g) in enumerate(modes(group)):
        check(g, lambda As, Bs, Cs, g=g: g(As, Bs, Cs), seed=seed)


def test_fused_is_one_launch_and_correct():
    group = gemmc.compile_string(SAME).groups[0]
    assert group.group_plan.fused is not None
    fused = group.with_mode("fused")
    check(fused, lambda As, Bs, Cs: fused(As, Bs, Cs), seed=3)


@pytest.mark.parametrize("mode, text", [("sequential", SAME), ("streams", SAME), ("fused", SAME),
                                        ("sequential", SPLIT), ("streams", SPLIT)])
def test_graph_capture_replays_every_mode(mode, text):
    import cupy as cp

    group = gemmc.compile_string(text).groups[0].with_mode(mode, 4)
    As, Bs, Cs, _ = operands(group, seed=5)
    group(As, Bs, Cs)  # the first call compiles and uploads outside the capture
    cp.cuda.Device().synchronize()
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        group(As, Bs, Cs)
        graph = stream.end_capture()

    def replay(As_, Bs_, Cs_):
        assert all(x is y for x, y in zip(Cs_, Cs, strict=True))
        graph.launch(stream=stream)
        stream.synchronize()

    for c in Cs:
        c.fill(cp.nan)
    cp.cuda.Device().synchronize()  # the fills ran on the default stream, which the non-blocking one does not wait for
    replay(As, Bs, Cs)
    for k, a, b, c in zip(group.members, As, Bs, Cs, strict=True):
        ref = a.astype(cp.float64) @ b.astype(cp.float64)
        assert float(cp.linalg.norm(c - ref) / cp.linalg.norm(ref)) < 1e-5, k.name


def test_go_tuning_under_green_contexts(monkeypatch):
    monkeypatch.setenv("GEMMC_TUNE", "1")
    from gemmc.runtime.green import partitions

    parts = partitions()
    group = gemmc.compile_string("group t { gemm a 512 x 256 x 384 copies 4 }").groups[0].with_mode("streams", 4)
    check(group, lambda As, Bs, Cs: group(As, Bs, Cs), seed=7)
    tuning = group.tuning["t_a_0"]
    assert set(tuning.chosen) == {1, 2, 4, 8, 16}
    assert all(tuning.speedup(d) > 0 for d in (2, 4, 8, 16))
    print(tuning)
    assert "GO-kernels on" in group.plan  # the measured choices join the plan text
    assert parts.streams, parts.how  # the SM partitions the RC step needs
    assert tuning.alone.keys() == {1, 2, 4}
    assert tuning.operands == 16  # the group's 4 operand pairs and 12 copies of them: each copy reads its own


def test_go_tuning_copies_read_operands_of_their_own():
    """Each of a degree's copies reads its own A and B: the call's, then device copies of them, byte for byte."""
    import cupy as cp

    from gemmc.runtime.args import describe
    from gemmc.runtime.concurrent import own_operands, span

    # views with gaps between their lines (the copy spans them whole) and a transposed one
    arrays = [cp.random.standard_normal((37, 80), dtype=cp.float32)[:, 3:56] for _ in range(2)]
    arrays.append(cp.random.standard_normal((53, 37), dtype=cp.float32).T)
    infos = [describe(a, "As", i) for i, a in enumerate(arrays)]
    held: list = []
    cp.cuda.Device().synchronize()  # the arrays were written on another stream than the copies' (as a call's are not)
    stream = cp.cuda.Stream(non_blocking=True)
    ptrs = own_operands(infos, 16, held, stream)
    stream.synchronize()
    assert len(set(ptrs)) == 16 and ptrs[:3] == [i.ptr for i in infos] and len(held) == 13
    for c, ptr in enumerate(ptrs):
        lo, hi = span(infos[c % 3])
        got = cp.ndarray((hi - lo,), cp.uint8, cp.cuda.MemoryPointer(cp.cuda.UnownedMemory(ptr, hi - lo, held), 0))
        want = cp.ndarray((hi - lo,), cp.uint8, cp.cuda.MemoryPointer(cp.cuda.UnownedMemory(lo, hi - lo, arrays), 0))
        assert bool((got == want).all()), c


def test_dependent_gemms_are_refused():
    import cupy as cp

    group = gemmc.compile_string("group t { gemm a 64 x 64 x 64 gemm b 64 x 64 x 64 }").groups[0]
    x = [cp.ones((64, 64), dtype=cp.float32) for _ in range(4)]
    with pytest.raises(GemmcError, match="overlaps"):
        group([x[0], x[1]], [x[2], x[2]], [x[3], x[0]])  # b writes a's A


def test_cpp_group_launcher_runs_captured_in_a_graph(tmp_path):
    """`gemmc compile`'s group launcher, built with nvcc, forks and joins inside a CUDA graph capture and computes
    every GEMM (NaN-poisoned outputs, float64 host reference)."""
    shapes = [(100, 64, 48, "row", "row"), (100, 64, 48, "row", "row"), (37, 29, 61, "col", "row"),
              (53, 17, 9, "row", "col")]
    run_group_driver(tmp_path, "f32", shapes, "streams 2", ["-arch=sm_90"], [])


def test_cpp_fused_group_launcher_runs_captured_in_a_graph(tmp_path):
    """The fused group's launcher (one SIMT launch, no side streams): run and replayed from a graph."""
    shapes = [(100, 64, 48, "row", "row"), (37, 29, 61, "row", "row"), (53, 17, 9, "row", "row")]
    run_group_driver(tmp_path, "f32", shapes, "fused", ["-arch=sm_90"], [])


def test_calling_convention_is_checked_before_any_launch():
    group = gemmc.compile_string("group g { gemm a 8 x 8 x 8 gemm b 8 x 8 x 8 }").groups[0]
    with pytest.raises(GemmcError, match="expected a list of 2 arrays"):
        group([1], [2], [3])

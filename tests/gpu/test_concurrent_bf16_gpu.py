"""Concurrent groups of bf16 GEMMs on the GPU (the hopper family's kernels): every mode computes what the GEMMs
compute one by one, against float64 on the rounded inputs with an error bound that grows with K, on NaN-poisoned
outputs; odd sizes whose operands TMA cannot read in place (staged, also for copies of one GEMM running at once on
two streams), a member in f32 beside them, the GO-kernels' capped persistent grids, a CUDA graph capture, the
GO-kernel tuning under green contexts, auto's first call timing its way against sequential (then captured), the
fused mode (one grouped list launch on the tensor cores; captured too), and the C++ launchers built with nvcc and
replayed from a graph."""

from __future__ import annotations

import gc
import time

import pytest

import gemmc
from tests.gpu.helpers import UNIT, run_group_driver

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


MIXED = """
group g {
  concurrency auto
  dtype bf16
  gemm a 256 x 384 x 192
  gemm b 97 x 131 x 251 copies 2 { layout A col }
  gemm c 300 x 259 x 1000 { layout B col, C col }
  gemm d 130 x 129 x 129 { dtype A bf16, B bf16, C f32 beta -0.5 alpha 1.5 }
  gemm e 1 x 7 x 13
  gemm f 100 x 64 x 48 { dtype f32 }
}
"""
SAME = "group s { dtype bf16 gemm p 512 x 256 x 1000 copies 4 gemm q 257 x 63 x 31 copies 2 }"


def bound(c_type: str, k: int) -> float:
    """C rounded once to its type, plus f32 accumulation over k products (each exact in f32): linear in k."""
    return UNIT[c_type] + 2 * k * 2.0 ** -24


def operands(group, seed=0):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    As, Bs, Cs, C0 = [], [], [], []
    for k in group.members:
        ir, p = k.ir, k.ir.problems[0]

        def make(rows, cols, layout, dtype):
            t = getattr(torch, {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}[dtype])
            x = (torch.rand(rows, cols, generator=gen, device="cuda", dtype=torch.float64) * 2 - 1).to(t)
            return x if layout == "row" else x.t().contiguous().t()

        As.append(make(p.m, p.k, ir.layout_a.value, ir.dtype.value))
        Bs.append(make(p.k, p.n, ir.layout_b.value, ir.dtype.value))
        c0 = make(p.m, p.n, ir.layout_c.value, ir.c_dtype.value)
        C0.append(c0.clone())
        Cs.append(c0)
    return As, Bs, Cs, C0


def check(group, run, seed=0):
    As, Bs, Cs, C0 = operands(group, seed)
    for k, c, c0 in zip(group.members, Cs, C0, strict=True):
        if k.ir.beta == 0:
            c.fill_(float("nan"))
        else:
            c.copy_(c0)
    run(As, Bs, Cs)
    torch.cuda.synchronize()
    for k, a, b, c, c0 in zip(group.members, As, Bs, Cs, C0, strict=True):
        ref = k.ir.alpha * (a.double() @ b.double()) + k.ir.beta * c0.double()
        out = c.double()
        assert bool(torch.isfinite(out).all()), f"{k.name}: outputs not written"
        err = float((out - ref).norm() / ref.norm())
        limit = 1e-5 if k.ir.dtype.value == "f32" else bound(k.ir.c_dtype.value, k.ir.problems[0].k)
        assert err < limit, (k.name, err, limit)


def modes(group):
    out = [("as planned", group), ("sequential", group.with_mode("sequential"))]
    for d in (2, 4, 8):
        out.append((f"streams {d}", group.with_mode("streams", d)))
        out.append((f"isolated streams {d}", group.with_mode("streams", d, kernels="isolated")))
    return out


@pytest.mark.parametrize("text", [MIXED, SAME], ids=["mixed", "same"])
def test_every_mode_matches_one_by_one(text):
    group = next(iter(gemmc.compile_string(text).groups))
    assert group.group_plan.fused is None  # mixed layouts and dtypes, lines TMA cannot read: no one launch
    for seed, (_, g) in enumerate(modes(group)):
        check(g, lambda As, Bs, Cs, g=g: g(As, Bs, Cs), seed=seed)


# members one grouped list launch can take (A and C row-major, lines of 16-byte multiples), of odd M and N, one of a
# single 64-row tile and one over many tiles, with copies
FUSED = ("group u { dtype bf16 layout B col gemm a 1000 x 264 x 136 gemm b 37 x 8 x 8 gemm c 129 x 1032 x 520 copies 3 "
         "gemm d 4096 x 128 x 1024 gemm e 100 x 77 x 64 }")  # e: C lines of 154 bytes, stored from the accumulators
WIDE = "group w { dtype bf16 gemm a 512 x 1024 x 1024 copies 16 }"  # tile N 256 by the waves model


@pytest.mark.parametrize("case", ["bf16", "f32", "wide"])
def test_fused_is_one_grouped_list_launch_matching_one_by_one(case):
    text = {"bf16": FUSED, "f32": FUSED.replace("dtype bf16", "dtype A bf16, B bf16, C f32"), "wide": WIDE}[case]
    group = gemmc.compile_string(text).groups[0]
    fused = group.with_mode("fused")
    assert fused.group_plan.fused is not None and fused.group_plan.fused.family == "hopper_grouped"
    assert fused.group_plan.fused.plan.bn == (256 if case == "wide" else 128)
    for seed in (1, 2):
        check(fused, lambda As, Bs, Cs: fused(As, Bs, Cs), seed=seed)
    assert fused.group_run.fused.dynamic.fallback is None  # every member's lines TMA reads: all on the tensor cores


def test_fused_refuses_an_array_of_another_shape_before_launching():
    """Two members' operands swapped: each A, B, C is a consistent problem the list kernel would compute, but not
    the member's own; the call is refused by name before anything is written."""
    group = gemmc.compile_string(FUSED).groups[0].with_mode("fused")
    As, Bs, Cs, _ = operands(group)
    for arrays in (As, Bs, Cs):
        arrays[0], arrays[1] = arrays[1], arrays[0]
    for c in Cs:
        c.fill_(float("nan"))
    with pytest.raises(gemmc.GemmcError, match=r"As\[0\]: expected shape \(1000, 136\)"):
        group(As, Bs, Cs)
    torch.cuda.synchronize()
    assert all(bool(c.isnan().all()) for c in Cs)


def test_fused_is_captured_and_replayed_in_a_graph():
    group = gemmc.compile_string(FUSED).groups[0].with_mode("fused")
    As, Bs, Cs, _ = operands(group, seed=3)
    group(As, Bs, Cs)  # the first call loads the kernel and encodes its template maps outside the capture
    replayed(group, As, Bs, Cs, new_data=True)


def test_auto_times_fused_on_the_first_call(monkeypatch):
    """An auto group whose members allow one launch times it on its first call beside the plan's way."""
    from gemmc.runtime.group_floor import ways

    monkeypatch.setenv("GEMMC_TUNE", "1")
    group = gemmc.compile_string("group v { concurrency auto dtype bf16 gemm a 1024 x 128 x 768 copies 4 "
                                 "gemm b 304 x 256 x 1000 }").groups[0]
    assert group.group_plan.fused is not None
    check(group, lambda As, Bs, Cs: group(As, Bs, Cs), seed=21)
    confirmed = group.group_run.confirmed
    assert confirmed is not None and "fused" in confirmed.seconds
    assert "fused" in {w.label for w in ways(group.group_run)}
    print(confirmed)


def test_fused_is_captured_after_auto_timed_it_from_a_graph(monkeypatch):
    """auto's first call times the fused launch from a CUDA graph (group_floor.confirm) and gives that graph's capture
    buffers back once it is gone; a later capture of the fused launch takes them again, without waiting for a table
    slot the timing call kept, and its replay computes every GEMM."""
    import threading

    monkeypatch.setenv("GEMMC_TUNE", "1")
    group = gemmc.compile_string("group v { concurrency auto dtype bf16 gemm a 1024 x 128 x 768 copies 4 "
                                 "gemm b 304 x 256 x 1000 }").groups[0]
    As, Bs, Cs, _ = operands(group, seed=23)
    group(As, Bs, Cs)
    confirmed = group.group_run.confirmed
    assert confirmed is not None and "fused" in confirmed.seconds and not confirmed.cached
    fused = group.with_mode("fused")
    gc.collect()
    st = fused.group_run.fused.dynamic
    for _ in range(200):  # the driver runs a destroyed graph's user-object destructors on a thread of its own
        if st.captures_held == 0:
            break
        time.sleep(0.01)
    assert st.captures_held == 0  # the timing graph's reservation, given back once the graph is gone
    failed: list[BaseException] = []

    def capture() -> None:
        try:
            replayed(fused, As, Bs, Cs, new_data=True)
        except BaseException as e:  # noqa: BLE001 - reported below
            failed.append(e)

    worker = threading.Thread(target=capture, daemon=True)
    worker.start()
    worker.join(120)
    assert not worker.is_alive(), "the capture waits for the timing call's table slot"
    assert not failed, failed


def test_go_kernels_keep_to_their_share_of_the_sms():
    """A member's kernel for 1/2 or 1/4 of the SMs launches a persistent grid of at most that many blocks."""
    from gemmc.runtime.device import hardware

    group = gemmc.compile_string(SAME).groups[0]
    sms = hardware().sm_count
    for share in (2, 4):
        k = group.group_plan.share_kernel(group.members[0].name, share)
        assert k is not None and k.plan.sm_cap == sms // share
        p = k.problems[0]
        assert k.plan.grid(p.m, p.n, sms) <= sms // share


def replayed(group, As, Bs, Cs, new_data: bool = False) -> None:
    """One call of the group captured in a CUDA graph on a CuPy stream, replayed on NaN-poisoned outputs (`new_data`:
    after negating every A in place, which the replay must read), every GEMM against float64."""
    import cupy as cp

    cp.cuda.Device().synchronize()
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        group(As, Bs, Cs, stream=stream)  # torch tensors launch on torch's stream unless told
        graph = stream.end_capture()
    for c in Cs:
        c.fill_(float("nan"))
    for a in As if new_data else ():
        a.mul_(-1)
    cp.cuda.Device().synchronize()  # the fills ran on torch's stream, which the non-blocking one does not wait for
    graph.launch(stream=stream)
    stream.synchronize()
    for k, a, b, c in zip(group.members, As, Bs, Cs, strict=True):
        ref = a.double() @ b.double()
        err = float((c.double() - ref).norm() / ref.norm())
        assert err < bound("bf16", k.ir.problems[0].k), (k.name, err)


@pytest.mark.parametrize("mode", ["sequential", "streams"])
def test_graph_capture_replays(mode):
    group = gemmc.compile_string(SAME).groups[0].with_mode(mode, 4)
    As, Bs, Cs, _ = operands(group, seed=5)
    group(As, Bs, Cs)  # the first call compiles, encodes the tensor maps and stages outside the capture
    replayed(group, As, Bs, Cs)


def test_go_tuning_under_green_contexts(monkeypatch):
    monkeypatch.setenv("GEMMC_TUNE", "1")
    group = gemmc.compile_string("group t { dtype bf16 gemm a 1024 x 512 x 768 copies 4 }").groups[0]
    g = group.with_mode("streams", 4)
    check(g, lambda As, Bs, Cs: g(As, Bs, Cs), seed=7)
    tuning = g.tuning["t_a_0"]
    assert set(tuning.chosen) == {1, 2, 4, 8, 16}
    assert all(tuning.speedup(d) > 0 for d in (2, 4, 8, 16))
    print(tuning)


def test_auto_confirms_its_way_on_the_first_call(monkeypatch):
    """An auto group's first call times the plan's way against sequential and the members' own kernels on streams
    (gemmc.runtime.group_floor) and keeps one; that call and a later one captured in a graph compute every GEMM. A
    group whose members read C (beta != 0) is not timed."""
    from gemmc.runtime.group_floor import ways

    monkeypatch.setenv("GEMMC_TUNE", "1")
    group = gemmc.compile_string("group t { concurrency auto dtype bf16 gemm a 1024 x 128 x 768 copies 4 "
                                 "gemm b 300 x 259 x 1000 { layout B col } }").groups[0]
    check(group, lambda As, Bs, Cs: group(As, Bs, Cs), seed=11)
    confirmed = group.group_run.confirmed
    assert confirmed is not None and confirmed.way in ways(group.group_run)
    assert set(confirmed.seconds) == {w.label for w in ways(group.group_run)}
    assert all(t > 0 for t in confirmed.seconds.values()) and "auto: measured on the first call" in group.plan
    print(confirmed)
    As, Bs, Cs, _ = operands(group, seed=12)
    replayed(group, As, Bs, Cs)
    reads = gemmc.compile_string("group r { concurrency auto dtype bf16 beta 1.0 gemm a 512 x 256 x 1000 copies 2 "
                                 "}").groups[0]
    check(reads, lambda As, Bs, Cs: reads(As, Bs, Cs), seed=13)
    assert reads.group_run.confirmed is None


def test_cpp_group_launcher_runs_captured_in_a_graph(tmp_path):
    """`gemmc compile`'s group launcher with hopper members (tensor maps encoded on the host, staging for an odd
    K), built with nvcc, forks and joins inside a CUDA graph capture and computes every GEMM."""
    shapes = [(256, 192, 128, "row", "row"), (256, 192, 128, "row", "row"), (97, 131, 251, "col", "row"),
              (130, 64, 37, "row", "col")]
    run_group_driver(tmp_path, "bf16", shapes, "streams 2", ["-gencode=arch=compute_90a,code=sm_90a"], ["-lcuda"])


def test_cpp_fused_group_launcher_runs_captured_in_a_graph(tmp_path):
    """The fused group's C++ (one grouped list launch, its problem table filled per call on the device), built with
    nvcc, run and replayed from a graph."""
    shapes = [(256, 192, 128, "row", "col"), (97, 136, 264, "row", "col"), (1000, 8, 520, "row", "col")]
    run_group_driver(tmp_path, "bf16", shapes, "fused", ["-gencode=arch=compute_90a,code=sm_90a"], ["-lcuda"])

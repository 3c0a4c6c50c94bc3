"""Concurrent groups on the GPU: every mode computes what the GEMMs compute one by one (float64 references,
NaN-poisoned outputs, odd sizes, mixed layouts), also replayed from a CUDA graph; GO-kernel tuning under green
contexts; the runtime refuses dependent GEMMs."""

from __future__ import annotations

import pytest

import gemmc
from gemmc.errors import GemmcError

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


def test_dependent_gemms_are_refused():
    import cupy as cp

    group = gemmc.compile_string("group t { gemm a 64 x 64 x 64 gemm b 64 x 64 x 64 }").groups[0]
    x = [cp.ones((64, 64), dtype=cp.float32) for _ in range(4)]
    with pytest.raises(GemmcError, match="overlaps"):
        group([x[0], x[1]], [x[2], x[2]], [x[3], x[0]])  # b writes a's A


CPP_MAIN = r"""
#include <cmath>
#include <cstdio>
#include <cuda_runtime.h>
#include <vector>
#include "pair.h"

// Row-major or column-major element (r, c) of a rows x cols matrix.
static size_t at(bool col, int rows, int cols, int r, int c) {
  return col ? (size_t)c * rows + r : (size_t)r * cols + c;
}

int main() {
  const int G = %(count)d;
  const int M[] = {%(m)s}, N[] = {%(n)s}, K[] = {%(k)s};
  const bool colA[] = {%(ca)s}, colB[] = {%(cb)s};
  std::vector<std::vector<float>> a(G), b(G);
  const void* A[G]; const void* B[G]; void* C[G];
  unsigned seed = 12345;
  auto rnd = [&] { seed = seed * 1664525u + 1013904223u; return (float)((seed >> 8) %% 2001) / 1000.0f - 1.0f; };
  for (int g = 0; g < G; ++g) {
    a[g].resize((size_t)M[g] * K[g]); b[g].resize((size_t)K[g] * N[g]);
    for (auto& x : a[g]) x = rnd();
    for (auto& x : b[g]) x = rnd();
    void *da, *db, *dc;
    cudaMalloc(&da, a[g].size() * 4); cudaMalloc(&db, b[g].size() * 4); cudaMalloc(&dc, (size_t)M[g] * N[g] * 4);
    cudaMemcpy(da, a[g].data(), a[g].size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(db, b[g].data(), b[g].size() * 4, cudaMemcpyHostToDevice);
    cudaMemset(dc, 0xff, (size_t)M[g] * N[g] * 4);  // NaN: every output must be written
    A[g] = da; B[g] = db; C[g] = dc;
  }
  cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (gemmc_pair_prepare() != cudaSuccess) { std::printf("prepare failed\n"); return 2; }
  cudaGraph_t graph; cudaGraphExec_t exec;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  cudaError_t err = gemmc_pair(A, B, C, s);
  cudaError_t cap = cudaStreamEndCapture(s, &graph);
  if (err != cudaSuccess || cap != cudaSuccess) {
    std::printf("capture failed: %%s / %%s\n", cudaGetErrorString(err), cudaGetErrorString(cap)); return 3; }
  if (cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) { std::printf("instantiate failed\n"); return 4; }
  cudaGraphLaunch(exec, s);
  if (cudaStreamSynchronize(s) != cudaSuccess) { std::printf("replay failed\n"); return 5; }
  double worst = 0;
  for (int g = 0; g < G; ++g) {
    std::vector<float> c((size_t)M[g] * N[g]);
    cudaMemcpy(c.data(), C[g], c.size() * 4, cudaMemcpyDeviceToHost);
    double num = 0, den = 0;
    for (int i = 0; i < M[g]; ++i)
      for (int j = 0; j < N[g]; ++j) {
        double ref = 0;
        for (int p = 0; p < K[g]; ++p)
          ref += (double)a[g][at(colA[g], M[g], K[g], i, p)] * b[g][at(colB[g], K[g], N[g], p, j)];
        double d = c[(size_t)i * N[g] + j] - ref;
        num += d * d; den += ref * ref;
      }
    double e = std::sqrt(num / den);
    if (!(e == e)) e = 1e30;
    if (e > worst) worst = e;
  }
  std::printf("%%.3e\n", worst);
  return worst < 1e-5 ? 0 : 1;
}
"""


def test_cpp_group_launcher_runs_captured_in_a_graph(tmp_path):
    """`gemmc compile`'s group launcher, built with nvcc, forks and joins inside a CUDA graph capture and computes
    every GEMM (NaN-poisoned outputs, float64 host reference)."""
    import shutil
    import subprocess

    from gemmc.cli import main

    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not installed")
    shapes = [(100, 64, 48, "row", "row"), (100, 64, 48, "row", "row"), (37, 29, 61, "col", "row"),
              (53, 17, 9, "row", "col")]
    members = " ".join(f"gemm m{i} {m} x {n} x {k} {{ layout A {la}, B {lb} }}"
                       for i, (m, n, k, la, lb) in enumerate(shapes))
    (tmp_path / "g.gs").write_text(f"group pair {{ concurrency streams 2 {members} }}")
    assert main(["compile", str(tmp_path / "g.gs"), "-o", str(tmp_path), "--kernel", "pair"]) == 0
    def column(i: int) -> str:
        return ", ".join(str(s[i]) if i < 3 else "true" if s[i] == "col" else "false" for s in shapes)

    (tmp_path / "main.cu").write_text(CPP_MAIN % {"count": len(shapes), "m": column(0), "n": column(1),
                                                  "k": column(2), "ca": column(3), "cb": column(4)})
    build = subprocess.run([nvcc, "-arch=sm_90", "-std=c++17", "-I", str(tmp_path), str(tmp_path / "main.cu"),
                            str(tmp_path / "pair.cu"), "-o", str(tmp_path / "pair")], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-4000:]
    run = subprocess.run([str(tmp_path / "pair")], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_calling_convention_is_checked_before_any_launch():
    group = gemmc.compile_string("group g { gemm a 8 x 8 x 8 gemm b 8 x 8 x 8 }").groups[0]
    with pytest.raises(GemmcError, match="expected a list of 2 arrays"):
        group([1], [2], [3])

"""Hopper family on the GPU: bf16 and f16 storage against float64 on the rounded inputs, with an error bound that
grows with K; odd sizes (1, primes, non-multiples of every tile), every layout, NaN-poisoned C, beta != 0, C in the
storage type or f32, both epilogues (TMA stores through shared memory; direct stores, forced or for a C that TMA
cannot describe), inputs TMA cannot read in place (staged), inf/NaN propagating as cuBLAS does, CuPy float16 arrays,
and the standalone C++ launcher built with nvcc and run."""

from __future__ import annotations

import dataclasses
import math
import shutil
import subprocess

import pytest

import gemmc
from tests.gpu.helpers import layout_line

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

UNIT = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11, "f32": 2.0 ** -24}  # unit roundoff of round-to-nearest
TORCH = {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}

# Problem sizes a kernel is re-planned for (CompiledKernel.plan_for): 1, primes, non-multiples of 8, 64, 128, 256.
ODD = [(1, 1, 1), (1, 7, 13), (13, 1, 5), (97, 13, 251), (130, 131, 129), (257, 63, 31), (300, 259, 1000)]


def bound(c_type: str, k: int) -> float:
    """C rounded once to its type, plus f32 accumulation over k products (each exact in f32): linear in k."""
    return UNIT[c_type] + 2 * k * 2.0 ** -24


def matrix(rows: int, cols: int, layout: str, dtype: str, gen) -> torch.Tensor:
    x = (torch.rand(rows, cols, generator=gen, device="cuda", dtype=torch.float64) * 2 - 1).to(getattr(torch, dtype))
    return x if layout == "r" else x.t().contiguous().t()


def run(kernel, m: int, n: int, k: int, layouts: str, alpha: float, beta: float, seed: int = 0,
        a=None) -> tuple[float, torch.Tensor]:
    """One call on fresh inputs (C NaN-poisoned where beta == 0): the relative Frobenius error against float64
    and the output."""
    ir = kernel.ir
    gen = torch.Generator(device="cuda").manual_seed(seed)
    A = a if a is not None else matrix(m, k, layouts[0], TORCH[ir.dtype.value], gen)
    B = matrix(k, n, layouts[1], TORCH[ir.dtype.value], gen)
    C = matrix(m, n, layouts[2], TORCH[ir.c_dtype.value], gen)
    if beta == 0:
        C.fill_(float("nan"))
    ref = alpha * (A.double() @ B.double()) + (beta * C.double() if beta != 0 else 0)
    kernel([A], [B], [C], alpha=alpha, beta=beta)
    torch.cuda.synchronize()
    out = C.double()
    assert bool(torch.isfinite(out).all()), f"{m}x{n}x{k}: {int((~torch.isfinite(out)).sum())} outputs not finite"
    return float((out - ref).norm() / ref.norm()), C


def compile_kernel(dtype: str, layouts: str, c_type: str | None = None, extra: str = "", size: str = "1 x 1 x 1"):
    dtypes = dtype if c_type is None else f"A {dtype}, B {dtype}, C {c_type}"
    text = f"kernel k {{ dtype {dtypes} {layout_line(layouts)} alpha runtime beta runtime {extra} gemm {size} }}"
    return gemmc.compile_string(text)["k"]


@pytest.mark.parametrize(("dtype", "layouts", "c_type"), [
    ("bf16", "rrr", None), ("bf16", "ccc", None), ("bf16", "rcr", None), ("bf16", "crc", None),
    ("f16", "rrr", None), ("f16", "crc", None), ("bf16", "rrr", "f32"), ("f16", "ccc", "f32")])
def test_odd_sizes(dtype, layouts, c_type):
    kernel = compile_kernel(dtype, layouts, c_type)
    for i, (m, n, k) in enumerate(ODD):
        beta = -0.5 if i % 2 else 0.0
        err, _ = run(kernel.plan_for([(m, n, k)]) if (m, n, k) != (1, 1, 1) else kernel, m, n, k, layouts, 1.5, beta,
                     seed=i)
        assert err < bound(c_type or dtype, k), f"{m}x{n}x{k} beta {beta}: relative error {err:.3e}"


@pytest.mark.parametrize("layouts", ["rrr", "ccc"])
@pytest.mark.parametrize("cluster", [1, 2])
def test_both_cluster_sizes(cluster, layouts):
    """Each block alone, and pairs sharing B by multicast, whatever the planner picks for the size: odd sizes, one
    m-tile (the pair's second block computes nothing), staged operands, several tiles per block."""
    base = compile_kernel("bf16", layouts)
    for i, (m, n, k) in enumerate([*ODD[3:], (1000, 3000, 2001)]):
        planned = base.plan_for([(m, n, k)])
        plan = planned.ir.plan
        kern = planned.with_plan(dataclasses.replace(plan, cluster=cluster, band=max(1, 16 // cluster)))
        err, _ = run(kern, m, n, k, layouts, 1.0, 0.25 if i % 2 else 0.0, seed=10 + i)
        assert err < bound("bf16", k), f"{m}x{n}x{k}: relative error {err:.3e}"


@pytest.mark.parametrize(("dtype", "layouts", "c_type", "size"), [
    ("bf16", "rrr", None, (3900, 3000, 2000)),  # 128 x 256 tiles, clusters of 2, an odd m-tile count, K % 64 != 0
    ("bf16", "rrr", None, (3900, 3000, 2001)),  # A's lines are 4002 bytes: staged
    ("f16", "rcr", "f32", (3900, 3000, 2000)),
    ("bf16", "crc", None, (2055, 4100, 1000)),
    ("f16", "rrr", None, (4096, 4096, 4096))])
def test_large(dtype, layouts, c_type, size):
    m, n, k = size
    kernel = compile_kernel(dtype, layouts, c_type, size=f"{m} x {n} x {k}")
    for beta, seed in ((0.0, 1), (0.75, 2)):
        err, _ = run(kernel, m, n, k, layouts, 1.0, beta, seed=seed)
        assert err < bound(c_type or dtype, k), f"beta {beta}: relative error {err:.3e}"


# Sizes whose C rows are 16-byte multiples (N a multiple of 8), so the epilogue TMA-stores C: odd M, N short of
# every tile width, K not a multiple of 64, one row.
ALIGNED_C = [(1, 8, 13), (97, 136, 251), (130, 264, 129), (257, 72, 31), (300, 520, 1000), (1000, 3000, 2001)]


@pytest.mark.parametrize(("dtype", "c_type"), [("bf16", None), ("f16", None), ("bf16", "f32"), ("f16", "f32")])
@pytest.mark.parametrize("tma_store", [True, False])
def test_both_epilogues(dtype, c_type, tma_store):
    """The TMA-store epilogue (C through shared memory, clipped at M and N by TMA's bounds) and the direct stores,
    forced on the same sizes, beta 0 on NaN-poisoned C and beta != 0."""
    base = compile_kernel(dtype, "rrr", c_type)
    for i, (m, n, k) in enumerate(ALIGNED_C):
        planned = base.plan_for([(m, n, k)])
        assert planned.ir.plan.tma_store
        kern = planned if tma_store else planned.with_plan(dataclasses.replace(planned.ir.plan, tma_store=False))
        err, _ = run(kern, m, n, k, "rrr", 1.25, 0.5 if i % 2 else 0.0, seed=20 + i)
        assert err < bound(c_type or dtype, k), f"{m}x{n}x{k}: relative error {err:.3e}"


@pytest.mark.parametrize("cluster", [1, 2])
def test_tma_store_every_tile_and_cluster(cluster):
    """Every tile N and both cluster sizes through the TMA-store epilogue, several tiles per block."""
    m, n, k = 1100, 2056, 300
    for bn in (256, 192, 128, 64):
        kernel = compile_kernel("bf16", "rrr", extra=f"tile 128x{bn}x64", size=f"{m} x {n} x {k}")
        plan = kernel.ir.plan
        kern = kernel.with_plan(dataclasses.replace(plan, cluster=cluster, band=max(1, 16 // cluster)))
        for beta, seed in ((0.0, bn), (-1.5, bn + 1)):
            err, _ = run(kern, m, n, k, "rrr", 1.0, beta, seed=seed)
            assert err < bound("bf16", k), f"tile N {bn} beta {beta}: relative error {err:.3e}"


@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_misaligned_c_is_stored_directly(beta):
    """A C view 8 bytes into its allocation: TMA cannot store it, so the kernel writes it from the accumulators;
    the elements before the view stay as they were."""
    m, n, k = 200, 136, 96
    kernel = compile_kernel("bf16", "rrr", size=f"{m} x {n} x {k}")
    gen = torch.Generator(device="cuda").manual_seed(7)
    A, B = matrix(m, k, "r", "bfloat16", gen), matrix(k, n, "r", "bfloat16", gen)
    base = matrix(1, m * n + 4, "r", "bfloat16", gen)
    C = base[0, 4:].view(m, n)
    assert C.data_ptr() % 16 != 0
    before = base[0, :4].clone()
    if beta == 0:
        C.fill_(float("nan"))
    ref = A.double() @ B.double() + (beta * C.double() if beta else 0)
    kernel([A], [B], [C], alpha=1.0, beta=beta)
    torch.cuda.synchronize()
    assert torch.equal(base[0, :4], before)
    assert float((C.double() - ref).norm() / ref.norm()) < bound("bf16", k)


@pytest.mark.parametrize("tile", ["128x256x64", "128x192x64", "128x128x64"])
def test_every_tile_on_odd_sizes(tile):
    kernel = compile_kernel("bf16", "rrr", extra=f"tile {tile}", size="300 x 259 x 1000")
    assert kernel.ir.plan.bn == int(tile.split("x")[1])
    err, _ = run(kernel, 300, 259, 1000, "rrr", 1.0, 0.0)
    assert err < bound("bf16", 1000), f"relative error {err:.3e}"


def test_misaligned_view_is_staged():
    """A view that starts 2 bytes into its allocation: TMA cannot read it in place; the launch copies it first."""
    m, n, k = 200, 136, 96
    kernel = compile_kernel("bf16", "rrr", size=f"{m} x {n} x {k}")
    gen = torch.Generator(device="cuda").manual_seed(5)
    base = matrix(1, m * k + 1, "r", "bfloat16", gen)
    a = base[0, 1:].view(m, k)
    assert a.data_ptr() % 16 != 0
    err, _ = run(kernel, m, n, k, "rrr", 1.0, 0.0, a=a)
    assert err < bound("bf16", k)


def test_nonfinite_inputs_propagate_as_cublas():
    m, n, k = 300, 264, 200
    kernel = gemmc.compile_string(f"kernel k {{ dtype bf16 gemm {m} x {n} x {k} }}")["k"]
    A = torch.randn(m, k, device="cuda").bfloat16()
    B = torch.randn(k, n, device="cuda").bfloat16()
    A[3, 5] = float("nan")
    B[7, 2] = float("inf")
    A[10, 7] = 0.0  # 0 * inf = NaN at (10, 2)
    C = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    kernel([A], [B], [C])
    ref = torch.mm(A, B)
    assert torch.equal(torch.isnan(C), torch.isnan(ref))
    assert torch.equal(torch.isinf(C), torch.isinf(ref))


def test_cupy_float16_and_run_check():
    """CuPy float16 arrays (gemmc run --check's path), and a bf16 kernel through the same check."""
    from gemmc.runtime.check import check_kernel

    for text in ("kernel k { dtype f16 layout A col gemm 257 x 129 x 300 beta 0.5 }",
                 "kernel k { dtype A bf16, B bf16, C f32 gemm 129 x 257 x 72 }"):
        result = check_kernel(gemmc.compile_string(text)["k"], seed=3, time_it=False)
        assert result["errors"]["nonfinite"] == 0
        assert result["errors"]["rel_fro"] < 2 * UNIT["bf16"], result


HARNESS = r"""
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cmath>
#include <cstdio>
#include <vector>
#include "k.h"
int main() {
  const int M = %(m)d, N = %(n)d, K = %(k)d;
  std::vector<__nv_bfloat16> a(M * K), b(K * N), c(M * N, __float2bfloat16(NAN));
  unsigned s = 12345;
  auto next = [&] { s = s * 1664525u + 1013904223u; return (s >> 8) / 8388608.0f - 1.0f; };
  for (auto& x : a) x = __float2bfloat16(next());
  for (auto& x : b) x = __float2bfloat16(next());
  __nv_bfloat16 *dA, *dB, *dC;
  cudaMalloc(&dA, a.size() * 2); cudaMalloc(&dB, b.size() * 2); cudaMalloc(&dC, c.size() * 2);
  cudaMemcpy(dA, a.data(), a.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(dB, b.data(), b.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(dC, c.data(), c.size() * 2, cudaMemcpyHostToDevice);
  const __nv_bfloat16* A[1] = {dA};
  const __nv_bfloat16* B[1] = {dB};
  __nv_bfloat16* C[1] = {dC};
  cudaError_t err = gemmc_k(A, B, C, 0);
  if (err == cudaSuccess) err = cudaDeviceSynchronize();
  if (err != cudaSuccess) { std::printf("error %%s\n", cudaGetErrorString(err)); return 2; }
  cudaMemcpy(c.data(), dC, c.size() * 2, cudaMemcpyDeviceToHost);
  double num = 0, den = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double ref = 0;
      for (int p = 0; p < K; ++p) ref += (double)__bfloat162float(a[i * K + p]) * __bfloat162float(b[p * N + j]);
      const double d = (double)__bfloat162float(c[i * N + j]) - ref;
      num += d * d;
      den += ref * ref;
    }
  const double rel = std::sqrt(num / den);
  std::printf("relative error %%.3e\n", rel);
  return rel < %(bound)g ? 0 : 1;
}
"""


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("size", [(256, 384, 192), (130, 131, 129)])
def test_standalone_launcher_runs(size, tmp_path):
    """`gemmc compile`'s .cu and .h with a C++ driver: tensor maps from the driver API, staging, the launch."""
    m, n, k = size
    kernel = gemmc.compile_string(f"kernel k {{ dtype bf16 gemm {m} x {n} x {k} }}")["k"]
    (tmp_path / "k.cu").write_text(kernel.standalone)
    (tmp_path / "k.h").write_text(kernel.header)
    (tmp_path / "main.cu").write_text(HARNESS % {"m": m, "n": n, "k": k, "bound": bound("bf16", k)})
    build = subprocess.run(["nvcc", *kernel.rendered.build_flags, "-std=c++17", "k.cu", "main.cu", "-o", "prog",
                            "-lcuda"], cwd=tmp_path, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-3000:]
    proc = subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert math.isfinite(float(proc.stdout.split()[-1]))


@pytest.mark.parametrize("size, tile", [((2048, 2048, 2048), ""), ((1000, 1000, 1000), "tile 128x64x64"),
                                        ((700, 1400, 1400), "tile 128x128x64 ksplit 2")])
def test_dependent_calls_in_a_graph(size, tile):
    """Launches that may start while the kernel before them finishes (runtime/pdl.py), captured in one CUDA graph: a
    chain where every call reads the C the call before wrote and writes the A the call before read gives bitwise what
    the same calls give one at a time with a synchronization between them. gemmc's kernels let the next start only as
    their blocks exit, so a missing wait would hardly show here: tests/gpu/test_dependent_launch_gpu.py's late
    writers are the tests that fail without it."""
    from gemmc.runtime.streams import external_stream, torch_stream

    m, n, k = size
    kernel = gemmc.compile_string(f"kernel k {{ dtype bf16 {tile} gemm {m} x {n} x {k} }}")["k"]
    gen = torch.Generator(device="cuda").manual_seed(7)
    w = (matrix(k, n, "r", "bfloat16", gen).float() / math.sqrt(k) * 1.5).to(torch.bfloat16)
    start = matrix(m, k, "r", "bfloat16", gen)

    def chain(x0, x1, sync: bool) -> None:
        for step in range(12):
            src, dst = (x0, x1) if step % 2 == 0 else (x1, x0)
            kernel([src], [w], [dst])
            if sync:
                torch.cuda.synchronize()

    one_by_one = [start.clone(), torch.full_like(start, float("nan"))]
    chain(*one_by_one, sync=True)
    kernel([start], [w], [torch.empty_like(start)])  # compiled and planned outside the capture
    graphed = [start.clone(), torch.full_like(start, float("nan"))]
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream), external_stream(torch_stream()):
        chain(*graphed, sync=False)
    graph.replay()
    torch.cuda.synchronize()
    assert bool(torch.isfinite(one_by_one[0].float()).all())
    assert torch.equal(graphed[0], one_by_one[0]) and torch.equal(graphed[1], one_by_one[1])

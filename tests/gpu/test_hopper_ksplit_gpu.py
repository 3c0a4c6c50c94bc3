"""Split K on the hopper family's GPU path: clusters of 2-4 blocks share a tile's k-blocks and add their partial sums
in k order through distributed shared memory. Against float64 on the rounded inputs: odd sizes (1, primes, K with
fewer k-blocks than slices, so some slices are empty), every layout, NaN-poisoned C, beta != 0, f16 and bf16, C in the
storage type or f32; several tiles per cluster (a capped grid), results identical run to run, and the planner's own
choice on the few-tile shapes it splits."""

from __future__ import annotations

import pytest

import gemmc
from gemmc.families.hopper.planner import with_tile
from gemmc.ir.hardware import TARGETS
from tests.gpu.test_hopper_gpu import ODD, bound, compile_kernel, run

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

HW = TARGETS["sm_90"]


def split(kernel, m: int, n: int, k: int, bn: int, ksplit: int, cap: int = 0):
    planned = kernel.plan_for([(m, n, k)]) if (m, n, k) != (1, 1, 1) else kernel
    plan = with_tile(planned.ir, planned.ir.plan, bn, ksplit, HW)
    return planned.with_plan(plan.capped(cap) if cap else plan, f"bn{bn}ks{ksplit}")


@pytest.mark.parametrize("ksplit", [2, 3, 4])
@pytest.mark.parametrize(("dtype", "layouts", "c_type"), [
    ("bf16", "rrr", None), ("bf16", "ccc", None), ("f16", "rcr", None), ("bf16", "crc", "f32"), ("f16", "rrr", "f32")])
def test_odd_sizes(dtype, layouts, c_type, ksplit):
    kernel = compile_kernel(dtype, layouts, c_type)
    for i, (m, n, k) in enumerate([*ODD, (1000, 300, 2001)]):
        beta = -0.5 if i % 2 else 0.0
        kern = split(kernel, m, n, k, 64 if i % 2 else 128, ksplit)
        assert kern.ir.plan.ksplit == ksplit
        err, _ = run(kern, m, n, k, layouts, 1.5, beta, seed=30 + i)
        assert err < bound(c_type or dtype, k), f"{m}x{n}x{k} beta {beta}: relative error {err:.3e}"


@pytest.mark.parametrize(("ksplit", "cap"), [(2, 2), (3, 6), (4, 8)])
def test_several_tiles_per_cluster(ksplit, cap):
    """A grid of 1-2 clusters walks every tile: the partial-sum buffer's `full` and `free` phases alternate."""
    kernel = compile_kernel("bf16", "rrr")
    m, n, k = 1000, 700, 1100
    kern = split(kernel, m, n, k, 64, ksplit, cap)
    assert kern.ir.work.grid[0] == cap
    err, _ = run(kern, m, n, k, "rrr", 1.0, 0.25, seed=ksplit)
    assert err < bound("bf16", k), f"relative error {err:.3e}"


def test_same_result_every_run():
    """The slices' sums are added in k order whichever block finishes first: bitwise the same C on every call."""
    kernel = compile_kernel("bf16", "rrr")
    m, n, k = 4096, 128, 4000
    kern = split(kernel, m, n, k, 64, 3)
    _, first = run(kern, m, n, k, "rrr", 1.0, 0.0, seed=5)
    first = first.clone()
    for _ in range(5):
        _, again = run(kern, m, n, k, "rrr", 1.0, 0.0, seed=5)
        assert torch.equal(first, again)


@pytest.mark.parametrize(("size", "layouts"), [((4096, 64, 4096), "rrr"), ((4096, 128, 16384), "rcr"),
                                               ((512, 1024, 16384), "ccc")])
def test_planner_splits_few_tile_shapes(size, layouts):
    m, n, k = size
    kernel = compile_kernel("bf16", layouts, size=f"{m} x {n} x {k}")
    assert kernel.ir.plan.ksplit > 1
    for beta, seed in ((0.0, 1), (0.75, 2)):
        err, _ = run(kernel, m, n, k, layouts, 1.0, beta, seed=seed)
        assert err < bound("bf16", k), f"beta {beta}: relative error {err:.3e}"


def test_standalone_launcher_splits(tmp_path):
    """The `gemmc compile` output of a split-K kernel launches whole clusters (nvcc, run from C++)."""
    import shutil
    import subprocess

    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc")
    k = gemmc.compile_string("kernel k { dtype bf16 gemm 4096 x 64 x 4096 }")["k"]
    assert k.ir.plan.ksplit == 3
    src = tmp_path / "k.cu"
    main = tmp_path / "main.cu"
    src.write_text(k.standalone)
    main.write_text(MAIN)
    exe = tmp_path / "k"
    proc = subprocess.run(["nvcc", *k.rendered.build_flags, "-std=c++17", str(src), str(main), "-o", str(exe),
                           "-lcuda"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "ok" in out.stdout, out.stdout + out.stderr


MAIN = r"""
#include <cuda_bf16.h>
#include <cmath>
#include <cstdio>
#include <vector>
extern "C" cudaError_t gemmc_k(const __nv_bfloat16* const* A, const __nv_bfloat16* const* B, __nv_bfloat16* const* C,
                               cudaStream_t stream);
int main() {
  const int M = 4096, N = 64, K = 4096;
  std::vector<__nv_bfloat16> a(M * K), b(K * N), c(M * N);
  for (int i = 0; i < M * K; ++i) a[i] = __float2bfloat16((float)((i * 7) % 13 - 6) / 8.0f);
  for (int i = 0; i < K * N; ++i) b[i] = __float2bfloat16((float)((i * 5) % 11 - 5) / 8.0f);
  __nv_bfloat16 *da, *db, *dc;
  cudaMalloc(&da, a.size() * 2); cudaMalloc(&db, b.size() * 2); cudaMalloc(&dc, c.size() * 2);
  cudaMemcpy(da, a.data(), a.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), b.size() * 2, cudaMemcpyHostToDevice);
  cudaMemset(dc, 0xff, c.size() * 2);  // NaN
  if (gemmc_k(&da, &db, &dc, 0) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
    printf("launch\n");
    return 1;
  }
  cudaMemcpy(c.data(), dc, c.size() * 2, cudaMemcpyDeviceToHost);
  for (int i = 0; i < M; i += 37)
    for (int j = 0; j < N; j += 5) {
      double ref = 0;
      for (int k = 0; k < K; ++k) ref += (double)__bfloat162float(a[i * K + k]) * __bfloat162float(b[k * N + j]);
      const double got = __bfloat162float(c[i * N + j]);
      if (!(std::fabs(got - ref) <= 1e-2 * std::fabs(ref) + 5e-2)) {
        printf("C[%d][%d] %g vs %g\n", i, j, got, ref);
        return 1;
      }
    }
  printf("ok\n");
  return 0;
}
"""

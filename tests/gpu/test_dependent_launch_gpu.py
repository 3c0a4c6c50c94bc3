"""Programmatic dependent launch on the GPU: a hopper or hopper_grouped kernel launched right after a kernel that
lets its dependents start at once (griddepcontrol.launch_dependents first) and only then, milliseconds later, writes
the kernel's A or its group ends computes with what that kernel wrote: its blocks start early and wait
(`gemmc_grid_wait`) for that kernel's completion before they read. Without the wait they would read A's zeros or
ends that make every group empty."""

from __future__ import annotations

import numpy as np
import pytest

import gemmc
from tests.gpu.helpers import TOL, rel

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

# Lets the next kernel on the stream start at once, spins for `ns` nanoseconds, then copies `words` 32-bit words.
LATE_COPY = r"""
extern "C" __global__ void gemmc_test_late_copy(unsigned* dst, const unsigned* src, long long words, long long ns) {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < (unsigned long long)ns);
  for (long long i = threadIdx.x; i < words; i += blockDim.x) dst[i] = src[i];
}
"""


def sm90():
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs an sm_90 GPU")


def late_copy(dst: torch.Tensor, src: torch.Tensor, ms: float = 2.0) -> None:
    """On torch's current stream: one block that lets the next kernel start, then copies src into dst after `ms`."""
    import cupy as cp

    from gemmc.runtime.streams import external_stream, torch_stream

    assert dst.is_contiguous() and src.is_contiguous() and dst.nbytes == src.nbytes and dst.nbytes % 4 == 0
    fn = cp.RawKernel(LATE_COPY, "gemmc_test_late_copy")
    fn((1,), (256,), (np.uint64(dst.data_ptr()), np.uint64(src.data_ptr()), np.int64(dst.nbytes // 4),
                      np.int64(int(ms * 1e6))), stream=external_stream(torch_stream()))


@pytest.mark.parametrize("tile", ["", "tile 128x128x64 ksplit 2"])
def test_a_hopper_kernel_reads_the_a_an_early_starting_kernel_writes_late(tile):
    sm90()
    m, n, k = 700, 520, 304  # lines of 16-byte multiples: no staging copy between the two kernels
    kernel = gemmc.compile_string(f"kernel k {{ dtype bf16 {tile} gemm {m} x {n} x {k} }}")["k"]
    gen = torch.Generator(device="cuda").manual_seed(11)
    a = (torch.rand(m, k, generator=gen, device="cuda") * 2 - 1).to(torch.bfloat16)
    B = (torch.rand(k, n, generator=gen, device="cuda") * 2 - 1).to(torch.bfloat16)
    A = torch.zeros_like(a)
    C = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    kernel([A], [B], [C])  # compiled, planned and loaded: the launch below follows the late copy at once
    torch.cuda.synchronize()
    C.fill_(float("nan"))
    late_copy(A, a)
    kernel([A], [B], [C])
    torch.cuda.synchronize()
    assert rel(C, a.double() @ B.double()) < TOL["bfloat16"]


def test_a_grouped_kernel_reads_the_ends_an_early_starting_kernel_writes_late():
    sm90()
    sizes = [100, 0, 257, 64, 1, 129, 40, 200]
    n, k = 256, 128
    kernel = gemmc.compile_string(f"target cuda sm_90\nkernel k {{ dtype bf16 grouped M n {n} k {k} groups 8 }}")["k"]
    rows = sum(sizes)
    A = torch.randn(rows, k, device="cuda").to(torch.bfloat16)
    B = torch.randn(len(sizes), k, n, device="cuda").to(torch.bfloat16)
    C = torch.full((rows, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    real = torch.tensor(np.cumsum(sizes), dtype=torch.int32, device="cuda")
    ends = torch.zeros_like(real)  # every group empty until the late copy
    kernel(A, B, C, offsets=ends)  # loaded; empty groups write nothing
    torch.cuda.synchronize()
    assert bool(torch.isnan(C.float()).all())
    late_copy(ends, real)
    kernel(A, B, C, offsets=ends)
    torch.cuda.synchronize()
    spans = zip(sizes, np.cumsum(sizes).tolist(), strict=True)
    ref = torch.cat([A[e - s:e].double() @ B[g].double() for g, (s, e) in enumerate(spans)])
    assert rel(C, ref) < TOL["bfloat16"]


@pytest.mark.parametrize("schedule, size, bound", [
    ("dtype bf16", (700, 520, 304), TOL["bfloat16"]),
    ("dtype bf16", (97, 65, 63), TOL["bfloat16"]),  # lines of no 16-byte multiple: A and B staged first
    ("dtype bf16 tile 128x128x64 ksplit 2", (700, 520, 304), TOL["bfloat16"]),
    ("dtype f32 precision split f16 x3", (257, 131, 200), 1e-6)],  # the pre-pass's planes and line scales
    ids=["bf16", "bf16-staged", "bf16-ksplit", "split-f16x3"])
def test_the_plain_launch_from_the_argument_block_computes_right(monkeypatch, schedule, size, bound):
    """With dependent launches off (`pdl.ENABLED`, the benchmarks' ablation) the hopper GEMM launches through
    cuLaunchKernel from the same argument block (runtime/launcher.py): the tensor maps from their kept bytes, the
    scalars and the split's line-scale addresses in its slots. Two calls on other operands and scalars (other maps,
    one block) match float64, C NaN-poisoned where beta is 0."""
    from gemmc.runtime import pdl
    from tests.gpu.test_hopper_gpu import run

    sm90()
    monkeypatch.setattr(pdl, "ENABLED", False)
    m, n, k = size
    kernel = gemmc.compile_string(f"kernel k {{ {schedule} alpha runtime beta runtime gemm {m} x {n} x {k} }}",
                                  target="sm_90")["k"]
    assert kernel.ir.family == "hopper", kernel.plan
    for seed, (alpha, beta) in enumerate(((1.0, 0.0), (1.5, -0.5))):
        err, _ = run(kernel, m, n, k, "rrr", alpha, beta, seed=seed)
        assert err < bound, f"alpha {alpha} beta {beta}: relative error {err:.3e}"
    assert kernel.executable.launcher is not None

"""f32 storage with tf32 products on the Hopper loop (`precision tf32`, `split tf32 x3`): against float64 on odd
sizes whose lines TMA can read (1, primes and non-multiples of every tile where a dimension is no line length),
every layout, NaN-poisoned C, beta != 0; the one pass against the numpy emulator of its rounding (cvt.rna, not the
tensor core's truncation of raw f32); the split at or below f32's error."""

from __future__ import annotations

import numpy as np
import pytest

import gemmc
from gemmc.families.tensorcore.emulate import emulate_gemm
from gemmc.families.tensorcore.split import split_plan
from tests.gpu.helpers import layout_line
from tests.gpu.test_hopper_gpu import run

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

# Sizes whose lines are 16-byte multiples in every layout (M, N, K multiples of 4: TMA reads them in place), and
# odd ones for the dimensions that are no line length in the row-major layouts (M of A row / C row).
ALIGNED = [(4, 4, 4), (132, 260, 100), (300, 196, 1004)]
ODD_M = [(1, 4, 4), (97, 12, 252), (257, 64, 36)]
BOUND = {"tf32": 2e-3, "split tf32 x3": 1e-6}


def compile_kernel(mode: str, layouts: str, size: tuple[int, int, int]):
    m, n, k = size
    text = (f"kernel k {{ dtype f32 precision {mode} {layout_line(layouts)} alpha runtime beta runtime "
            f"gemm {m} x {n} x {k} }}")
    kernel = gemmc.compile_string(text, target="sm_90")["k"]
    assert kernel.ir.family == "hopper", kernel.plan
    return kernel


@pytest.mark.parametrize("mode", ["tf32", "split tf32 x3"])
@pytest.mark.parametrize("layouts", ["rrr", "ccc", "rcr", "crc"])
def test_odd_sizes(mode, layouts):
    sizes = ALIGNED + (ODD_M if layouts[0] == "r" else [])
    for i, (m, n, k) in enumerate(sizes):
        beta = -0.5 if i % 2 else 0.0
        err, _ = run(compile_kernel(mode, layouts, (m, n, k)), m, n, k, layouts, 1.5, beta, seed=i)
        assert err < BOUND[mode], f"{m}x{n}x{k} beta {beta}: relative error {err:.3e}"


@pytest.mark.parametrize("mode", ["tf32", "split tf32 x3"])
def test_rounds_as_the_emulator(mode):
    """The parts are rounded to nearest (cvt.rna) as the emulator rounds them: the one pass sits within f32
    accumulation of the emulated product (truncating the f32 inputs instead would differ by ~3e-4)."""
    m, n, k = 257, 132, 1004
    kernel = compile_kernel(mode, "rrr", (m, n, k))
    gen = torch.Generator(device="cuda").manual_seed(3)
    a = torch.randn(m, k, generator=gen, device="cuda")
    b = torch.randn(k, n, generator=gen, device="cuda")
    c = torch.full((m, n), float("nan"), device="cuda")
    kernel([a], [b], [c], alpha=1.0, beta=0.0)
    torch.cuda.synchronize()
    prec = kernel.ir.precision
    emu = emulate_gemm(a.cpu().numpy(), b.cpu().numpy(), split_plan(prec))
    out = c.cpu().numpy().astype(np.float64)
    assert float(np.linalg.norm(out - emu) / np.linalg.norm(emu)) < 2e-5


@pytest.mark.parametrize("mode", ["tf32", "split tf32 x3"])
@pytest.mark.parametrize(("layouts", "size"), [("rrr", (2055, 4100, 1000)), ("crc", (3900, 3000, 2000)),
                                               ("rcr", (1024, 1024, 4096))])
def test_large(mode, layouts, size):
    m, n, k = size
    kernel = compile_kernel(mode, layouts, size)
    for beta, seed in ((0.0, 1), (0.75, 2)):
        err, _ = run(kernel, m, n, k, layouts, 1.0, beta, seed=seed)
        assert err < BOUND[mode], f"beta {beta}: relative error {err:.3e}"


def test_nan_inputs_propagate():
    m, n, k = 300, 264, 200
    kernel = compile_kernel("split tf32 x3", "rrr", (m, n, k))
    A = torch.randn(m, k, device="cuda")
    B = torch.randn(k, n, device="cuda")
    A[3, 5] = float("nan")
    B[7, 2] = float("nan")
    C = torch.empty(m, n, device="cuda")
    kernel([A], [B], [C], alpha=1.0, beta=0.0)
    ref = torch.mm(A, B)
    assert torch.equal(torch.isnan(C), torch.isnan(ref))

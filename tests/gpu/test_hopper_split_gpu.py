"""f32 storage split into f16/bf16 parts on the Hopper loop (`split f16 x3`, `split bf16 x3`, ...): the pre-pass's
planes streamed by TMA. Against float64 on odd sizes (1, primes, non-multiples of every tile; the pre-pass reads any
stride, so every size stays on this loop), every layout, NaN-poisoned C, beta != 0; against the numpy emulator of
the split (the same parts and scales); the f16 splits at or below cuBLAS SGEMM's error on spread inputs."""

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

ODD = [(1, 1, 1), (7, 5, 3), (97, 65, 63), (257, 131, 200), (300, 196, 1003)]
BOUND = {"split f16 x3": 1e-6, "split f16 x3 method le": 1.5e-6, "split bf16 x3": 2e-5, "split bf16 x6": 1e-6,
         "split f16 x4 method markidis": 1e-6}


def compile_kernel(mode: str, layouts: str, size: tuple[int, int, int]):
    m, n, k = size
    text = (f"kernel k {{ dtype f32 precision {mode} {layout_line(layouts)} alpha runtime beta runtime "
            f"gemm {m} x {n} x {k} }}")
    kernel = gemmc.compile_string(text, target="sm_90")["k"]
    assert kernel.ir.family == "hopper", kernel.plan
    return kernel


@pytest.mark.parametrize("mode", ["split f16 x3", "split bf16 x3"])
@pytest.mark.parametrize("layouts", ["rrr", "ccc", "rcr", "crc"])
def test_odd_sizes(mode, layouts):
    for i, (m, n, k) in enumerate(ODD):
        beta = -0.5 if i % 2 else 0.0
        err, _ = run(compile_kernel(mode, layouts, (m, n, k)), m, n, k, layouts, 1.5, beta, seed=i)
        assert err < BOUND[mode], f"{m}x{n}x{k} beta {beta}: relative error {err:.3e}"


@pytest.mark.parametrize("mode", ["split f16 x3 method le", "split f16 x4 method markidis", "split bf16 x6"])
def test_other_splits(mode):
    for i, size in enumerate([(97, 65, 63), (300, 196, 1003)]):
        err, _ = run(compile_kernel(mode, "rcr", size), *size, "rcr", 1.0, 0.25 * i, seed=i)
        assert err < BOUND[mode], f"{size}: relative error {err:.3e}"


@pytest.mark.parametrize("mode", ["split f16 x3", "split f16 x3 method le", "split bf16 x3"])
def test_matches_the_emulator(mode):
    """The same parts, line scales and products as the numpy emulator: only the f32 accumulation differs."""
    m, n, k = 257, 132, 1004
    kernel = compile_kernel(mode, "rrr", (m, n, k))
    gen = torch.Generator(device="cuda").manual_seed(3)
    a = torch.randn(m, k, generator=gen, device="cuda")
    b = torch.randn(k, n, generator=gen, device="cuda") * 1e-3
    c = torch.full((m, n), float("nan"), device="cuda")
    kernel([a], [b], [c], alpha=1.0, beta=0.0)
    torch.cuda.synchronize()
    emu = emulate_gemm(a.cpu().numpy(), b.cpu().numpy(), split_plan(kernel.ir.precision))
    out = c.cpu().numpy().astype(np.float64)
    assert float(np.linalg.norm(out - emu) / np.linalg.norm(emu)) < 1e-6  # a wrong part or scale: ~1e-3


@pytest.mark.parametrize("mode", ["split f16 x3", "split bf16 x3"])
@pytest.mark.parametrize(("layouts", "size"), [("rrr", (2055, 4100, 1000)), ("crc", (3900, 3000, 2000)),
                                               ("rcr", (1024, 1024, 4096))])
def test_large(mode, layouts, size):
    kernel = compile_kernel(mode, layouts, size)
    for beta, seed in ((0.0, 1), (0.75, 2)):
        err, _ = run(kernel, *size, layouts, 1.0, beta, seed=seed)
        assert err < BOUND[mode], f"beta {beta}: relative error {err:.3e}"


@pytest.mark.parametrize(("mode", "layouts"), [("split f16 x3", "rrr"), ("split f16 x3", "ccc"),
                                              ("split bf16 x3", "rcr")])
def test_lines_too_long_for_registers(mode, layouts):
    """K past the 16384 values a pre-pass block holds in registers: K-contiguous lines are read twice (the maxima,
    then the split), as the M/N-contiguous ones always are."""
    size = (97, 80, 16500)
    kernel = compile_kernel(mode, layouts, size)
    assert kernel.ir.plan.line_regs == 0
    err, _ = run(kernel, *size, layouts, 1.0, 0.0, seed=4)
    assert err < BOUND[mode], f"relative error {err:.3e}"


@pytest.mark.parametrize(("mode", "layouts"), [("split f16 x3", "rcr"), ("split bf16 x6", "rrr"),
                                              ("split f16 x4 method markidis", "crc")])
def test_multicast_pair_with_an_odd_m_tile_count(mode, layouts):
    """Clusters of 2 (B multicast) over 17 m-tiles: the last pair's second block loads a real tile and stores nothing;
    bf16 x6 runs 2 stages of 6 planes."""
    size = (2100, 4100, 700)
    kernel = compile_kernel(mode, layouts, size)
    assert kernel.ir.plan.cluster == 2
    err, _ = run(kernel, *size, layouts, 1.0, 0.5, seed=6)
    assert err < BOUND[mode], f"relative error {err:.3e}"


def test_f16_split_at_or_below_sgemm_on_spread_inputs():
    """Values over 16 binades: the per-line power-of-two scales keep every part in f16's range; the split's error
    stays at or below cuBLAS SGEMM's."""
    m, n, k = 1024, 1024, 4096
    kernel = compile_kernel("split f16 x3", "rrr", (m, n, k))
    gen = torch.Generator(device="cuda").manual_seed(5)

    def spread(rows, cols):
        x = torch.randn(rows, cols, generator=gen, device="cuda")
        return x * torch.exp2(torch.randint(-8, 9, (rows, cols), generator=gen, device="cuda").float())

    a, b = spread(m, k), spread(k, n)
    c = torch.full((m, n), float("nan"), device="cuda")
    kernel([a], [b], [c], alpha=1.0, beta=0.0)
    ref = a.double() @ b.double()
    torch.backends.cuda.matmul.allow_tf32 = False
    sgemm = (a @ b).double()
    err = float((c.double() - ref).norm() / ref.norm())
    assert err <= float((sgemm - ref).norm() / ref.norm()), err


def test_nan_inputs_propagate():
    m, n, k = 300, 264, 200
    kernel = compile_kernel("split f16 x3", "rrr", (m, n, k))
    A = torch.randn(m, k, device="cuda")
    B = torch.randn(k, n, device="cuda")
    A[3, 5] = float("nan")
    B[7, 2] = float("nan")
    C = torch.empty(m, n, device="cuda")
    kernel([A], [B], [C], alpha=1.0, beta=0.0)
    ref = torch.mm(A, B)
    assert torch.equal(torch.isnan(C), torch.isnan(ref))


def test_first_call_on_a_stream_inside_a_graph_capture():
    """A split kernel's scratch (the pre-pass's planes) is kept per stream: the first call on a stream that is being
    captured allocates it outside the graph, and the replays compute the product (NaN-poisoned C, float64)."""
    m, n, k = 257, 131, 200
    kernel = compile_kernel("split f16 x3", "rrr", (m, n, k))
    A = torch.randn(m, k, device="cuda")
    B = torch.randn(k, n, device="cuda")
    C = torch.full((m, n), float("nan"), device="cuda")
    kernel([A], [B], [C], alpha=1.0, beta=0.0)  # compiled, tuned and given scratch on the current stream
    torch.cuda.synchronize()
    import cupy

    cupy.get_default_memory_pool().free_all_blocks()  # the scratch cannot come from a block the pool holds
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=torch.cuda.Stream()):  # a stream the kernel has never run on
        kernel([A], [B], [C], alpha=1.0, beta=0.0)
    A.copy_(torch.randn(m, k, device="cuda"))
    C.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    ref = A.double() @ B.double()
    assert float(torch.linalg.norm(C.double() - ref) / torch.linalg.norm(ref)) < BOUND["split f16 x3"]

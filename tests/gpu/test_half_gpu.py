"""bf16/f16 storage in the SIMT, TSM2R and TSM2L families on the GPU, against float64 on the rounded inputs with an
error bound that grows with K: irregular batches and `count` batches (SIMT), one GEMM on the SIMT family (what every
target but sm_90 runs), tall-and-skinny B (TSM2R, both kernels) and A (TSM2L); odd sizes, every C type, NaN-poisoned
C, beta != 0, torch bf16/f16 tensors and CuPy float16 arrays."""

from __future__ import annotations

import pytest

import gemmc
from tests.gpu.helpers import layout_line

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

UNIT = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11, "f32": 2.0 ** -24}  # unit roundoff of round-to-nearest
TORCH = {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}


def bound(c_type: str, k: int) -> float:
    """C rounded once to its type, plus f32 accumulation over k products (each exact in f32): linear in k."""
    return UNIT[c_type] + 2 * k * 2.0 ** -24


def matrix(rows: int, cols: int, layout: str, dtype: str, gen) -> torch.Tensor:
    x = (torch.rand(rows, cols, generator=gen, device="cuda", dtype=torch.float64) * 2 - 1).to(getattr(torch, dtype))
    return x if layout == "r" else x.t().contiguous().t()


def compile_kernel(dtype: str, layouts: str, c_type: str | None, body: str):
    dtypes = dtype if c_type is None else f"A {dtype}, B {dtype}, C {c_type}"
    text = f"kernel k {{ dtype {dtypes} {layout_line(layouts)} alpha runtime beta runtime {body} }}"
    return gemmc.compile_string(text)["k"]


def check(kernel, sizes, layouts: str, alpha: float, beta: float, seed: int = 0) -> None:
    """One call over the batch `sizes` on fresh inputs (C NaN-poisoned where beta == 0); every problem within the
    bound against float64 on the same (rounded) inputs."""
    ir = kernel.ir
    gen = torch.Generator(device="cuda").manual_seed(seed)
    As = [matrix(m, k, layouts[0], TORCH[ir.dtype.value], gen) for m, _, k in sizes]
    Bs = [matrix(k, n, layouts[1], TORCH[ir.dtype.value], gen) for _, n, k in sizes]
    Cs = [matrix(m, n, layouts[2], TORCH[ir.c_dtype.value], gen) for m, n, _ in sizes]
    if beta == 0:
        for C in Cs:
            C.fill_(float("nan"))
    refs = [alpha * (A.double() @ B.double()) + (beta * C.double() if beta != 0 else 0)
            for A, B, C in zip(As, Bs, Cs, strict=True)]
    kernel(As, Bs, Cs, alpha=alpha, beta=beta)
    torch.cuda.synchronize()
    for (m, n, k), C, ref in zip(sizes, Cs, refs, strict=True):
        out = C.double()
        assert bool(torch.isfinite(out).all()), f"{m}x{n}x{k}: {int((~torch.isfinite(out)).sum())} outputs not finite"
        err = float((out - ref).norm() / ref.norm())
        assert err < bound(ir.c_dtype.value, k), f"{m}x{n}x{k} beta {beta}: relative error {err:.3e}"


IRREGULAR = [(1, 1, 1), (1, 7, 13), (13, 1, 5), (97, 13, 251), (130, 131, 129), (257, 63, 31), (300, 259, 1000),
             (64, 64, 64)]


@pytest.mark.parametrize(("dtype", "layouts", "c_type"), [
    ("bf16", "rrr", None), ("bf16", "rcr", None), ("f16", "crc", None), ("f16", "ccc", None),
    ("bf16", "rrr", "f32"), ("f16", "rcc", "f32")])
def test_simt_irregular_batch(dtype, layouts, c_type):
    body = "batch { " + " ".join(f"p{i} {m} x {n} x {k}" for i, (m, n, k) in enumerate(IRREGULAR)) + " }"
    kernel = compile_kernel(dtype, layouts, c_type, body)
    assert kernel.ir.family == "simt"
    check(kernel, IRREGULAR, layouts, 1.5, 0.0, seed=1)
    check(kernel, IRREGULAR, layouts, -0.75, 0.5, seed=2)


@pytest.mark.parametrize(("dtype", "c_type"), [("bf16", None), ("f16", "f32")])
def test_simt_count_batch_in_3d_tensors(dtype, c_type):
    m, n, k, count = 131, 67, 259, 5
    kernel = compile_kernel(dtype, "rrr", c_type, f"gemm {m} x {n} x {k} count {count}")
    assert kernel.ir.family == "simt"
    gen = torch.Generator(device="cuda").manual_seed(3)
    A = (torch.rand(count, m, k, generator=gen, device="cuda") * 2 - 1).to(getattr(torch, TORCH[dtype]))
    B = (torch.rand(count, k, n, generator=gen, device="cuda") * 2 - 1).to(getattr(torch, TORCH[dtype]))
    C = torch.full((count, m, n), float("nan"), device="cuda", dtype=getattr(torch, TORCH[c_type or dtype]))
    kernel(A, B, C, alpha=1.0, beta=0.0)
    torch.cuda.synchronize()
    ref = A.double() @ B.double()
    err = float((C.double() - ref).norm() / ref.norm())
    assert bool(torch.isfinite(C.double()).all()) and err < bound(c_type or dtype, k), f"relative error {err:.3e}"


@pytest.mark.parametrize(("dtype", "layouts", "c_type", "size"), [
    ("bf16", "rrr", None, (1000, 3001, 517)),  # what sm_80, sm_89 and HIP run: one GEMM on the SIMT family
    ("f16", "ccr", "f32", (2049, 1023, 2000)),
])
def test_simt_one_gemm(dtype, layouts, c_type, size):
    kernel = compile_kernel(dtype, layouts, c_type, f"algorithm simt gemm {size[0]} x {size[1]} x {size[2]}")
    check(kernel, [size], layouts, 1.0, 0.0, seed=4)
    check(kernel, [size], layouts, 1.0, -1.5, seed=5)


def test_simt_f16_cupy_arrays():
    cp = pytest.importorskip("cupy")
    m, n, k = 129, 65, 300
    kernel = compile_kernel("f16", "rrr", None, f"batch {{ a {m} x {n} x {k} b {n} x {m} x {k} }}")
    rng = cp.random.default_rng(6)
    As = [(rng.random((m, k)) * 2 - 1).astype(cp.float16), (rng.random((n, k)) * 2 - 1).astype(cp.float16)]
    Bs = [(rng.random((k, n)) * 2 - 1).astype(cp.float16), (rng.random((k, m)) * 2 - 1).astype(cp.float16)]
    Cs = [cp.full((m, n), cp.nan, dtype=cp.float16), cp.full((n, m), cp.nan, dtype=cp.float16)]
    kernel(As, Bs, Cs, alpha=1.0, beta=0.0)
    for A, B, C in zip(As, Bs, Cs, strict=True):
        ref = A.astype(cp.float64) @ B.astype(cp.float64)
        err = float(cp.linalg.norm(C.astype(cp.float64) - ref) / cp.linalg.norm(ref))
        assert bool(cp.isfinite(C).all()) and err < bound("f16", k), f"relative error {err:.3e}"


@pytest.mark.parametrize(("dtype", "layouts", "c_type", "size"), [
    ("bf16", "crc", None, (3001, 8, 2999)),  # column kernel, 8 halves (16 bytes) per lane, clusters split k
    ("f16", "ccr", "f32", (5001, 13, 3007)),  # odd n: a partial pass, edge rows, element copies of B
    ("bf16", "rcr", None, (2049, 24, 4099)),  # row-major A, batches copied by rows
    ("f16", "rrc", "f32", (4097, 1, 1001)),  # row-major A, n = 1: the row kernel
])
def test_tsm2r(dtype, layouts, c_type, size):
    m, n, k = size
    kernel = compile_kernel(dtype, layouts, c_type, f"algorithm tsm2r gemm {m} x {n} x {k}")
    check(kernel, [size], layouts, 1.0, 0.0, seed=7)
    check(kernel, [size], layouts, 0.5, 0.25, seed=8)


@pytest.mark.parametrize(("dtype", "layouts", "c_type", "size"), [
    ("bf16", "rrr", None, (100003, 16, 16)),  # A and C staged in 8-half vectors
    ("f16", "rrr", "f32", (100003, 12, 16)),  # A staged, an f32 C of 12 staged as 3 vectors
    ("f16", "ccc", None, (50001, 7, 5)),  # element by element
])
def test_tsm2l(dtype, layouts, c_type, size):
    m, n, k = size
    kernel = compile_kernel(dtype, layouts, c_type, f"algorithm tsm2l gemm {m} x {n} x {k}")
    check(kernel, [size], layouts, 1.0, 0.0, seed=9)
    check(kernel, [size], layouts, 2.0, -1.0, seed=10)

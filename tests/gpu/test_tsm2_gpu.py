"""TSM2R and TSM2L on the GPU: odd m, k, n (1, primes, non-multiples of t1/t2/t3), every layout, f32/f64,
alpha/beta, NaN-poisoned outputs, float64 references."""

from __future__ import annotations

import pytest

from tests.gpu.helpers import LAYOUTS, check_schedule, layout_line

pytestmark = pytest.mark.gpu

@pytest.mark.parametrize("layouts", LAYOUTS)
@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (4099, 7, 1031), (257, 33, 3001), (63, 1, 129), (2000, 16, 4000)])
def test_tsm2r(dtype, layouts, m, n, k):
    check_schedule(f"kernel k {{ dtype {dtype} {layout_line(layouts)} alpha 1.5 beta 0 gemm {m} x {n} x {k} "
                   "algorithm tsm2r }")


@pytest.mark.parametrize("layouts", LAYOUTS)
@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (100003, 7, 9), (65537, 16, 16), (333, 3, 32)])
def test_tsm2l(dtype, layouts, m, n, k):
    check_schedule(f"kernel k {{ dtype {dtype} {layout_line(layouts)} gemm {m} x {n} x {k} algorithm tsm2l }}")


@pytest.mark.parametrize("algorithm", ["tsm2r", "tsm2l"])
def test_runtime_alpha_beta(algorithm):
    check_schedule(f"kernel k {{ alpha runtime beta runtime gemm 5001 x 5 x 13 algorithm {algorithm} }}", seed=4)


def test_large_tsm2l_uses_thread_count_factor():
    import gemmc

    k = gemmc.compile_string("kernel k { gemm 12000000 x 8 x 8 algorithm tsm2l }")["k"]
    assert k.ir.plan.tcf > 1
    check_schedule("kernel k { gemm 12000000 x 8 x 8 algorithm tsm2l }")


def test_64_bit_indexing():
    # m * k > 2^32 elements (19 GB of A in f32): the offsets must not wrap. Compared with float64 in chunks.
    import cupy as cp

    import gemmc

    m, n, k = (1 << 29) + 3, 2, 9
    kern = gemmc.compile_string(f"kernel k {{ layout A col, C col gemm {m} x {n} x {k} algorithm tsm2l }}")["k"]
    rng = cp.random.default_rng(9)
    A = cp.asfortranarray(rng.standard_normal((m, k), dtype=cp.float32))
    B = rng.standard_normal((k, n), dtype=cp.float32)
    C = cp.full((m, n), cp.nan, dtype=cp.float32, order="F")
    kern([A], [B], [C])
    worst = 0.0
    for r in range(0, m, 1 << 26):
        ref = A[r:r + (1 << 26)].astype(cp.float64) @ B.astype(cp.float64)
        worst = max(worst, float(cp.linalg.norm(C[r:r + (1 << 26)] - ref) / cp.linalg.norm(ref)))
    assert worst < 1e-5

"""TSM2R and TSM2L on the GPU: odd m, k, n (1, primes, non-multiples of t1/t2/t3), every layout, f32/f64,
alpha/beta, NaN-poisoned outputs, float64 references."""

from __future__ import annotations

import pytest

from tests.gpu.helpers import LAYOUTS, check_plan, check_schedule, layout_line

pytestmark = pytest.mark.gpu

@pytest.mark.parametrize("layouts", LAYOUTS)
@pytest.mark.parametrize("dtype", ["f32", "f64"])
# Column-major A on sm_90 splits k over clusters of 8, 7, 5, 2 blocks and (262147 x 3 x 97 f32: enough blocks
# without) none; n = 33 is two passes of 32 columns.
@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (4099, 7, 1031), (257, 33, 3001), (63, 1, 129), (2000, 16, 4000),
                                     (262147, 3, 97), (30011, 16, 2053), (8191, 2, 4099)])
def test_tsm2r(dtype, layouts, m, n, k):
    check_schedule(f"kernel k {{ dtype {dtype} {layout_line(layouts)} alpha 1.5 beta 0 gemm {m} x {n} x {k} "
                   "algorithm tsm2r }")


# f64 with n > 8 runs on the tensor cores (m16n8k4 on sm_90): fragments of 16 rows x 8 columns with m, n not
# multiples of them (n = 9, 12: a partial fragment), n = 32 (one row per lane), n = 40 (two passes: the second has
# 8 columns of 32), one k slice shorter than a batch, beta. Row-major A: its batches copied by rows, in 16-byte
# pieces where the row length allows (even k: 2018, 3000, the last batch of a slice partial) and element by
# element where it does not (odd k: rows that end inside a piece). Row-major A takes the tensor cores for every n on
# sm_90 (n = 1, 2, 3, 5: one partly used fragment of 8 columns; batches of 32 k up to n = 16; B's odd rows copied
# element by element); column-major A runs those n on the FMAs.
@pytest.mark.parametrize("layouts", ["ccc", "crc", "ccr", "crr", "rrr", "rcc", "rrc"])
@pytest.mark.parametrize("m, n, k", [(1009, 9, 3001), (4093, 12, 2011), (257, 32, 5003), (3001, 40, 1031),
                                     (17, 24, 7), (1001, 32, 2018), (4093, 16, 3000), (1009, 3, 2018),
                                     (4093, 5, 3001), (1001, 1, 3001), (257, 2, 2018)])
def test_tsm2r_f64_tensor_cores(layouts, m, n, k):
    check_schedule(f"kernel k {{ dtype f64 {layout_line(layouts)} alpha 1.5 beta -0.5 gemm {m} x {n} x {k} "
                   "algorithm tsm2r }")


# Row-major A through the column kernel on the FMAs (batches copied by rows, a lane's rows read as 16-byte vectors),
# forced whatever the planner picks: rows per lane and batch length, odd shapes, both layouts of B and C.
@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("layouts", ["rcc", "rrr", "rcr"])
@pytest.mark.parametrize("m, n, k", [(1009, 9, 3001), (257, 16, 5003), (3001, 7, 1031), (17, 5, 7), (4093, 16, 3000)])
@pytest.mark.parametrize("rows, t3, cluster", [(4, 16, 1), (2, 32, 3)])
def test_tsm2r_row_major_on_the_fmas(dtype, layouts, m, n, k, rows, t3, cluster):
    from dataclasses import replace

    import gemmc
    from gemmc.families import streaming
    from gemmc.families.tsm2r import planner as tsm2

    kern = gemmc.compile_string(f"kernel k {{ dtype {dtype} {layout_line(layouts)} alpha 1.5 beta -0.5 "
                                f"gemm {m} x {n} x {k} algorithm tsm2r }}")["k"]
    hw, t2 = kern.target, min(n, streaming.T2_MAX)
    smem = tsm2.column_smem(4, t2, t3, 2, rows, kern.ir.dtype, hw, 0, 1, True)
    plan = replace(kern.ir.plan, a_by_rows=True, mma=0, kslices=4, row_groups=1, rows_per_warp=rows, t3=t3, t2=t2,
                   stages=2, t1=4 * hw.warp_size, smem=smem, cluster=cluster, min_blocks=1)
    check_plan(kern, plan, seed=4)


# algorithm auto sends f64 up to n = 128 to TSM2R on sm_90's tensor cores: several passes of 32 columns, the last
# partial (n = 97), at the rule's smallest m = k.
@pytest.mark.parametrize("a_layout", ["col", "row"])
def test_auto_f64_wide_b_runs_tsm2r(a_layout):
    import gemmc

    text = f"kernel k {{ dtype f64 layout A {a_layout}, B col, C col alpha 1.5 beta -0.5 gemm 8192 x 97 x 8193 }}"
    assert gemmc.compile_string(text)["k"].ir.family == "tsm2r"
    check_schedule(text)


# k slices of several warps that share B's batches (Tsm2rPlan.row_groups), whatever the planner picks: (rows per
# lane, warps per slice, slices per block, cluster), on the tensor cores' shapes above and both layouts of A; every
# block the column kernel's 4 warps (the family's limits: with_plan refuses any other).
@pytest.mark.parametrize("layouts", ["ccc", "crr", "rrr", "rcc"])
@pytest.mark.parametrize("m, n, k", [(1009, 9, 3001), (257, 32, 5003), (3001, 40, 1031), (17, 24, 7),
                                     (1001, 32, 2018), (4093, 3, 3001)])
@pytest.mark.parametrize("rows, groups, slices, cluster", [(2, 2, 2, 1), (2, 4, 1, 2), (1, 4, 1, 3), (2, 1, 4, 1),
                                                           (1, 2, 2, 2)])
def test_tsm2r_row_groups(layouts, m, n, k, rows, groups, slices, cluster):
    from dataclasses import replace

    import gemmc
    from gemmc.families.tsm2r import planner as tsm2

    kern = gemmc.compile_string(f"kernel k {{ dtype f64 {layout_line(layouts)} alpha 1.5 beta -0.5 "
                                f"gemm {m} x {n} x {k} algorithm tsm2r }}")["k"]
    plan, hw = kern.ir.plan, kern.target
    if not plan.mma:
        pytest.skip("column-major A with n <= 8 runs the FMAs")
    smem = tsm2.column_smem(slices, plan.t2, plan.t3, plan.stages, rows, kern.ir.dtype, hw, plan.mma, groups)
    plan = replace(plan, rows_per_warp=rows, row_groups=groups, kslices=slices, t1=slices * groups * hw.warp_size,
                   smem=smem, cluster=cluster, min_blocks=1)
    check_plan(kern, plan, seed=3)


@pytest.mark.parametrize("layouts", LAYOUTS)
@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (100003, 7, 9), (65537, 16, 16), (333, 3, 32)])
def test_tsm2l(dtype, layouts, m, n, k):
    check_schedule(f"kernel k {{ dtype {dtype} {layout_line(layouts)} gemm {m} x {n} x {k} algorithm tsm2l }}")


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("m, n, k", [(65537, 8, 16), (4099, 16, 8)])
def test_tsm2l_row_major_vectors_with_beta(dtype, m, n, k):
    # Row-major A and C with k and n multiples of a 16-byte vector: A's rows read and C's rows written (beta: read
    # back) as vectors.
    check_schedule(f"kernel k {{ dtype {dtype} layout A row, B row, C row alpha 1.5 beta -0.5 gemm {m} x {n} x {k} "
                   "algorithm tsm2l }")


@pytest.mark.parametrize("t1", [64, 128])
def test_tsm2l_smaller_blocks(t1):
    # The block size a CDNA workgroup gets where 256 threads' staging rows overflow its LDS (f64, n near 32); CUDA
    # never plans it, so it is forced here: row-major A and C staged per warp, a partial last block.
    import gemmc
    from gemmc.families.tsm2l import planner as tsm2l
    from gemmc.ir.types import DType, Layout

    kern = gemmc.compile_string("kernel k { dtype f64 layout A row, B col, C row alpha 1.5 beta -0.5 "
                                "gemm 100003 x 32 x 4 algorithm tsm2l }")["k"]
    plan = tsm2l.tsm2l_params(kern.ir.problems[0], DType.F64, kern.target, Layout.ROW, Layout.ROW, t1=t1)
    assert plan.t1 == t1
    check_plan(kern, plan, seed=5)


@pytest.mark.parametrize("algorithm", ["tsm2r", "tsm2l"])
def test_runtime_alpha_beta(algorithm):
    check_schedule(f"kernel k {{ alpha runtime beta runtime gemm 5001 x 5 x 13 algorithm {algorithm} }}", seed=4)


def test_large_tsm2l_uses_thread_count_factor():
    import gemmc

    k = gemmc.compile_string("kernel k { gemm 12000000 x 8 x 8 algorithm tsm2l }")["k"]
    assert k.ir.plan.tcf > 1
    check_schedule("kernel k { gemm 12000000 x 8 x 8 algorithm tsm2l }")


def check_64_bit(algorithm: str, a_layout: str, m: int, n: int, k: int, chunk: int, seed: int) -> None:
    """m * k > 2^32 elements of A in f32 (the offsets must not wrap), NaN-poisoned C, compared with float64 in
    chunks of rows; the memory is given back before asserting, for the tests that follow. A is drawn in its layout
    (a column-major A as the transpose of a row-major k x m draw), so the test holds one 17-19 GB copy of it, not
    two: beside the other workers of a parallel run, two copies ran out of the H100's 80 GB."""
    import cupy as cp

    import gemmc

    assert m * k > 1 << 32
    kern = gemmc.compile_string(f"kernel k {{ layout A {a_layout}, C col gemm {m} x {n} x {k} "
                                f"algorithm {algorithm} }}")["k"]
    rng = cp.random.default_rng(seed)
    A = rng.standard_normal((k, m), dtype=cp.float32).T if a_layout == "col" else \
        rng.standard_normal((m, k), dtype=cp.float32)
    B = rng.standard_normal((k, n), dtype=cp.float32)
    C = cp.full((m, n), cp.nan, dtype=cp.float32, order="F")
    kern([A], [B], [C])
    worst = 0.0
    for r in range(0, m, chunk):
        ref = A[r:r + chunk].astype(cp.float64) @ B.astype(cp.float64)
        worst = max(worst, float(cp.linalg.norm(C[r:r + chunk] - ref) / cp.linalg.norm(ref)))
    del A, B, C
    cp.get_default_memory_pool().free_all_blocks()
    assert worst < 1e-5


def test_64_bit_indexing():
    check_64_bit("tsm2l", "col", (1 << 29) + 3, 2, 9, chunk=1 << 26, seed=9)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_tsm2r_is_deterministic(dtype):
    # The k slices' partial sums are added in a fixed order (warps, then the cluster's blocks): two runs on the
    # same inputs give the same bits.
    import cupy as cp

    import gemmc

    kern = gemmc.compile_string(f"kernel k {{ dtype {dtype} layout A col, B col, C col gemm 3001 x 16 x 20011 "
                                "algorithm tsm2r }")["k"]
    assert kern.ir.plan.cluster > 1
    rng = cp.random.default_rng(3)
    A = cp.asfortranarray(rng.standard_normal((3001, 20011)).astype(dtype.replace("f", "float")))
    B = cp.asfortranarray(rng.standard_normal((20011, 16)).astype(A.dtype))
    C1 = cp.full((3001, 16), cp.nan, dtype=A.dtype, order="F")
    C2 = C1.copy(order="F")
    kern([A], [B], [C1])
    kern([A], [B], [C2])
    assert bool((C1 == C2).all())


@pytest.mark.parametrize("a_layout", ["col", "row"])
def test_tsm2r_64_bit_indexing(a_layout):
    check_64_bit("tsm2r", a_layout, (1 << 20) + 7, 2, 4099, chunk=1 << 16, seed=11)


@pytest.mark.parametrize("dtype, n, k, a_layout", [("f32", 13, 20011, "col"), ("f64", 32, 20011, "col"),
                                                   ("f64", 32, 20011, "row"), ("f64", 32, 20012, "row"),
                                                   ("f64", 5, 20011, "row"), ("f32", 1, 20012, "row")])
def test_every_tuning_candidate_is_correct(dtype, n, k, a_layout):
    # The tuning step may pick any of the planner's alternatives (cluster sizes 1-7; k slices of several warps and of
    # one; row-major f64 also 32 or 64 rows per warp, in 2-warp slices from 17 columns; the row kernel and the column
    # kernel by rows): each against float64.
    import gemmc
    from gemmc.api import CompiledKernel
    from gemmc.families.tsm2r import planner as tsm2
    from gemmc.families.tsm2r import tuning
    from gemmc.runtime.check import check_kernel

    kern = gemmc.compile_string(f"kernel k {{ dtype {dtype} layout A {a_layout}, B col, C col alpha 1.5 beta -0.5 "
                                f"gemm 3001 x {n} x {k} algorithm tsm2r }}")["k"]
    found = tuning.alternatives(kern.ir, kern.target)
    plan = kern.ir.plan
    if not tsm2.column_kernel(kern.ir, plan):
        assert len(found) == 1 + tsm2.MAX_CLUSTER
    elif a_layout == "row" and dtype == "f64":  # the other rows per warp in clusters of 1-2, and one 4-warp slice
        assert len(found) == tsm2.MAX_CLUSTER * (2 if n >= tsm2.ROW_WIDE_MIN_N else 1) + 2
    else:
        assert len(found) == tsm2.MAX_CLUSTER * (2 if plan.row_groups > 1 else 1)
    for label, ir in found:
        err = check_kernel(CompiledKernel(ir, kern.target, "<alt>"), seed=5, alpha=1.5, beta=-0.5,
                           time_it=False)["errors"]
        assert err["nonfinite"] == 0 and err["rel_fro"] < (1e-5 if dtype == "f32" else 1e-12), (label, err)


def _tuning_case(seed: int, m: int = 4099, n: int = 7, k: int = 20011):
    """Fresh column-major f32 operands of odd sizes, a random C (beta != 0 reads it) and the float64 expectation."""
    import cupy as cp

    rng = cp.random.default_rng(seed)
    A = cp.asfortranarray(rng.uniform(-1, 1, (m, k), dtype=cp.float32))
    B = cp.asfortranarray(rng.uniform(-1, 1, (k, n), dtype=cp.float32))
    C = cp.asfortranarray(rng.uniform(-1, 1, (m, n), dtype=cp.float32))
    expect = 1.5 * (A.astype(cp.float64) @ B.astype(cp.float64)) - 0.5 * C.astype(cp.float64)
    return A, B, C, expect


TUNED = ("kernel k { dtype f32 layout A col, B col, C col alpha 1.5 beta -0.5 gemm 4099 x 7 x 20011 "
         "algorithm tsm2r }")


def test_tuning_keeps_the_fastest_and_leaves_c_alone(monkeypatch):
    # The first call times every cluster size on the call's A and B with C in scratch memory: with beta != 0 a C
    # written by the timing would show in the result. The choice is cached on disk for the next process.
    import cupy as cp

    import gemmc

    monkeypatch.setenv("GEMMC_TUNE", "1")
    kern = gemmc.compile_string(TUNED)["k"]
    A, B, C, expect = _tuning_case(1)
    kern([A], [B], [C])
    assert float(cp.linalg.norm(C - expect) / cp.linalg.norm(expect)) < 1e-5
    tuning = kern.tuning
    assert tuning is not None and not tuning.cached and len(tuning.seconds) == 7
    assert tuning.seconds[tuning.chosen] == min(tuning.seconds) and "<- chosen" in str(tuning)
    again = gemmc.compile_string(TUNED)["k"]  # another process would read the same file
    A, B, C, expect = _tuning_case(2)
    again([A], [B], [C])
    assert again.tuning.cached and again.tuning.chosen == tuning.chosen
    assert float(cp.linalg.norm(C - expect) / cp.linalg.norm(expect)) < 1e-5


def test_no_tuning_inside_a_graph_capture(monkeypatch):
    # A call captured into a CUDA graph before any tuning must not time anything (no synchronisation, no
    # allocation in the capture): it records the model's kernel, which the replay computes correctly; a later
    # plain call tunes. (The plain call before the capture uploads the plan's tables, as a capture needs.)
    import cupy as cp

    import gemmc

    kern = gemmc.compile_string(TUNED)["k"]
    A, B, C, expect = _tuning_case(3)
    C0 = C.copy(order="F")
    kern([A], [B], [C])  # GEMMC_TUNE=0 here (conftest): uploads, no tuning
    assert kern.tuning is None
    C[...] = C0
    monkeypatch.setenv("GEMMC_TUNE", "1")
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        kern([A], [B], [C])
        graph = stream.end_capture()
    assert kern.tuning is None
    cp.cuda.Device().synchronize()  # C restored on the default stream, which the non-blocking one does not wait for
    graph.launch(stream)
    stream.synchronize()
    assert float(cp.linalg.norm(C - expect) / cp.linalg.norm(expect)) < 1e-5
    C[...] = C0
    kern([A], [B], [C])
    assert kern.tuning is not None
    assert float(cp.linalg.norm(C - expect) / cp.linalg.norm(expect)) < 1e-5


def test_no_tuning_when_turned_off():
    import cupy as cp

    import gemmc

    kern = gemmc.compile_string("kernel k { layout A col gemm 4099 x 7 x 20011 algorithm tsm2r }")["k"]
    A = cp.asfortranarray(cp.ones((4099, 20011), dtype=cp.float32))
    B = cp.ones((20011, 7), dtype=cp.float32)
    C = cp.empty((4099, 7), dtype=cp.float32)
    kern([A], [B], [C])
    assert kern.tuning is None and bool((C == 20011).all())

"""The TSM2 model (paper 002) against the paper's own numbers, the auto rule, and the families' errors."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess

import pytest

import gemmc
from gemmc.families import streaming
from gemmc.families.tsm2l import planner as tsm2l
from gemmc.families.tsm2r import planner as tsm2
from gemmc.families.tsm2r import tuning
from gemmc.ir.hardware import TARGETS
from gemmc.ir.nodes import Problem
from gemmc.ir.types import DType, Layout

H100 = TARGETS["sm_90"]
# The paper's GPUs (Table 2 of paper 002): peak FLOP/s in f32 / f64 and peak bandwidth.
K40C = dataclasses.replace(H100, sm_count=15, fp32_flops=5046e9, fp64_flops=1430e9, mem_bandwidth=288e9)
M40 = dataclasses.replace(H100, sm_count=24, fp32_flops=6844e9, fp64_flops=213e9, mem_bandwidth=288e9)
V100 = dataclasses.replace(H100, sm_count=80, fp32_flops=15000e9, fp64_flops=7500e9, mem_bandwidth=900e9)


@pytest.mark.parametrize("hw, dtype, paper", [(K40C, DType.F64, 40), (M40, DType.F64, 6), (V100, DType.F64, 70)])
def test_t2_threshold_matches_the_paper(hw, dtype, paper):
    # The paper rounds: K40c ~ 40, M40 ~ 6, V100 ~ 70 (the digest recomputes 39.7, 5.9, 66.7).
    assert streaming.t2_threshold(hw, dtype) == pytest.approx(paper, rel=0.06)


def test_t2_choices_match_the_paper():
    # K40c: memory-bound for n in {2, 4, 8, 16}: t2 = n. M40, n = 16 double: compute-bound, t2 = 8.
    for n in (2, 4, 8, 16):
        assert streaming.choose_t2(n, streaming.t2_threshold(K40C, DType.F64)) == n
    assert streaming.choose_t2(16, streaming.t2_threshold(M40, DType.F64)) == 8


def test_tcf_grows_with_m_like_the_paper():
    # Paper, V100 single: tcf = 1, 1, 2, 8 for m = 1e4 .. 1e7; the model gives non-decreasing tcf, 1 at 1e4-1e5.
    tcfs = [tsm2l.tsm2l_params(Problem("p", m, 8, 8), DType.F32, V100).tcf for m in (10**4, 10**5, 10**6, 10**7)]
    assert tcfs[:2] == [1, 1] and tcfs == sorted(tcfs) and tcfs[-1] >= 4


def test_tsm2l_stages_row_major_rows_an_odd_number_of_vectors_apart():
    # A warp's staging rows (families/tsm2l/tsm2l.cu.j2): one per lane, an odd number of 16-byte vectors long, so that
    # a quarter warp's reads of 8 rows hit 8 distinct groups of banks; none where no row is read as vectors.
    row, col = Layout.ROW, Layout.COL
    assert tsm2l.tsm2l_stage_elems(16, 16, DType.F64, row, row) == 18  # 8 vectors -> 9
    assert tsm2l.tsm2l_stage_elems(16, 8, DType.F32, row, row) == 20  # the wider of A's and C's rows
    assert tsm2l.tsm2l_stage_elems(8, 12, DType.F32, col, row) == 12  # C only: 3 vectors, odd already
    assert tsm2l.tsm2l_stage_elems(7, 16, DType.F64, row, col) == 0  # k = 7 is no whole number of vectors
    plan = tsm2l.tsm2l_params(Problem("p", 10**7, 16, 16), DType.F64, H100, row, row)
    assert plan.stage_row == 18 and plan.smem == (16 * 16 + tsm2l.T1 * 18) * 8  # B, then 256 rows of 18 doubles
    assert "rows staged through shared memory (18 elements each)" in plan.lines()[0]
    assert tsm2l.tsm2l_params(Problem("p", 10**7, 16, 16), DType.F64, H100).smem == 16 * 16 * 8


def test_tsm2l_blocks_shrink_until_the_staging_rows_fit():
    # f64 n = 32, row-major C: 256 staging rows of 34 doubles (68 KiB) fit an H100 block, not a gfx90a workgroup's
    # 64 KiB, which gets 128 threads instead (it was error E300 for a schedule that sets no tile at all).
    p = Problem("p", 100000, 32, 4)
    h100 = tsm2l.tsm2l_params(p, DType.F64, H100, Layout.ROW, Layout.ROW)
    assert h100.t1 == tsm2l.T1 and h100.smem == (4 * 32 + 256 * 34) * 8
    mi210 = tsm2l.tsm2l_params(p, DType.F64, TARGETS["gfx90a"], Layout.ROW, Layout.ROW)
    assert mi210.t1 == 128 and mi210.smem == (4 * 32 + 128 * 34) * 8 <= TARGETS["gfx90a"].smem_per_block
    kernel = _render("l_row_f64_n32", "hip")
    assert kernel.ir.work.block == 128 and kernel.ir.work.grid[0] == -(-100000 // 128)


def test_h100_parameters_saturate_littles_law():
    plan = tsm2.tsm2r_params(Problem("p", 16384, 8, 16384), DType.F32, Layout.COL, H100)
    assert plan.t2 == 8 and plan.predicted_bandwidth == pytest.approx(H100.mem_bandwidth)


@pytest.mark.parametrize("text, family", [
    ("layout A col, B col, C col gemm 16384 x 8 x 16384", "tsm2r"),
    ("layout A col, B col, C col gemm 16384 x 32 x 16384", "tsm2r"),
    ("layout A col, B col, C col gemm 16384 x 33 x 16384", "simt"),
    ("gemm 4096 x 8 x 4096", "simt"),
    ("gemm 1000000 x 16 x 16", "tsm2l"),
    ("gemm 1000 x 16 x 16", "simt"),
    ("gemm 16384 x 8 x 16384 count 2", "simt"),
    ("gemm 16384 x 8 x 16384 tile 64x64x8", "simt"),
    ("gemm 16384 x 1 x 16384", "tsm2r"),  # row-major A (the default): TSM2R's row kernel
    ("gemm 16384 x 24 x 16384", "tsm2r"),  # the column kernel, A copied by rows (H100: 1.3-1.4x SIMT)
    ("gemm 16384 x 25 x 16384", "simt"),
    ("layout A row, B col, C col gemm 16384 x 32 x 16384", "simt"),
    ("dtype f64 gemm 16384 x 1 x 16384", "tsm2r"),  # f64, row-major A: the tensor cores' column kernel
    ("dtype f64 gemm 16384 x 8 x 16384", "tsm2r"),
    ("dtype f64 gemm 16384 x 32 x 16384", "tsm2r"),
    ("layout A col, B row, C row gemm 16384 x 32 x 16384", "tsm2r"),
    # f64 on sm_90's tensor cores: TSM2R up to n = 128 in both layouts (1.3-2.2x SIMT where measured)
    ("dtype f64 gemm 16384 x 128 x 16384", "tsm2r"),
    ("dtype f64 layout A col, B col, C col gemm 8192 x 64 x 8192", "tsm2r"),
    ("dtype f64 gemm 16384 x 129 x 16384", "simt"),
    ("layout A col, B col, C col gemm 16384 x 64 x 16384", "simt"),  # f32 keeps n <= 32
])
def test_auto_rule(text, family):
    assert gemmc.compile_string(f"kernel k {{ {text} }}")["k"].ir.family is family


@pytest.mark.parametrize("n, by_rows, rows", [(1, False, 4), (2, True, 2), (16, True, 2), (32, True, 2)])
def test_row_major_f32_copies_a_by_rows_past_1_column(n, by_rows, rows):
    # n = 1: the row kernel (k slices of 8 warps over rows); past it the column kernel with 128-byte row pieces.
    plan = gemmc.compile_string(f"kernel k {{ dtype f32 gemm 16384 x {n} x 16384 algorithm tsm2r }}")["k"].ir.plan
    assert (plan.a_by_rows, plan.rows_per_warp) == (by_rows, rows)
    if by_rows:
        assert (plan.t3, plan.kslices, plan.mma) == (32, 4, 0) and "A copied by rows" in plan.lines()[0]
        assert plan.smem == tsm2.column_smem(4, n, 32, plan.stages, 2, DType.F32, H100, 0, 1, True)


def test_auto_rule_says_why_and_keeps_sm80_at_32_columns():
    kern = gemmc.compile_string("kernel k { dtype f64 gemm 16384 x 64 x 16384 }")["k"]
    assert any("n = 64 <= 128 (f64 tensor cores)" in note for note in kern.ir.notes)
    sm80 = gemmc.compile_string("target cuda sm_80 kernel k { dtype f64 gemm 16384 x 64 x 16384 }")["k"]
    assert sm80.ir.family == "simt"  # m8n8k4 was not measured against SIMT above n = 32


@pytest.mark.parametrize("target, dtype, layout, n, mma", [
    ("sm_90", "f64", "row", 1, 16), ("sm_80", "f64", "row", 2, 0), ("sm_80", "f64", "row", 3, 8),
    ("sm_90", "f64", "col", 8, 0), ("sm_90", "f64", "col", 9, 16), ("sm_90", "f32", "row", 8, 0)])
def test_f64_tensor_cores_from_the_layouts_own_n(target, dtype, layout, n, mma):
    kern = gemmc.compile_string(f"target cuda {target} kernel k {{ dtype {dtype} layout A {layout}, B row, C row "
                                f"gemm 16384 x {n} x 16384 algorithm tsm2r }}")["k"]
    assert kern.ir.plan.mma == mma


@pytest.mark.parametrize("m, n, rows, other", [(16384, 1, 2, 1), (16384, 16, 2, 1), (8192, 1, 1, 2), (8192, 16, 1, 2),
                                                (8192, 17, 2, None), (16384, 32, 2, None), (16384, 64, 2, None)])
def test_row_major_f64_takes_1_warp_slices_and_times_the_other_shapes(m, n, rows, other):
    # 256-byte pieces of each row per batch and 4 k slices of one warp at every n. Below 17 columns 64 rows per warp,
    # or 32 where 64-row tiles are fewer than the SMs (8192: 128 tiles), and the tuning step times the other rows in
    # clusters of 1-2; from 17 it times one slice of 4 warps that share B's batches at every cluster size, and 32
    # rows per warp in slices of 2 warps in clusters of 1-2.
    kern = gemmc.compile_string(f"kernel k {{ dtype f64 gemm {m} x {n} x {m} algorithm tsm2r }}")["k"]
    plan = kern.ir.plan
    assert (plan.t3, plan.kslices, plan.row_groups, plan.t1, plan.rows_per_warp) == (32, 4, 1, 128, rows)
    found = tuning.alternatives(kern.ir, kern.target)
    assert all(alt.plan.smem <= TARGETS["sm_90"].smem_per_block for _, alt in found)
    shapes = sorted({(alt.plan.rows_per_warp, alt.plan.row_groups, alt.plan.kslices) for _, alt in found})
    if other is not None:
        assert shapes == sorted([(rows, 1, 4), (other, 1, 4)])
        assert [alt.plan.cluster for _, alt in found if alt.plan.rows_per_warp == other] == [1, 2]
        assert len(found) == tsm2.MAX_CLUSTER + 2
    else:
        assert shapes == [(1, 2, 2), (2, 1, 4), (2, 4, 1)]
        assert [alt.plan.cluster for _, alt in found if alt.plan.row_groups == 2] == [1, 2]
        assert len(found) == 2 * tsm2.MAX_CLUSTER + 2
    passes = -(-n // plan.t2)
    assert all(alt.work.grid[0] == m // (32 * alt.plan.rows_per_warp * alt.plan.row_groups) * passes * alt.plan.cluster
               for _, alt in found)
    # inspect names what is timed (`notes` and `alternatives` read the same `tuning_shapes`)
    timed = "with 32 rows per warp in 2-warp slices" if other is None else f"with {32 * other} rows per warp"
    assert f"of 1-2 {timed}" in " ".join(kern.ir.notes)


@pytest.mark.parametrize("text, message", [
    ("algorithm tsm2l gemm 100000 x 8 x 64", "TSM2L keeps a row of A in registers: k = 64 exceeds 32"),
    ("algorithm tsm2r gemm 1000 x 8 x 1000 count 4", "runs one GEMM per kernel"),
    ("algorithm tsm2r tile 64x64x8 gemm 1000 x 8 x 1000", "chooses its own tile"),
])
def test_tsm2_errors(text, message):
    with pytest.raises(gemmc.GemmcError, match=message):
        gemmc.compile_string(f"kernel k {{ {text} }}")


def test_inspect_shows_the_model():
    plan = gemmc.compile_file("examples/tsm2r.gs")["tsm2r_16k"].plan
    assert "t2 threshold" in plan and "predicted" in plan and "t3" in plan


# Every code path of the two templates: rows per lane 4, 2 and 1 (f32 n <= 16, f32 n = 32, f64 n = 32 on HIP), f64
# tensor cores (n = 16, 32 and 12: a partial fragment of 8 columns; 40: two passes, the second of 8 columns;
# m16n8k4 on sm_90, m8n8k4 on sm_80), rings of 2 and 3 stages, k split
# over a thread-block cluster and (f64 n = 16 at m = 30720: a full wave without one) within the block only, B
# read along k (column-major) and along n (row-major), f64, row-major A (warp-per-row path), runtime alpha/beta,
# TSM2L with tcf > 1. Compiled, not run: the GPU tests run them.
RENDERS = {
    "r_col_f32_m8k": "dtype f32 layout A col, B col, C col gemm 8192 x 8 x 8192 algorithm tsm2r",
    "r_col_f32_n32": "dtype f32 layout A col, B row, C row gemm 16384 x 32 x 16384 algorithm tsm2r beta runtime",
    "r_col_f64_n16": "dtype f64 layout A col, B row, C col gemm 30720 x 16 x 30720 algorithm tsm2r",
    "r_col_f64": "dtype f64 layout A col, B col, C col gemm 30720 x 32 x 30720 algorithm tsm2r",
    "r_col_f64_n12": "dtype f64 layout A col, B col, C row gemm 8195 x 12 x 8192 algorithm tsm2r beta runtime",
    "r_col_f64_n40": "dtype f64 layout A col, B col, C col gemm 8192 x 40 x 8192 algorithm tsm2r",
    "r_row_f32": "dtype f32 gemm 8192 x 16 x 8192 algorithm tsm2r alpha runtime",  # the column kernel, by rows
    "r_row_f32_n1": "dtype f32 layout A row, B col, C row gemm 8192 x 1 x 8192 algorithm tsm2r",  # the row kernel
    "l_col_f32": "dtype f32 layout A col, B col, C col gemm 10000000 x 8 x 8 algorithm tsm2l",
    "l_row_f64": "dtype f64 gemm 1000 x 5 x 7 algorithm tsm2l beta runtime",
    "l_row_f64_n32": "dtype f64 gemm 100000 x 32 x 4 algorithm tsm2l",  # staging rows past a CDNA workgroup's LDS
}


def _render(name: str, target: str):
    return gemmc.compile_string(f"kernel {name} {{ {RENDERS[name]} }}", target=target)[name]


def _compile(command: list[str], source: str, suffix: str, tmp_path) -> None:
    src = tmp_path / f"k.{suffix}"
    src.write_text(source)
    proc = subprocess.run([*command, str(src), "-o", str(tmp_path / "k.o")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]


def test_renders_cover_every_column_major_path():
    plans = [_render(name, "sm_90").ir.plan for name in RENDERS if name.startswith("r_col")]
    # f64 n = 32 on the tensor cores runs one pass, 2 rows per lane (128 accumulator registers, 2 blocks per SM, so
    # a 3-stage ring meets Little's law); n = 40 two passes of 32 columns; with FMAs (HIP) 1 row per lane
    assert {plan.rows_per_warp for plan in plans} == {2, 4}
    assert _render("r_col_f64", "hip").ir.plan.rows_per_warp == 1
    f64 = _render("r_col_f64", "sm_90").ir
    assert (f64.plan.t2, f64.plan.rows_per_warp, f64.plan.stages, f64.plan.min_blocks) == (32, 2, 3, 2)
    n40 = _render("r_col_f64_n40", "sm_90").ir
    assert n40.plan.t2 == 32 and n40.work.grid[0] == 8192 // (64 * n40.plan.row_groups) * n40.plan.cluster * 2
    assert {plan.stages for plan in plans} == {2, 3}
    assert min(plan.cluster for plan in plans) == 1 and max(plan.cluster for plan in plans) > 1


def test_alternatives_are_the_cluster_sizes_model_first():
    kernel = _render("r_col_f32_m8k", "sm_90").ir
    found = tuning.alternatives(kernel, H100)
    assert found[0][0] == f"cluster {kernel.plan.cluster} (model)" and found[0][1].plan == kernel.plan
    assert sorted(alt.plan.cluster for _, alt in found) == list(range(1, tsm2.MAX_CLUSTER + 1))
    for _, alt in found:  # same kernel but the cluster: the grid follows it
        assert dataclasses.replace(alt.plan, cluster=kernel.plan.cluster,
                                   predicted_bandwidth=kernel.plan.predicted_bandwidth) == kernel.plan
        assert alt.work.grid[0] == 8192 // 128 * alt.plan.cluster and alt.work.problems == kernel.work.problems
    assert "times clusters of 1-7 blocks" in " ".join(kernel.notes)
    # nothing to time where there are no clusters and for TSM2L
    assert tuning.alternatives(_render("r_col_f32_m8k", "sm_80").ir, TARGETS["sm_80"]) == ()
    assert tuning.alternatives(_render("l_col_f32", "sm_90").ir, H100) == ()


def test_the_row_kernel_is_timed_against_the_column_kernel_by_rows():
    # Row-major f32 n = 1 plans the row kernel; the tuning step also times the column kernel with A copied by rows
    # at every cluster size (it won at m = k = 8192, lost at 16384-30720).
    kernel = _render("r_row_f32_n1", "sm_90").ir
    found = tuning.alternatives(kernel, H100)
    assert found[0] == ("row kernel (model)", found[0][1]) and not found[0][1].plan.a_by_rows
    assert found[0][1].work.grid == kernel.work.grid
    by_rows = [alt.plan for _, alt in found[1:]]
    assert all(plan.a_by_rows and plan.t3 == 32 for plan in by_rows)
    assert sorted(plan.cluster for plan in by_rows) == list(range(1, tsm2.MAX_CLUSTER + 1))
    assert "against this row kernel" in " ".join(kernel.notes)


def test_f64_tensor_cores_share_b_between_the_warps_of_a_k_slice():
    # Column-major A on sm_90's f64 tensor cores: 2 k slices of 2 warps (a row tile of 128 rows), and the tuning
    # step times slices of 1 warp too; sm_80, the FMAs and row-major A up to 16 columns keep slices of one warp.
    kernel = _render("r_col_f64", "sm_90").ir
    plan = kernel.plan
    assert (plan.mma, plan.kslices, plan.row_groups, plan.t1) == (16, 2, 2, 128)
    assert kernel.work.grid[0] == 30720 // 128 * plan.cluster
    assert plan.smem == tsm2.column_smem(2, 32, 4, plan.stages, 2, DType.F64, H100, 16, 2)
    assert "k slices 2 of 2 warps" in plan.lines()[0]
    found = tuning.alternatives(kernel, H100)
    assert found[0][1].plan == plan and len(found) == 2 * tsm2.MAX_CLUSTER
    single = [alt for label, alt in found if label.endswith("1-warp slices")]
    assert {(alt.plan.kslices, alt.plan.row_groups) for alt in single} == {(4, 1)} and len(single) == tsm2.MAX_CLUSTER
    assert all(alt.work.grid[0] == 30720 // 64 * alt.plan.cluster for alt in single)
    assert "clusters of 1-7 blocks, and of 1-7 with 1-warp slices, and keeps" in " ".join(kernel.notes)
    for name, arch in (("r_col_f64", "sm_80"), ("r_col_f32_m8k", "sm_90")):
        assert _render(name, arch).ir.plan.row_groups == 1
    row = tsm2.tsm2r_params(Problem("p", 8192, 16, 8192), DType.F64, Layout.ROW, H100)
    assert (row.mma, row.row_groups, row.kslices) == (16, 1, 4)  # row-major A shares B past 16 columns only


def test_f64_tensor_cores_only_where_they_pay():
    # f64 n > 8 with column-major A: mma.sync m16n8k4 (sm_90) or m8n8k4 (sm_80); FMAs for n <= 8 (at the roof),
    # f32, row-major A, HIP and the consumer parts (f64 at 1/64 of f32).
    assert _render("r_col_f64", "sm_90").ir.plan.mma == 16
    assert _render("r_col_f64_n12", "sm_80").ir.plan.mma == 8
    assert "m16n8k4" in _render("r_col_f64_n16", "sm_90").source
    for name, target in [("r_col_f64", "sm_86"), ("r_col_f64", "hip"), ("r_col_f32_n32", "sm_90"),
                         ("r_row_f32", "sm_90")]:
        assert _render(name, target).ir.plan.mma == 0
    assert not hasattr(_render("l_row_f64", "sm_90").ir.plan, "mma")  # TSM2L has no tensor-core path
    n8 = gemmc.compile_string("kernel k { dtype f64 layout A col gemm 8192 x 8 x 8192 algorithm tsm2r }")["k"]
    assert n8.ir.plan.mma == 0 and "mma.sync" not in n8.source


def test_clusters_only_where_the_target_has_them():
    for target in ("sm_80", "hip"):
        plan = _render("r_col_f32_m8k", target).ir.plan
        assert plan.cluster == 1 and "__cluster_dims__" not in _render("r_col_f32_m8k", target).source
    kernel = _render("r_col_f32_m8k", "sm_90")
    assert f"__cluster_dims__({kernel.ir.plan.cluster}, 1, 1)" in kernel.source
    assert kernel.ir.work.grid[0] == 8192 // 128 * kernel.ir.plan.cluster


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", sorted(RENDERS))
def test_renders_compile_with_nvcc(name, arch, tmp_path):
    _compile([shutil.which("nvcc"), f"-arch={arch}", "-c", "-std=c++17"], _render(name, arch).standalone, "cu",
             tmp_path)


@pytest.mark.skipif(shutil.which("hipcc") is None, reason="hipcc is not installed (Debian package hipcc)")
@pytest.mark.parametrize("name", sorted(RENDERS))
def test_renders_compile_with_hipcc(name, tmp_path, monkeypatch):
    monkeypatch.setenv("HIP_PLATFORM", "amd")
    _compile([shutil.which("hipcc"), "--offload-arch=gfx90a", "--genco", "-std=c++17"],
             _render(name, "hip").standalone, "hip", tmp_path)


def test_tuning_choices_are_cached_per_shape():
    # Sizes live in the problem table, not the source: two shapes with one source must not share a tuning choice.
    from gemmc.runtime.tune import cache_key

    def kernel(m: int):
        return gemmc.compile_string(f"kernel k {{ dtype f64 layout A col, B col, C col gemm {m} x 32 x {m} "
                                    "algorithm tsm2r }")["k"].executable

    small, large = kernel(30720), kernel(32768)
    assert small.rendered.source == large.rendered.source
    assert cache_key(small, "H100") != cache_key(large, "H100") and cache_key(small, "H100") != cache_key(small, "A100")
    assert cache_key(small, "H100") == cache_key(kernel(30720), "H100")


def test_cluster_fill_reads_the_targets_measured_table():
    # A cluster's blocks share a GPC: on the H100 clusters of 7 at one block per SM fill 105 of 132 SMs (a launch of
    # 224 such blocks is 3 waves), clusters of 2 every slot; sizes not measured (past 8) take CLUSTER_FILL.
    assert tsm2.cluster_fill(H100, 1, 1) == 1.0 and tsm2.cluster_fill(H100, 2, 3) == 1.0
    assert tsm2.cluster_fill(H100, 7, 1) == pytest.approx(105 / 132)
    assert tsm2.cluster_fill(H100, 6, 1) == pytest.approx(102 / 132)
    assert tsm2.cluster_fill(H100, 16, 1) == tsm2.CLUSTER_FILL
    assert tsm2.cluster_fill(dataclasses.replace(H100, cluster_fill=()), 7, 1) == tsm2.CLUSTER_FILL
    # so row-major f64 n = 32 (one 4-warp slice, one block per SM) plans clusters of 2, not 7 (1008 -> 743 us)
    plan = tsm2.tsm2r_params(Problem("p", 16384, 32, 16384), DType.F64, Layout.ROW, H100, groups=4)
    assert (plan.row_groups, plan.cluster) == (4, 2)


def test_tuning_record_reads_as_the_benchmarks_store_it():
    from gemmc.runtime.executable import Tuning

    t = Tuning("H100", ("cluster 1 (model)", "cluster 2"), (2e-4, 1.6e-4), chosen=1, cached=False)
    assert t.chosen_label == "cluster 2" and t.microseconds == pytest.approx({"cluster 1 (model)": 200.0,
                                                                               "cluster 2": 160.0})
    assert t.model_slowdown == pytest.approx(0.25) and "took 25.0% longer" in str(t)

"""The hopper family without a GPU: the dtype spellings, the located errors of combinations that make no sense or
are not supported yet, the planner's choices, the C++ header, and the kernel compiling with nvcc for sm_90a."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess

import pytest

import gemmc
from gemmc.api import front_end
from gemmc.families.hopper.plan import HopperPlan
from gemmc.ir.hardware import TARGETS
from gemmc.ir.types import DType
from gemmc.runtime.args import expected_operands


def kernel(text: str, target: str | None = None):
    return gemmc.compile_string(text, target=target)["k"]


def diagnostics(text: str, target: str | None = None) -> list[tuple[str, int, int]]:
    with pytest.raises(gemmc.GemmcError) as info:
        gemmc.compile_string(text, target=target)
    return [(d.code, d.span.line, d.span.column) for d in info.value.diagnostics]


def test_dtype_spellings():
    one, mixed, c_only = front_end(
        "kernel one { dtype bf16 gemm 8 x 8 x 8 }\n"
        "kernel mixed { dtype A f16, B f16, C f32 gemm 8 x 8 x 8 }\n"
        "kernel c_only { dtype C f32 gemm 8 x 8 x 8 }").kernels
    assert (one.dtype, one.dtype_c, one.c_dtype, one.dtypes) == (DType.BF16, None, DType.BF16, "bf16")
    assert (mixed.dtype, mixed.c_dtype, mixed.dtypes) == (DType.F16, DType.F32, "A f16, B f16, C f32")
    assert (c_only.dtype, c_only.dtype_c) == (DType.F32, None)  # C the same as A and B: one type after all
    assert front_end("kernel k { dtype A bf16, B bf16 gemm 8 x 8 x 8 }").kernels[0].c_dtype is DType.BF16


@pytest.mark.parametrize(("text", "expected"), [
    ("kernel k {\n dtype A bf16, B f16\n gemm 8 x 8 x 8 }", [("E202", 2, 16)]),  # A and B share one type
    ("kernel k {\n dtype A bf16, C f32\n gemm 8 x 8 x 8 }", [("E202", 2, 8)]),  # B left out is f32
    ("kernel k {\n dtype A bf16, A bf16\n gemm 8 x 8 x 8 }", [("E200", 2, 16)]),
    ("kernel k {\n dtype A bf16, D f32\n gemm 8 x 8 x 8 }", [("E204", 2, 16)]),
    ("kernel k {\n dtype A bf16, B bf16, C f64\n gemm 8 x 8 x 8 }", [("E202", 2, 2)]),  # C f64 of bf16 data
    ("kernel k {\n dtype A f32, B f32, C bf16\n gemm 8 x 8 x 8 }", [("E202", 2, 2)]),  # a C type of its own
    ("kernel k {\n dtype bf16\n precision f16\n gemm 8 x 8 x 8 }", [("E202", 3, 2)]),
    ("kernel k {\n dtype bf16\n precision split bf16 x3\n gemm 8 x 8 x 8 }", [("E202", 3, 2)]),
    ("kernel k {\n dtype f16\n precision f32\n algorithm hopper\n gemm 8 x 8 x 8 }", [("E202", 3, 2)]),
    ("kernel k {\n dtype bf16\n algorithm tensorcore\n gemm 8 x 8 x 8 }", [("E202", 3, 2)]),
    ("kernel k {\n dtype f32\n algorithm hopper\n gemm 8 x 8 x 8 }", [("E202", 3, 2)]),
    ("kernel k {\n dtype bf16\n algorithm hopper\n batch { a 8 x 8 x 8 b 4 x 4 x 4 }\n}", [("E900", 4, 2)]),
    ("kernel k {\n dtype bf16\n algorithm hopper\n gemm 8 x 8 x 8 count 4\n}", [("E900", 4, 2)]),
    ("kernel k {\n dtype bf16\n algorithm hopper\n threads 256\n gemm 8 x 8 x 8 }", [("E202", 4, 2)]),
    ("kernel k {\n dtype bf16\n tile 64x64x16\n gemm 8 x 8 x 8 }", [("E202", 3, 2)]),
    ("kernel k {\n dtype bf16\n pipeline stages 1\n gemm 8 x 8 x 8 }", [("E201", 3, 2)]),
    ("kernel k {\n dtype bf16\n tile 128x256x64\n pipeline stages 5\n gemm 8 x 8 x 8 }",
     [("E300", 3, 2)]),  # 5 stages of 48 KiB exceed 227 KiB
])
def test_located_errors(text, expected):
    assert diagnostics(text) == expected


@pytest.mark.parametrize("precision", ["tf32", "split tf32 x3", "split f16 x3", "split bf16 x3"])
def test_algorithm_hopper_takes_the_f32_precisions_auto_gives_it(precision):
    text = f"kernel k {{\n precision {precision}\n algorithm hopper\n gemm 4096 x 4096 x 4096\n}}"
    assert kernel(text.replace("algorithm hopper", "algorithm auto")).ir.family == "hopper"
    assert kernel(text).ir.family == "hopper"


def test_algorithm_hopper_says_why_it_cannot_take_an_f32_kernel():
    # tf32 reads the f32 lines with TMA, which needs 16-byte multiples: one error, with the reason, at `algorithm`
    assert diagnostics("kernel k {\n precision tf32\n algorithm hopper\n gemm 4095 x 4095 x 4095\n}") == \
        [("E202", 3, 2)]
    with pytest.raises(gemmc.GemmcError) as info:
        gemmc.compile_string("kernel k {\n precision tf32\n algorithm hopper\n gemm 4095 x 4095 x 4095\n}")
    assert "16-byte" in info.value.diagnostics[0].message


@pytest.mark.parametrize("target", ["sm_80", "sm_89", "hip"])
def test_other_targets_say_what_is_supported(target):
    """`algorithm auto` computes half storage in the SIMT family there; asking for the TMA + wgmma loop is an error
    at the `algorithm` statement."""
    assert kernel("kernel k {\n dtype bf16\n gemm 8 x 8 x 8 }", target=target).ir.family == "simt"
    with pytest.raises(gemmc.GemmcError) as info:
        gemmc.compile_string("kernel k {\n dtype bf16\n algorithm hopper\n gemm 8 x 8 x 8 }", target=target)
    (d,) = info.value.diagnostics
    assert (d.code, d.span.line) == ("E202", 3) and "cuda sm_90" in d.message


@pytest.mark.parametrize(("size", "bn", "cluster", "stages"), [
    ((8192, 8192, 8192), 256, 2, 4), ((4096, 14336, 4096), 256, 2, 4), ((1024, 1024, 1024), 64, 1, 8),
    ((2055, 2039, 1027), 192, 1, 4), ((4096, 4096, 4096), 256, 1, 4), ((100, 5000, 3000), 64, 1, 8)])
def test_planner_choices(size, bn, cluster, stages):
    m, n, k = size
    plan = kernel(f"kernel k {{ dtype bf16 gemm {m} x {n} x {k} }}").ir.plan
    assert isinstance(plan, HopperPlan)
    assert (plan.bn, plan.cluster, plan.stages) == (bn, cluster, stages)
    assert plan.smem_bytes <= 232448 and plan.threads == 384


@pytest.mark.parametrize(("size", "bn", "ksplit", "stages"), [
    ((4096, 64, 16384), 64, 3, 7), ((4096, 128, 16384), 64, 2, 7), ((512, 1024, 16384), 64, 2, 7),
    ((4096, 64, 4096), 64, 3, 7), ((4096, 64, 1024), 64, 1, 8), ((4096, 128, 1024), 64, 1, 8),
    ((1024, 1024, 4096), 64, 1, 8), ((2048, 2048, 1024), 256, 1, 4), ((16384, 64, 16384), 64, 1, 8)])
def test_split_k_where_the_tiles_leave_sms_idle(size, bn, ksplit, stages):
    """Split K where the tiles leave SMs idle and K is long enough to pay for the cluster's reduction (SPLIT_KBLOCKS):
    clusters of `ksplit` blocks, no multicast pair, C stored from the cluster's sums (no TMA-store epilogue), the
    partial sums' shared memory beside the ring. The measured few-tile shapes of K 1024 keep one block per tile, as
    does a full wave of tiles."""
    m, n, k = size
    k_ = kernel(f"kernel k {{ dtype bf16 gemm {m} x {n} x {k} }}")
    plan = k_.ir.plan
    assert (plan.bn, plan.ksplit, plan.stages) == (bn, ksplit, stages)
    assert plan.smem_bytes <= 232448
    if ksplit > 1:
        assert (plan.cluster, plan.tma_store, plan.group) == (1, False, ksplit)
        assert plan.reduce_bytes == 128 * (bn + 8) * 4 + 16
        assert plan.grid(m, n, 132) == ksplit * -(-m // 128) * -(-n // bn)
        assert "split K" in k_.plan and f"__cluster_dims__({ksplit}, 1, 1)" in k_.source
        assert "mbarrier.arrive.release.cluster.shared::cluster" in k_.source
    else:
        assert plan.reduce_bytes == 0 and "hopper: split K" not in k_.plan and "__cluster_dims__" not in k_.source
        tiles = -(-m // 128) * -(-n // bn)
        assert ("no split K although" in k_.plan) == (tiles < 132)


def test_split_k_model():
    """The cluster fill bounds a wave (30 clusters of 4 at one block per SM: 32 tiles take two waves), and a split
    pays SPLIT_KBLOCKS k-blocks for its reduction."""
    from gemmc.families.hopper import planner
    from gemmc.ir.hardware import TARGETS

    hw = TARGETS["sm_90"]
    assert [planner.active_clusters(hw, s) for s in (1, 2, 3, 4)] == [132, 66, 39, 30]
    kb = planner.SPLIT_KBLOCKS
    assert planner.split_cost(4096, 64, 1024, 64, 3, hw) == 96 * (6 + kb)
    assert planner.split_cost(4096, 64, 1024, 64, 4, hw) == 2 * 96 * (4 + kb)
    assert planner.split_cost(4096, 64, 1024, 64, 1, hw) == 96 * 16
    assert planner.choose_tile(4096, 64, 1024, hw) == (64, 1)  # 96 * (6 + kb) > 96 * 16
    assert planner.choose_tile(4096, 64, 16384, hw) == (64, 3)


def test_split_k_limits():
    """The verifier refuses split K with a multicast pair or with the TMA-store epilogue."""
    from gemmc.families.hopper import steps
    from gemmc.ir.hardware import TARGETS

    k_ = kernel("kernel k { dtype bf16 gemm 4096 x 128 x 16384 }").ir
    hw = TARGETS["sm_90"]
    assert steps.limits(k_, k_.plan, hw) == []
    assert any("split K" in line for line in steps.limits(k_, dataclasses.replace(k_.plan, cluster=2), hw))
    assert any("split K" in line for line in steps.limits(k_, dataclasses.replace(k_.plan, tma_store=True), hw))
    assert any("split K" in line for line in steps.limits(k_, dataclasses.replace(k_.plan, ksplit=9), hw))


def test_epilogue_plan():
    """Row-major C goes through the TMA-store epilogue (2 sub-tiles of 64 rows x 128 bytes per consumer warpgroup in
    shared memory); column-major C keeps the direct stores and its shared memory; the verifier's limits refuse a
    TMA-store plan of a column-major C."""
    from gemmc.families.hopper import steps
    from gemmc.ir.hardware import TARGETS

    row = kernel("kernel k { dtype bf16 gemm 4096 x 4096 x 4096 }")
    col = kernel("kernel k { dtype bf16 layout C col gemm 4096 x 4096 x 4096 }")
    f32 = kernel("kernel k { dtype A f16, B f16, C f32 gemm 4096 x 4096 x 4096 }").ir.plan
    assert (row.ir.plan.tma_store, col.ir.plan.tma_store, f32.tma_store) == (True, False, True)
    assert (row.ir.plan.c_box, f32.c_box) == ((64, 64), (32, 64))
    assert row.ir.plan.stages == col.ir.plan.stages == 4
    assert row.ir.plan.smem_bytes - col.ir.plan.smem_bytes == 2 * 2 * 64 * 128
    assert "TMA-stores them" in row.plan and "column-major C" in col.plan
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in row.source
    assert "cp.async.bulk.tensor.2d.global.shared::cta" not in col.source
    forced = dataclasses.replace(col.ir.plan, tma_store=True)
    assert any("column-major C" in line for line in steps.limits(col.ir, forced, TARGETS["sm_90"]))
    assert steps.limits(row.ir, row.ir.plan, TARGETS["sm_90"]) == []


def test_tile_and_stages_from_the_schedule():
    plan = kernel("kernel k { dtype bf16 tile 128x128x64 pipeline stages 3 gemm 8192 x 8192 x 8192 }").ir.plan
    assert (plan.bn, plan.stages) == (128, 3)


def test_ksplit_in_the_schedule():
    # `ksplit C` is the hopper family's split K where it runs it; the planner's model does not override it
    plan = kernel("kernel k { dtype bf16 tile 128x64x64 ksplit 2 gemm 4096 x 64 x 16384 }").ir.plan
    assert (kernel("kernel k { dtype bf16 tile 128x64x64 ksplit 2 gemm 4096 x 64 x 16384 }").ir.family, plan.bn,
            plan.ksplit, plan.cluster) == ("hopper", 64, 2, 1)
    assert kernel("kernel k { dtype bf16 tile 128x128x64 ksplit 4 gemm 4096 x 128 x 1024 }").ir.plan.ksplit == 4
    assert diagnostics("target cuda sm_90\nkernel k { dtype bf16 tile 128x256x64 ksplit 2 gemm 4096 x 64 x 16384 }"
                       ) == [("E202", 2, 23)]
    assert diagnostics("target cuda sm_90\nkernel k { dtype bf16 algorithm hopper tile 128x64x64 ksplit 8 "
                       "gemm 4096 x 64 x 16384 }") == [("E204", 2, 40)]
    # beyond the loop's clusters under `algorithm auto`: the SIMT family's split, as before
    assert kernel("kernel k { dtype bf16 tile 128x64x64 ksplit 8 gemm 4096 x 64 x 16384 }").ir.family == "simt"


def test_schedule_stages_and_tiles_beside_split_k():
    # the planner splits this K by itself; a schedule's deeper pipeline leaves no room for the partial sums, so the
    # plan does not split (it compiled before split K existed, and still does), and the note says why
    k = kernel("kernel k { dtype bf16 pipeline stages 8 gemm 4096 x 64 x 16384 }")
    assert (k.ir.plan.stages, k.ir.plan.ksplit) == (8, 1)
    assert any("`pipeline stages 8` leaves no room" in n for n in k.ir.notes)
    assert kernel("kernel k { dtype bf16 pipeline stages 3 gemm 4096 x 64 x 16384 }").ir.plan.ksplit == 3
    # a schedule's tile N that split K does not run: the note names the tile, not a cost that says the opposite
    k = kernel("kernel k { dtype bf16 tile 128x256x64 gemm 4096 x 64 x 1024 }")
    assert k.ir.plan.ksplit == 1
    assert any("not the schedule's 256" in n for n in k.ir.notes)


@pytest.mark.parametrize(("layout", "size", "staged"), [
    ("layout A row, B row", "64 x 64 x 64", ()), ("layout A row, B row", "64 x 64 x 63", ("A",)),
    ("layout A row, B row", "64 x 65 x 64", ("B",)), ("layout A col, B col", "63 x 64 x 64", ("A",)),
    ("layout A col, B col", "64 x 64 x 65", ("B",)), ("layout A row, B col", "8 x 8 x 1", ("A", "B"))])
def test_lines_tma_cannot_read_are_staged(layout, size, staged):
    k = kernel(f"kernel k {{ dtype f16 {layout} gemm {size} }}")
    assert k.ir.plan.staged == staged
    assert all(f"{op}'s lines are not 16-byte multiples" in k.plan for op in staged)


def test_tensor_geometry_and_grid():
    plan = kernel("kernel k { dtype bf16 layout A col, B col gemm 1000 x 3000 x 500 }").ir.plan
    one, pair = dataclasses.replace(plan, cluster=1), dataclasses.replace(plan, cluster=2)
    a, b = one.tensors(1000, 3000, 500)
    assert (a.inner, a.outer, a.box) == (1000, 500, (64, 64))  # M-major A: k lines of m
    assert (b.inner, b.outer, b.box) == (500, 3000, (64, one.bn))  # K-major B
    assert pair.tensors(1000, 3000, 500)[1].box == (64, one.bn // 2)  # each block of a pair loads half of B
    assert one.units(1000, 3000) == 8 * 16 and pair.units(1000, 3000) == 4 * 16  # bn 192: 16 n-tiles
    assert (one.grid(1000, 3000, 132), pair.grid(1000, 3000, 132)) == (128, 2 * 64)
    assert (one.grid(8192, 8192, 132), pair.grid(8192, 8192, 132)) == (132, 132)
    assert (one.grid(1, 1, 132), pair.grid(1, 1, 132)) == (1, 2)


def test_header_and_build_note():
    k = kernel("kernel k { dtype A bf16, B bf16, C f32 beta runtime gemm 256 x 256 x 256 }")
    assert ("cudaError_t gemmc_k(const __nv_bfloat16* const* A, const __nv_bfloat16* const* B, float* const* C, "
            "float alpha, float beta, cudaStream_t stream);") in k.header
    assert "#include <cuda_bf16.h>" in k.header and "-lcuda" in k.header
    assert "-gencode=arch=compute_90a,code=sm_90a" in k.header
    assert k.rendered.build_flags == ("-gencode=arch=compute_90a,code=sm_90a",)
    assert k.rendered.entry == "gemmc_k_hopper_bf16cf32_rrr"
    assert "cuTensorMapEncodeTiled" in k.standalone and "__grid_constant__" in k.source


def test_hip_storage_types():
    assert (DType.BF16.ctype_for("hip"), DType.F16.ctype_for("hip")) == ("hip_bfloat16", "_Float16")
    assert (DType.BF16.ctype, DType.F16.ctype) == ("__nv_bfloat16", "__half")


def test_expected_arguments_per_operand():
    exp = expected_operands(kernel("kernel k { dtype A f16, B f16, C f32 layout B col gemm 3 x 5 x 7 }").ir)
    assert [exp.dtype_of(s) for s in range(3)] == ["float16", "float16", "float32"]
    assert [col[0] for col in exp.byte_strides] == [(14, 2), (2, 14), (20, 4)]


def test_f32_tensor_core_precisions_stay_in_the_tensorcore_family():
    assert kernel("kernel k { dtype f32 precision bf16 gemm 64 x 64 x 64 }").ir.family == "tensorcore"
    assert kernel("kernel k { dtype bf16 gemm 64 x 64 x 64 }").ir.family == "hopper"


@pytest.mark.parametrize(("text", "family", "why"), [
    ("precision tf32 gemm 8192 x 8192 x 8192", "hopper", None),
    ("precision split tf32 x3 layout A col, B col, C col gemm 100 x 4 x 36", "hopper", None),
    ("precision split tf32 x3 gemm 64 x 64 x 63", "tensorcore", "the lines of A (63 f32 per line) are not 16-byte"),
    ("precision split tf32 x3 layout B col gemm 64 x 64 x 62", "tensorcore", "the lines of A (62 f32 per line) and "
     "B (62 f32 per line)"),
    ("precision tf32 layout A col gemm 65 x 64 x 64", "tensorcore", "the lines of A (65 f32 per line)"),
    ("precision tf32 algorithm tensorcore gemm 64 x 64 x 64", "tensorcore", "algorithm tensorcore in the schedule"),
    ("precision tf32 tile 128x128x32 gemm 64 x 64 x 64", "tensorcore", "the schedule's tile or threads"),
    ("precision tf32 gemm 64 x 64 x 64 count 3", "tensorcore", "a batch"),
    ("precision split f16 x3 gemm 64 x 64 x 63", "hopper", None),  # the pre-pass reads any strides
    ("precision split bf16 x3 layout A col gemm 65 x 64 x 64", "hopper", None),
    ("precision split f16 x3 gemm 64 x 64 x 64 count 3", "tensorcore", "a batch"),
    ("precision f16 gemm 64 x 64 x 64", "tensorcore", "the Hopper loop takes tf32, split tf32 x3 and the f16/bf16 "
     "splits so far"),
])
def test_f32_tf32_precisions_take_the_hopper_loop_where_tma_reads_them(text, family, why):
    k = kernel(f"kernel k {{ dtype f32 {text} }}")
    assert k.ir.family == family
    notes = [n for n in k.ir.notes if n.startswith("not the Hopper TMA loop")]
    assert (notes == []) if why is None else (why in notes[0])
    assert not [n for n in kernel(f"kernel k {{ dtype f32 {text} }}", "sm_80").ir.notes if "Hopper" in n]


@pytest.mark.parametrize(("mode", "bn", "stages", "parts"), [
    ("split tf32 x3", 128, 5, 2), ("tf32", 128, 6, 1)])
def test_f32_plan(mode, bn, stages, parts):
    plan = kernel(f"kernel k {{ dtype f32 precision {mode} gemm 8192 x 8192 x 8192 }}").ir.plan
    assert isinstance(plan, HopperPlan)
    assert (plan.bn, plan.bk, plan.stages, plan.parts, plan.elem, plan.cluster) == (bn, 32, stages, parts, 4, 1)
    # B's parts, 2 buffers, and their `ready` and `free` mbarriers
    assert plan.work_bytes == 2 * parts * bn * 32 * 4 + 4 * 8 and plan.smem_bytes <= 232448
    assert plan.a_box == (32, 128) and plan.b_box == (32, 32)  # K-major A; N-major B in boxes of 32 columns
    small = kernel(f"kernel k {{ dtype f32 precision {mode} gemm 256 x 256 x 256 }}").ir.plan
    assert small.bn == 64  # 2 x 4 tiles of N 64 cost less than 2 x 2 of N 128 on 132 SMs


@pytest.mark.parametrize(("mode", "a_planes", "b_planes", "terms"), [
    ("split f16 x3", 2, 2, ((0, 0), (0, 1), (1, 0))),  # unscaled parts: one level, no plane of B's hi * 2^11
    ("split f16 x3 method le", 2, 2, ((0, 0), (0, 1), (1, 0))),
    ("split bf16 x3", 2, 2, ((0, 0), (0, 1), (1, 0))),
    ("split bf16 x6", 3, 3, ((0, 0), (0, 1), (1, 0), (0, 2), (1, 1), (2, 0)))])
def test_split_plan(mode, a_planes, b_planes, terms):
    """An f16/bf16 split of f32 data: the pre-pass's planes in scratch (padded to the tile, aligned regions), a stage
    of one k-tile of every plane, the half-storage tile with N <= 128 (the total and a k-tile's sum)."""
    k = kernel(f"kernel k {{ dtype f32 precision {mode} gemm 1000 x 1004 x 996 }}")
    plan = k.ir.plan
    assert isinstance(plan, HopperPlan) and plan.split is not None
    assert (plan.a_planes, plan.b_planes, plan.term_planes) == (a_planes, b_planes, terms)
    assert (plan.bk, plan.elem, plan.cluster, plan.parts, plan.staged) == (64, 2, 1, 0, ())
    assert plan.bn <= 128 and plan.pads == (1024, -(-1004 // plan.bn) * plan.bn, 1024)
    assert plan.stage_bytes == (a_planes * 128 + b_planes * plan.bn) * 64 * 2
    mp, np_, kp = plan.pads
    a, b, ia, ib, total = plan.regions
    assert (a, b - a) == (0, a_planes * mp * kp * 2) and ia - b == b_planes * np_ * kp * 2
    assert (ib - ia, total - ib, plan.scratch_bytes) == (4 * mp, 4 * np_, total)
    assert all(x % 256 == 0 for x in plan.regions) and plan.prologue == (plan.prep_blocks, 256)
    ta, tb = plan.tensors(1000, 1004, 996)
    assert (ta.inner, ta.outer, tb.inner, tb.outer) == (kp, a_planes * mp, np_, b_planes * kp)  # A rows, B N-major
    assert plan.plane_steps == (mp, kp) and plan.tma_dtype == plan.split.compute
    assert f"{k.ir.precision}" in k.source and f"{k.name}" in k.rendered.prologue
    assert "2048.0f" not in k.source  # no part scaled by 2^11, no level factor in the epilogue


@pytest.mark.parametrize(("mode", "size", "bn", "stages", "cluster"), [
    ("split f16 x3", (8192, 8192, 8192), 128, 3, 2),  # 3 stages of 64 KiB, B multicast from 4 waves of tiles
    ("split bf16 x6", (8192, 8192, 8192), 128, 2, 2),  # 6 planes: 96 KiB a stage
    ("split f16 x3", (1000, 1004, 996), 64, 4, 1)])  # 64 tiles of N 64: no pair; stages of 48 KiB
def test_split_stages_and_cluster(mode, size, bn, stages, cluster):
    """A split's stage holds a k-tile of every plane, as many as fit beside the C sub-tiles; the multicast pair as for
    half storage (at least CLUSTER_MIN_WAVES waves of tiles)."""
    m, n, k_ = size
    plan = kernel(f"kernel k {{ dtype f32 precision {mode} gemm {m} x {n} x {k_} }}").ir.plan
    assert (plan.bn, plan.stages, plan.cluster) == (bn, stages, cluster)
    assert plan.smem_bytes <= TARGETS["sm_90"].smem_per_block < plan.smem_bytes + plan.stage_bytes + 16
    one_wave = cluster == 1 and -(-m // 128) * -(-n // bn) <= 132  # every tile at once: bands of ONE_WAVE_BAND
    assert plan.band * plan.cluster == (8 if one_wave else 16)
    assert plan.grid(m, n, 132) == cluster * min(132 // cluster, plan.units(m, n))


@pytest.mark.parametrize(("layouts", "k", "line_regs", "units"), [
    ("", 996, 1, 1024 + 1024 // 32),  # K-contiguous A: one line a unit, in registers; N-major B: 32 lines, 2 sweeps
    ("layout A col, B col", 996, 1, 1024 // 32 + 1024),  # M-major A: 32 lines; K-contiguous B in registers
    ("", 16384, 16, 1024 + 1024 // 32),  # the longest line the registers hold: 16 x 4 values a thread
    ("", 16385, 0, 1024 // 8 + 1024 // 32)])  # longer: 8 lines a unit, read twice (their maxima, then the split)
def test_split_prepass_lines(layouts, k, line_regs, units):
    plan = kernel(f"kernel k {{ dtype f32 precision split f16 x3 {layouts} gemm 1000 x 1004 x {k} }}").ir.plan
    assert plan.bn == 64 or layouts
    assert (plan.line_regs, plan.prep_units) == (line_regs, units)
    assert plan.prep_blocks == min(units, 8 * 132)


def test_split_layouts_and_odd_strides_stay_on_the_hopper_loop():
    """The pre-pass reads A and B at any stride and writes planes whose lines TMA reads: no staging, no fallback."""
    plan = kernel("kernel k { dtype f32 precision split f16 x3 layout A col, B col gemm 63 x 65 x 7 }").ir.plan
    assert isinstance(plan, HopperPlan) and plan.split is not None and not plan.staged
    assert not plan.a_kmajor and plan.b_kmajor and (plan.bn, plan.pads) == (64, (128, 128, 64))
    ta, tb = plan.tensors(63, 65, 7)  # A: K lines of M (planes 64 lines apart), B: N lines of K (128 apart)
    assert (ta.inner, ta.outer, tb.inner, tb.outer) == (128, 2 * 64, 64, 2 * 128)
    assert plan.plane_steps == (64, 128)


VARIANTS = [
    "dtype bf16 gemm 8192 x 8192 x 8192",
    "dtype bf16 gemm 4096 x 64 x 16384",  # split K over clusters of 3
    "dtype A f16, B f16, C f32 layout A col, B col, C col beta runtime gemm 1000 x 250 x 20000",  # split K, col-major
    "dtype f16 layout A col, B col, C col alpha runtime beta runtime gemm 1000 x 1001 x 999",
    "dtype A bf16, B bf16, C f32 layout B col beta 0.5 gemm 100 x 64 x 17",
    "dtype A f16, B f16, C f32 layout A col gemm 2055 x 2039 x 1027",
    "dtype bf16 tile 128x192x64 layout C col gemm 4096 x 4096 x 4096",
    "dtype f32 precision split tf32 x3 gemm 8192 x 8192 x 8192",
    "dtype f32 precision tf32 layout A col, B col, C col beta runtime gemm 100 x 64 x 20",
    "dtype f32 precision split tf32 x3 layout A col gemm 1000 x 1004 x 996",
    "dtype f32 precision split f16 x3 gemm 8192 x 8192 x 8192",
    "dtype f32 precision split f16 x3 method le layout A col, B col, C col beta runtime gemm 1000 x 1004 x 996",
    "dtype f32 precision split bf16 x3 layout B col alpha runtime gemm 63 x 65 x 7",
    "dtype f32 precision split bf16 x6 gemm 8192 x 8192 x 8192",  # 2 stages of 6 planes, multicast pair
    "dtype f32 precision split f16 x3 layout B col gemm 4100 x 2055 x 1000",  # both operands' lines in registers
    "dtype f32 precision split f16 x3 gemm 300 x 196 x 20000",  # lines too long for registers: two sweeps
]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("text", VARIANTS)
def test_compiles_with_nvcc_for_sm90a(text, tmp_path):
    k = kernel(f"kernel k {{ {text} }}")
    src = tmp_path / "k.cu"
    src.write_text(k.standalone)
    proc = subprocess.run(["nvcc", *k.rendered.build_flags, "-std=c++17", "-c", str(src), "-o", str(src) + ".o",
                           "-Xptxas", "-v"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "warning" not in proc.stderr, proc.stderr[-4000:]  # no wgmma serialisation, no ignored setmaxnreg
    assert " 0 bytes spill stores" in proc.stderr


@pytest.mark.parametrize(("size", "band_tiles"), [
    ((2048, 1024, 1024), 8),  # 128 tiles of 128 x 128: one wave
    ((1024, 4096, 2048), 8),  # 128 tiles of 128 x 256
    ((4096, 2048, 4096), 16),  # 256 tiles: two waves
    ((8192, 8192, 8192), 16),  # clusters of 2: 8 pairs a band
    ((2048, 1024, 4096, "tile 128x128x64 ksplit 2"), 16),  # 128 tiles of 2 blocks each: two waves on 132 SMs
    ((512, 1024, 8192, "tile 128x64x64 ksplit 4"), 16),  # 64 tiles of 4 blocks: 33 run at once
    ((512, 1024, 8192, "tile 128x128x64 ksplit 4"), 8)])  # 32 tiles of 4 blocks: one wave
def test_a_launch_of_one_wave_walks_narrower_bands(size, band_tiles):
    """The raster band holds BAND_TILES m-tiles, or ONE_WAVE_BAND where every tile runs in the first wave
    (calibration.ONE_WAVE_BAND: measured), counting a split tile's k-slices as a block each; `inspect` says which."""
    m, n, k_, *tile = size
    kern = kernel(f"kernel k {{ dtype bf16 gemm {m} x {n} x {k_} {' '.join(tile)} }}")
    plan = kern.ir.plan
    assert plan.band * plan.cluster == band_tiles
    assert f"bands of {band_tiles} m-tiles" in kern.plan

"""The pass pipeline and the SIMT planner, checked with hand-computed inputs."""

from __future__ import annotations

import dataclasses

import pytest

import gemmc
from gemmc.api import front_end
from gemmc.errors import InternalError
from gemmc.families.registry import FAMILIES
from gemmc.families.simt.plan import SimtPlan, SimtVariant, micro_tile
from gemmc.families.simt.planner import uniform_variant, with_edges, worklist
from gemmc.ir.hardware import TARGETS
from gemmc.ir.nodes import ProblemRow
from gemmc.ir.printer import format_program
from gemmc.ir.types import Precision
from gemmc.model.worklist import problem_rows, problem_tiles
from gemmc.passes import PASS_NAMES, run_pipeline
from gemmc.passes.planning import own_steps

H100 = TARGETS["sm_90"]


def kernel(text: str):
    return gemmc.compile_string(text).ir.kernels[0]


def test_pipeline_order_is_fixed():
    assert PASS_NAMES == ("check", "normalize", "select_family", "check_family", "split_precision", "choose_tiles",
                          "choose_staging", "split_k", "check_tiles", "choose_batching", "finish_plan",
                          "build_worklist", "check_resources")


def test_stop_after_leaves_later_fields_empty():
    prog = front_end("kernel k { gemm 8 x 8 x 8 }")
    after = run_pipeline(prog, stop_after="select_family", verify=True).kernels[0]
    assert after.family == "simt" and after.plan is None and after.work is None
    assert after.precision == Precision(after.dtype)


def test_passes_do_not_mutate_their_input():
    prog = front_end("kernel k { gemm 8 x 8 x 8 }")
    before = prog.kernels[0]
    run_pipeline(prog, verify=True)
    assert prog.kernels[0] is before and before.plan is None


@pytest.mark.parametrize("bm, bn, threads, expected", [
    (128, 128, 256, (8, 8)), (64, 64, 128, (4, 8)), (32, 32, 256, (2, 2)), (48, 40, 64, (6, 5)),
    (16, 16, 256, (1, 1)), (30, 30, 64, None), (64, 64, 48, None),
])
def test_micro_tile(bm, bn, threads, expected):
    assert micro_tile(bm, bn, threads) == expected


def test_uniform_tile_fills_the_machine():
    big = kernel("kernel k { gemm 4096 x 4096 x 4096 }")
    assert uniform_variant(big, H100)[0] == SimtVariant(128, 128, 16, 8, 8, 256)
    # 4 x 196 x 192-ish problems: 128x128 gives 16 blocks, 64x64 gives 48, 32x32 gives 154 >= 132 SMs.
    inc = kernel("kernel k { batch { a 196 x 192 x 192  b 196 x 16 x 192  c 196 x 96 x 192  d 196 x 64 x 192 } }")
    assert uniform_variant(inc, H100)[0].bm == 32


def test_f64_uses_smaller_micro_tiles():
    plan = kernel("kernel k { dtype f64 gemm 4096 x 4096 x 4096 }").plan
    assert isinstance(plan, SimtPlan) and all(v.tm * v.tn <= 32 for v in plan.variants)


def test_leading_dimensions_follow_layouts():
    k = kernel("kernel k { layout A col, B row, C col gemm 5 x 7 x 3 }")
    assert tuple(problem_rows(k)) == (ProblemRow(5, 7, 3, lda=5, ldb=7, ldc=5),)
    k = kernel("kernel k { layout A row, B col, C row gemm 5 x 7 x 3 count 2 }")
    assert tuple(problem_rows(k)) == (ProblemRow(5, 7, 3, lda=3, ldb=3, ldc=7),) * 2


def test_split_k_launches_each_tile_on_a_cluster():
    k = kernel("kernel k { tile 32x32x32 ksplit 3 kslices 2 threads 128 batch { a 33 x 32 x 100  b 1 x 1 x 1 } }")
    assert k.plan.ksplit == 3 and k.plan.batching.value == "none"
    assert k.work.grid == (9, 1, 1) and k.work.one_tile_per_block  # 3 tiles, 3 blocks each
    source = gemmc.compile_string("kernel k { tile 32x32x32 ksplit 2 gemm 64 x 64 x 64 }")["k"].source
    assert "__cluster_dims__(2, 1, 1)" in source and "gemmc_dsmem_load" in source
    assert str(k.tile) == "32x32x32 kslices 2 ksplit 3"


@pytest.mark.parametrize("text, code, where", [
    ("target cuda sm_80\nkernel k { tile 32x32x32 ksplit 2 gemm 64 x 64 x 64 }", "E900", "tile"),
    ("kernel k { tile 32x32x32 ksplit 9 gemm 64 x 64 x 64 }", "E204", "tile"),
    ("kernel k { tile 32x32x32 ksplit 2 batching threshold gemm 64 x 64 x 64 }", "E202", "batching"),
    ("kernel k { tile 32x32x32 ksplit 2 ksplit 3 gemm 64 x 64 x 64 }", "E200", "ksplit 3"),
])
def test_split_k_errors_point_at_the_schedule(text, code, where):
    with pytest.raises(gemmc.GemmcError) as err:
        gemmc.compile_string(text)
    [d] = err.value.diagnostics
    assert d.code == code and text.splitlines()[d.span.line - 1][d.span.column - 1:].startswith(where)


def test_tiles_cover_odd_problem_once():
    row = ProblemRow(196, 49, 1, 1, 1, 1)
    tiles = problem_tiles(0, row, 64, 32, 0)
    assert len(tiles) == 4 * 2
    covered = {(m, n) for t in tiles for m in range(t.m0, min(t.m0 + 64, 196)) for n in range(t.n0, min(t.n0 + 32, 49))}
    assert len(covered) == 196 * 49


def test_work_list_is_one_tile_per_block():
    k = kernel("kernel k { tile 32x32x8 threads 64 batch { a 33 x 32 x 1  b 1 x 1 x 1 } }")
    assert k.work.grid == (3, 1, 1) and k.work.block_offsets == (0, 1, 2, 3) and k.work.one_tile_per_block
    # With one tile per block the standalone launcher bakes no offsets table and passes a null pointer.
    table = "static __device__ const int gemmc_k_simt_f32_rrr_block_offsets"
    assert table not in gemmc.compile_string("kernel k { tile 32x32x8 threads 64 gemm 33 x 32 x 1 }")["k"].standalone
    text = "kernel k { tile 32x32x8 threads 64 batching binary batch { a 1 x 1 x 1  b 1 x 1 x 1  c 1 x 2 x 1 } }"
    batched = gemmc.compile_string(text)["k"]
    assert batched.ir.work.block_offsets == (0, 2, 3) and not batched.ir.work.one_tile_per_block
    assert table in batched.standalone
    assert [(t.problem, t.m0, t.n0) for t in k.work.tiles] == [(0, 0, 0), (0, 32, 0), (1, 0, 0)]


def test_edge_tiles_take_the_half_variants():
    # 300 x 200 with 128 x 128 tiles: the last row needs 44 rows (<= 64: half height), the last column 72 (> 64);
    # 64 x 129: one row of 64 (half height) and a last column of 1 (half both).
    compiled = gemmc.compile_string("kernel k { tile 128x128x16 threads 256 batch { a 300 x 200 x 64  "
                                    "b 64 x 129 x 64 } }")["k"]
    assert isinstance(compiled.ir.plan, SimtPlan)
    plan = with_edges(compiled.ir.plan)
    assert [(v.bm, v.bn, v.threads) for v in plan.variants[1:]] == [(64, 128, 256), (128, 64, 256), (64, 64, 256)]
    assert plan.edges == ((1, 2, 3),)
    edged = compiled.with_plan(plan)  # the work list rebuilt by the pipeline's pass
    assert edged.ir.plan is plan and edged.ir.work is not None and compiled.ir.work is not None
    tiles = edged.ir.work.tiles
    assert tiles == worklist(dataclasses.replace(compiled.ir, plan=plan), plan, H100).tiles
    assert len(tiles) == len(compiled.ir.work.tiles)  # the same tiles, some with a half variant
    assert sorted((t.problem, t.m0, t.n0, t.variant) for t in tiles) == [
        (0, 0, 0, 0), (0, 0, 128, 0), (0, 128, 0, 0), (0, 128, 128, 0), (0, 256, 0, 1), (0, 256, 128, 1),
        (1, 0, 0, 1), (1, 0, 128, 3)]
    assert any("edge tiles of variant 0" in line for line in plan.lines())


def test_with_plan_refuses_another_familys_plan():
    simt_kernel = gemmc.compile_string("kernel k { tile 64x64x16 threads 256 gemm 100 x 90 x 80 }")["k"]
    tsm2_kernel = gemmc.compile_string("kernel t { dtype f64 gemm 8192 x 8 x 8192 algorithm tsm2r }")["t"]
    with pytest.raises(TypeError, match=r"with_plan: plan is a Tsm2rPlan; kernel 'k' .* takes a SimtPlan"):
        simt_kernel.with_plan(tsm2_kernel.ir.plan)


def test_tile_auto_plans_have_edge_tiles():
    plan = kernel("kernel k { tile auto(uniform) batch { a 300 x 200 x 64  b 64 x 129 x 64 } }").plan
    assert isinstance(plan, SimtPlan) and plan.edges and len(plan.variants) == 4


def test_explicit_and_sliced_tiles_keep_their_padding():
    explicit = kernel("kernel k { tile 128x128x16 threads 256 gemm 300 x 200 x 64 }").plan
    assert isinstance(explicit, SimtPlan) and len(explicit.variants) == 1 and not explicit.edges
    sliced = with_edges(dataclasses.replace(explicit, variants=(SimtVariant(32, 32, 32, 2, 4, 256, 2),)))
    assert sliced.edges == ((-1, -1, -1),) and len(sliced.variants) == 1


def test_decisions_are_explained():
    k = kernel("kernel k { gemm 4096 x 4096 x 4096 }")
    assert any("family simt" in n for n in k.notes) and any("tile auto" in n for n in k.notes)
    assert any("batching" in n for n in k.notes)


def test_launch_bound_caps_the_128x128x8_variant_at_two_blocks():
    # ptxas fits 128x128x8/256 in 128 registers without spilling, not 128x128x16 (arrays 112 + headroom > 128)
    # nor f64 128x64x8 (bench/results/irregular/2026-11-22_devhost_simt_registers.txt).
    p8 = kernel("kernel k { gemm 4096 x 4096 x 4096 tile 128x128x8 threads 256 }").plan
    assert (p8.min_blocks, p8.reg_cap, p8.regs_estimate) == (2, 128, 128)
    assert "__launch_bounds__(256, 2)" in gemmc.compile_string(
        "kernel k { gemm 64 x 64 x 64 tile 128x128x8 threads 256 }")["k"].source
    p16 = kernel("kernel k { gemm 4096 x 4096 x 4096 tile 128x128x16 threads 256 }").plan
    assert (p16.min_blocks, p16.reg_cap) == (1, 255)
    f64 = kernel("kernel k { dtype f64 gemm 4096 x 4096 x 4096 tile 128x64x8 threads 256 }").plan
    assert f64.min_blocks == 1


def test_hip_kernels_get_no_minimum_blocks_bound():
    k = gemmc.compile_string("target hip gfx90a kernel k { gemm 64 x 64 x 64 tile 128x128x8 threads 256 }")["k"]
    assert k.ir.plan.min_blocks == 0 and "__launch_bounds__(256)" in k.source


# (tile, threads, f64, ptxas registers as planned) from bench/results/irregular/2026-11-22_devhost_simt_registers.txt
PTXAS = [((128, 128, 8), 256, False, 128), ((128, 128, 16), 256, False, 199), ((128, 64, 8), 256, False, 113),
         ((16, 16, 32), 128, False, 71), ((16, 32, 32), 128, False, 96), ((32, 32, 32), 128, False, 113),
         ((64, 64, 16), 256, False, 95), ((64, 128, 8), 128, False, 189), ((64, 64, 8), 256, True, 124),
         ((128, 64, 8), 256, True, 172)]


@pytest.mark.parametrize("tile, threads, f64, regs", PTXAS)
def test_register_estimate_is_within_fifteen_percent_of_ptxas(tile, threads, f64, regs):
    # The old estimate was 17-85% low (docs/PERFORMANCE-irregular.md), which skewed the occupancy model.
    text = f"kernel k {{ dtype {'f64' if f64 else 'f32'} tile {tile[0]}x{tile[1]}x{tile[2]} threads {threads} " \
           "gemm 300 x 300 x 300 }"
    estimate = kernel(text).plan.regs_estimate
    assert abs(estimate - regs) <= 0.15 * regs


def test_every_family_step_is_a_pipeline_step_with_its_contract():
    for fam in FAMILIES:
        names = [name for name, _ in fam.steps]
        assert names == sorted(names, key=PASS_NAMES.index) and "finish_plan" in names, fam.name
        for name, step in fam.steps:
            assert "Requires" in step.__doc__ and "Guarantees" in step.__doc__, f"{fam.name}.{name}"


def test_a_misspelt_or_misplaced_step_is_refused():
    class Misspelt:
        name = "misspelt"
        steps = (("choose_tile", lambda k, hw: k), ("finish_plan", lambda k, hw: k))

    class Misplaced:
        name = "misplaced"
        steps = (("finish_plan", lambda k, hw: k), ("choose_tiles", lambda k, hw: k))

    for fam in (Misspelt(), Misplaced()):
        with pytest.raises(InternalError, match=f"family {fam.name}'s steps"):
            own_steps(fam)


@pytest.mark.parametrize("text, decided", [
    ("kernel k { batch { a 196 x 192 x 192  b 196 x 16 x 192 } }", "batching not chosen yet"),
    ("kernel k { precision split f16 x3 algorithm tensorcore gemm 512 x 512 x 512 }",
     "block 64x64x32, warp tile 64x64, 128 threads"),
    ("kernel k { gemm 16384 x 8 x 16384 layout A col algorithm tsm2r }", "tsm2r column kernel: t1 128, t2 8"),
    ("kernel k { gemm 1000000 x 8 x 8 algorithm tsm2l }", "tsm2l: tcf 1"),
])
def test_a_draft_carries_the_decisions_between_the_steps(text, decided):
    prog = front_end(text)
    tiles = run_pipeline(prog, stop_after="choose_tiles", verify=True).kernels[0]
    assert tiles.plan is None and tiles.draft is not None
    assert decided in format_program(dataclasses.replace(prog, kernels=(tiles,)))
    finished = run_pipeline(prog, stop_after="finish_plan", verify=True).kernels[0]
    assert finished.draft is None and finished.plan == run_pipeline(prog).kernels[0].plan


def test_each_step_decides_its_part():
    # Paper 001's split before the tile; TSM2R's ring before its cluster; SIMT's batching last.
    tc = [run_pipeline(front_end("kernel k { precision tf32 algorithm tensorcore gemm 512 x 512 x 512 }"),
                       stop_after=step).kernels[0] for step in ("split_precision", "choose_tiles", "choose_staging")]
    assert (tc[0].draft.split.compute, tc[0].draft.variant, tc[1].draft.stages) == ("tf32", None, 0)
    assert tc[1].draft.variant is not None and tc[2].draft.stages == 4
    r = [run_pipeline(front_end("kernel k { gemm 16384 x 8 x 16384 layout A col algorithm tsm2r }"),
                      stop_after=step).kernels[0].draft for step in ("choose_staging", "split_k")]
    assert (r[0].stages, r[0].cluster, r[1].cluster) == (2, 0, r[1].cluster) and r[1].cluster >= 1
    simt = [run_pipeline(front_end("kernel k { tile 32x32x32 ksplit 2 gemm 64 x 64 x 640 }"),
                         stop_after=step).kernels[0].draft for step in ("choose_tiles", "split_k", "choose_batching")]
    assert (simt[0].tiling.ksplit, simt[1].tiling.ksplit, simt[1].batched, simt[2].batched) == (1, 2, False, True)


def test_stop_after_names_a_pass():
    with pytest.raises(ValueError, match="no pass named 'plan_family'; the passes are: check, normalize, "):
        run_pipeline(front_end("kernel k { gemm 8 x 8 x 8 }"), stop_after="plan_family")


def test_one_run_shows_the_program_after_each_pass_as_a_stop_there_would():
    text = ("kernel a { batch { p 196 x 192 x 192  q 7 x 5 x 3 } }\n"
            "kernel b { precision split bf16 x3 gemm 300 x 200 x 100 }\n"
            "kernel r { gemm 16384 x 8 x 16384 layout A col algorithm tsm2r }")
    seen: list[tuple[str, object]] = []
    final = run_pipeline(front_end(text), observe=lambda name, program: seen.append((name, program)))
    assert [name for name, _ in seen] == list(PASS_NAMES) and seen[-1][1] == final
    for name, program in seen:
        assert program == run_pipeline(front_end(text), stop_after=name), name


def test_errors_of_every_kernel_are_reported_kernel_by_kernel():
    # b fails at check, a at check_family (a later pass): both are reported, a's first.
    text = "kernel a { pipeline stages 3 gemm 8 x 8 x 8 }\nkernel b { threads 48 gemm 8 x 8 x 8 }"
    shown = []
    with pytest.raises(gemmc.GemmcError) as err:
        run_pipeline(front_end(text), observe=lambda name, _: shown.append(name))
    assert [d.message for d in err.value.diagnostics] == [
        "the SIMT family has 1 or 2 pipeline stages, not 3", "threads 48 is not a multiple of the warp size (32)"]
    assert shown == []  # no pass got every kernel through


@pytest.mark.parametrize("text", ["kernel k { tile 48x48x8  gemm 100 x 100 x 100 }",
                                  "kernel k { tile 48x48x8  layout B col  grouped M n 97 k 41 groups 8 }"])
def test_a_tile_whose_threads_are_not_whole_warps_is_refused_at_the_tile(text):
    """An explicit tile without `threads` takes one thread per 16 outputs; where that is not whole warps (48 x 48:
    144) the tile's named barriers would be an illegal instruction on the GPU: refused at the tile, with a count
    that is."""
    with pytest.raises(gemmc.GemmcError) as err:
        gemmc.compile_string(text)
    d = err.value.diagnostics[0]
    assert d.code == "E301" and "gives 144 threads" in d.message and "threads 128" in (d.hint or "")
    assert text[d.span.column - 1:].startswith("tile 48x48x8")
    assert gemmc.compile_string(text.replace("tile 48x48x8", "tile 48x48x8 threads 128"))["k"].ir.plan.threads == 128


def test_a_family_refuses_another_familys_plan_as_a_gemmc_bug():
    import dataclasses

    from gemmc.codegen import render_kernel
    from gemmc.errors import InternalError

    simt = gemmc.compile_string("kernel k { gemm 64 x 64 x 64 }")["k"]
    tsm2 = gemmc.compile_string("kernel t { dtype f64 gemm 8192 x 8 x 8192 algorithm tsm2r }")["t"]
    wrong = dataclasses.replace(simt.ir, plan=tsm2.ir.plan)
    with pytest.raises(InternalError, match=r"codegen.simt: kernel 'k': expected a SimtPlan, got a? ?Tsm2rPlan"):
        render_kernel(wrong, simt.target)

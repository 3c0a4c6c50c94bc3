"""The IR verifier (gemmc/passes/verify.py): it accepts what the pipeline plans, after every pass, and names the
pass after which hand-broken IR breaks an invariant, with the broken invariant in words."""

from __future__ import annotations

import dataclasses

import pytest

import gemmc
from gemmc.api import front_end
from gemmc.errors import InternalError
from gemmc.families.base import GridTile
from gemmc.families.simt.plan import SimtVariant
from gemmc.ir.hardware import TARGETS
from gemmc.ir.nodes import ProblemRow, ProblemTable, TileTable, WorkTile
from gemmc.model.raster import table as raster_table
from gemmc.passes import PASS_NAMES, run_pipeline
from gemmc.passes.planning import BY_FAMILY
from gemmc.passes.verify import grid_coverage, tile_coverage, verify
from tests.conftest import EXAMPLES

H100 = TARGETS["sm_90"]


def through(name: str) -> tuple[str, ...]:
    """The pipeline's passes up to and including `name`."""
    return PASS_NAMES[:PASS_NAMES.index(name) + 1]


def planned(text: str):
    return gemmc.compile_string(text)["k"].ir


def with_tiles(kernel, tiles: list[tuple[int, int, int, int]]):
    """The kernel with a work list of these tiles, one per block (so that only their coverage can be wrong)."""
    assert kernel.work is not None
    work = dataclasses.replace(kernel.work, tiles=TileTable.of(WorkTile(*t) for t in tiles),
                               block_offsets=tuple(range(len(tiles) + 1)), grid=(len(tiles), 1, 1), raster=None)
    return dataclasses.replace(kernel, work=work)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_passes_after_every_pass(path):
    seen = []
    text = path.read_text()
    program = run_pipeline(front_end(text, filename=str(path)), source=text, verify=True,
                           observe=lambda name, _: seen.append(name))
    assert tuple(seen) == PASS_NAMES
    for kernel in program.kernels:
        verify(kernel, program.target, PASS_NAMES)


# 64 x 64 in 32 x 32 tiles, in launch order: (0, 0), (32, 0), (0, 32), (32, 32).
FOUR_TILES = "kernel k { tile 32x32x8 threads 64 gemm 64 x 64 x 8 }"


def test_a_dropped_tile_is_named():
    k = planned(FOUR_TILES)
    assert raster_table(k.work.raster)[0][:, 1:3].tolist() == [[0, 0], [32, 0], [0, 32], [32, 32]]
    verify(with_tiles(k, [(0, 0, 0, 0), (0, 32, 0, 0), (0, 0, 32, 0), (0, 32, 32, 0)]), H100, PASS_NAMES)
    broken = with_tiles(k, [(0, 0, 0, 0), (0, 0, 32, 0), (0, 32, 32, 0)])
    with pytest.raises(InternalError) as err:
        verify(broken, H100, PASS_NAMES)
    assert err.value.where == "check_resources"
    assert str(err.value) == ("internal error in check_resources: kernel 'k': problem 0: rows [32, 64) x columns "
                              "[0, 32) are in no tile")


def test_a_duplicated_tile_is_named():
    broken = with_tiles(planned(FOUR_TILES), [(0, 0, 0, 0), (0, 32, 0, 0), (0, 0, 32, 0), (0, 32, 32, 0),
                                              (0, 0, 0, 0)])
    with pytest.raises(InternalError, match=r"^internal error in build_worklist: kernel 'k': problem 0: rows \[0, "
                                            r"32\) x columns \[0, 32\) are in more than one tile$"):
        verify(broken, H100, through("build_worklist"))


def test_a_plan_of_another_family_is_named():
    simt = planned("kernel k { gemm 100 x 90 x 80 }")
    tsm2r = gemmc.compile_string("kernel t { dtype f64 gemm 8192 x 8 x 8192 algorithm tsm2r }")["t"].ir
    broken = dataclasses.replace(simt, plan=tsm2r.plan)
    with pytest.raises(InternalError, match=r"^internal error in finish_plan: kernel 'k': plan is a Tsm2rPlan; "
                                            r"family simt plans with a SimtPlan$"):
        verify(broken, H100, through("finish_plan"))


def test_a_block_over_the_thread_limit_is_named_from_check_resources_on():
    k = planned("kernel k { tile 128x128x8 threads 1024 gemm 128 x 128 x 8 }")
    wide = SimtVariant(128, 128, 8, 2, 4, 2048)  # a sound split of the tile, over twice the threads a block has
    broken = dataclasses.replace(k, plan=dataclasses.replace(k.plan, variants=(wide,)),
                                 work=dataclasses.replace(k.work, block=2048))
    verify(broken, H100, through("build_worklist"))  # a user's tile may still be too large: check_resources says so
    with pytest.raises(InternalError) as err:
        verify(broken, H100, PASS_NAMES)
    assert str(err.value) == ("internal error in check_resources: kernel 'k': the block has 2048 threads; sm_90 "
                              "allows 1024")


def test_a_grid_that_misses_rows_is_named():
    k = gemmc.compile_string("kernel t { gemm 16384 x 8 x 16384 algorithm tsm2r layout A col }")["t"].ir
    verify(k, H100, PASS_NAMES)
    grid = k.work.grid
    broken = dataclasses.replace(k, work=dataclasses.replace(k.work, grid=(grid[0] - 1, 1, 1)))
    rows = k.plan.row_groups * 32 * k.plan.rows_per_warp
    tiles = -(-16384 // rows)
    with pytest.raises(InternalError, match=rf"kernel 't': grid \({grid[0] - 1}, 1, 1\) has {grid[0] - 1} blocks; "
                                            rf"{tiles} tiles of {rows} x 8 outputs, {k.plan.cluster} block\(s\) each, "
                                            rf"need {grid[0]}$"):
        verify(broken, H100, PASS_NAMES)


def test_fields_decided_too_early_are_named():
    checked = run_pipeline(front_end("kernel k { gemm 8 x 8 x 8 }"), stop_after="check").kernels[0]
    planned_early = dataclasses.replace(checked, family="simt", plan=planned("kernel k { gemm 8 x 8 x 8 }").plan)
    with pytest.raises(InternalError, match=r"^internal error in normalize: kernel 'k': a family, a plan before "
                                            r"select_family$"):
        verify(planned_early, H100, through("normalize"))
    with pytest.raises(InternalError, match=r"^internal error in choose_tiles: kernel 'k': a plan before finish_plan$"):
        verify(planned_early, H100, through("choose_tiles"))


def test_a_step_that_breaks_an_invariant_fails_the_pipeline_and_the_test_suite(monkeypatch):
    own = BY_FAMILY["simt"]["choose_batching"]

    def plans_too_early(kernel, hw):
        batched = own(kernel, hw)
        return dataclasses.replace(batched, plan=batched.draft.tiling)

    monkeypatch.setitem(BY_FAMILY["simt"], "choose_batching", plans_too_early)
    assert run_pipeline(front_end(FOUR_TILES)).kernels[0].plan is not None  # unverified, the bug goes by
    with pytest.raises(InternalError, match="internal error in choose_batching: kernel 'k': a plan before finish_plan"):
        run_pipeline(front_end(FOUR_TILES), verify=True)
    with pytest.raises(InternalError, match="in choose_batching"):  # tests/conftest.py verifies every API compile
        gemmc.compile_string(FOUR_TILES)


def rows(*sizes: tuple[int, int]) -> ProblemTable:
    return ProblemTable.of(ProblemRow(m, n, 1, 1, 1, 1) for m, n in sizes)


def tiles(*records: tuple[int, int, int, int]) -> TileTable:
    return TileTable.of(WorkTile(*r) for r in records)


def test_coverage_is_checked_band_by_band_over_problems():
    # Problem 0, 46 x 40: a 32 x 32 tile, a half-height edge tile below it and a 32 x 8 column (variants 0, 1, 2);
    # problem 1, 10 x 10: one tile that overhangs both edges.
    shapes = ((32, 32), (16, 32), (32, 8))
    good = [(0, 0, 0, 0), (0, 32, 0, 1), (0, 0, 32, 2), (0, 32, 32, 2), (1, 0, 0, 0)]
    assert tile_coverage(rows((46, 40), (10, 10)), tiles(*good), shapes) == []
    shifted = [*good[:3], (0, 31, 32, 2), good[4]]  # the last column's second tile starts a row early
    assert tile_coverage(rows((46, 40), (10, 10)), tiles(*shifted), shapes) == [
        "problem 0: rows [31, 32) x columns [32, 40) are in more than one tile"]
    assert tile_coverage(rows((46, 40), (10, 10)), tiles(*good[:4]), shapes) == [
        "problem 1: rows [0, 10) are in no tile"]
    narrow = [*good[:2], (0, 0, 33, 2), (0, 32, 32, 2), good[4]]  # a column of the first band left out
    assert tile_coverage(rows((46, 40), (10, 10)), tiles(*narrow), shapes) == [
        "problem 0: rows [0, 32) x columns [32, 33) are in no tile"]
    assert tile_coverage(rows((46, 40)), tiles((0, 0, 0, 0), (0, 32, 0, 1)), shapes) == [
        "problem 0: rows [0, 32) x columns [32, 40) are in no tile",
        "problem 0: rows [32, 46) x columns [32, 40) are in no tile"]


def test_coverage_names_tiles_outside_their_problem_and_counts_many_faults():
    shapes = ((32, 32),)
    assert tile_coverage(rows((50, 40)), tiles((0, 64, 0, 0)), shapes) == [
        "tile 0 at (64, 0) lies outside the 50 x 40 outputs of problem 0"]
    assert tile_coverage(rows((50, 40)), tiles((2, 0, 0, 0)), shapes) == ["tile 0 names problem 2; there are 1"]
    assert tile_coverage(rows((50, 40)), tiles((0, 0, 0, 1)), shapes) == ["tile 0 names variant 1; the plan has 1"]
    empty = tile_coverage(rows(*[(8, 8)] * 5), tiles(), shapes)
    assert empty == [f"problem {p}: rows [0, 8) are in no tile" for p in range(3)] + ["2 more such faults"]


GROUPED = "kernel k { dtype f32 grouped M n 256 k 128 groups 8 }"


def test_a_persistent_grid_over_sizes_given_at_run_time_needs_one_block_and_no_more():
    # No problem rows: any number of tiles may come with a call, so any grid of blocks covers them; none does not.
    assert grid_coverage(ProblemTable(), (132, 1, 1), GridTile(128, 128, persistent=True)) == []
    assert grid_coverage(ProblemTable(), (0, 1, 1), GridTile(128, 128, persistent=True)) == [
        "grid (0, 1, 1) has 0 persistent blocks for 0 tiles of 128 x 128 outputs"]
    # With the sizes known, more persistent blocks than tiles still leaves blocks idle: named as before.
    rows = ProblemTable.of([ProblemRow(100, 100, 8, 8, 100, 100)])
    assert grid_coverage(rows, (2, 1, 1), GridTile(128, 128, persistent=True)) == [
        "grid (2, 1, 1) has 2 persistent blocks for 1 tiles of 128 x 128 outputs"]


def test_a_dynamic_kernel_passes_and_its_persistent_grid_and_shared_memory_are_checked():
    k = planned(GROUPED)
    assert k.problems == () and len(k.work.problems) == 0
    verify(k, H100, PASS_NAMES)
    # The scheduler's arrays are static shared memory: the launch's dynamic share is the k-tile buffers alone.
    assert k.work.smem_bytes == k.plan.smem_bytes - k.plan.static_smem_bytes == k.plan.tile_smem
    with pytest.raises(InternalError, match=r"kernel 'k': grid \(0, 1, 1\) has 0 persistent blocks"):
        verify(dataclasses.replace(k, work=dataclasses.replace(k.work, grid=(0, 1, 1))), H100, PASS_NAMES)
    whole = dataclasses.replace(k.work, smem_bytes=k.plan.smem_bytes)
    with pytest.raises(InternalError, match=rf"{k.plan.smem_bytes} B of dynamic shared memory; the plan's "
                                            rf"{k.plan.threads} and {k.plan.tile_smem} B"):
        verify(dataclasses.replace(k, work=whole), H100, through("build_worklist"))


def test_a_dynamic_plan_that_breaks_its_limits_is_named():
    k = planned(GROUPED)
    fewer = dataclasses.replace(k.plan, classes=k.plan.classes[:-1])
    with pytest.raises(InternalError, match=rf"finish_plan: kernel 'k': {len(fewer.classes)} size classes for "
                                            rf"{len(fewer.tiles.variants)} variants"):
        verify(dataclasses.replace(k, plan=fewer, work=None), H100, through("finish_plan"))
    other = dataclasses.replace(k.plan, max_groups=9)
    with pytest.raises(InternalError, match="grouping and group bound are not the kernel's `grouped` declaration"):
        verify(dataclasses.replace(k, plan=other, work=None), H100, through("finish_plan"))

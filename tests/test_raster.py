"""Uniform launches (a single GEMM, a `count` batch) plan their tiles as a raster the kernel computes
(WorkList.raster, model/raster.py): the work list holds a few numbers whatever the tile count, the computed tiles
are the ones a tile table would list, and the verifier's check of the numbers agrees with listing them."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

import gemmc
from gemmc.errors import GemmcError
from gemmc.families.simt import batching
from gemmc.grammar import limits
from gemmc.ir.hardware import TARGETS
from gemmc.ir.nodes import Kernel, Problem, ProblemTable, Raster, TileTable, WorkList
from gemmc.ir.printer import format_kernel
from gemmc.ir.types import Batching
from gemmc.model import raster as rm
from gemmc.model.worklist import problem_rows, tile_table
from gemmc.passes.verify import ENUMERATED, raster_coverage, tile_coverage

HUGE = [
    ("gemm 2147483647 x 64 x 64", 16777216),
    ("gemm 268435456 x 64 x 64", 2097152),
    ("gemm 2147483647 x 2147483647 x 4", 562949953421312),
    ("algorithm simt gemm 268435456 x 4 x 4", 16777216),
    ("precision tf32 gemm 2147483647 x 2147483647 x 2147483647", 140737488355328),
    ("gemm 65536 x 65536 x 64 count 1024", 268435456),
    ("tile 16x16x16 threads 32 gemm 1024 x 1024 x 64 count 1048576", 4294967296),
]


@pytest.mark.parametrize("text, tiles", HUGE)
def test_huge_uniform_launches_plan_and_render_with_a_work_list_of_a_few_numbers(text, tiles):
    k = gemmc.compile_string(f"kernel k {{ {text} }}")["k"]
    work = k.ir.work
    assert work.raster is not None and work.raster.tiles == tiles == work.tile_count
    assert len(work.tiles) == 0 and work.block_offsets == ()
    assert 1 <= work.grid[0] <= limits.MAX_GRID_X and work.grid[1:] == (1, 1)
    assert work.grid[0] == min(work.raster.blocks, limits.MAX_GRID_X)
    assert "gemmc_raster_tile" in k.source and f"{work.raster.blocks}LL" in k.source
    # O(1) in the tiles: the launcher's tile table is one dummy row (the problem table has one row per problem)
    assert len(k.standalone) - 40 * k.ir.batch_size < 120_000
    assert f"{tiles} tiles computed on the device" in format_kernel(k.ir)


def test_a_grid_past_the_limit_strides(monkeypatch):
    monkeypatch.setattr(limits, "MAX_GRID_X", 7)
    k = gemmc.compile_string("kernel k { tile 16x16x16 threads 32 batching none gemm 100 x 100 x 100 }")["k"]
    assert k.ir.work.raster.blocks == 49 and k.ir.work.grid == (7, 1, 1)
    assert "u += gridDim.x)" in k.source


def test_hip_grids_keep_their_work_items_in_32_bits():
    hw = TARGETS["gfx90a"]
    r = Raster(problems=1, tiles_m=2**30, tiles_n=4, bm=16, bn=16, variant=0, group_m=8)
    x = rm.raster_grid(r, 256, hw)[0]
    assert x * 256 <= limits.MAX_HIP_WORK_ITEMS and x == limits.MAX_HIP_WORK_ITEMS // 256


def test_irregular_launches_past_the_tile_limit_are_still_refused():
    text = "tile 16x16x16 threads 32 batch { a 65536 x 65536 x 64 b 65536 x 65535 x 64 }"
    with pytest.raises(GemmcError) as caught:
        gemmc.compile_string(f"kernel k {{ {text} }}")
    d = caught.value.diagnostics[0]
    assert d.code == "E205" and f"gemmc lists at most {limits.MAX_TILES} per launch" in d.message


def test_a_batch_of_equal_problems_is_uniform_and_a_mixed_one_is_listed():
    same = gemmc.compile_string("kernel k { batch { a 30 x 40 x 50 b 30 x 40 x 50 } }")["k"].ir.work
    mixed = gemmc.compile_string("kernel k { batch { a 30 x 40 x 50 b 30 x 41 x 50 } }")["k"].ir.work
    assert same.raster is not None and same.raster.problems == 2
    assert mixed.raster is None and len(mixed.tiles) > 0


SHAPES = [(m, n, bm, bn, problems) for m, n in ((1, 1), (7, 300), (129, 65), (1000, 33), (64, 64), (513, 1025))
          for bm, bn in ((16, 16), (32, 128), (128, 64)) for problems in (1, 3)]


def uniform_kernel(m: int, n: int, problems: int) -> Kernel:
    return Kernel("k", (Problem("p", m, n, 8),), count=problems if problems > 1 else None)


@pytest.mark.parametrize("m, n, bm, bn, problems", SHAPES)
def test_the_computed_tiles_are_the_listed_ones_in_the_same_order(m, n, bm, bn, problems):
    kernel = uniform_kernel(m, n, problems)
    r = rm.raster(kernel, bm, bn, 0)
    listed, _ = rm.table(r)
    one = np.ones(problems, dtype=np.int64)
    expected = tile_table(one * m, one * n, one * bm, one * bn, 0 * one)
    assert np.array_equal(listed, expected)
    assert not tile_coverage(problem_rows(kernel), TileTable(listed.astype("<i4").tobytes()), [(bm, bn)])


@pytest.mark.parametrize("tiles", [1, 2, 7, 64, 1000, 4099])
@pytest.mark.parametrize("k", [1, 17, 64, 128, 200, 256, 300])
@pytest.mark.parametrize("threads, threshold", [(128, 0), (128, 50_000), (256, 270_336), (64, 10**9)])
def test_closed_form_batching_is_the_batching_loops_for_equal_k(tiles, k, threads, threshold):
    ks = np.full(tiles, k, dtype=np.int64)
    for mode, blocks in ((Batching.THRESHOLD, batching.threshold_batching(ks, threads, threshold)),
                         (Batching.BINARY, batching.binary_batching(ks))):
        per, batched = rm.batched_blocks(mode, tiles, k, batching.THETA, threads, threshold)
        r = Raster(problems=1, tiles_m=tiles, tiles_n=1, bm=1, bn=1, variant=0, group_m=8, per_block=per,
                   batched=batched)
        first, _ = rm.block_tiles(r, np.arange(r.blocks))
        assert np.append(first, tiles).tolist() == blocks.offsets.tolist()


def work_of(kernel: Kernel, r: Raster, grid: tuple[int, int, int] | None = None) -> WorkList:
    return WorkList(problems=problem_rows(kernel), tiles=TileTable(), block_offsets=(),
                    grid=grid or (r.blocks * r.cluster, 1, 1), block=128, smem_bytes=0, raster=r)


@pytest.mark.parametrize("m, n, bm, bn, problems", SHAPES)
@pytest.mark.parametrize("per_block, batched", [(1, 0), (3, 2), (5, 10**6)])
def test_the_verifier_passes_a_raster_exactly_when_its_listed_tiles_cover_once(m, n, bm, bn, problems, per_block,
                                                                               batched):
    kernel = uniform_kernel(m, n, problems)
    good = rm.raster(kernel, bm, bn, 0)
    good = dataclasses.replace(good, per_block=per_block, batched=min(batched, -(-good.tiles // per_block)))
    assert raster_coverage(work_of(kernel, good), [(bm, bn)]) == []
    broken = [dataclasses.replace(good, tiles_m=good.tiles_m + 1), dataclasses.replace(good, tiles_n=good.tiles_n - 1),
              dataclasses.replace(good, bm=bm * 2), dataclasses.replace(good, problems=problems + 1),
              dataclasses.replace(good, batched=good.tiles + 1), dataclasses.replace(good, group_m=0)]
    assert not brute_force(kernel, good, (bm, bn))
    for r in broken:
        assert raster_coverage(work_of(kernel, r, (max(1, good.blocks), 1, 1)), [(bm, bn)]), r
        if r.group_m >= 1 and r.tiles > 0 and r.bm == bm:  # what the numbers refuse, listing the tiles does too
            assert brute_force(kernel, r, (bm, bn)), r


def brute_force(kernel: Kernel, r: Raster, shape: tuple[int, int]) -> list[str]:
    """Every tile and block of the raster listed, checked as a tile table is."""
    listed, offsets = rm.table(r)
    out = tile_coverage(problem_rows(kernel), TileTable(listed.astype("<i4").tobytes()), [shape])
    return out + (["a block runs no tile"] if (np.diff(offsets) <= 0).any() else [])


def test_the_verifier_names_a_grid_past_the_raster_or_of_broken_clusters():
    kernel = uniform_kernel(100, 100, 1)
    r = dataclasses.replace(rm.raster(kernel, 32, 32, 0), cluster=2)
    assert raster_coverage(work_of(kernel, r), [(32, 32)]) == []
    assert raster_coverage(work_of(kernel, r, (r.blocks * 2 + 2, 1, 1)), [(32, 32)])
    assert raster_coverage(work_of(kernel, r, (3, 1, 1)), [(32, 32)])
    assert raster_coverage(work_of(kernel, r, (2, 2, 1)), [(32, 32)])
    uneven = WorkList(problems=ProblemTable(problem_rows(kernel).data + problem_rows(uniform_kernel(99, 100, 1)).data),
                      tiles=TileTable(), block_offsets=(), grid=(16, 1, 1), block=128, smem_bytes=0, raster=r)
    assert raster_coverage(uneven, [(32, 32)])


def test_large_rasters_are_checked_by_their_numbers_alone():
    kernel = uniform_kernel(2**31 - 1, 2**31 - 1, 1)
    r = rm.raster(kernel, 128, 128, 0)
    assert r.tiles > ENUMERATED and raster_coverage(work_of(kernel, r, (limits.MAX_GRID_X, 1, 1)), [(128, 128)]) == []


def test_the_picture_of_a_small_uniform_launch_is_its_computed_tiles():
    k = gemmc.compile_string("kernel k { tile 32x32x16 threads 64 gemm 100 x 70 x 16 count 2 }")["k"]
    svg = k.svg()
    assert svg.count('class="cell"') == 2 * 4 * 3 and "b23" in svg


def test_the_picture_of_a_huge_uniform_launch_is_refused_cleanly():
    k = gemmc.compile_string("kernel k { gemm 2147483647 x 64 x 64 }")["k"]
    with pytest.raises(GemmcError) as caught:
        k.svg()
    assert caught.value.code == "E900" and "16777216 tiles" in str(caught.value)


@pytest.mark.parametrize("source", ["kernel k { gemm 1000 x 999 x 7 count 3 }",
                                    "kernel k { precision tf32 gemm 301 x 257 x 99 }",
                                    "kernel k { dtype f64 gemm 33 x 65 x 17 }"])
def test_uniform_kernels_render_identically_twice(source):
    a, b = (gemmc.compile_string(source)["k"].standalone for _ in range(2))
    assert a == b and "gemmc_raster_tile" in a


def test_tiles_of_every_pairing_of_sizes_are_covered_once():
    for m, n, problems in itertools.product((1, 9, 17, 64, 65), (1, 8, 130), (1, 2)):
        kernel = uniform_kernel(m, n, problems)
        for group in (1, 3, 8):
            r = dataclasses.replace(rm.raster(kernel, 8, 16, 0), group_m=group)
            listed, _ = rm.table(r)
            assert not tile_coverage(problem_rows(kernel), TileTable(listed.astype("<i4").tobytes()), [(8, 16)])


def test_split_k_clusters_do_not_stride_and_past_the_grid_are_refused():
    k = gemmc.compile_string("kernel k { tile 32x32x64 ksplit 4 gemm 100 x 100 x 4096 }")["k"]
    assert k.ir.work.raster.cluster == 4 and k.ir.work.grid == (64, 1, 1)
    with pytest.raises(GemmcError) as caught:
        gemmc.compile_string("kernel k { tile 32x32x64 ksplit 4 gemm 2147483647 x 2147483647 x 4096 }")
    assert caught.value.code == "E304"

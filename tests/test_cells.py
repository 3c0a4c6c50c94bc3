"""Each family's cells (gemmc/families/cells.py): which block computes which part of C. The cells of every launch
cover every output element of every problem once and name every block of the grid; a tile table's cells are its
tiles."""

from __future__ import annotations

import numpy as np
import pytest

import gemmc
from gemmc.families.base import PlannerFamily
from gemmc.families.cells import Cells
from gemmc.families.registry import family
from gemmc.model.raster import table as raster_table
from tests.conftest import EXAMPLES, ROOT


def cells_of(kernel: gemmc.api.CompiledKernel) -> Cells:
    return family(kernel.ir.family).cells(kernel.ir, kernel.target)


def covered_once(cells: Cells, sizes: np.ndarray) -> bool:
    """Every element of every problem's C lies in exactly one cell (the part of a cell past C's edge is ignored),
    counted on the grid of the cells' own boundaries, so that a 10^7-row C costs what its cells cost."""
    for p, (m, n) in enumerate(sizes.tolist()):
        mine = cells.problem == p
        top, left = cells.m0[mine], cells.n0[mine]
        bottom, right = np.minimum(top + cells.rows[mine], m), np.minimum(left + cells.cols[mine], n)
        rows = np.unique(np.concatenate(([0, m], top, bottom)))
        cols = np.unique(np.concatenate(([0, n], left, right)))
        count = np.zeros((len(rows) - 1, len(cols) - 1), dtype=np.int64)
        for a, b, c, d in zip(*(np.searchsorted(g, e) for g, e in ((rows, top), (rows, bottom), (cols, left),
                                                                    (cols, right))), strict=True):
            count[a:b, c:d] += 1
        if not (count == 1).all():
            return False
    return True


def blocks_named(cells: Cells) -> set[int]:
    return {b for first, size in zip(cells.block.tolist(), cells.blocks.tolist(), strict=True)
            for b in range(first, first + size)}


def problem_sizes(kernel: gemmc.api.CompiledKernel) -> np.ndarray:
    return np.frombuffer(kernel.ir.work.problems.data, dtype="<i8").reshape(-1, 6)[:, :2]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_the_cells_of_every_example_cover_c_once_and_name_every_block(path):
    for kernel in gemmc.compile_file(path):
        if kernel.ir.dynamic is not None:
            continue  # sizes come with each call: no cells to check at compile time
        cells = cells_of(kernel)
        assert covered_once(cells, problem_sizes(kernel)), kernel.name
        assert blocks_named(cells) == set(range(kernel.ir.work.blocks)), kernel.name
        assert cells.kind.max() < len(cells.kinds)


@pytest.mark.parametrize("path", [p for p in EXAMPLES if p.stem not in ("tsm2r", "tsm2l")], ids=lambda p: p.stem)
def test_a_tile_tables_cells_are_its_tiles_and_the_blocks_that_run_them(path):
    for kernel in gemmc.compile_file(path):
        if kernel.ir.dynamic is not None:
            continue  # sizes come with each call: no cells to check at compile time
        cells, work = cells_of(kernel), kernel.ir.work
        if work.raster is not None:  # a uniform launch: the tiles the kernel computes, listed
            tiles, offsets = raster_table(work.raster)
        else:
            tiles, offsets = np.array(work.tiles.rows(), dtype=np.int64).reshape(-1, 4), work.block_offsets
        assert (cells.tile == np.arange(len(tiles))).all()
        assert (np.stack([cells.problem, cells.m0, cells.n0, cells.kind], axis=1) == tiles).all()
        per = int(cells.blocks[0])
        for b, (start, stop) in enumerate(zip(offsets, offsets[1:], strict=False)):
            assert (cells.block[start:stop] == b * per).all()


TSM2 = {  # each of the grids the TSM2 families launch, with an M that no row tile divides
    "tsm2r row kernel": "kernel k { dtype f32 layout A row gemm 20001 x 1 x 9000 algorithm tsm2r }",
    "tsm2r row kernel, two passes (HIP)": "target hip gfx90a\n"
                                          "kernel k { dtype f32 layout A row gemm 20001 x 40 x 900 algorithm tsm2r }",
    "tsm2r columns copied by rows": "kernel k { dtype f32 layout A row gemm 20001 x 3 x 9000 algorithm tsm2r }",
    "tsm2r clusters, two passes": "kernel k { dtype f32 layout A col, B col, C col gemm 20001 x 40 x 9000 "
                                  "algorithm tsm2r }",
    "tsm2r f64 tensor cores, three passes": "kernel k { dtype f64 layout A col, B col, C col "
                                            "gemm 20001 x 70 x 9000 algorithm tsm2r }",
    "tsm2l one pass": "kernel k { dtype f32 gemm 100003 x 8 x 8 algorithm tsm2l }",
    "tsm2l four passes": "kernel k { dtype f64 gemm 10000001 x 16 x 16 algorithm tsm2l }",
}


@pytest.mark.parametrize("text", TSM2.values(), ids=TSM2.keys())
def test_the_tsm2_grids_cover_c_once_and_name_every_block(text):
    kernel = gemmc.compile_string(text)["k"]
    cells = cells_of(kernel)
    assert covered_once(cells, problem_sizes(kernel))
    assert blocks_named(cells) == set(range(kernel.ir.work.blocks))
    assert (cells.tile == -1).all() and cells.mapping


def test_tsm2l_passes_take_rows_a_grid_apart():
    kernel = gemmc.compile_string(TSM2["tsm2l four passes"])["k"]
    cells, grid, t1 = cells_of(kernel), kernel.ir.work.grid[0], kernel.ir.plan.t1
    assert kernel.ir.plan.tcf == 4 and len(cells.kinds) == 4
    first = cells.block == 0
    assert cells.m0[first].tolist() == [r * grid * t1 for r in range(4)]  # thread i: rows i + r * gridDim * t1


def test_the_cells_of_a_cluster_name_all_its_blocks():
    kernel = gemmc.compile_string(TSM2["tsm2r clusters, two passes"])["k"]
    cells, size = cells_of(kernel), kernel.ir.plan.cluster
    assert size > 1 and (cells.blocks == size).all() and (cells.block % size == 0).all()
    assert set(cells.kind.tolist()) == {0, 1}  # two passes over n = 40 of 32 columns


def test_a_family_that_describes_no_cells_is_drawn_as_whole_problems():
    kernel = gemmc.compile_file(ROOT / "examples" / "batch_tensorcore.gs")["tc_batch"]
    cells = PlannerFamily().cells(kernel.ir, kernel.target)
    assert len(cells) == 4 and cells.unit == "problem"
    assert covered_once(cells, problem_sizes(kernel))
    assert blocks_named(cells) == set(range(kernel.ir.work.blocks))


def test_tsm2r_column_kernel_puts_a_row_tiles_passes_next_to_each_other():
    # tsm2r.cu.j2: n0 = (blockIdx.x / S % passes) * T2, row tile = blockIdx.x / S / passes (S: the cluster)
    kernel = gemmc.compile_string(TSM2["tsm2r clusters, two passes"])["k"]
    cells, plan = cells_of(kernel), kernel.ir.plan
    height = plan.row_groups * kernel.target.warp_size * plan.rows_per_warp
    assert plan.cluster == 3 and plan.t2 == 32
    first = [(int(b), int(m0), int(n0)) for b, m0, n0 in zip(cells.block, cells.m0, cells.n0, strict=True)][:3]
    assert first == [(0, 0, 0), (3, 0, 32), (6, height, 0)]


def test_tsm2r_row_kernel_takes_passes_in_y():
    # rows.cuh.j2: n0 = blockIdx.y * T2, rows from blockIdx.x * KS * RW; block b = x + y * gridDim.x
    kernel = gemmc.compile_string(TSM2["tsm2r row kernel, two passes (HIP)"])["k"]
    cells, grid = cells_of(kernel), kernel.ir.work.grid
    assert grid[1] == 2
    second = cells.block == grid[0]
    assert cells.m0[second].tolist() == [0] and cells.n0[second].tolist() == [kernel.ir.plan.t2]

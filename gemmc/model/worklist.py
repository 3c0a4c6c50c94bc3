"""Work-list construction shared by the tile-based families (SIMT, tensor core).

Pure functions: problem table rows from sizes and layouts, and output tiles in launch order. The tiles are
computed for all problems at once over numpy columns (`Sizes`, `tile_table`): a batch of 1024 problems has
thousands of tiles, and one Python record per tile would be most of the planner's cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter

import numpy as np

from gemmc.errors import Diagnostic, GemmcError
from gemmc.grammar import limits
from gemmc.ir.nodes import Kernel, Problem, ProblemRow, ProblemTable, TileTable, WorkList, WorkTile
from gemmc.ir.types import Layout
from gemmc.model.raster import GROUP_M


@dataclass(frozen=True, slots=True, eq=False)
class Sizes:
    """M, N, K of every problem, in batch order, as int64 columns: the planners' per-problem arithmetic runs
    over whole columns. Built once per pass from the kernel's problems; never part of the IR."""

    m: np.ndarray
    n: np.ndarray
    k: np.ndarray

    @staticmethod
    def of(problems: Sequence[Problem]) -> Sizes:
        m, n, k = (np.fromiter(map(attrgetter(f), problems), dtype=np.int64, count=len(problems)) for f in "mnk")
        return Sizes(m, n, k)

    @staticmethod
    def of_rows(rows: ProblemTable) -> Sizes:
        table = np.frombuffer(rows.data, dtype="<i8").reshape(-1, 6).astype(np.int64)
        return Sizes(table[:, 0], table[:, 1], table[:, 2])

    def __len__(self) -> int:
        return len(self.m)


def problem_rows(kernel: Kernel) -> ProblemTable:
    """One row per problem in batch order (a `count` batch repeats its problem), leading dimensions for
    densely packed operands in the kernel's layouts."""
    s = Sizes.of(kernel.problems)
    lda = s.k if kernel.layout_a is Layout.ROW else s.m
    ldb = s.n if kernel.layout_b is Layout.ROW else s.k
    ldc = s.n if kernel.layout_c is Layout.ROW else s.m
    table = np.stack([s.m, s.n, s.k, *(np.maximum(ld, 1) for ld in (lda, ldb, ldc))], axis=1)
    return ProblemTable(np.tile(table, (kernel.count or 1, 1)).astype("<i8").tobytes())


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def tile_table(m: np.ndarray, n: np.ndarray, bm: np.ndarray, bn: np.ndarray, variant: np.ndarray) -> np.ndarray:
    """Every bm x bn output tile of every problem as rows (problem, m0, n0, variant): problem after problem, each
    in grouped order (GROUP_M tile rows, then across columns; a last group of fewer rows likewise). All columns
    are per problem. Tile j of a problem with tm x tn tiles lies in group g = j // (GROUP_M * tn), at column
    r // rows and row g * GROUP_M + r % rows, where r is j's place in the group and rows the group's height."""
    tiles_m, tiles_n = -(-m // bm), -(-n // bn)
    per_problem = tiles_m * tiles_n
    too_many = limits.tiles_problem(float(per_problem.sum(dtype=np.float64)))  # counted before a row exists
    if too_many:
        raise GemmcError(Diagnostic("E205", too_many, hint=limits.TILES_HINT))  # build_worklist adds the line
    problem = np.repeat(np.arange(len(m)), per_problem)
    j = np.arange(len(problem)) - np.repeat(np.cumsum(per_problem) - per_problem, per_problem)
    tm, tn = tiles_m[problem], tiles_n[problem]
    group = j // (GROUP_M * tn)
    r = j - group * GROUP_M * tn
    rows = np.minimum(GROUP_M, tm - group * GROUP_M)
    return np.stack([problem, (group * GROUP_M + r % rows) * bm[problem], (r // rows) * bn[problem],
                     variant[problem]], axis=1)


def packed(table: np.ndarray) -> TileTable:
    return TileTable(table.astype("<i4").tobytes())


def problem_tiles(index: int, row: ProblemRow, bm: int, bn: int, variant: int) -> list[WorkTile]:
    """Every bm x bn output tile of one problem, in grouped order."""
    one = np.array([1])
    table = tile_table(one * row.m, one * row.n, one * bm, one * bn, one * variant)
    return [WorkTile(index, m0, n0, v) for _, m0, n0, v in table.tolist()]


def one_tile_per_block(rows: ProblemTable, shapes: tuple[tuple[int, int], ...],
                       assignment: tuple[int, ...], threads: int, smem_bytes: int) -> WorkList:
    """The work list with one output tile per block. `shapes[v]` is variant v's (bm, bn); `assignment[i]` is the
    variant of problem i (assignment is per distinct problem: a `count` batch reuses entry i % len)."""
    sizes = Sizes.of_rows(rows)
    variant = np.resize(np.asarray(assignment, dtype=np.int64), len(rows))
    bm, bn = np.array(shapes, dtype=np.int64).reshape(-1, 2).T
    table = tile_table(sizes.m, sizes.n, bm[variant], bn[variant], variant)
    offsets = tuple(range(len(table) + 1))
    return WorkList(problems=rows, tiles=packed(table), block_offsets=offsets, grid=(len(table), 1, 1),
                    block=threads, smem_bytes=smem_bytes)

"""Work-list construction shared by the tile-based families (SIMT, tensor core).

Pure functions: problem table rows from sizes and layouts, and output tiles in launch order.
"""

from __future__ import annotations

from gemmc.ir.nodes import Kernel, ProblemRow, WorkList, WorkTile
from gemmc.ir.types import Layout

GROUP_M = 8  # tile rows per launch group: consecutive blocks share B panels in L2 (the usual grouped order)


def problem_rows(kernel: Kernel) -> tuple[ProblemRow, ...]:
    """One row per problem in batch order (a `count` batch repeats its problem), leading dimensions for
    densely packed operands in the kernel's layouts."""
    rows = []
    for p in kernel.problems:
        lda = p.k if kernel.layout_a is Layout.ROW else p.m
        ldb = p.n if kernel.layout_b is Layout.ROW else p.k
        ldc = p.n if kernel.layout_c is Layout.ROW else p.m
        rows.append(ProblemRow(p.m, p.n, p.k, max(lda, 1), max(ldb, 1), max(ldc, 1)))
    return tuple(rows) * (kernel.count or 1) if kernel.count else tuple(rows)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def problem_tiles(index: int, row: ProblemRow, bm: int, bn: int, variant: int) -> list[WorkTile]:
    """Every bm x bn output tile of one problem, in grouped order (GROUP_M tile rows, then across columns)."""
    tiles_m, tiles_n = ceil_div(row.m, bm), ceil_div(row.n, bn)
    out = []
    for g in range(0, tiles_m, GROUP_M):
        for tn in range(tiles_n):
            for tm in range(g, min(g + GROUP_M, tiles_m)):
                out.append(WorkTile(index, tm * bm, tn * bn, variant))
    return out


def one_tile_per_block(rows: tuple[ProblemRow, ...], shapes: tuple[tuple[int, int], ...],
                       assignment: tuple[int, ...], threads: int, smem_bytes: int) -> WorkList:
    """The work list with one output tile per block. `shapes[v]` is variant v's (bm, bn); `assignment[i]` is the
    variant of problem i (assignment is per distinct problem: a `count` batch reuses entry i % len)."""
    tiles: list[WorkTile] = []
    for i, row in enumerate(rows):
        v = assignment[i % len(assignment)]
        tiles.extend(problem_tiles(i, row, *shapes[v], v))
    offsets = tuple(range(len(tiles) + 1))
    return WorkList(problems=rows, tiles=tuple(tiles), block_offsets=offsets, grid=(len(tiles), 1, 1),
                    block=threads, smem_bytes=smem_bytes)

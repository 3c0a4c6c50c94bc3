"""The computed work list of a uniform launch (ir/nodes.py: Raster): its construction from a plan's tile and
batching, and its enumeration for checks and pictures.

A uniform launch (a single GEMM, a `count` batch) has one problem size and one tile, so its tiles follow from a few
numbers; the kernel computes each tile's problem and corner from its index (the templates' `gemmc_raster_tile`),
with the same arithmetic as `tile_columns` here. Nothing is listed per tile: planning a GEMM of 2^24 tiles costs
what planning one of 4 does.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gemmc.grammar import limits
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel, Raster
from gemmc.ir.types import Batching

GROUP_M = 8  # tile rows per launch group: consecutive blocks share B panels in L2 (the usual grouped order)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def uniform(kernel: Kernel, assignment: Sequence[int] = (0,)) -> bool:
    """Every problem of the launch has one size and one variant: a single GEMM, a `count` batch, or a batch whose
    problems all agree (then the tiles can be computed rather than listed)."""
    if kernel.dynamic is not None or not kernel.problems:
        return False
    first = kernel.problems[0]
    return (all((p.m, p.n, p.k) == (first.m, first.n, first.k) for p in kernel.problems)
            and len(set(assignment)) == 1)


def batched_blocks(mode: Batching, tiles: int, k: int, theta: int, threads: int, threshold: int) -> tuple[int, int]:
    """(tiles per batched block, batched blocks) of paper 003's batching over `tiles` tiles of one K, in closed form:
    what families/simt/batching.py's loops give for equal K (a test compares them).

    Threshold batching fills a block up to the first tile whose K passes theta (theta // K + 1 tiles) while the
    tiles left and the blocks so far would still give more than threshold / 2 threads; then one tile a block.
    Binary batching pairs tiles while two K stay within theta."""
    if mode is Batching.THRESHOLD:
        per = theta // k + 1
        if per == 1 or tiles == 0:
            return 1, 0
        # the loop stops before block nb once 2 * threads * (tiles - nb * (per - 1)) <= threshold
        excess = 2 * threads * tiles - threshold
        stop = 0 if excess <= 0 else ceil_div(excess, 2 * threads * (per - 1))
        return per, min(stop, ceil_div(tiles, per))
    if mode is Batching.BINARY and 2 * k <= theta:
        return 2, ceil_div(tiles, 2)
    return 1, 0


def raster(kernel: Kernel, bm: int, bn: int, variant: int, per_block: int = 1, batched: int = 0,
           cluster: int = 1) -> Raster:
    """The raster of a uniform kernel's launch with bm x bn tiles of `variant`."""
    p = kernel.problems[0]
    return Raster(problems=len(kernel.problems) * (kernel.count or 1), tiles_m=ceil_div(p.m, bm),
                  tiles_n=ceil_div(p.n, bn), bm=bm, bn=bn, variant=variant, group_m=GROUP_M, per_block=per_block,
                  batched=batched, cluster=cluster)


def raster_grid(r: Raster, threads: int, hw: Hardware) -> tuple[int, int, int]:
    """The launch grid: one block (a cluster of r.cluster) per block of the mapping, or as many as the target's
    grid takes, whose blocks then stride over the rest (limits.max_grid_x). Clusters do not stride: a split k's
    blocks meet at cluster barriers once per tile (its rank 0 leaves the last one without waiting), so a grid of
    more clusters than the target takes is refused (check_resources, E304)."""
    if r.cluster > 1:
        return (max(1, r.blocks) * r.cluster, 1, 1)
    return (max(1, min(r.blocks, limits.max_grid_x(hw, threads))), 1, 1)


def tile_columns(r: Raster, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Problem, first row and first column of tiles `t` (int64): the kernel's gemmc_raster_tile."""
    t = np.asarray(t, dtype=np.int64)
    problem = t // r.per_problem
    j = t - problem * r.per_problem
    group = j // (r.group_m * r.tiles_n)
    place = j - group * r.group_m * r.tiles_n
    rows = np.minimum(r.group_m, r.tiles_m - group * r.group_m)
    return problem, (group * r.group_m + place % rows) * r.bm, (place // rows) * r.bn


def block_tiles(r: Raster, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[first, last) tiles of blocks `u` of the mapping: the kernel's loop bounds."""
    u = np.asarray(u, dtype=np.int64)
    first = np.where(u < r.batched, u * r.per_block, r.batched_tiles + (u - r.batched))
    last = np.where(u < r.batched, np.minimum(first + r.per_block, r.tiles), first + 1)
    return first, last


def table(r: Raster) -> tuple[np.ndarray, np.ndarray]:
    """Every tile as rows (problem, m0, n0, variant) in launch order, and the block offsets: the tile table this
    raster stands for. O(tiles): for checks and pictures of small launches only."""
    t = np.arange(r.tiles, dtype=np.int64)
    problem, m0, n0 = tile_columns(r, t)
    first, _ = block_tiles(r, np.arange(r.blocks, dtype=np.int64))
    offsets = np.append(first, r.tiles)
    return np.stack([problem, m0, n0, np.full_like(t, r.variant)], axis=1), offsets

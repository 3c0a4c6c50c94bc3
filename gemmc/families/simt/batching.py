"""The batching engine (paper 003 §4): output tiles -> thread blocks, several tiles per block when K is small.

A block runs its tiles one after another, so a block of tiles whose K adds up to about theta has enough work to
hide its prologue, while the block count stays high enough for the machine. Both heuristics of the paper:
threshold batching (TLP first) and binary batching (ILP first). Blocks are then ordered longest first, so
the hardware's in-order block dispatch starts the long blocks early and the short ones fill the tail.

Tiles are given as columns (each tile's K and per-thread work) and blocks come back as `Blocks`: a permutation
of the tile indices and the offsets where each block starts, which is the work list's own form.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate

import numpy as np

from gemmc.ir.types import Batching

THETA = 256  # paper 003: the sum of K worth batching up to (its V100 value; a work size, not a device limit)


@dataclass(frozen=True, slots=True, eq=False)
class Blocks:
    """Block b runs tiles `order[offsets[b]:offsets[b + 1]]` (indices into the columns given), in that order."""

    order: np.ndarray
    offsets: np.ndarray

    def lists(self) -> list[list[int]]:
        order, bounds = self.order.tolist(), self.offsets.tolist()
        return [order[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


def threshold_batching(ks: np.ndarray, block_threads: int, tlp_threshold: int, theta: int = THETA) -> Blocks:
    """Paper 003 §4.2: while (unassigned tiles + blocks so far) x threads > threshold / 2, fill the next block
    until its K sum exceeds theta; after that, every remaining tile gets its own block. Tiles are taken in
    K order (small K first), so the tiles that gain from batching are the ones batched."""
    order = np.argsort(ks, kind="stable")
    total = len(order)
    ksum = [0, *accumulate(np.asarray(ks)[order].tolist())]  # ksum[i]: K of the first i tiles in K order
    offsets = [0]
    i = 0
    while i < total:
        if (total - i + len(offsets) - 1) * block_threads > tlp_threshold / 2:
            # the block takes tiles while its K sum so far is <= theta: up to the first that makes it exceed theta
            i = bisect_right(ksum, ksum[i] + theta, lo=i + 1, hi=total)
            offsets.append(i)
        else:
            offsets.extend(range(i + 1, total + 1))
            break
    return Blocks(order, np.array(offsets, dtype=np.int64))


def binary_batching(ks: np.ndarray, theta: int = THETA) -> Blocks:
    """Paper 003 §4.3: sort by K and pair the smallest with the largest (two tiles per block at most). The
    paper's literal rule pairs every tile; here a pair is made only when its K sum stays within theta, so two
    long tiles are never serialised in one block (the paper leaves that case open)."""
    ordered = np.argsort(ks, kind="stable").tolist()
    k = np.asarray(ks).tolist()
    lo, hi = 0, len(ordered) - 1
    order: list[int] = []
    offsets = [0]
    while lo < hi:
        if k[ordered[lo]] + k[ordered[hi]] <= theta:
            order += (ordered[lo], ordered[hi])
            lo += 1
        else:
            order.append(ordered[hi])
        hi -= 1
        offsets.append(len(order))
    if lo == hi:
        order.append(ordered[lo])
        offsets.append(len(order))
    return Blocks(np.array(order, dtype=np.int64), np.array(offsets, dtype=np.int64))


def group(ks: np.ndarray, works: np.ndarray, mode: Batching, block_threads: int, tlp_threshold: int,
          theta: int = THETA) -> Blocks:
    """Blocks of tiles for `mode` (none: one tile per block), longest block first (stable for ties). `ks` and
    `works` are per tile: its K and its per-thread work (micro-tile FMAs x K)."""
    works = np.asarray(works, dtype=np.int64)
    if mode is Batching.THRESHOLD:
        blocks = threshold_batching(ks, block_threads, tlp_threshold, theta)
    elif mode is Batching.BINARY:
        blocks = binary_batching(ks, theta)
    else:
        return Blocks(np.argsort(-works, kind="stable"), np.arange(len(works) + 1))
    sizes = np.diff(blocks.offsets)
    longest = np.argsort(-np.add.reduceat(works[blocks.order], blocks.offsets[:-1]), kind="stable")
    sizes_after = sizes[longest]
    starts_after = np.cumsum(sizes_after) - sizes_after
    # tile t of the new sequence is tile t - starts_after[b] + offsets[b] of its block b's old run
    moved = np.arange(len(works)) + np.repeat(blocks.offsets[:-1][longest] - starts_after, sizes_after)
    return Blocks(blocks.order[moved], np.concatenate(([0], np.cumsum(sizes_after))))

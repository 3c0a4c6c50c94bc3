"""The batching engine (paper 003 §4): output tiles -> thread blocks, several tiles per block when K is small.

A block runs its tiles one after another, so a block of tiles whose K adds up to about theta has enough work to
hide its prologue, while the block count stays high enough for the machine. Both heuristics of the paper:
threshold batching (TLP first) and binary batching (ILP first). Blocks are then ordered longest first, so
the hardware's in-order block dispatch starts the long blocks early and the short ones fill the tail.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gemmc.ir.nodes import WorkTile
from gemmc.ir.types import Batching

THETA = 256  # paper 003: the sum of K worth batching up to (its V100 value; a work size, not a device limit)


@dataclass(frozen=True, slots=True)
class Item:
    """A tile with what batching needs: its K and its per-thread work (micro-tile FMAs x K)."""

    tile: WorkTile
    k: int
    work: int


def threshold_batching(items: Sequence[Item], block_threads: int, tlp_threshold: int,
                       theta: int = THETA) -> list[list[Item]]:
    """Paper 003 §4.2: while (unassigned tiles + blocks so far) x threads > threshold / 2, fill the next block
    until its K sum exceeds theta; after that, every remaining tile gets its own block. Tiles are taken in
    K order (small K first), so the tiles that gain from batching are the ones batched."""
    pending = sorted(items, key=lambda it: it.k)
    blocks: list[list[Item]] = []
    i = 0
    while i < len(pending):
        if (len(pending) - i + len(blocks)) * block_threads > tlp_threshold / 2:
            block, ksum = [], 0
            while i < len(pending) and ksum <= theta:
                block.append(pending[i])
                ksum += pending[i].k
                i += 1
            blocks.append(block)
        else:
            blocks.extend([it] for it in pending[i:])
            break
    return blocks


def binary_batching(items: Sequence[Item], theta: int = THETA) -> list[list[Item]]:
    """Paper 003 §4.3: sort by K and pair the smallest with the largest (two tiles per block at most). The
    paper's literal rule pairs every tile; here a pair is made only when its K sum stays within theta, so two
    long tiles are never serialised in one block (the paper leaves that case open)."""
    ordered = sorted(items, key=lambda it: it.k)
    lo, hi = 0, len(ordered) - 1
    blocks: list[list[Item]] = []
    while lo < hi:
        if ordered[lo].k + ordered[hi].k <= theta:
            blocks.append([ordered[lo], ordered[hi]])
            lo += 1
        else:
            blocks.append([ordered[hi]])
        hi -= 1
    if lo == hi:
        blocks.append([ordered[lo]])
    return blocks


def group(items: Sequence[Item], mode: Batching, block_threads: int, tlp_threshold: int,
          theta: int = THETA) -> list[list[Item]]:
    """Blocks of tiles for `mode` (none: one tile per block), longest block first (stable for ties)."""
    if mode is Batching.THRESHOLD:
        blocks = threshold_batching(items, block_threads, tlp_threshold, theta)
    elif mode is Batching.BINARY:
        blocks = binary_batching(items, theta)
    else:
        blocks = [[it] for it in items]
    return sorted(blocks, key=lambda b: -sum(it.work for it in b))

"""The device scheduler of the dynamic family, in NumPy: what every block of the persistent kernel computes from
the sizes before it takes its tiles (families/dynamic/dynamic.cu.j2 and dynamic_sched.cuh.j2 are the device
side; tests compare the two).

1. Group ends are clamped: the running maximum of the ends, within [0, rows]. Group g covers rows
   [start_g, start_{g+1}); bad ends (negative, decreasing, past the rows) give empty or shortened groups and never
   an index outside A, B or C.
2. Size classes (paper 000 §4.1 with the SIMT cost model): for every cap c on the ladder level, each group takes the
   variant of level <= c with the least tiles x weight (ties: the later variant, i.e. the larger tile).
3. The cap (paper 000 Algorithm 1, largest tiles stepped down first, by whole levels): the largest c whose TLP
   (Eq. 4: tiles x threads, summed over the groups) reaches the threshold; the smallest level when none does.
4. Tiles are numbered group by group (an inclusive prefix sum of tiles per group), n fastest within a group; block b
   takes tiles b, b + grid, b + 2 grid, ...
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gemmc.families.dynamic.plan import DynamicPlan
from gemmc.ir.dynamic import Grouping

INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True, eq=False)
class Schedule:
    """One launch's decisions: the level cap, each group's variant and tile count, the inclusive prefix of tiles."""

    cap: int
    tlp: np.ndarray  # per cap: the TLP (threads) of the launch under that cap
    variant: np.ndarray  # per group
    tiles: np.ndarray  # per group
    ends: np.ndarray  # per group: inclusive prefix sum of tiles (int32-clamped, as the device keeps it)

    @property
    def total(self) -> int:
        return int(self.ends[-1]) if len(self.ends) else 0


def column(plan: DynamicPlan, field: str) -> np.ndarray:
    """One field of every size class ("bm", "bn", "threads", "level", "weight"), indexed by variant."""
    values = [getattr(c.variant, field) if field in ("bm", "bn", "threads") else getattr(c, field)
              for c in plan.classes]
    return np.array(values, dtype=np.int64)


def clamped_starts(ends: np.ndarray, rows: int) -> np.ndarray:
    """Group g's rows are [starts[g], starts[g + 1]): the running maximum of the ends clipped to [0, rows]."""
    clipped = np.clip(np.asarray(ends, dtype=np.int64), 0, rows)
    return np.concatenate([[0], np.maximum.accumulate(clipped)]) if len(clipped) else np.zeros(1, dtype=np.int64)


def group_sizes(plan: DynamicPlan, starts: np.ndarray, m: int = 0, n: int = 0, k: int = 0
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(m, n, k) per group of a grouped form from its clamped starts and the fixed sizes."""
    rows = np.diff(starts)
    full = np.ones_like(rows)
    if plan.grouping is Grouping.M:
        return rows, full * n, full * k
    if plan.grouping is Grouping.K:
        return full * m, full * n, rows
    raise ValueError("the list form's sizes are its problems' own")


def choices(plan: DynamicPlan, m: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per cap (rows) and group (columns): the variant chosen and the TLP it adds (tiles x threads)."""
    bm, bn, threads, level, weight = (column(plan, f)[:, None] for f in ("bm", "bn", "threads", "level", "weight"))
    m, n = np.asarray(m, dtype=np.int64)[None, :], np.asarray(n, dtype=np.int64)[None, :]
    tiles = -(-m // bm) * -(-n // bn)  # variants x groups
    cost = tiles * weight
    last = len(plan.classes) - 1
    caps = len(plan.levels)
    choice = np.empty((caps, m.shape[1]), dtype=np.int64)
    for c in range(caps):
        allowed = np.where(level <= c, cost, np.iinfo(np.int64).max)
        choice[c] = last - np.argmin(allowed[::-1], axis=0)  # the least cost; ties: the later variant
    groups = np.arange(m.shape[1])
    tlp = tiles[choice, groups] * threads[choice, 0]
    return choice, tlp


def schedule(plan: DynamicPlan, m: np.ndarray, n: np.ndarray, threshold: int) -> Schedule:
    """The decisions of one launch over groups of m x n outputs (threshold in threads, Eq. 4)."""
    choice, tlp = choices(plan, m, n)
    totals = tlp.sum(axis=1)
    reached = np.flatnonzero(totals >= threshold)
    cap = int(reached[-1]) if len(reached) else 0
    variant = choice[cap]
    bm, bn = column(plan, "bm")[variant], column(plan, "bn")[variant]
    tiles = -(-np.asarray(m, dtype=np.int64) // bm) * -(-np.asarray(n, dtype=np.int64) // bn)
    return Schedule(cap, totals, variant, tiles, np.minimum(np.cumsum(tiles), INT32_MAX))


def tile_table(plan: DynamicPlan, sched: Schedule, n: np.ndarray) -> np.ndarray:
    """Every tile in launch order as rows (group, m0, n0, variant): the decode each block does for its tiles."""
    total = sched.total
    group = np.repeat(np.arange(len(sched.tiles)), sched.tiles)[:total]
    first = np.concatenate([[0], sched.ends[:-1]])
    local = np.arange(total) - first[group]
    v = sched.variant[group]
    bn = column(plan, "bn")[v]
    tiles_n = -(-np.asarray(n, dtype=np.int64)[group] // bn)
    return np.stack([group, (local // tiles_n) * column(plan, "bm")[v], (local % tiles_n) * bn, v], axis=1)


def block_tiles(total: int, grid: int, block: int) -> range:
    """The tiles block `block` of a persistent grid of `grid` blocks computes, in order."""
    return range(block, total, grid)


def size_table(plan: DynamicPlan, n: int, rows_limit: int = 1024) -> list[tuple[int, int, int]]:
    """For groups of 1..rows_limit rows and n columns at the top cap: (first rows, last rows, variant) runs, for
    `gemmc inspect` (the grouped-M form's size classes)."""
    rows = np.arange(1, rows_limit + 1, dtype=np.int64)
    choice, _ = choices(plan, rows, np.full_like(rows, n))
    top = choice[-1]
    runs = []
    start = 0
    for i in range(1, len(rows) + 1):
        if i == len(rows) or top[i] != top[start]:
            runs.append((int(rows[start]), int(rows[i - 1]), int(top[start])))
            start = i
    return runs

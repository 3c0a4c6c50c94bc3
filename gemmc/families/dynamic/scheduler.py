"""The device scheduler of the dynamic family, in NumPy: what every block of the persistent kernel computes from
the sizes before it takes its tiles (families/dynamic/dynamic.cu.j2 and dynamic_sched.cuh.j2 are the device
side; tests compare the two).

1. Group ends are clamped: the running maximum of the ends, within [0, rows]. Group g covers rows
   [start_g, start_{g+1}); bad ends (negative, decreasing, past the rows) give empty or shortened groups and never
   an index outside A, B or C.
2. Size classes (paper 000 §4.1 with the SIMT cost model): for every cap c on the ladder level, each group takes the
   variant of level <= c whose tiles weigh least (ties: the later variant, i.e. the larger tile). A variant's tiles in
   the group's last row (column) take its half-height (half-width) variant where half the tile covers what is left
   (the static plan's edge tiles), and weigh what that variant weighs.
3. The cap (paper 000 Algorithm 1, largest tiles stepped down first, by whole levels): the largest c whose TLP
   (Eq. 4: tiles x threads, summed over the groups) reaches the threshold; the smallest level when none does.
4. Tiles are numbered part by part (plan.parts): with two, every group's whole-height rows of tiles (part 0) come
   before every group's last row where that needs at most half the height (part 1), so that the shortest tiles are
   claimed last; with one, a group's tiles are one part. Within a kind of part the groups go by decreasing cost of
   the part's first tile (its variant's weight x the group's reduction depth; ties: group order; up to
   plan.SORT_GROUPS groups, more keep their order), n fastest within a part, through an inclusive prefix sum of tiles
   over those positions (position p x G + rank). Block b
   takes tile b first, then the next unclaimed one from a counter in the workspace (atomicAdd): the hardware's
   first-free-block order, not a fixed share per block.
5. The last round in column halves (plan.tail_split): where the tiles past the grid's last whole round are at most
   half the blocks, each of them takes two claims, its left and right column halves, each run by the tile's
   half-width variant (a tile whose variant has none runs whole in its left half's claim; a right half past n runs
   nothing).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gemmc.families.dynamic.plan import SORT_GROUPS, DynamicPlan
from gemmc.ir.dynamic import Grouping

INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True, eq=False)
class Schedule:
    """One launch's decisions: the level cap, each group's variant and tile count, the parts of the numbering (part
    j = p x G + g: part p of group g) and the inclusive prefix of tiles by position."""

    cap: int
    tlp: np.ndarray  # per cap: the TLP (threads) of the launch under that cap
    variant: np.ndarray  # per group
    tiles: np.ndarray  # per group
    order: np.ndarray  # per position of the tile numbering: its part j (p x G + g)
    ends: np.ndarray  # per position: inclusive prefix sum of tiles (int32-clamped, as the device keeps it)
    part_first: np.ndarray  # per part j: the group-local index of its first tile

    @property
    def groups(self) -> np.ndarray:
        """Per position: the group of its part."""
        return self.order % max(len(self.tiles), 1)

    @property
    def total(self) -> int:
        return int(self.ends[-1]) if len(self.ends) else 0


def column(plan: DynamicPlan, field: str) -> np.ndarray:
    """One field of every size class ("bm", "bn", "threads", "level", "weight"), indexed by variant."""
    values = [getattr(c.variant, field) if field in ("bm", "bn", "threads") else getattr(c, field)
              for c in plan.classes]
    return np.array(values, dtype=np.int64)


def edge_table(plan: DynamicPlan) -> np.ndarray:
    """variant x kind -> the variant a tile of that kind runs (kinds: 0 whole, 1 in the last row needing at most half
    the height, 2 in the last column needing at most half the width, 3 both)."""
    return np.array([(i, *c.edges) for i, c in enumerate(plan.classes)], dtype=np.int64).reshape(-1, 4)


def kinds(bm: np.ndarray, bn: np.ndarray, m: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, ...]:
    """The tiles of bm x bn over m x n outputs (broadcast) by edge_table's kinds: whole, in the last row where that
    needs at most half the height, in the last column at most half the width, in the corner needing both."""
    tm, tn = -(-m // bm), -(-n // bn)
    row = ((tm > 0) & (m - (tm - 1) * bm <= bm // 2)).astype(np.int64)  # the last row is a half-height edge
    col = ((tn > 0) & (n - (tn - 1) * bn <= bn // 2)).astype(np.int64)
    return (tm - row) * (tn - col), row * (tn - col), (tm - row) * col, row * col


def costs(plan: DynamicPlan, m: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per variant (rows) and group (columns): its tile count and the tiles' summed weight, edge tiles at their
    variant's weight."""
    bm, bn = (column(plan, f)[:, None] for f in ("bm", "bn"))
    counts = kinds(bm, bn, np.asarray(m, dtype=np.int64)[None, :], np.asarray(n, dtype=np.int64)[None, :])
    weight = column(plan, "weight")[edge_table(plan)]  # variant x kind: the weight of a tile of that kind
    tiles, cost = np.zeros_like(counts[0]), np.zeros_like(counts[0])
    for kind, count in enumerate(counts):
        tiles, cost = tiles + count, cost + count * weight[:, kind][:, None]
    return tiles, cost


def group_tiles(plan: DynamicPlan, variant: np.ndarray, m: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Per group (rows) and variant (columns): the tiles the group runs of that variant, its `variant`'s tiles with
    its edge tiles under their edge variants (tile_table's tiles, counted without listing them)."""
    counts = kinds(column(plan, "bm")[variant], column(plan, "bn")[variant], np.asarray(m, dtype=np.int64),
                   np.asarray(n, dtype=np.int64))
    edge = edge_table(plan)[variant]  # groups x kinds
    out = np.zeros((len(variant), len(plan.classes)), dtype=np.int64)
    groups = np.arange(len(variant))
    for kind, count in enumerate(counts):
        np.add.at(out, (groups, edge[:, kind]), count)
    return out


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
    threads, level = (column(plan, f)[:, None] for f in ("threads", "level"))
    tiles, cost = costs(plan, m, n)  # variants x groups
    last = len(plan.classes) - 1
    caps = len(plan.levels)
    choice = np.empty((caps, tiles.shape[1]), dtype=np.int64)
    for c in range(caps):
        allowed = np.where(level <= c, cost, np.iinfo(np.int64).max)
        choice[c] = last - np.argmin(allowed[::-1], axis=0)  # the least cost; ties: the later variant
    groups = np.arange(tiles.shape[1])
    tlp = tiles[choice, groups] * threads[choice, 0]
    return choice, tlp


def parts(plan: DynamicPlan, variant: np.ndarray, m: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per part (rows: plan.parts) and group: its tiles and the group-local index of its first tile (gemmc_dyn_part).
    Part 1 is the group's last row of tiles where that needs at most half the height."""
    bm, bn = column(plan, "bm")[variant], column(plan, "bn")[variant]
    m, n = np.asarray(m, dtype=np.int64), np.asarray(n, dtype=np.int64)
    tm, tn = -(-m // bm), -(-n // bn)
    if plan.parts == 1:
        return (tm * tn)[None, :], np.zeros((1, len(m)), dtype=np.int64)
    row = ((tm > 0) & (m - (tm - 1) * bm <= bm // 2)).astype(np.int64)
    body = (tm - row) * tn
    return np.stack([body, row * tn]), np.stack([np.zeros_like(body), body])


def tile_origin(plan: DynamicPlan, variant: np.ndarray, m: np.ndarray, n: np.ndarray, local: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(m0, n0, the variant it runs) of tile `local` (n fastest) of a group's `variant` tiles over m x n: an edge
    variant in a last row (column) that needs at most half the height (width)."""
    bm, bn = column(plan, "bm")[variant], column(plan, "bn")[variant]
    m, n = np.asarray(m, dtype=np.int64), np.asarray(n, dtype=np.int64)
    tiles_n = np.maximum(-(-n // bn), 1)
    m0, n0 = (local // tiles_n) * bm, (local % tiles_n) * bn
    kind = (m - m0 <= bm // 2).astype(np.int64) + 2 * (n - n0 <= bn // 2)
    return m0, n0, edge_table(plan)[variant, kind]


def keys(plan: DynamicPlan, variant: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Each group's sort key: the weight of `variant` (its first tile's) x the group's depth, saturated to 32 bits
    (gemmc_dyn_key)."""
    cost = column(plan, "weight")[variant].astype(object) * np.maximum(np.asarray(k, dtype=np.int64), 0).astype(object)
    return np.array([min(int(c), 2**32 - 1) for c in cost], dtype=np.int64)


def order(plan: DynamicPlan, variant: np.ndarray, k: np.ndarray) -> np.ndarray:
    """The groups in tile-numbering order: decreasing key (`variant`: each group's first tile's), ties in group order
    (gemmc_dyn_rank)."""
    groups = np.arange(len(variant))
    if len(variant) > SORT_GROUPS:
        return groups
    return np.lexsort((groups, -keys(plan, variant, k)))


def schedule(plan: DynamicPlan, m: np.ndarray, n: np.ndarray, threshold: int, k: np.ndarray | None = None
             ) -> Schedule:
    """The decisions of one launch over groups of m x n outputs and depth k (threshold in threads, Eq. 4; k None:
    every group alike, the groups in their order)."""
    choice, tlp = choices(plan, m, n)
    totals = tlp.sum(axis=1)
    reached = np.flatnonzero(totals >= threshold)
    cap = int(reached[-1]) if len(reached) else 0
    variant = choice[cap]
    bm, bn = column(plan, "bm")[variant], column(plan, "bn")[variant]
    tiles = -(-np.asarray(m, dtype=np.int64) // bm) * -(-np.asarray(n, dtype=np.int64) // bn)
    counts, firsts = parts(plan, variant, m, n)
    groups = len(variant)
    seq = []
    for p in range(plan.parts):  # a part's key: its first tile's cost (0: a part of no tile)
        depth = np.where(counts[p] > 0, np.zeros(groups, dtype=np.int64) if k is None else k, 0)
        seq.append(p * groups + order(plan, tile_origin(plan, variant, m, n, firsts[p])[2], depth))
    positions = np.concatenate(seq)
    ends = np.minimum(np.cumsum(counts.reshape(-1)[positions]), INT32_MAX)
    return Schedule(cap, totals, variant, tiles, positions, ends, firsts.reshape(-1))


def tile_table(plan: DynamicPlan, sched: Schedule, m: np.ndarray, n: np.ndarray, tiles: np.ndarray | None = None
               ) -> np.ndarray:
    """Every tile in numbering order (or those numbered `tiles`) as rows (group, m0, n0, variant): the decode a block
    does for a tile it takes, edge tiles with their half variants."""
    t = np.arange(sched.total, dtype=np.int64) if tiles is None else np.asarray(tiles, dtype=np.int64)
    position = np.searchsorted(sched.ends, t, side="right")  # gemmc_dyn_group: the first position ending past t
    part = sched.order[position]
    group = sched.groups[position]
    first = np.concatenate([[0], sched.ends[:-1]])
    local = t - first[position] + sched.part_first[part]
    m0, n0, v = tile_origin(plan, sched.variant[group], np.asarray(m)[group], np.asarray(n)[group], local)
    return np.stack([group, m0, n0, v], axis=1)


def whole_claims(total: int, blocks: int) -> int:
    """The first claim of the last round's column halves (gemmc_dyn_whole): the tiles before the grid's last round
    where the tiles past it are at most half the blocks, else every tile. The launch's claims: 2 x total - whole."""
    rest = total % blocks if blocks > 0 else 0
    return total - rest if rest > 0 and 2 * rest <= blocks else total


def claim_table(plan: DynamicPlan, sched: Schedule, m: np.ndarray, n: np.ndarray, blocks: int) -> np.ndarray:
    """Every claim of a launch on `blocks` blocks in claim order as rows (group, m0, n0, variant): tile_table's rows,
    and with plan.tail_split each tile past the whole ones as its two column halves (gemmc_dyn_claim,
    gemmc_dyn_half); variant -1 where a claim runs nothing."""
    table = tile_table(plan, sched, m, n)
    whole = whole_claims(sched.total, blocks) if plan.tail_split else sched.total
    if whole == sched.total:
        return table
    return np.concatenate([table[:whole], half_claims(plan, table[whole:], n)])


def half_claims(plan: DynamicPlan, tiles: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The two claims of each tile of the last round's column halves (rows (group, m0, n0, variant) of tile_table):
    its left and right halves under the half-width variant (gemmc_dyn_half); a tile whose variant has none runs whole
    in its left claim, and a right half past the group's n columns runs nothing (variant -1)."""
    tail = np.repeat(tiles, 2, axis=0)
    half = np.tile([0, 1], len(tail) // 2)
    run = tail[:, 3]
    ew = edge_table(plan)[run, 2]
    split = ew != run
    tail[:, 2] += np.where(split, half * (column(plan, "bn")[run] // 2), 0)
    inside = tail[:, 2] < np.asarray(n, dtype=np.int64)[tail[:, 0]]
    tail[:, 3] = np.where(split, np.where(inside, ew, -1), np.where(half == 0, run, -1))
    return tail


def size_table(plan: DynamicPlan, n: int, rows_limit: int = 1024) -> list[tuple[int, int, int]]:
    """For groups of 1..rows_limit rows and n columns at the top cap: (first rows, last rows, variant) runs, for
    `gemmc inspect` (the grouped-M form's size classes). The variant is the one the group's first tile runs: a group
    that needs at most half a tile's height runs the half-height edge variant."""
    rows = np.arange(1, rows_limit + 1, dtype=np.int64)
    choice, _ = choices(plan, rows, np.full_like(rows, n))
    bm, bn = column(plan, "bm")[choice[-1]], column(plan, "bn")[choice[-1]]
    top = edge_table(plan)[choice[-1], (rows <= bm // 2).astype(np.int64) + 2 * (n <= bn // 2)]
    runs = []
    start = 0
    for i in range(1, len(rows) + 1):
        if i == len(rows) or top[i] != top[start]:
            runs.append((int(rows[start]), int(rows[i - 1]), int(top[start])))
            start = i
    return runs

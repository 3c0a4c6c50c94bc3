"""Tile choice for irregular batches: paper 000's load-balanced tiling and paper 003's coordinated tiling.

Both planners are pure functions of the problem sizes and `Hardware`; `choose` picks between them (and the core's
uniform tile) with a small cost model, and every figure it used is returned for `gemmc inspect`.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np

from gemmc.families.simt import calibration as cal
from gemmc.families.simt.plan import SimtPlan, SimtVariant, micro_tile
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Problem
from gemmc.model.tlp import Occupancy, ceil_div, occupancy
from gemmc.model.worklist import Sizes


def variant(bm: int, bn: int, bk: int, threads: int, slices: int = 1) -> SimtVariant:
    """A catalogue entry; the micro-tile is the most square split of the tile over one slice's threads."""
    micro = micro_tile(bm, bn, threads // slices)
    assert micro is not None, f"catalogue tile {bm}x{bn} does not split over {threads // slices} threads"
    return SimtVariant(bm, bn, bk, micro[0], micro[1], threads, slices)


@dataclass(frozen=True, slots=True)
class Level:
    """One step of the size ladder: the tall (bm >= bn) and wide orientation of one tile."""

    name: str
    tall: SimtVariant
    wide: SimtVariant

    def pick(self, p: Problem) -> SimtVariant:
        return self.tall if p.m >= p.n else self.wide


def _level(name: str, bm: int, bn: int, bk: int, threads: int) -> Level:
    return Level(name, variant(max(bm, bn), min(bm, bn), bk, threads), variant(min(bm, bn), max(bm, bn), bk, threads))


# Paper 000, Table 3 (128 threads up to 32x32, 256 above), plus the transposed orientations and paper 003's
# 64x128 / 128x64 and 128x128 on top. K steps by block threads (LEVEL_BK, measured: calibration.py): the
# 128-thread levels' blocks are latency-bound and take 32, twice the paper's Tk = 16; the larger tiles take 16.
LEVEL_BK = cal.LOADBALANCED_BK.value
LOADBALANCED_LEVELS: tuple[Level, ...] = (
    _level("small", 16, 16, LEVEL_BK[128], 128),
    _level("small-medium", 16, 32, LEVEL_BK[128], 128),
    _level("medium", 32, 32, LEVEL_BK[128], 128),
    _level("medium-large", 32, 64, LEVEL_BK[256], 256),
    _level("large", 64, 64, LEVEL_BK[256], 256),
    _level("x-large", 64, 128, LEVEL_BK[256], 256),
    _level("huge", 128, 128, LEVEL_BK[256], 256),
)

# Paper 003, Table 2 (BK = 8), in priority order (area; tall before wide), for 256 and for 128 threads. The
# 128-thread huge tile would need a 128-element micro-tile and is left out.
COORDINATED = {
    256: (("small", variant(16, 16, 8, 256)), ("medium", variant(32, 32, 8, 256)), ("large", variant(64, 64, 8, 256)),
          ("tall", variant(128, 64, 8, 256)), ("wide", variant(64, 128, 8, 256)), ("huge", variant(128, 128, 8, 256))),
    128: (("small", variant(16, 16, 8, 128)), ("medium", variant(32, 32, 8, 128)), ("large", variant(64, 64, 8, 128)),
          ("tall", variant(128, 64, 8, 128)), ("wide", variant(64, 128, 8, 128))),
}

FILL = 0.75  # an initial tile must cover at least this share of its padded area with real outputs


def tiles(p: Problem, v: SimtVariant) -> int:
    return ceil_div(p.m, v.bm) * ceil_div(p.n, v.bn)


def fill(p: Problem, v: SimtVariant) -> float:
    return (p.m * p.n) / (ceil_div(p.m, v.bm) * v.bm * ceil_div(p.n, v.bn) * v.bn)


Batch = tuple[Problem, ...] | Sizes  # the planners take the problems, or their columns when the caller has them


def sizes_of(problems: Batch) -> Sizes:
    return problems if isinstance(problems, Sizes) else Sizes.of(problems)


def tile_counts(s: Sizes, bm: np.ndarray | int, bn: np.ndarray | int) -> np.ndarray:
    """`tiles` for every problem at once: ceil(M / bm) x ceil(N / bn) per problem (bm, bn per problem or one)."""
    return -(-s.m // bm) * -(-s.n // bn)


def palette_column(palette: Sequence[SimtVariant], field: str) -> np.ndarray:
    """One field (e.g. "bm") of every variant of a palette, as a column indexed by variant."""
    return np.array([getattr(v, field) for v in palette], dtype=np.int64)


@dataclass(frozen=True, slots=True, eq=False)
class Tiling:
    """A variant per problem, and the model's figures for it. The variants are `palette` (distinct, in order of
    first use: what SimtPlan.variants holds) and `choice`, the palette index of each problem in batch order."""

    method: str  # "uniform" | "loadbalanced" | "loadbalanced-eq3" | "coordinated"
    palette: tuple[SimtVariant, ...]
    choice: np.ndarray
    threshold: int  # the TLP threshold the planner worked to
    steps: int  # refinement steps the planner took

    @staticmethod
    def of(method: str, catalogue: tuple[SimtVariant, ...], index: np.ndarray, threshold: int = 0,
           steps: int = 0) -> Tiling:
        """The tiling that gives problem i `catalogue[index[i]]` (catalogue entries distinct)."""
        used = list(dict.fromkeys(index.tolist()))  # catalogue entries in order of first use
        renumber = np.zeros(len(catalogue), dtype=np.int64)
        renumber[used] = np.arange(len(used))
        return Tiling(method, tuple(catalogue[i] for i in used), renumber[index], threshold, steps)

    @property
    def variants(self) -> tuple[SimtVariant, ...]:
        """The variant of each problem, in batch order."""
        return tuple(self.palette[i] for i in self.choice.tolist())

    def same_variants(self, other: Tiling) -> bool:
        return self.palette == other.palette and bool(np.array_equal(self.choice, other.choice))

    def column(self, field: str) -> np.ndarray:
        """One field of each problem's variant (e.g. "bm"), in batch order."""
        return palette_column(self.palette, field)[self.choice]

    def counts(self, problems: Batch, count: int) -> np.ndarray:
        """Tiles per problem (times the `count` of a strided batch)."""
        return tile_counts(sizes_of(problems), self.column("bm"), self.column("bn")) * count

    def tile_counts(self, problems: Batch, count: int) -> list[int]:
        return self.counts(problems, count).tolist()


def initial_level(p: Problem) -> int:
    """Paper 000 Eq. 10, relaxed for predicated edges: the largest level whose tile the problem fills well
    (>= FILL of the padded area), not only exact divisors, so that M = 196 or 49 gets a sensible tile."""
    for i in range(len(LOADBALANCED_LEVELS) - 1, -1, -1):
        if fill(p, LOADBALANCED_LEVELS[i].pick(p)) >= FILL:
            return i
    return 0


# The load-balanced catalogue: each distinct tile of the ladder once; a level's tall and wide tiles are its
# entries TALL[level] and WIDE[level] (the same entry for a square tile). As columns (levels x 1) for `ladder`.
LOADBALANCED_CATALOGUE = tuple(dict.fromkeys(v for lv in LOADBALANCED_LEVELS for v in (lv.tall, lv.wide)))
TALL = np.array([LOADBALANCED_CATALOGUE.index(lv.tall) for lv in LOADBALANCED_LEVELS])
WIDE = np.array([LOADBALANCED_CATALOGUE.index(lv.wide) for lv in LOADBALANCED_LEVELS])
TALL_BM, TALL_BN, WIDE_BM, WIDE_BN = (np.array([[getattr(getattr(lv, side), f)] for lv in LOADBALANCED_LEVELS])
                                      for side, f in (("tall", "bm"), ("tall", "bn"), ("wide", "bm"), ("wide", "bn")))


def ladder(s: Sizes) -> tuple[np.ndarray, np.ndarray]:
    """Every level's tile on every problem (levels x problems): its tile count, and the initial level of each
    problem (`initial_level` for all problems at once: the last level whose tile it fills to FILL)."""
    tall = s.m >= s.n
    bm, bn = np.where(tall, TALL_BM, WIDE_BM), np.where(tall, TALL_BN, WIDE_BN)
    tiles_m, tiles_n = -(-s.m // bm), -(-s.n // bn)
    fills = (s.m * s.n) / (tiles_m * bm * tiles_n * bn)  # float64, as fill() divides
    good = fills >= FILL
    last_good = len(LOADBALANCED_LEVELS) - 1 - np.argmax(good[::-1], axis=0)
    return tiles_m * tiles_n, np.where(good.any(axis=0), last_good, 0)


def loadbalanced(problems: Batch, count: int, hw: Hardware, threshold: int, metric: str = "new",
                 rungs: tuple[np.ndarray, np.ndarray] | None = None) -> Tiling:
    """Paper 000, Algorithm 1, corrected: start from the initial levels, then while the new TLP (Eq. 4) is
    below the threshold (`<`, not the printed `>=`), step the problem with the largest tile (ties: the most
    work, then the first) down one level. TLP is kept exact under each change (the printed line 19 never
    subtracts the old count); the loop ends when the threshold is met or no tile can shrink (the printed loop
    can spin forever). `metric="old"` counts Eq. 3 instead (every tile with the launch's 256 threads), for the
    paper's ablation.

    The steps are taken in a known order, so they are computed at once rather than through a priority queue:
    the largest tile's level L is stepped down for every problem at L before any problem at L - 1, and the
    problems at L are then exactly those that started at L or above, taken by work (most first) and index.
    The run stops at the first step after which the running TLP reaches the threshold. `rungs`: the batch's
    `ladder`, when the caller has it (tile auto runs both metrics on one batch)."""
    s = sizes_of(problems)
    n = len(s)
    counts, levels = rungs if rungs is not None else ladder(s)
    launch = max(lv.tall.threads for lv in LOADBALANCED_LEVELS)
    threads = [[ceil_div(lv.tall.threads, hw.warp_size) * hw.warp_size if metric == "new" else launch]
               for lv in LOADBALANCED_LEVELS]
    contribution = counts * count * np.array(threads, dtype=np.int64)  # TLP of problem i at level l
    everyone = np.arange(n)
    tlp = int(contribution[levels, everyone].sum())
    by_work = np.lexsort((everyone, -(s.m * s.n * s.k)))
    top = int(levels.max(initial=0))
    rounds = [by_work[levels[by_work] >= lv] for lv in range(top, 0, -1)]  # the problems stepped down from lv
    sequence = np.concatenate([np.zeros(0, dtype=np.int64), *rounds])
    level = np.repeat(np.arange(top, 0, -1), [len(r) for r in rounds])  # the level each step leaves
    running = tlp + np.cumsum(contribution[level - 1, sequence] - contribution[level, sequence])
    if tlp >= threshold:
        steps = 0
    else:
        reached = np.flatnonzero(running >= threshold)
        steps = int(reached[0]) + 1 if len(reached) else len(sequence)
    levels = levels - np.bincount(sequence[:steps], minlength=n)
    return Tiling.of("loadbalanced" if metric == "new" else "loadbalanced-eq3", LOADBALANCED_CATALOGUE,
                     np.where(s.m >= s.n, TALL[levels], WIDE[levels]), threshold, steps)


def coordinated(problems: Batch, count: int, threshold: int, max_outputs: int = 64) -> Tiling:
    """Paper 003 §3 (tiling engine): per-problem priority queues of the strategies that fit (BY <= M, BX <= N;
    a problem smaller than every tile gets the smallest), popped in lockstep from small to large while the old
    TLP (Eq. 1, uniform threads) stays above the threshold; a one-element queue is peeked, not popped; when
    every queue is down to one element, retry with the 128-thread versions. The first configuration at or
    below the threshold wins (the paper's rule: 70144 -> 17920 in its example). Strategies whose micro-tile
    exceeds `max_outputs` per thread (32 for f64: twice the registers per output) are left out.

    After `step` lockstep pops a problem's head is its queue's entry min(step, length - 1)."""
    s = sizes_of(problems)
    everyone = np.arange(len(s))
    steps = 0
    strategies: tuple[SimtVariant, ...] = ()
    chosen = np.zeros(len(s), dtype=np.int64)
    for threads in (256, 128):
        strategies = tuple(v for _, v in COORDINATED[threads] if v.tm * v.tn <= max_outputs)
        bm, bn = np.array([[v.bm] for v in strategies]), np.array([[v.bn] for v in strategies])
        fits = (bm <= s.m) & (bn <= s.n)  # strategies x problems
        queues = np.argsort(~fits, axis=0, kind="stable")  # the fitting strategies first, in priority order
        last = np.maximum(fits.sum(axis=0), 1) - 1  # a problem nothing fits keeps strategies[0]
        counts = tile_counts(s, bm, bn)
        rounds = int(last.max(initial=0)) + 1  # after the last, every queue is down to one element
        heads = queues[np.minimum(np.arange(rounds)[:, None], last), everyone]  # rounds x problems
        tlps = counts[heads, everyone].sum(axis=1) * count * threads
        met = np.flatnonzero(tlps <= threshold)
        if len(met):
            return Tiling.of("coordinated", strategies, heads[met[0]], threshold, steps + int(met[0]))
        chosen = heads[-1]
        steps += rounds - 1
    return Tiling.of("coordinated", strategies, chosen, threshold, steps)


@dataclass(frozen=True, slots=True)
class Estimate:
    """gemmc's cost model for choosing a plan: its launch simulated tile by tile (`estimate`), and the TLP figures
    inspect shows."""

    active_warps: int  # phi of Eq. 4, over the problems' own tiles
    occupancy: Occupancy
    seconds: float
    tlp_old: int
    tlp_new: int


# The simulated launch's fitted constants (calibration.py): issue slots per thread per k step besides the FMAs
# and fragment loads, the cycles of one k step of a lone block (a global load's round trip plus a barrier), and a
# split k's reduction and cluster launch in k steps.
STEP_OVERHEAD = cal.STEP_OVERHEAD.value
STEP_LATENCY_CYCLES = cal.STEP_LATENCY_CYCLES.value
SPLIT_STEPS = cal.SPLIT_STEPS.value
SCHEDULERS = 4  # warp schedulers per SM (every NVIDIA target since Volta; CDNA: 4 SIMDs per CU)
SIMULATED_WAVES = 4  # launches of up to this many waves of resident blocks are list-scheduled tile by tile


def step_instructions(v: SimtVariant, elem_bytes: int = 4, fma_issue: float = 1.0) -> float:
    """Issue slots one thread takes per k step: FMAs (`fma_issue` slots each: 2 for f64 where the FP64 pipe is
    half as wide), fragment loads and staging (see issue_efficiency)."""
    fmas = v.tm * v.tn * v.bk // v.slices
    return fmas / issue_efficiency(v, elem_bytes) + fmas * (fma_issue - 1)


def issue_efficiency(v: SimtVariant, elem_bytes: int = 4) -> float:
    """Share of a thread's instructions that are FMAs. Per k (bk steps of the inner loop) a thread issues
    bk x tm x tn FMAs, bk shared-memory loads per vector of its row and column fragments (16-byte vectors where
    they divide), and STEP_OVERHEAD instructions of staging. Small micro-tiles spend most of their issue slots
    on everything but FMAs. A sliced variant's thread covers bk / slices of each k step."""
    per = 16 // elem_bytes
    loads = ceil_div(v.tm, per if v.tm % per == 0 else 1) + ceil_div(v.tn, per if v.tn % per == 0 else 1)
    ks = v.bk // v.slices
    fmas = v.tm * v.tn * ks
    return fmas / (fmas + loads * ks + STEP_OVERHEAD)


def edge_lookup(plan: SimtPlan) -> np.ndarray:
    """variant x kind -> the variant a tile of that kind runs, for every variant of the plan. Kinds: 0 whole, 1 the
    last row of tiles needs at most half the height, 2 the last column at most half the width, 3 both (the edge
    tiles of families/simt/planner.py's with_edges); a variant without such a half runs its own."""
    own = np.arange(len(plan.variants))
    lookup = np.stack([own] * 4, axis=1)
    for i, row in enumerate(plan.edges):
        lookup[i, 1:] = [e if e >= 0 else i for e in row]
    return lookup


def launched_tiles(plan: SimtPlan, s: Sizes, a: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The tiles a plan launches, per problem and kind (edge_lookup's): (variant, count), each problems x 4. `a`:
    plan.assignment as an array, where the caller has it."""
    a = np.asarray(plan.assignment, dtype=np.int64) if a is None else a
    bm, bn = palette_column(plan.variants, "bm")[a], palette_column(plan.variants, "bn")[a]
    tiles_m, tiles_n = -(-s.m // bm), -(-s.n // bn)
    short_m = (s.m - (tiles_m - 1) * bm <= bm // 2).astype(np.int64)
    short_n = (s.n - (tiles_n - 1) * bn <= bn // 2).astype(np.int64)
    counts = np.stack([(tiles_m - short_m) * (tiles_n - short_n), short_m * (tiles_n - short_n),
                       (tiles_m - short_m) * short_n, short_m * short_n], axis=1)
    return edge_lookup(plan)[a], counts


def makespan(durations: np.ndarray, counts: np.ndarray, slots: int) -> float:
    """Cycles until the last of these blocks (one duration each, `counts` times) ends on `slots` resident places,
    dispatched longest first (the order batching none launches them) to whichever place frees first. Past
    SIMULATED_WAVES waves, the total over the places: the tail is then a small share."""
    total = int(counts.sum())
    if total > SIMULATED_WAVES * slots:
        return float((durations * counts).sum()) / slots
    each = np.sort(np.repeat(durations, counts))[::-1].tolist()
    if len(each) <= slots:
        return each[0] if each else 0.0
    places = each[:slots][::-1]  # a min-heap: ascending
    for d in each[slots:]:
        heapq.heapreplace(places, places[0] + d)
    return max(places)


def estimate(plan: SimtPlan, problems: Batch, count: int, hw: Hardware, choice: np.ndarray | None = None) -> Estimate:
    """The plan's launch with one tile per block, simulated: every tile it launches (edge tiles at their own
    size) lasts its k steps, each a load round trip (STEP_LATENCY_CYCLES) plus the step's issue slots of every
    warp sharing a scheduler; blocks are dispatched longest first onto the resident places the fused kernel
    leaves (its block size, registers and shared memory), and the launch lasts until the last one ends
    (`makespan`). Predicated edges do full-tile work; small micro-tiles and k-sliced tiles pay for their loads
    and staging; few blocks leave SMs idle. A split k (plan.ksplit) launches each tile on that many blocks, each
    with its share of the k steps and SPLIT_STEPS more for the reduction. Batching is left to its rule
    (choose_batching in families/simt/planner.py).
    Without the issue-slot term 16x16 tiles (1x2 micro-tiles) looked faster than 32x32 ones on the Inception
    modules; they measured 12.6 against 8.5 us (bench/results/irregular/2026-11-22_h100_simt_tiles_call2.log).

    Ranks the candidates of gemmc/bench/irregular.py's 26 cases within 2.6% of the fastest measured (geometric
    mean; worst 14%), where padded FLOPs over the busy share of the machine are 17% off (worst 83%)
    (bench/results/irregular/2026-11-23_h100_irregular_slices.json; bench/experiments/cost_model.py). `choice`: the
    plan's assignment as an array (Tiling.choice), where the caller has it."""
    s = sizes_of(problems)
    own = np.asarray(plan.assignment, dtype=np.int64) if choice is None else choice
    occ = occupancy(hw, plan.threads, plan.regs_estimate, plan.smem_bytes)
    variant, counts = launched_tiles(plan, s, own)
    counts = counts * count * plan.ksplit  # a split k launches each tile on ksplit blocks
    column = partial(palette_column, plan.variants)
    bm, bn, bk, threads = column("bm"), column("bn"), column("bk"), column("threads")
    fma_issue = hw.fp32_flops / hw.f64_flops if plan.elem_bytes == 8 else 1.0
    issue = np.array([step_instructions(v, plan.elem_bytes, fma_issue) for v in plan.variants])
    k = s.k[:, None]
    tiles = tile_counts(s, bm[own], bn[own]) * count
    warps = int((tiles * -(-threads[own] // hw.warp_size)).sum())  # phi of Eq. 4
    blocks = int(counts.sum())
    if not occ.blocks_per_sm:
        seconds = float("inf")
    else:
        wave_warps = min(blocks / hw.sm_count, occ.blocks_per_sm) * occ.warps_per_sm / occ.blocks_per_sm
        step = STEP_LATENCY_CYCLES + issue[variant] * wave_warps / SCHEDULERS
        ktiles = -(-k // bk[variant])
        steps = -(-ktiles // plan.ksplit) + (SPLIT_STEPS if plan.ksplit > 1 else 0)
        seconds = makespan((steps * step).ravel(), counts.ravel(), occ.blocks_per_sm * hw.sm_count) / hw.clock_hz
    return Estimate(warps, occ, seconds, blocks * plan.threads, warps * hw.warp_size)  # tlp_old: Eq. 3, tlp_new: Eq. 4

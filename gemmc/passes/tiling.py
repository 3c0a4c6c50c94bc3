"""Tile choice for irregular batches: paper 000's load-balanced tiling and paper 003's coordinated tiling.

Both planners are pure functions of the problem sizes and `Hardware`; `choose` picks between them (and the core's
uniform tile) with a small cost model, and every figure it used is returned for `gemmc inspect`.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Problem
from gemmc.ir.plan_simt import SimtVariant, micro_tile
from gemmc.passes.tlp import Occupancy, ceil_div, occupancy, tlp_new, tlp_old


def variant(bm: int, bn: int, bk: int, threads: int) -> SimtVariant:
    """A catalogue entry; the micro-tile is the most square split of the tile over the threads."""
    micro = micro_tile(bm, bn, threads)
    assert micro is not None, f"catalogue tile {bm}x{bn} does not split over {threads} threads"
    return SimtVariant(bm, bn, bk, micro[0], micro[1], threads)


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
# 64x128 / 128x64 and 128x128 on top. K steps: the small tiles' blocks are latency-bound (each k step waits for
# a global load; measured on the H100, bench/results/2026-11-22_h100_irregular_quick_run1.json: 12 k steps of
# 16 took 8.6 us where 24 steps of 8 took 15.3 us), so the 128-thread levels take 32 per step, twice the
# paper's Tk = 16; the larger tiles take 16 (128x128 at BK 16 runs 44.1 TFLOP/s at 4096^3 against 36.2 at BK 8:
# bench/results/2026-11-22_h100_simt_occupancy_call1.log).
LOADBALANCED_LEVELS: tuple[Level, ...] = (
    _level("small", 16, 16, 32, 128),
    _level("small-medium", 16, 32, 32, 128),
    _level("medium", 32, 32, 32, 128),
    _level("medium-large", 32, 64, 16, 256),
    _level("large", 64, 64, 16, 256),
    _level("x-large", 64, 128, 16, 256),
    _level("huge", 128, 128, 16, 256),
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


@dataclass(frozen=True, slots=True)
class Tiling:
    """A variant per problem, and the model's figures for it."""

    method: str  # "uniform" | "loadbalanced" | "loadbalanced-eq3" | "coordinated"
    variants: tuple[SimtVariant, ...]  # per problem, in batch order
    threshold: int  # the TLP threshold the planner worked to
    steps: int  # refinement steps the planner took

    def tile_counts(self, problems: tuple[Problem, ...], count: int) -> list[int]:
        return [tiles(p, v) * count for p, v in zip(problems, self.variants, strict=True)]


def initial_level(p: Problem) -> int:
    """Paper 000 Eq. 10, relaxed for predicated edges: the largest level whose tile the problem fills well
    (>= FILL of the padded area), not only exact divisors, so that M = 196 or 49 gets a sensible tile."""
    for i in range(len(LOADBALANCED_LEVELS) - 1, -1, -1):
        if fill(p, LOADBALANCED_LEVELS[i].pick(p)) >= FILL:
            return i
    return 0


def loadbalanced(problems: tuple[Problem, ...], count: int, hw: Hardware, threshold: int,
                 metric: str = "new") -> Tiling:
    """Paper 000, Algorithm 1, corrected: start from the initial levels, then while the new TLP (Eq. 4) is
    below the threshold (`<`, not the printed `>=`), step the problem with the largest tile (ties: the most
    work) down one level. TLP is kept exact under each change (the printed line 19 never subtracts the old
    count); the loop ends when the threshold is met or no tile can shrink (the printed loop can spin forever).
    `metric="old"` counts Eq. 3 instead (every tile with the launch's 256 threads), for the paper's ablation."""
    levels = [initial_level(p) for p in problems]
    launch = max(lv.tall.threads for lv in LOADBALANCED_LEVELS)

    def contribution(i: int) -> int:
        v = LOADBALANCED_LEVELS[levels[i]].pick(problems[i])
        threads = ceil_div(v.threads, hw.warp_size) * hw.warp_size if metric == "new" else launch
        return tiles(problems[i], v) * count * threads

    parts = [contribution(i) for i in range(len(problems))]
    tlp = sum(parts)
    heap = [(-levels[i], -problems[i].flops, i) for i in range(len(problems)) if levels[i] > 0]
    heapq.heapify(heap)
    steps = 0
    while tlp < threshold and heap:
        _, _, i = heapq.heappop(heap)
        levels[i] -= 1
        new = contribution(i)
        tlp += new - parts[i]
        parts[i] = new
        steps += 1
        if levels[i] > 0:
            heapq.heappush(heap, (-levels[i], -problems[i].flops, i))
    chosen = tuple(LOADBALANCED_LEVELS[lv].pick(p) for lv, p in zip(levels, problems, strict=True))
    return Tiling("loadbalanced" if metric == "new" else "loadbalanced-eq3", chosen, threshold, steps)


def coordinated(problems: tuple[Problem, ...], count: int, threshold: int, max_outputs: int = 64) -> Tiling:
    """Paper 003 §3 (tiling engine): per-problem priority queues of the strategies that fit (BY <= M, BX <= N;
    a problem smaller than every tile gets the smallest), popped in lockstep from small to large while the old
    TLP (Eq. 1, uniform threads) stays above the threshold; a one-element queue is peeked, not popped; when
    every queue is down to one element, retry with the 128-thread versions. The first configuration at or
    below the threshold wins (the paper's rule: 70144 -> 17920 in its example). Strategies whose micro-tile
    exceeds `max_outputs` per thread (32 for f64: twice the registers per output) are left out."""
    steps = 0
    chosen: list[SimtVariant] = []
    for threads in (256, 128):
        strategies = [v for _, v in COORDINATED[threads] if v.tm * v.tn <= max_outputs]
        queues = [[v for v in strategies if v.bm <= p.m and v.bn <= p.n] or [strategies[0]] for p in problems]
        first = True
        while True:
            if not first:
                for q in queues:
                    if len(q) > 1:
                        q.pop(0)
            first = False
            chosen = [q[0] for q in queues]
            tlp = sum(tiles(p, v) * count for p, v in zip(problems, chosen, strict=True)) * threads
            if tlp <= threshold:
                return Tiling("coordinated", tuple(chosen), threshold, steps)
            if all(len(q) == 1 for q in queues):
                break
            steps += 1
    return Tiling("coordinated", tuple(chosen), threshold, steps)


@dataclass(frozen=True, slots=True)
class Estimate:
    """gemmc's cost model for choosing a tiling: padded work over the share of the machine kept busy."""

    padded_gflop: float
    useful_gflop: float
    active_warps: int
    occupancy: Occupancy
    utilization: float  # active warps over resident-warp capacity, capped at 1
    seconds: float
    latency_seconds: float
    tlp_old: int
    tlp_new: int


STEP_OVERHEAD = 40  # instructions per thread per k step besides the math: loads, stores, barrier, addressing
STEP_LATENCY_CYCLES = 1000  # one k step of a lone block: a global load round trip plus a barrier (H100, see above)


SCHEDULERS = 4  # warp schedulers per SM (every NVIDIA target since Volta; CDNA: 4 SIMDs per CU)


def step_instructions(v: SimtVariant, elem_bytes: int = 4) -> float:
    """Instructions one thread issues per k step: FMAs, fragment loads and staging (see issue_efficiency)."""
    fmas = v.tm * v.tn * v.bk
    return fmas / issue_efficiency(v, elem_bytes)


def issue_efficiency(v: SimtVariant, elem_bytes: int = 4) -> float:
    """Share of a thread's instructions that are FMAs. Per k (bk steps of the inner loop) a thread issues
    bk x tm x tn FMAs, bk shared-memory loads per vector of its row and column fragments (16-byte vectors where
    they divide), and STEP_OVERHEAD instructions of staging. Small micro-tiles spend most of their issue slots
    on everything but FMAs."""
    per = 16 // elem_bytes
    loads = ceil_div(v.tm, per if v.tm % per == 0 else 1) + ceil_div(v.tn, per if v.tn % per == 0 else 1)
    fmas = v.tm * v.tn * v.bk
    return fmas / (fmas + loads * v.bk + STEP_OVERHEAD)


def estimate(tiling: Tiling, problems: tuple[Problem, ...], count: int, hw: Hardware, regs: int,
             smem: int) -> Estimate:
    """The larger of two bounds. Throughput: the padded FLOPs over issue efficiency, over (peak x
    utilization), where utilization is the warps that do work over the warps the machine can hold for this
    fused kernel (its block size, registers and shared memory): predicated edges still do full-tile
    arithmetic, small micro-tiles spend issue slots on staging, too few warps leave SMs idle. Latency: waves
    of resident blocks, each as long as the longest block's k steps. A planning model, calibrated on the
    H100 runs cited above; the benchmark's ablation (bench/irregular.py) says how well it ranks."""
    block = max(v.threads for v in tiling.variants)
    occ = occupancy(hw, block, regs, smem)
    counts = tiling.tile_counts(problems, count)
    threads = [v.threads for v in tiling.variants]
    warps = sum(c * ceil_div(t, hw.warp_size) for c, t in zip(counts, threads, strict=True))
    capacity = max(1, occ.warps_per_sm * hw.sm_count)
    utilization = min(1.0, warps / capacity) if occ.blocks_per_sm else 0.0
    padded = sum(c * v.bm * v.bn * p.k * 2 for c, v, p in zip(counts, tiling.variants, problems, strict=True))
    issued = sum(c * v.bm * v.bn * p.k * 2 / issue_efficiency(v)
                 for c, v, p in zip(counts, tiling.variants, problems, strict=True))
    useful = sum(p.flops for p in problems) * count
    throughput = issued / (hw.fp32_flops * utilization) if utilization else float("inf")
    # Latency bound: blocks run in waves of the resident capacity; a wave lasts as long as its longest block, and
    # each of its k steps costs a load round trip plus the step's instructions of every warp sharing a scheduler
    # (SCHEDULERS per SM). Without the second term 16x16 tiles (1x2 micro-tiles, 5 blocks per SM) looked faster
    # than 32x32 ones on the Inception modules; measured 12.6 against 8.5 us
    # (bench/results/2026-11-22_h100_simt_tiles_call2.log).
    resident = max(1, occ.blocks_per_sm * hw.sm_count)
    waves = ceil_div(sum(counts), resident)
    wave_warps = min(warps, capacity) / (hw.sm_count * SCHEDULERS)
    step_cycles = max((STEP_LATENCY_CYCLES + step_instructions(v) * wave_warps) * ceil_div(p.k, v.bk)
                      for p, v in zip(problems, tiling.variants, strict=True))
    latency = waves * step_cycles / hw.clock_hz
    return Estimate(padded / 1e9, useful / 1e9, warps, occ, utilization, max(throughput, latency), latency,
                    tlp_old(counts, block), tlp_new(counts, threads, hw.warp_size))

"""The SIMT family's decisions: a catalogue of tile variants and which variant each problem uses (SimtPlan), and
the decisions so far between its planning steps (SimtDraft)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from gemmc.ir.nodes import FamilyPlan, PlanDraft
from gemmc.ir.types import Batching, counted


def micro_tile(bm: int, bn: int, threads: int) -> tuple[int, int] | None:
    """The most square tm x tn (tn >= tm) with bm/tm * bn/tn == threads, or None when none exists."""
    if (bm * bn) % threads:
        return None
    per_thread = bm * bn // threads
    best = None
    for tm in _divisors(math.gcd(per_thread, bm)):  # not every 1..per_thread: a tile may be absurdly large
        tn = per_thread // tm
        if bn % tn:
            continue
        key = (abs(tm - tn), tm > tn)
        if best is None or key < best[0]:
            best = (key, (tm, tn))
    return best[1] if best else None


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return small + [n // d for d in reversed(small) if d * d != n]


@dataclass(frozen=True, slots=True)
class SimtVariant:
    """A block tile bm x bn x bk computed by `threads` threads, each holding a tm x tn micro-tile."""

    bm: int
    bn: int
    bk: int
    tm: int
    tn: int
    threads: int
    # Sliced k: the threads form `slices` groups of threads / slices, each with its own micro-tile of the whole
    # tile over its share of every k-tile; the groups' sums meet in shared memory before the epilogue. More warps
    # per tile where a launch has too few tiles to keep the schedulers busy (bench/experiments/simt_floor.py).
    slices: int = 1

    @property
    def name(self) -> str:
        return f"{self.bm}x{self.bn}x{self.bk}_t{self.threads}" + (f"_s{self.slices}" if self.slices > 1 else "")

    @property
    def w_cp(self) -> float:
        """Paper 000 Eq. 1: outputs computed per thread."""
        return self.bm * self.bn / self.threads

    @property
    def w_dl(self) -> float:
        """Paper 000 Eq. 2: elements loaded per thread (the C tile, one A and one B k-slice)."""
        return (self.bm * self.bn + self.bm * self.bk + self.bk * self.bn) / self.threads

    def __str__(self) -> str:
        return (f"{self.bm}x{self.bn}x{self.bk} threads {self.threads} micro {self.tm}x{self.tn}"
                + (f" kslices {self.slices}" if self.slices > 1 else ""))


CANDIDATES_SHOWN = 5  # `tile auto` candidates that inspect lists by name
REG_CAP = 128  # registers per thread the kernel is compiled for (see SimtPlan.min_blocks)
FLOOR_OVERHEAD = 32  # addresses and loop state beside the arrays, at the least
CAP_HEADROOM = 40  # registers besides the arrays: pointers, loop state, indices (88 + 40 fits, 92 + 40 spills)


@dataclass(frozen=True, slots=True)
class SimtPlan(FamilyPlan):
    variants: tuple[SimtVariant, ...]
    assignment: tuple[int, ...]  # variant index per problem, in batch order
    stages: int  # 1: one shared buffer; 2: double-buffered shared memory with register prefetch
    elem_bytes: int
    method: str = "explicit"  # explicit | uniform | loadbalanced | coordinated
    batching: Batching = Batching.NONE
    theta: int = 0  # batching's K budget per block (0: no batching)
    tlp_threshold: int = 0
    tlp_old: int = 0  # paper 000 Eq. 3 / paper 003 Eq. 1
    tlp_new: int = 0  # paper 000 Eq. 4
    occupancy: str = ""  # e.g. "16 warps/SM (registers)"
    estimate_us: float = 0.0  # the tiling cost model's estimate
    candidates: tuple[tuple[str, float], ...] = ()  # (method, estimated us) that `tile auto` weighed
    min_blocks: int = 0  # __launch_bounds__'s blocks per SM (planner.py: bound_blocks); 0: no bound
    reg_cap: int = 0  # the registers per thread that bound leaves (0: no bound)
    # Edge tiles (planner.py: with_edges): per variant, the variants of its tiles whose last rows (columns, both)
    # need at most half the tile: (half m, half n, half both), -1 where the variant has none. Empty: no edge tiles.
    edges: tuple[tuple[int, int, int], ...] = ()
    # Split k: each tile's k-tiles are shared by the `ksplit` blocks of a thread-block cluster (sm_90), whose sums
    # rank 0 adds through distributed shared memory (families/simt/simt.cu.j2). One tile per cluster: never batched.
    ksplit: int = 1

    @property
    def threads(self) -> int:
        return max(v.threads for v in self.variants)

    def variant_need(self, v: SimtVariant) -> int:
        """Registers per thread the variant is compiled for: its unconstrained estimate with a margin for the
        fit's error, or REG_CAP when its arrays fit under the cap."""
        arrays = self.variant_floor(v) - FLOOR_OVERHEAD
        natural = self.variant_regs_free(v)
        if arrays + CAP_HEADROOM <= REG_CAP:
            return min(REG_CAP, -(-natural * 23 // 20))
        return min(255, -(-natural * 23 // 20))

    def variant_floor(self, v: SimtVariant) -> int:
        """Registers the variant's arrays hold at once (accumulators, one k-step's fragments, the staged next
        k-tile) plus FLOOR_OVERHEAD for addresses: the resource check's bound (E302)."""
        words = self.elem_bytes // 4
        return words * (v.tm * v.tn + v.tm + v.tn + (v.bm + v.bn) * v.bk // v.threads) + FLOOR_OVERHEAD

    def variant_regs_free(self, v: SimtVariant) -> int:
        """ptxas's register count without a bound, fitted to its reports for every catalogue variant
        (bench/results/irregular/2026-11-22_devhost_simt_registers.txt; within ~10%): accumulators and the staged
        next k-tile dominate, the fragments are reused."""
        words = self.elem_bytes // 4
        staged = (v.bm + v.bn) * v.bk // v.threads
        return (8 * words * v.tm * v.tn) // 5 + (7 * words * staged) // 4 + 45

    @property
    def pad(self) -> int:
        """Shared-memory row padding in elements: 8 bytes. Rows stay aligned for the 8-byte fragment reads, and
        a row stride of 2 banks (mod 32) halves the bank conflicts of the transposed stores of a k-contiguous
        operand: 2-way for 32-wide tiles, none at BK 16 (16 bytes of padding left them 4-way; Nsight Compute
        on inception-3, bench/experiments/simt_frag.py)."""
        return 8 // self.elem_bytes

    def variant_smem(self, v: SimtVariant) -> int:
        """The k-tile buffers, or the partial sums of a sliced variant's other slices (or of a split k's block: a
        whole tile) if they need more."""
        buffers = self.stages * v.bk * (v.bm + v.bn + 2 * self.pad)
        partials = max(v.slices - 1, 1 if self.ksplit > 1 else 0) * v.bm * v.bn
        return max(buffers, partials) * self.elem_bytes

    @property
    def smem_bytes(self) -> int:
        return max(self.variant_smem(v) for v in self.variants)

    def variant_regs(self, v: SimtVariant) -> int:
        """The planner's register estimate for a variant as compiled: under a bound ptxas takes about a fifth
        more than its unconstrained count (at most 24 more), up to the cap (same measurements as
        variant_regs_free; within 15% of ptxas for every catalogue variant, tests/test_passes.py)."""
        free = self.variant_regs_free(v)
        return min(-(-free * 6 // 5), free + 24, self.reg_cap or 255, 255)

    @property
    def regs_estimate(self) -> int:
        return max(self.variant_regs(v) for v in self.variants)

    @property
    def tile_shapes(self) -> tuple[tuple[int, int], ...]:
        return tuple((v.bm, v.bn) for v in self.variants)

    def problem_detail(self, index: int, m: int, n: int) -> str:
        v = self.variants[self.assignment[index]]
        tiles = -(-m // v.bm) * -(-n // v.bn)
        return f"variant {self.assignment[index]} ({v.bm}x{v.bn}, {v.threads} threads, {tiles} tiles)"

    def lines(self) -> tuple[str, ...]:
        return self.described(f"batching {self.batching.value}" + (f" (theta {self.theta})" if self.theta else ""))

    def described(self, batching: str) -> tuple[str, ...]:
        """The plan's lines, its batching as given (a draft's is not chosen yet)."""
        out = [f"tiling {self.method}, {batching}"
               + (f", k split over clusters of {self.ksplit} blocks" if self.ksplit > 1 else "")
               + f", stages {self.stages}, block {self.threads} threads, shared memory {self.smem_bytes} B"
               + (f", bound {self.min_blocks} blocks/SM ({self.reg_cap} registers)" if self.min_blocks else "")]
        if self.tlp_threshold:
            out.append(f"TLP old (Eq. 3) {self.tlp_old}, new (Eq. 4) {self.tlp_new}, threshold {self.tlp_threshold}; "
                       f"occupancy {self.occupancy}; estimated {self.estimate_us:.1f} us")
        if self.candidates:
            ranked = sorted(self.candidates, key=lambda c: c[1])
            out.append(f"candidates ({len(ranked)}, cheapest first): "
                       + ", ".join(f"{m} {us:.1f} us" for m, us in ranked[:CANDIDATES_SHOWN])
                       + (f", {len(ranked) - CANDIDATES_SHOWN} more" if len(ranked) > CANDIDATES_SHOWN else ""))
        edge_of = {e: i for i, row in enumerate(self.edges) for e in row if e >= 0}
        for i, v in enumerate(self.variants):
            users = sum(1 for a in self.assignment if a == i)
            used = f"edge tiles of variant {edge_of[i]}" if i in edge_of else f"used by {counted(users, 'problem')}"
            out.append(f"variant {i}: {v}, W_CP {v.w_cp:g}, W_DL {v.w_dl:g} (~{self.variant_regs(v)} regs) {used}")
        return tuple(out)


@dataclass(frozen=True, slots=True)
class SimtDraft(PlanDraft):
    """The SIMT family's decisions between its planning steps (families/simt/steps.py): the tiling chosen so far,
    whose batching comes last (`batched`), and for `tile auto` every tiling the model costed (seconds, plan), which
    split_k weighs its split forms against."""

    tiling: SimtPlan
    costed: tuple[tuple[float, SimtPlan], ...] = ()
    batched: bool = False

    def lines(self) -> tuple[str, ...]:
        return self.tiling.lines() if self.batched else self.tiling.described("batching not chosen yet")

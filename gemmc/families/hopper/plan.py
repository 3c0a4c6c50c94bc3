"""The hopper family's decisions: the block tile, the pipeline depth, the cluster, the raster band, and which operands
TMA cannot read in place. Every byte count the kernel and the host's tensor maps use is derived here."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from gemmc.families.hopper import calibration as cal
from gemmc.families.tensorcore.plan import PREP_THREADS, RANGE_TEXT, SCRATCH_ALIGN, SplitPlan
from gemmc.families.tma_loop import ALIGN_SLACK, BK, BM, C_BUFFERS, C_SUB_ROWS, SWIZZLE_BYTES, TmaTiles
from gemmc.ir.nodes import FamilyPlan
from gemmc.model.tlp import ceil_div

BK_F32 = SWIZZLE_BYTES // 4  # 32 f32 elements per k-row (tf32 wgmma: k8 steps)
LINE_REGS_MAX = 16  # split: float4 registers a pre-pass thread gives a K-contiguous line (16: K up to 16384)
RED_PAD = 8  # split K: f32 padding of a partial-sum row (HopperPlan.reduce_pitch)


@dataclass(frozen=True, slots=True)
class HopperPlan(TmaTiles, FamilyPlan):
    bn: int  # block tile N (the consumer warpgroups' wgmma N)
    stages: int  # shared-memory stages of the TMA -> wgmma pipeline
    cluster: int  # 1, or 2: blocks on m-tiles 2p and 2p+1 of one n-tile share B through TMA multicast
    band: int  # raster band: tile pairs (clusters' units) per band along M; bands run along N
    a_kmajor: bool  # A row-major: K contiguous (wgmma's K-major A); else M contiguous (transposed)
    b_kmajor: bool  # B col-major: K contiguous; else N contiguous (wgmma reads B transposed)
    staged: tuple[str, ...]  # operands whose lines are not 16-byte multiples: copied to aligned scratch first
    compute: str  # the products' type: "bf16", "f16" or "tf32" (f32 storage)
    tma_store: bool = False  # C row-major: the epilogue stages C through shared memory and TMA stores it
    c_bytes: int = 2  # bytes of C's element (2: bf16/f16, 4: f32)
    bm: int = BM
    bk: int = BK
    elem: int = 2  # bytes of a storage element (2: bf16/f16; 4: f32 read by TMA as it is)
    parts: int = 0  # f32 storage: tf32 parts the consumers form in shared memory (1: hi; 2: hi and lo, 3 products)
    consumers: int = 2
    producer_regs: int = 40  # setmaxnreg: the producer warpgroup gives registers back ...
    consumer_regs: int = 232  # ... so that both consumer warpgroups hold 128 accumulators and addresses
    sm_cap: int = 0  # 0: one block per SM of the device; else at most this many SMs (a concurrent group's
    #                  GO-kernel planned for a share of the GPU leaves the other SMs to the GEMMs beside it)
    split: SplitPlan | None = None  # f32 storage split into f16/bf16 part planes by a pre-pass (`split f16 x3`, ...)
    pads: tuple[int, int, int] = (0, 0, 0)  # split: M, N, K rounded up to the tile (the planes' extents)
    prep_blocks: int = 0  # split: the pre-pass's grid (PREP_THREADS threads per block)
    ksplit: int = 1  # blocks of a cluster that share one tile's K (split K): each sums its k-slice, then the cluster
    #                  adds the partial sums in k order through distributed shared memory (reduce_bytes)

    @property
    def a_planes(self) -> int:
        """split: A's part planes in scratch (hi, lo[, mid])."""
        return self.split.parts if self.split else 0

    @property
    def b_planes(self) -> int:
        """split: B's part planes (hi, lo[, mid]). Every part is stored unscaled and B's columns are scaled into f16's
        range as A's rows are (SPLIT_TOP), so the split's products share one level: one chain on the tensor core
        sums them with no plane of hi * 2^11 (the tensorcore family multiplies its fragment in registers instead)."""
        return self.split.parts if self.split else 0

    @property
    def term_planes(self) -> tuple[tuple[int, int], ...]:
        """split: per product, in the order the consumers chain them, the planes of A and B it multiplies."""
        return tuple((t.a, t.b) for t in self.split.terms) if self.split else ()

    @property
    def plane_steps(self) -> tuple[int, int]:
        """split: lines of the stacked tensor between one plane and the next, for A and B (a plane's padded M or N
        where K is contiguous, its padded K otherwise)."""
        mp, np_, kp = self.pads
        return (mp if self.a_kmajor else kp), (np_ if self.b_kmajor else kp)

    @property
    def tma_dtype(self) -> str:
        """The element type TMA reads: the part type of a split, f32 (tf32 products), or the half storage type."""
        return "f32" if self.parts else self.compute

    @property
    def regions(self) -> tuple[int, int, int, int, int]:
        """split: byte offsets in scratch of A's planes, B's planes, A's inverse row scales, B's inverse column
        scales, and the scratch's size; each region SCRATCH_ALIGN-aligned."""
        mp, np_, kp = self.pads
        def up(x: int) -> int:
            return ceil_div(x, SCRATCH_ALIGN) * SCRATCH_ALIGN
        a = 0
        b = a + up(self.a_planes * mp * kp * self.elem)
        ia = b + up(self.b_planes * np_ * kp * self.elem)
        ib = ia + up(4 * mp)
        return a, b, ia, ib, ib + up(4 * np_)

    @property
    def scratch_bytes(self) -> int:
        return self.regions[4] if self.split else 0

    @property
    def prologue(self) -> tuple[int, int] | None:
        """split: the pre-pass `<entry>_prep(A, B, scratch)` (this family's signature: one GEMM, its sizes
        compiled in) that writes the planes and scales the main kernel reads through TMA."""
        return (self.prep_blocks, PREP_THREADS) if self.split else None

    @property
    def stage_bytes(self) -> int:
        """A stage: one k-tile of A and of B; for a split one k-tile of each of A's and B's planes, so that a plane
        two products multiply (A's hi, B's hi) is loaded once."""
        if self.split:
            return self.a_planes * self.a_bytes + self.b_planes * self.b_bytes
        return self.a_bytes + self.b_bytes

    @property
    def line_regs(self) -> int:
        """split: float4 registers per pre-pass thread that hold one padded K-contiguous line (the pre-pass reads such
        a line once), or 0 where the line is longer than LINE_REGS_MAX of them (two sweeps: the maximum, then the
        split), or where no operand is K-contiguous."""
        per = ceil_div(self.pads[2], 4 * PREP_THREADS)
        return per if self.split and (self.a_kmajor or self.b_kmajor) and per <= LINE_REGS_MAX else 0

    @property
    def prep_units(self) -> int:
        """split: the pre-pass's units: one line of a K-contiguous operand held in registers (line_regs), else 8 lines
        of a K-contiguous operand or 32 of an M/N-contiguous one."""
        def lines(kmajor: bool) -> int:
            return (1 if self.line_regs else 8) if kmajor else 32
        return self.pads[0] // lines(self.a_kmajor) + self.pads[1] // lines(self.b_kmajor)

    @property
    def work_bytes(self) -> int:
        """f32 storage: two buffers (one filled while wgmma reads the other) of the tf32 parts of a stage's B tile,
        K-major with the 128-byte swizzle (tf32 wgmma reads B only K-major; A's parts are registers), and each
        buffer's two mbarriers (`ready`: both warpgroups wrote their share; `free`: both saw the groups that read it
        done). 0 for half storage."""
        return 2 * self.parts * self.bn * self.bk * 4 + 4 * 8 if self.parts else 0

    @property
    def k_permuted(self) -> bool:
        """f32 storage with K-major A and MN-major B: the stage's k in the order that lets each consumer thread read its
        A fragment with two 16-byte loads per row (hopper/tf32.cuh.j2, gemmc_k_at). B's parts, written by the
        consumers, take the same order at no cost; a K-major B would lose its 16-byte copies, an MN-major A gains
        nothing (its k are lines apart either way)."""
        return bool(self.parts) and self.a_kmajor and not self.b_kmajor

    @property
    def epilogue_bytes(self) -> int:
        """The C sub-tile buffers of the TMA-store epilogue: C_BUFFERS per consumer warpgroup, or none."""
        return self.consumers * C_BUFFERS * self.c_sub_bytes if self.tma_store else 0

    @property
    def reduce_pitch(self) -> int:
        """Split K: f32 elements between rows of the partial-sum tile (BN + 8: a warp's fragment stores, 8 rows of 4
        column pairs, fall in distinct banks)."""
        return self.bn + RED_PAD

    @property
    def reduce_bytes(self) -> int:
        """Split K: the block's partial sums of its tile (BM rows of reduce_pitch f32) and their two mbarriers
        (`full`: every slice's sums written; `free`: every slice has read them); 0 without split K."""
        return self.bm * self.reduce_pitch * 4 + 2 * 8 if self.ksplit > 1 else 0

    @property
    def group(self) -> int:
        """Blocks of a cluster (the launch's cluster dimension): a multicast pair or a tile's k-slices, or 1."""
        return self.cluster * self.ksplit

    @property
    def smem_bytes(self) -> int:
        return (self.stages * self.stage_bytes + self.work_bytes + self.epilogue_bytes + self.reduce_bytes
                + self.barrier_bytes + ALIGN_SLACK)

    @property
    def a_box(self) -> tuple[int, int]:
        """TMA box of A (innermost first): a 64 x 128 K-major block, or 64-row halves of an M-major one."""
        return (self.bk, self.bm) if self.a_kmajor else (self.box_width, self.bk)

    @property
    def b_box(self) -> tuple[int, int]:
        """TMA box of B (innermost first). With a cluster each block loads its share and multicasts it: K-major B
        splits along N, N-major B (64-column boxes) along K."""
        if self.b_kmajor:
            return (self.bk, self.bn // self.cluster)
        return (self.box_width, self.bk // self.cluster)

    def tensors(self, m: int, n: int, k: int) -> tuple[Operand, Operand]:
        """How TMA sees A and B of an m x n x k problem (runtime/tma.py and the standalone launcher encode these)."""
        return operands(self, m, n, k)

    def units(self, m: int, n: int) -> int:
        """Scheduling units: clusters' tile groups (a pair of m-tiles, or one tile) of an m x n output."""
        return ceil_div(ceil_div(m, self.bm), self.cluster) * ceil_div(n, self.bn)

    def grid(self, m: int, n: int, sm_count: int) -> int:
        """Persistent grid: one block per SM (whole clusters) of `sm_count`, or of `sm_cap` where that is
        smaller, no more than there are units (each unit takes a cluster: a pair of m-tiles or a tile's k-slices)."""
        sms = min(sm_count, self.sm_cap) if self.sm_cap else sm_count
        return self.group * max(1, min(self.units(m, n), sms // self.group))

    def capped(self, sms: int) -> HopperPlan:
        """The plan with its persistent grid capped to `sms` SMs (FamilyPlan.capped)."""
        return dataclasses.replace(self, sm_cap=sms)

    def lines(self) -> tuple[str, ...]:
        staged = f"; {', '.join(self.staged)} staged to aligned scratch (lines not 16-byte multiples)" \
            if self.staged else ""
        lay = f"A {'K' if self.a_kmajor else 'M'}-major, B {'K' if self.b_kmajor else 'N'}-major"
        share = "B multicast to clusters of 2" if self.cluster > 1 else "no cluster"
        if self.ksplit > 1:
            share = (f"K split over clusters of {self.ksplit} blocks (partial sums added in k order through "
                     "distributed shared memory)")
        data = "f32 storage" if self.parts or self.split else self.compute
        store = (f"C through {C_BUFFERS} shared-memory sub-tiles of {C_SUB_ROWS}x{self.c_sub_cols} per warpgroup "
                 "and TMA stores" if self.tma_store else "C stored from the accumulators")
        if self.ksplit > 1:
            store = f"each block of a cluster adds 1/{self.ksplit} of the tile's partial sums and stores that part of C"
        cap = f"; grid capped to {self.sm_cap} SMs" if self.sm_cap else ""
        out = (f"hopper: tile {self.bm}x{self.bn}x{self.bk} {data}, {self.stages} stages of "
               f"{self.stage_bytes // 1024} KiB (TMA, 128-byte swizzle, mbarriers), {lay}, {share}{staged}",
               f"1 producer warp (setmaxnreg {self.producer_regs}) + {self.consumers} consumer warpgroups of "
               f"64x{self.bn} (wgmma m64n{self.bn}k{16 if self.elem == 2 else 8}, setmaxnreg {self.consumer_regs}); "
               f"persistent, bands of {self.band * self.cluster} m-tiles{cap}; {store}")
        if self.split:
            mp, np_, kp = self.pads
            sp = self.split
            terms = " + ".join(f"A{a}*B{b}" for a, b in self.term_planes)
            how = (f"{sp.compute} x{len(sp.terms)}{' method ' + sp.method if sp.method else ''}: parts rounded "
                   f"hi {sp.hi_round}, lo {sp.lo_round}, stored unscaled{RANGE_TEXT if sp.row_scaling else ''}")
            return (*out, f"split: {how}",
                    f"pre-pass ({self.prep_blocks} blocks) writes A's {self.a_planes} and B's {self.b_planes} "
                    f"{self.compute} planes ({mp}x{kp}, {np_}x{kp}) and the inverse line scales to scratch "
                    f"({self.scratch_bytes} B); per k-tile the producer streams one stage of every plane's tile and "
                    f"each consumer sums the products {terms} from zero on the tensor core, then adds the sum to its "
                    "f32 total (round to nearest)")
        if not self.parts:
            return out
        how = (f"hi = rna(a), lo = rna(a - hi); per {cal.SUM_STAGES.value} stages lo*hi + hi*lo + hi*hi summed on the "
               "tensor core from zero, added to an f32 total (round to nearest)" if self.parts == 2 else
               "rna(a), accumulated on the tensor core")
        return (*out, f"tf32 parts formed from the f32 stage by the consumers: A's in registers (wgmma's A "
                      f"fragment), B's in 2 K-major buffers of {self.work_bytes // 2 // 1024} KiB: {how}")


@dataclass(frozen=True, slots=True)
class Operand:
    """How TMA sees A or B of an m x n x k problem: a 2-D tensor of `outer` lines of `inner` contiguous elements,
    read in boxes of `box` (innermost first)."""

    inner: int
    outer: int
    box: tuple[int, int]
    elem: int = 2  # bytes per element

    @property
    def padded(self) -> int:
        """The line length of a staged copy: `inner` rounded up to a 16-byte multiple."""
        per = 16 // self.elem
        return ceil_div(self.inner, per) * per


def operands(plan: HopperPlan, m: int, n: int, k: int) -> tuple[Operand, Operand]:
    """A (K-major: m lines of k; M-major: k lines of m) and B (K-major: n lines of k; N-major: k lines of n). A split
    reads its planes in scratch instead: each operand's planes stacked along the outer dimension, padded extents."""
    e = plan.elem
    if plan.split:
        mp, np_, kp = plan.pads
        a = Operand(kp, plan.a_planes * mp, plan.a_box, e) if plan.a_kmajor else \
            Operand(mp, plan.a_planes * kp, plan.a_box, e)
        b = Operand(kp, plan.b_planes * np_, plan.b_box, e) if plan.b_kmajor else \
            Operand(np_, plan.b_planes * kp, plan.b_box, e)
        return a, b
    a = Operand(k, m, plan.a_box, e) if plan.a_kmajor else Operand(m, k, plan.a_box, e)
    b = Operand(k, n, plan.b_box, e) if plan.b_kmajor else Operand(n, k, plan.b_box, e)
    return a, b

"""The tensor-core family's decisions (paper 001): block and warp tiles, mma shape, pipeline, split terms
(TensorCorePlan), and the decisions so far between its planning steps (TensorCoreDraft)."""

from __future__ import annotations

from dataclasses import dataclass

from gemmc.ir.nodes import FamilyPlan, PlanDraft

PREP_THREADS = 256  # threads per block of the pre-pass (its launch; the template's GEMMC_PREP_THREADS is this value)

RANGE_TEXT = "; rows of A / columns of B scaled by powers of two into the f16 range"
F16_TOP = 15  # f16 parts: a line's largest |value| is scaled into [2^(top-1), 2^top); 2^15 < 65504 (docs/PRECISION.md)
SCRATCH_ALIGN = 256  # bytes: every scratch region starts on this boundary (the template's gemmc_tc_scratch::ALIGN)


@dataclass(frozen=True, slots=True)
class SplitTerm:
    """One product of a split GEMM: part `a` of A times part `b` of B, into accumulator `acc`."""

    a: int
    b: int
    acc: int


@dataclass(frozen=True, slots=True)
class SplitPlan:
    """How f32 operands become tensor-core parts (paper 001 §3; Ootomo & Yokota; Markidis).

    Part p of a value is stored multiplied by 2^(p * scale_bits); a product of parts (pa, pb) is therefore
    scaled by 2^((pa + pb) * scale_bits), and every term of one accumulator has the same level, so the
    epilogue divides each accumulator once. `hi_round`/`lo_round` are "rn" (nearest even), "rz" (toward
    zero) or "rna" (nearest, ties away: TF32's cvt.rna).
    """

    compute: str  # "f16" | "bf16" | "tf32"
    parts: int  # 1 (one pass), 2 (hi, lo) or 3 (hi, mid, lo)
    terms: tuple[SplitTerm, ...]
    scale_bits: int  # 0: parts are not scaled
    hi_round: str
    lo_round: str
    accumulators: int
    acc_levels: tuple[int, ...]  # per accumulator: pa + pb of its terms (the epilogue divides by 2^(level*bits))
    row_scaling: bool  # f16: range tracked per row/column; tiles outside it redone scaled (docs/PRECISION.md)
    method: str  # "le", "ootomo", "markidis", "" (one pass or a bf16/tf32 split)

    @property
    def levels(self) -> tuple[int, ...]:
        """Per term: the power of 2^scale_bits its product carries (pa + pb; 0 for unscaled splits)."""
        return tuple((t.a + t.b) if self.scale_bits else 0 for t in self.terms)

    @property
    def premul_bits(self) -> int:
        """The kernel sums every term of a k-step in one tensor-core chain at the level of the correction terms:
        the level-0 product (hi*hi) gets B's hi part multiplied by 2^premul_bits (exact in f16 while B's columns
        stay below 2^top_b). 0 when all terms share one level."""
        return (max(self.levels) - min(self.levels)) * self.scale_bits if self.parts > 1 else 0

    @property
    def top_b(self) -> int:
        """B's columns are scaled below 2^top_b so that hi * 2^premul_bits stays below 2^15."""
        return F16_TOP - self.premul_bits

    @property
    def level_factor_bits(self) -> int:
        """The epilogue multiplies the total by 2^-level_factor_bits (the level the terms were summed at)."""
        return max(self.levels) * self.scale_bits if self.parts > 1 else 0

    def describe(self) -> str:
        names = ("hi", "mid", "lo") if self.parts == 3 else ("hi", "lo")
        if self.parts == 1:
            how = "one product, accumulated on the tensor core"
        else:
            pre = self.premul_bits
            terms = " + ".join(f"{names[t.a]}*{names[t.b]}{f'*2^{pre}' if pre and lv == min(self.levels) else ''}"
                               for t, lv in zip(self.terms, self.levels, strict=True))
            how = f"per k-step {terms} on the tensor core, added to an f32 total (round to nearest)"
        scale = f", lo scaled by 2^{self.scale_bits}" if self.scale_bits else ""
        return (f"{self.compute} x{len(self.terms)}{' method ' + self.method if self.method else ''}: {how}; "
                f"hi {self.hi_round}, lo {self.lo_round}{scale}{RANGE_TEXT if self.row_scaling else ''}")


@dataclass(frozen=True, slots=True)
class TensorCoreVariant:
    """A block tile and its thread count: the record a work-list planner reuses (one `variant` of a launch)."""

    bm: int
    bn: int
    bk: int
    wm: int  # warp tile rows
    wn: int  # warp tile columns
    threads: int


@dataclass(frozen=True, slots=True)
class Candidate:
    """One tile the analytic model weighed (paper 001 §4.2, Eqs. 12-17)."""

    bm: int
    bn: int
    blocks: int
    warps_active: int  # Eq. 12's TLP in warps, capped by what the SMs hold
    ratio: float  # Eq. 15: 3*TM*TN / (2(TM+TN)) (per element loaded)
    loads_per_thread: int  # Eqs. 16-17: elements each thread moves per k-step
    verdict: str
    wm: int = 0  # the warp tile this block tile is built from
    wn: int = 0

    def line(self) -> str:
        return (f"candidate {self.bm}x{self.bn} (warp {self.wm}x{self.wn}): {self.blocks} blocks, "
                f"{self.warps_active} warps active, ratio {self.ratio:.1f}, "
                f"{self.loads_per_thread} loads/thread/k-step: {self.verdict}")


def scratch_bytes(rows: tuple[tuple[int, int, int], ...], bm: int, bn: int, bk: int, parts: int, elem: int,
                  b_planes: int = 0) -> int:
    """Bytes of the pre-pass's scratch for problems (m, n, k): one 8-byte offset per problem, then per problem A's
    part planes and B's `b_planes` (default: `parts`) padded to whole tiles and the inverse row/column scales, each
    region 256-byte aligned. The template's gemmc_tc_scratch lays the scratch out on the device; the generated code
    static_asserts that its layout of one probe problem takes the bytes this function computes for it."""
    b_planes = b_planes or parts
    def up(x: int, b: int) -> int:
        return -(-x // b) * b

    total = up(8 * len(rows), SCRATCH_ALIGN)
    for m, n, k in rows:
        mp, np_, kp = up(m, bm), up(n, bn), up(k, bk)
        total += sum(up(b, SCRATCH_ALIGN)
                     for b in (parts * mp * kp * elem, b_planes * np_ * kp * elem, 4 * mp, 4 * np_))
    return total


@dataclass(frozen=True, slots=True)
class TensorCorePlan(FamilyPlan):
    variant: TensorCoreVariant
    mma: tuple[int, int, int]  # m16n8k16 (f16/bf16) or m16n8k8 (tf32)
    stages: int  # cp.async shared-memory stages of the main loop (2..4)
    split: SplitPlan
    elem_bytes: int  # bytes of one part element in shared memory (2, or 4 for tf32)
    pad: int  # elements of padding per shared-memory row (bank-conflict-free ldmatrix / fragment loads)
    a_kcontig: bool = True  # A's planes (and shared tiles) run along k: row-major A
    b_kcontig: bool = False  # B's run along k: column-major B
    scratch: int = 0  # bytes of scratch memory the pre-pass fills (planes, scales)
    chain: int = 1  # splits: k-steps whose terms are summed on the tensor core before one f32 (RN) addition
    wgmma: bool = False  # sm_90: warpgroup MMA (wgmma, sm_90a) from shared memory instead of mma.sync + ldmatrix
    prep_blocks: int = 1  # the pre-pass's grid (256 threads per block)
    candidates: tuple[Candidate, ...] = ()
    emulation_note: str = ""

    @property
    def threads(self) -> int:
        return self.variant.threads

    @property
    def scratch_bytes(self) -> int:
        return self.scratch

    @property
    def tile_shapes(self) -> tuple[tuple[int, int], ...]:
        return ((self.variant.bm, self.variant.bn),)

    @property
    def prologue(self) -> tuple[int, int] | None:
        return (self.prep_blocks, PREP_THREADS)

    @property
    def smem_bytes(self) -> int:
        return self.stages * self.stage_bytes + self.smem_align

    @property
    def smem_align(self) -> int:
        """wgmma: bytes to round the dynamic shared memory up to a 1024-byte boundary (the swizzle atoms')."""
        return 1024 if self.wgmma else 0

    @property
    def b_planes(self) -> int:
        """B's planes in scratch and shared memory: its parts, and with wgmma (B read by the tensor core straight
        from shared memory, no register to multiply) a last plane holding hi * 2^premul_bits for the level-0 term."""
        return self.split.parts + (1 if self.wgmma and self.split.premul_bits else 0)

    @property
    def wg_n(self) -> int:
        """wgmma: the N of one instruction (m64nNk16). One pass: the whole block width (one accumulator set of
        BN / 2 registers per thread). Splits: at most 128, because each k-step's terms are summed from zero in a
        second accumulator set before the f32 total takes them: total + sum = 3/4 of BN registers at N = BN / 2."""
        return self.variant.bn if self.split.parts == 1 else min(128, self.variant.bn)

    @property
    def stage_bytes(self) -> int:
        """One stage: every part of A's BM x BK tile and B's BN x BK tile, rows padded by `pad` elements (wgmma:
        8x8 core matrices of 128 contiguous bytes, no padding)."""
        v, pad = self.variant, self.pad
        a = v.bm * (v.bk + pad) if self.a_kcontig else v.bk * (v.bm + pad)
        b = v.bn * (v.bk + pad) if self.b_kcontig else v.bk * (v.bn + pad)
        return (a * self.split.parts + b * self.b_planes) * self.elem_bytes

    @property
    def regs_estimate(self) -> int:
        v = self.variant
        if self.wgmma:  # the total (BM x BN over the block's threads) and, for splits, one wg_n-wide sum
            sums = self.wg_n // 2 if self.split.parts > 1 else 0
            return min(256, v.bm * v.bn // v.threads + sums + 40)
        frags = (v.wm // 16) * 4 + (v.wn // 8) * 2  # one k-step's A and B fragments of one part
        chain = 16 if self.split.parts > 1 else 0  # the per-k-step sums in flight
        return min(256, v.wm * v.wn // 32 + frags * self.split.parts + chain + 24)

    @property
    def mma_text(self) -> str:
        m, n, k = self.mma
        if self.wgmma:
            return f"wgmma m64n{self.wg_n}k{k} from shared memory ({self.threads // 128} warpgroup(s))"
        return f"mma m{m}n{n}k{k}"

    @property
    def arch_specific(self) -> bool:
        return self.wgmma

    def lines(self) -> tuple[str, ...]:
        v = self.variant
        out = [f"tensorcore: block {v.bm}x{v.bn}x{v.bk}, warp tile {v.wm}x{v.wn}, {v.threads} threads, "
               f"{self.mma_text}, {self.stages} cp.async stages; shared memory {self.smem_bytes} B, "
               f"~{self.regs_estimate} regs; pre-pass split into scratch ({self.scratch} B, {self.prep_blocks} blocks)",
               f"split: {self.split.describe()}"]
        if self.wgmma:
            out.append("build: sm_90a only (nvcc -gencode=arch=compute_90a,code=sm_90a): the main loop is wgmma")
        out += [c.line() for c in self.candidates]
        if self.emulation_note:
            out.append(self.emulation_note)
        return tuple(out)


@dataclass(frozen=True, slots=True)
class TensorCoreDraft(PlanDraft):
    """The tensor-core family's decisions between its planning steps (families/tensorcore/steps.py): the split,
    then the block tile and the tiles the model weighed, then the pipeline depth (0: not chosen yet)."""

    split: SplitPlan
    variant: TensorCoreVariant | None = None
    candidates: tuple[Candidate, ...] = ()
    stages: int = 0

    def lines(self) -> tuple[str, ...]:
        out = [f"split: {self.split.describe()}"]
        if self.variant is not None:
            v = self.variant
            out.append(f"block {v.bm}x{v.bn}x{v.bk}, warp tile {v.wm}x{v.wn}, {v.threads} threads")
        if self.stages:
            out.append(f"{self.stages} cp.async stages")
        return (*out, *(c.line() for c in self.candidates))

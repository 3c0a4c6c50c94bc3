"""The tensor-core family's decisions (paper 001): block and warp tiles, mma shape, pipeline, split terms."""

from __future__ import annotations

from dataclasses import dataclass

from gemmc.ir.nodes import FamilyPlan

RANGE_TEXT = "; f16 range checked per row/column, out-of-range tiles redone with power-of-two scaling"


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

    def describe(self) -> str:
        names = ("hi", "mid", "lo") if self.parts == 3 else ("hi", "lo")
        terms = " + ".join(f"{names[t.a]}*{names[t.b]}->acc{t.acc}" for t in self.terms) if self.parts > 1 else \
            "one product"
        scale = f", lo scaled by 2^{self.scale_bits}" if self.scale_bits else ""
        return (f"{self.compute} x{len(self.terms)}{' method ' + self.method if self.method else ''}: {terms}; "
                f"hi {self.hi_round}, lo {self.lo_round}{scale}; {self.accumulators} f32 accumulator(s)"
                f"{RANGE_TEXT if self.row_scaling else ''}")


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


@dataclass(frozen=True, slots=True)
class TensorCorePlan(FamilyPlan):
    variant: TensorCoreVariant
    mma: tuple[int, int, int]  # m16n8k16 (f16/bf16) or m16n8k8 (tf32)
    stages: int
    split: SplitPlan
    elem_bytes: int  # bytes of one part element in shared memory (2, or 4 for tf32)
    pad: int  # elements of padding per shared-memory row (bank-conflict-free ldmatrix / fragment loads)
    candidates: tuple[Candidate, ...] = ()
    emulation_note: str = ""

    @property
    def threads(self) -> int:
        return self.variant.threads

    @property
    def smem_bytes(self) -> int:
        v = self.variant
        per_stage = (v.bm + v.bn) * (v.bk + self.pad) * self.elem_bytes * self.split.parts
        return self.stages * per_stage + (v.bm + v.bn) * 4  # + the row/column scales

    @property
    def regs_estimate(self) -> int:
        v = self.variant
        warp_elems = v.wm * v.wn // 32
        frags = (v.wm // 16) * 4 + (v.wn // 8) * 2
        staging = (v.bm + v.bn) * v.bk // v.threads
        return min(255, warp_elems * self.split.accumulators + frags * self.split.parts + staging + 24)

    def lines(self) -> tuple[str, ...]:
        v = self.variant
        m, n, k = self.mma
        out = [f"tensorcore: block {v.bm}x{v.bn}x{v.bk}, warp tile {v.wm}x{v.wn}, {v.threads} threads, "
               f"mma m{m}n{n}k{k}, {self.stages} stages; shared memory {self.smem_bytes} B, ~{self.regs_estimate} regs",
               f"split: {self.split.describe()}"]
        out += [f"candidate {c.bm}x{c.bn}: {c.blocks} blocks, {c.warps_active} warps active, ratio {c.ratio:.1f}, "
                f"{c.loads_per_thread} loads/thread/k-step: {c.verdict}" for c in self.candidates]
        if self.emulation_note:
            out.append(self.emulation_note)
        return tuple(out)

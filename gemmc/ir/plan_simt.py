"""The SIMT family's decisions: a catalogue of tile variants and which variant each problem uses."""

from __future__ import annotations

from dataclasses import dataclass

from gemmc.ir.nodes import FamilyPlan


@dataclass(frozen=True, slots=True)
class SimtVariant:
    """A block tile bm x bn x bk computed by `threads` threads, each holding a tm x tn micro-tile."""

    bm: int
    bn: int
    bk: int
    tm: int
    tn: int
    threads: int

    @property
    def name(self) -> str:
        return f"{self.bm}x{self.bn}x{self.bk}_t{self.threads}"

    def __str__(self) -> str:
        return f"{self.bm}x{self.bn}x{self.bk} threads {self.threads} micro {self.tm}x{self.tn}"


@dataclass(frozen=True, slots=True)
class SimtPlan(FamilyPlan):
    variants: tuple[SimtVariant, ...]
    assignment: tuple[int, ...]  # variant index per problem, in batch order
    stages: int  # 1: one shared buffer; 2: double-buffered shared memory with register prefetch
    elem_bytes: int

    @property
    def threads(self) -> int:
        return max(v.threads for v in self.variants)

    @property
    def pad(self) -> int:
        """Shared-memory row padding in elements: one 16-byte vector, which makes the transposed stores of
        the tile loads conflict-free while keeping rows 16-byte aligned for vector reads."""
        return 16 // self.elem_bytes

    def variant_smem(self, v: SimtVariant) -> int:
        return self.stages * v.bk * (v.bm + v.bn + 2 * self.pad) * self.elem_bytes

    @property
    def smem_bytes(self) -> int:
        return max(self.variant_smem(v) for v in self.variants)

    def variant_regs(self, v: SimtVariant) -> int:
        words = self.elem_bytes // 4
        staged = (v.bm + v.bn) * v.bk // v.threads  # prefetched elements held across the inner loop
        return words * (v.tm * v.tn + v.tm + v.tn + staged) + 32

    @property
    def regs_estimate(self) -> int:
        return max(self.variant_regs(v) for v in self.variants)

    def lines(self) -> tuple[str, ...]:
        out = [f"stages {self.stages}, block {self.threads} threads, shared memory {self.smem_bytes} B"]
        for i, v in enumerate(self.variants):
            users = sum(1 for a in self.assignment if a == i)
            out.append(f"variant {i}: {v} (~{self.variant_regs(v)} regs) used by {users} problem(s)")
        return tuple(out)

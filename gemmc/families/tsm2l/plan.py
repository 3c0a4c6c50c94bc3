"""The TSM2L family's decisions (paper 002 §3.2): block size t1, rows per thread tcf, and what the model predicts
(Tsm2lPlan), and the decisions so far between its planning steps (Tsm2lDraft)."""

from __future__ import annotations

from dataclasses import dataclass

from gemmc.ir.nodes import FamilyPlan, PlanDraft


@dataclass(frozen=True, slots=True)
class Tsm2lPlan(FamilyPlan):
    t1: int  # threads per block
    tcf: int  # rows per thread (the paper's thread-count factor)
    elem_bytes: int
    t2_threshold: float  # Peak FLOP/s / peak bandwidth x element bytes: n above it is compute-bound
    predicted_bandwidth: float  # bytes/s of A + B + C the model expects
    smem: int
    regs: int
    stage_row: int = 0  # elements of each lane's shared-memory row for row-major A and C (0: none staged)

    @property
    def threads(self) -> int:
        return self.t1

    @property
    def smem_bytes(self) -> int:
        return self.smem

    @property
    def regs_estimate(self) -> int:
        return self.regs

    def lines(self) -> tuple[str, ...]:
        staged = f", rows staged through shared memory ({self.stage_row} elements each)" if self.stage_row else ""
        return (f"tsm2l: t1 {self.t1}, tcf {self.tcf}{staged}; shared memory {self.smem} B, ~{self.regs} regs",
                f"t2 threshold {self.t2_threshold:.1f} (n above it is compute-bound); predicted "
                f"{self.predicted_bandwidth / 1e12:.2f} TB/s")


@dataclass(frozen=True, slots=True)
class Tsm2lDraft(PlanDraft):
    """The TSM2L family's decisions between its planning steps (families/tsm2l/steps.py): rows per thread and the
    registers they take (choose_tiles), then the block and its shared memory (choose_staging; 0: not chosen yet)."""

    tcf: int
    regs: int
    t1: int = 0
    stage_row: int = 0
    smem: int = 0

    def lines(self) -> tuple[str, ...]:
        out = [f"tsm2l: tcf {self.tcf}, ~{self.regs} regs"]
        if self.t1:
            out.append(f"t1 {self.t1}, shared memory {self.smem} B"
                       + (f", rows staged through shared memory ({self.stage_row} elements each)"
                          if self.stage_row else ""))
        return tuple(out)

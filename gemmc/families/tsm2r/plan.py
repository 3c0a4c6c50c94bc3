"""The TSM2R family's decisions (paper 002 §3.1): t1, t2, t3, the k slices and clusters, and what the model
predicts (Tsm2rPlan), and the decisions so far between its planning steps (Tsm2rDraft)."""

from __future__ import annotations

from dataclasses import dataclass

from gemmc.ir.nodes import FamilyPlan, PlanDraft


@dataclass(frozen=True, slots=True)
class Tsm2rPlan(FamilyPlan):
    t1: int  # threads per block
    t2: int  # columns of C per pass
    t3: int  # A loads in flight per thread per step (column-major A)
    kslices: int  # warps of a TSM2R block that split k (column-major A) or own rows (row-major A)
    rows_per_warp: int  # rows per lane (column-major A: one 16-byte vector) or per warp (row-major A)
    elem_bytes: int
    t2_threshold: float  # Peak FLOP/s / peak bandwidth x element bytes: n above it is compute-bound
    predicted_bandwidth: float  # bytes/s of A + B + C the model expects
    smem: int
    regs: int
    cluster: int = 1  # column-major A: blocks of a thread-block cluster that split k (sm_90)
    min_blocks: int = 0  # resident blocks per SM the plan counts on, asked of the compiler (0: no request)
    stages: int = 1  # column-major A: batches in each warp's shared-memory ring (cp.async)
    mma: int = 0  # TSM2R, column-major A, f64: rows of the f64 tensor-core fragment (16: m16n8k4, 8: m8n8k4), 0: FMAs
    row_groups: int = 1  # the column kernel: warps of each k slice, owning neighbouring rows and sharing its B
    a_by_rows: bool = False  # row-major A in the column kernel (batches copied by rows), not the row kernel

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
        knobs = (f"t1 {self.t1}, t2 {self.t2}, t3 {self.t3}, k slices {self.kslices}"
                 + (f" of {self.row_groups} warps" if self.row_groups > 1 else "")
                 + (f" x cluster {self.cluster}" if self.cluster > 1 else "")
                 + (f", {self.stages} stages" if self.stages > 1 else "") + f", rows/warp {self.rows_per_warp}"
                 + (f", f64 tensor cores m{self.mma}n8k4" if self.mma else "")
                 + (", A copied by rows" if self.a_by_rows else ""))
        return (f"tsm2r: {knobs}; shared memory {self.smem} B, ~{self.regs} regs",
                f"t2 threshold {self.t2_threshold:.1f} (n above it is compute-bound); predicted "
                f"{self.predicted_bandwidth / 1e12:.2f} TB/s")


@dataclass(frozen=True, slots=True)
class Tsm2rDraft(PlanDraft):
    """The TSM2R family's decisions between its planning steps (families/tsm2r/steps.py): the kernel's form and
    shape (choose_tiles), its shared memory and the blocks per SM that leaves (choose_staging), then, for the column
    kernel, its cluster and the bandwidth the model predicts with it (split_k). Fields as in Tsm2rPlan; 0: not
    chosen yet."""

    column: bool  # the column kernel (column-major A, or row-major A copied by rows); else the row kernel
    t1: int
    t2: int
    t3: int
    kslices: int
    rows_per_warp: int
    elem_bytes: int
    t2_threshold: float
    regs: int
    mma: int = 0
    row_groups: int = 1
    a_by_rows: bool = False
    stages: int = 0
    smem: int = 0
    blocks_per_sm: int = 0
    cluster: int = 0
    predicted_bandwidth: float = 0.0

    def lines(self) -> tuple[str, ...]:
        form = "column kernel" + (", A copied by rows" if self.a_by_rows else "") if self.column else "row kernel"
        out = [f"tsm2r {form}: t1 {self.t1}, t2 {self.t2} (threshold {self.t2_threshold:.1f}), t3 {self.t3}, k slices "
               f"{self.kslices} of {self.row_groups} warp(s), rows/warp {self.rows_per_warp}, ~{self.regs} regs"
               + (f", f64 tensor cores m{self.mma}n8k4" if self.mma else "")]
        if self.smem:
            out.append(f"shared memory {self.smem} B" + (f", {self.stages} stages, {self.blocks_per_sm} blocks/SM"
                                                          if self.stages else ""))
        if self.cluster:
            out.append(f"cluster {self.cluster}, predicted {self.predicted_bandwidth / 1e12:.2f} TB/s")
        return tuple(out)

"""The TSM2L planner (paper 002 §3.2): a tall-and-skinny A (m x k, m >> k) times a small B (k x n). Each thread
keeps whole rows of A in registers (tcf rows: the paper's thread-count factor) and B sits in shared memory. The
pipeline runs it through the family's planning steps (families/tsm2l/steps.py)."""

from __future__ import annotations

from dataclasses import replace

from gemmc.families.base import GridTile
from gemmc.families.streaming import (
    bytes_needed_in_flight,
    half_goes_to_tma,
    resident_threads,
    t2_threshold,
)
from gemmc.families.tsm2l import calibration as cal
from gemmc.families.tsm2l.plan import Tsm2lDraft, Tsm2lPlan
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel, Problem, TileTable, WorkList
from gemmc.ir.types import DType, Layout
from gemmc.model.tlp import ceil_div
from gemmc.model.worklist import problem_rows

TCF_CHOICES = (1, 2, 4, 8)
TSM2L_MAX_K = 32  # TSM2L keeps a whole row of A in registers
TSM2L_ROW_REGS = 128  # registers a TSM2L thread may spend on its rows of A
# Measured (calibration.py: the GPU, why each holds, the results files): threads per block; the waves of resident
# threads a launch gets before each thread takes more rows; algorithm auto's tall-and-skinny A (k and n this
# small, m this large).
T1 = cal.T1.value
WAVES = cal.WAVES.value
AUTO_TSM2L_MAX_KN = cal.AUTO_TSM2L_MAX_KN.value
AUTO_TSM2L_MIN_M = cal.AUTO_TSM2L_MIN_M.value


def tsm2l_stage_elems(k: int, n: int, dtype: DType, a_layout: Layout, c_layout: Layout,
                      c_dtype: DType | None = None) -> int:
    """Elements of one warp's shared-memory rows through which row-major A and C pass (tsm2l.cu.j2): one row per
    lane, an odd number of 16-byte vectors long; 0 where neither is read as vectors. A row of A (C) is staged where
    it is a whole number of 16-byte vectors of its storage type (8 halves); the rows hold the computed type (f32 for
    16-bit storage: dtype.widened)."""
    vec = 16 // dtype.widened.nbytes
    a_vec, c_vec = 16 // dtype.nbytes, 16 // (c_dtype or dtype).nbytes
    staged = [x for x, layout, v in ((k, a_layout, a_vec), (n, c_layout, c_vec)) if layout is Layout.ROW and x % v == 0]
    if not staged:
        return 0
    wide = max(staged)
    return wide if (wide // vec) % 2 else wide + vec


def tsm2l_params(p: Problem, dtype: DType, hw: Hardware, a_layout: Layout = Layout.COL,
                 c_layout: Layout = Layout.COL, t1: int = T1) -> Tsm2lPlan:
    """TSM2L's plan, the family's planning steps in one call; blocks of at most `t1` threads (T1)."""
    return tsm2l_plan(tsm2l_staging(tsm2l_rows(p, dtype, hw), p, dtype, hw, a_layout, c_layout, t1), p, dtype, hw)


def tsm2l_rows(p: Problem, dtype: DType, hw: Hardware) -> Tsm2lDraft:
    """tcf, the rows each thread keeps in registers (§3.2): about WAVES waves of resident threads, then more rows
    per thread (paper, V100 single: tcf 1, 1, 2, 8 for m = 1e4 .. 1e7), and the registers they take."""
    w = dtype.widened.nbytes // 4 or 1
    capacity = hw.sm_count * hw.max_threads_per_sm
    # The rows a thread holds are registers: keep them to TSM2L_ROW_REGS so that 8+ warps stay resident per SM.
    tcf = max(c for c in TCF_CHOICES
              if c == 1 or (p.m >= c * WAVES * capacity and w * c * p.k <= TSM2L_ROW_REGS))
    return Tsm2lDraft(tcf=tcf, regs=w * (tcf * p.k + 2) + 24)


def tsm2l_staging(rows: Tsm2lDraft, p: Problem, dtype: DType, hw: Hardware, a_layout: Layout, c_layout: Layout,
                  t1: int = T1, c_dtype: DType | None = None) -> Tsm2lDraft:
    """Shared memory: B, then each warp's staging rows for row-major A and C. Blocks of `t1` threads, halved while
    their staging rows would not fit the target's shared memory (f64 with k or n near 32, row-major, on the 64 KiB
    of a CDNA workgroup)."""
    work = dtype.widened  # shared memory holds the computed type
    vec = 16 // work.nbytes
    stage_row = tsm2l_stage_elems(p.k, p.n, dtype, a_layout, c_layout, c_dtype)

    def smem_of(t1: int) -> int:
        return (ceil_div(p.k * p.n, vec) * vec + t1 * stage_row) * work.nbytes  # B (whole vectors), then the rows

    while smem_of(t1) > hw.smem_per_block and t1 > hw.warp_size:
        t1 //= 2
    return replace(rows, t1=t1, stage_row=stage_row, smem=smem_of(t1))


def tsm2l_plan(draft: Tsm2lDraft, p: Problem, dtype: DType, hw: Hardware) -> Tsm2lPlan:
    """The plan of a staged draft, with the bandwidth Little's law predicts over its resident threads."""
    d = draft
    inflight = resident_threads(hw, ceil_div(p.m, d.tcf), d.regs, d.smem, d.t1) * d.tcf * p.k * dtype.nbytes
    predicted = hw.mem_bandwidth * min(1.0, inflight / bytes_needed_in_flight(hw))
    return Tsm2lPlan(t1=d.t1, tcf=d.tcf, elem_bytes=dtype.nbytes, t2_threshold=t2_threshold(hw, dtype),
                     predicted_bandwidth=predicted, smem=d.smem, regs=d.regs, stage_row=d.stage_row)


def claim(kernel: Kernel, hw: Hardware) -> str | None:
    """The `algorithm auto` rule for TSM2L, with its reason; None: not this family's shape."""
    if kernel.count is not None or len(kernel.problems) != 1 or half_goes_to_tma(kernel, hw):
        return None
    p = kernel.problems[0]
    if p.k <= AUTO_TSM2L_MAX_KN and p.n <= AUTO_TSM2L_MAX_KN and p.m >= AUTO_TSM2L_MIN_M:
        return f"k, n <= {AUTO_TSM2L_MAX_KN} with m >= {AUTO_TSM2L_MIN_M}: tall-and-skinny A (TSM2L)"
    return None


def notes(kernel: Kernel, plan: Tsm2lPlan, hw: Hardware) -> tuple[str, ...]:
    p = kernel.problems[0]
    bound = "memory-bound" if p.n <= plan.t2_threshold else "compute-bound"
    return (f"tsm2l: n = {p.n} vs t2 threshold {plan.t2_threshold:.1f}: {bound}; "
            f"Little's law needs {bytes_needed_in_flight(hw) / 1024:.1f} KiB in flight per SM",)


def worklist(kernel: Kernel, plan: Tsm2lPlan, hw: Hardware) -> WorkList:
    """No tiles: each block takes t1 x tcf consecutive rows."""
    p = kernel.problems[0]
    grid = (max(1, ceil_div(ceil_div(p.m, plan.tcf), plan.t1)), 1, 1)
    return WorkList(problems=problem_rows(kernel), tiles=TileTable(), block_offsets=(), grid=grid, block=plan.t1,
                    smem_bytes=plan.smem)


def grid_tile(kernel: Kernel, plan: Tsm2lPlan, hw: Hardware) -> GridTile:
    """The rows and columns of C one block covers (t1 threads of tcf rows, every column), unshared."""
    return GridTile(plan.t1 * plan.tcf, kernel.problems[0].n)

"""The TSM2 planners (paper 002): tall-and-skinny GEMM near memory bandwidth.

TSM2R: a large A (m x k) times a tall-skinny B (k x n, n small). TSM2L: a tall-skinny A (m x k, m >> k) times a
small B (k x n). Both read A once and are memory-bound when n is below the paper's t2 threshold
(Peak FLOP/s / peak bandwidth x element bytes, §3.1.8). The parameters come from Little's law over the launch's
real parallelism, with the constants of `Hardware` (paper §3.1.9 and §3.2; its gradient descent is replaced by
enumeration of the few integer candidates, which the digest recommends).
"""

from __future__ import annotations

import math

from gemmc.errors import Diagnostic, GemmcError
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel, Problem, WorkList
from gemmc.ir.plan_tsm2 import Tsm2Plan
from gemmc.ir.types import DType, Family, Layout
from gemmc.passes.tlp import ceil_div, occupancy
from gemmc.passes.worklist import problem_rows

T1 = 256  # TSM2L threads per block (the paper's t1: 128 on V100 by brute force)
KSLICES = 8  # warps per TSM2R block: t1 = 8 warps
T2_MAX = 32  # C columns a thread keeps in registers per pass
T3_CHOICES = (2, 4, 8, 16)
T2_COL_MAX = 16  # column-major TSM2R: 4 rows x 16 columns of C per thread in f32
TCF_CHOICES = (1, 2, 4, 8)
TSM2L_MAX_K = 32  # TSM2L keeps a whole row of A in registers
WAVES = 4  # TSM2L: launch about this many waves of resident threads, then give each thread more rows
TSM2L_ROW_REGS = 128  # registers a TSM2L thread may spend on its rows of A

# algorithm auto: the shapes that go to TSM2 (one GEMM, f32/f64). The crossover in n against the SIMT family is
# measured by bench/tallskinny.py at m = k = 16384 f32 (H100, three TSM2R versions): TSM2R won by 1.45-1.9x at
# n <= 8 every time, but by 0.85-1.32x at n = 16, so auto stops at 8. 8192 is the smallest m, k measured.
AUTO_TSM2R_MAX_N = 8
AUTO_TSM2R_MIN_MK = 8192
AUTO_TSM2L_MAX_KN = 16
AUTO_TSM2L_MIN_M = 65536


def t2_threshold(hw: Hardware, dtype: DType) -> float:
    """Paper 002 §3.1.8 as printed: Peak FLOP/s / Peak bandwidth x bytes per element (with FLOP/s counting an FMA
    as 2, as the paper's reported thresholds do: V100 double ~ 67, K40c ~ 40)."""
    flops = hw.f64_flops if dtype is DType.F64 else hw.fp32_flops
    return flops / hw.mem_bandwidth * dtype.nbytes


def choose_t2(n: int, threshold: float) -> int:
    """Memory-bound (n <= threshold): all n columns in one pass, so A is read once (up to T2_MAX). Compute-bound:
    the smallest power of two at or above the threshold (the paper's M40 double case: threshold 5.9 -> t2 8)."""
    if n <= threshold:
        return min(n, T2_MAX)
    return min(n, T2_MAX, 1 << max(0, math.ceil(math.log2(threshold))))


LOADED_LATENCY = 2  # a loaded memory system's latency is about twice the idle one: Little's law gets this margin


def bytes_needed_in_flight(hw: Hardware) -> float:
    """Little's law per SM: bandwidth x latency under load / SMs."""
    return hw.mem_bandwidth * (LOADED_LATENCY * hw.mem_latency_cycles / hw.clock_hz) / hw.sm_count


def resident_threads(hw: Hardware, total_threads: int, regs: int, smem: int) -> int:
    """Threads per SM: what occupancy allows, or fewer when the grid has fewer threads than the machine holds."""
    occ = occupancy(hw, T1, regs, smem)
    return min(occ.warps_per_sm * hw.warp_size, max(1, total_threads // hw.sm_count))


def column_rows_per_lane(m: int, dtype: DType, hw: Hardware) -> int:
    """Column-major TSM2R: the widest vector of rows per lane (up to 16 bytes) that still gives every SM a block.
    Wide vectors make each warp's read of a column long and contiguous (H100: 83-89% of the roof at m = 30720
    with 16 bytes); narrow ones keep enough blocks when m is smaller (m = 8192 at 16 bytes left half the SMs
    idle)."""
    widest = 16 // dtype.nbytes
    for rows in (widest, widest // 2, widest // 4):
        if rows >= 1 and ceil_div(m, hw.warp_size * rows) >= hw.sm_count:
            return rows
    return 1


def column_smem(t2: int, t3: int, rows: int, dtype: DType, hw: Hardware) -> int:
    """Column-major TSM2R shared memory: the staged chunk of B (k slices x t3 rows x t2 columns), reused for the
    end-of-block reduction of the k slices' partial sums (slices x t2 x rows x warp)."""
    return max(KSLICES * t3 * t2, KSLICES * t2 * rows * hw.warp_size) * dtype.nbytes


def tsm2r_params(p: Problem, dtype: DType, a_layout: Layout, hw: Hardware) -> Tsm2Plan:
    threshold = t2_threshold(hw, dtype)
    t2 = choose_t2(p.n, threshold)
    w = dtype.nbytes // 4 or 1
    need = bytes_needed_in_flight(hw)
    if a_layout is Layout.COL:
        rows_per_warp = column_rows_per_lane(p.m, dtype, hw)
        t2 = min(t2, T2_COL_MAX)  # rows_per_warp x t2 accumulators per thread
        while column_smem(t2, T3_CHOICES[-1], rows_per_warp, dtype, hw) > hw.smem_per_block_default:
            if rows_per_warp > 1:  # the end-of-block reduction holds rows x t2 values per thread
                rows_per_warp //= 2
            else:
                t2 //= 2  # more passes over n (grid.y): A is read once per pass
        rows_per_block = hw.warp_size * rows_per_warp
        chosen, predicted = T3_CHOICES[-1], 0.0
        for t3 in T3_CHOICES:
            regs = w * (rows_per_warp * (t2 + t3)) + 24
            smem = column_smem(t2, t3, rows_per_warp, dtype, hw)
            threads = ceil_div(p.m, rows_per_block) * KSLICES * hw.warp_size * ceil_div(p.n, t2)
            inflight = resident_threads(hw, threads, regs, smem) * t3 * rows_per_warp * dtype.nbytes
            predicted = hw.mem_bandwidth * min(1.0, inflight / need)
            chosen = t3
            if inflight >= need:  # the first t3 that saturates Little's law: the plateau the digest describes
                break
        t3 = chosen
        smem = column_smem(t2, t3, rows_per_warp, dtype, hw)
        regs = w * (rows_per_warp * (t2 + t3)) + 24
    else:
        rows_per_warp = 4 if t2 <= 16 else 2
        t3 = 4 * rows_per_warp  # elements of A in flight per lane per step
        regs = w * (rows_per_warp * t2 + t3 + 4) + 24
        smem = t2 * hw.warp_size * 4 * dtype.nbytes
        threads = ceil_div(p.m, KSLICES * rows_per_warp) * T1 * ceil_div(p.n, t2)
        inflight = resident_threads(hw, threads, regs, smem) * t3 * dtype.nbytes
        predicted = hw.mem_bandwidth * min(1.0, inflight / need)
    return Tsm2Plan(family=Family.TSM2R, t1=KSLICES * hw.warp_size, t2=t2, t3=t3, tcf=1, kslices=KSLICES,
                    rows_per_warp=rows_per_warp, elem_bytes=dtype.nbytes, t2_threshold=threshold,
                    predicted_bandwidth=predicted, smem=smem,
                    regs=regs)


def tsm2l_params(p: Problem, dtype: DType, hw: Hardware) -> Tsm2Plan:
    """tcf (§3.2): about WAVES waves of resident threads, then more rows per thread (paper, V100 single:
    tcf 1, 1, 2, 8 for m = 1e4 .. 1e7)."""
    w = dtype.nbytes // 4 or 1
    capacity = hw.sm_count * hw.max_threads_per_sm
    # The rows a thread holds are registers: keep them to TSM2L_ROW_REGS so that 8+ warps stay resident per SM.
    tcf = max(c for c in TCF_CHOICES
              if c == 1 or (p.m >= c * WAVES * capacity and w * c * p.k <= TSM2L_ROW_REGS))
    regs = w * (tcf * p.k + 2) + 24
    smem = p.k * p.n * dtype.nbytes
    threads = ceil_div(p.m, tcf)
    inflight = resident_threads(hw, threads, regs, smem) * tcf * p.k * dtype.nbytes
    predicted = hw.mem_bandwidth * min(1.0, inflight / bytes_needed_in_flight(hw))
    return Tsm2Plan(family=Family.TSM2L, t1=T1, t2=p.n, t3=p.k, tcf=tcf, kslices=1, rows_per_warp=1,
                    elem_bytes=dtype.nbytes, t2_threshold=t2_threshold(hw, dtype), predicted_bandwidth=predicted,
                    smem=smem, regs=regs)


def classify(kernel: Kernel) -> tuple[Family | None, str]:
    """The `algorithm auto` rule for TSM2, with its reason."""
    if kernel.count is not None or len(kernel.problems) != 1 or kernel.dtype not in (DType.F32, DType.F64):
        return None, ""
    p = kernel.problems[0]
    if p.n <= AUTO_TSM2R_MAX_N and p.m >= AUTO_TSM2R_MIN_MK and p.k >= AUTO_TSM2R_MIN_MK:
        return Family.TSM2R, (f"n = {p.n} <= {AUTO_TSM2R_MAX_N} with m, k >= {AUTO_TSM2R_MIN_MK}: tall-and-skinny B, "
                              "memory-bound (TSM2R)")
    if p.k <= AUTO_TSM2L_MAX_KN and p.n <= AUTO_TSM2L_MAX_KN and p.m >= AUTO_TSM2L_MIN_M:
        return Family.TSM2L, (f"k, n <= {AUTO_TSM2L_MAX_KN} with m >= {AUTO_TSM2L_MIN_M}: tall-and-skinny A "
                              "(TSM2L)")
    return None, ""


def _check(kernel: Kernel, family: Family) -> Problem:
    diags = []
    if kernel.count is not None or len(kernel.problems) != 1:
        diags.append(Diagnostic("E900", f"algorithm {family.value} runs one GEMM per kernel; batches are not "
                                "supported yet", kernel.where("algorithm"), "use `gemm M x N x K`"))
    if kernel.dtype not in (DType.F32, DType.F64):
        diags.append(Diagnostic("E202", f"algorithm {family.value} computes f32 or f64", kernel.where("dtype")))
    p = kernel.problems[0]
    if family is Family.TSM2L and p.k > TSM2L_MAX_K:
        diags.append(Diagnostic("E202", f"TSM2L keeps a row of A in registers: k = {p.k} exceeds {TSM2L_MAX_K}",
                                kernel.where("algorithm"), "use algorithm tsm2r or simt"))
    if family is Family.TSM2L and p.n > T2_MAX:
        diags.append(Diagnostic("E202", f"TSM2L computes n <= {T2_MAX} columns, not {p.n}",
                                kernel.where("algorithm"), "use algorithm simt"))
    if kernel.tile is not None or kernel.threads is not None:
        diags.append(Diagnostic("E202", f"algorithm {family.value} chooses its own tile and threads (t1, t2, t3)",
                                kernel.where("tile" if kernel.tile is not None else "threads")))
    if diags:
        raise GemmcError(diags)
    return p


def plan(kernel: Kernel, hw: Hardware) -> Tsm2Plan:
    assert kernel.family in (Family.TSM2R, Family.TSM2L)
    p = _check(kernel, kernel.family)
    if kernel.family is Family.TSM2L:
        return tsm2l_params(p, kernel.dtype, hw)
    return tsm2r_params(p, kernel.dtype, kernel.layout_a, hw)


def notes(kernel: Kernel, plan: Tsm2Plan, hw: Hardware) -> tuple[str, ...]:
    p = kernel.problems[0]
    bound = "memory-bound" if p.n <= plan.t2_threshold else "compute-bound"
    return (f"{plan.family.value}: n = {p.n} vs t2 threshold {plan.t2_threshold:.1f}: {bound}; Little's law needs "
            f"{bytes_needed_in_flight(hw) / 1024:.1f} KiB in flight per SM",)


def worklist(kernel: Kernel, plan: Tsm2Plan, hw: Hardware) -> WorkList:
    """No tiles: blocks map to rows by arithmetic (grid.y = passes over n for TSM2R)."""
    rows = problem_rows(kernel)
    p = kernel.problems[0]
    if plan.family is Family.TSM2L:
        grid = (max(1, ceil_div(ceil_div(p.m, plan.tcf), plan.t1)), 1, 1)
    elif kernel.layout_a is Layout.COL:  # a lane owns rows_per_warp consecutive rows
        grid = (ceil_div(p.m, hw.warp_size * plan.rows_per_warp), ceil_div(p.n, plan.t2), 1)
    else:  # a warp owns rows_per_warp rows
        grid = (ceil_div(p.m, plan.kslices * plan.rows_per_warp), ceil_div(p.n, plan.t2), 1)
    return WorkList(problems=rows, tiles=(), block_offsets=(), grid=grid, block=plan.t1, smem_bytes=plan.smem)

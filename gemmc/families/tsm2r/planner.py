"""The TSM2R planner (paper 002 §3.1): a large A (m x k) times a tall-skinny B (k x n, n small), near memory
bandwidth. The streaming model it shares with TSM2L is gemmc/families/streaming.py; the pipeline runs it through the
family's planning steps (families/tsm2r/steps.py), and what the first call times against it is in tuning.py."""

from __future__ import annotations

import math
from dataclasses import replace

from gemmc.families.base import GridTile
from gemmc.families.streaming import (
    bytes_needed_in_flight,
    choose_t2,
    half_goes_to_tma,
    resident_threads,
    t2_threshold,
)
from gemmc.families.tsm2r import calibration as cal
from gemmc.families.tsm2r.plan import Tsm2rDraft, Tsm2rPlan
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel, Problem, TileTable, WorkList
from gemmc.ir.types import DType, Layout
from gemmc.model.tlp import Occupancy, ceil_div, occupancy
from gemmc.model.worklist import problem_rows

KSLICES = 8  # warps per row-major TSM2R block: t1 = 8 warps
T3_BATCH = 4  # column-major TSM2R: A vectors (16 bytes or less) per lane per batch: the paper's t3
COL_WARPS = 4  # warps per column-major TSM2R block (t1 = 128), in k slices of one warp or of MMA_ROW_GROUPS
ACC_REGS = 64  # registers a lane may spend on C accumulators, so that 4+ blocks of 128 threads stay resident
REGS_OVERHEAD = 40  # registers beyond the model's arrays: indices, pointers, predicates, copy addresses (ptxas, sm_90)

# Measured thresholds, crossovers and shapes: calibration.py holds each one's GPU, the reason it holds and the
# results files that show it.
# Row-major A on sm_90's f64 tensor cores: k values of each row per batch, the width from which the tuning step
# also times shapes that share B (ROW_MMA_GROUPS warps per k slice) or halve the rows per warp (ROW_ALT_GROUPS),
# the clusters it times the other row counts at, the register floor, and the widths from which f64 takes the
# tensor cores (sm_90, sm_80).
ROW_T3_BATCH = cal.ROW_T3_BATCH.value
ROW_WIDE_MIN_N = cal.ROW_WIDE_MIN_N.value
ROW_MMA_GROUPS = cal.ROW_MMA_GROUPS.value
ROW_ALT_GROUPS = cal.ROW_ALT_GROUPS.value
ROW_ALT_MAX_CLUSTER = cal.ROW_ALT_MAX_CLUSTER.value
ROW_MMA_REGS = cal.ROW_MMA_REGS.value
ROW_MMA_MIN_N = cal.ROW_MMA_MIN_N.value
ROW_MMA_MIN_N_SM80 = cal.ROW_MMA_MIN_N_SM80.value
# Row-major A on the CUDA cores: the row kernel up to ROW_KERNEL_MAX_N columns, past it the column kernel with
# ROW_FMA_PIECE bytes of ROW_FMA_ROWS rows per lane per batch.
ROW_KERNEL_MAX_N = cal.ROW_KERNEL_MAX_N.value
ROW_FMA_ROWS = cal.ROW_FMA_ROWS.value
ROW_FMA_PIECE = cal.ROW_FMA_PIECE.value
# Each warp's ring: STAGES batches, deeper (up to MAX_STAGES) only where Little's law needs it (`ring_stages`).
STAGES = cal.STAGES.value
MAX_STAGES = cal.MAX_STAGES.value
# Clusters: the share of block slots they fill where the target has no measured table, and the largest size.
CLUSTER_FILL = cal.CLUSTER_FILL.value
MAX_CLUSTER = cal.MAX_CLUSTER.value
# f64 on the tensor cores: from MMA_MIN_N columns (column-major A), MMA_ACC_REGS accumulator registers, B's batch at
# most MAX_B_SHARE of A's, and (column-major A) k slices of MMA_ROW_GROUPS warps that share B.
MMA_MIN_N = cal.MMA_MIN_N.value
MMA_ACC_REGS = cal.MMA_ACC_REGS.value
MAX_B_SHARE = cal.MAX_B_SHARE.value
MMA_ROW_GROUPS = cal.MMA_ROW_GROUPS.value
# algorithm auto: the shapes that go to TSM2R (one GEMM, f32/f64, m and k at least AUTO_TSM2R_MIN_MK), by the
# crossover in n against the SIMT family for each kernel form.
AUTO_TSM2R_MIN_MK = cal.AUTO_TSM2R_MIN_MK.value
AUTO_TSM2R_MAX_N = cal.AUTO_TSM2R_MAX_N.value
AUTO_TSM2R_MAX_N_ROW_A = cal.AUTO_TSM2R_MAX_N_ROW_A.value
AUTO_TSM2R_MAX_N_ROW_FMA = cal.AUTO_TSM2R_MAX_N_ROW_FMA.value
AUTO_TSM2R_MAX_N_F64_MMA = cal.AUTO_TSM2R_MAX_N_F64_MMA.value


def column_rows_per_lane(t2: int, dtype: DType, acc_regs: int = ACC_REGS) -> int:
    """Column-major TSM2R: the widest vector of rows per lane (up to 16 bytes: a warp then reads 512 contiguous
    bytes of a column, full DRAM bursts) whose accumulators (rows x t2) fit in `acc_regs` registers."""
    w = dtype.nbytes // 4 or 1
    rows = 16 // dtype.nbytes
    while rows > 1 and rows * t2 * w > acc_regs:
        rows //= 2
    return rows


def ring_stages(hw: Hardware, warps_per_sm: int, batch_bytes: int) -> int:
    """Batches in each warp's ring: enough that the SM's resident warps keep Little's law's bytes in flight
    (STAGES - 1 batches each), at least STAGES. 16 warps of 2 KB batches need 2 stages; 8 warps (the f64 tensor
    cores at n = 32, 2 blocks per SM) need 3. Measured there
    (bench/results/tallskinny/2026-11-22_h100_tsm2r-wide_call1.json,
    2 stages not timed for that shape): 3 and 4 stages within 1-5% of each other, 6 stages up to 17% slower
    (..._tsm2r-n32_call1.json); where 12+ warps are resident, 2 stages stayed within 1% of the best depth."""
    in_flight = max(1, warps_per_sm) * batch_bytes
    return min(MAX_STAGES, max(STAGES, 1 + math.ceil(bytes_needed_in_flight(hw) / in_flight)))


def column_smem(kw: int, t2: int, t3: int, stages: int, rows: int, dtype: DType, hw: Hardware, mma: int = 0,
                groups: int = 1, a_row: bool = False) -> int:
    """Column-major TSM2R shared memory: per k slice (of `groups` warps), a ring of `stages` batches (for each warp
    t3 columns x warp x rows of A, each column padded by 32 bytes for the tensor cores' fragment loads, then the
    batch's t3 x t2 values of B padded to 16 bytes), reused after the k loop for the slice's partial sums (t2 x
    groups x rows x warp; row-major A on the FMAs: the warp's rows x t3, each row padded by 16 bytes). The ring
    holds the storage type (16-bit storage is copied as it is, and widened as the FMAs read it), the sums the
    computed type (dtype.widened); each region is a whole number of 16-byte vectors. The template computes the same
    region size."""
    elem, work = dtype.nbytes, dtype.widened.nbytes
    b_part = ceil_div(t3 * t2 * elem, 16) * 16 // elem
    column = hw.warp_size * rows + (32 // elem if mma else 0)
    a_part = hw.warp_size * rows * (t3 + 16 // elem) if a_row and not mma else t3 * column
    region = max(stages * (groups * a_part + b_part) * elem, t2 * groups * rows * hw.warp_size * work)
    return kw * ceil_div(region, 16) * 16


def column_regs(t2: int, t3: int, rows: int, dtype: DType) -> int:
    """Registers per thread: the accumulators, one batch of A read back from shared memory, one column of B, and
    about REGS_OVERHEAD for indices, pointers and predicates (calibrated against ptxas, sm_90). The loads in flight
    live in shared memory, not in registers (16-bit storage: widened to f32 registers)."""
    w = dtype.widened.nbytes // 4 or 1
    return w * (rows * t2 + t3 * rows + t3) + REGS_OVERHEAD


def f64_mma_rows(hw: Hardware, dtype: DType, t2: int, a_layout: Layout) -> int:
    """f64 TSM2R with more than MMA_MIN_N columns (row-major A: more than ROW_MMA_MIN_N on sm_90, which is every n,
    and ROW_MMA_MIN_N_SM80 on sm_80) runs its FMAs on the f64 tensor cores where they are full-rate parts of the
    machine (the data-center GPUs: f64 at least a quarter of the f32 rate, sm_80 and sm_90): rows of the mma.sync
    fragment, 16 (m16n8k4, sm_90) or 8 (m8n8k4, sm_80); 0: FMAs on the CUDA cores. On the H100 the stream at n = 32
    needs 2 x 32 x 2.95e12 / 8 = 24 TFLOP/s: 70% of the CUDA cores' f64 peak (34 TFLOP/s) and every issue slot
    around it (20% of the roof measured), 36% of the tensor cores' (67)."""
    row_min_n = ROW_MMA_MIN_N if hw.compute_capability >= 90 else ROW_MMA_MIN_N_SM80
    min_n = row_min_n if a_layout is Layout.ROW else MMA_MIN_N
    if dtype is not DType.F64 or t2 <= min_n or not hw.has_tensor_cores or 4 * hw.fp64_flops < hw.fp32_flops:
        return 0
    return 16 if hw.compute_capability >= 90 else 8


def mma_pass_columns(t2: int, dtype: DType) -> int:
    """Columns per pass on the f64 tensor cores: the widest (halving t2) whose batch of B (t3 x t2 values, read by
    every warp from L2) is at most MAX_B_SHARE of its batch of A (t3 x rows, rows = warp x rows per lane, bounded by
    MMA_ACC_REGS). With 64 rows per warp every t2 <= 32 passes: n = 32 runs in one pass (B half of A). Passes of a
    row tile are neighbours in the grid, so all but the first read A from L2 when they do split."""
    while t2 > 8 and t2 > MAX_B_SHARE * 32 * column_rows_per_lane(t2, dtype, MMA_ACC_REGS):
        t2 = (t2 + 1) // 2
    return t2


def cluster_sizes(k: int, kw: int, t3: int) -> list[int]:
    """Blocks a cluster may have: at most MAX_CLUSTER, and no more than gives each of their warps a batch of t3
    columns of k."""
    return list(range(1, min(MAX_CLUSTER, max(1, ceil_div(k, kw * t3))) + 1))


def cluster_fill(hw: Hardware, size: int, blocks_per_sm: int) -> float:
    """Share of the resident-block slots a launch with clusters of `size` blocks can use: the target's measured
    table (`Hardware.cluster_fill`), else CLUSTER_FILL."""
    share = hw.cluster_share(blocks_per_sm, size)
    return CLUSTER_FILL if share is None else share


def cluster_bandwidth(hw: Hardware, size: int, row_blocks: int, blocks_per_sm: int, kw: int,
                      bytes_per_warp: int) -> float:
    """`streaming_bandwidth` of the launch whose row tiles are split over clusters of `size` blocks."""
    return streaming_bandwidth(hw, row_blocks * size, blocks_per_sm, kw, bytes_per_warp,
                               cluster_fill(hw, size, blocks_per_sm))


def choose_cluster(hw: Hardware, k: int, kw: int, t3: int, row_blocks: int, blocks_per_sm: int,
                   bytes_per_warp: int, groups: int = 1) -> tuple[int, float]:
    """Blocks of a cluster that split k, and the bandwidth the model predicts with them: the smallest size (fewer
    reductions) within 1% of the best prediction of `streaming_bandwidth`, at most MAX_CLUSTER and no more than
    gives each warp one batch. A cluster's blocks must share one GPC, so clusters get `cluster_fill` of the
    resident-block slots. 1 where the target has no clusters. The H100 runs reward resident warps, not deeper
    rings: at m = 8192, f32 n = 16, 4, 5 and 8 blocks (256, 320, 512 blocks for 528 slots) took 140, 115 and
    140 us (8: a second wave)."""
    if not hw.has_clusters:
        return 1, streaming_bandwidth(hw, row_blocks, blocks_per_sm, kw * groups, bytes_per_warp)
    sizes = cluster_sizes(k, kw, t3)
    predicted = {s: cluster_bandwidth(hw, s, row_blocks, blocks_per_sm, kw * groups, bytes_per_warp) for s in sizes}
    # One wave where it comes within 10% of the best: the model's waves are too kind to a launch's tail (f64
    # m = 8192, n = 16: 3 blocks per cluster, one wave, 234 us; 8, two waves, 261 us; the model prefers 8).
    one_wave = [s for s in sizes if row_blocks * s <= cluster_fill(hw, s, blocks_per_sm) * blocks_per_sm * hw.sm_count]
    if one_wave and max(predicted[s] for s in one_wave) >= 0.9 * max(predicted.values()):
        sizes = one_wave
    best = max(predicted[s] for s in sizes)
    size = min(s for s in sizes if predicted[s] >= 0.99 * best)
    return size, predicted[size]


def streaming_bandwidth(hw: Hardware, blocks: int, blocks_per_sm: int, warps_per_block: int,
                        bytes_per_warp: int, fill: float = 1.0) -> float:
    """Little's law over the launch: each wave of resident blocks keeps warps x bytes_per_warp in flight per SM
    and streams at bandwidth x min(1, in flight / needed), and at most its busy SMs' share of the bandwidth (an SM
    streams about its share and no more: f64 n = 32 at m = k = 8192 on 64 of the 132 SMs took 436 us against 185
    on all, bench/results/tallskinny/2026-11-23_h100_tsm2r-groups-run3.json); every block moves the same bytes, so the
    launch's bandwidth is blocks over the sum of the waves' times (a partial last wave streams slower)."""
    need = bytes_needed_in_flight(hw)
    slots = max(1, int(fill * blocks_per_sm * hw.sm_count))

    def rate(resident_blocks: int) -> float:
        inflight = resident_blocks / hw.sm_count * warps_per_block * bytes_per_warp
        busy = min(1.0, resident_blocks / hw.sm_count)
        return hw.mem_bandwidth * min(1.0, inflight / need, busy)

    waves, tail = divmod(blocks, slots)
    time = waves * slots / rate(slots) + (tail / rate(tail) if tail else 0.0)
    return blocks / time if time else hw.mem_bandwidth


def column_row_blocks(p: Problem, t2: int, rows_per_lane: int, hw: Hardware, groups: int = 1) -> int:
    """Column-major TSM2R: row tiles (`groups` warps of lanes x rows per lane) times passes over n, before
    clusters."""
    return ceil_div(p.m, groups * hw.warp_size * rows_per_lane) * ceil_div(p.n, t2)


def column_bytes_in_flight(t3: int, stages: int, rows_per_lane: int, elem_bytes: int, hw: Hardware) -> int:
    """Column-major TSM2R: bytes of A one warp has in flight, STAGES - 1 batches of t3 columns."""
    return (stages - 1) * t3 * hw.warp_size * rows_per_lane * elem_bytes


def column_kernel(kernel: Kernel, plan: Tsm2rPlan) -> bool:
    """TSM2R's column kernel runs column-major A, and row-major A where the plan copies its batches by rows (the f64
    tensor cores); the row kernel the rest of row-major A."""
    return kernel.layout_a is Layout.COL or plan.a_by_rows


def default_row_groups(mma: int, a_layout: Layout) -> int:
    """Warps per k slice of the column kernel: MMA_ROW_GROUPS for column-major A on sm_90's f64 tensor cores, else
    1 (row-major A: see ROW_WIDE_MIN_N)."""
    return MMA_ROW_GROUPS if mma == 16 and a_layout is Layout.COL else 1


def column_shape(p: Problem, t2: int, dtype: DType, a_layout: Layout, mma: int, by_rows: bool,
                 hw: Hardware) -> tuple[int, int, int]:
    """The column kernel's rows per lane, batch length t3, and how many of a batch's k values a lane holds at once,
    by the kernel's form: row-major A on the FMAs (ROW_FMA_ROWS rows, ROW_FMA_PIECE bytes of each, one 16-byte
    vector of each row at a time), row-major A on sm_90's tensor cores (ROW_T3_BATCH k of each row; below
    ROW_WIDE_MIN_N columns 1 row per lane where 2 would give fewer row tiles than SMs), else one 16-byte vector of
    a column per lane (fewer rows where the accumulators would not fit) and T3_BATCH columns. On the tensor cores
    a warp reads A's fragments one k step of 4 at a time, whatever the batch's length."""
    if by_rows and not mma:
        return ROW_FMA_ROWS, ROW_FMA_PIECE // dtype.nbytes, 16 // dtype.nbytes
    rows = column_rows_per_lane(t2, dtype, MMA_ACC_REGS if mma else ACC_REGS)
    if a_layout is Layout.ROW and mma == 16:
        if t2 < ROW_WIDE_MIN_N and column_row_blocks(p, t2, rows, hw) < hw.sm_count:
            rows = 1
        return rows, ROW_T3_BATCH, T3_BATCH
    # (sm_80's m8n8k4 fragments spill 160 bytes with batches of 16 under ptxas: they keep 4, untimed)
    return rows, T3_BATCH, T3_BATCH


def tsm2r_params(p: Problem, dtype: DType, a_layout: Layout, hw: Hardware, groups: int | None = None,
                 by_rows: bool | None = None, rows: int | None = None) -> Tsm2rPlan:
    """TSM2R's plan, the family's planning steps in one call; `groups` (warps per k slice of the column kernel),
    `by_rows` (row-major A in the column kernel, its batches copied by rows) and `rows` (the column kernel's rows
    per lane) override the defaults."""
    staged = tsm2r_staging(tsm2r_shape(p, dtype, a_layout, hw, groups, by_rows, rows), dtype, a_layout, hw)
    return tsm2r_plan(tsm2r_cluster(staged, p, hw) if staged.column else staged, p, hw)


def tsm2r_shape(p: Problem, dtype: DType, a_layout: Layout, hw: Hardware, groups: int | None = None,
                by_rows: bool | None = None, rows: int | None = None) -> Tsm2rDraft:
    """The kernel's form and shape: t2 by the t2 threshold (paper 002 §3.1.8, choose_t2), the f64 tensor cores where
    they pay (f64_mma_rows), then the column kernel's rows per lane, batch t3 and k slices (column_shape) or the row
    kernel's rows per warp, and the registers they take. Overrides as in tsm2r_params."""
    threshold = t2_threshold(hw, dtype)
    t2 = choose_t2(p.n, threshold)
    w = dtype.widened.nbytes // 4 or 1
    mma = f64_mma_rows(hw, dtype, t2, a_layout)
    # (HIP keeps the row kernel: its 64-lane warps would need 245 KiB for these batches, gfx90a has 64)
    if by_rows is None:
        by_rows = a_layout is Layout.ROW and (mma > 0 or (t2 > ROW_KERNEL_MAX_N and hw.vendor == "cuda"))
    if a_layout is Layout.COL or by_rows:  # the column kernel (row-major A: batches copied by rows)
        if mma:
            t2 = mma_pass_columns(t2, dtype)
        rows_per_warp, t3, held = column_shape(p, t2, dtype, a_layout, mma, by_rows, hw)
        rows_per_warp = rows or rows_per_warp
        groups = groups or default_row_groups(mma, a_layout)
        regs = column_regs(t2, held, rows_per_warp, dtype)
        if mma and a_layout is Layout.ROW:
            regs = max(regs, ROW_MMA_REGS)
        return Tsm2rDraft(column=True, t1=COL_WARPS * hw.warp_size, t2=t2, t3=t3, kslices=COL_WARPS // groups,
                          rows_per_warp=rows_per_warp, elem_bytes=dtype.nbytes, t2_threshold=threshold, regs=regs,
                          mma=mma, row_groups=groups, a_by_rows=by_rows)
    rows_per_warp = 4 if t2 <= 16 else 2
    t3 = 4 * rows_per_warp  # elements of A in flight per lane per step
    return Tsm2rDraft(column=False, t1=KSLICES * hw.warp_size, t2=t2, t3=t3, kslices=KSLICES,
                      rows_per_warp=rows_per_warp, elem_bytes=dtype.nbytes, t2_threshold=threshold,
                      regs=w * (rows_per_warp * t2 + t3 + 4) + 24)


def tsm2r_staging(shape: Tsm2rDraft, dtype: DType, a_layout: Layout, hw: Hardware) -> Tsm2rDraft:
    """Shared memory for a shape: the row kernel's partial sums; the column kernel's ring of batches per warp, as
    deep as Little's law asks (ring_stages) where that costs no resident block, else STAGES, and the blocks per SM
    it leaves."""
    if not shape.column:
        return replace(shape, smem=shape.t2 * hw.warp_size * 4 * dtype.widened.nbytes)  # B's chunk, widened
    d = shape

    def resident(stages: int) -> tuple[int, Occupancy]:  # shared memory and occupancy with a ring this deep
        smem = column_smem(d.kslices, d.t2, d.t3, stages, d.rows_per_warp, dtype, hw, d.mma, d.row_groups,
                           a_layout is Layout.ROW)
        return smem, occupancy(hw, d.t1, d.regs, smem)

    smem, occ = resident(STAGES)
    stages = ring_stages(hw, occ.warps_per_sm, column_bytes_in_flight(d.t3, 2, d.rows_per_warp, dtype.nbytes, hw))
    if stages > STAGES and resident(stages)[1].blocks_per_sm == occ.blocks_per_sm:
        smem, occ = resident(stages)
    else:
        stages = STAGES  # a deeper ring that costs resident blocks is no gain
    return replace(d, stages=stages, smem=smem, blocks_per_sm=max(1, occ.blocks_per_sm))


def tsm2r_cluster(staged: Tsm2rDraft, p: Problem, hw: Hardware) -> Tsm2rDraft:
    """The column kernel's cluster, the blocks that split each row tile's k, and the bandwidth the model predicts
    with it (choose_cluster; 1 where the target has no clusters)."""
    d = staged
    cluster, predicted = choose_cluster(hw, p.k, d.kslices, d.t3, column_row_blocks(p, d.t2, d.rows_per_warp, hw,
                                                                                    d.row_groups),
                                        d.blocks_per_sm, column_bytes_in_flight(d.t3, d.stages, d.rows_per_warp,
                                                                                d.elem_bytes, hw), d.row_groups)
    return replace(d, cluster=cluster, predicted_bandwidth=predicted)


def tsm2r_plan(draft: Tsm2rDraft, p: Problem, hw: Hardware) -> Tsm2rPlan:
    """The plan of a finished draft. The column kernel counts on its blocks per SM and asks the compiler for them
    (CUDA's __launch_bounds__; HIP's second argument means something else); the row kernel's bandwidth is Little's
    law over its resident threads."""
    d = draft
    if d.column:
        return Tsm2rPlan(t1=d.t1, t2=d.t2, t3=d.t3, kslices=d.kslices, rows_per_warp=d.rows_per_warp,
                         elem_bytes=d.elem_bytes, t2_threshold=d.t2_threshold,
                         predicted_bandwidth=d.predicted_bandwidth, smem=d.smem, regs=d.regs, cluster=d.cluster,
                         stages=d.stages, min_blocks=d.blocks_per_sm if hw.vendor == "cuda" else 0, mma=d.mma,
                         row_groups=d.row_groups, a_by_rows=d.a_by_rows)
    threads = ceil_div(p.m, d.kslices * d.rows_per_warp) * d.t1 * ceil_div(p.n, d.t2)
    inflight = resident_threads(hw, threads, d.regs, d.smem, d.t1) * d.t3 * d.elem_bytes
    predicted = hw.mem_bandwidth * min(1.0, inflight / bytes_needed_in_flight(hw))
    return Tsm2rPlan(t1=d.t1, t2=d.t2, t3=d.t3, kslices=d.kslices, rows_per_warp=d.rows_per_warp,
                     elem_bytes=d.elem_bytes, t2_threshold=d.t2_threshold, predicted_bandwidth=predicted, smem=d.smem,
                     regs=d.regs)


def claim(kernel: Kernel, hw: Hardware) -> str | None:
    """The `algorithm auto` rule for TSM2R, with its reason (the target decides which TSM2R kernel row-major A
    gets); None: not this family's shape, or the schedule fixed a tile or thread count."""
    if kernel.tile is not None or kernel.threads is not None:
        return None
    if kernel.count is not None or len(kernel.problems) != 1 or half_goes_to_tma(kernel, hw):
        return None
    p = kernel.problems[0]
    row_a = kernel.layout_a is Layout.ROW and not f64_mma_rows(hw, kernel.dtype, p.n, Layout.ROW)  # CUDA cores
    mma = f64_mma_rows(hw, kernel.dtype, p.n, kernel.layout_a) == 16  # sm_90's f64 tensor cores
    row_max = (AUTO_TSM2R_MAX_N_ROW_FMA if kernel.dtype.widened is DType.F32 and hw.vendor == "cuda"
               else AUTO_TSM2R_MAX_N_ROW_A)
    max_n = AUTO_TSM2R_MAX_N_F64_MMA if mma else row_max if row_a else AUTO_TSM2R_MAX_N
    if p.n <= max_n and p.m >= AUTO_TSM2R_MIN_MK and p.k >= AUTO_TSM2R_MIN_MK:
        kind = " (row-major A)" if row_a else " (f64 tensor cores)" if mma else ""
        bound = "memory-bound" if p.n <= t2_threshold(hw, kernel.dtype) else "past the t2 threshold"
        return (f"n = {p.n} <= {max_n}{kind} with m, k >= {AUTO_TSM2R_MIN_MK}: tall-and-skinny B, "
                f"{bound} (TSM2R)")
    return None


def worklist(kernel: Kernel, plan: Tsm2rPlan, hw: Hardware) -> WorkList:
    """No tiles: blocks map to rows by arithmetic (grid.y = passes over n for TSM2R)."""
    rows = problem_rows(kernel)
    p = kernel.problems[0]
    if column_kernel(kernel, plan):  # a lane owns rows_per_warp consecutive rows; a cluster splits k; the
        # passes over n of a row tile are neighbours in x, so that they share A in L2
        grid = (column_row_blocks(p, plan.t2, plan.rows_per_warp, hw, plan.row_groups) * plan.cluster, 1, 1)
    else:  # a warp owns rows_per_warp rows
        grid = (ceil_div(p.m, plan.kslices * plan.rows_per_warp), ceil_div(p.n, plan.t2), 1)
    return WorkList(problems=rows, tiles=TileTable(), block_offsets=(), grid=grid, block=plan.t1, smem_bytes=plan.smem)


def grid_tile(kernel: Kernel, plan: Tsm2rPlan, hw: Hardware) -> GridTile:
    """The rows and columns of C one grid tile covers, and the blocks of a cluster that share it: the column
    kernel's row tile (warps of a k slice x lanes x rows per lane) by a pass of t2 columns; the row kernel's rows
    (warps x rows per warp) by a pass (`worklist` lays the grid out over them)."""
    if column_kernel(kernel, plan):
        return GridTile(plan.row_groups * hw.warp_size * plan.rows_per_warp, plan.t2, plan.cluster)
    return GridTile(plan.kslices * plan.rows_per_warp, plan.t2)

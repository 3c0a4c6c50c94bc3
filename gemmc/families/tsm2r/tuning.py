"""What `gemmc inspect` says about a TSM2R plan and what the first call on a GPU times against it: the cluster sizes
and kernel shapes the model cannot rank (paper 002 §4's parameter search, done by measurement)."""

from __future__ import annotations

from dataclasses import replace

from gemmc.families.streaming import bytes_needed_in_flight
from gemmc.families.tsm2r.plan import Tsm2rPlan
from gemmc.families.tsm2r.planner import (
    MAX_CLUSTER,
    ROW_ALT_GROUPS,
    ROW_ALT_MAX_CLUSTER,
    ROW_MMA_GROUPS,
    ROW_WIDE_MIN_N,
    cluster_bandwidth,
    cluster_sizes,
    column_bytes_in_flight,
    column_kernel,
    column_row_blocks,
    tsm2r_params,
    worklist,
)
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel
from gemmc.ir.types import Layout
from gemmc.model.tlp import occupancy


def notes(kernel: Kernel, plan: Tsm2rPlan, hw: Hardware) -> tuple[str, ...]:
    p = kernel.problems[0]
    bound = "memory-bound" if p.n <= plan.t2_threshold else "compute-bound"
    lines: tuple[str, ...] = (f"tsm2r: n = {p.n} vs t2 threshold {plan.t2_threshold:.1f}: {bound}; "
                              f"Little's law needs {bytes_needed_in_flight(hw) / 1024:.1f} KiB in flight per SM",)
    row_kernel, shapes = tuning_shapes(kernel, plan, hw)
    if row_kernel:
        lines += (f"tsm2r: the first call on a GPU times the column kernel with A copied by rows (clusters of "
                  f"{_span(shapes[0][2])} blocks) against this row kernel and keeps the fastest (GEMMC_TUNE=0 keeps "
                  "this one)",)
    elif sum(len(sizes) for _, _, sizes in shapes) > 1:
        timed = ", and of ".join(f"{_span(sizes)}{' with ' + shape if shape else ' blocks'}"
                                 for _, shape, sizes in shapes)
        lines += (f"tsm2r: the first call on a GPU times clusters of {timed}{',' if len(shapes) > 1 else ''} and "
                  f"keeps the fastest (the model's choice: {plan.cluster}; GEMMC_TUNE=0 keeps it)",)
    return lines


def _span(sizes: list[int]) -> str:
    """Cluster sizes as a reader wants them: "1-7", or "1, 3" where they are not a run."""
    ordered = sorted(sizes)
    if len(ordered) > 1 and ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"{ordered[0]}-{ordered[-1]}"
    return ", ".join(map(str, ordered))


def tuning_shapes(kernel: Kernel, plan: Tsm2rPlan, hw: Hardware) -> tuple[bool, list[tuple[Tsm2rPlan, str, list[int]]]]:
    """What the tuning step times (`alternatives`) and `notes` reports: whether the plan is the row kernel, timed
    as it is, and the column-kernel shapes timed, each (plan, what differs from the model's plan, cluster sizes),
    the model's own shape and cluster first. Nothing where the target has no clusters."""
    if not hw.has_clusters:
        return False, []
    p = kernel.problems[0]
    if not column_kernel(kernel, plan):  # the row kernel: the model's choice, then the column kernel by rows
        if kernel.layout_a is not Layout.ROW or plan.mma or hw.vendor != "cuda":
            return False, []
        by_rows = tsm2r_params(p, kernel.dtype, kernel.layout_a, hw, by_rows=True)
        return True, [(by_rows, "A copied by rows", cluster_sizes(p.k, by_rows.kslices, by_rows.t3))]
    def shape(label: str, max_cluster: int = MAX_CLUSTER, **changes) -> tuple[Tsm2rPlan, str, list[int]]:
        other = tsm2r_params(p, kernel.dtype, kernel.layout_a, hw, **changes)
        return other, label, [s for s in cluster_sizes(p.k, other.kslices, other.t3) if s <= max_cluster]

    shapes = [(plan, "", [plan.cluster, *(s for s in cluster_sizes(p.k, plan.kslices, plan.t3) if s != plan.cluster)])]
    if plan.mma == 16 and kernel.layout_a is Layout.ROW and plan.t2 >= ROW_WIDE_MIN_N:
        shapes.append(shape(f"one slice of {ROW_MMA_GROUPS} warps", groups=ROW_MMA_GROUPS))
        shapes.append(shape(f"{hw.warp_size} rows per warp in {ROW_ALT_GROUPS}-warp slices", ROW_ALT_MAX_CLUSTER,
                            groups=ROW_ALT_GROUPS, rows=1))
    elif plan.mma == 16 and kernel.layout_a is Layout.ROW:
        rows = 1 if plan.rows_per_warp == 2 else 2
        shapes.append(shape(f"{rows * hw.warp_size} rows per warp", ROW_ALT_MAX_CLUSTER, rows=rows))
    elif plan.row_groups > 1:
        shapes.append(shape("1-warp slices", groups=1))
    return False, shapes


def alternatives(kernel: Kernel, hw: Hardware) -> tuple[tuple[str, Kernel], ...]:
    """Planned kernels the runtime may time against the model's choice on the device, and keep the fastest of
    (paper 002 §4's parameter search, done by measurement where the model cannot tell): column-major TSM2R on
    targets with clusters, every cluster size that gives each warp a batch, the model's first. Measured at m = k
    = 16384 the cluster sizes differ by up to 1.6x in an order no occupancy or Little's-law term follows (f32
    n = 16: 1, 2, 3, 4, 5, 6, 7 blocks took 698, 434, 427, 516, 462, 433, 387 us; f64 n = 16: 834, 713, -, 846,
    745, 786, 747; bench/results/tallskinny/2026-11-22_h100_tsm2r-wide_call1.json). Where the k slices have
    MMA_ROW_GROUPS
    warps, every cluster size with slices of one warp too: at m = k = 8192, f64 n = 32, those took 186 us at
    their best cluster and the grouped slices 204-247 (bench/results/tallskinny/2026-11-23_h100_tsm2r-groups-run3.json).
    Row-major A on sm_90's f64 tensor cores: below
    ROW_WIDE_MIN_N columns the other of 32 and 64 rows per warp, from it one slice of ROW_MMA_GROUPS warps at every
    cluster size and 32 rows per warp in slices of ROW_ALT_GROUPS warps, the extra shapes in clusters up to
    ROW_ALT_MAX_CLUSTER where not every size. Where the plan is the
    row kernel (row-major A, n = 1 on CUDA), the column kernel with A copied by rows at every cluster size: at m = k
    = 8192 f32 it took 102-104 us at n = 2-3 where the row kernel took 123, at 16384-30720 the row kernel was 7-9%
    ahead at n = 1 (bench/results/tallskinny/2026-11-23_h100_tallskinny-tsm2r-f32-rowmajor-n2.json). The shapes are
    `tuning_shapes`'. Empty: nothing to time."""
    plan = kernel.plan
    if not isinstance(plan, Tsm2rPlan):
        return ()
    row_kernel, shapes = tuning_shapes(kernel, plan, hw)
    p = kernel.problems[0]
    out = [("row kernel (model)", replace(kernel, work=worklist(kernel, plan, hw)))] if row_kernel else []
    for base, shape, sizes in shapes:
        row_blocks = column_row_blocks(p, base.t2, base.rows_per_warp, hw, base.row_groups)
        in_flight = column_bytes_in_flight(base.t3, base.stages, base.rows_per_warp, base.elem_bytes, hw)
        blocks_per_sm = max(1, occupancy(hw, base.t1, base.regs, base.smem).blocks_per_sm)
        for size in sizes:
            variant = replace(base, cluster=size, predicted_bandwidth=cluster_bandwidth(
                hw, size, row_blocks, blocks_per_sm, base.kslices * base.row_groups, in_flight))
            planned = replace(kernel, plan=variant)
            label = (f"cluster {size}" + (" (model)" if base is plan and size == plan.cluster else "")
                     + (f", {shape}" if shape else ""))
            out.append((label, replace(planned, work=worklist(planned, variant, hw))))
    return tuple(out)

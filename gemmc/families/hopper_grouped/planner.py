"""The hopper_grouped planner: `grouped M` and `grouped K` of bf16/f16 storage on sm_90's TMA + wgmma loop.

The tile N comes from the hopper family's waves model (families/tma_loop.py: choose_tile_n) at the declared
rows (`rows` in the schedule) or, where none are declared, NOMINAL_ROWS; N in TILE_N, whose halves are whole 64-column
boxes of N-major B, since a 64-row tile splits its columns between the two consumer warpgroups. The ring takes what
shared memory is left beside the C sub-tiles and the scheduler's arrays.
"""

from __future__ import annotations

import dataclasses

from gemmc.errors import Diagnostic, GemmcError
from gemmc.families.hopper_grouped import calibration as cal
from gemmc.families.hopper_grouped.plan import SMALL_BM, HopperGroupedPlan
from gemmc.families.tma_loop import BM, MAX_STAGES, choose_tile_n
from gemmc.ir.dynamic import Grouping
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel, ProblemTable, TileTable, WorkList
from gemmc.ir.types import Layout
from gemmc.model.tlp import ceil_div

TILE_N = (256, 128)  # halves 128 and 64: whole 64-column boxes, and wgmma N of a 64-row tile
NOMINAL_ROWS = 16384  # rows the tile model assumes where the schedule declares none (an MoE step's routed tokens)
MAX_GROUPS = 1024  # the scheduler's 12 bytes a group come out of the ring's shared memory
CLUSTER_MIN_K = cal.CLUSTER_MIN_K.value  # clusters of 2 from this depth (calibration.py)
TAIL_SPLIT = cal.TAIL_SPLIT.value  # without clusters, a last round of at most half the blocks' units in halves
LIST_TILE_N = cal.LIST_TILE_N.value  # grouped list without a tile line (calibration.py)


def plan(kernel: Kernel, hw: Hardware) -> HopperGroupedPlan:
    dyn = kernel.dynamic
    assert dyn is not None
    grouped_k = dyn.grouping is Grouping.K
    listed = dyn.grouping is Grouping.LIST
    # grouped K: every group has the same M x N tiles, so the model sees the bound's groups of M rows
    rows = dyn.max_groups * ceil_div(dyn.m, BM) * BM if grouped_k else \
        dyn.max_rows if dyn.rows_declared else NOMINAL_ROWS
    bn = LIST_TILE_N if listed else choose_tile_n(rows, dyn.n, hw, 1, TILE_N)
    if kernel.tile is not None:
        t = kernel.tile
        if (t.m, t.k) != (128, 64) or t.n not in TILE_N:
            raise GemmcError(Diagnostic("E202", f"the hopper_grouped family's tiles are 128 x N x 64 with N in "
                                        f"{', '.join(map(str, TILE_N))}; not {t}", kernel.where("tile"),
                                        "write `tile auto`, or e.g. `tile 128x256x64`"))
        bn = t.n
    one = HopperGroupedPlan(bn=bn, stages=1, b_kmajor=kernel.layout_b is Layout.COL, compute=kernel.dtype.value,
                            c_bytes=kernel.c_dtype.nbytes, max_groups=dyn.max_groups,
                            cluster=2 if not (grouped_k or listed) and dyn.k >= CLUSTER_MIN_K else 1,
                            grouped_k=grouped_k, grouped_list=listed)
    fixed = one.smem_bytes - one.stage_bytes - one.barrier_bytes
    stages = min(MAX_STAGES, (hw.smem_per_block - fixed) // (one.stage_bytes + 16))
    if kernel.stages_written:  # `pipeline stages N`: the schedule's depth, up to what the ring holds
        if kernel.stages > max(stages, 2):
            raise GemmcError(Diagnostic("E201", f"the hopper_grouped family's ring holds at most {stages} stages of "
                                        f"{one.stage_bytes} B here (at most {MAX_STAGES}, and as many as fit "
                                        f"{hw.smem_per_block} B of shared memory beside the C sub-tiles and the "
                                        f"scheduler), not {kernel.stages}", kernel.where("pipeline"),
                                        f"write `pipeline stages {stages}` or fewer, or leave the line out"))
        stages = kernel.stages
    if stages < 2:
        written = kernel.stages_written
        raise GemmcError(Diagnostic("E201", f"the TMA pipeline needs at least 2 stages, not {stages}"
                                    + ("" if written else f" (the scheduler keeps {one.sched_smem} B for "
                                                          f"{dyn.max_groups} groups)"),
                                    kernel.where("pipeline" if written else "grouped"),
                                    "write `pipeline stages 2` or more" if written
                                    else "declare fewer groups, or a narrower tile"))
    # the tail split halves a block's unit; a cluster's pair of blocks shares one unit's rows, so clusters keep theirs
    return dataclasses.replace(one, stages=stages,
                               tail_split=TAIL_SPLIT and one.cluster == 1 and not (grouped_k or listed))


def notes(kernel: Kernel, plan: HopperGroupedPlan, hw: Hardware) -> tuple[str, ...]:
    dyn = kernel.dynamic
    assert dyn is not None
    if plan.grouped_k:
        return notes_k(kernel, plan, hw)
    if plan.grouped_list:
        return notes_list(kernel, plan, hw)
    rows = f"{dyn.max_rows} declared rows" if dyn.rows_declared else f"{NOMINAL_ROWS} rows (none declared)"
    return (f"batch sized at run time: {dyn}; one persistent launch on the TMA + wgmma loop whatever the sizes, the "
            "tiles derived on the device (no host sync, no re-planning, no compile per size)",
            f"hopper_grouped: tile N {plan.bn} by the hopper family's waves model at {rows} and n {dyn.n} "
            f"(N in {', '.join(map(str, TILE_N))})",
            (f"hopper_grouped: k {dyn.k} >= {CLUSTER_MIN_K}: clusters of 2, a unit's two tile rows on a pair of blocks "
             "that multicast B where the rows share a group (the long main loop is bound by L2 reads of B)"
             if plan.cluster > 1 else
             f"hopper_grouped: k {dyn.k} < {CLUSTER_MIN_K}: no cluster (a short main loop pays more for a pair's "
             "lockstep than it saves in L2 reads of B)"),
            *(("hopper_grouped: a last round of units that fills at most half the blocks runs in column halves "
               f"(128 x {plan.bn // 2}, wgmma m64n{plan.bn // 2}), so twice as many blocks share it: the groups' "
               "partial tile rows make the unit count fall anywhere in a round",) if plan.tail_split else ()),
            f"hopper_grouped: size classes per tile row: a group's rows in 128-row tiles, its last {SMALL_BM} rows "
            f"or fewer in a {SMALL_BM}-row tile (paper 000: a 40-row group does not pay for a 128-row tile)",
            f"hopper_grouped: {plan.stages} stages of {plan.stage_bytes} B, {plan.epilogue_bytes} B of C sub-tiles "
            f"and {plan.sched_smem} B of scheduler fit {hw.smem_per_block} B of shared memory",
            "hopper_grouped: edges by TMA bounds (K and N zero-filled per group through B's 3-D map; A's rows past "
            "a group's end are loaded and never stored)")


def notes_k(kernel: Kernel, plan: HopperGroupedPlan, hw: Hardware) -> tuple[str, ...]:
    dyn = kernel.dynamic
    assert dyn is not None
    tiles = ceil_div(dyn.m, plan.bm) * ceil_div(dyn.n, plan.bn)
    return (f"batch sized at run time: {dyn}; one persistent launch on the TMA + wgmma loop whatever the sizes, the "
            "groups' k ranges derived on the device (no host sync, no re-planning, no compile per size)",
            f"hopper_grouped: tile N {plan.bn} by the hopper family's waves model at {dyn.max_groups} groups of m "
            f"{dyn.m} and n {dyn.n} (N in {', '.join(map(str, TILE_N))}): {tiles} tiles a group",
            "hopper_grouped: tiles numbered with the groups longest first; block b takes tile b, then claims the next "
            "from a counter (longest processing time first: with skewed routings a static stride leaves blocks idle "
            "for up to a long group's tile, 1.03-1.27x slower on the Zipf steps of bench/experiments/dynamic_half.py)",
            "hopper_grouped: A (X^T) and B read M- and N-major through 2-D tensor maps over the reduction's rows; a "
            "group's k-tiles start at its first row (TMA coordinates are elements, no alignment), and the k-rows of "
            "its last k-tile past its end are zeroed in shared memory before the wgmma",
            f"hopper_grouped: {plan.stages} stages of {plan.stage_bytes} B, {plan.epilogue_bytes} B of C sub-tiles "
            f"and {plan.sched_smem} B of scheduler fit {hw.smem_per_block} B of shared memory")


def notes_list(kernel: Kernel, plan: HopperGroupedPlan, hw: Hardware) -> tuple[str, ...]:
    dyn = kernel.dynamic
    assert dyn is not None
    return (f"batch sized at run time: {dyn}; two launches whatever the sizes (a planning kernel that builds every "
            "problem's tensor maps, then the persistent TMA + wgmma kernel); no host sync, no re-planning, no compile "
            "per size",
            f"hopper_grouped: tile N {plan.bn} "
            + ("(given: the tile line, or a fused group's waves model over its members)" if kernel.tile is not None
               else "(the sizes arrive with each call: no waves model)") + "; size classes per "
            f"problem: its rows in 128-row tiles, its last {SMALL_BM} rows or fewer in a {SMALL_BM}-row tile (paper "
            "000: a 40-row problem does not pay for a 128-row tile)",
            "hopper_grouped: tensor maps built on the device (tensormap.replace on template maps encoded once on the "
            "host): encoding 3 maps a problem on the host costs microseconds each, more than the call's budget",
            "hopper_grouped: tiles numbered in problem order; block b takes tile b, then claims the next from a "
            "counter (the problems' depths differ, so a static stride leaves blocks idle)",
            "hopper_grouped: edges by TMA bounds (each problem's maps clip its own M, N and K); a problem whose A or "
            "B TMA cannot read (a base or leading dimension not a multiple of 16 bytes) runs the schedule in the "
            "dynamic family (f32 products on CUDA cores, planned and compiled on the first such call), the call's "
            "others on the tensor cores",
            f"hopper_grouped: {plan.stages} stages of {plan.stage_bytes} B, {plan.epilogue_bytes} B of C sub-tiles "
            f"and {plan.sched_smem} B of scheduler fit {hw.smem_per_block} B of shared memory")


def worklist(kernel: Kernel, plan: HopperGroupedPlan, hw: Hardware) -> WorkList:
    """No tables: the kernel derives its tiles from the group ends. One block per SM, whole clusters."""
    return WorkList(problems=ProblemTable(), tiles=TileTable(), block_offsets=(), grid=(plan.grid(hw.sm_count), 1, 1),
                    block=plan.threads, smem_bytes=plan.dynamic_smem_bytes)

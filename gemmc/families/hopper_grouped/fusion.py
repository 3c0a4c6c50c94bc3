"""bf16/f16 members of a concurrent group (the hopper family's single GEMMs) as one `grouped list` launch of this
family's TMA + wgmma loop, the same main loop: one persistent grid over every member's tiles, 128- and 64-row tiles
by each member's rows, tile N by the waves model over them, the problem table filled per call from the members'
arrays (the family's `fuse`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from gemmc.families.base import Fusion, NotFused
from gemmc.families.hopper_grouped import calibration as cal
from gemmc.families.hopper_grouped.planner import LIST_TILE_N, TILE_N
from gemmc.families.tma_loop import (
    BK,
    BM,
    GROUPED_TARGET,
    TMA_ALIGN,
    choose_tile_n_for,
    grouped_list_misfit,
    grouped_on_loop_target,
)
from gemmc.ir.dynamic import DynamicBatch, Grouping
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel, TileShape, unplanned
from gemmc.ir.types import Span
from gemmc.model.tlp import ceil_div
from gemmc.model.worklist import problem_rows

FUSE_SHARE = cal.FUSE_SHARE.value  # concurrency auto fuses members that each fill at most 1/this of the SMs
MEMBERS = "hopper"  # the family whose kernels a list launch runs (one GEMM each on the same loop): `fuses`


def fuse(members: Mapping[str, Kernel], name: str, span: Span, hw: Hardware) -> Fusion | NotFused:
    """hopper members as one grouped list kernel where TMA reads their dense arrays in place: A and C row-major,
    every A and B line a 16-byte multiple, storage bf16/f16 on the loop's target. The members' own knobs (tile,
    threads, pipeline) are their kernels'; the list kernel plans its own."""
    first = next(iter(members.values()))
    dtype = first.dtype.value
    launch = unplanned(first, name=name, problems=(), count=None, span=span,
                       dynamic=DynamicBatch(Grouping.LIST, max_groups=len(members), span=span))
    if not grouped_on_loop_target(launch, hw):
        return NotFused(f"fused runs hopper members as one grouped list kernel, of bf16/f16 storage on target cuda "
                        f"{GROUPED_TARGET}; these store {dtype}", first.written("dtype", "precision"))
    misfit = grouped_list_misfit(launch)
    if misfit:  # the members agree on their layouts (concurrent.plan.fused_kernel): the first one's statement
        return NotFused(f"fused {dtype} runs a grouped list kernel: {misfit}", first.written(misfit.stmt))
    for member, k in members.items():
        lda, ldb = problem_rows(k).rows()[0][3:5]
        for letter, length in (("A", lda), ("B", ldb)):
            if length * first.dtype.nbytes % TMA_ALIGN:
                per = TMA_ALIGN // first.dtype.nbytes
                return NotFused(f"fused {dtype} reads every A and B in place through TMA; member {member}'s {letter} "
                                f"lines are {length} elements ({length * first.dtype.nbytes} bytes), not a multiple "
                                f"of {per} elements ({TMA_ALIGN} bytes): pad them to {-(-length // per) * per}",
                                k.problems_span)
    shapes = [(k.problems[0].m, k.problems[0].n, k.problems[0].k) for k in members.values()]
    bn = choose_tile_n_for(shapes, hw, TILE_N)
    launch = dataclasses.replace(launch, tile=TileShape(BM, bn, BK))
    why = (f"fused: one grouped list launch of every member (TMA + wgmma, {len(members)} problems; tile N {bn} by "
           "the waves model over the members' tiles)")
    return Fusion(launch, why)


def prefer_fused(members: Sequence[Kernel], sms: int) -> tuple[bool, str]:
    """`concurrency auto` without a cost model of the list kernel: fused where every GEMM alone fills at most
    1/FUSE_SHARE of the SMs in tiles of BM x LIST_TILE_N (calibration.py, FUSE_SHARE)."""
    widest = max(ceil_div(k.problems[0].m, BM) * ceil_div(k.problems[0].n, LIST_TILE_N) for k in members)
    tiles = f"{widest} tiles of {BM}x{LIST_TILE_N}"
    if widest * FUSE_SHARE <= sms:
        return True, (f"fused: every GEMM alone fills at most 1/{FUSE_SHARE} of the {sms} SMs (the widest has "
                      f"{tiles}, at most {sms // FUSE_SHARE}), where one grouped list launch was the fastest way")
    return False, (f"not fused: a GEMM alone fills more than 1/{FUSE_SHARE} of the {sms} SMs ({tiles}, more than "
                   f"{sms // FUSE_SHARE}), where the members' own kernels on streams were as fast or faster; the "
                   "group's first call times fused against the plan's way (runtime/group_floor.py)")

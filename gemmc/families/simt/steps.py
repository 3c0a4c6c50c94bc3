"""The SIMT family's planning steps, each a pure pass under the name of the pipeline step it implements
(gemmc/passes/planning.py): the pipeline's depth, the tiles of each problem (papers 000 and 003, costed by
simulating the launch), the k split over thread-block clusters, the target's limits, then the batching (paper 003
§4). Between them the kernel carries a SimtDraft; `finish_plan` makes it the SimtPlan. `limits` is what the steps
guarantee of that plan, for the IR verifier.
"""

from __future__ import annotations

import dataclasses

from gemmc.errors import Diagnostic, GemmcError
from gemmc.families.simt import planner
from gemmc.families.simt.plan import SimtDraft, SimtPlan
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel, planned
from gemmc.ir.types import TileMode
from gemmc.model.worklist import Sizes


def check_family(kernel: Kernel, hw: Hardware) -> Kernel:
    """Requires: a kernel that selected the SIMT family. Guarantees: `pipeline stages` is 1 (one shared buffer) or 2
    (two, with the next k-tile prefetched through registers), the template's two forms; GemmcError otherwise."""
    if kernel.stages not in (1, 2):
        raise GemmcError(Diagnostic("E202", f"the SIMT family has 1 or 2 pipeline stages, not {kernel.stages}",
                                    kernel.where("pipeline"), "deeper pipelines are the tensor-core family's"))
    return kernel


def choose_tiles(kernel: Kernel, hw: Hardware) -> Kernel:
    """Requires: a checked SIMT kernel. Guarantees: a draft whose tiling gives every problem a tile variant: the
    schedule's tile (with its kslices), else the cheapest of `tile auto`'s candidate tilings (planner.py:
    candidate_tilings: the uniform rule, paper 003 §3's coordinated tiling, paper 000 §4.2.2's Algorithm 1 driven by
    Eq. 3 and by Eq. 4, the uniform catalogue and its k-sliced forms), each with its edge tiles and launch bound and
    costed by simulating its launch (tiling.estimate); the draft keeps every costed tiling for split_k. Raises
    GemmcError (E301) for a tile its threads cannot split into micro-tiles."""
    if kernel.tile is not None:
        variant = planner.explicit_variant(kernel, hw)
        tiling = planner.plan_from(kernel, hw, planner.everyone("explicit", variant, len(kernel.problems)))
        return dataclasses.replace(kernel, draft=SimtDraft(tiling))
    sizes = Sizes.of(kernel.problems)
    scored = planner.costed(kernel, hw, sizes, planner.candidate_tilings(kernel, hw, sizes))
    return dataclasses.replace(kernel, draft=SimtDraft(planner.cheapest(scored), tuple(scored)))


def split_k(kernel: Kernel, hw: Hardware) -> Kernel:
    """Requires: a draft with a tiling. Guarantees: the tiling's k split over thread-block clusters (sm_90): the
    schedule's `ksplit`, or for a plain `tile auto` the cheapest of the costed tilings and the split forms (clusters
    of 2 to MAX_KSPLIT blocks) of the cheapest SPLIT_CANDIDATES that fill less than a wave, costed alike (planner.py:
    split_forms, which cites the measurements); the costed tilings leave the draft."""
    draft = kernel.draft_as(SimtDraft, "split_k")
    if kernel.tile is not None:
        if kernel.tile.split == 1:
            return kernel
        return dataclasses.replace(kernel, draft=SimtDraft(planner.with_split(draft.tiling, kernel.tile.split, hw)))
    if kernel.tile_mode is not TileMode.AUTO:  # `tile auto(method)` is that method's tiling, unsplit
        return dataclasses.replace(kernel, draft=SimtDraft(draft.tiling))
    costed = list(draft.costed)
    splits = planner.split_forms(kernel, hw, Sizes.of(kernel.problems), costed)
    return dataclasses.replace(kernel, draft=SimtDraft(planner.cheapest(costed + splits)))


def check_tiles(kernel: Kernel, hw: Hardware) -> Kernel:
    """Requires: the draft's final tiling. Guarantees: the target runs it: one thread count per launch on HIP (no
    named barriers), every variant within a block's shared memory, threads and registers (E300-E302, at the line
    that chose the tile), a k split within the target's clusters; GemmcError otherwise (planner.py: checked)."""
    planner.checked(kernel, kernel.draft_as(SimtDraft, "check_tiles").tiling, hw)
    return kernel


def choose_batching(kernel: Kernel, hw: Hardware) -> Kernel:
    """Requires: a checked tiling. Guarantees: its batching, the schedule's or `batching auto`'s (threshold batching
    for launches of many waves of small-K tiles: planner.py, choose_batching), with paper 003 §4's theta and the
    TLP threshold the batching works to."""
    tiling = kernel.draft_as(SimtDraft, "choose_batching").tiling
    batched = planner.batched(kernel, tiling, hw, Sizes.of(kernel.problems))
    return dataclasses.replace(kernel, draft=SimtDraft(batched, batched=True))


def finish_plan(kernel: Kernel, hw: Hardware) -> Kernel:
    """Requires: a batched draft. Guarantees: `plan` is its SimtPlan, the draft is gone, and the notes say how the
    tiles and the batching were chosen."""
    plan = kernel.draft_as(SimtDraft, "finish_plan").tiling
    return planned(kernel, plan, notes(kernel, plan, hw))


def notes(kernel: Kernel, plan: SimtPlan, hw: Hardware) -> tuple[str, ...]:
    """Why the tiles and the batching are what they are, for `gemmc inspect`."""
    if kernel.tile is not None:
        tile_note = f"tile {kernel.tile} from the schedule"
    elif kernel.tile_mode is TileMode.AUTO:
        tile_note = ("tile auto: every candidate tiling was costed by simulating its launch tile by tile; the first "
                     "call on a GPU times them and keeps the fastest (GEMMC_TUNE=0 keeps this one); edge tiles of "
                     "half height or width where half a tile covers a last row or column")
    else:
        tile_note = (f"tile auto({kernel.tile_mode.value}) from the schedule; edge tiles of half height or width "
                     "where half a tile covers a last row or column")
    return (tile_note, planner.choose_batching(kernel, plan, hw)[1])


STEPS = (
    ("check_family", check_family),
    ("choose_tiles", choose_tiles),
    ("split_k", split_k),
    ("check_tiles", check_tiles),
    ("choose_batching", choose_batching),
    ("finish_plan", finish_plan),
)


def limits(kernel: Kernel, plan: SimtPlan, hw: Hardware) -> list[str]:
    """What the steps guarantee of a SimtPlan: each variant's tile splits into one micro-tile per thread of each of
    its k slices, every problem names a variant (edge tiles too), a split k fits a portable cluster, the pipeline
    has the template's 1 or 2 stages."""
    out = []
    count = len(plan.variants)
    for i, v in enumerate(plan.variants):
        per_slice, uneven = divmod(v.threads, v.slices)
        if (uneven or v.bk % v.slices or v.bm % v.tm or v.bn % v.tn
                or (v.bm // v.tm) * (v.bn // v.tn) != per_slice):
            out.append(f"variant {i} ({v}) is not one {v.tm}x{v.tn} micro-tile per thread of each of its "
                       f"{v.slices} k slice(s)")
    if len(plan.assignment) != len(kernel.problems):
        out.append(f"the plan assigns {len(plan.assignment)} variants to {len(kernel.problems)} problems")
    if any(not 0 <= a < count for a in plan.assignment):
        out.append(f"a problem's variant is not one of the plan's {count}")
    if len(plan.edges) > count or any(not -1 <= e < count for row in plan.edges for e in row):
        out.append(f"the edge tiles name variants the plan lacks ({count} variants)")
    if not 1 <= plan.ksplit <= planner.MAX_CLUSTER_BLOCKS:
        out.append(f"k split over {plan.ksplit} blocks; a portable cluster has 1 to {planner.MAX_CLUSTER_BLOCKS}")
    if plan.stages not in (1, 2):
        out.append(f"{plan.stages} pipeline stages; the SIMT template has 1 or 2")
    return out

"""The tensor-core family's planning steps, each a pure pass under the name of the pipeline step it implements
(gemmc/passes/planning.py): the precision's split (paper 001 §3), the block tile by the thread-parallelism model
(paper 001 §4.2, Eqs. 12-17), the cp.async pipeline's depth (paper 001 §4.3). Between them the kernel carries a
TensorCoreDraft; `finish_plan` makes it the TensorCorePlan, with the pre-pass's scratch. `limits` is what the steps
guarantee of that plan, for the IR verifier.
"""

from __future__ import annotations

import dataclasses

from gemmc.errors import Diagnostic, GemmcError, InternalError
from gemmc.families.tensorcore import planner
from gemmc.families.tensorcore.plan import TensorCoreDraft, TensorCorePlan
from gemmc.families.tensorcore.split import split_plan
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel, planned

BLOCK_SIDES = (64, 128, 256)  # the block tile's rows and columns the template builds (planner.explicit_variant)
MAX_BLOCK_AREA = 128 * 256


def check_family(kernel: Kernel, hw: Hardware) -> Kernel:
    """Requires: a kernel that selected the tensor-core family. Guarantees: a `pipeline stages` line, where the
    schedule has one, asks for 2, 3 or 4 stages (the template's cp.async depths); GemmcError otherwise."""
    if kernel.stages_written and kernel.stages not in planner.STAGES:
        raise GemmcError(Diagnostic("E202", f"pipeline stages {kernel.stages}: the tensor-core family pipelines its "
                                    "cp.async copies 2, 3 or 4 stages deep", kernel.where("pipeline"),
                                    "write `pipeline stages 3`, or leave the line out to take the deepest that fits"))
    return kernel


def split_precision(kernel: Kernel, hw: Hardware) -> Kernel:
    """Requires: a normalized tensor-core precision. Guarantees: a draft with the precision's parts, products,
    scales and rounding (split.py: paper 001 §3, Eqs. 5-11, and the splits of Ootomo and Markidis; one part for a
    one-pass precision)."""
    if kernel.precision is None:
        raise InternalError("split_precision", f"kernel '{kernel.name}' has no precision (normalize sets it)")
    return dataclasses.replace(kernel, draft=TensorCoreDraft(split_plan(kernel.precision)))


def choose_tiles(kernel: Kernel, hw: Hardware) -> Kernel:
    """Requires: the draft's split. Guarantees: the block and warp tile, the schedule's (one the template builds,
    E301 otherwise) or the model's: among the catalogue tiles whose registers and shared memory fit, the highest
    compute-to-memory ratio (Eq. 15) with at least a block per SM, else the most TLP (Eq. 12) (paper 001 §4.2;
    planner.py: weigh, choose); every tile weighed stays in the draft for inspect. GemmcError where no tile fits."""
    draft = kernel.draft_as(TensorCoreDraft, "choose_tiles")
    cands = planner.weigh(kernel, hw, draft.split)
    if kernel.tile is not None:
        variant = planner.explicit_variant(kernel, hw, draft.split)
    else:
        if not cands and kernel.threads is not None:
            raise GemmcError(Diagnostic("E301", f"no tensor-core tile runs with threads {kernel.threads}",
                                        kernel.where("threads"), "leave `threads` out; the tiles take 128 or 256"))
        if not cands:
            raise GemmcError(Diagnostic("E300", f"no tensor-core tile fits {hw.arch}'s shared memory and registers",
                                        kernel.span))
        best = planner.choose(cands, hw)
        variant = planner.catalogue_variant(hw, draft.split, best.bm, best.bn, best.wm, best.wn)
    return dataclasses.replace(kernel, draft=dataclasses.replace(draft, variant=variant, candidates=cands))


def choose_staging(kernel: Kernel, hw: Hardware) -> Kernel:
    """Requires: the draft's tile. Guarantees: its cp.async pipeline depth (paper 001 §4.3's multi-stage pipeline):
    the schedule's, or the deepest of STAGES whose stages fit a block's shared memory and let MIN_WARPS_PER_SM warps
    share an SM (planner.py: deepest), else 2."""
    draft = kernel.draft_as(TensorCoreDraft, "choose_staging")
    if draft.variant is None:
        raise InternalError("choose_staging", f"kernel '{kernel.name}' has no tile")
    probe = planner.make_plan(kernel, hw, draft.variant, draft.split, 2)
    stages = kernel.stages if kernel.stages_written else (planner.deepest(probe, hw) or 2)
    return dataclasses.replace(kernel, draft=dataclasses.replace(draft, stages=stages))


def finish_plan(kernel: Kernel, hw: Hardware) -> Kernel:
    """Requires: a draft with its split, tile and stages. Guarantees: `plan` is the TensorCorePlan with the pre-pass's
    scratch and grid and the model's verdict on whether emulation pays, the draft is gone, and the notes say why."""
    draft = kernel.draft_as(TensorCoreDraft, "finish_plan")
    if draft.variant is None or not draft.stages:
        raise InternalError("finish_plan", f"kernel '{kernel.name}' has no tile or no stages")
    plan = planner.make_plan(kernel, hw, draft.variant, draft.split, draft.stages, draft.candidates,
                             planner.emulation_pays(kernel, hw, draft.split))
    return planned(kernel, plan, planner.notes(kernel, plan, hw))


STEPS = (
    ("check_family", check_family),
    ("split_precision", split_precision),
    ("choose_tiles", choose_tiles),
    ("choose_staging", choose_staging),
    ("finish_plan", finish_plan),
)


def limits(kernel: Kernel, plan: TensorCorePlan, hw: Hardware) -> list[str]:
    """What the steps guarantee of a TensorCorePlan: a block tile the template builds (sides of BLOCK_SIDES, at most
    MAX_BLOCK_AREA, a k step of whole mma k-steps from 16 to 64), made of whole warp tiles with a warp per warp tile
    (mma.sync) or 128 threads per warpgroup (wgmma), and 2 to 4 pipeline stages."""
    v, out = plan.variant, []
    if v.bm not in BLOCK_SIDES or v.bn not in BLOCK_SIDES or v.bm * v.bn > MAX_BLOCK_AREA:
        out.append(f"block tile {v.bm}x{v.bn} is not one the template builds")
    if v.bk % plan.mma[2] or not 16 <= v.bk <= 64:
        out.append(f"k step {v.bk} is not 16 to 64 in whole mma k-steps of {plan.mma[2]}")
    if v.bm % v.wm or v.bn % v.wn:
        out.append(f"warp tile {v.wm}x{v.wn} does not divide block tile {v.bm}x{v.bn}")
    else:
        threads = (v.bm // v.wm) * (128 if plan.wgmma else (v.bn // v.wn) * hw.warp_size)
        if v.threads != threads:
            out.append(f"block tile {v.bm}x{v.bn} of {v.wm}x{v.wn} warp tiles runs {threads} threads, not {v.threads}")
    if plan.stages not in planner.STAGES:
        out.append(f"{plan.stages} pipeline stages; the template has {', '.join(map(str, sorted(planner.STAGES)))}")
    return out

"""The planning steps: the pipeline's named passes between `select_family` and `build_worklist`, through which the
selected kernel family makes its decisions.

The pipeline owns one fixed, ordered list of step names (STEPS) and each family implements the steps it has
(`KernelFamily.steps`), leaving out the others, which then pass its kernels through unchanged. Why a fixed list
rather than each family splicing in its own: a step name then means the same point of the pipeline for every kernel
of a file, whatever its family, so `gemmc inspect --after choose_tiles` shows every kernel with its tiles chosen, the
IR verifier ties each invariant to the step that establishes it, and the pipeline never names a family. The list is
the union of what the families decide, in the order their decisions depend on one another; a new family's decision
that fits none of them is a new name here, placed where its inputs are decided.

Between the steps a kernel carries its family's decisions so far in `Kernel.draft` (a frozen, printable PlanDraft);
`finish_plan` turns the draft into the family's FamilyPlan. Each family's steps live in its `steps.py`, each with
a docstring saying what it requires, what it guarantees and which paper section it implements.
"""

from __future__ import annotations

from collections.abc import Mapping

from gemmc.errors import InternalError
from gemmc.families.base import KernelFamily, Pass
from gemmc.families.registry import FAMILIES
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel

# (name, what the step decides), in pipeline order; the comment says why each comes where it does.
STEPS: tuple[tuple[str, str], ...] = (
    # first: what only the selected family can judge comes before anything it decides
    ("check_family", "the rules of the family that computes the kernel (its pipeline depths, its shapes)"),
    # before the tiles: a split's parts set the shared memory and registers a tile needs
    ("split_precision", "how the operands become the products' inputs: a tensor-core precision's parts and terms"),
    ("choose_tiles", "what one block computes: each problem's tile, or TSM2's columns per pass and rows per warp"),
    # needs the tile: stages and rings are counted in tile-sized buffers
    ("choose_staging", "how operands pass through shared memory: pipeline stages, rings of batches, staged rows"),
    # needs the staging: a cluster's blocks per SM come from the final shared memory (TSM2R)
    ("split_k", "the blocks of a thread-block cluster that share one tile's k"),
    # needs the k split: a cluster is part of what the target must run
    ("check_tiles", "the chosen tiles against the target's per-block limits, at the schedule line that chose them"),
    # needs checked tiles: tiles are grouped into blocks as they are
    ("choose_batching", "several tiles per block where K is small (paper 003 §4)"),
    # last: every decision is made
    ("finish_plan", "the draft becomes the family's plan, with the notes that explain it"),
)

STEP_NAMES = tuple(name for name, _ in STEPS)


def own_steps(fam: KernelFamily) -> dict[str, Pass]:
    """A family's steps by name, checked against STEPS: known names, in pipeline order, `finish_plan` among them (a
    misspelt step would otherwise never run)."""
    names = [name for name, _ in fam.steps]
    unknown = [name for name in names if name not in STEP_NAMES]
    if unknown or names != sorted(names, key=STEP_NAMES.index) or "finish_plan" not in names:
        raise InternalError("planning", f"family {fam.name}'s steps {names} must be some of {list(STEP_NAMES)}, "
                            "in that order, with finish_plan")
    return dict(fam.steps)


BY_FAMILY: Mapping[str, dict[str, Pass]] = {fam.name: own_steps(fam) for fam in FAMILIES}


def planning_step(name: str, decides: str) -> Pass:
    """The pipeline's pass `name`: the selected family's step of that name, or the kernel unchanged where the
    family has none."""

    def step(kernel: Kernel, hw: Hardware) -> Kernel:
        steps = BY_FAMILY.get(kernel.family or "")
        if steps is None:
            raise InternalError(name, f"kernel '{kernel.name}' has no registered family (select_family sets it)")
        own = steps.get(name)
        return kernel if own is None else own(kernel, hw)

    step.__name__ = step.__qualname__ = name
    step.__doc__ = (f"Planning step `{name}`: {decides}. Requires: a kernel whose family is selected. Runs that "
                    f"family's `{name}` step (families/<name>/steps.py), or leaves the kernel as it is.")
    return step


PLANNING: tuple[tuple[str, Pass], ...] = tuple((name, planning_step(name, decides)) for name, decides in STEPS)

"""Planning a concurrent group: each member's share plans and features, the predictor's degree, the fused
kernel, and how the group runs (paper 004 §4.4-§4.5, and the single launch the paper could not make).

`concurrency auto` decides with two models:
- where the members allow one launch (`fused_kernel`: one family, the same dtypes, layouts, scalars and precision),
  the family that runs them as one (`KernelFamily.fuses`) says whether that launch beats their own kernels
  (`prefer_fused`): the SIMT family by its cost model, which simulates a launch tile by tile (f32 members, as one
  irregular batch), the hopper_grouped family by a rule measured on the H100 (bf16/f16 members, as one tensor-core
  `grouped list`, which no cost model estimates); the group's first call times fused beside the plan's way either
  way (runtime/group_floor.py). This module names no family;
- otherwise each member gets its preferred degree (1S, 2P, 4P, 8P, 16P): the predictor's for a GEMM with copies in
  the group (they run its GO-kernels, the kernels the predictor was trained on), the fit rule's for one without
  (it runs its isolated kernel beside GEMMs of other shapes: what it leaves to them is the SMs its launch leaves
  idle, `fit_degree`). The group runs min over members of that, clamped to the group's size and to MAX_AUTO_DEGREE
  and rounded down to a tuned degree (paper 004 §4.5: all of them concurrently only if every shape prefers it; the
  paper gives no rule for more than two shapes, the minimum generalises it), on streams, or one after another at 1S.
"""

from __future__ import annotations

import dataclasses

from gemmc.concurrent import predictor
from gemmc.concurrent.features import features, kernel_figures, plan_for_share
from gemmc.errors import GemmcError
from gemmc.families import registry
from gemmc.families.base import Fusion, NotFused, differing, member_span
from gemmc.ir.group import DEGREES, SHARES, Group, GroupPlan, MemberChoice, Mode
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel
from gemmc.ir.program import Program
from gemmc.span import Span

# The most GEMMs the planner runs at once. 16 at once never beat 8 in a measured group: bf16 on the H100, 16 copies
# of 4096x128x1024 and of 512x1024x1024 took 90.2 and 63.7 us 16 at once against 69.3 and 41.5 us 8 at once
# (bench/results/concurrent/2026-11-27_h100_bf16.json; with CUDA_DEVICE_MAX_CONNECTIONS=32, 95.1 and 60.5 us,
# 2026-11-27_h100_bf16-conn32.json: not the 8 hardware queues), f32 on the H200 16 at once within 0-1% of 8 at once
# on all four 16-GEMM groups (bench/results/concurrent/2026-11-26_h200_concurrent.json).
MAX_AUTO_DEGREE = 8


def tuned_degree(n: int) -> int:
    """The largest degree with GO-kernels (DEGREES) that does not exceed n."""
    return max(d for d in DEGREES if d <= max(1, n))


def go_degree(members: list[Kernel], index: int, degree: int) -> int:
    """The degree whose GO-kernel member `index` runs with when the group runs `degree` at once. GO-kernels are
    tuned with copies of their own GEMM (paper 004 §4.5 calls them heterogeneity-agnostic), so a GEMM with fewer
    copies in the group than the degree takes the GO-kernel of its number of copies, and one with none its
    isolated kernel (1). On the H200 the tuned-for-copies kernels of a dX/dW pair, run together, took 1.44x the
    sequential time (bench/results/concurrent/2026-11-26_h200_concurrent_run1.json, FFN2 dX+dW)."""
    return tuned_degree(min(degree, copies(members, index)))


def copies(members: list[Kernel], index: int) -> int:
    """How many members plan the same kernel as member `index` (itself included): copies of one GEMM."""
    def key(k: Kernel) -> Kernel:
        return dataclasses.replace(k, name="", notes=())

    mine = key(members[index])
    return sum(key(k) == mine for k in members)


def fused_kernel(group: Group, members: list[Kernel], hw: Hardware) -> Fusion | NotFused:
    """The group as one launch (its kernel planned), or why not (at the member that is the reason, where one is):
    members of one family that share dtypes, layouts, scalars and precision, run as one by the family that `fuses`
    theirs (`KernelFamily.fuse`: the SIMT family's irregular batch of a problem per member; the hopper_grouped
    family's tensor-core `grouped list` of hopper members)."""
    if len(members) < 2:
        return NotFused("one GEMM: nothing to fuse")
    named = {k.name.removeprefix(group.name + "_"): k for k in members}  # as the group writes them: `a`, `q_1`
    first = members[0].family
    other = next((m for m, k in named.items() if k.family != first), None)
    if other is not None:
        return NotFused(f"fused runs members of one family as one launch; {next(iter(named))} is {first}, {other} "
                        f"{named[other].family}", member_span(members[0], named[other], "algorithm"))
    why = differing(named, ("dtype", "c_dtype", "layout_a", "layout_b", "layout_c", "alpha", "beta", "precision"))
    if why is not None:
        return why
    fusion = registry.fuse(named, f"{group.name}_fused", group.span, hw)
    if isinstance(fusion, NotFused):
        return fusion
    from gemmc.passes import run_pipeline

    try:
        return fusion._replace(kernel=run_pipeline(Program(hw, (fusion.kernel,))).kernels[0])
    except GemmcError as err:
        first_error = err.diagnostics[0]
        return NotFused(f"fused cannot be planned: {first_error.message}", first_error.span)


def same_kernel(a: Kernel, b: Kernel, hw: Hardware) -> bool:
    """The two planned kernels launch the same code on the same work (their names aside)."""
    if a.work != b.work or a.family != b.family:
        return False
    from gemmc.codegen import render_kernel

    return render_kernel(dataclasses.replace(a, name=b.name), hw).source == render_kernel(b, hw).source


def _estimate(kernel: Kernel) -> float | None:
    return getattr(kernel.plan, "estimate_us", None) or None


def choose(group: Group, choices: list[MemberChoice], fusion: Fusion | NotFused, members: list[Kernel], model: str,
           hw: Hardware) -> GroupPlan:
    """How the group runs: the schedule's mode, or under `concurrency auto` fused where the fusing family's rule
    prefers its launch (`KernelFamily.prefer_fused`), else the predicted degree on streams (1: sequential)."""
    n = len(members)
    predicted = tuned_degree(min(min(c.degree for c in choices), n, MAX_AUTO_DEGREE))
    fused = fusion.kernel if isinstance(fusion, Fusion) else None
    notes: list[str] = []
    estimates: list[tuple[str, float]] = []  # the cost model's figures, where it estimates every launch (inspect)
    seq = [_estimate(k) for k in members]
    fused_est = _estimate(fused) if fused is not None else None
    if fused_est is not None and all(e is not None for e in seq):
        estimates = [("sequential", float(sum(e for e in seq if e is not None))), ("fused", fused_est)]

    def plan(mode: Mode, degree: int, *why: str, fallback: NotFused | None = None) -> GroupPlan:
        if fallback is None:
            return GroupPlan(mode, degree, tuple(choices), fused, model, tuple(estimates), (*notes, *why))
        # the note points at the member or the shared statement that is the reason, else at the group's
        # `concurrency fused`
        return GroupPlan(mode, degree, tuple(choices), fused, model, tuple(estimates), (*notes, *why),
                         fallback=fallback.why, fallback_span=fallback_span(fallback))

    def fallback_span(fallback: NotFused) -> Span:
        return fallback.span if fallback.span.line else group.mode_span

    if group.mode is Mode.SEQUENTIAL:
        return plan(Mode.SEQUENTIAL, 1, "concurrency sequential from the schedule")
    if group.mode is Mode.STREAMS:
        degree = group.streams or predicted
        return plan(Mode.STREAMS, degree, f"concurrency streams {degree} from the schedule; GO-kernels of degree "
                                          f"{tuned_degree(degree)}")
    if group.mode is Mode.FUSED:
        if isinstance(fusion, Fusion):
            return plan(Mode.FUSED, 1, "concurrency fused from the schedule", fusion.why)
        return plan(Mode.STREAMS, max(predicted, 2) if n > 1 else 1,
                    f"concurrency fused falls back to streams (line {fallback_span(fusion).line}): {fusion.why}",
                    fallback=fusion)
    notes.append(f"predictor ({model}): degrees " + ", ".join(f"{c.member} {c.degree}" + (" (fit)" if c.fit else "")
                                                              for c in choices)
                 + f"; on streams the group would run {predicted} at once (the smallest, clamped to its {n} GEMMs"
                 + f" and to {MAX_AUTO_DEGREE}, rounded down to a tuned degree)")
    if any(c.fit for c in choices) and len(choices) > 1:
        notes.append("(fit): a GEMM without copies in the group runs its own kernel beside the others, so it takes "
                     "how many copies of its launch fit the GPU, not the predictor's degree (trained on copies "
                     "running GO-kernels)")
    if isinstance(fusion, Fusion):
        fuse, why = registry.family(fusion.kernel.family).prefer_fused(fusion.kernel, members, hw)
        notes.append(why)
        if fuse:
            return plan(Mode.FUSED, 1)
    else:
        notes.append(f"not fused: {fusion.why}")
    return plan(Mode.SEQUENTIAL, 1) if predicted == 1 else plan(Mode.STREAMS, predicted)


def fit_degree(kernel: Kernel, hw: Hardware) -> int:
    """A member's degree where no predictor was trained for its storage on the target: how many copies of its
    isolated launch the GPU holds at once (1 / its waves, from the planner's blocks and occupancy), rounded down
    to a tuned degree. Fewer than one wave leaves SMs idle that a copy beside it can use; a launch of a wave or
    more has none to give (a persistent grid of one block per SM is one wave from as many tiles as SMs)."""
    _, _, waves = kernel_figures(kernel, hw)
    return tuned_degree(int(1.0 / waves)) if waves > 0 else 1


def plan_group(group: Group, program: Program) -> Group:
    """The group with its plan. Requires: the program's kernels planned by the pipeline."""
    hw = program.target
    by_name = {k.name: k for k in program.kernels}
    members = [by_name[name] for name in group.members]
    choices = []
    sources: dict[str, None] = {}
    for i, k in enumerate(members):
        key = predictor.storage_key(k.dtype.half)
        model = predictor.load(hw.arch, key)
        shares = tuple(plan_for_share(k, hw, s) for s in SHARES)
        x = features(k, shares, hw)
        if model is not None:
            probs = tuple(round(float(p), 4) for p in model.probabilities(x))
            degree = model.predict(x)
            sources[model.source] = None
        else:
            degree = fit_degree(k, hw)
            probs = tuple(1.0 if d == degree else 0.0 for d in DEGREES)
            what = f"{k.dtype.value} storage" if key else "f32 storage"
            sources[f"none trained for {what} on {hw.arch}: copies of the isolated launch that fit the GPU"] = None
        distinct = tuple(s for s in shares[1:] if not same_kernel(s, k, hw))
        alone = len(members) > 1 and copies(members, i) == 1  # runs its isolated kernel (go_degree 1)
        taken = fit_degree(k, hw) if alone else degree
        choices.append(MemberChoice(k.name, x, degree, probs, distinct, taken, fit=alone or model is None))
    return dataclasses.replace(group, plan=choose(group, choices, fused_kernel(group, members, hw), members,
                                                  "; ".join(sources), hw))


def plan_groups(program: Program) -> Program:
    if not program.groups:
        return program
    return dataclasses.replace(program, groups=tuple(plan_group(g, program) for g in program.groups))


MAX_CANDIDATES = 6  # GO-kernel candidates timed per GEMM under each share of the SMs


def go_candidates(member: Kernel, choice: MemberChoice, hw: Hardware) -> list[tuple[str, Kernel]]:
    """The kernels a member's GO-kernels are chosen from (paper 004 §3.2's kernel list, ours): its own plan, its
    plans for 1/2 and 1/4 of the SMs, then its family's other alternatives in the family's order, none the same
    as an earlier one, at most MAX_CANDIDATES."""
    found: list[tuple[str, Kernel]] = [("model (all SMs)", member)]
    found += [(f"model (1/{k.name.rsplit('share', 1)[1]} of the SMs)", k) for k in choice.shares]
    found += [(label, ir) for label, ir in registry.family(member.family).alternatives(member, hw)[1:]]
    out: list[tuple[str, Kernel]] = []
    for label, k in found:
        if len(out) == MAX_CANDIDATES:
            break
        if not any(same_kernel(k, other, hw) for _, other in out):
            out.append((label, k))
    return out

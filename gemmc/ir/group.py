"""A concurrent group (paper 004): independent GEMMs that run together, and what gemmc decided for them.

The members are ordinary kernels of the Program (named `<group>_<member>`), planned by the pipeline like any
other; the group names them in call order and says how they run together. `GroupPlan` is filled by
gemmc/concurrent (the predictor, the share plans, the fused kernel) and printed by `gemmc inspect`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from gemmc.ir.nodes import Kernel
from gemmc.ir.types import Span, counted, span_field

MAX_STREAMS = 32  # CUDA_DEVICE_MAX_CONNECTIONS' ceiling: more streams share hardware work queues
MAX_MEMBERS = 128  # the C++ launcher passes 3 pointers per GEMM as launch arguments (4 KiB of them)
DEGREES = (1, 2, 4, 8, 16)  # the predictor's classes: 1S, 2P, 4P, 8P, 16P (paper 004 §4.3)
SHARES = (1, 2, 4)  # the fractions of the SMs the GO-kernels are tuned for (paper 004 §4.4: GPU, GPU/2, GPU/4)


class Mode(Enum):
    AUTO = "auto"
    SEQUENTIAL = "sequential"
    STREAMS = "streams"
    FUSED = "fused"


@dataclass(frozen=True, slots=True)
class MemberChoice:
    """One member's figures: the predictor's features and its class, the kernel planned for each share."""

    member: str  # the member kernel's name
    features: tuple[float, ...]
    predicted: int  # the predictor's degree (1, 2, 4, 8 or 16) before clamping to the group's size
    probabilities: tuple[float, ...]  # one per DEGREES entry
    shares: tuple[Kernel, ...]  # planned kernels for 1/2 and 1/4 of the SMs that differ from the member's plan
    degree: int  # the degree the group's rule takes from this member: `predicted` for a GEMM with copies in the
    #              group (they run its GO-kernels, as the predictor was trained), else how many copies of its own
    #              launch fit the GPU (concurrent.plan.fit_degree: it runs its isolated kernel)
    fit: bool = False  # `degree` is the fit rule's, not the predictor's


@dataclass(frozen=True, slots=True)
class GroupPlan:
    mode: Mode  # never AUTO: what runs
    degree: int  # GEMMs on separate streams at once (1 for sequential and fused)
    choices: tuple[MemberChoice, ...]
    fused: Kernel | None  # the whole group as one launch (SIMT batch or tensor-core list), where allowed
    model: str  # the predictor's data file and the GPU it was trained on
    estimates_us: tuple[tuple[str, float], ...] = ()  # the SIMT cost model's figures the choice weighed
    notes: tuple[str, ...] = ()
    fallback: str = ""  # why a group whose schedule says `concurrency fused` runs on streams ("" where it does not)
    fallback_span: Span = span_field()  # the line `fallback` is about: the member or the shared statement that is the
    #                                     reason, else the group's `concurrency` line

    def share_kernel(self, member: str, share: int) -> Kernel | None:
        """The member's kernel planned for 1/share of the SMs, where it differs from its own plan."""
        for c in self.choices:
            if c.member == member:
                for k in c.shares:
                    if k.name.endswith(f"_share{share}"):
                        return k
        return None


@dataclass(frozen=True, slots=True)
class Group:
    name: str
    members: tuple[str, ...]  # member kernels' names, in call order (copies expanded: `q_0`, `q_1`, ...)
    mode: Mode = Mode.AUTO
    streams: int | None = None  # `concurrency streams N`
    span: Span = span_field()
    mode_span: Span = span_field()
    plan: GroupPlan | None = field(default=None, compare=False)


def kernel_name(group: str, index: int) -> str:
    """The name of the group's `index`-th distinct kernel in its C++ file (the fused kernel is the only one: 0)."""
    return f"{group}_k{index}"


def group_lines(g: Group) -> list[str]:
    """The group's part of `gemmc inspect`: its members, the predictor's figures, the share plans, the choice."""
    mode = g.mode.value + (f" {g.streams}" if g.streams else "")
    gemms = len(g.members)
    out = [f"group {g.name}: {counted(gemms, 'GEMM')}, concurrency {mode}"]
    plan = g.plan
    if plan is None:
        out.append("  members: " + ", ".join(g.members))
        return out
    runs = {Mode.SEQUENTIAL: "one after another on the caller's stream",
            Mode.STREAMS: f"{plan.degree} at once on side streams forked from and joined to the caller's "
                          "stream; each GEMM with copies in the group runs its GO-kernel for as many copies at "
                          "once, the others their own kernels",
            Mode.FUSED: f"one launch of kernel {plan.fused.name if plan.fused else '?'}"}[plan.mode]
    out.append(f"  runs: {plan.mode.value}: {runs}")
    out.append("  members (predictor classes " + "/".join(f"{d}{'S' if d == 1 else 'P'}" for d in DEGREES) + "):")
    for c in plan.choices:
        probs = " ".join(f"{p:.2f}" for p in c.probabilities)
        shares = ", ".join(k.name for k in c.shares) or "the same plan for 1/2 and 1/4 of the SMs"
        takes = f"; takes {c.degree} (copies of its own launch that fit the GPU at once)" if c.fit else ""
        out.append(f"    {c.member}: degree {c.predicted} (p {probs}){takes}; share plans: {shares}")
        out.append("      features: " + _features(c.features))
    if plan.fused is not None and plan.fused.plan is not None:
        used = "the kernel it runs" if plan.mode is Mode.FUSED else "what fused would run"
        out.append(f"  fused kernel {plan.fused.name} ({plan.fused.family}; {used}; in the group's C++ file "
                   f"{kernel_name(g.name, 0)}):")
        out.extend(f"    {line}" for line in plan.fused.plan.lines())
    if plan.estimates_us:
        out.append("  cost model: " + ", ".join(f"{k} {v:.1f} us" for k, v in plan.estimates_us))
    out.append("  decisions:")
    out.extend(f"    - {n}" for n in plan.notes)
    return out


def _features(f: tuple[float, ...]) -> str:
    """The predictor's features as `inspect` names them (gemmc/concurrent/features.py FEATURE_NAMES' layout)."""
    if len(f) != 6 + 3 * len(SHARES):
        return " ".join(f"{v:g}" for v in f)
    parts = [f"log2 M, N, K {f[0]:g} {f[1]:g} {f[2]:g}", f"column-major A, B, C {f[3]:g} {f[4]:g} {f[5]:g}"]
    for i, share in enumerate(SHARES):
        blocks, per_sm, waves = f[6 + 3 * i:9 + 3 * i]
        where = "all SMs" if share == 1 else f"1/{share} of the SMs"
        parts.append(f"{where}: log2 blocks {blocks:g}, blocks/SM {per_sm:g}, log2 waves {waves:g}")
    return "; ".join(parts)

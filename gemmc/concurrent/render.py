"""A group -> one self-contained .cu/.hip file and its header (templates/group_launcher.j2).

Every kernel the group launches is rendered by its family as usual and placed in a namespace of its own with its
plan's tables; `#include` lines are hoisted to the top of the file (each source's prelude repeats them). The
launcher forks the GEMMs onto side streams through events and joins them back, or launches the fused kernel (the
SIMT batch's, or for bf16/f16 the `grouped list` kernel's own launcher on a problem table it fills per call).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import PurePath

from gemmc.codegen import RUNTIME_API, device_ctype, launch_context, literal, render_kernel, scalar_type
from gemmc.codegen.env import render
from gemmc.concurrent import predictor
from gemmc.concurrent.plan import MAX_AUTO_DEGREE, go_degree
from gemmc.errors import InternalError
from gemmc.ir.group import DEGREES, MAX_STREAMS, Group, Mode, kernel_name
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel
from gemmc.ir.types import counted
from gemmc.model.worklist import problem_rows
from gemmc.version import __version__

EVENT_T = {"cuda": "cudaEvent_t", "hip": "hipEvent_t"}


@dataclass(frozen=True, slots=True)
class RenderedGroup:
    name: str
    launcher: str  # the extern "C" function
    source: str  # the .cu / .hip file
    header: str
    extension: str
    build_flags: tuple[str, ...]


def launched_kernels(group: Group, members: dict[str, Kernel]) -> list[Kernel]:
    """The kernels the C++ launcher runs, in call order: the fused kernel, or per member its plan for a share of the
    SMs at its GO degree (plan.go_degree; 1/2 at degree 2, 1/4 from 4 on: the model's GO-kernel, where the Python
    runtime measures its choice) or its own plan."""
    plan = group.plan
    if plan is None:
        raise InternalError("concurrent.render", f"group '{group.name}' is not planned")
    if plan.mode is Mode.FUSED:
        assert plan.fused is not None
        return [plan.fused]
    kernels = [members[name] for name in group.members]
    out = []
    for i, name in enumerate(group.members):
        go = 1 if plan.mode is Mode.SEQUENTIAL else go_degree(kernels, i, plan.degree)
        found = plan.share_kernel(name, min(4, go)) if go > 1 else None
        if found is None and go >= 4:
            found = plan.share_kernel(name, 2)
        out.append(found or members[name])
    return out


def summary(k: Kernel) -> str:
    if k.dynamic is not None:
        return f"{k.family}, {k.dynamic}"
    p = k.problems[0]
    return f"{k.family}, {counted(len(k.problems), 'problem')}, first {p.m}x{p.n}x{p.k}"


def member_line(name: str, k: Kernel) -> str:
    """A member as the group's header describes it: its storage, sizes and layouts."""
    p = k.problems[0]
    return (f"{name}: {k.dtypes}, A {p.m} x {p.k}, B {p.k} x {p.n}, C {p.m} x {p.n}; layout A {k.layout_a.value}, "
            f"B {k.layout_b.value}, C {k.layout_c.value}")


def list_rows(group: Group, members: dict[str, Kernel]) -> list[tuple[int, ...]]:
    """Per member in call order, the fused `grouped list` kernel's problem entry: m, n, k and the leading dimensions
    of its dense A, B and C, in elements (the work list's problem row)."""
    return [problem_rows(members[name]).rows()[0] for name in group.members]


def _hoist(source: str) -> tuple[str, list[str]]:
    lines = source.splitlines()
    includes = [line for line in lines if line.startswith("#include")]
    return "\n".join(line for line in lines if not line.startswith("#include")), includes


def render_group(group: Group, members: dict[str, Kernel], hw: Hardware,
                 source_file: str = "<string>") -> RenderedGroup:
    plan = group.plan
    if plan is None:
        raise InternalError("concurrent.render", f"group '{group.name}' is not planned")
    kernels, includes = [], [f"#include <{RUNTIME_API[hw.vendor]['header']}>"]
    archs = set()
    distinct: dict[tuple, str] = {}  # a kernel's code and tables (its name aside) -> its namespace
    namespaces = []
    flags: dict[str, tuple[str, ...]] = {}  # device target -> the build flags of a kernel that needs it
    tma = False
    launched = launched_kernels(group, members)
    for k in launched:
        probe = render_kernel(dataclasses.replace(k, name=f"{group.name}_k"), hw, source_file)
        key = (probe.source, k.work)
        if key not in distinct:
            # extern "C" entries share one space of names: each distinct kernel gets a name of its own
            named = dataclasses.replace(k, name=kernel_name(group.name, len(distinct)))
            # a kernel read through TMA tensor maps (hopper) brings its family's launcher, which encodes them
            # on the host from the call's pointers: static here, called with the group's host arrays
            maps = bool(k.plan is not None and k.plan.tensor_maps)
            r = render_kernel(named, hw, source_file, linkage="static")
            archs.add(r.device_arch)
            flags.setdefault(r.device_arch, r.build_flags)
            tma = tma or maps
            distinct[key] = f"gemmc_{named.name}_ns"
            body, incs = _hoist(r.standalone if maps else r.source)
            includes += [i for i in incs if i not in includes]
            S = scalar_type(k)
            kernels.append({"ns": distinct[key], "name": k.name, "source": body, "entry": r.entry,
                            # a member with its own launcher (tma) takes the launcher's types; kernels the device's
                            "T": k.dtype.ctype if maps else device_ctype(k.dtype, hw),
                            "TC": k.c_dtype.ctype if maps else device_ctype(k.c_dtype, hw),
                            "S": S, "alpha": literal(k.alpha, S), "beta": literal(k.beta, S), "tma": maps,
                            "launcher": r.launcher,
                            "summary": summary(k),
                            **launch_context(named)})
        namespaces.append(next(x for x in kernels if x["ns"] == distinct[key]))
    # sm_90a code runs every sm_90 kernel too: a group with a wgmma kernel builds all of them for sm_90a
    specific = hw.arch + "a"
    if not archs <= {hw.arch, specific}:
        raise InternalError("concurrent.render", f"group '{group.name}' mixes device targets {sorted(archs)}")
    target = specific if specific in archs else hw.arch
    models = {predictor.load(hw.arch, predictor.storage_key(k.dtype.half)) for k in launched}
    model = next(iter(models)) if len(models) == 1 else None  # one table in the C++: one model for every member
    fixed = None if group.mode is Mode.AUTO and plan.mode is not Mode.FUSED else plan.degree
    if model is None and fixed is None:
        fixed = plan.degree
    order = ", ".join(group.members)
    runs = {Mode.SEQUENTIAL: "one GEMM after another on the caller's stream",
            Mode.STREAMS: f"up to {plan.degree} GEMMs at once on side streams forked from the caller's stream",
            Mode.FUSED: "all GEMMs in one launch"}[plan.mode]
    if plan.mode is Mode.FUSED and launched[0].dynamic:
        runs += (" of the grouped list kernel, whose TMA reads every A and B in place: their bases must be 16-byte "
                 "aligned (cudaErrorInvalidValue otherwise)")
    fused_list = plan.mode is Mode.FUSED and bool(launched[0].dynamic)
    pointer_table = (plan.mode is Mode.FUSED and not fused_list) or (
        plan.mode is not Mode.FUSED and not all(k["tma"] for k in namespaces))
    ctx = {
        "version": __version__, "group": group.name, "source_file": PurePath(source_file).name,
        "count": len(group.members), "vendor": hw.vendor, "arch": hw.arch,
        "header_lines": [f"concurrency {group.mode.value}" + (f" {group.streams}" if group.streams else "")
                         + f": runs {plan.mode.value}" + (f", degree {plan.degree}" if plan.mode is Mode.STREAMS
                                                          else ""), *plan.notes],
        "includes": includes, "kernels": kernels,
        "members": namespaces if plan.mode is not Mode.FUSED else [],
        "tma": tma,
        # the device table of the members' pointers, for kernels that read them there (every member but those whose
        # launcher encodes TMA maps from the host pointers, and the fused SIMT batch)
        "pointer_table": pointer_table,
        # the pointers passed by value to a kernel that writes them to the device (that table, or a fused list's)
        "pointers": pointer_table or fused_list,
        "fused": kernels[0]["ns"] if plan.mode is Mode.FUSED else "",
        # a fused list kernel (bf16/f16) takes a problem table: each member's sizes and leading dimensions
        "fused_list": list_rows(group, members) if fused_list else [],
        "fused_launcher": kernels[0]["launcher"] if plan.mode is Mode.FUSED else "",
        "max_streams": max(1, min(MAX_STREAMS, len(group.members), max(plan.degree, 1) if fixed else MAX_AUTO_DEGREE)),
        "model": model.source if model else "none trained for this target",
        "classes": list(DEGREES),
        "features": [list(c.features) for c in plan.choices] if model else [],
        "weights": [list(r) for r in model.weights] if model else [],
        "x_min": list(model.x_min) if model else [], "x_max": list(model.x_max) if model else [],
        "bias": list(model.bias) if model else [],
        "fit_degrees": [c.degree if c.fit else 0 for c in plan.choices], "max_degree": MAX_AUTO_DEGREE,
        "fixed_degree": fixed if fixed is not None else 0,
        "degree_rule": ("the smallest degree the predictor gives any of its GEMMs with copies (and the fit rule "
                        f"any without), clamped to the group's size and to {MAX_AUTO_DEGREE} and rounded down to a "
                        "tuned degree" if fixed is None
                        else f"fixed at {fixed} by the schedule and the planner"
                        if group.mode is not Mode.AUTO or plan.mode is Mode.FUSED
                        else f"fixed at {fixed} by the planner ({plan.model})"),
        "order": order, "runs": runs,
        "member_lines": [member_line(name, members[name]) for name in group.members],
        "rt": {**RUNTIME_API[hw.vendor], "event_t": EVENT_T[hw.vendor]},
    }
    return RenderedGroup(group.name, f"gemmc_{group.name}", render("group_launcher.j2", ctx),
                         render("group_header.h.j2", ctx), "hip" if hw.vendor == "hip" else "cu",
                         flags[target])

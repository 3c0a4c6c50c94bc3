"""AST -> IR. Gives every word its meaning and reports every bad value at once (E1xx/E2xx): the file's target and
names here, each kernel's statements in lower_kernel.py, groups in lower_group.py.

What the values mean together (dtype with precision, tile with the target) is the `check` pass's job; this
module only knows what each statement may say on its own.
"""

from __future__ import annotations

from gemmc.errors import Diagnostic, GemmcError
from gemmc.grammar.ast import Module
from gemmc.grammar.lower_group import lower_group
from gemmc.grammar.lower_kernel import Lowering, first_at
from gemmc.ir.group import Group
from gemmc.ir.hardware import TARGETS, Hardware
from gemmc.ir.program import Program
from gemmc.ir.types import Span

DEFAULT_TARGET = "sm_90"


def resolve_target(spec: str) -> Hardware | None:
    """`sm_90`, `gfx90a`, `cuda` (sm_90), `hip` (gfx90a), `cuda:sm_80`, `hip:gfx942` -> Hardware, else None."""
    spec = spec.replace(" ", ":")
    vendor, _, arch = spec.rpartition(":") if ":" in spec else ("", "", spec)
    if arch in ("cuda", "hip") and not vendor:
        vendor, arch = arch, {"cuda": "sm_90", "hip": "gfx90a"}[arch]
    hw = TARGETS.get(arch)
    if hw is None or (vendor and hw.vendor != vendor):
        return None
    return hw


def lower(module: Module, *, algorithms: tuple[str, ...], filename: str = "<string>", source: str | None = None,
          target: str | None = None) -> Program:
    """Build the IR Program; `target` (from the command line) overrides the file's `target` line. `algorithms`
    are the names `algorithm` may give besides `auto`: the registered kernel families (the caller passes them, so
    that the grammar needs no family)."""
    low = Lowering(algorithms)
    hw = TARGETS[DEFAULT_TARGET]
    for extra in module.targets[1:]:
        low.error("E200", "'target' is given twice", extra.span,
                  f"a file has one target; {first_at(module.targets[0].span, extra.span)}")
    if module.targets:
        decl = module.targets[0]
        found = resolve_target(f"{decl.vendor.text}:{decl.arch.text}")
        if decl.vendor.text not in ("cuda", "hip"):
            low.error("E203", f"unknown target vendor '{decl.vendor.text}'", decl.vendor.span,
                      "expected 'cuda' or 'hip'")
        elif found is None:
            archs = [a for a, h in TARGETS.items() if h.vendor == decl.vendor.text]
            arch = decl.arch.text
            known = "expected one of " + ", ".join(archs)
            if arch.endswith("a") and resolve_target(f"{decl.vendor.text}:{arch[:-1]}") is not None:
                known = (f"write {arch[:-1]}: gemmc builds the {arch} (wgmma, TMA) kernels of that target itself and "
                         "names their -gencode")
            low.error("E203", f"unknown {decl.vendor.text} target '{arch}'", decl.arch.span, known)
        else:
            hw = found
    if target is not None:
        found = resolve_target(target)
        if found is None:
            # the caller's argument, not a line of the schedule: no file position to cite
            raise GemmcError(Diagnostic("E203", f"unknown target '{target}'", hint="expected cuda, hip, or one of "
                                        + ", ".join(TARGETS)))
        hw = found
    kernels = [low.kernel(kdecl) for kdecl in module.kernels]
    low.distinct(module.kernels, kernels)
    names_seen = {kdecl.name.text: kdecl.name.span for kdecl in module.kernels}
    groups: list[Group] = []
    for gdecl in module.groups:
        if gdecl.name.text in {g.name for g in groups}:
            low.error("E200", f"group '{gdecl.name.text}' is defined twice", gdecl.name.span)
            continue
        group, members = lower_group(low, gdecl, names_seen)
        groups.append(group)
        kernels.extend(members)
    if not module.kernels and not module.groups:
        low.error("E202", "the file defines no kernel", Span(1, 1), "add `kernel NAME { gemm M x N x K }`")
    if low.diags:
        raise GemmcError(sorted(low.diags, key=lambda d: (d.span.line, d.span.column)), filename=filename,
                         source=source)
    return Program(target=hw, kernels=tuple(kernels), filename=filename, groups=tuple(groups))

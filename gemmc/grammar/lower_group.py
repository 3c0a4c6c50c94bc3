"""AST -> IR for `group` blocks: each member becomes an ordinary kernel named `<group>_<member>` (copies
`<group>_<member>_<i>`), with the group's statements as defaults that the member's braces override.

A member's operands are never named in the language, so a GEMM that reads another's output cannot be written; the
runtime refuses a call whose outputs overlap any operand (gemmc/runtime/concurrent.py).
"""

from __future__ import annotations

from gemmc.grammar.ast import GroupDecl, KernelDecl, Stmt, Word
from gemmc.grammar.lower_kernel import Lowering
from gemmc.ir.group import MAX_MEMBERS, MAX_STREAMS, Group, Mode
from gemmc.ir.nodes import Kernel
from gemmc.ir.types import Span

SIZE_STATEMENTS = ("gemm", "batch")


def _concurrency(low: Lowering, stmt: Stmt) -> tuple[Mode, int | None]:
    words = stmt.values
    mode = low.choice(words[0], "concurrency", {m.value: m for m in Mode})
    if mode is None:
        return Mode.AUTO, None
    if mode is not Mode.STREAMS:
        if len(words) > 1:
            low.error("E202", f"concurrency {mode.value} takes no number", words[1].span,
                      "only `concurrency streams N` has one")
        return mode, None
    if len(words) == 1:
        low.error("E202", "concurrency streams needs the number of streams", stmt.span,
                  "e.g. `concurrency streams 4`, or `concurrency auto` to let the predictor choose")
        return Mode.AUTO, None
    n = low.integer(words[1], "streams")
    if n > MAX_STREAMS:
        low.error("E301", f"streams {n} exceeds the {MAX_STREAMS} hardware work queues a GPU runs at once",
                  words[1].span, f"use at most {MAX_STREAMS} streams")
    return mode, n


def lower_group(low: Lowering, decl: GroupDecl, taken: dict[str, Span]) -> tuple[Group, list[Kernel]]:
    """The group and its member kernels. `taken` holds every kernel name defined so far (updated here)."""
    gname = decl.name.text
    defaults: dict[str, Stmt] = {}
    mode, streams, mode_span = Mode.AUTO, None, decl.name.span
    for stmt in decl.stmts:
        if stmt.keyword == "concurrency":
            if mode_span is not decl.name.span:
                low.error("E200", f"'concurrency' is given twice in group '{gname}'", stmt.span,
                          f"the first is on line {mode_span.line}")
                continue
            mode, streams = _concurrency(low, stmt)
            mode_span = stmt.span
        elif stmt.keyword in defaults:
            low.error("E200", f"'{stmt.keyword}' is given twice in group '{gname}'", stmt.span,
                      f"the first is on line {defaults[stmt.keyword].span.line}")
        else:
            defaults[stmt.keyword] = stmt
    if not decl.members:
        low.error("E202", f"group '{gname}' has no GEMMs", decl.name.span, "add `gemm NAME M x N x K` members")
    kernels: list[Kernel] = []
    members: list[str] = []
    seen: dict[str, Span] = {}
    refused: set[Span] = set()
    for m in decl.members:
        if m.name.text in seen:
            low.error("E200", f"member '{m.name.text}' is defined twice in group '{gname}'", m.name.span,
                      f"the first is on line {seen[m.name.text].line}")
            continue
        seen[m.name.text] = m.name.span
        own: dict[str, Stmt] = {}
        for stmt in m.stmts:
            if stmt.keyword in SIZE_STATEMENTS:
                low.error("E202", f"member '{m.name.text}' has its size on its `gemm` line", stmt.span,
                          "a member is one GEMM; write several members for several GEMMs")
            elif stmt.keyword in own:
                low.error("E200", f"'{stmt.keyword}' is given twice in member '{m.name.text}'", stmt.span)
            else:
                own[stmt.keyword] = stmt
        stmts = (*{**defaults, **own}.values(), Stmt("gemm", m.dims, m.span))
        copies = low.integer(m.copies, "copies") if m.copies is not None else None
        names = [m.name.text] if copies is None else [f"{m.name.text}_{i}" for i in range(copies)]
        for name in names:
            kname = f"{gname}_{name}"
            if kname in taken:
                low.error("E200", f"group member '{kname}' has the name of another kernel", m.name.span,
                          f"that one is on line {taken[kname].line}")
                continue
            taken[kname] = m.name.span
            members.append(kname)
            kernel = low.kernel(KernelDecl(Word(kname, m.name.span), stmts, m.span))
            for scalar in ("alpha", "beta"):
                if getattr(kernel, scalar) is None and kernel.where(scalar) not in refused:
                    refused.add(kernel.where(scalar))  # a group default is reported once, not per member
                    low.error("E900", f"a group bakes {scalar}; `{scalar} runtime` is not supported in a group",
                              kernel.where(scalar), f"give {scalar} a constant")
            kernels.append(kernel)
    if len(members) > MAX_MEMBERS:
        low.error("E301", f"group '{gname}' has {len(members)} GEMMs; a group runs at most {MAX_MEMBERS}",
                  decl.name.span, "split it into several groups")
    if mode is Mode.STREAMS and streams is not None and members and streams > len(members):
        streams = len(members)  # more streams than GEMMs buys nothing
    return Group(gname, tuple(members), mode, streams, decl.name.span, mode_span), kernels

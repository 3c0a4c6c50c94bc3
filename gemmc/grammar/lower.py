"""AST -> IR. Gives every word its meaning and reports every bad value at once (E1xx/E2xx).

What the values mean together (dtype with precision, tile with the target) is the `check` pass's job; this
module only knows what each statement may say on its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TypeVar

from gemmc.errors import Diagnostic, GemmcError
from gemmc.grammar.ast import KernelDecl, Module, Stmt, Word
from gemmc.grammar.lower_group import lower_group
from gemmc.ir.dynamic import INT32_MAX, DynamicBatch, Grouping
from gemmc.ir.group import Group
from gemmc.ir.hardware import TARGETS, Hardware
from gemmc.ir.nodes import Kernel, Problem, Program, TileShape
from gemmc.ir.types import AUTO, STORAGE_DTYPES, Batching, DType, Layout, Precision, Span, TileMode

DEFAULT_TARGET = "sm_90"
SPLIT_TYPES = ("f16", "bf16", "tf32")
SPLIT_METHODS = ("le", "ootomo", "markidis")
PROBLEM_STATEMENTS = ("batch", "gemm", "grouped")  # each says what the kernel computes: one per kernel

E = TypeVar("E")


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


class _Lowering:
    def __init__(self, algorithms: tuple[str, ...]) -> None:
        self.diags: list[Diagnostic] = []
        self.algorithms = algorithms

    def error(self, code: str, message: str, span: Span, hint: str | None = None) -> None:
        self.diags.append(Diagnostic(code, message, span, hint))

    def integer(self, word: Word, what: str, minimum: int = 1) -> int:
        try:
            value = float(word.text)
        except ValueError:
            self.error("E102", f"{what} must be a whole number, not '{word.text}'", word.span)
            return minimum
        if value != int(value) or any(c in word.text for c in ".eE"):
            self.error("E102", f"{what} must be a whole number, not '{word.text}'", word.span)
            return minimum
        if value < minimum:
            self.error("E201", f"{what} must be at least {minimum}, not {word.text}", word.span)
            return minimum
        return int(value)

    def scalar(self, word: Word) -> float | None:
        return None if word.text == "runtime" else float(word.text)

    def choice(self, word: Word, what: str, options: dict[str, E]) -> E | None:
        if word.text in options:
            return options[word.text]
        self.error("E204", f"unknown {what} '{word.text}'", word.span, "expected one of " + ", ".join(options))
        return None

    def kernel(self, decl: KernelDecl) -> Kernel:
        fields: dict[str, object] = {}
        spans: list[tuple[str, Span]] = []
        seen: dict[str, Span] = {}
        for stmt in decl.stmts:
            key = "problems" if stmt.keyword in PROBLEM_STATEMENTS else stmt.keyword
            if key in seen:
                first = next(s for s in decl.stmts if s.span == seen[key])
                message = (f"'{stmt.keyword}' is given twice in kernel '{decl.name.text}'"
                           if first.keyword == stmt.keyword else
                           f"'{first.keyword}' and '{stmt.keyword}' both say what kernel '{decl.name.text}' computes")
                self.error("E200", message, stmt.span, f"the first is on line {seen[key].line}")
                continue
            seen[key] = stmt.span
            spans.append((stmt.keyword, stmt.span))
            getattr(self, f"stmt_{stmt.keyword}")(stmt, fields)
        if "problems" not in seen:
            self.error("E202", f"kernel '{decl.name.text}' has no problems", decl.name.span,
                       "add `gemm M x N x K`, a `batch { name M x N x K ... }`, or a batch sized at run time "
                       "(`grouped M n N k K groups G`, `grouped list problems P`)")
            fields["problems"] = (Problem("gemm", 1, 1, 1),)
        return Kernel(name=decl.name.text, span=decl.name.span, stmt_spans=tuple(spans), **fields)  # type: ignore[arg-type]

    def dims(self, words: tuple[Word, ...]) -> tuple[int, int, int]:
        m, n, k = (self.integer(w, what) for w, what in zip(words, ("M", "N", "K"), strict=True))
        return m, n, k

    def stmt_dtype(self, stmt: Stmt, out: dict) -> None:
        """`dtype bf16` (A, B and C), or per operand: `dtype A bf16, B bf16, C f32`: A or B left out is
        f32 (as with no dtype at all), C left out is A's type. Which C goes with which A is the check pass's
        question."""
        types = {d.value: d for d in STORAGE_DTYPES}
        words = stmt.values
        if len(words) == 1:
            dtype = self.choice(words[0], "dtype", types)
            if dtype:
                out["dtype"] = dtype
            return
        given: dict[str, DType] = {}
        seen: dict[str, Span] = {}
        errors = len(self.diags)
        for operand, value in zip(words[::2], words[1::2], strict=True):
            op = self.choice(operand, "operand", {"A": "A", "B": "B", "C": "C"})
            dtype = self.choice(value, "dtype", types)
            if op in seen:
                self.error("E200", f"operand {op} is given twice in 'dtype'", operand.span)
            elif op and dtype:
                seen[op] = operand.span
                given[op] = dtype
        a, b = given.get("A", DType.F32), given.get("B", DType.F32)
        if a is not b and len(self.diags) == errors:  # (a bad operand word says so already)
            where = seen.get("B") or seen.get("A") or stmt.span
            self.error("E202", f"A is {a.value} but B is {b.value}: A and B share one storage type", where,
                       f"write `dtype A {a.value}, B {a.value}`" + (", C ..." if "C" in given else ""))
        out["dtype"] = a
        if "C" in given and given["C"] is not a:
            out["dtype_c"] = given["C"]

    def stmt_layout(self, stmt: Stmt, out: dict) -> None:
        words = stmt.values
        for operand, value in zip(words[::2], words[1::2], strict=True):
            op = self.choice(operand, "operand", {"A": "a", "B": "b", "C": "c"})
            lay = self.choice(value, "layout", {lay.value: lay for lay in Layout})
            if op and lay:
                out[f"layout_{op}"] = lay

    def stmt_alpha(self, stmt: Stmt, out: dict) -> None:
        out["alpha"] = self.scalar(stmt.values[0])

    def stmt_beta(self, stmt: Stmt, out: dict) -> None:
        out["beta"] = self.scalar(stmt.values[0])

    def stmt_batch(self, stmt: Stmt, out: dict) -> None:
        problems: list[Problem] = []
        names: dict[str, Span] = {}
        words = stmt.values
        for i in range(0, len(words), 4):
            name = words[i]
            if name.text in names:
                self.error("E200", f"problem '{name.text}' is defined twice", name.span,
                           f"the first is on line {names[name.text].line}")
            names[name.text] = name.span
            problems.append(Problem(name.text, *self.dims(words[i + 1:i + 4]), span=name.span))
        if not problems:
            self.error("E202", "the batch is empty", stmt.span, "list problems as `name M x N x K`")
            problems.append(Problem("gemm", 1, 1, 1))
        out["problems"] = tuple(problems)

    def stmt_gemm(self, stmt: Stmt, out: dict) -> None:
        out["problems"] = (Problem("gemm", *self.dims(stmt.values[:3]), span=stmt.span),)
        if len(stmt.values) == 4:
            out["count"] = self.integer(stmt.values[3], "count")

    def stmt_tile(self, stmt: Stmt, out: dict) -> None:
        words = stmt.values
        if words[0].text == "auto":
            if len(words) == 2:
                modes = {m.value: m for m in TileMode if m is not TileMode.AUTO}
                mode = self.choice(words[1], "tiling mode", modes)
                if mode:
                    out["tile_mode"] = mode
            return
        options: dict[str, int] = {}
        for key, value in zip(words[3::2], words[4::2], strict=True):
            if key.text in options:
                self.error("E200", f"'{key.text}' is given twice in the tile", key.span)
            options[key.text] = self.integer(value, key.text)
        out["tile"] = TileShape(*self.dims(words[:3]), options.get("kslices", 1), options.get("ksplit", 1))

    def stmt_threads(self, stmt: Stmt, out: dict) -> None:
        if stmt.values[0].text != "auto":
            out["threads"] = self.integer(stmt.values[0], "threads")

    def stmt_batching(self, stmt: Stmt, out: dict) -> None:
        mode = self.choice(stmt.values[0], "batching mode", {b.value: b for b in Batching})
        if mode:
            out["batching"] = mode

    def stmt_precision(self, stmt: Stmt, out: dict) -> None:
        words = stmt.values
        if words[0].text != "split":
            options = {d.value: d for d in (DType.F32, DType.F64, DType.TF32, DType.F16, DType.BF16)}
            compute = self.choice(words[0], "precision", options)
            if compute:
                out["precision"] = Precision(compute)
            return
        compute = self.choice(words[1], "split type", {t: DType(t) for t in SPLIT_TYPES})
        terms = self.integer(Word(words[2].text[1:], words[2].span), "split factor", minimum=2)
        method = None
        if len(words) == 4:
            method = self.choice(words[3], "split method", {m: m for m in SPLIT_METHODS})
        if compute:
            out["precision"] = Precision(compute, terms, method)

    def stmt_pipeline(self, stmt: Stmt, out: dict) -> None:
        out["stages"] = self.integer(stmt.values[0], "pipeline stages")

    def stmt_algorithm(self, stmt: Stmt, out: dict) -> None:
        algorithm = self.choice(stmt.values[0], "algorithm", {a: a for a in (AUTO, *self.algorithms)})
        if algorithm:
            out["algorithm"] = algorithm

    def keyed(self, stmt: Stmt, words: tuple[Word, ...], allowed: tuple[str, ...]) -> dict[str, int]:
        """`key value` pairs of a run-time batch statement: each key once, each value a whole number >= 1 that
        fits the int32 sizes the device reads. Sizes (m, n, k) may be spelled in either case."""
        found: dict[str, int] = {}
        for key, value in zip(words[::2], words[1::2], strict=True):
            name = key.text.lower() if key.text.lower() in ("m", "n", "k") else key.text
            if name not in allowed:
                self.error("E204", f"unknown key '{key.text}' of '{stmt.keyword}'", key.span,
                           "expected one of " + ", ".join(allowed))
                continue
            if name in found:
                self.error("E200", f"'{key.text}' is given twice", key.span)
                continue
            number = self.integer(value, name)
            if number > INT32_MAX:
                self.error("E201", f"{name} must be at most {INT32_MAX} (the device reads int32 sizes), not "
                           f"{value.text}", value.span)
                number = 1
            found[name] = number
        return found

    def stmt_grouped(self, stmt: Stmt, out: dict) -> None:
        out["problems"] = ()
        form = stmt.values[0]
        grouping = self.choice(Word(form.text.upper() if form.text.lower() != "list" else "list", form.span),
                               "grouped form", {"M": Grouping.M, "K": Grouping.K, "list": Grouping.LIST})
        if grouping is None:
            return
        if grouping is Grouping.LIST:
            keys = self.keyed(stmt, stmt.values[1:], ("problems",))
            if "problems" not in keys:
                self.error("E202", "'grouped list' needs a bound on the problems of a call", stmt.span,
                           "e.g. grouped list problems 512")
                return
            out["dynamic"] = DynamicBatch(Grouping.LIST, max_groups=keys["problems"], span=stmt.span)
            return
        fixed = grouping.fixed
        keys = self.keyed(stmt, stmt.values[1:], ("m", "n", "k", "groups", "rows"))
        if grouping.value.lower() in keys:
            self.error("E202", f"{grouping.value} is the grouped dimension: its sizes come with each call", stmt.span,
                       f"fix {' and '.join(fixed)}; the group ends give the {grouping.value} of each group")
            return
        missing = [k for k in (*fixed, "groups") if k not in keys]
        if missing:
            self.error("E202", f"'grouped {grouping.value}' needs " + " and ".join(missing), stmt.span,
                       f"e.g. grouped {grouping.value}  {fixed[0]} 2048  {fixed[1]} 512  groups 64")
            return
        out["dynamic"] = DynamicBatch(grouping, m=keys.get("m", 0), n=keys.get("n", 0), k=keys.get("k", 0),
                                      max_groups=keys["groups"], max_rows=keys.get("rows", INT32_MAX), span=stmt.span)

    def stmt_tlp(self, stmt: Stmt, out: dict) -> None:
        if stmt.values[-1].text != "auto":
            out["tlp_threshold"] = self.integer(stmt.values[-1], "tlp threshold")


def lower(module: Module, *, algorithms: tuple[str, ...], filename: str = "<string>", source: str | None = None,
          target: str | None = None) -> Program:
    """Build the IR Program; `target` (from the command line) overrides the file's `target` line. `algorithms`
    are the names `algorithm` may give besides `auto`: the registered kernel families (the caller passes them, so
    that the grammar needs no family)."""
    low = _Lowering(algorithms)
    hw = TARGETS[DEFAULT_TARGET]
    for extra in module.targets[1:]:
        low.error("E200", "'target' is given twice", extra.span, "a file has one target")
    if module.targets:
        decl = module.targets[0]
        found = resolve_target(f"{decl.vendor.text}:{decl.arch.text}")
        if decl.vendor.text not in ("cuda", "hip"):
            low.error("E203", f"unknown target vendor '{decl.vendor.text}'", decl.vendor.span,
                      "expected 'cuda' or 'hip'")
        elif found is None:
            archs = [a for a, h in TARGETS.items() if h.vendor == decl.vendor.text]
            low.error("E203", f"unknown {decl.vendor.text} target '{decl.arch.text}'", decl.arch.span,
                      "expected one of " + ", ".join(archs))
        else:
            hw = found
    if target is not None:
        found = resolve_target(target)
        if found is None:
            raise GemmcError(Diagnostic("E203", f"unknown target '{target}'", hint="expected cuda, hip, or one of "
                                        + ", ".join(TARGETS)), filename=filename, source=source)
        hw = found
    kernels: list[Kernel] = []
    names: dict[str, Span] = {}
    for kdecl in module.kernels:
        if kdecl.name.text in names:
            low.error("E200", f"kernel '{kdecl.name.text}' is defined twice", kdecl.name.span,
                      f"the first is on line {names[kdecl.name.text].line}")
        names[kdecl.name.text] = kdecl.name.span
        kernels.append(low.kernel(kdecl))
    groups: list[Group] = []
    for gdecl in module.groups:
        if gdecl.name.text in {g.name for g in groups}:
            low.error("E200", f"group '{gdecl.name.text}' is defined twice", gdecl.name.span)
            continue
        group, members = lower_group(low, gdecl, names)
        groups.append(group)
        kernels.extend(members)
    if not module.kernels and not module.groups:
        low.error("E202", "the file defines no kernel", Span(1, 1), "add `kernel NAME { gemm M x N x K }`")
    if low.diags:
        raise GemmcError(sorted(low.diags, key=lambda d: (d.span.line, d.span.column)), filename=filename,
                         source=source)
    return Program(target=hw, kernels=tuple(kernels), filename=filename, groups=tuple(groups))


def map_kernels(program: Program, fn: Callable[[Kernel], Kernel]) -> Program:
    return dataclasses.replace(program, kernels=tuple(fn(k) for k in program.kernels))

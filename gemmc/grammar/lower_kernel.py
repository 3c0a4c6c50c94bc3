"""AST -> IR for one kernel: each statement's words get their meaning, and every bad value is reported (E1xx/E2xx).

Its own module because the file's lowering (lower.py) and a group's (lower_group.py) both lower kernels with it.
"""

from __future__ import annotations

import re
from typing import TypeVar

from gemmc.errors import Diagnostic
from gemmc.grammar import limits, names
from gemmc.grammar.ast import KernelDecl, Stmt, Word
from gemmc.grammar.parser import OPERANDS, SPLIT_TYPES, glued_split, swallowed_statement, unknown_statement
from gemmc.ir.dynamic import INT32_MAX, DynamicBatch, Grouping
from gemmc.ir.nodes import Kernel, Problem, TileShape
from gemmc.ir.types import AUTO, SPLITS, STORAGE_DTYPES, Batching, DType, Layout, Precision, Span, TileMode

SPLIT_METHODS = ("le", "ootomo", "markidis")
PROBLEM_STATEMENTS = ("batch", "gemm", "grouped")  # each says what the kernel computes: one per kernel

E = TypeVar("E")


_WHOLE = re.compile(r"[+-]?[0-9]+")
WHY_INTEGER = "each number of a schedule becomes a C int in the generated code"
WHY_SIZE = "a tile's first row and column are int32 in the work list, and k-tiles are counted in an int"
WHY_BATCH = f"a launch runs at most {limits.MAX_BATCH} problems: its problem table is listed in the generated code"


class Lowering:
    """Lowers kernels one statement at a time and collects every problem it finds (`diags`), so that a file's
    errors are reported together. A group's members are lowered by it too (gemmc/grammar/lower_group.py)."""
    def __init__(self, algorithms: tuple[str, ...]) -> None:
        self.diags: list[Diagnostic] = []
        self.algorithms = algorithms

    def distinct(self, decls: tuple[KernelDecl, ...], kernels: list[Kernel]) -> None:
        """Kernels of one file need distinct symbols (they may be linked into one program) and file names that
        differ in more than case (`gemmc compile` writes <name>.cu and <name>.h into one folder)."""
        owner: dict[str, KernelDecl] = {}
        files: dict[str, KernelDecl] = {}
        for decl, kernel in zip(decls, kernels, strict=True):
            name = decl.name
            other = files.get(name.text.lower())
            if other is not None and other.name.text == name.text:
                self.error("E200", f"kernel '{name.text}' is defined twice", name.span,
                           first_at(other.name.span, name.span))
                continue
            if other is not None:
                first = first_at(other.name.span, name.span)
                self.error("E200", f"kernels '{other.name.text}' and '{name.text}' differ only in case", name.span,
                           f"their output files would be one on a case-insensitive file system; {first}")
                continue
            files[name.text.lower()] = decl
            symbols = names.symbols(name.text, kernel.dtype_tag, kernel.layouts, self.algorithms)
            for symbol in symbols:
                clash = owner.get(symbol)
                if clash is not None:
                    self.error("E200", f"kernels '{clash.name.text}' and '{name.text}' would both define the symbol "
                               f"'{symbol}'", name.span, "rename one of them")
                    break
            else:
                owner.update(dict.fromkeys(symbols, decl))

    def error(self, code: str, message: str, span: Span, hint: str | None = None) -> None:
        self.diags.append(Diagnostic(code, message, span, hint))

    def integer(self, word: Word, what: str, minimum: int = 1, maximum: int = limits.MAX_INTEGER,
                why: str = WHY_INTEGER) -> int:
        """A whole number written in digits (a sign allowed) in [minimum, maximum]; else an error, and `minimum`."""
        text = word.text
        if not _WHOLE.fullmatch(text):
            self.error("E102", f"{what} must be a whole number, not '{_short(text)}'", word.span)
            return minimum
        digits = text.lstrip("+-").lstrip("0") or "0"
        if len(digits) > len(str(maximum)):  # past the limit, whatever the digits (and no int() of a thousand)
            value = -maximum - 1 if text.startswith("-") else maximum + 1
        else:
            value = int(text)
        if value < minimum:
            self.error("E201", f"{what} must be at least {minimum}, not {_short(text)}", word.span)
            return minimum
        if value > maximum:
            self.error("E205", f"{what} must be at most {maximum}, not {_short(text)}", word.span, why)
            return minimum
        return value

    def scalar(self, word: Word) -> float | None:
        # The grammar's NUMBER as a double (inf past its range); `scalars` checks it against the kernel's type.
        return None if word.text == "runtime" else float(word.text)

    def scalars(self, given: dict[str, Stmt], fields: dict[str, object]) -> None:
        """alpha and beta are baked into the kernel in its scalar type (double for f64 data, else float)."""
        dtype = fields.get("dtype", DType.F32)
        assert isinstance(dtype, DType)
        for key in ("alpha", "beta"):
            if key in given and fields.get(key) is not None:
                word = given[key].values[0]
                why = limits.scalar_problem(word.text, dtype)
                if why:
                    self.error("E205", f"{key} {_short(word.text)} {why}", word.span,
                               f"a kernel of {dtype.value} data computes alpha and beta in "
                               f"{limits.scalar_ctype(dtype)}")

    def choice(self, word: Word, what: str, options: dict[str, E], written: str | None = None,
               hint: str | None = None) -> E | None:
        """The option `word` names; else an E204 quoting `written` (the text as the schedule has it), or the word,
        with `hint` or the options."""
        if word.text in options:
            return options[word.text]
        self.error("E204", f"unknown {what} '{written if written is not None else word.text}'", word.span,
                   hint or "expected one of " + ", ".join(options))
        return None

    def kernel(self, decl: KernelDecl) -> Kernel:
        fields: dict[str, object] = {}
        spans: list[tuple[str, Span]] = []
        given: dict[str, Stmt] = {}
        self.name(decl.name, "kernel")
        for stmt in decl.stmts:
            key = "problems" if stmt.keyword in PROBLEM_STATEMENTS else stmt.keyword
            first = given.get(key)
            if first is not None:
                what = (f"'{stmt.keyword}' is given twice" if first.keyword == stmt.keyword else
                        f"'{stmt.keyword}' and '{first.keyword}' both give the problems")
                self.error("E200", f"{what} in kernel '{decl.name.text}'", stmt.span, first_at(first.span, stmt.span))
                continue
            given[key] = stmt
            spans.append((stmt.keyword, stmt.span))
            getattr(self, f"stmt_{stmt.keyword}")(stmt, fields)
        if "problems" not in given:
            self.error("E202", f"kernel '{decl.name.text}' has no problems", decl.name.span,
                       "add `gemm M x N x K`, a `batch { name M x N x K ... }`, or a batch sized at run time "
                       "(`grouped M n N k K groups G`, `grouped list problems P`)")
            fields["problems"] = (Problem("gemm", 1, 1, 1),)
        self.scalars(given, fields)
        return Kernel(name=decl.name.text, span=decl.name.span, stmt_spans=tuple(spans), **fields)  # type: ignore[arg-type]

    def name(self, word: Word, what: str) -> None:
        """A kernel's name must be usable in symbols and file names (names.py); a problem's, short enough to show."""
        if what == "kernel":
            problem = names.name_problem(word.text)
        elif len(word.text) > names.MAX_NAME_LENGTH:
            problem = (f"is {len(word.text)} characters long; a {what} name has at most {names.MAX_NAME_LENGTH}",
                       "it is shown in the generated code's comments and in errors; use a shorter name")
        else:
            problem = None
        if problem:
            self.error("E206", f"{what} name '{_short(word.text)}' {problem[0]}", word.span, problem[1])

    def dims(self, words: tuple[Word, ...], what: tuple[str, str, str] = ("M", "N", "K")) -> tuple[int, int, int]:
        m, n, k = (self.integer(w, name, maximum=limits.MAX_SIZE, why=WHY_SIZE)
                   for w, name in zip(words, what, strict=True))
        return m, n, k

    def stmt_dtype(self, stmt: Stmt, out: dict) -> None:
        """`dtype bf16` (A, B and C), or per operand: `dtype A bf16, B bf16, C f32`: A or B left out is
        f32 (as with no dtype at all), C left out is A's type. Which C goes with which A is the check pass's
        question."""
        types = {d.value: d for d in STORAGE_DTYPES}
        words = stmt.values
        if len(words) == 2 and swallowed_statement(words[0].text, words[1].text):
            # `dtype bf16 aplha }`; the parser reports the same where the statement's values follow the word
            self.diags.append(unknown_statement(words[1]))
            words = words[:1]
        if len(words) == 1:
            dtype = self.choice(words[0], "dtype", types)
            if dtype:
                out["dtype"] = dtype
            return
        given: dict[str, DType] = {}
        seen: dict[str, Span] = {}
        errors = len(self.diags)
        for operand, value in zip(words[::2], words[1::2], strict=True):
            op = self.choice(operand, "operand", {o: o for o in OPERANDS})
            dtype = self.choice(value, "dtype", types)
            if op in seen:
                self.error("E200", f"operand {op} is given twice in 'dtype'", operand.span)
            elif op and dtype:
                seen[op] = operand.span
                given[op] = dtype
        a, b = given.get("A", DType.F32), given.get("B", DType.F32)
        if a is not b and len(self.diags) == errors:  # (a bad operand word says so already)
            where = seen.get("B") or seen.get("A") or stmt.span
            written = [given[op] for op in ("A", "B") if op in given]  # the types the schedule wrote, A's first
            c = given.get("C")
            fits = [t for t in written if c is None or c in ((t, DType.F32) if t.half else (t,))]
            wanted = (fits or written)[0].value
            if c is None:
                hint = f"write `dtype A {wanted}, B {wanted}` or `dtype {wanted}` (C too)"
            elif fits:
                hint = f"write `dtype A {wanted}, B {wanted}, C {c.value}`"
            else:  # no type written for A or B takes this C (passes/check.py: which C each type takes)
                hint = f"write `dtype A {wanted}, B {wanted}` and a C that goes with {wanted}"
            self.error("E202", f"A is {a.value} but B is {b.value}: A and B share one storage type", where, hint)
        out["dtype"] = a
        if "C" in given and given["C"] is not a:
            out["dtype_c"] = given["C"]

    def stmt_layout(self, stmt: Stmt, out: dict) -> None:
        words = stmt.values
        seen: dict[str, Span] = {}
        for operand, value in zip(words[::2], words[1::2], strict=True):
            op = self.choice(operand, "operand", {"A": "a", "B": "b", "C": "c"})
            lay = self.choice(value, "layout", {lay.value: lay for lay in Layout})
            if op in seen:
                self.error("E200", f"the layout of {operand.text} is given twice", operand.span,
                           first_at(seen[op], operand.span))
                continue
            if op:
                seen[op] = operand.span
            if op and lay:
                out[f"layout_{op}"] = lay

    def stmt_alpha(self, stmt: Stmt, out: dict) -> None:
        out["alpha"] = self.scalar(stmt.values[0])

    def stmt_beta(self, stmt: Stmt, out: dict) -> None:
        out["beta"] = self.scalar(stmt.values[0])

    def stmt_batch(self, stmt: Stmt, out: dict) -> None:
        problems: list[Problem] = []
        seen: dict[str, Span] = {}
        words = stmt.values
        for i in range(0, len(words), 4):
            name = words[i]
            if name.text in seen:
                self.error("E200", f"problem '{name.text}' is defined twice", name.span,
                           first_at(seen[name.text], name.span))
            else:
                self.name(name, "problem")
            seen[name.text] = name.span
            problems.append(Problem(name.text, *self.dims(words[i + 1:i + 4]), span=name.span))
        if not problems:
            self.error("E202", "the batch is empty", stmt.span, "list problems as `name M x N x K`")
            problems.append(Problem("gemm", 1, 1, 1))
        if len(problems) > limits.MAX_BATCH:
            self.error("E205", f"the batch has {len(problems)} problems; a kernel has at most {limits.MAX_BATCH}",
                       stmt.span, WHY_BATCH)
        out["problems"] = tuple(problems)

    def stmt_gemm(self, stmt: Stmt, out: dict) -> None:
        out["problems"] = (Problem("gemm", *self.dims(stmt.values[:3]), span=stmt.span),)
        if len(stmt.values) == 4:
            out["count"] = self.integer(stmt.values[3], "count", maximum=limits.MAX_BATCH, why=WHY_BATCH)

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
        first: dict[str, Span] = {}
        for key, value in zip(words[3::2], words[4::2], strict=True):
            if key.text in first:
                self.error("E200", f"'{key.text}' is given twice in the tile", key.span, first_at(first[key.text],
                                                                                                key.span))
                continue
            first[key.text] = key.span
            options[key.text] = self.integer(value, key.text)
        dims = self.dims(words[:3], ("the tile's M", "the tile's N", "the tile's K"))
        out["tile"] = TileShape(*dims, options.get("kslices", 1), options.get("ksplit", 1))

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
            meant = glued_split(words[0].text)  # `tf32x3`: a split written without its spaces
            splits = ", ".join(f"`split {t.value} x{n}`" for t, n in SPLITS)
            hint = (f"did you mean `{meant}`?" if meant else
                    "expected one of " + ", ".join(options) + f", or a split of f32 data: {splits}")
            compute = self.choice(words[0], "precision", options, hint=hint)
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
            found[name] = self.integer(value, name, maximum=INT32_MAX, why="the device reads int32 sizes")
        return found

    def stmt_grouped(self, stmt: Stmt, out: dict) -> None:
        out["problems"] = ()
        form = stmt.values[0]
        grouping = self.choice(Word(form.text.upper() if form.text.lower() != "list" else "list", form.span),
                               "grouped form", {"M": Grouping.M, "K": Grouping.K, "list": Grouping.LIST}, form.text)
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


def first_at(first: Span, here: Span) -> str:
    if first.line == here.line:
        return f"the first is on this line, column {first.column}"
    return f"the first is on line {first.line}"


def _short(text: str) -> str:
    """A number or name as an error shows it: a very long one cut, with its length."""
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"

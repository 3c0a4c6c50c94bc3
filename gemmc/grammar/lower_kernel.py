"""AST -> IR for one kernel: each statement's words get their meaning, and every bad value is reported (E1xx/E2xx).

Its own module because the file's lowering (lower.py) and a group's (lower_group.py) both lower kernels with it.
"""

from __future__ import annotations

from typing import TypeVar

from gemmc.errors import Diagnostic
from gemmc.grammar.ast import KernelDecl, Stmt, Word
from gemmc.ir.nodes import Kernel, Problem, TileShape
from gemmc.ir.types import AUTO, STORAGE_DTYPES, Batching, DType, Layout, Precision, Span, TileMode

SPLIT_TYPES = ("f16", "bf16", "tf32")
SPLIT_METHODS = ("le", "ootomo", "markidis")

E = TypeVar("E")


class Lowering:
    """Lowers kernels one statement at a time and collects every problem it finds (`diags`), so that a file's
    errors are reported together. A group's members are lowered by it too (gemmc/grammar/lower_group.py)."""

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
            key = "problems" if stmt.keyword in ("batch", "gemm") else stmt.keyword
            if key in seen:
                self.error("E200", f"'{stmt.keyword}' is given twice in kernel '{decl.name.text}'", stmt.span,
                           f"the first is on line {seen[key].line}")
                continue
            seen[key] = stmt.span
            spans.append((stmt.keyword, stmt.span))
            getattr(self, f"stmt_{stmt.keyword}")(stmt, fields)
        if "problems" not in seen:
            self.error("E202", f"kernel '{decl.name.text}' has no problems", decl.name.span,
                       "add `gemm M x N x K` or a `batch { name M x N x K ... }`")
            fields["problems"] = (Problem("gemm", 1, 1, 1),)
        return Kernel(name=decl.name.text, span=decl.name.span, stmt_spans=tuple(spans), **fields)  # type: ignore[arg-type]

    def dims(self, words: tuple[Word, ...]) -> tuple[int, int, int]:
        m, n, k = (self.integer(w, what) for w, what in zip(words, ("M", "N", "K"), strict=True))
        return m, n, k

    def stmt_dtype(self, stmt: Stmt, out: dict) -> None:
        dtype = self.choice(stmt.values[0], "dtype", {d.value: d for d in STORAGE_DTYPES})
        if dtype:
            out["dtype"] = dtype

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

    def stmt_tlp(self, stmt: Stmt, out: dict) -> None:
        if stmt.values[-1].text != "auto":
            out["tlp_threshold"] = self.integer(stmt.values[-1], "tlp threshold")

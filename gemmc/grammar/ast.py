"""The AST: what the schedule says, word for word, with a span on every value. `lower.py` gives it meaning."""

from __future__ import annotations

from dataclasses import dataclass

from gemmc.span import Span, span_field


@dataclass(frozen=True, slots=True)
class Word:
    """One token's text with its position."""

    text: str
    span: Span = span_field()


@dataclass(frozen=True, slots=True)
class Stmt:
    """A statement inside a kernel: `keyword` and its values in source order.

    `layout A row, B col` gives values (A, row, B, col); `batch {p 1 x 2 x 3}` gives (p, 1, 2, 3, ...);
    `gemm 8 x 8 x 8 count 4` gives (8, 8, 8, 4); `precision split f16 x3 method le` gives (split, f16, x3, le).
    """

    keyword: str
    values: tuple[Word, ...]
    span: Span = span_field()


@dataclass(frozen=True, slots=True)
class KernelDecl:
    name: Word
    stmts: tuple[Stmt, ...]
    span: Span = span_field()


@dataclass(frozen=True, slots=True)
class TargetDecl:
    vendor: Word
    arch: Word
    span: Span = span_field()


@dataclass(frozen=True, slots=True)
class MemberDecl:
    """`gemm NAME M x N x K [copies C] [{ stmts }]` inside a group: dims are three words, copies None or a word."""

    name: Word
    dims: tuple[Word, ...]
    copies: Word | None
    stmts: tuple[Stmt, ...]
    span: Span = span_field()


@dataclass(frozen=True, slots=True)
class GroupDecl:
    """`group NAME { ... }`: its own statements (defaults and `concurrency`) and its members, in source order."""

    name: Word
    stmts: tuple[Stmt, ...]
    members: tuple[MemberDecl, ...]
    span: Span = span_field()


@dataclass(frozen=True, slots=True)
class Module:
    targets: tuple[TargetDecl, ...]
    kernels: tuple[KernelDecl, ...]
    groups: tuple[GroupDecl, ...] = ()

"""Text -> AST. Lark's errors are translated into gemmc diagnostics with human names for tokens."""

from __future__ import annotations

import difflib
from functools import cache
from pathlib import Path

import lark
from lark import Lark, Token, Transformer, v_args

from gemmc.errors import LINE_BREAK, Diagnostic, GemmcError
from gemmc.grammar.ast import GroupDecl, KernelDecl, MemberDecl, Module, Stmt, TargetDecl, Word
from gemmc.span import Span

STATEMENT_KEYWORDS = ("dtype", "layout", "alpha", "beta", "batch", "gemm", "tile", "threads", "batching",
                      "precision", "pipeline", "algorithm", "tlp", "grouped")
TOP_KEYWORDS = ("target", "kernel", "group")

_TOKEN_NAMES = {
    "NAME": "a name", "NUMBER": "a number", "DIMS3": "a size such as 64x64x16", "FACTOR": "a factor such as x3",
    "LBRACE": "'{'", "RBRACE": "'}'", "LPAR": "'('", "RPAR": "')'", "COMMA": "','", "X": "'x'",
    "$END": "the end of the file", "AUTO": "'auto'", "RUNTIME": "'runtime'", "SPLIT": "'split'",
}


def _token_name(name: str) -> str:
    if name in _TOKEN_NAMES:
        return _TOKEN_NAMES[name]
    return f"'{name.lower()}'"  # anonymous keyword terminals are named after their text: DTYPE -> 'dtype'


@cache
def _lark() -> Lark:
    grammar = (Path(__file__).parent / "gemmc.lark").read_text()
    return Lark(grammar, parser="lalr", lexer="basic", propagate_positions=True, maybe_placeholders=False)


def _word(tok: Token) -> Word:
    return Word(str(tok), Span(tok.line or 0, tok.column or 0, tok.end_column))


def _span(meta: lark.tree.Meta) -> Span:
    if getattr(meta, "empty", True):
        return Span(0, 0)
    return Span(meta.line, meta.column, meta.end_column if meta.end_line == meta.line else None)


class _ToAst(Transformer):
    """Every statement becomes a `Stmt(keyword, words)`; `dims` flattens to three words."""

    @v_args(meta=True)
    def start(self, meta, items):
        targets = tuple(i for i in items if isinstance(i, TargetDecl))
        kernels = tuple(i for i in items if isinstance(i, KernelDecl))
        groups = tuple(i for i in items if isinstance(i, GroupDecl))
        return Module(targets, kernels, groups)

    @v_args(meta=True)
    def target(self, meta, toks):
        return TargetDecl(_word(toks[0]), _word(toks[1]), _span(meta))

    @v_args(meta=True)
    def kernel(self, meta, items):
        return KernelDecl(_word(items[0]), tuple(items[1:]), _span(meta))

    @v_args(meta=True)
    def group(self, meta, items):
        stmts = tuple(i for i in items[1:] if isinstance(i, Stmt))
        members = tuple(i for i in items[1:] if isinstance(i, MemberDecl))
        return GroupDecl(_word(items[0]), stmts, members, _span(meta))

    @v_args(meta=True)
    def member(self, meta, items):
        copies = _word(items[3]) if len(items) > 2 and isinstance(items[2], Token) else None
        body = items[-1] if items and isinstance(items[-1], tuple) else ()
        return MemberDecl(_word(items[0]), tuple(items[1]), copies, body, _span(meta))

    def member_body(self, items):
        return tuple(items)

    def dims(self, toks):
        if len(toks) == 1:  # one DIMS3 token such as 64x64x16: split it, keeping each part's column
            tok = toks[0]
            words, col = [], tok.column
            for part in str(tok).split("x"):
                words.append(Word(part, Span(tok.line, col, col + len(part))))
                col += len(part) + 1
            return words
        return [_word(t) for t in toks]

    tile_dims = dims
    member_dims = dims

    def layout_item(self, toks):
        return [_word(t) for t in toks]

    dtype_item = layout_item

    def entry(self, items):
        return [_word(items[0]), *items[1]]

    def __default__(self, data, children, meta):
        words: list[Word] = []
        for child in children:
            if isinstance(child, Token):
                words.append(_word(child))
            else:
                words.extend(child)
        span = _span(meta)
        return Stmt(str(data), tuple(words), span)


def _suggest(word: str, choices: tuple[str, ...]) -> str | None:
    close = difflib.get_close_matches(word, choices, n=1)
    return f"did you mean '{close[0]}'?" if close else None


def _syntax_error(err: lark.exceptions.UnexpectedInput) -> Diagnostic:
    line, col = err.line or 1, err.column or 1
    if isinstance(err, lark.exceptions.UnexpectedCharacters):
        return Diagnostic("E100", f"unexpected character {err.char!r}", Span(line, col))
    if isinstance(err, lark.exceptions.UnexpectedToken):
        tok = err.token
        expected = set(err.expected)
        if tok.type == "$END":
            names = ", ".join(sorted(_token_name(e) for e in expected))
            return Diagnostic("E100", f"unexpected end of file; expected {names}", Span(line, col),
                              hint="is a '}' missing?")
        text = str(tok)
        span = Span(tok.line or line, tok.column or col, tok.end_column)
        if tok.type == "NAME" and "DTYPE" in expected:
            return Diagnostic("E101", f"unknown statement '{text}'", span,
                              _suggest(text, STATEMENT_KEYWORDS) or "statements: " + ", ".join(STATEMENT_KEYWORDS))
        if tok.type == "NAME" and expected <= {"TARGET", "KERNEL", "GROUP", "$END"}:
            return Diagnostic("E101", f"unknown keyword '{text}'", span,
                              _suggest(text, TOP_KEYWORDS) or "a file holds 'target', 'kernel' and 'group' "
                              "declarations")
        names = " or ".join(sorted(_token_name(e) for e in expected))
        found = _token_name(tok.type)
        found = found if found.startswith("'") else f"{found} '{text}'"
        hint = None
        if "NAME" in expected and tok.type != "NAME" and text.isidentifier():  # `gemm x ...`, `kernel auto`
            hint = f"'{text}' is a word of the language and cannot be a name (docs/LANGUAGE.md, \"Reserved names\")"
        return Diagnostic("E100", f"expected {names}, found {found}", span, hint)
    return Diagnostic("E100", str(err).splitlines()[0], Span(line, col))


def parse(text: str, filename: str = "<string>") -> Module:
    """Parse schedule text into an AST; raise GemmcError (E100/E101) on a syntax error."""
    try:  # Lark counts lines by \n alone: give it \n for every line break the error renderer knows (\r\n, \r)
        tree = _lark().parse(LINE_BREAK.sub("\n", text))
    except lark.exceptions.UnexpectedInput as err:
        raise GemmcError(_syntax_error(err), filename=filename, source=text) from None
    return _ToAst().transform(tree)

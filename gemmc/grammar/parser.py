"""Text -> AST. Lark's errors are translated into gemmc diagnostics with human names for tokens."""

from __future__ import annotations

import difflib
import re
from functools import cache
from pathlib import Path

import lark
from lark import Lark, Token, Transformer, v_args

from gemmc.errors import LINE_BREAK, Diagnostic, GemmcError
from gemmc.grammar.ast import GroupDecl, KernelDecl, MemberDecl, Module, Stmt, TargetDecl, Word
from gemmc.ir.types import SPLITS, STORAGE_DTYPES, DType
from gemmc.span import Span

STATEMENT_KEYWORDS = ("dtype", "layout", "alpha", "beta", "batch", "gemm", "tile", "threads", "batching",
                      "precision", "pipeline", "algorithm", "tlp", "grouped")
TOP_KEYWORDS = ("target", "kernel", "group")
OPERANDS = ("A", "B", "C")
SPLIT_TYPES = ("f16", "bf16", "tf32")
_SPLIT_GLUED = re.compile(r"(" + "|".join(SPLIT_TYPES) + r")x(\d+)")

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


def glued_split(word: str) -> str | None:
    """`split T xN` for a word that glues a split's type and factor together (`tf32x3`), where that split exists;
    None for any other word. The parser's and the lowering's hints for a glued split both come from it."""
    glued = _SPLIT_GLUED.fullmatch(word)
    if glued is None or (DType(glued[1]), int(glued[2])) not in SPLITS:
        return None
    return f"split {glued[1]} x{int(glued[2])}"


def unknown_statement(word: Word, hint: str | None = None) -> Diagnostic:
    """E101 at a word where a statement's keyword goes, with the closest keyword, else `hint`, else the list of
    them."""
    return Diagnostic("E101", f"unknown statement '{word.text}'", word.span, _suggest(word.text, STATEMENT_KEYWORDS)
                      or hint or "statements: " + ", ".join(STATEMENT_KEYWORDS))


def swallowed_statement(first: str, second: str) -> bool:
    """Whether a dtype's item `first second` is `dtype T` and a misspelt statement: the grammar reads
    `dtype bf16 layuot` as the item (operand bf16, type layuot), since a statement's keyword is a name like any
    other to it. An item with an operand or a type in it stays an item, in any case (`dtype a bfloat16`, `dtype bf16
    C`: a bad operand or type, which lowering names)."""
    words = (first.upper(), second.upper())
    return not any(w in OPERANDS for w in words) and second.lower() not in {d.value for d in STORAGE_DTYPES}


# The token types of the keywords that open a statement (a group's `concurrency` too): anonymous terminals are
# named after their text.
_STATEMENT_TOKENS = frozenset(k.upper() for k in (*STATEMENT_KEYWORDS, "concurrency"))
_TOP_TOKENS = frozenset(("TARGET", "KERNEL", "GROUP", "$END"))  # what the file level expects
_NAMED_BY = frozenset(("KERNEL", "GROUP", "GEMM"))  # the token before a kernel's, a group's or a member's name
_NAME_RUN = re.compile(r"[A-Za-z0-9_]+(?:[-.][A-Za-z0-9_]+)*")

TILE_HINT = "a tile is BM x BN x BK, e.g. `tile 128x128x64`"
GEMM_SIZE_HINT = "a GEMM's size is M x N x K, three numbers: `gemm 4096 x 1024 x 512`"
MEMBER_HINT = "a group's members are named: `gemm q 64 x 64 x 64`"
GEMM_NAME_HINT = ("a kernel's `gemm` has no name; name problems in `batch { q 64 x 64 x 64 }`, or put named GEMMs "
                  "in a `group`")
SCALAR_HINT = "alpha and beta are numbers (`alpha 0.125`) or `runtime`"
COPIES_HINT = "in a group, a member's copies are `copies N`: `gemm q 4096 x 1024 x 1024 copies 3`"
GROUP_MEMBER_HINT = ("a group's members are `gemm NAME M x N x K` lines; a batch (`batch { }`, `grouped`) is a "
                     "`kernel` of its own")
ITEMS_HINT = ("per-operand items are separated by commas: `dtype A bf16, B bf16, C f32`, `layout A row, B col`; a "
              "dtype may also be one type for all three (`dtype bf16`)")
TOP_STATEMENT_HINT = "statements go inside `kernel NAME { ... }` or `group NAME { ... }`"
SPLIT_HINT = "a split names its type and its factor apart: `precision split tf32 x3`"


def _stack(err: lark.exceptions.UnexpectedInput) -> list:
    """The LALR parser's value stack where the error came (tokens, and trees of the rules already reduced)."""
    parser = getattr(err, "interactive_parser", None)
    return list(parser.parser_state.value_stack) if parser is not None else []


def _open_statement(stack: list) -> tuple[Token, ...]:
    """The statement the parser was reading: its keyword and the words after it, or () between statements (or
    inside a batch's braces, a member's or a dtype's second item, whose words sit under reduced trees)."""
    for i in range(len(stack) - 1, -1, -1):
        value = stack[i]
        if not isinstance(value, Token) or value.type in ("LBRACE", "RBRACE"):
            return ()
        if value.type in _STATEMENT_TOKENS:
            return tuple(stack[i:])
    return ()


def _missing_comma(stack: list, stmt: tuple[Token, ...], tok: Token) -> bool:
    """Whether the parser was reading a dtype's or a layout's per-operand items where `tok` came, and an operand
    among them or `tok` says a ',' is missing (`dtype A bf16 B bf16`, `layout A col, B col C row`, `dtype bf16 C
    f32`) rather than a statement misspelt."""
    in_items = bool(stmt) and stmt[0].type in ("DTYPE", "LAYOUT")
    after_comma = len(stack) >= 3 and isinstance(stack[-3], Token) and stack[-3].type == "COMMA"
    return (in_items or after_comma) and any(str(w).upper() in OPERANDS for w in (*stmt[1:], tok))


def _name_hint(stack: list, source: str, end: int) -> str | None:
    """The hint for a kernel's, group's, member's or problem's name that goes on with a character no name holds
    (`moe-up`, `v1.5`), the bad character or token at `end`, right after the name on top of the stack."""
    if len(stack) < 2 or not isinstance(stack[-1], Token) or stack[-1].type != "NAME" or stack[-1].end_pos != end:
        return None
    before = stack[-2]
    in_batch = any(isinstance(v, Token) and v.type == "BATCH" for v in stack[-4:-1])  # a batch's braces are open
    if not (isinstance(before, Token) and before.type in _NAMED_BY) and not in_batch:
        return None
    run = _NAME_RUN.match(source, stack[-1].start_pos or 0)
    if run is None or run.end() <= end:
        return None
    return f"names are identifiers: letters, digits and _ (`{re.sub(r'[-.]', '_', run.group())}`)"


def _syntax_error(err: lark.exceptions.UnexpectedInput, source: str) -> Diagnostic:
    """`source`: the schedule as Lark read it (line breaks made \\n), for the names a hint spells out."""
    line, col = err.line or 1, err.column or 1
    stack = _stack(err)
    stmt = _open_statement(stack)
    if isinstance(err, lark.exceptions.UnexpectedCharacters):
        hint = _name_hint(stack, source, err.pos_in_stream or 0)
        if hint is None and stmt and stmt[0].type in ("ALPHA", "BETA"):
            hint = SCALAR_HINT
        return Diagnostic("E100", f"unexpected character {err.char!r}", Span(line, col), hint)
    if isinstance(err, lark.exceptions.UnexpectedToken):
        tok = err.token
        expected = set(err.expected)
        if tok.type == "$END":
            names = ", ".join(sorted(_token_name(e) for e in expected))
            return Diagnostic("E100", f"unexpected end of file; expected {names}", Span(line, col),
                              hint="is a '}' missing?")
        text = str(tok)
        span = Span(tok.line or line, tok.column or col, tok.end_column)
        if len(stmt) == 3 and stmt[0].type == "DTYPE" and swallowed_statement(str(stmt[1]), str(stmt[2])):
            return unknown_statement(_word(stmt[2]))  # `dtype bf16 layuot B col`: at `layuot`, not at `B`
        if tok.type == "NAME" and "DTYPE" in expected:
            return unknown_statement(Word(text, span), ITEMS_HINT if _missing_comma(stack, stmt, tok) else None)
        if tok.type == "NAME" and expected <= _TOP_TOKENS:
            return Diagnostic("E101", f"unknown keyword '{text}'", span,
                              _suggest(text, TOP_KEYWORDS) or "a file holds 'target', 'kernel' and 'group' "
                              "declarations")
        glued = _glued_split_type(stmt, expected)
        if glued is not None:
            return glued
        short = _short_size(stmt, tok, expected, span, source)
        if short is not None:
            return short
        names = " or ".join(sorted(_token_name(e) for e in expected))
        found = _token_name(tok.type)
        found = found if found.startswith("'") else f"{found} '{text}'"
        hint = _token_hint(tok, expected, stack, stmt, source)
        return Diagnostic("E100", f"expected {names}, found {found}", span, hint)
    return Diagnostic("E100", str(err).splitlines()[0], Span(line, col))


def _glued_split_type(stmt: tuple[Token, ...], expected: set[str]) -> Diagnostic | None:
    """`precision split f16x3`: the lexer reads `f16x3` as the split's type, and the parser stops at the token after
    it, where it wants the factor. Reported at the glued word, the one to change, not at the token after it."""
    if len(stmt) != 3 or stmt[0].type != "PRECISION" or stmt[2].type != "NAME" or "FACTOR" not in expected:
        return None
    word = str(stmt[2])
    if _SPLIT_GLUED.fullmatch(word) is None:
        return None  # `split f16 }`, `split half x3`: the factor is missing where the parser stopped
    meant = glued_split(word)
    return Diagnostic("E100", f"a split's type and factor are written as one word '{word}'", _word(stmt[2]).span,
                      f"did you mean `{meant}`?" if meant else SPLIT_HINT)


def _short_size(stmt: tuple[Token, ...], tok: Token, expected: set[str], span: Span, source: str
                ) -> Diagnostic | None:
    """A tile's or a GEMM's size of fewer than three numbers (`tile 128x128`, `gemm 4 x 4`), where the parser wants
    the 'x' before the third: said so, at the token after the last number (`x128` in `128x128` is one more size).
    Not where more of the size follows (`gemm 64 64 64`, `tile 128x128 x 64`): the parser's own message names the
    missing 'x' there."""
    if not stmt or stmt[0].type not in ("TILE", "GEMM") or "X" not in expected:
        return None
    after = source[tok.end_pos or 0:].lstrip(" \t")[:1] if tok.type == "FACTOR" else ""
    if tok.type not in ("FACTOR", "RBRACE", *_STATEMENT_TOKENS) or after[:1].lower() == "x" or after.isdigit():
        return None
    sizes = sum(t.type == "NUMBER" for t in stmt[1:]) + (tok.type == "FACTOR")
    if sizes >= 3:
        return None
    if stmt[0].type == "TILE":
        return Diagnostic("E100", f"a tile has three sizes; found {sizes}", span, TILE_HINT)
    return Diagnostic("E100", f"a GEMM's size has three numbers; found {sizes}", span, GEMM_SIZE_HINT)


def _token_hint(tok: Token, expected: set[str], stack: list, stmt: tuple[Token, ...], source: str) -> str | None:
    """How to write what the parser expected where it found `tok`."""
    word = str(tok)
    if "NAME" in expected and tok.type != "NAME" and word.isidentifier():  # `gemm x ...`, `kernel auto`
        return f"'{word}' is a word of the language and cannot be a name (docs/LANGUAGE.md, \"Reserved names\")"
    if tok.type in _STATEMENT_TOKENS and expected <= _TOP_TOKENS:
        return TOP_STATEMENT_HINT
    if tok.type == "COUNT" and "COPIES" in expected:
        return COPIES_HINT
    if tok.type in ("BATCH", "GROUPED") and "CONCURRENCY" in expected:
        return GROUP_MEMBER_HINT
    if tok.type == "NUMBER" and word[0] in "-.":  # `kernel moe-1b`, `kernel v1.5`: `-1b`, `.5` read as numbers
        hint = _name_hint(stack, source, tok.start_pos or 0)
        if hint:
            return hint
    if not stmt:
        return None
    keyword, words = stmt[0].type, stmt[1:]
    if keyword == "TILE" and "X" in expected:
        return TILE_HINT
    if keyword == "GEMM" and "X" in expected:
        return GEMM_SIZE_HINT
    if keyword in ("ALPHA", "BETA") and not words:
        return SCALAR_HINT
    if keyword == "PRECISION" and "FACTOR" in expected:
        return SPLIT_HINT
    if keyword == "GEMM" and not words and "NAME" in expected:
        return MEMBER_HINT
    if keyword == "GEMM" and not words and tok.type == "NAME":
        return GEMM_NAME_HINT
    return None


def parse(text: str, filename: str = "<string>") -> Module:
    """Parse schedule text into an AST; raise GemmcError (E100/E101) on a syntax error."""
    lines = LINE_BREAK.sub("\n", text)  # Lark counts lines by \n alone: \n for every break the renderer knows
    try:
        tree = _lark().parse(lines)
    except lark.exceptions.UnexpectedInput as err:
        raise GemmcError(_syntax_error(err, lines), filename=filename, source=text) from None
    return _ToAst().transform(tree)

"""Parsing and lowering: every construct of the language, and the exact text of every kind of error."""

from __future__ import annotations

import pytest

import gemmc
from gemmc.api import front_end
from gemmc.errors import Diagnostic
from gemmc.grammar.parser import ITEMS_HINT, SPLIT_HINT
from gemmc.ir.nodes import Problem, TileShape
from gemmc.ir.types import Batching, DType, Layout, Precision, TileMode
from tests.conftest import ROOT

FULL = """
# comments start with '#'
target cuda sm_80

kernel inception3 {
  dtype  f32
  layout A row, B col, C col
  alpha  2.5
  beta   runtime
  batch {
    b1x1   196 x 192 x 192
    b3x3r  196 x 16  x 192   # a trailing comment
  }
  tile      64x32x16
  threads   128
  batching  none
  precision f32
  pipeline  stages 1
  algorithm simt
  tlp threshold 5000
}

kernel strided { dtype f64 gemm 512 x 256 x 128 count 64 tile auto(uniform) batching threshold }
kernel emulated { precision split f16 x3 method le gemm 8 x 8 x 8 }
"""


def test_every_construct_lowers():
    prog = front_end(FULL)
    assert prog.target.arch == "sm_80"
    k, s, sp = prog.kernels
    assert (k.dtype, k.layout_a, k.layout_b, k.layout_c) == (DType.F32, Layout.ROW, Layout.COL, Layout.COL)
    assert (k.alpha, k.beta) == (2.5, None)
    assert k.problems == (Problem("b1x1", 196, 192, 192), Problem("b3x3r", 196, 16, 192))
    assert (k.tile, k.threads, k.batching, k.stages) == (TileShape(64, 32, 16), 128, Batching.NONE, 1)
    assert (k.precision, k.algorithm, k.tlp_threshold) == (Precision(DType.F32), "simt", 5000)
    assert (s.count, s.dtype, s.tile, s.tile_mode) == (64, DType.F64, None, TileMode.UNIFORM)
    assert s.batching is Batching.THRESHOLD
    assert sp.precision == Precision(DType.F16, 3, "le")


def test_spans_point_at_values():
    prog = front_end(FULL)
    k = prog.kernels[0]
    assert (k.problems[1].span.line, k.problems[1].span.column) == (12, 5)
    assert k.where("tile").line == 14


def test_spaced_and_packed_sizes_agree():
    a = front_end("kernel k { gemm 3 x 4 x 5 tile 16 x 16 x 8 }").kernels[0]
    b = front_end("kernel k { gemm 3x4x5 tile 16x16x8 }").kernels[0]
    assert a == b


def test_default_target_is_sm90_and_command_line_overrides():
    assert front_end("kernel k { gemm 1 x 1 x 1 }").target.arch == "sm_90"
    assert front_end("target cuda sm_80 kernel k { gemm 1 x 1 x 1 }", target="hip").target.arch == "gfx90a"


BAD = {
    "syntax": "kernel k {\n  gemm 4 x 4\n}\n",
    "unknown_statement": "kernel k {\n  gemm 4 x 4 x 4\n  tiles 64x64x8\n}\n",
    "unknown_keyword": "kernal k { gemm 4 x 4 x 4 }\n",
    "eof": "kernel k {\n  gemm 4 x 4 x 4\n",
    "bad_char": "kernel k { gemm 4 x 4 x 4 ; }\n",
    "sizes": "kernel k {\n  batch {\n    a 0 x 4 x 4\n    b 4 x -3 x 4\n    c 4 x 4 x 2.5\n  }\n}\n",
    "duplicates": "kernel k { batch { a 1 x 1 x 1\n a 2 x 2 x 2 } }\nkernel k {\n gemm 1 x 1 x 1 }\n",
    "twice": "kernel k {\n  gemm 1 x 1 x 1\n  tile auto\n  tile 64x64x8\n}\n",
    "unknown_values": "kernel k {\n  dtype f8\n  layout A diagonal\n  algorithm fast\n  gemm 1 x 1 x 1\n}\n",
    "target": "target cuda sm_75\nkernel k { gemm 1 x 1 x 1 }\n",
    "vendor": "target metal m3\nkernel k { gemm 1 x 1 x 1 }\n",
    "no_problems": "kernel k {\n  dtype f32\n}\n",
    "empty_file": "# nothing here\n",
    "dtype_precision": "kernel k {\n  dtype f64\n  precision f32\n  gemm 1 x 1 x 1\n}\n",
    "bad_split": "kernel k {\n  precision split f16 x5\n  gemm 1 x 1 x 1\n}\n",
    "split_method": "kernel k {\n  precision split bf16 x3 method le\n  gemm 1 x 1 x 1\n}\n",
    "threads": "kernel k {\n  gemm 64 x 64 x 64\n  tile 64x64x8\n  threads 100\n}\n",
    "threads_limit": "kernel k {\n  gemm 64 x 64 x 64\n  threads 2048\n}\n",
    "smem": "kernel k {\n  gemm 64 x 64 x 64\n  tile 1024x1024x32\n  threads 1024\n}\n",
    "registers": "kernel k {\n  gemm 64 x 64 x 64\n  tile 256x256x8\n  threads 64\n}\n",
    "micro_tile": "kernel k {\n  gemm 64 x 64 x 64\n  tile 30x30x8\n  threads 64\n}\n",
    "simt_stages": "kernel k {\n  gemm 64 x 64 x 64\n  pipeline stages 3\n}\n",
    "kslices": "kernel k {\n  gemm 64 x 64 x 64\n  tile 32x32x8 kslices 3\n}\n",
    "kslices_threads": "kernel k {\n  gemm 64 x 64 x 64\n  tile 32x32x32 kslices 4\n  threads 96\n}\n",
    "kslices_block": "kernel k {\n  gemm 64 x 64 x 64\n  tile 128x128x16 kslices 8\n}\n",
    "kslices_tensorcore": "kernel k {\n  gemm 64 x 64 x 64\n  precision f16\n  tile 64x64x32 kslices 2\n}\n",
    "several_kernels": "kernel a {\n  gemm 1 x 1 x 1\n  threads 33\n}\nkernel b {\n  dtype f64\n  precision f16\n"
                       "  gemm 1 x 1 x 1\n}\n",
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_error_text(name, golden):
    with pytest.raises(gemmc.GemmcError) as info:
        gemmc.compile_string(BAD[name], filename=f"{name}.gs")
    golden(f"errors/{name}.txt", info.value.render() + "\n")


def test_errors_report_every_problem():
    with pytest.raises(gemmc.GemmcError) as info:
        gemmc.compile_string(BAD["sizes"], filename="s.gs")
    assert [d.code for d in info.value.diagnostics] == ["E201", "E201", "E102"]


@pytest.mark.parametrize("text, word", [("group g { gemm x 512 x 64 x 64 copies 4 }", "x"),
                                        ("kernel auto { gemm 4 x 4 x 4 }", "auto"),
                                        ("kernel k { batch { split 4 x 4 x 4 } }", "split")])
def test_a_reserved_word_where_a_name_goes_says_so(text, word):
    with pytest.raises(gemmc.GemmcError) as info:
        gemmc.compile_string(text)
    (d,) = info.value.diagnostics
    assert d.code == "E100" and d.hint == f"'{word}' is a word of the language and cannot be a name " \
        '(docs/LANGUAGE.md, "Reserved names")'


# Error positions: lines are broken by \n, \r\n and \r only, in the parser and in the rendered line alike; form feeds,
# vertical tabs and U+2028 are whitespace within a line (shown as a space); tabs are expanded to 8 columns in the
# shown line and under it. The column in the header counts characters.
POSITIONS = {
    "form_feed": ("kernel k {\f gemm 0 x 4 x 4 }\n",
                  "p.gs:1:18: error[E201]: M must be at least 1, not 0\n"
                  "    kernel k {  gemm 0 x 4 x 4 }\n"
                  "                     ^"),
    "vertical_tab": ("kernel k {\v gemm 0 x 4 x 4 }\n",
                     "p.gs:1:18: error[E201]: M must be at least 1, not 0\n"
                     "    kernel k {  gemm 0 x 4 x 4 }\n"
                     "                     ^"),
    "line_separator": ("kernel k {\u2028 gemm 0 x 4 x 4 }\n",
                       "p.gs:1:18: error[E201]: M must be at least 1, not 0\n"
                       "    kernel k {  gemm 0 x 4 x 4 }\n"
                       "                     ^"),
    "bare_cr": ("kernel k {\r  gemm 0 x 4 x 4\r}\r",
                "p.gs:2:8: error[E201]: M must be at least 1, not 0\n"
                "      gemm 0 x 4 x 4\n"
                "           ^"),
    "crlf": ("kernel k {\r\n  gemm 0 x 4 x 4\r\n}\r\n",
             "p.gs:2:8: error[E201]: M must be at least 1, not 0\n"
             "      gemm 0 x 4 x 4\n"
             "           ^"),
    "comment_ended_by_cr": ("kernel k { # a comment\r  gemm 0 x 4 x 4 }\n",
                            "p.gs:2:8: error[E201]: M must be at least 1, not 0\n"
                            "      gemm 0 x 4 x 4 }\n"
                            "           ^"),
    "leading_tab": ("kernel k {\n\tgemm 0 x 4 x 4\n}\n",
                    "p.gs:2:7: error[E201]: M must be at least 1, not 0\n"
                    "            gemm 0 x 4 x 4\n"
                    "                 ^"),
    "tab_before": ("kernel k {\n  gemm 4 x\t0 x 4\n}\n",
                   "p.gs:2:12: error[E201]: N must be at least 1, not 0\n"
                   "      gemm 4 x      0 x 4\n"
                   "                    ^"),
    "tabs_inside": ("kernel k {\n  gemm 4 x 4 x 4\n  tile\t32x32x8\tkslices 3\n}\n",
                    "p.gs:3:3: error[E202]: kslices 3 does not divide the tile's K step 8\n"
                    "      tile  32x32x8 kslices 3\n"
                    "      ^^^^^^^^^^^^^^^^^^^^^^^\n"
                    "hint: use a K step that is a multiple of 3"),
    "bad_character_after_a_tab": ("kernel k {\n\tgemm 4 x 4 x 4 ;\n}\n",
                                  "p.gs:2:17: error[E100]: unexpected character ';'\n"
                                  "            gemm 4 x 4 x 4 ;\n"
                                  "                           ^"),
}


def test_caret_line_counts_wide_and_invisible_characters():
    from gemmc.errors import caret_line

    assert caret_line("a\tb", 3, 4) == ("a       b", "        ^")
    assert caret_line("\u4e2d x", 3, 4) == ("\u4e2d x", "   ^")  # a wide character takes two columns
    assert caret_line("ab", 5, None) == ("ab", "    ^")  # past the end of the line
    assert caret_line("a\x1bb", 3, 4) == ("a b", "  ^")


def test_file_names_render_on_one_line():
    with pytest.raises(gemmc.GemmcError) as info:
        gemmc.compile_string("kernel k { gemm 0 x 1 x 1 }", filename="a\nb.gs")
    assert info.value.render().startswith("a\\nb.gs:1:17: error[E201]")


# A statement, an operand's layout, a tile option or a problem given twice: refused at the second, naming the first.
TWICE = {
    "layout": ("kernel k {\n  layout A col, A row\n  gemm 4 x 4 x 4\n}\n",
               "d.gs:2:17: error[E200]: the layout of A is given twice\n"
               "      layout A col, A row\n"
               "                    ^\n"
               "hint: the first is on this line, column 10"),
    "layout_over_lines": ("kernel k {\n  layout A col, B row,\n         A row\n  gemm 4 x 4 x 4\n}\n",
                          "d.gs:3:10: error[E200]: the layout of A is given twice\n"
                          "             A row\n"
                          "             ^\n"
                          "hint: the first is on line 2"),
    "tile_option": ("kernel k {\n  tile 64x64x16 kslices 2 kslices 4\n  gemm 4 x 4 x 4\n}\n",
                    "d.gs:2:27: error[E200]: 'kslices' is given twice in the tile\n"
                    "      tile 64x64x16 kslices 2 kslices 4\n"
                    "                              ^^^^^^^\n"
                    "hint: the first is on this line, column 17"),
    "batch_and_gemm": ("kernel k {\n  batch { p 4 x 4 x 4 }\n  gemm 4 x 4 x 4\n}\n",
                       "d.gs:3:3: error[E200]: 'gemm' and 'batch' both give the problems in kernel 'k'\n"
                       "      gemm 4 x 4 x 4\n"
                       "      ^^^^^^^^^^^^^^\n"
                       "hint: the first is on line 2"),
    "same_line": ("kernel k { alpha 1 alpha 2 gemm 4 x 4 x 4 }\n",
                  "d.gs:1:20: error[E200]: 'alpha' is given twice in kernel 'k'\n"
                  "    kernel k { alpha 1 alpha 2 gemm 4 x 4 x 4 }\n"
                  "                       ^^^^^^^\n"
                  "hint: the first is on this line, column 12"),
    "target": ("target cuda sm_80\ntarget cuda sm_90\nkernel k { gemm 4 x 4 x 4 }\n",
               "d.gs:2:1: error[E200]: 'target' is given twice\n"
               "    target cuda sm_90\n"
               "    ^^^^^^^^^^^^^^^^^\n"
               "hint: a file has one target; the first is on line 1"),
}


@pytest.mark.parametrize("name", sorted(TWICE))
def test_given_twice_points_at_the_second_and_names_the_first(name):
    text, expected = TWICE[name]
    with pytest.raises(gemmc.GemmcError) as info:
        gemmc.compile_string(text, filename="d.gs")
    assert info.value.render() == expected

GROUP_EXPECTED = ("expected 'algorithm' or 'alpha' or 'batching' or 'beta' or 'concurrency' or 'dtype' or 'gemm' or "
                  "'layout' or 'pipeline' or 'precision' or 'threads' or 'tile' or 'tlp' or '}'")
GROUP_MEMBER = ("a group's members are `gemm NAME M x N x K` lines; a batch (`batch { }`, `grouped`) is a `kernel` "
                "of its own")

# Mistakes a newcomer makes, each reported at the word to change with a hint that spells the schedule right. After
# `dtype T` a misspelt statement reads to the grammar as a per-operand item (`bf16 layuot`): it is still reported at
# the misspelt word, as it is after any other statement.
HINTS = {
    "dtype_then_misspelt_layout": ('kernel k {\n  dtype bf16 layuot B col\n  gemm 64 x 64 x 64\n}\n',
        "p.gs:2:14: error[E101]: unknown statement 'layuot'\n"
        '      dtype bf16 layuot B col\n'
        '                 ^^^^^^\n'
        "hint: did you mean 'layout'?"),
    "dtype_then_misspelt_alpha": ('kernel k {\n  dtype bf16 aplha 2.0\n  gemm 64 x 64 x 64\n}\n',
        "p.gs:2:14: error[E101]: unknown statement 'aplha'\n"
        '      dtype bf16 aplha 2.0\n'
        '                 ^^^^^\n'
        "hint: did you mean 'alpha'?"),
    "dtype_then_misspelt_word_at_the_end": ('kernel k {\n  gemm 64 x 64 x 64\n  dtype bf16 aplha\n}\n',
        "p.gs:3:14: error[E101]: unknown statement 'aplha'\n"
        '      dtype bf16 aplha\n'
        '                 ^^^^^\n'
        "hint: did you mean 'alpha'?"),
    "group_dtype_then_misspelt_layout": ('group g {\n  dtype bf16 layuot B col\n  gemm q 64 x 64 x 64\n}\n',
        "p.gs:2:14: error[E101]: unknown statement 'layuot'\n"
        '      dtype bf16 layuot B col\n'
        '                 ^^^^^^\n'
        "hint: did you mean 'layout'?"),
    "split_written_as_one_word": ('kernel k {\n  gemm 64 x 64 x 64\n  precision tf32x3\n}\n',
        "p.gs:3:13: error[E204]: unknown precision 'tf32x3'\n"
        '      precision tf32x3\n'
        '                ^^^^^^\n'
        'hint: did you mean `split tf32 x3`?'),
    "split_type_and_factor_glued": ('kernel k {\n  gemm 64 x 64 x 64\n  precision split f16x3\n}\n',
        "p.gs:3:19: error[E100]: a split's type and factor are written as one word 'f16x3'\n"
        '      precision split f16x3\n'
        '                      ^^^^^\n'
        'hint: did you mean `split f16 x3`?'),
    "dtype_of_b_alone": ('kernel k {\n  gemm 64 x 64 x 64\n  dtype B bf16\n}\n',
        "p.gs:3:9: error[E202]: A is f32 but B is bf16: A and B share one storage type\n"
        '      dtype B bf16\n'
        '            ^\n'
        'hint: write `dtype A bf16, B bf16` or `dtype bf16` (C too)'),
    "dtype_of_a_and_c": ('kernel k {\n  gemm 64 x 64 x 64\n  dtype C f32, A f16\n}\n',
        "p.gs:3:16: error[E202]: A is f16 but B is f32: A and B share one storage type\n"
        '      dtype C f32, A f16\n'
        '                   ^\n'
        'hint: write `dtype A f16, B f16, C f32`'),
    "tile_of_two_sizes": ('kernel k {\n  gemm 64 x 64 x 64\n  tile 128x128\n}\n',
        "p.gs:3:11: error[E100]: a tile has three sizes; found 2\n"
        '      tile 128x128\n'
        '              ^^^^\n'
        'hint: a tile is BM x BN x BK, e.g. `tile 128x128x64`'),
    "gemm_of_two_sizes": ('kernel k {\n  gemm 4 x 4\n}\n',
        "p.gs:3:1: error[E100]: a GEMM's size has three numbers; found 2\n"
        '    }\n'
        '    ^\n'
        "hint: a GEMM's size is M x N x K, three numbers: `gemm 4096 x 1024 x 512`"),
    "member_of_two_sizes": ('group g {\n  gemm q 4 x 4 }\n',
        "p.gs:2:16: error[E100]: a GEMM's size has three numbers; found 2\n"
        '      gemm q 4 x 4 }\n'
        '                   ^\n'
        "hint: a GEMM's size is M x N x K, three numbers: `gemm 4096 x 1024 x 512`"),
    "unnamed_member": ('group g {\n  gemm 64 x 64 x 64\n}\n',
        "p.gs:2:8: error[E100]: expected a name, found a number '64'\n"
        '      gemm 64 x 64 x 64\n'
        '           ^^\n'
        "hint: a group's members are named: `gemm q 64 x 64 x 64`"),
    "named_kernel_gemm": ('kernel k {\n  gemm q 64 x 64 x 64\n}\n',
        "p.gs:2:8: error[E100]: expected a number or a size such as 64x64x16, found a name 'q'\n"
        '      gemm q 64 x 64 x 64\n'
        '           ^\n'
        "hint: a kernel's `gemm` has no name; name problems in `batch { q 64 x 64 x 64 }`, or put named GEMMs "
        "in a `group`"),
    "dash_in_a_kernel_name": ('kernel moe-up {\n  gemm 64 x 64 x 64\n}\n',
        "p.gs:1:11: error[E100]: unexpected character '-'\n"
        '    kernel moe-up {\n'
        '              ^\n'
        'hint: names are identifiers: letters, digits and _ (`moe_up`)'),
    "dash_digit_in_a_group_name": ('group moe-1b {\n  gemm q 64 x 64 x 64\n}\n',
        "p.gs:1:10: error[E100]: expected '{', found a number '-1'\n"
        '    group moe-1b {\n'
        '             ^^\n'
        'hint: names are identifiers: letters, digits and _ (`moe_1b`)'),
    "dash_in_a_problem_name": ('kernel k {\n  batch {\n    a 1 x 1 x 1\n    up-proj 64 x 64 x 64\n  }\n}\n',
        "p.gs:4:7: error[E100]: unexpected character '-'\n"
        '        up-proj 64 x 64 x 64\n'
        '          ^\n'
        'hint: names are identifiers: letters, digits and _ (`up_proj`)'),
    "alpha_expression": ('kernel k {\n  gemm 64 x 64 x 64\n  alpha 1/sqrt(64)\n}\n',
        "p.gs:3:10: error[E100]: unexpected character '/'\n"
        '      alpha 1/sqrt(64)\n'
        '             ^\n'
        'hint: alpha and beta are numbers (`alpha 0.125`) or `runtime`'),
    "beta_of_a_name": ('kernel k {\n  gemm 64 x 64 x 64\n  beta one\n}\n',
        "p.gs:3:8: error[E100]: expected 'runtime' or a number, found a name 'one'\n"
        '      beta one\n'
        '           ^^^\n'
        'hint: alpha and beta are numbers (`alpha 0.125`) or `runtime`'),
    "statement_at_file_level": ('layout B col\nkernel k {\n  gemm 64 x 64 x 64\n}\n',
        "p.gs:1:1: error[E100]: expected 'group' or 'kernel' or 'target' or the end of the file, found "
        "'layout'\n"
        '    layout B col\n'
        '    ^^^^^^\n'
        'hint: statements go inside `kernel NAME { ... }` or `group NAME { ... }`'),
    "count_in_a_group": ('group g {\n  gemm q 4096 x 1024 x 1024 count 3\n}\n',
        "p.gs:2:29: error[E100]: expected 'algorithm' or 'alpha' or 'batching' or 'beta' or 'concurrency' or "
        "'copies' or 'dtype' or 'gemm' or 'layout' or 'pipeline' or 'precision' or 'threads' or 'tile' or 'tlp' or "
        "'{' or '}', found 'count'\n"
        '      gemm q 4096 x 1024 x 1024 count 3\n'
        '                                ^^^^^\n'
        "hint: in a group, a member's copies are `copies N`: `gemm q 4096 x 1024 x 1024 copies 3`"),
    "batch_in_a_group": ('group g {\n  batch { a 8 x 8 x 8 }\n}\n',
        f"p.gs:2:3: error[E100]: {GROUP_EXPECTED}, found 'batch'\n"
        '      batch { a 8 x 8 x 8 }\n'
        '      ^^^^^\n'
        f"hint: {GROUP_MEMBER}"),
    "grouped_in_a_group": ('group g {\n  grouped M n 8 k 8 groups 2\n}\n',
        f"p.gs:2:3: error[E100]: {GROUP_EXPECTED}, found 'grouped'\n"
        '      grouped M n 8 k 8 groups 2\n'
        '      ^^^^^^^\n'
        f"hint: {GROUP_MEMBER}"),
    "sm_90a_target": ('target cuda sm_90a\nkernel k {\n  gemm 64 x 64 x 64\n}\n',
        "p.gs:1:13: error[E203]: unknown cuda target 'sm_90a'\n"
        '    target cuda sm_90a\n'
        '                ^^^^^^\n'
        'hint: write sm_90: gemmc builds the sm_90a (wgmma, TMA) kernels of that target itself and names their '
        '-gencode'),
    "grouped_form_as_written": ('kernel k {\n  grouped rows n 8 k 8 groups 2\n}\n',
        "p.gs:2:11: error[E204]: unknown grouped form 'rows'\n"
        '      grouped rows n 8 k 8 groups 2\n'
        '              ^^^^\n'
        'hint: expected one of M, K, list'),
}


@pytest.mark.parametrize("name", sorted(POSITIONS) + sorted(HINTS))
def test_error_positions_and_carets(name):
    """Each error renders at its line and column with its caret, and (HINTS) the hint that shows the right spelling
    at the word to change."""
    text, expected = POSITIONS.get(name) or HINTS[name]
    with pytest.raises(gemmc.GemmcError) as info:
        gemmc.compile_string(text, filename="p.gs")
    assert info.value.render() == expected


def test_a_misspelt_statement_reads_the_same_after_dtype_as_after_gemm():
    for before in ("gemm 64 x 64 x 64 dtype bf16", "gemm 64 x 64 x 64"):
        for typo, meant in (("layuot B col", "layout"), ("aplha 2.0", "alpha"), ("threds 128", "threads"),
                            ("aplha runtime", "alpha"), ("tiles 64x64x8", "tile"), ("aplha", "alpha")):
            text = f"kernel k {{ {before} {typo} }}"
            with pytest.raises(gemmc.GemmcError) as info:
                gemmc.compile_string(text)
            (d,) = info.value.diagnostics
            word = typo.split()[0]
            assert (d.code, d.message, d.hint) == ("E101", f"unknown statement '{word}'", f"did you mean '{meant}'?")
            assert d.span.column == text.index(word) + 1


def test_per_operand_dtypes_still_lower_and_a_bad_operand_is_named():
    k = front_end("kernel k { dtype A bf16, B bf16, C f32 gemm 64 x 64 x 64 }").kernels[0]
    assert (k.dtype, k.c_dtype) == (DType.BF16, DType.F32)
    assert front_end("kernel k { dtype C f32 gemm 64 x 64 x 64 }").kernels[0].dtype is DType.F32
    with pytest.raises(gemmc.GemmcError) as info:
        gemmc.compile_string("kernel k { dtype a bf16 gemm 64 x 64 x 64 }")
    (d,) = info.value.diagnostics
    assert (d.code, d.message, d.span.column) == ("E204", "unknown operand 'a'", 18)


def test_a_tile_of_spaced_sizes_gets_the_tile_hint():
    with pytest.raises(gemmc.GemmcError) as info:
        gemmc.compile_string("kernel k { gemm 64 x 64 x 64 tile 128 x 128 }")
    (d,) = info.value.diagnostics
    assert (d.message, d.span.column, d.hint) == ("a tile has three sizes; found 2", 45, "a tile is BM x BN x BK, e.g. "
                                                  "`tile 128x128x64`")


@pytest.mark.parametrize("text, errors", [
    # an operand in the item, in any case: a bad operand or type, named as such, not a misspelt statement
    ("kernel k { dtype a bfloat16 gemm 64 x 64 x 64 }",
     [("E204", "unknown operand 'a'"), ("E204", "unknown dtype 'bfloat16'")]),
    ("kernel k { gemm 64 x 64 x 64 dtype bf16 A }",
     [("E204", "unknown operand 'bf16'"), ("E204", "unknown dtype 'A'")]),
    ("kernel k { dtype BF16 c gemm 64 x 64 x 64 }",
     [("E204", "unknown operand 'BF16'"), ("E204", "unknown dtype 'c'")]),
])
def test_a_dtype_item_with_an_operand_is_not_read_as_a_misspelt_statement(text, errors):
    with pytest.raises(gemmc.GemmcError) as info:
        gemmc.compile_string(text)
    assert [(d.code, d.message) for d in info.value.diagnostics] == errors


@pytest.mark.parametrize("text, word", [
    ("kernel k { dtype A bf16 B bf16 gemm 64 x 64 x 64 }", "B"),
    ("kernel k { dtype A bf16, B bf16 C f32 gemm 64 x 64 x 64 }", "C"),
    ("kernel k { dtype bf16 C f32 gemm 64 x 64 x 64 }", "f32"),
    ("kernel k { layout A col B col gemm 64 x 64 x 64 }", "B"),
    ("kernel k { layout A col, B col C row gemm 64 x 64 x 64 }", "C"),
])
def test_a_missing_comma_between_items_gets_the_items_hint(text, word):
    with pytest.raises(gemmc.GemmcError) as info:
        gemmc.compile_string(text)
    (d,) = info.value.diagnostics
    assert (d.code, d.message, d.hint) == ("E101", f"unknown statement '{word}'", ITEMS_HINT)
    assert d.span.column == text.rindex(f" {word} ") + 2


def test_a_misspelt_statement_after_items_still_gets_its_keyword():
    with pytest.raises(gemmc.GemmcError) as info:
        gemmc.compile_string("kernel k { layout B col aplha 2 gemm 64 x 64 x 64 }")
    (d,) = info.value.diagnostics
    assert (d.message, d.hint) == ("unknown statement 'aplha'", "did you mean 'alpha'?")


def test_an_unknown_target_argument_cites_no_line_of_the_schedule():
    """compile_file's `target=` (gemmc compile --target) is the caller's argument: its error has no file position."""
    with pytest.raises(gemmc.GemmcError) as info:
        gemmc.compile_file(ROOT / "examples" / "inception3.gs", target="sm_100")
    assert info.value.render() == ("error[E203]: unknown target 'sm_100'\nhint: expected cuda, hip, or one of sm_80, "
                                   "sm_86, sm_89, sm_90, gfx908, gfx90a, gfx942")


def first_error(statement: str) -> Diagnostic:
    """The first diagnostic of a kernel of one 64^3 GEMM and `statement`."""
    with pytest.raises(gemmc.GemmcError) as info:
        gemmc.compile_string(f"kernel k {{ gemm 64 x 64 x 64 {statement} }}")
    return info.value.diagnostics[0]


# `a tile has three sizes; found N` only where fewer than three were written (a missing 'x' is named as such); a dtype
# hint never suggests a C that its types refuse
@pytest.mark.parametrize("statement, field, expected", [
    ("tile 128 128 64", "message", "expected 'x', found a number '128'"),
    ("tile 128x128 x 64", "message", "expected 'x', found a factor such as x3 'x128'"),
    ("tile 128, 128, 64", "message", "expected 'x', found ','"),
    ("dtype A f64, C f32", "hint", "write `dtype A f64, B f64` and a C that goes with f64"),
    ("dtype A f32, B f16, C f16", "hint", "write `dtype A f16, B f16, C f16`"),
    ("dtype A bf16, B f32, C f16", "hint", "write `dtype A bf16, B bf16` and a C that goes with bf16"),
])
def test_sizes_without_their_x_and_dtypes_whose_c_must_change(statement, field, expected):
    assert getattr(first_error(statement), field) == expected


@pytest.mark.parametrize("word", ["f16x2", "tf32x1", "bf16x9"])
def test_a_glued_split_that_does_not_exist_lists_the_splits(word):
    hint = first_error(f"precision {word}").hint
    assert "did you mean" not in hint and "`split tf32 x3`" in hint and "`split f16 x3`" in hint


# The parser stops after the glued word, where it wants the factor: the caret is still on the glued word (it was on the
# token after it: the '}', the next statement's keyword, `method`), as it is on `tf32x3` written without `split`
@pytest.mark.parametrize("statement, word, hint", [
    ("precision split f16x3", "f16x3", "did you mean `split f16 x3`?"),
    ("precision split tf32x3 tile 64x64x16", "tf32x3", "did you mean `split tf32 x3`?"),
    ("precision split f16x3 method le", "f16x3", "did you mean `split f16 x3`?"),
    ("precision split f16x2", "f16x2", SPLIT_HINT),
    ("precision tf32x3", "tf32x3", "did you mean `split tf32 x3`?"),
])
def test_a_glued_split_is_reported_at_the_glued_word(statement, word, hint):
    d = first_error(statement)
    column = len("kernel k { gemm 64 x 64 x 64 ") + statement.index(word) + 1
    assert (d.span.line, d.span.column, d.span.end_column, d.hint) == (1, column, column + len(word), hint)

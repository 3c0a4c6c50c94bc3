"""Fuzzing the front end and the planner: schedules that are valid, nearly valid and hostile (the examples mutated
token by token: huge and odd numbers, odd names, odd whitespace, tokens inserted, dropped, repeated; and kernels
built from random statements) either compile and render, or raise GemmcError with located, coded diagnostics. No
other exception, and no example runs long.

CI runs a fixed, derandomized set of examples; GEMMC_FUZZ_EXAMPLES=N runs N fresh random ones.
"""

from __future__ import annotations

import os
import re
import signal
from contextlib import contextmanager

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gemmc
from gemmc.errors import CODES
from tests.conftest import EXAMPLES

SEEDS = [p.read_text() for p in EXAMPLES] + [
    "kernel k { gemm 64 x 64 x 64 }",
    "kernel k { dtype f64 alpha runtime beta 0.5 batch { a 3 x 5 x 7 b 129 x 1 x 64 } tile 32x32x8 threads 64 }",
    "target cuda sm_80\nkernel t { precision tf32 layout A col, C col gemm 300 x 200 x 100 count 3 }",
    "kernel r { algorithm tsm2r gemm 10000 x 8 x 4096 }\nkernel l { algorithm tsm2l gemm 100000 x 4 x 4 }",
]

SMALL = ["1", "2", "3", "4", "7", "8", "16", "32", "64", "100", "128", "513", "1000", "4096"]
ODD = ["0", "-1", "2147483647", "2147483648", "4294967296", str(2**63), str(2**64), "9" * 40, "1e400", "-1e400",
       "1e39", "1e-50", "1e-400", "1.5", "1e3", "+7", "007", ".5", "1048576", "1048577", "3.4028234663852886e38"]
NUMBERS = SMALL * 2 + ODD  # odd numbers a third of the time: the rest lets the schedule reach the planner
NAMES = ["problem", "vec", "elem", "vec_ok", "tc_tile", "int", "class", "_x", "__y", "a__b", "x_", "gemmc_x",
         "GEMMC_BARRIER", "k" * 64, "k" * 65, "p" * 300, "auto", "split", "x", "A", "gemm", "caf\u00e9", "k2"]
PLAIN_NAMES = ["k", "k2", "K", "attn", "attn_out", "p", "q"]
SPACES = ["\t", "\f", "\v", "\r", "\r\n", "\n", "\u2028", "\u00a0", "\u3000", "\u200b", "\x00", " # note\n",
          " # note\r", "\n\n\t "]
VOCAB = ["kernel", "target", "cuda", "hip", "sm_80", "sm_90", "gfx90a", "{", "}", ",", "(", ")", "x", "x3",
         "64x64x8", "16x16x16", "dtype", "f16", "bf16", "f64", "layout", "A", "B", "C", "row", "col", "alpha",
         "beta", "runtime", "batch", "gemm", "count", "tile", "auto", "auto(coordinated)", "kslices", "ksplit",
         "threads", "batching", "threshold", "binary", "none", "precision", "split", "method", "le", "pipeline",
         "stages", "algorithm", "simt", "tsm2r", "tsm2l", "tensorcore", "tlp", "#", ";", "\u20ac", "1", "256"]

TOKEN = re.compile(r"\s+|#[^\n\r]*|\d+x\d+x\d+|[A-Za-z_]\w*|[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|.", re.S)


def is_number(tok: str) -> bool:
    return bool(re.fullmatch(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", tok))


@st.composite
def mutated(draw) -> str:
    """A seed schedule with up to five mutations."""
    toks = TOKEN.findall(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(0, 5))):
        # mostly mutations that keep the syntax, so that the lowering and the passes see the result
        kind = draw(st.sampled_from(["number"] * 4 + ["name", "space", "space", "repeat", "repeat", "insert",
                                                      "delete", "swap"]))
        i = draw(st.integers(0, len(toks) - 1))
        if kind == "number":
            places = [j for j, t in enumerate(toks) if is_number(t)] or [i]
            toks[draw(st.sampled_from(places))] = draw(st.sampled_from(NUMBERS))
        elif kind == "name":
            places = [j for j, t in enumerate(toks) if re.fullmatch(r"[A-Za-z_]\w*", t)] or [i]
            toks[draw(st.sampled_from(places))] = draw(st.sampled_from(NAMES))
        elif kind == "space":
            places = [j for j, t in enumerate(toks) if t.isspace()] or [i]
            toks[draw(st.sampled_from(places))] = draw(st.sampled_from(SPACES))
        elif kind == "insert":
            toks.insert(i, f" {draw(st.sampled_from(VOCAB + NUMBERS))} ")
        elif kind == "delete" and len(toks) > 1:
            del toks[i]
        elif kind == "repeat":  # a run of tokens given twice: statements, layouts, options, problems
            j = draw(st.integers(i, min(len(toks), i + 12)))
            toks[j:j] = [" ", *toks[i:j], " "]
        elif kind == "swap":
            j = draw(st.integers(0, len(toks) - 1))
            toks[i], toks[j] = toks[j], toks[i]
    return "".join(toks)


STATEMENTS = {
    "dtype": st.sampled_from(["f32", "f32", "f64", "f64", "f16", "bf16", "f8"]),
    "layout": st.lists(st.tuples(st.sampled_from("ABCD"), st.sampled_from(["row", "col", "diag"])), min_size=1,
                       max_size=4).map(lambda items: ", ".join(f"{o} {v}" for o, v in items)),
    "alpha": st.sampled_from(NUMBERS + ["runtime", "2.5", "-1"]),
    "beta": st.sampled_from(NUMBERS + ["runtime", "0", "1"]),
    "gemm": st.tuples(*[st.sampled_from(NUMBERS)] * 3).map(lambda d: " x ".join(d))
    | st.tuples(*[st.integers(1, 600)] * 3, st.sampled_from(NUMBERS)).map(lambda d: f"{d[0]} x {d[1]} x {d[2]} "
                                                                                   f"count {d[3]}"),
    "batch": st.lists(st.tuples(st.sampled_from(PLAIN_NAMES) | st.sampled_from(NAMES), *[st.sampled_from(NUMBERS)] * 3),
                      min_size=0, max_size=4).map(lambda ps: "{ " + " ".join(f"{n} {m} x {k} x {q}"
                                                                             for n, m, k, q in ps) + " }"),
    "tile": st.sampled_from(["auto", "auto(uniform)", "auto(loadbalanced)", "auto(coordinated)", "auto(fast)"])
    | st.tuples(*[st.sampled_from(SMALL + ["0", "2147483647", "1073741824"])] * 3,
                st.sampled_from(["", " kslices 2", " ksplit 2", " kslices 3 ksplit 9", " kslices 2 kslices 2"]))
    .map(lambda t: f"{t[0]}x{t[1]}x{t[2]}{t[3]}"),
    "threads": st.sampled_from(["auto", "32", "64", "128", "256", "1024"] + NUMBERS),
    "batching": st.sampled_from(["auto", "none", "threshold", "binary", "some"]),
    "precision": st.sampled_from(["f32", "f64", "tf32", "f16", "bf16", "split f16 x3", "split bf16 x6",
                                  "split tf32 x3", "split f16 x3 method le", "split f16 x2147483648", "f8"]),
    "pipeline": st.sampled_from(["1", "2", "3", "4"] + NUMBERS).map(lambda n: f"stages {n}"),
    "algorithm": st.sampled_from(["auto", "simt", "tensorcore", "tsm2r", "tsm2l", "fast"]),
    "tlp": st.sampled_from(["auto"] + NUMBERS).map(lambda n: f"threshold {n}"),
}


@st.composite
def built(draw) -> str:
    """One or two kernels of random statements (any order, some twice), with an optional target."""
    text = draw(st.sampled_from(["", "target cuda sm_80\n", "", "target hip gfx90a\n", "", "target cuda sm_75\n"]))
    names = st.sampled_from(PLAIN_NAMES) | st.sampled_from(PLAIN_NAMES) | st.sampled_from(NAMES + ["k_simt_f32_rrr"])
    for name in draw(st.lists(names, min_size=1, max_size=2)):
        keys = draw(st.lists(st.sampled_from(sorted(STATEMENTS)), min_size=0, max_size=6))
        keys.insert(draw(st.integers(0, len(keys))), draw(st.sampled_from(["gemm", "batch"])))
        body = "\n  ".join(f"{key} {draw(STATEMENTS[key])}" for key in keys)
        text += f"kernel {name} {{\n  {body}\n}}\n"
    return text


class Slow(Exception):
    pass


@contextmanager
def time_limit(seconds: float):
    """A schedule that takes this long is a hang as far as the fuzz test is concerned."""

    def expire(signum, frame):
        raise Slow(f"no answer after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def compiles_or_refuses(text: str) -> None:
    with time_limit(20):
        try:
            prog = gemmc.compile_string(text, filename="fuzz.gs")
        except gemmc.GemmcError as err:
            for d in err.diagnostics:
                assert d.code in CODES, d
                assert d.span.line >= 1 and d.span.column >= 1, f"unlocated: {d}"
            assert err.render().startswith("fuzz.gs:")
            return
        for k in prog:
            assert isinstance(k.source, str) and isinstance(k.standalone, str)
            assert k.rendered.launcher in k.header


RANDOM = "GEMMC_FUZZ_EXAMPLES" in os.environ
FUZZ = settings(max_examples=int(os.environ.get("GEMMC_FUZZ_EXAMPLES", "250")), deadline=None, database=None,
                derandomize=not RANDOM, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FUZZ
@given(mutated())
def test_mutated_schedules_compile_or_refuse(text):
    compiles_or_refuses(text)


@FUZZ
@given(built())
def test_built_schedules_compile_or_refuse(text):
    compiles_or_refuses(text)

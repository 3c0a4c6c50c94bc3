"""Shared GPU-test helpers: run a schedule's kernel on fresh random, NaN-poisoned inputs against float64."""

from __future__ import annotations

import itertools

import gemmc

LAYOUTS = ["".join(c) for c in itertools.product("rc", repeat=3)]  # A, B, C: every row/col combination


def layout_line(code: str) -> str:
    """`layout A row, B col, C row` from a code such as "rcr"."""
    names = {"r": "row", "c": "col"}
    return f"layout A {names[code[0]]}, B {names[code[1]]}, C {names[code[2]]}"


TOLERANCE = {"f32": 1e-5, "f64": 1e-12}


def check_schedule(text: str, name: str | None = None, *, seed: int = 0, alpha: float = 1.5, beta: float = -0.5,
                   tolerance: float | None = None) -> dict:
    """Compile, run once, compare every problem with float64; assert on the worst relative Frobenius error."""
    from gemmc.runtime.check import check_kernel

    prog = gemmc.compile_string(text)
    kernel = prog[name] if name else next(iter(prog))
    result = check_kernel(kernel, seed=seed, alpha=alpha, beta=beta, time_it=False)
    err = result["errors"]
    limit = tolerance if tolerance is not None else TOLERANCE[kernel.ir.dtype.value]
    assert err["nonfinite"] == 0, f"{kernel.name}: {err['nonfinite']} outputs are NaN/inf (unwritten or wrong)"
    assert err["rel_fro"] < limit, f"{kernel.name}: relative error {err['rel_fro']:.3e} >= {limit:g}"
    return result


def check_plan(kernel, plan, *, seed: int = 0, alpha: float = 1.5, beta: float = -0.5) -> dict:
    """`kernel` run under another plan of its own family (a shape the planner would not pick by itself), its work
    list rebuilt, checked as check_schedule checks."""
    from gemmc.runtime.check import check_kernel

    result = check_kernel(kernel.with_plan(plan), seed=seed, alpha=alpha, beta=beta, time_it=False)
    err, limit = result["errors"], TOLERANCE[kernel.ir.dtype.value]
    assert err["nonfinite"] == 0, f"{err['nonfinite']} outputs are NaN/inf (unwritten or wrong)"
    assert err["rel_fro"] < limit, f"relative error {err['rel_fro']:.3e} >= {limit:g}"
    return result

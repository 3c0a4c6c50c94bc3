"""Concurrent groups of independent GEMMs (paper 004's workloads, f32 and bf16), docs/PERFORMANCE.md's protocol.

Per case, on the same inputs in one process, each captured in a CUDA graph and timed as graph replays:
- cuBLAS one after another (torch.mm in a loop) and cuBLAS on N streams (forked and joined through events);
- gemmc sequential (each member's own tuned kernel), gemmc's isolated kernels on N streams (the paper's
  "default"), gemmc's GO-kernels on d streams for every degree d <= N, gemmc fused (one launch) where the members
  allow it, and `concurrency auto` (the predictor's and the cost model's choice);
- the oracle: the fastest of gemmc's modes, to show how close `auto` gets. `auto` is what the group's own calls
  run: the plan's way, or what its first call measured faster (gemmc.runtime.group_floor; `auto_runs`).
Every gemmc mode is first checked against cuBLAS on the same inputs (NaN-poisoned outputs).

bf16 cases (suites `bf16 ...`) run the hopper family's kernels against torch.mm in bf16 (cuBLAS, bf16 output);
their errors are checked against a bound that grows with K (one bf16 rounding of C plus f32 accumulation).
f32 cases with `precision split tf32 x3` members (suite `f32 split`) run the tensorcore family's exact-f32
emulation (error at or below SGEMM's) for the large compute-bound GEMMs where the SIMT kernel trails cuBLAS.

    python -m gemmc.bench concurrent [--quick] [--dtype f32|bf16|all]   # bench/results/concurrent/<date>_<gpu>.json
"""

from __future__ import annotations

import time
from functools import partial
from statistics import geometric_mean
from typing import Any

from gemmc.bench import harness, timing
from gemmc.concurrent.table3 import Gemm, rnn_gemms, transformer_gemms

# the columns of its table (and of `gemmc bench report`'s)
COLUMNS = ("suite", "case", "auto", "auto_runs", "oracle", "speedup_auto_vs_cublas_seq",
           "speedup_auto_vs_cublas_streams", "auto_vs_oracle", "error")

PEAK = {"f32": 67e12, "bf16": 989e12}  # H100 SXM nominal: FP32 on CUDA cores, dense BF16 on tensor cores
UNIT = {"f32": 2.0 ** -24, "bf16": 2.0 ** -8}  # unit roundoff of C's type


def _find(gemms: list[Gemm], name: str) -> Gemm:
    return next(g for g in gemms if g.name == name)


def bf16_cases(quick: bool) -> list[tuple[str, str, list[Gemm]]]:
    """The bf16 Transformer groups (QKV, the FFN and projection dX/dW pairs) at Table 3 sizes, instances of the
    small GEMMs the issue names (160-300 TFLOP/s of cuBLAS bf16 alone on the H100), the attention GEMMs of mixed
    sequence lengths and a mixed group, as in the f32 suite."""
    out: list[tuple[str, str, list[Gemm]]] = []
    for app, h, tokens in (("transformer", 1024, 2048), ("bert", 768, 4096), ("transformer", 1024, 8192)):
        layer = transformer_gemms(app, h, tokens)
        out.append(("bf16 transformer", f"bf16 QKV H{h} T{tokens}", [_find(layer, "qkv")] * 3))
    t = transformer_gemms("transformer", 1024, 2048)
    out.append(("bf16 transformer", "bf16 FFN1 dX+dW H1024 T2048", [_find(t, "ffn1.dX"), _find(t, "ffn1.dW")]))
    out.append(("bf16 transformer", "bf16 FFN2 dX+dW H1024 T2048", [_find(t, "ffn2.dX"), _find(t, "ffn2.dW")]))
    t4 = transformer_gemms("transformer", 1024, 4096)
    out.append(("bf16 transformer", "bf16 proj dX+dW H1024 T4096", [_find(t4, "qkv.dX"), _find(t4, "qkv.dW")]))
    out.append(("bf16 rnn", "bf16 gates H1024 B64 x8", [rnn_gemms("gnmt", 1024, 64)[0]] * 8))
    for (m, n, k) in ((4096, 128, 1024), (512, 1024, 1024)):
        for c in ((4,) if quick else (4, 16)):
            out.append(("bf16 instances", f"bf16 {m}x{n}x{k} x{c}", [Gemm("instances", "x", m, n, k)] * c))
    attn = [Gemm("attention", f"qk{s}", s, s, 64) for s in (128, 256, 384, 512)]
    attn += [Gemm("attention", f"av{s}", s, 64, s) for s in (128, 256, 384, 512)]
    out.append(("bf16 attention", "bf16 QK^T+AV SL 128-512 x16", attn * 2))
    mixed = [Gemm("instances", "a", 4096, 128, 1024)] * 4 + [Gemm("instances", "b", 512, 1024, 1024)] * 4
    out.append(("bf16 mixed", "bf16 4096x128x1024 x4 + 512x1024x1024 x4", mixed))
    return out


def split_cases() -> list[tuple[str, str, list[Gemm]]]:
    """The large compute-bound f32 groups where gemmc's SIMT kernel alone trails cuBLAS (the suite's worst cases),
    with `precision split tf32 x3` members."""
    big = Gemm("instances", "x", 4096, 1024, 2048)
    t = transformer_gemms("transformer", 1024, 2048)
    return [("f32 split", "split 4096x1024x2048 x2", [big] * 2),
            ("f32 split", "split FFN1 dX+dW H1024 T2048", [_find(t, "ffn1.dX"), _find(t, "ffn1.dW")])]


def cases(quick: bool) -> list[tuple[str, str, list[Gemm]]]:
    """(suite, case, GEMMs): Transformer layers and LSTM gates at Table 3 sizes, attention GEMMs of mixed sequence
    lengths, several instances of one GEMM (homogeneous) and of two (mixed)."""
    out: list[tuple[str, str, list[Gemm]]] = []
    t = transformer_gemms("transformer", 1024, 2048)
    out.append(("transformer", "QKV H1024 T2048", [_find(t, "qkv")] * 3))
    b = transformer_gemms("bert", 768, 4096)
    out.append(("transformer", "QKV H768 T4096", [_find(b, "qkv")] * 3))
    out.append(("transformer", "FFN1 dX+dW H1024 T2048", [_find(t, "ffn1.dX"), _find(t, "ffn1.dW")]))
    t4 = transformer_gemms("transformer", 1024, 4096)
    out.append(("transformer", "proj dX+dW H1024 T4096", [_find(t4, "qkv.dX"), _find(t4, "qkv.dW")]))
    t5 = transformer_gemms("transformer", 512, 1024)
    out.append(("transformer", "FFN2 dX+dW H512 T1024", [_find(t5, "ffn2.dX"), _find(t5, "ffn2.dW")]))
    gates = rnn_gemms("gnmt", 1024, 64)
    for n in (4, 8):
        out.append(("rnn", f"gates H1024 B64 x{n}", [gates[0]] * n))
    r = rnn_gemms("rnnt", 2048, 128)
    out.append(("rnn", "gates dh+dW H2048 B128", [r[1], r[2]]))
    attn = [Gemm("attention", f"qk{s}", s, s, 64) for s in (128, 256, 384, 512)]
    attn += [Gemm("attention", f"av{s}", s, 64, s) for s in (128, 256, 384, 512)]
    out.append(("attention", "QK^T+AV SL 128-512 x8", attn))
    out.append(("attention", "QK^T+AV SL 128-512 x16", attn * 2))
    shapes = [(4096, 128, 1024), (4096, 256, 1024), (512, 1024, 1024)]
    counts = (2, 4, 8, 16) if not quick else (2, 16)
    for m, n, k in shapes:
        for c in counts:
            out.append(("instances", f"{m}x{n}x{k} x{c}", [Gemm("instances", "x", m, n, k)] * c))
    for c in (2, 4):
        out.append(("instances", f"4096x1024x2048 x{c}", [Gemm("instances", "x", 4096, 1024, 2048)] * c))
    mixed = [Gemm("instances", "a", 4096, 128, 1024)] * 4 + [Gemm("instances", "b", 512, 1024, 1024)] * 4
    out.append(("mixed", "4096x128x1024 x4 + 512x1024x1024 x4", mixed))
    return out


def dtype_of(suite: str) -> str:
    return "bf16" if suite.startswith("bf16") else "f32"


def schedule(gemms: list[Gemm], suite: str = "") -> str:
    members = " ".join(f"gemm g{i} {g.m} x {g.n} x {g.k} {{ layout A {g.layout_a}, B {g.layout_b} }}"
                       for i, g in enumerate(gemms))
    extra = " dtype bf16" if dtype_of(suite) == "bf16" else " precision split tf32 x3" if suite == "f32 split" else ""
    return f"group c {{ concurrency auto{extra} {members} }}"


def group_kernels(text: str) -> list:
    """In a worker process: every kernel a group's call may launch (each distinct member, its isolated tuning's
    alternatives and its GO candidates; the fused kernel and its alternatives), rendered."""
    import gemmc
    from gemmc.concurrent.plan import go_candidates
    from gemmc.runtime.executable import Executable
    from gemmc.runtime.tune import candidates

    run = gemmc.compile_string(text)["c"].group_run
    kernels: list[Executable] = []
    for i, k in enumerate(run.canonical):
        if k is not run.members[i]:
            continue
        kernels += [k, *(alt for _, alt in candidates(k)[1:])]
        kernels += [Executable(ir, k.target, k.filename)
                    for _, ir in go_candidates(k.ir, run.plan.choices[i], k.target)]
    if run.fused is not None:
        kernels += [run.fused, *(alt for _, alt in candidates(run.fused)[1:])]
    return [(kernel.rendered, entry) for kernel in kernels for entry in (kernel.rendered.entry,
                                                                        kernel.rendered.prologue) if entry]


def compile_one(item) -> None:
    from gemmc.runtime.compile import device_function

    device_function(*item)


def precompile(texts: list[str]) -> None:
    """Plan every group in parallel processes, then NVRTC-compile each distinct kernel once into the disk caches,
    so that no compile is timed."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    t0 = time.time()
    with ProcessPoolExecutor(16, mp_context=get_context("spawn")) as pool:
        unique = {(r.source, entry): (r, entry) for found in pool.map(group_kernels, texts) for r, entry in found}
        list(pool.map(compile_one, unique.values(), chunksize=4))
    harness.log(f"compiled {len(unique)} kernels in {time.time() - t0:.0f} s")


def operands(gemms: list[Gemm], dtype: str = "f32"):
    import torch

    t = {"f32": torch.float32, "bf16": torch.bfloat16}[dtype]
    As, Bs, Cs = [], [], []
    for g in gemms:
        a = torch.randn(g.m, g.k, device="cuda", dtype=t) if g.layout_a == "row" else \
            torch.randn(g.k, g.m, device="cuda", dtype=t).T
        b = torch.randn(g.k, g.n, device="cuda", dtype=t) if g.layout_b == "row" else \
            torch.randn(g.n, g.k, device="cuda", dtype=t).T
        As.append(a)
        Bs.append(b)
        Cs.append(torch.empty(g.m, g.n, device="cuda", dtype=t))
    return As, Bs, Cs


def cublas_streams(As, Bs, Cs, d: int):
    import torch

    streams = [torch.cuda.Stream() for _ in range(d)]

    def run() -> None:
        cur = torch.cuda.current_stream()
        for s in streams:
            s.wait_stream(cur)
        for i, (a, b, c) in enumerate(zip(As, Bs, Cs, strict=True)):
            with torch.cuda.stream(streams[i % d]):
                torch.mm(a, b, out=c)
        for s in streams:
            cur.wait_stream(s)

    return timing.torch_graph(run)


def bound(dtype: str, k: int) -> float:
    """The relative error allowed: f32 as the SIMT suite's 1e-5; bf16 one rounding of C plus f32 accumulation of
    k products (linear in k, as tests/gpu/test_hopper_gpu.py)."""
    return 1e-5 if dtype == "f32" else UNIT[dtype] + 2 * k * 2.0 ** -24


def check(run, As, Bs, Cs, label: str) -> float:
    """Run once on NaN-poisoned outputs; the worst relative error against float64 of the same inputs."""
    import torch

    for c in Cs:
        c.fill_(float("nan"))
    run()
    torch.cuda.synchronize()
    worst = 0.0
    for a, b, c in zip(As, Bs, Cs, strict=True):
        ref = a.double() @ b.double()
        err = float(torch.linalg.norm(c.double() - ref) / torch.linalg.norm(ref))
        err = err if err == err else float("inf")
        dtype = "bf16" if c.dtype == torch.bfloat16 else "f32"
        assert err < bound(dtype, a.shape[1]), f"{label}: relative error {err:.2e}"
        worst = max(worst, err)
    return worst


def run_case(suite: str, name: str, gemms: list[Gemm]) -> dict:
    import gemmc

    dtype = dtype_of(suite)
    As, Bs, Cs = operands(gemms, dtype)
    n = len(gemms)
    flops = sum(g.flops for g in gemms)
    group = gemmc.compile_string(schedule(gemms, suite))["c"]
    row: dict = {"suite": suite, "case": name, "dtype": dtype, "gemms": n, "gflop": flops / 1e9,
                 "shapes": sorted({g.label() for g in gemms}),
                 "auto": f"{group.mode.value}" + (f" {group.degree}" if group.mode.value == "streams" else ""),
                 "auto_notes": list(group.group_plan.notes)}
    us: dict[str, float] = {}
    us["cublas_seq"] = timing.device_seconds(timing.torch_graph(
        lambda: [__import__("torch").mm(a, b, out=c) for a, b, c in zip(As, Bs, Cs, strict=True)])) * 1e6
    us["cublas_streams"] = timing.device_seconds(cublas_streams(As, Bs, Cs, min(n, 16))) * 1e6
    modes: dict[str, Any] = {"sequential": group.with_mode("sequential"),
                             "isolated_streams": group.with_mode("streams", min(n, 16), kernels="isolated")}
    for d in (2, 4, 8, 16):
        if d <= n:
            modes[f"go_streams_{d}"] = group.with_mode("streams", d)
    if group.group_plan.fused is not None:
        modes["fused"] = group.with_mode("fused")
    errors = {}
    for label, g in modes.items():
        errors[label] = check(partial(g, As, Bs, Cs), As, Bs, Cs, f"{name} {label}")
        us[label] = timing.device_seconds(timing.gemmc_graph(partial(g, As, Bs, Cs))) * 1e6
    # `concurrency auto` as a user calls it: its first call confirms the plan's way against sequential and the
    # members' own kernels on streams (gemmc.runtime.group_floor) and runs the fastest from then on
    errors["auto"] = check(partial(group, As, Bs, Cs), As, Bs, Cs, f"{name} auto")
    confirmed = group.group_run.confirmed
    mode, degree, kernels = (confirmed.way.mode.value, confirmed.way.degree, confirmed.way.kernels) \
        if confirmed is not None else (group.mode.value, group.degree, "go")
    if mode == "streams":
        auto_label = f"go_streams_{degree}" if kernels == "go" else \
            "isolated_streams" if degree == min(n, 16) else f"isolated_streams_{degree}"
    else:
        auto_label = mode
    row["auto_runs"] = auto_label
    row["auto_confirmed"] = str(confirmed) if confirmed is not None else "not measured"
    if auto_label not in us:  # a way no mode above timed: time it as it runs
        us[auto_label] = timing.device_seconds(timing.gemmc_graph(lambda: group(As, Bs, Cs))) * 1e6
    us["auto"] = us[auto_label]
    gemmc_modes = [k for k in us if k not in ("cublas_seq", "cublas_streams", "auto")]
    oracle = min(gemmc_modes, key=us.__getitem__)
    row.update({"us": us, "max_rel_error": max(errors.values()), "oracle": oracle, "oracle_us": us[oracle],
                "auto_vs_oracle": us["auto"] / us[oracle],
                "speedup_auto_vs_cublas_seq": us["cublas_seq"] / us["auto"],
                "speedup_auto_vs_cublas_streams": us["cublas_streams"] / us["auto"],
                "speedup_oracle_vs_cublas_seq": us["cublas_seq"] / us[oracle],
                "cublas_seq_tflops": flops / us["cublas_seq"] / 1e6,
                "cublas_seq_share_of_peak": flops / us["cublas_seq"] / 1e6 / (PEAK[dtype] / 1e12),
                "host_us_auto": timing.host_seconds(lambda i: group(As, Bs, Cs), calls=20, windows=3) * 1e6,
                "go_tuning": {k: str(v) for k, v in group.tuning.items()}})
    return row


def summarise(rows: list[dict], seconds: float) -> dict:
    ok = [r for r in rows if "us" in r]
    if not ok:
        return {"cases": 0, "seconds": seconds}

    low = [r for r in ok if r["cublas_seq_share_of_peak"] < 0.4]
    out: dict = {}
    for dtype in sorted({r.get("dtype", "f32") for r in ok}):
        mine = [r for r in ok if r.get("dtype", "f32") == dtype]
        for ratio in ("auto_vs_cublas_seq", "oracle_vs_cublas_seq", "auto_vs_cublas_streams"):
            out[f"{dtype}_geomean_{ratio}"] = geometric_mean([r[f"speedup_{ratio}"] for r in mine])
        out[f"{dtype}_worst_auto_vs_cublas_seq"] = min(r["speedup_auto_vs_cublas_seq"] for r in mine)
    return {
        **out,
        "cases": len(ok),
        "geomean_auto_vs_cublas_seq": geometric_mean([r["speedup_auto_vs_cublas_seq"] for r in ok]),
        "geomean_auto_vs_cublas_streams": geometric_mean([r["speedup_auto_vs_cublas_streams"] for r in ok]),
        "geomean_oracle_vs_cublas_seq": geometric_mean([r["speedup_oracle_vs_cublas_seq"] for r in ok]),
        "geomean_auto_vs_cublas_seq_below_40pct_of_peak": geometric_mean([r["speedup_auto_vs_cublas_seq"] for r in low])
        if low else None,
        "worst_auto_vs_cublas_seq": min(r["speedup_auto_vs_cublas_seq"] for r in ok),
        "auto_within_5pct_of_oracle": sum(r["auto_vs_oracle"] <= 1.05 for r in ok) / len(ok),
        "seconds": seconds,
    }


def main(argv: list[str] | None = None) -> None:
    p = harness.parser("concurrent", __doc__)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--only", help="only cases whose name contains this")
    p.add_argument("--budget", type=float, default=1e9, help="start no case after this many seconds of cases")
    p.add_argument("--precompile-only", action="store_true", help="only fill the compile caches")
    p.add_argument("--dtype", choices=("f32", "bf16", "all"), default="all",
                   help="f32: the f32 suite and its split-precision cases; bf16: the bf16 groups")
    args = p.parse_args(argv)
    everything = [*(cases(args.quick) + split_cases() if args.dtype != "bf16" else []),
                  *(bf16_cases(args.quick) if args.dtype != "f32" else [])]
    todo = [c for c in everything if not args.only or args.only in c[1]]
    precompile([schedule(g, suite) for suite, _, g in todo])
    if args.precompile_only:
        return
    rows: list[dict] = []
    start = time.time()
    path = None
    for suite, name, gemms in harness.progress(todo, "concurrent"):
        if time.time() - start > args.budget:
            harness.log(f"budget of {args.budget:.0f} s reached: {len(todo) - len(rows)} case(s) not run")
            break
        t0 = time.time()
        try:
            rows.append(run_case(suite, name, gemms))
        except Exception as err:  # noqa: BLE001 - a failed case is recorded; the others still run
            rows.append({"suite": suite, "case": name, "error": f"{type(err).__name__}: {err}"})
        r = rows[-1]
        if "us" in r:
            harness.log(f"{name:40s} auto {r['auto']:12s} runs {r['auto_runs']:18s} {r['us']['auto']:9.1f} us  "
                        f"x{r['speedup_auto_vs_cublas_seq']:.2f} seq cuBLAS, "
                        f"x{r['speedup_auto_vs_cublas_streams']:.2f} streams cuBLAS, oracle {r['oracle']} "
                        f"({r['auto_vs_oracle']:.2f}), {time.time() - t0:.0f} s")
        else:
            harness.log(f"{name:40s} FAILED {r['error']}")
        # after every case: a run cut short keeps what it measured
        path = harness.write_results(args.out, "concurrent", rows, {"summary": summarise(rows, time.time() - start)},
                                     tag=args.tag)
    harness.table(rows, COLUMNS, "concurrent")
    print(summarise(rows, time.time() - start))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

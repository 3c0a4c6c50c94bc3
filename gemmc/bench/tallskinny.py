"""Tall-and-skinny GEMM (paper 002): gemmc's TSM2R / TSM2L vs cuBLAS (torch.mm) and the copy roof, in one process
on the same inputs. GPU machine only:

    python -m gemmc.bench tallskinny [--quick] [--layout row]   # bench/results/tallskinny/<date>_<gpu>[_<tag>].json

TSM2R: m = k in {8192, 16384, 30720}, n in {1, 2, 4, 8, 16, 32}; TSM2L: m in {1e5, 1e6, 1e7}, k = n in {8, 16};
f32 and f64; column-major operands (the paper's), or with `--layout row` row-major ones (PyTorch's and NumPy's).
Bandwidth counts A + B + C once each; the copy roof is a device-to-device copy of the same number of bytes (read +
write). The crossover against the SIMT family is measured at m = k = 16384 for n from 1 to 64 (column-major: f32;
row-major: each dtype).
"""

from __future__ import annotations

import gemmc
from gemmc.bench import harness, timing

# the columns of its table (and of `gemmc bench report`'s)
COLUMNS = ("case", "gemmc_us", "gemmc_host_us", "cublas_us", "gemmc_tbs", "cublas_tbs", "roof_tbs", "of_roof",
           "vs_cublas", "predicted_tbs", "gemmc_err")


def calls_for(seconds: float) -> int:
    """100 back-to-back calls per window; 20 when a call takes over 1 ms (each window still lasts >= 20 ms)."""
    return 100 if seconds < 1e-3 else 20


LAYOUT = "col"  # every operand's layout (--layout)


def col_major(t):
    return t.t().contiguous().t()


def laid_out(t):
    """t in the run's layout: column-major, or as created (row-major)."""
    return col_major(t) if LAYOUT == "col" else t


def schedule(algorithm: str, m: int, n: int, k: int, dtype: str) -> str:
    return (f"kernel t {{ dtype {dtype} layout A {LAYOUT}, B {LAYOUT}, C {LAYOUT} gemm {m} x {n} x {k} "
            f"algorithm {algorithm} }}")


def run(algorithm: str, m: int, n: int, k: int, dtype: str) -> dict:
    import torch

    tdt = torch.float32 if dtype == "f32" else torch.float64
    A = laid_out(torch.randn(m, k, device="cuda", dtype=tdt))
    B = laid_out(torch.randn(k, n, device="cuda", dtype=tdt))
    C = laid_out(torch.full((m, n), float("nan"), device="cuda", dtype=tdt))
    kern = gemmc.compile_string(schedule(algorithm, m, n, k, dtype))["t"]
    kern([A], [B], [C])
    ref = A.double() @ B.double()
    err = float((C.double() - ref).norm() / ref.norm())
    out = laid_out(torch.empty(m, n, device="cuda", dtype=tdt))
    cublas = lambda: torch.mm(A, B, out=out)  # noqa: E731
    cublas()
    torch.cuda.synchronize()
    import time

    t0 = time.perf_counter()
    cublas()
    torch.cuda.synchronize()
    calls = calls_for(time.perf_counter() - t0)
    t_cublas = timing.device_seconds(cublas, calls=calls)
    t_gemmc = timing.device_seconds(timing.gemmc_graph(lambda: kern([A], [B], [C])), calls=calls)
    t_host = timing.host_seconds(lambda i: kern([A], [B], [C]), calls=calls)  # argument checks + launch included
    nbytes = (A.numel() + B.numel() + C.numel()) * A.element_size()
    roof = timing.copy_roof(nbytes, calls=calls)
    bw = nbytes / t_gemmc
    row = {"case": f"{algorithm} {dtype} m={m} k={k} n={n}", "layout": LAYOUT, "algorithm": algorithm,
           "dtype": dtype, "m": m, "n": n, "k": k, "calls": calls, "gemmc_us": t_gemmc * 1e6,
           "gemmc_host_us": t_host * 1e6,
           "cublas_us": t_cublas * 1e6,
           "gemmc_tbs": bw / 1e12, "cublas_tbs": nbytes / t_cublas / 1e12, "roof_tbs": roof / 1e12,
           "of_roof": bw / roof, "vs_cublas": t_cublas / t_gemmc, "gemmc_err": err,
           "gemmc_tflops": 2 * m * n * k / t_gemmc / 1e12,
           "predicted_tbs": kern.ir.plan.predicted_bandwidth / 1e12 if hasattr(kern.ir.plan, "predicted_bandwidth")
           else None}
    tuning = kern.tuning  # the first call's tuning step (TSM2R cluster sizes): what ran, and the model's miss
    if tuning is not None:
        row.update(tuned=tuning.chosen_label, model_slowdown=tuning.model_slowdown, tuning_us=tuning.microseconds)
    return row


def crossover(n_values, dtypes, mk: int = 16384) -> list[dict]:
    """TSM2R against the SIMT family at m = k = mk for each n, in the run's layout, and what `algorithm auto`
    picks there."""
    import torch

    rows = []
    m = k = mk
    for dtype in dtypes:
        tdt = torch.float32 if dtype == "f32" else torch.float64
        A = laid_out(torch.randn(m, k, device="cuda", dtype=tdt))
        for n in n_values:
            B = laid_out(torch.randn(k, n, device="cuda", dtype=tdt))
            C = laid_out(torch.empty(m, n, device="cuda", dtype=tdt))
            times = {}
            for algorithm in ("tsm2r", "simt"):
                kern = gemmc.compile_string(schedule(algorithm, m, n, k, dtype))["t"]
                call = lambda kern=kern, A=A, B=B, C=C: kern([A], [B], [C])  # noqa: E731
                times[algorithm] = timing.device_seconds(timing.gemmc_graph(call), calls=20)
            auto = gemmc.compile_string(f"kernel t {{ dtype {dtype} layout A {LAYOUT}, B {LAYOUT}, C {LAYOUT} "
                                        f"gemm {m} x {n} x {k} }}")["t"]
            rows.append({"dtype": dtype, "m": m, "k": k, "n": n, "tsm2r_us": times["tsm2r"] * 1e6,
                         "simt_us": times["simt"] * 1e6,
                         "auto_picks": auto.ir.family,
                         "faster": "tsm2r" if times["tsm2r"] < times["simt"] else "simt"})
        torch.cuda.empty_cache()
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser("tallskinny", __doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", choices=("tsm2r", "tsm2l"), help="run one family's cases")
    parser.add_argument("--sizes", help="TSM2R m = k values, comma-separated (default 8192,16384,30720)")
    parser.add_argument("--ns", help="TSM2R n values, comma-separated (default 1,2,4,8,16,32)")
    parser.add_argument("--dtypes", default="f32,f64", help="comma-separated (default f32,f64)")
    parser.add_argument("--no-crossover", action="store_true", help="skip the TSM2R-vs-SIMT crossover in n")
    parser.add_argument("--jobs", type=int, default=12, help="parallel NVRTC compiles before timing")
    parser.add_argument("--cross-ns", help="the crossover's n values (default 1,2,4,8,16,24,32,48,64)")
    parser.add_argument("--cross-dtypes", help="the crossover's dtypes (default f32 column-major, --dtypes row-major)")
    parser.add_argument("--cross-mk", type=int, default=16384, help="the crossover's m = k (default 16384)")
    parser.add_argument("--layout", choices=("col", "row"), default="col",
                        help="every operand's layout (default col, the paper's)")
    args = parser.parse_args(argv)
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    global LAYOUT
    LAYOUT = args.layout
    rows = []
    sizes: tuple[int, ...] = (8192, 16384) if args.quick else (8192, 16384, 30720)
    if args.sizes:
        sizes = tuple(int(s) for s in args.sizes.split(","))
    ns = tuple(int(n) for n in args.ns.split(",")) if args.ns else (1, 2, 4, 8, 16, 32)
    dtypes = tuple(args.dtypes.split(","))
    cross_n: tuple[int, ...] = () if args.no_crossover or args.only == "tsm2l" else (1, 2, 4, 8, 16, 24, 32, 48, 64)
    cross_n = tuple(int(n) for n in args.cross_ns.split(",")) if args.cross_ns and cross_n else cross_n
    cross_dtypes = ("f32",) if LAYOUT == "col" else dtypes  # column-major: f32, as measured since the first run
    cross_dtypes = tuple(args.cross_dtypes.split(",")) if args.cross_dtypes else cross_dtypes
    texts = []
    texts += [schedule("tsm2r", mk, n, mk, dtype) for dtype in dtypes for mk in sizes
             for n in ns] if args.only != "tsm2l" else []
    texts += [schedule("tsm2l", m, kn, kn, dtype) for dtype in dtypes for m in (10**5, 10**6, 10**7)
              for kn in (8, 16)] if args.only != "tsm2r" else []
    texts += [schedule(a, args.cross_mk, n, args.cross_mk, d) for d in cross_dtypes for n in cross_n
              for a in ("tsm2r", "simt")]
    timing.precompile(texts, args.jobs)
    jobs = []
    for dtype in dtypes:
        jobs += [("tsm2r", mk, n, mk, dtype) for mk in (sizes if args.only != "tsm2l" else ()) for n in ns]
        jobs += [("tsm2l", m, kn, kn, dtype) for m in ((10**5, 10**6, 10**7) if args.only != "tsm2r" else ())
                 for kn in (8, 16)]
    for job in harness.progress(jobs, "tallskinny"):
        rows.append(run(*job))
        torch.cuda.empty_cache()
        harness.log(f"{rows[-1]['case']} {rows[-1]['gemmc_tbs']:.2f} TB/s ({rows[-1]['of_roof']:.0%} of roof), "
                    f"cuBLAS {rows[-1]['cublas_tbs']:.2f}")
    cross = crossover(cross_n, cross_dtypes, args.cross_mk) if cross_n else []
    tag = "-".join(([args.tag] if args.tag else []) + ([args.only] if args.only else [])
                   + (["_".join(map(str, sizes))] if args.sizes else [])
                   + ([f"n{'_'.join(map(str, ns))}"] if args.ns else [])
                   + (["_".join(dtypes)] if args.dtypes != "f32,f64" else [])
                   + (["rowmajor"] if LAYOUT == "row" else []))
    path = harness.write_results(args.out, "tallskinny", rows, {f"crossover_m_k_{args.cross_mk}": cross}, tag=tag)
    harness.table(rows, COLUMNS, "tallskinny")
    if cross:
        harness.table(cross, ["dtype", "m", "n", "tsm2r_us", "simt_us", "faster", "auto_picks"], "TSM2R vs SIMT")
    print(f"wrote {path}")

if __name__ == "__main__":
    main()

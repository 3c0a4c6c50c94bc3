"""bf16/f16 storage GEMM on the hopper family against cuBLAS (torch.mm in a CUDA graph), side by
side in one process on the same inputs. Square 1024..16384 (bf16, f16), LLM shapes (bf16: M 4096 and 16384 by the
N, K of a transformer layer), GEMMs of few tiles (--sets small: bf16, 16-128 tiles of 128 x 64), each also with the
epilogue's direct stores, the other cluster size and the other split-K choice (--ablate), and other raster bands at
8192^3. Protocol:
gemmc/bench/timing.py (CUDA events, median of 7 windows of 100 back-to-back calls, fewer calls where a window would pass
200 ms; gemmc replayed from a CUDA graph as cuBLAS is, and its host-inclusive time per plain call beside it).

    python -m gemmc.bench half [--quick] [--ablate epilogue,cluster]   # bench/results/half/<date>_<gpu>.json
    python -m gemmc.bench half --sets small --ablate split       # the few-tile shapes, with and without split K
    python -m gemmc.bench half --profile 8192             # one gemmc and one cuBLAS call between cudaProfilerStart/Stop
"""

from __future__ import annotations

import dataclasses

import gemmc
from gemmc.bench import harness
from gemmc.bench.timing import device_seconds, gemmc_graph, host_seconds, precompile, torch_graph

# the columns of its table (and of `gemmc bench report`'s)
COLUMNS = ("suite", "dtype", "m", "n", "k", "variant", "gemmc_tflops", "cublas_tflops", "ratio", "gemmc_host_us",
           "gemmc_err")

SQUARE = (1024, 2048, 4096, 8192, 16384)
LLM = [(m, n, k) for m in (4096, 16384) for n, k in ((4096, 4096), (14336, 4096), (4096, 14336), (8192, 8192))]
# GEMMs of few output tiles (16-128 tiles of 128 x 64 on 132 SMs): the concurrent suite's LSTM gates and small
# Transformer GEMMs (paper 004), and long K, where the planner's split K is meant to pay
SMALL = [(4096, 64, 1024), (4096, 128, 1024), (512, 1024, 1024), (4096, 256, 1024), (1024, 1024, 4096),
         (2048, 2048, 1024), (4096, 64, 4096), (4096, 64, 16384), (4096, 128, 16384)]
WINDOW_SECONDS = 0.2


def schedule(dtype: str, m: int, n: int, k: int) -> str:
    return f"kernel k {{ dtype {dtype} gemm {m} x {n} x {k} }}"


def cases(quick: bool, sets: tuple[str, ...] = ("square", "llm")) -> list[tuple[str, str, int, int, int]]:
    square = (1024, 4096, 8192) if quick else SQUARE
    out = []
    if "square" in sets:
        out += [("square", dt, s, s, s) for s in square for dt in ("bf16", "f16") if dt == "bf16" or s <= 8192]
    if "llm" in sets:
        out += [("llm", "bf16", m, n, k) for m, n, k in (LLM[:2] if quick else LLM)]
    if "small" in sets:
        out += [("small", "bf16", m, n, k) for m, n, k in SMALL]
    return out


def other_cluster(kernel) -> list[tuple[str, object]]:
    """The same problem with the other cluster size (1 <-> 2; the same raster band in m-tiles), where it has two
    m-tiles."""
    plan = kernel.ir.plan
    if -(-kernel.ir.problems[0].m // plan.bm) < 2:
        return []
    size = 3 - plan.cluster
    alt = dataclasses.replace(plan, cluster=size, band=max(1, plan.band * plan.cluster // size))
    return [(f"cluster {size}", kernel.with_plan(alt, f"cluster {size}"))]


def direct_stores(kernel) -> list[tuple[str, object]]:
    """The same problem with the epilogue storing C from the accumulators (no TMA stores), with the stages that
    the freed shared memory holds: the kernel as it was before its epilogue went through shared memory."""
    from gemmc.families.hopper.planner import stages_for
    from gemmc.ir.hardware import TARGETS

    plan = kernel.ir.plan
    if not plan.tma_store:
        return []
    alt = dataclasses.replace(plan, tma_store=False, stages=stages_for(plan.bn, TARGETS["sm_90"], False))
    return [("direct stores", kernel.with_plan(alt, "direct stores"))]


def other_split(kernel) -> list[tuple[str, object]]:
    """The same problem with split K where the planner has none (the split and tile N of the least cost among
    the split ones), or without it where the planner splits (the planner's unsplit choice)."""
    from gemmc.families.hopper import planner
    from gemmc.ir.hardware import TARGETS

    hw, ir = TARGETS["sm_90"], kernel.ir
    p = ir.problems[0]
    if ir.plan.ksplit > 1:
        ks = 1
        bn = min(planner.TILE_N, key=lambda b: (planner.split_cost(p.m, p.n, p.k, b, 1, hw), -b))
    else:
        split = [(b, s) for b in planner.TILE_N_KSPLIT for s in planner.KSPLITS[1:]
                 if -(-p.k // 64) >= s * planner.MIN_SLICE_KBLOCKS]
        if not split:
            return []
        bn, ks = min(split, key=lambda c: (planner.split_cost(p.m, p.n, p.k, c[0], c[1], hw), c[1], -c[0]))
    label = f"split {ks} bn {bn}" if ks > 1 else f"no split bn {bn}"
    return [(label, kernel.with_plan(planner.with_tile(ir, ir.plan, bn, ks, hw), label))]


def variants(kernel) -> list[tuple[str, object]]:
    """The same problem under other raster bands (ablations of the planner's choice)."""
    plan = kernel.ir.plan
    out = [(f"band {b} m-tiles", dataclasses.replace(plan, band=b // plan.cluster)) for b in (8, 32)]
    return [(label, kernel.with_plan(p, label)) for label, p in out]


def operands(dtype: str, m: int, n: int, k: int, seed: int):
    import torch

    gen = torch.Generator(device="cuda").manual_seed(seed)
    t = getattr(torch, {"bf16": "bfloat16", "f16": "float16"}[dtype])
    a = (torch.rand(m, k, generator=gen, device="cuda") * 2 - 1).to(t)
    b = (torch.rand(k, n, generator=gen, device="cuda") * 2 - 1).to(t)
    return a, b, torch.empty(m, n, device="cuda", dtype=t), torch.empty(m, n, device="cuda", dtype=t)


def rel_error(out, a, b) -> float:
    """||out - A B|| / ||A B|| against float64 (rows sampled above 4096 to keep the reference cheap)."""
    rows = slice(None) if a.shape[0] <= 4096 else slice(0, None, a.shape[0] // 2048)
    ref = a[rows].double() @ b.double()
    return float((out[rows].double() - ref).norm() / ref.norm())


def calls_for(seconds_per_call: float) -> int:
    return max(10, min(100, int(WINDOW_SECONDS / max(seconds_per_call, 1e-7))))


def measure(kernel, a, b, c, c_ref, flops: float) -> dict:
    import torch

    kernel([a], [b], [c])  # compile, encode the tensor maps
    torch.cuda.synchronize()
    err = rel_error(c, a, b)
    c.fill_(float("nan"))
    mm = torch_graph(lambda: torch.mm(a, b, out=c_ref))
    first = device_seconds(mm, calls=3, windows=1)
    calls = calls_for(first)
    cublas = device_seconds(mm, calls=calls)
    ours = device_seconds(gemmc_graph(lambda: kernel([a], [b], [c])), calls=calls)
    assert bool(torch.isfinite(c).all()), "gemmc left outputs unwritten"
    host = host_seconds(lambda i: kernel([a], [b], [c]), calls=calls, windows=3)
    return {"gemmc_us": ours * 1e6, "cublas_us": cublas * 1e6, "gemmc_host_us": host * 1e6,
            "gemmc_tflops": flops / ours / 1e12, "cublas_tflops": flops / cublas / 1e12, "ratio": cublas / ours,
            "gemmc_err": err, "cublas_err": rel_error(c_ref, a, b), "calls_per_window": calls}


def profile(size: int) -> None:
    """For ncu --profile-from-start off: one gemmc and one cuBLAS call at size^3, bf16, after warm-up."""
    import torch

    kernel = gemmc.compile_string(schedule("bf16", size, size, size))["k"]
    a, b, c, c_ref = operands("bf16", size, size, size, 0)
    for _ in range(3):
        kernel([a], [b], [c])
        torch.mm(a, b, out=c_ref)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    kernel([a], [b], [c])
    torch.mm(a, b, out=c_ref)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser("half", __doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--profile", type=int, default=0, help="size: one call each between cudaProfilerStart/Stop")
    parser.add_argument("--no-variants", action="store_true", help="skip the raster-band variants at 8192^3")
    parser.add_argument("--ablate", default="epilogue,cluster",
                        help="comma-separated: each shape also with the other epilogue (direct stores), the "
                             "other cluster size and/or the other split-K choice (split) (default: %(default)s; '' "
                             "for none)")
    parser.add_argument("--sets", default="square,llm",
                        help="comma-separated shape sets: square, llm, small (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.profile:
        profile(args.profile)
        return
    todo = cases(args.quick, tuple(args.sets.split(",")))
    precompile(sorted({schedule(dt, m, n, k) for _, dt, m, n, k in todo}))
    rows: list[dict] = []
    for suite, dtype, m, n, k in harness.progress(todo, "half"):
        kernel = gemmc.compile_string(schedule(dtype, m, n, k))["k"]
        a, b, c, c_ref = operands(dtype, m, n, k, seed=len(rows))
        ablate = set(filter(None, args.ablate.split(",")))
        todo_here = [("", kernel), *(direct_stores(kernel) if "epilogue" in ablate else []),
                     *(other_cluster(kernel) if "cluster" in ablate else []),
                     *(other_split(kernel) if "split" in ablate else [])]
        if not args.no_variants and suite == "square" and m == 8192 and dtype == "bf16":
            todo_here += variants(kernel)
        for label, kern in todo_here:
            row = {"suite": "variant" if label.startswith("band") else suite, "dtype": dtype, "m": m, "n": n, "k": k,
                   "variant": label, "plan": kern.ir.plan.lines()[0], "bn": kern.ir.plan.bn,
                   "ksplit": kern.ir.plan.ksplit}
            try:
                row.update(measure(kern, a, b, c, c_ref, 2.0 * m * n * k))
            except Exception as err:  # noqa: BLE001 - one broken case must not hide the others' numbers
                row["failed"] = f"{type(err).__name__}: {err}"[:500]
                harness.log(f"{suite:6} {dtype:4} {m:5}x{n:5}x{k:5} {label}: FAILED {row['failed']}")
                rows.append(row)
                continue
            rows.append(row)
            harness.log(f"{row['suite']:7} {dtype:4} {m:5}x{n:5}x{k:5} {label:16} "
                        f"gemmc {row['gemmc_tflops']:6.1f}  cuBLAS {row['cublas_tflops']:6.1f} TFLOP/s  "
                        f"ratio {row['ratio']:.3f}  err {row['gemmc_err']:.2e}")
    path = harness.write_results(args.out, "half", rows, tag=args.tag)
    harness.table(rows, COLUMNS, "half")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

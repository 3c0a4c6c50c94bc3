"""Uniform GEMMs, SIMT family vs cuBLAS. Run on the GPU machine:

    python -m gemmc.bench uniform [--quick]        # bench/results/uniform/<date>_<gpu>.json

Cases: one 4096^3 f32 GEMM vs cuBLAS SGEMM (torch.mm, TF32 off); 64 x 512^3 f32 vs torch.bmm in a CUDA graph;
the Inception set (examples/inception_all.gs) vs cuBLAS in a graph loop (the irregular suite adds grouped GEMM).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import gemmc
from gemmc.bench import harness, timing

# the columns of its table (and of `gemmc bench report`'s)
COLUMNS = ("case", "gemmc_us", "baseline", "baseline_us", "ratio", "gemmc_tflops", "baseline_tflops", "gemmc_err",
           "gemmc_host_us")


def rel_err(out, ref) -> float:
    return float((out.double() - ref).norm() / ref.norm())


def case_single(n: int, tile: str) -> dict:
    import torch

    k = gemmc.compile_string(f"kernel g {{ gemm {n} x {n} x {n} {tile} }}")["g"]
    a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
    c = torch.full((n, n), float("nan"), device="cuda")
    k([a], [b], [c])
    ref = a.double() @ b.double()
    err = rel_err(c, ref)
    out = torch.empty_like(c)
    t_cublas = timing.device_seconds(lambda: torch.mm(a, b, out=out), calls=20)
    err_cublas = rel_err(out, ref)
    t_gemmc = timing.device_seconds(timing.gemmc_graph(lambda: k([a], [b], [c])), calls=20)
    flops = 2 * n**3
    return {"case": f"{n}^3 f32 {tile or 'tile auto'}", "gemmc_us": t_gemmc * 1e6, "baseline": "cuBLAS SGEMM",
            "baseline_us": t_cublas * 1e6, "ratio": t_cublas / t_gemmc, "gemmc_tflops": flops / t_gemmc / 1e12,
            "baseline_tflops": flops / t_cublas / 1e12, "gemmc_err": err, "baseline_err": err_cublas,
            "gemmc_host_us": timing.host_seconds(lambda i: k([a], [b], [c]), calls=20) * 1e6}


def case_batched(batch: int, n: int, tile: str) -> dict:
    import torch

    k = gemmc.compile_string(f"kernel g {{ gemm {n} x {n} x {n} count {batch} {tile} }}")["g"]
    a = torch.randn(batch, n, n, device="cuda")
    b = torch.randn(batch, n, n, device="cuda")
    c = torch.full((batch, n, n), float("nan"), device="cuda")
    k(a, b, c)
    ref = torch.bmm(a.double(), b.double())
    err = rel_err(c, ref)
    out = torch.empty_like(c)
    t_bmm = timing.device_seconds(timing.torch_graph(lambda: torch.bmm(a, b, out=out)))
    t_gemmc = timing.device_seconds(timing.gemmc_graph(lambda: k(a, b, c)))
    flops = 2 * batch * n**3
    return {"case": f"{batch} x {n}^3 f32 {tile or 'tile auto'}", "gemmc_us": t_gemmc * 1e6,
            "baseline": "torch.bmm (graph)", "baseline_us": t_bmm * 1e6, "ratio": t_bmm / t_gemmc,
            "gemmc_tflops": flops / t_gemmc / 1e12, "baseline_tflops": flops / t_bmm / 1e12, "gemmc_err": err,
            "baseline_err": rel_err(out, ref), "gemmc_host_us": timing.host_seconds(lambda i: k(a, b, c)) * 1e6}


def case_inception() -> dict:
    import torch

    k = gemmc.compile_file(harness.example("inception_all.gs"))["inception_all"]
    shapes = [(p.m, p.n, p.k) for p in k.ir.problems]
    As = [torch.randn(m, kk, device="cuda") for m, _, kk in shapes]
    Bs = [torch.randn(kk, n, device="cuda") for _, n, kk in shapes]
    Cs = [torch.full((m, n), float("nan"), device="cuda") for m, n, _ in shapes]
    outs = [torch.empty_like(c) for c in Cs]
    k(As, Bs, Cs)
    err = max(rel_err(c, a.double() @ b.double()) for a, b, c in zip(As, Bs, Cs, strict=False))

    def loop():
        for a, b, o in zip(As, Bs, outs, strict=False):
            torch.mm(a, b, out=o)

    t_loop = timing.device_seconds(timing.torch_graph(loop))
    t_gemmc = timing.device_seconds(timing.gemmc_graph(lambda: k(As, Bs, Cs)))
    flops = sum(2 * m * n * kk for m, n, kk in shapes)
    return {"case": f"Inception Table 6 ({len(shapes)} GEMMs) f32", "gemmc_us": t_gemmc * 1e6,
            "baseline": "cuBLAS loop (graph)", "baseline_us": t_loop * 1e6, "ratio": t_loop / t_gemmc,
            "gemmc_tflops": flops / t_gemmc / 1e12, "baseline_tflops": flops / t_loop / 1e12, "gemmc_err": err,
            "gemmc_host_us": timing.host_seconds(lambda i: k(As, Bs, Cs)) * 1e6}


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser("uniform", __doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False  # the baseline is exact SGEMM
    torch.backends.cudnn.allow_tf32 = False
    cases: list[Callable[[], dict]] = [partial(case_single, 4096, "")]
    if not args.quick:
        cases.append(partial(case_single, 4096, "tile 128x128x16 threads 256"))
        cases.append(partial(case_single, 4096, "tile 128x64x8 threads 128"))
    cases.append(partial(case_batched, 64, 512, ""))
    if not args.quick:
        cases.append(partial(case_batched, 64, 512, "tile 64x64x8 threads 64"))
    cases.append(case_inception)
    rows = [case() for case in harness.progress(cases, "uniform")]
    path = harness.write_results(args.out, "uniform", rows, tag=args.tag)
    harness.table(rows, COLUMNS, "uniform")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

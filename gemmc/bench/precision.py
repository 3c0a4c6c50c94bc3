"""FP32 GEMM on tensor cores (paper 001) against cuBLAS SGEMM / TF32 / FP16 and Triton
`tl.dot` emulations, per input kind. Protocol: gemmc/bench/timing.py (CUDA events, median of 7 windows; at least 100
calls per window, or fewer at the largest sizes as long as a window lasts >= 100 ms).

    python -m gemmc.bench precision [--quick]      # bench/results/precision/<date>_<gpu>.json
"""

from __future__ import annotations

from functools import partial
from typing import Any

import gemmc
from gemmc.bench import harness
from gemmc.bench.timing import device_seconds, gemmc_graph, precompile

# the columns of its table (and of `gemmc bench report`'s)
COLUMNS = ("shape", "name", "tflops", "rel_fro_uniform", "rel_fro_normal", "rel_fro_spread", "max_err_normal",
           "error")

# On sm_90 the splits and tf32 run on the hopper family's TMA + wgmma loop (the f16/bf16 splits from a pre-pass's
# planes; tf32 where TMA reads the operands); `algorithm tensorcore` keeps a mode on the tensorcore family's loop, the
# baseline that loop replaced.
MODES = ["split f16 x3", "split f16 x3 method le", "split f16 x4 method markidis", "split bf16 x3",
         "split bf16 x6", "split tf32 x3", "f16", "bf16", "tf32", "split f16 x3 algorithm tensorcore",
         "split tf32 x3 algorithm tensorcore", "tf32 algorithm tensorcore"]


def inputs(kind: str, shape: tuple[int, int], gen):
    import torch

    if kind == "uniform":
        return torch.rand(shape, generator=gen, device="cuda") * 2 - 1
    x = torch.randn(shape, generator=gen, device="cuda")
    if kind == "spread":  # exponents spread over 2^-8..2^8
        x = x * torch.exp2(torch.randint(-8, 9, shape, generator=gen, device="cuda").float())
    return x


def rel_fro(out, ref) -> float:
    return float(((out.double() - ref).norm() / ref.norm()).item())


def triton_fn(precision: str, cfg: tuple[int, int, int, int, int]):
    import triton
    import triton.language as tl

    @triton.jit
    def kern(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, P: tl.constexpr):
        pm, pn = tl.program_id(0), tl.program_id(1)
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            x = tl.load(a + rm[:, None] * K + (k0 + rk)[None, :], mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K),
                        other=0.0)
            y = tl.load(b + (k0 + rk)[:, None] * N + rn[None, :], mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N),
                        other=0.0)
            acc = tl.dot(x, y, acc, input_precision=P)
        tl.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))

    bm, bn, bk, warps, stages = cfg

    def run(a, b, c):
        M, K = a.shape
        N = b.shape[1]
        grid = (triton.cdiv(M, bm), triton.cdiv(N, bn))
        kern[grid](a, b, c, M, N, K, BM=bm, BN=bn, BK=bk, P=precision, num_warps=warps, num_stages=stages)

    return run


def main(argv: list[str] | None = None) -> None:
    ap = harness.parser("precision", __doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sizes", default="", help="MxNxK shapes, comma-separated")
    ap.add_argument("--modes", default="", help="comma-separated gemmc modes (default: all)")
    ap.add_argument("--no-triton", action="store_true")
    ap.add_argument("--triton-best", action="store_true",
                    help="only the fastest Triton configuration on the H100 (128x128x32, 8 warps, 3 stages)")
    args = ap.parse_args(argv)
    import torch

    shapes = [(n, n, n) for n in (1024, 2048, 4096, 8192)] + [(4096, 4096, 11008), (16, 4096, 4096)]
    if args.quick:
        shapes = [(8192, 8192, 8192)]
    if args.sizes:
        shapes = [(int(m), int(n), int(k)) for m, n, k in (s.split("x") for s in args.sizes.split(","))]
    kinds = ["uniform", "normal", "spread"]
    modes = args.modes.split(",") if args.modes else MODES
    precompile([f"kernel k {{ dtype f32 precision {mode} gemm {m} x {n} x {k} }}" for m, n, k in shapes
                for mode in modes])
    gen = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    for m, n, k in harness.progress(shapes, "precision"):
        flops = 2 * m * n * k
        calls = max(5, min(100, int(2e13 / flops)))
        data = {kind: (inputs(kind, (m, k), gen), inputs(kind, (k, n), gen)) for kind in kinds}
        refs = {kind: a.double() @ b.double() for kind, (a, b) in data.items()}
        cands = {}
        for mode in modes:
            prog = gemmc.compile_string(f"kernel k {{ dtype f32 precision {mode} gemm {m} x {n} x {k} }}")
            kern = prog["k"]
            cands[f"gemmc {mode}"] = (lambda k_: lambda x, y, z: k_([x], [y], [z]))(kern)

        def cublas(tf32: bool = False):
            def run(x, y, z):
                torch.backends.cuda.matmul.allow_tf32 = tf32
                torch.matmul(x, y, out=z)
            return run

        cands["cublas sgemm"] = cublas()
        cands["cublas tf32"] = cublas(tf32=True)
        cands["cublas fp16"] = lambda x, y, z: z.copy_(torch.matmul(x.half(), y.half()))
        ah, bh = data["normal"][0].half(), data["normal"][1].half()
        for prec in () if args.no_triton else ("tf32x3", "bf16x3", "bf16x6", "tf32"):
            configs = ((128, 128, 32, 8, 3),) if args.triton_best else \
                ((128, 128, 32, 8, 3), (128, 256, 32, 8, 3), (128, 128, 64, 4, 3))
            for cfg in configs:
                cands[f"triton {prec} {cfg[0]}x{cfg[1]}x{cfg[2]} w{cfg[3]} s{cfg[4]}"] = triton_fn(prec, cfg)
        for name, fn in cands.items():
            row: dict[str, Any] = {"shape": [m, n, k], "name": name}
            try:
                for kind, (a, b) in data.items():
                    c = torch.full((m, n), float("nan"), device="cuda")
                    fn(a, b, c)
                    row[f"rel_fro_{kind}"] = rel_fro(c, refs[kind])
                    row[f"max_err_{kind}"] = float((c.double() - refs[kind]).abs().max().item())
                a, b = data["normal"]
                c = torch.empty((m, n), device="cuda")
                call = (partial(torch.matmul, ah, bh) if name == "cublas fp16" else partial(fn, a, b, c))
                sec = device_seconds(gemmc_graph(call) if name.startswith("gemmc") else call, calls=calls)
                row["seconds"] = sec
                row["tflops"] = flops / sec / 1e12
            except Exception as exc:  # noqa: BLE001  (a Triton precision this version lacks: recorded, not fatal)
                row["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
            torch.backends.cuda.matmul.allow_tf32 = False
            rows.append(row)
            result = row.get("error") or f"{row['tflops']:.1f} TFLOP/s, rel. error {row['rel_fro_normal']:.1e}"
            harness.log(f"{m}x{n}x{k} {name}: {result}")
        del data, refs
        torch.cuda.empty_cache()
    path = harness.write_results(args.out, "precision", rows, tag=args.tag)
    harness.table(rows, COLUMNS, "precision")
    print(f"wrote {path}")

if __name__ == "__main__":
    main()

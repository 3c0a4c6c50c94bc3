"""Tile N of the tensor-core `grouped list` (the hopper_grouped family's list form): 128 (the default) against 256
on MoE-like lists and on the concurrent suite's bf16 groups run as one list (the fused mode), one process. GPU machine
only, from the tree's root:

    python bench/experiments/list_tile_n.py --out DIR

Each list is checked against float64 once (sampled problems), then its two launches are timed alone on a staged
problem table, replayed from a CUDA graph (bench/experiments/list_tensorcore.py's raw_tc).
Results: DIR/list-tile-n.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

import gemmc
from gemmc.bench.dynamic import graph_seconds

sys.path.insert(0, str(Path(__file__).parent))
from list_tensorcore import counts, raw_tc, rel_error  # noqa: E402

SCHEDULE = ("target cuda sm_90\nkernel list_n{bn}_{p} {{ dtype bf16 layout B col tile 128x{bn}x64 "
            "grouped list problems {p} }}")
ATTENTION = [(s, s, 64) for s in (128, 256, 384, 512)] + [(s, 64, s) for s in (128, 256, 384, 512)]
GROUPS = {"QKV H1024 T8192 x3": [(8192, 1024, 1024)] * 3, "4096x128x1024 x16": [(4096, 128, 1024)] * 16,
          "512x1024x1024 x16": [(512, 1024, 1024)] * 16, "QK^T+AV SL 128-512 x16": ATTENTION * 2}


def moe_shapes(problems: int, tokens: int, n: int, k: int, kind: str) -> list[tuple[int, int, int]]:
    m = counts(kind, problems, tokens, np.random.default_rng(problems))
    return [(int(r), n, k) for r in m]


def run(name: str, shapes: list[tuple[int, int, int]]) -> dict:
    from gemmc.runtime.dynamic_list import problem_table

    bf = torch.bfloat16
    As = [torch.randn(m, k, device="cuda").to(bf) for m, n, k in shapes]
    Bs = [torch.randn(n, k, device="cuda").to(bf).t() for m, n, k in shapes]  # K x N column-major
    Cs = [torch.empty(m, n, device="cuda", dtype=bf) for m, n, k in shapes]
    flops = sum(2.0 * m * n * k for m, n, k in shapes)
    row: dict = {"case": name, "problems": len(shapes), "gflop": flops / 1e9}
    for bn in (128, 256):
        kern = next(iter(gemmc.compile_string(SCHEDULE.format(bn=bn, p=len(shapes)))))
        for c in Cs:
            c.fill_(float("nan"))
        kern(As, Bs, Cs)
        torch.cuda.synchronize()
        row[f"n{bn}_error"] = rel_error(As, Bs, Cs)
        table = torch.from_numpy(problem_table(kern.executable, As, Bs, Cs, torch.cuda.current_device(),
                                               views=True)).cuda()
        us = graph_seconds(raw_tc(kern, table, len(shapes))) * 1e6
        row[f"n{bn}_us"], row[f"n{bn}_tflops"] = us, flops / us / 1e6
        print(f"{name:28s} N {bn}: {us:8.1f} us {flops / us / 1e6:6.0f} TFLOP/s error {row[f'n{bn}_error']:.1e}",
              flush=True)
    row["n256_over_n128"] = row["n128_us"] / row["n256_us"]
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=".")
    args = p.parse_args()
    rows = [run(f"MoE list x{pr} T{t} N{n} K{k} {kind}", moe_shapes(pr, t, n, k, kind))
            for pr, t, n, k in ((64, 16384, 2048, 1024), (512, 32768, 1024, 512)) for kind in ("uniform", "zipf")]
    rows += [run(name, shapes) for name, shapes in GROUPS.items()]
    out = Path(args.out) / "list-tile-n.json"
    out.write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "rows": rows}, indent=1))
    print("wrote", out)


if __name__ == "__main__":
    main()

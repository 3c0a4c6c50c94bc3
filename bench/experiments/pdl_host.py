"""Host time of a call with the dependent launch (runtime/pdl.py: ctypes cuLaunchKernelEx) against CuPy's plain launch
(pdl.ENABLED off), alternated over ROUNDS rounds in one process: a bf16 hopper GEMM, a bf16 `grouped M` MoE step and a
concurrent group run one GEMM after another and as one fused launch. Each figure is timing.host_seconds without
synchronising inside the window (the host's own time to issue a call) and with it (what a plain Python loop sees).

    python3 bench/experiments/pdl_host.py --out $OUT      # <out>/pdl_host.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from functools import partial
from pathlib import Path

ROUNDS = 5


def calls() -> dict:
    import numpy as np
    import torch

    import gemmc
    from gemmc.bench import concurrent as conc
    from gemmc.bench.half import operands

    out = {}
    k = gemmc.compile_string("kernel k { dtype bf16 gemm 512 x 1024 x 1024 }")["k"]
    a, b, c, _ = operands("bf16", 512, 1024, 1024, 0)
    out["hopper 512x1024x1024"] = partial(k, [a], [b], [c])
    moe = gemmc.compile_string("target cuda sm_90\nkernel moe { dtype bf16 layout B col grouped M n 2048 k 1024 "
                               "groups 64 }")["moe"]
    sizes = np.random.default_rng(0).multinomial(8192, np.full(64, 1 / 64))
    A = torch.randn(8192, 1024, device="cuda").to(torch.bfloat16)
    W = torch.randn(64, 2048, 1024, device="cuda").to(torch.bfloat16).transpose(1, 2)
    C = torch.empty(8192, 2048, device="cuda", dtype=torch.bfloat16)
    ends = torch.tensor(np.cumsum(sizes), dtype=torch.int32, device="cuda")
    out["grouped M E64 T8192"] = partial(moe, A, W, C, offsets=ends)
    gemms = [conc.Gemm("instances", "x", 512, 1024, 1024)] * 4
    As, Bs, Cs = conc.operands(gemms, "bf16")
    group = gemmc.compile_string(conc.schedule(gemms, "bf16 instances"))["c"]
    out["group 512x1024x1024 x4 sequential"] = partial(group.with_mode("sequential"), As, Bs, Cs)
    out["group 512x1024x1024 x4 fused"] = partial(group.with_mode("fused"), As, Bs, Cs)
    return out


def main() -> None:
    import torch

    from gemmc.bench.timing import host_seconds
    from gemmc.runtime import pdl

    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    rows = []
    for name, fn in calls().items():
        fn()
        torch.cuda.synchronize()
        got: dict[str, list[float]] = {}
        for _ in range(ROUNDS):
            for flag in (True, False):
                pdl.ENABLED = flag
                for sync in (False, True):
                    key = f"{'pdl' if flag else 'plain'}_{'sync' if sync else 'issue'}_us"
                    got.setdefault(key, []).append(
                        host_seconds(lambda i, fn=fn: fn(), calls=20, windows=3, sync=sync) * 1e6)
        pdl.ENABLED = True
        row = {"call": name, **{k: statistics.median(v) for k, v in got.items()}}
        rows.append(row)
        print(f"{name:36} issue: pdl {row['pdl_issue_us']:7.1f} plain {row['plain_issue_us']:7.1f} us | with sync: "
              f"pdl {row['pdl_sync_us']:7.1f} plain {row['plain_sync_us']:7.1f} us", flush=True)
    Path(args.out, "pdl_host.json").write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "rounds": ROUNDS,
                                                           "rows": rows}, indent=1))


if __name__ == "__main__":
    main()

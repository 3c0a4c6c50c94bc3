"""Experiment: host time of plain Python calls of one bf16 GEMM on the hopper family (GPU machine).

A call checks its arrays, encodes or finds the tensor maps and launches through the kernel's argument block
(runtime/launcher.py, a dependent launch: runtime/pdl.py). This times the host's own issue time per call (no
synchronisation inside the timing; best of 5 windows of 200 calls) for 1024^3 and 4096^3, with the dependent launch
and with the plain one (`pdl.ENABLED` off: cuLaunchKernel from the same block; CuPy's kernel call in the tree of
bench/results/half/2026-11-27_h100_single-host.json), and prints where a call's time goes (cProfile, 2000 calls).

    python3 bench/experiments/single_host.py [OUT.json]
"""

from __future__ import annotations

import cProfile
import io
import json
import pstats
import sys
import time

import torch

import gemmc
from gemmc.runtime import pdl


def issue_us(call, windows: int = 5, calls: int = 200) -> float:
    call()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(windows):
        t0 = time.perf_counter()
        for _ in range(calls):
            call()
        best = min(best, (time.perf_counter() - t0) / calls)
        torch.cuda.synchronize()
    return best * 1e6


def main() -> None:
    rows = []
    for size in (1024, 4096):
        text = f"target cuda sm_90\nkernel g{size} {{ dtype bf16 gemm {size} x {size} x {size} }}"
        k = next(iter(gemmc.compile_string(text)))
        As, Bs, Cs = ([torch.randn(size, size, device="cuda", dtype=torch.bfloat16)] for _ in range(3))
        for dependent in (True, False):
            pdl.ENABLED = dependent
            us = issue_us(lambda k=k, As=As, Bs=Bs, Cs=Cs: k(As, Bs, Cs))
            rows.append({"size": size, "launch": "dependent (argument block)" if dependent else "plain launch",
                         "host_issue_us": round(us, 2)})
            print(rows[-1], flush=True)
        pdl.ENABLED = True
    k = next(iter(gemmc.compile_string("target cuda sm_90\nkernel g { dtype bf16 gemm 1024 x 1024 x 1024 }")))
    a, b, c = (torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    k([a], [b], [c])
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(2000):
        k([a], [b], [c])
    profile.disable()
    torch.cuda.synchronize()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(15)
    print(text.getvalue())
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump({"what": "host issue time per plain call of one bf16 GEMM (hopper family), best of 5 windows of "
                               "200 unsynchronised calls; bench/experiments/single_host.py",
                       "gpu": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

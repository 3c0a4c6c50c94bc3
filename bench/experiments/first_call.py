"""Experiment: what the first call of a `tile auto` kernel costs on the host (issue 3). GPU machine:

    python3 bench/experiments/first_call.py

The first call compiles every alternative's source with NVRTC (one per distinct set of tile variants), times
each on the call's own arrays and keeps the fastest (gemmc.runtime.tune). Measured here with empty CuPy and gemmc
caches (fresh temporary folders), as a user meets it: planning, the first call, the second call; then the same
schedule planned again in the same process, whose first call finds the compiled sources and the tuning choice
cached.
"""

from __future__ import annotations

import os
import re
import tempfile
import time

os.environ["CUPY_CACHE_DIR"] = tempfile.mkdtemp(prefix="cupy-cache-")
os.environ["GEMMC_CACHE_DIR"] = tempfile.mkdtemp(prefix="gemmc-cache-")

import gemmc
from gemmc.api import CompiledKernel
from gemmc.bench.irregular import inception_cases, random_cases, schedule
from gemmc.families.simt import planner as simt

CASES = ["inception-3$", "inception-all", "MN<=512 K<=512 x1024"]


def once(shapes, As, Bs, Cs) -> tuple[str, object]:
    """Plan a `tile auto` kernel, call it twice: (the three host times, the kernel)."""
    import torch

    t0 = time.perf_counter()
    kern = gemmc.compile_string(schedule(shapes, "auto"))["irregular"]
    t1 = time.perf_counter()
    kern(As, Bs, Cs)
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    kern(As, Bs, Cs)
    torch.cuda.synchronize()
    t3 = time.perf_counter()
    return f"plan {t1 - t0:.2f} s, first call {t2 - t1:.2f} s, second {(t3 - t2) * 1e3:.2f} ms", kern


def main() -> None:
    import torch

    from gemmc.runtime.device import device_name

    print(f"gpu: {device_name()}", flush=True)
    named = dict(inception_cases() + random_cases(False))
    for case in CASES:
        [name] = [n for n in named if re.search(case, n)]
        shapes = named[name]
        As = [torch.randn(m, k, device="cuda") for m, n, k in shapes]
        Bs = [torch.randn(k, n, device="cuda") for m, n, k in shapes]
        Cs = [torch.empty(m, n, device="cuda") for m, n, k in shapes]
        cold, kern = once(shapes, As, Bs, Cs)
        warm, _ = once(shapes, As, Bs, Cs)
        sources = {CompiledKernel(ir, kern.target, "x").source for _, ir in simt.alternatives(kern.ir, kern.target)}
        print(f"{name:28s} {len(sources):2d} sources; empty caches: {cold}; planned again: {warm}", flush=True)


if __name__ == "__main__":
    main()

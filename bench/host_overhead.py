"""Where gemmc's host time per call goes (cProfile), for CuPy and torch arguments. GPU machine only."""

from __future__ import annotations

import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gemmc  # noqa: E402
from gemmc.runtime.check import random_batch  # noqa: E402


def main() -> None:
    import cupy as cp
    import torch

    k = gemmc.compile_file(Path(__file__).resolve().parent.parent / "examples" / "inception_all.gs")["inception_all"]
    As, Bs, Cs = random_batch(k)
    tAs, tBs, tCs = (torch.as_tensor(a, device="cuda") for a in As), None, None
    tAs = [torch.as_tensor(a, device="cuda") for a in As]
    tBs = [torch.as_tensor(b, device="cuda") for b in Bs]
    tCs = [torch.as_tensor(c, device="cuda") for c in Cs]
    for name, args in (("cupy", (As, Bs, Cs)), ("torch", (tAs, tBs, tCs))):
        k(*args)
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        for _ in range(200):
            k(*args)
        cp.cuda.Device().synchronize()
        print(f"{name}: {(time.perf_counter() - t0) / 200 * 1e6:.1f} us per call ({len(As)} problems)")
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(200):
            k(*args)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()

"""Host time of the list form of a dynamic kernel with torch tensors (docs/PERFORMANCE-dynamic.md, "Host time"), GPU
machine only. From the tree's root, with the module before the bulk checks beside this file:

    git show b3d4c9c~1:gemmc/runtime/dynamic_list.py > bench/experiments/old_dl.py
    OUT=... python3 bench/experiments/dynamic_list_host.py

For 64 and 512 problems (M, N, K in 8..640, 8 sets cycled, windows of 40 calls, median of 9): the checks and problem
table alone (`new_table`), the same by the module before (`old_table`), the whole call (`call`, windows of 8: the
staging ring), and one pass of each torch attribute read over the 3n tensors (`pass_*`): what the checks cannot go
below. A cProfile of 16 calls is printed. Results: bench/results/dynamic/2026-11-27_h100_list-host.json.
"""

from __future__ import annotations

import cProfile
import io
import json
import os
import pstats
import sys
from operator import attrgetter

import torch

import gemmc
from gemmc.runtime import dynamic_list as dl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import old_dl  # noqa: E402 - the module before, written beside this file (see above)
from list_sets import host_us, random_lists  # noqa: E402


def main() -> None:
    k = next(iter(gemmc.compile_string("kernel varlen { alpha runtime beta runtime grouped list problems 512 }")))
    ex = k.executable
    res = {}
    T = torch.Tensor
    reads = [("size", T.size), ("shape", attrgetter("shape")), ("stride", T.stride), ("is_contiguous", T.is_contiguous),
             ("data_ptr", T.data_ptr), ("get_device", T.get_device), ("dtype", attrgetter("dtype")),
             ("requires_grad", attrgetter("requires_grad")), ("type", type), ("is_cuda", attrgetter("is_cuda"))]
    for problems in (64, 512):
        sets = random_lists(problems)
        k(*sets[0], alpha=1.0, beta=0.0)
        torch.cuda.synchronize()
        every = [*sets[0][0], *sets[0][1], *sets[0][2]]
        row = {"new_table": host_us(lambda i, s=sets: dl.problem_table(ex, *s[i % 8], 0)),
               "old_table": host_us(lambda i, s=sets: old_dl.problem_table(ex, *s[i % 8], 0)),
               "call": host_us(lambda i, s=sets: k(*s[i % 8], alpha=1.0, beta=0.0), n=8)}
        for name, read in reads:
            row["pass_" + name] = host_us(lambda i, r=read, e=every: list(map(r, e)))
        res[problems] = row
        print(problems, row, flush=True)
        profile = cProfile.Profile()
        profile.enable()
        for i in range(16):
            k(*sets[i % 8], alpha=1.0, beta=0.0)
            if i % 8 == 7:
                torch.cuda.synchronize()
        profile.disable()
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(12)
        print(text.getvalue()[:2400])
    with open(os.environ.get("OUT", "/tmp") + "/list_host.json", "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()

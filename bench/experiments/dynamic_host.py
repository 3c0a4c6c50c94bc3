"""Host time per call of a dynamic kernel (docs/INTERNALS.md, "Dynamic batches"), GPU machine only:

    OUT=... python3 bench/experiments/dynamic_host.py

The grouped form's call with torch tensors (8 ends tensors cycled, no synchronisation): the whole call, its pieces
(the metadata key, the launch alone) and the fully checked path; the list form with 64 and 512 problems, new sizes
every call, with a cProfile of its host side. Results: bench/results/dynamic/2026-11-26_h100_dynamic_host.json.
"""

from __future__ import annotations

import cProfile
import io
import json
import os
import pstats

import numpy as np
import torch
from list_sets import random_lists

import gemmc
from gemmc.bench import timing
from gemmc.runtime import dynamic as dyn


def per_call(fn, n: int = 200, reps: int = 15) -> float:
    """Median over `reps` windows of `n` calls of the host microseconds per call (synchronised after each window,
    untimed)."""
    return timing.host_seconds(fn, calls=n, windows=reps, sync=False) * 1e6


def main() -> None:
    k = next(iter(gemmc.compile_string("kernel moe { layout B col grouped M n 256 k 128 groups 128 }")))
    A, W = torch.randn(4096, 128, device="cuda"), torch.randn(32, 256, 128, device="cuda")
    C = torch.empty(4096, 256, device="cuda")
    ends = [torch.tensor(np.cumsum(np.random.default_rng(i).multinomial(4096, np.full(32, 1 / 32))),
                         dtype=torch.int32, device="cuda") for i in range(8)]
    for e in ends:
        k(A, W, C, offsets=e)
    torch.cuda.synchronize()
    ex = k.executable
    st = ex.dynamic
    assert st is not None and st.fast is not None
    values = st.seen[dyn._torch_key(A, W, C, ends[0])]
    res = {
        "call_us": per_call(lambda i: k(A, W, C, offsets=ends[i % 8])),
        "launch_dynamic_us": per_call(lambda i: dyn.launch_dynamic(ex, A, W, C, offsets=ends[i % 8], alpha=None,
                                                                   beta=None, stream=None, validate=False)),
        "key_us": per_call(lambda i: dyn._torch_key(A, W, C, ends[i % 8])),
        "launcher_us": per_call(lambda i: st.fast(st.grid, st.block, st.smem, dyn._TORCH[1](0), values,
                                                  st.counter(dyn._TORCH[1](0)))),
        "checked_us": per_call(lambda i: dyn._launch_checked(ex, st, A, W, C, offsets=ends[i % 8], alpha=None,
                                                             beta=None, stream=None, validate=False), n=50),
    }
    lk = next(iter(gemmc.compile_string("kernel varlen { alpha runtime beta runtime grouped list problems 512 }")))
    for problems in (64, 512):
        sets = random_lists(problems)
        for s in sets:
            lk(*s, alpha=1.0, beta=0.0)
        torch.cuda.synchronize()
        res[f"list{problems}_us"] = per_call(lambda i, sets=sets: lk(*sets[i % 8], alpha=1.0, beta=0.0), n=8)
        profile = cProfile.Profile()
        profile.enable()
        for i in range(8):
            lk(*sets[i % 8], alpha=1.0, beta=0.0)
        profile.disable()
        torch.cuda.synchronize()
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(12)
        print(text.getvalue()[:3000])
    print(res, flush=True)
    with open(os.environ.get("OUT", "/tmp") + "/host.json", "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()

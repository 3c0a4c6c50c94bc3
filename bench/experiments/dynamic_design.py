"""The dynamic family's design choices, measured (docs/INTERNALS.md, "Dynamic batches"). GPU machine only:

    python3 bench/experiments/dynamic_design.py --out $OUT

1. Scheduling in every block versus a planning kernel: the persistent kernel with every group empty (the schedule
   computed, no tile) against one extra launch of a tiny kernel (the validation kernel over the same ends), each
   as graph replays: what a planning kernel would add before the main kernel could start, at the least.
2. The ladder's top: with the 128 x 128 tile (the default: 8 x 8 micro-tile) or without it, on MoE cases.
   (bench/results/dynamic/2026-11-26_h100_dynamic_design-call2.json ran it when the kernel called each variant as a
   non-inlined function under a bound of two blocks per SM: "default" there is the ladder without the 128 x 128
   tile, "with 128x128" the one with it.)
3. The TLP threshold: one wave of the persistent grid (the default), four waves, and none (the largest tiles always).
The compiled kernels' registers and local memory (spills) are printed too.
"""

from __future__ import annotations

import argparse
import json
import statistics
from functools import partial
from pathlib import Path

import numpy as np

import gemmc
from gemmc.families.dynamic import calibration as cal
from gemmc.ir.types import DType
from gemmc.runtime.dynamic import state
from gemmc.runtime.streams import external_stream, torch_stream

CASES = [(32, 8192, 1024, 512), (8, 4096, 512, 512), (8, 65536, 512, 512), (64, 16384, 1024, 2048)]
CALLS, WINDOWS = 20, 5


def replay_us(fn) -> float:
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(CALLS):
            fn()
    graph.replay()
    samples = []
    for _ in range(WINDOWS):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        graph.replay()
        b.record()
        b.synchronize()
        samples.append(a.elapsed_time(b) * 1e3 / CALLS)
    return statistics.median(samples)


def moe_kernel(name: str, n: int, k: int) -> gemmc.CompiledKernel:
    return next(iter(gemmc.compile_string(f"kernel {name} {{ layout B col grouped M n {n} k {k} groups 128 }}")))


def kernels(n: int, k: int) -> tuple[gemmc.CompiledKernel, gemmc.CompiledKernel]:
    """The default ladder's kernel and one without the 128 x 128 tile (the fixed sizes are launch arguments: every
    case shares each one's compile)."""
    saved = dict(cal.MAX_OUTPUTS.value)
    base = moe_kernel("moe", n, k)
    cal.MAX_OUTPUTS.value[DType.F32] = 32
    smaller = moe_kernel("moe_no128", n, k)
    cal.MAX_OUTPUTS.value.clear()
    cal.MAX_OUTPUTS.value.update(saved)
    return base, smaller


def main() -> None:
    import cupy as cp
    import torch

    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    out: dict = {"gpu": torch.cuda.get_device_name(), "rows": []}
    base, smaller = kernels(512, 512)
    for label, kern in (("default", base), ("without 128x128", smaller)):
        fn = state(kern.executable).fn
        out[f"{label}_registers"] = fn.num_regs
        out[f"{label}_local_bytes"] = fn.local_size_bytes
        out[f"{label}_grid"] = state(kern.executable).grid
    # 1. the schedule's own cost against one more launch
    A, W, C = (torch.randn(4096, 512, device="cuda"), torch.randn(128, 512, 512, device="cuda"),
               torch.empty(4096, 512, device="cuda"))
    empty = torch.zeros(128, dtype=torch.int32, device="cuda")
    st = state(base.executable)
    ws = cp.zeros(4, dtype=cp.int32)

    def tiny() -> None:
        st.validate((1, 1, 1), (256, 1, 1), (np.uint64(empty.data_ptr()), np.int32(128), np.int64(4096), ws),
                    stream=external_stream(torch_stream()))

    out["schedule_only_us"] = replay_us(lambda: base(A, W, C, offsets=empty))
    out["one_more_launch_us"] = replay_us(tiny)
    # 2, 3. ladders and thresholds on MoE cases
    for experts, tokens, n, k in CASES:
        rng = np.random.default_rng(experts + tokens)
        A, W, C = (torch.randn(tokens, k, device="cuda"), torch.randn(experts, n, k, device="cuda"),
                   torch.empty(tokens, n, device="cuda"))
        for kind, sizes in (("uniform", rng.multinomial(tokens, np.full(experts, 1 / experts))),
                            ("half", np.r_[tokens // 2, rng.multinomial(tokens - tokens // 2,
                                                                        np.full(experts - 1, 1 / (experts - 1)))])):
            ends = torch.tensor(np.cumsum(sizes), dtype=torch.int32, device="cuda")
            row = {"case": f"E{experts} T{tokens} N{n} K{k}", "routing": kind}
            for label, kern in zip(("default", "without 128x128"), kernels(n, k), strict=True):
                st = state(kern.executable)
                default = st.sizes
                for tlabel, threshold in (("one wave", st.threshold), ("four waves", 4 * st.threshold),
                                          ("top tiles", 1)):
                    if label != "default" and tlabel != "one wave":
                        continue
                    st.sizes = (*default[:3], np.int64(threshold))  # the launch's TLP threshold argument
                    row[f"{label}, {tlabel}"] = replay_us(partial(kern, A, W, C, offsets=ends))
                st.sizes = default
            print(row, flush=True)
            out["rows"].append(row)
    print({k: v for k, v in out.items() if k != "rows"})
    Path(args.out, "dynamic_design.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

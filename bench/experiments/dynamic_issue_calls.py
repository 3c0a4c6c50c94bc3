"""Why a grouped call's host time reads 13-47 us in `python -m gemmc.bench dynamic`'s windows ("host issue": 20 calls
issued without a synchronisation, then one) and 12.8 us in bench/experiments/dynamic_host.py (200 calls of a small
kernel). GPU machine only, from the tree's root:

    OUT=... python3 bench/experiments/dynamic_issue_calls.py        # $OUT/issue-calls.json

For two MoE steps of the benchmark (E8 T65536 N512 K512 with half the tokens on one expert, its slowest "host issue"
row, 46.8 us; E32 T8192 N1024 K512 uniform, 28.7 us), the benchmark's measure (timing.host_seconds, windows of 20
calls, sync=False) beside each call's own time in such windows: the median over WINDOWS windows of call i's time, for
i = 0..19, with the cyclic garbage collector on and off. Prediction: if the calls themselves cost ~13 us, the per-call
medians sit near 13 us and the window's mean is lifted by a few calls (the first, or ones the collector or the driver
holds); if every call costs more, something in the call waits on the GPU's queue. Measured
(bench/results/dynamic/2026-11-28_h100_issue-calls.json, its output in dynamic/2026-11-28_h100_issue-calls.log): the
first call of a window 151 and 73 us, calls 3-20 17-22 us, the collector changing nothing; every piece of the first
call is slow, and a torch op at the same point takes no less (161 and 123 us): the host's slowness after a wait on
the GPU, not gemmc's.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import time

import numpy as np

WINDOWS = 9
CALLS = 20
CASES = [(8, 65536, 512, 512, "half"), (32, 8192, 1024, 512, "uniform")]


def per_call(step) -> list[float]:
    """Median over WINDOWS windows of each call's microseconds (windows as the benchmark's: the queue drained first)."""
    import torch

    samples: list[list[float]] = [[] for _ in range(CALLS)]
    for _ in range(WINDOWS):
        torch.cuda.synchronize()
        for i in range(CALLS):
            t0 = time.perf_counter()
            step(i)
            samples[i].append((time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    return [statistics.median(s) for s in samples]


def first_call_parts(kern, A, W, C, ends) -> dict:
    """The first call after a synchronisation, in its pieces (median over WINDOWS windows; each window drains a queue of
    CALLS calls, then times the pieces back to back: the metadata key, the stream, the capture query with the
    counters' slot, the launch), the whole call after another such queue, and a torch elementwise op on C after a
    third, which is no gemmc code at all."""
    import torch

    from gemmc.runtime import dynamic as dyn

    st = kern.executable.dynamic
    pieces: dict[str, list[float]] = {name: [] for name in ("key", "stream", "counters", "launch", "whole", "torch_op")}

    def after_queue(i: int) -> None:
        for j in range(CALLS):
            kern(A, W, C, offsets=ends[j % len(ends)])
        torch.cuda.synchronize()

    for w in range(WINDOWS):
        after_queue(w)
        t0 = time.perf_counter()
        key = dyn.call_key(A, W, C, ends[0])
        t1 = time.perf_counter()
        handle = dyn.current_stream(key)
        t2 = time.perf_counter()
        counter = st.launch_counter(handle)
        t3 = time.perf_counter()
        st.fast(st.grid, st.block, st.smem, handle, st.seen[key], counter)
        t4 = time.perf_counter()
        for name, a, b in (("key", t0, t1), ("stream", t1, t2), ("counters", t2, t3), ("launch", t3, t4)):
            pieces[name].append((b - a) * 1e6)
        after_queue(w)
        t0 = time.perf_counter()
        kern(A, W, C, offsets=ends[0])
        pieces["whole"].append((time.perf_counter() - t0) * 1e6)
        after_queue(w)
        t0 = time.perf_counter()
        C.mul_(1.0)
        pieces["torch_op"].append((time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    return {f"first_{name}_us": statistics.median(v) for name, v in pieces.items()}


def main() -> None:
    import torch

    import gemmc
    from gemmc.bench import dynamic as d
    from gemmc.bench import timing

    rows = []
    for experts, tokens, n, k, kind in CASES:
        kern = next(iter(gemmc.compile_string(d.MOE.format(n=n, k=k))))
        A = torch.randn(tokens, k, device="cuda")
        W = torch.randn(experts, n, k, device="cuda")
        C = torch.empty(tokens, n, device="cuda")
        ends = [torch.tensor(np.cumsum(c), dtype=torch.int32, device="cuda") for c in d.draws(experts, tokens, kind)]

        def step(i: int, kern=kern, A=A, W=W, C=C, ends=ends) -> None:
            kern(A, W, C, offsets=ends[i % len(ends)])

        step(0)
        row = {"case": f"moe E{experts} T{tokens} N{n} K{k} {kind}",
               "bench_issue_us": timing.host_seconds(step, calls=CALLS, sync=False) * 1e6,
               "per_call_us": per_call(step)}
        gc.disable()
        try:
            row["bench_issue_no_gc_us"] = timing.host_seconds(step, calls=CALLS, sync=False) * 1e6
            row["per_call_no_gc_us"] = per_call(step)
        finally:
            gc.enable()
        row.update(first_call_parts(kern, A, W, C, ends))
        print(json.dumps(row), flush=True)
        rows.append(row)
    with open(os.path.join(os.environ.get("OUT", "."), "issue-calls.json"), "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

"""Where the hopper_grouped kernel's time goes (docs/PERFORMANCE-dynamic.md, "bf16 on the Hopper loop"): one MoE step of
two cases, gemmc's grouped kernel beside torch._grouped_mm and a dense GEMM of the same FLOPs (torch.mm), under Nsight
Compute. GPU machine only, from the tree's root:

    ncu --profile-from-start off --csv --metrics <METRICS> python3 bench/experiments/moe_half_ncu.py > out.csv

(`python3 bench/experiments/moe_half_ncu.py --metrics` prints the metric list.) Every kernel runs once before the
profiled region (compiles, loads), then once inside it. Results: bench/results/moe_half/2026-11-27_h100_ncu.csv.
"""

from __future__ import annotations

import sys

import numpy as np

METRICS = ",".join((
    "gpu__time_duration.sum",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
    "smsp__warps_issue_stalled_barrier_per_warp_active.pct",
    "smsp__warps_issue_stalled_long_scoreboard_per_warp_active.pct",
))
CASES = [(64, 32768, 2048, 1024), (8, 4096, 4096, 4096), (32, 16384, 1024, 512)]


def main() -> None:
    if "--metrics" in sys.argv:
        print(METRICS)
        return
    import torch

    import gemmc

    steps = []
    for experts, tokens, n, k in CASES:
        kern = next(iter(gemmc.compile_string(
            f"target cuda sm_90\nkernel moe_ncu {{ dtype bf16 layout B col grouped M n {n} k {k} groups 128 }}")))
        rng = np.random.default_rng([experts, tokens, 0])
        sizes = rng.multinomial(tokens, np.full(experts, 1.0 / experts))
        ends = torch.tensor(np.cumsum(sizes), dtype=torch.int32, device="cuda")
        A = torch.randn(tokens, k, device="cuda").to(torch.bfloat16)
        B = torch.randn(experts, n, k, device="cuda").to(torch.bfloat16).transpose(1, 2)
        C = torch.empty(tokens, n, device="cuda", dtype=torch.bfloat16)
        W = torch.randn(k, n, device="cuda").to(torch.bfloat16)
        steps.append(lambda kern=kern, A=A, B=B, C=C, ends=ends, W=W: (
            kern(A, B, C, offsets=ends), torch._grouped_mm(A, B, offs=ends), torch.mm(A, W)))
    for step in steps:
        step()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for step in steps:
        step()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()

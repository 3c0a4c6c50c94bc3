"""Where the f32-storage tf32 kernels of the hopper family spend their time (docs/PERFORMANCE-precision.md, "tf32 on
the Hopper loop"): `split tf32 x3` and `precision tf32` at 8192^3 under Nsight Compute. GPU machine only, from the
tree's root:

    ncu --profile-from-start off --set full -k regex:gemmc_ --export out python3 bench/experiments/tf32_ncu.py

Every kernel runs once before the profiled region (compiles, loads), then once inside it, in the order of MODES
(an argument replaces them: `... tf32_ncu.py "split tf32 x3"`). Results: bench/results/precision/
2026-11-27_h100_tf32-ncu-before.json (raw metrics of the full set, the loop with a named barrier between the
warpgroups), 2026-11-27_h100_tf32-ncu-before.csv and 2026-11-27_h100_tf32-ncu-mbarriers.csv (the details page),
2026-11-27_h100_tf32-ncu-after.csv (`--metrics` of cycles, instructions, tensor pipe and shared-memory wavefronts).
"""

from __future__ import annotations

import sys

MODES = ("split tf32 x3", "tf32")
SIZE = 8192


def main() -> None:
    import torch

    import gemmc

    modes = sys.argv[1].split(",") if len(sys.argv) > 1 else MODES
    a = torch.randn(SIZE, SIZE, device="cuda")
    b = torch.randn(SIZE, SIZE, device="cuda")
    c = torch.empty(SIZE, SIZE, device="cuda")
    kerns = [gemmc.compile_string(f"kernel k {{ dtype f32 precision {m} gemm {SIZE} x {SIZE} x {SIZE} }}")["k"]
             for m in modes]
    for k in kerns:
        k([a], [b], [c])
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for k in kerns:
        k([a], [b], [c])
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()

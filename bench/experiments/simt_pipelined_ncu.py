"""Where the 4096^3 f32 kernels of simt_pipelined.py spend their time, beside cuBLAS SGEMM, under Nsight Compute
(bench/results/uniform/2026-11-27_h100_simt-pipelined-ncu.csv). GPU machine only, from the tree's root, with
simt_pipelined.py's patch applied (its docstring):

    ncu --profile-from-start off --section SpeedOfLight --section ComputeWorkloadAnalysis --section SchedulerStats \
        --section WarpStateStats --section InstructionStats --section MemoryWorkloadAnalysis_Tables --csv \
        --page details python3 bench/experiments/simt_pipelined_ncu.py > OUT.csv

Every kernel runs once before the profiled region (compiles, loads), then once inside it: the candidates of NAMES
(simt_pipelined.py's), then torch.mm (TF32 off).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

NAMES = ("main", "s16b1", "p16b2", "p8b2", "p128x256x16")
CASE = (4096, 4096, 4096, "row", "row")


def main() -> None:
    import simt_pipelined as exp
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    m, n, k, _, _ = CASE
    a, b, c = torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda"), torch.empty(m, n, device="cuda")
    kerns = [exp.candidate(CASE, name) for name in NAMES]
    for kern in kerns:
        kern([a], [b], [c])
    torch.mm(a, b, out=c)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for kern in kerns:
        kern([a], [b], [c])
    torch.mm(a, b, out=c)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()

"""gemmc's benchmarks: `python -m gemmc.bench <suite>` (or `gemmc bench <suite>`) on the GPU machine.

Every suite times gemmc and its baselines in one process on the same inputs with the protocol of `timing`
(the protocol of docs/PERFORMANCE.md), shows its progress and a table of its cases, and writes
`bench/results/<suite>/<yyyy-mm-dd>_<gpu>.json`; `report` turns results files into the docs' tables and plots.
The suites import torch, CuPy, Triton and rich when they run, not when their `--help` is asked for
(`pip install gemmc[bench]` brings them).
"""

from __future__ import annotations

# suite -> what it measures (`gemmc bench --help` lists them; each is the module gemmc.bench.<suite>)
SUITES: dict[str, str] = {
    "irregular": "batches of differently sized f32 GEMMs vs a cuBLAS loop, padded bmm, grouped GEMM (papers 000, 003)",
    "uniform": "one large GEMM and a uniform batch vs cuBLAS SGEMM and torch.bmm",
    "precision": "FP32 on tensor cores (split f16/bf16/tf32) vs cuBLAS and Triton emulations (paper 001)",
    "tallskinny": "tall-and-skinny GEMM (TSM2R, TSM2L) vs cuBLAS and the copy roof (paper 002)",
    "half": "bf16/f16 storage GEMM on Hopper vs cuBLAS",
    "dynamic": "MoE steps and lists whose sizes change every call vs a torch loop, grouped cuBLAS, _grouped_mm",
    "moe_half": "bf16 MoE steps, routing new every call (grouped M on the Hopper loop) vs torch._grouped_mm",
    "concurrent": "groups of independent GEMMs vs cuBLAS one after another and on streams (paper 004)",
    "concurrent_train": "the concurrency predictor's training data and fit (paper 004)",
    "host_overhead": "host time of a plain Python call and where it goes (no GPU needed without --gpu)",
    "planner_time": "host time of the irregular planner (no GPU needed)",
    "report": "the docs' tables and plots from results files (no GPU needed)",
}
# The suites that time kernels, and so need a GPU, CuPy and torch (the others read results files or time the host).
NEEDS_GPU = frozenset({"irregular", "uniform", "precision", "tallskinny", "half", "dynamic", "moe_half", "concurrent"})

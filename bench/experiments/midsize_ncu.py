"""Experiment: a one-wave bf16 GEMM of the concurrent suite (ffn1.dX, 2048 x 1024 x 4096, B column-major) under ncu:
the hopper kernel at tile N 128 alone and in clusters of 2 (B multicast) in bands of 16 m-tiles, and alone in bands of
8, beside torch.mm (cuBLAS), each launched once after warm-up (the profiled region):

    ncu --profile-from-start off --csv --metrics "$(python3 bench/experiments/midsize_ncu.py --metrics)" \
        --section WarpStateStats python3 bench/experiments/midsize_ncu.py [M N K]

bench/experiments/midsize_sweep.py times the same configurations; this says where their time goes (tensor pipe,
L2 and shared-memory throughput, stalls).
"""

from __future__ import annotations

import dataclasses
import sys

import torch

METRICS = ",".join((
    "gpu__time_duration.sum",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__t_bytes.sum",
    "dram__bytes_read.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sectors_srcunit_tex_op_write.sum",
    "lts__t_sectors_srcunit_ltcfabric.sum",
    "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum",
    "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpc__cycles_elapsed.avg.per_second",
    "sm__cycles_active.avg",
))
if sys.argv[1:] == ["--metrics"]:
    print(METRICS)
    sys.exit(0)

import gemmc  # noqa: E402
from gemmc.families.hopper.planner import with_tile  # noqa: E402
from gemmc.ir.hardware import TARGETS  # noqa: E402

m, n, k = (int(x) for x in (sys.argv[1:] or ["2048", "1024", "4096"]))
base = gemmc.compile_string(f"target cuda sm_90\nkernel k {{ dtype bf16 layout B col gemm {m} x {n} x {k} }}")["k"]
plan = with_tile(base.ir, base.ir.plan, 128, 1, TARGETS["sm_90"])
# (cluster, band in m-tiles): the planner's kernel before one-wave launches took bands of 8, its multicast pair, and
# bands of 8 (the planner's now); profiled in this order, then cuBLAS
CONFIGS = ((1, 16), (2, 16), (1, 8))
kernels = {f"cluster{c} band{b}": base.with_plan(dataclasses.replace(plan, cluster=c, band=b // c), f"c{c} b{b}")
           for c, b in CONFIGS}
a = torch.randn(m, k, device="cuda").bfloat16()
b = torch.randn(n, k, device="cuda").bfloat16().t()  # column-major B: n lines of k
c = torch.empty(m, n, device="cuda").bfloat16()
ref = a.double() @ b.double()
for name, kern in kernels.items():
    for _ in range(2):  # compile and load before the profiled region
        kern([a], [b], [c])
    torch.cuda.synchronize()
    err = float((c.double() - ref).norm() / ref.norm())
    print(f"{name}: relative error {err:.1e}", file=sys.stderr)
torch.mm(a, b, out=c)
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart()
for kern in kernels.values():
    kern([a], [b], [c])
torch.mm(a, b, out=c)
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()

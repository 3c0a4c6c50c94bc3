"""Bring-up of the hopper family on a GPU: each case in its own process with a time limit, from one tile and one
k-block up to the persistent, clustered, staged configurations, so that one run tells which feature breaks (a hang
is a pipeline bug, a wrong result a layout bug, an error an illegal instruction or argument).

    python bench/experiments/hopper_smoke.py            # every case, one line each; exit status 1 if any failed
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASES = [
    "dtype bf16 tile 128x256x64 gemm 128 x 256 x 64",  # one tile, one k-block, no cluster
    "dtype bf16 tile 128x256x64 gemm 128 x 256 x 640",  # the ring of stages wraps
    "dtype bf16 tile 128x256x64 gemm 256 x 256 x 640",  # a cluster of 2, B multicast
    "dtype bf16 gemm 4096 x 4096 x 4096",  # persistent: several tiles per block
    "dtype bf16 layout A col, B col, C col gemm 1000 x 1001 x 999",  # M-major A, K-major B, staged B, edges
    "dtype A f16, B f16, C f32 layout B col gemm 300 x 259 x 1000",
    "dtype bf16 layout A col, B row, C col beta 0.5 gemm 257 x 63 x 31",
]

CHILD = """
import sys, torch, gemmc
k = gemmc.compile_string("kernel k { " + sys.argv[1] + " }")["k"]
p = k.ir.problems[0]
ir = k.ir
t = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
def mat(r, c, lay, dt):
    x = (torch.rand(r, c, device="cuda", dtype=torch.float64) * 2 - 1).to(dt)
    return x if lay.value == "row" else x.t().contiguous().t()
A = mat(p.m, p.k, ir.layout_a, t[ir.dtype.value]); B = mat(p.k, p.n, ir.layout_b, t[ir.dtype.value])
C = mat(p.m, p.n, ir.layout_c, t[ir.c_dtype.value])
beta = ir.beta or 0.0
ref = A.double() @ B.double() + beta * C.double()
if beta == 0:
    C.fill_(float("nan"))
k([A], [B], [C])
torch.cuda.synchronize()
err = float((C.double() - ref).norm() / ref.norm())
bad = int((~torch.isfinite(C)).sum())
print(f"err {err:.3e} nonfinite {bad} | {k.ir.plan.lines()[0]}")
sys.exit(0 if bad == 0 and err < 1e-2 else 3)
"""


def main() -> int:
    failed = 0
    for case in CASES:
        try:
            proc = subprocess.run([sys.executable, "-c", CHILD, case], capture_output=True, text=True, timeout=25,
                                  cwd=ROOT)
            status = "ok" if proc.returncode == 0 else f"FAIL({proc.returncode})"
            detail = (proc.stdout.strip() or proc.stderr.strip()[-1500:])
        except subprocess.TimeoutExpired:
            status, detail = "HANG", "no result in 25 s"
        failed += status != "ok"
        print(f"{status:9} {case}\n          {detail}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

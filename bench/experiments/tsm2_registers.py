"""Dev host, no GPU: registers per thread and spills of the TSM2 kernels that stop 15 changed, as ptxas reports
them (simt_registers.ptxas), beside each plan's t3, shared memory, register estimate and min-blocks request:
TSM2L in both layouts, TSM2R with row-major f64 A on sm_90 and sm_80, and the batches of 32 k timed at n = 32
(tsm2r_variants.py --study rowt32). Run from the tree to report (it imports that tree's gemmc):

    python3 bench/experiments/tsm2_registers.py [--no-floor]   # --no-floor: tsm2.ROW_MMA_REGS = 0
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from simt_registers import ptxas  # noqa: E402

import gemmc  # noqa: E402
from gemmc.families.tsm2r import planner as tsm2  # noqa: E402


def schedules() -> list[tuple[str, str, str]]:
    """(label, target arch, schedule text)."""
    rows = []
    for dtype in ("f32", "f64"):
        for kn in (8, 16):
            for lay in ("row", "col"):
                rows.append((f"tsm2l {dtype} k = n = {kn} {lay}", "sm_90",
                             f"dtype {dtype} layout A {lay}, B {lay}, C {lay} gemm 10000000 x {kn} x {kn} "
                             "algorithm tsm2l"))
    for arch, ns in (("sm_90", (1, 3, 8, 16, 24, 32)), ("sm_80", (3, 5, 8))):
        for n in ns:
            rows.append((f"tsm2r f64 row n = {n}", arch, f"dtype f64 gemm 16384 x {n} x 16384 algorithm tsm2r"))
    return rows


def measure(label: str, arch: str, text: str, t3: int = 0) -> str:
    k = gemmc.compile_string(f"target cuda {arch} kernel k {{ {text} }}")["k"]
    if t3:
        from tsm2r_variants import variant

        k = variant(k, t3=t3, stages=2, cluster=1)
        label += f", t3 {t3}"
    regs, spill = ptxas(k.source, k.rendered.entry, arch)
    plan = k.ir.plan
    return (f"{label:34s} {arch}  t3 {plan.t3:2d}  smem {plan.smem:6d}  estimate {plan.regs_estimate:3d}  "
            f"min_blocks {plan.min_blocks}  ptxas {regs:3d} registers, {spill:3d} bytes spilled")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-floor", action="store_true", help="plan without the ROW_MMA_REGS floor")
    args = parser.parse_args()
    if args.no_floor:
        tsm2.ROW_MMA_REGS = 0
    jobs = [(label, arch, text, 0) for label, arch, text in schedules()]
    jobs += [(f"tsm2r f64 row n = {n}", "sm_90", f"dtype f64 gemm 16384 x {n} x 16384 algorithm tsm2r", 32)
             for n in (16, 32)]
    with ThreadPoolExecutor(2) as pool:
        for line in pool.map(lambda j: measure(*j), jobs):
            print(line, flush=True)


if __name__ == "__main__":
    main()

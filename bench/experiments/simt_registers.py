"""Dev host, no GPU: registers per thread of single-variant SIMT kernels as ptxas reports them
(`nvcc -arch=sm_90 -Xptxas -v --cubin`), beside the planner's estimate (`SimtPlan.variant_regs`). The
calibration data of that estimate and of `SimtPlan.min_blocks`:

    python3 bench/experiments/simt_registers.py [--bounds]   # --bounds: also as planned (__launch_bounds__)
    python3 bench/experiments/simt_registers.py --bounds --tile "32x32x32 kslices 2 ksplit 2 threads 128" ...
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import gemmc  # noqa: E402
from gemmc.families.simt.planner import UNIFORM_F32, UNIFORM_F64  # noqa: E402
from gemmc.families.simt.tiling import COORDINATED, LOADBALANCED_LEVELS  # noqa: E402


def ptxas(source: str, entry: str, arch: str = "sm_90") -> tuple[int, int]:
    """(registers per thread, bytes of spill stores) that ptxas reports for `source` (one kernel)."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "k.cu"
        path.write_text(source)
        out = subprocess.run(["nvcc", f"-arch={arch}", "-Xptxas", "-v", "--cubin", "-o", str(Path(d) / "k.cubin"),
                              str(path)], capture_output=True, text=True, check=True).stderr
    regs = int(re.search(r"Used (\d+) registers", out).group(1))
    spill = int(re.search(r"(\d+) bytes spill stores", out).group(1))
    return regs, spill


def configs() -> list[tuple[str, str]]:
    rows = []
    f32 = {v for lv in LOADBALANCED_LEVELS for v in (lv.tall, lv.wide)} | set(UNIFORM_F32)
    f32 |= {v for group in COORDINATED.values() for _, v in group}
    for v in sorted(f32, key=str):
        rows.append(("f32", f"tile {v.bm}x{v.bn}x{v.bk} threads {v.threads}"))
    for v in sorted(set(UNIFORM_F64), key=str):
        rows.append(("f64", f"tile {v.bm}x{v.bn}x{v.bk} threads {v.threads}"))
    return rows


def measure(dtype: str, tile: str, bounds: bool) -> str:
    k = gemmc.compile_string(f"kernel k {{ dtype {dtype} {tile} gemm 300 x 300 x 300 }}")["k"]
    src = k.source if bounds else re.sub(r"__launch_bounds__\((\d+), \d+\)", r"__launch_bounds__(\1)", k.source)
    regs, spill = ptxas(src, k.rendered.entry)
    plan = k.ir.plan
    return (f"{dtype} {tile:32s} estimate {plan.regs_estimate:4d} ptxas {regs:4d} spill {spill:3d} "
            f"min_blocks {plan.min_blocks}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bounds", action="store_true")
    parser.add_argument("--tile", action="append", help="f32 tiles to report instead of the catalogue (repeatable)")
    args = parser.parse_args()
    rows = [("f32", f"tile {t}") for t in args.tile] if args.tile else configs()
    with ThreadPoolExecutor(2) as pool:
        for line in pool.map(lambda c: measure(*c, args.bounds), rows):
            print(line, flush=True)


if __name__ == "__main__":
    main()

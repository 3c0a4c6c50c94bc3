"""Host cost of the irregular planner (paper 000 Fig. 7 reports 6% of the kernel time at batch 8): the whole
pass pipeline for each case of bench/irregular.py, as `plan_for` pays it on a cache miss. No GPU needed:

    python3 bench/planner_time.py bench/results/<date>_<host>_planner.json

Median of 5 plans per case, each by a fresh kernel (an empty plan cache).
"""

from __future__ import annotations

import json
import platform
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import irregular  # noqa: E402

import gemmc  # noqa: E402


def main(out: str) -> None:
    kernel = gemmc.compile_string(irregular.schedule([(64, 64, 64)], "auto"))["irregular"]
    rows = []
    for name, shapes in irregular.inception_cases() + irregular.random_cases(False):
        times = []
        for _ in range(5):
            fresh = gemmc.CompiledKernel(kernel.ir, kernel.target, kernel.filename)
            times.append(fresh.plan_for(shapes).planner_seconds)
        plan = kernel.plan_for(shapes).ir
        rows.append({"case": name, "batch": len(shapes), "planner_us": statistics.median(times) * 1e6,
                     "tiles": len(plan.work.tiles), "method": plan.plan.method})
        row = rows[-1]
        print(f"{name:32s} batch {len(shapes):5d} tiles {row['tiles']:6d} planner {row['planner_us']:9.0f} us")
    Path(out).write_text(json.dumps({"suite": "planner", "host": platform.processor() or platform.machine(),
                                     "python": platform.python_version(), "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])

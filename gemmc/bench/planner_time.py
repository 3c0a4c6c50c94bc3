"""Host cost of the irregular planner (paper 000 Fig. 7 reports 6% of the kernel time at batch 8): the whole
pass pipeline for each case of the irregular suite, as `plan_for` pays it on a cache miss. No GPU needed:

    python -m gemmc.bench planner_time              # bench/results/planner_time/<date>_devhost.json

Median of 5 plans per case, each by a fresh kernel (an empty plan cache).
"""

from __future__ import annotations

import platform
import statistics

import gemmc
from gemmc.bench import harness, irregular

# the columns of its table (and of `gemmc bench report`'s)
COLUMNS = ("case", "batch", "tiles", "planner_us", "method")


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser("planner_time", __doc__)
    args = parser.parse_args(argv)
    kernel = gemmc.compile_string(irregular.schedule([(64, 64, 64)], "auto"))["irregular"]
    rows = []
    for name, shapes in harness.progress(irregular.inception_cases() + irregular.random_cases(False), "planner"):
        times = []
        for _ in range(5):
            fresh = gemmc.CompiledKernel(kernel.ir, kernel.target, kernel.filename)
            times.append(fresh.plan_for(shapes).planner_seconds)
        plan = kernel.plan_for(shapes).ir
        rows.append({"case": name, "batch": len(shapes), "planner_us": statistics.median(times) * 1e6,
                     "tiles": plan.work.tile_count, "method": plan.plan.method})
        row = rows[-1]
        harness.log(f"{name:32s} batch {len(shapes):5d} tiles {row['tiles']:6d} planner {row['planner_us']:9.0f} us")
    path = harness.write_results(args.out, "planner_time", rows, {"host": platform.processor() or platform.machine(),
                                                                   "python": platform.python_version()},
                                 gpu="devhost", tag=args.tag)
    harness.table(rows, COLUMNS, "planner_time")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""How well `tile auto`'s cost model ranks (no GPU): for every case of gemmc/bench/irregular.py, the candidates the
tuning step timed on the H100 in a recorded run, and which of them the model picks offline (GEMMC_TUNE=0, or the
standalone source of `gemmc compile`), against the fastest measured.

    python3 bench/experiments/cost_model.py [bench/results/irregular/2026-11-23_h100_irregular_slices.json]

A case's loss is the measured time of the model's pick over the fastest candidate's; reported per case and as a
geometric mean. Labels are matched to the recorded run's (simt.alternatives names them the same way); a pick the
run did not time is reported as such, not guessed.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import gemmc
from gemmc.bench import irregular
from gemmc.families.simt import planner as simt

RECORDED = Path(__file__).resolve().parents[2] / "bench" / "results" / "2026-11-23_h100_irregular_slices.json"


def main() -> None:
    run = json.loads(Path(sys.argv[1] if len(sys.argv) > 1 else RECORDED).read_text())
    cases = dict(irregular.inception_cases() + irregular.random_cases(False))
    losses = []
    print(f"{'case':30s} {'model pick':44s} {'its us':>8s} {'best us':>8s} {'loss':>6s}  recorded model's loss")
    for row in run["rows"]:
        kernel = gemmc.compile_string(irregular.schedule(cases[row["case"]], "auto"), target="sm_90")["irregular"]
        pick = simt.alternatives(kernel.ir, kernel.target)[0][0].removesuffix(" (model)")
        measured = {label.removesuffix(" (model)"): us for label, us in row["tuning_us"].items()}
        best = min(measured.values())
        if pick not in measured:
            print(f"{row['case']:30s} {pick:44s} not timed in this run")
            continue
        losses.append(measured[pick] / best)
        print(f"{row['case']:30s} {pick:44s} {measured[pick]:8.1f} {best:8.1f} {losses[-1]:6.3f}  "
              f"{1 + row.get('model_slowdown', 0):.3f}")
    recorded = [1 + r.get("model_slowdown", 0) for r in run["rows"]]
    print(f"geometric mean loss: model {math.exp(sum(map(math.log, losses)) / len(losses)):.3f} "
          f"(worst {max(losses):.3f}) over {len(losses)} cases; the recorded run's model "
          f"{math.exp(sum(map(math.log, recorded)) / len(recorded)):.3f} (worst {max(recorded):.3f})")


if __name__ == "__main__":
    main()

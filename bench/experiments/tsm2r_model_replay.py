"""Experiment (no GPU): how good the TSM2R model's untuned choice is, replayed on recorded measurements.

The benchmark's tuning step times every candidate of a case in one process and records them (`tuning_us` in the
`..._tallskinny-tsm2r-*.json` files). This plans each recorded case with the current planner (what GEMMC_TUNE=0 and
offline `gemmc compile` give), looks up the measured time of the model's cluster size, and writes the picks;
given a second file from another tree, it compares the two. Stop 17 used it for the measured cluster fill.

    python3 bench/experiments/tsm2r_model_replay.py /tmp/new.json [--against /tmp/old.json]
"""
from __future__ import annotations

import argparse
import glob
import json
import statistics
from pathlib import Path

import gemmc

FILES = "bench/results/tallskinny/2026-11-23_h100_tallskinny-tsm2r-*-stop1[67].json"


def picks() -> list[dict]:
    out = []
    for f in sorted(glob.glob(FILES)):
        for r in json.load(open(f))["rows"]:
            timed = r.get("tuning_us")
            if not timed:
                continue
            lay = r["layout"]
            text = (f"kernel t {{ dtype {r['dtype']} layout A {lay}, B {lay}, C {lay} "
                    f"gemm {r['m']} x {r['n']} x {r['k']} algorithm tsm2r }}")
            cluster = gemmc.compile_string(text, target="sm_90")["t"].ir.plan.cluster
            # the plan's own shape at that cluster size (labels "cluster N" or "cluster N (model)")
            label = next((lab for lab in timed if lab.split(" (")[0] == f"cluster {cluster}" and "," not in lab), None)
            out.append({"file": Path(f).name, "case": r["case"], "cluster": cluster,
                        "us": timed[label] if label else None, "best": min(timed.values())})
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--against", help="the picks of another tree, to compare")
    args = parser.parse_args()
    new = picks()
    json.dump(new, open(args.out, "w"), indent=1)
    if not args.against:
        return
    old = json.load(open(args.against))
    slow = {"before": [], "after": []}
    for a, b in zip(old, new, strict=True):
        if a["us"] is None or b["us"] is None:
            continue
        slow["before"].append(a["us"] / a["best"] - 1)
        slow["after"].append(b["us"] / b["best"] - 1)
        if a["cluster"] != b["cluster"]:
            print(f"{a['file']}: {a['case']}: cluster {a['cluster']} {a['us']:.0f} us -> {b['cluster']} {b['us']:.0f}"
                  f" (fastest candidate {b['best']:.0f})")
    for when, values in slow.items():
        print(f"{when}: {len(values)} cases, the model's pick against the fastest: median "
              f"{statistics.median(values):.1%}, mean {statistics.mean(values):.1%}, worst {max(values):.1%}")


if __name__ == "__main__":
    main()

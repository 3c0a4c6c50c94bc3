"""Plot an irregular-suite results file: gemmc's speedup per case over the best baseline and over each tiling
ablation. Runs anywhere matplotlib is installed (no GPU):

    python3 bench/plot_irregular.py bench/results/2026-11-22_h100_irregular.json docs/irregular-speedups.png
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(src: str, dst: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = json.loads(Path(src).read_text())
    rows = data["rows"]
    names = [r["case"] for r in rows]
    best = [min(r["loop_us"], r["bmm_us"], r["grouped_us"]) for r in rows]
    series = {"tile auto": "auto_us", "uniform (core)": "uniform_us", "load-balanced": "loadbalanced_us",
              "load-balanced, old TLP": "loadbalanced-oldTLP_us", "coordinated": "coordinated_us"}
    fig, ax = plt.subplots(figsize=(14, 5.5))
    width = 0.8 / len(series)
    for j, (label, key) in enumerate(series.items()):
        xs = [i + (j - len(series) / 2 + 0.5) * width for i in range(len(rows))]
        ax.bar(xs, [b / r[key] for b, r in zip(best, rows, strict=True)], width, label=label)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhline(1.5, color="grey", linewidth=0.8, linestyle="--", label="goal: geomean 1.5x")
    ax.set_xticks(range(len(rows)), names, rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("speedup over the best baseline\n(cuBLAS loop / padded bmm / grouped, all in graphs)")
    summary = data.get("summary", {})
    ax.set_title(f"gemmc irregular batches, {data.get('gpu', '')}, f32 on CUDA cores: tile auto geomean "
                 f"{summary.get('geomean_speedup_vs_best', 0):.2f}x, min {summary.get('min_speedup_vs_best', 0):.2f}x")
    ax.legend(fontsize=8, ncol=3)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    main(*sys.argv[1:3])

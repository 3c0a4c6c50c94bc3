"""The docs' benchmark tables and plots, regenerated from results files; no GPU needed.

    python -m gemmc.bench report                       # the docs' tables, from the results files they cite
    python -m gemmc.bench report --newest              # the newest file of each suite under bench/results/<suite>/
    python -m gemmc.bench report FILE.json [FILE.json ...]

Writes `<tables>/<suite>.md` (default docs/results/): for each results file of the suite, the GPU, the date, the
file it was drawn from and one table of the suite's columns; for the irregular suite also
`<plots>/irregular-speedups.png` (default docs/): gemmc's speedup per case over the best baseline and over each
tiling ablation (needs matplotlib, from the [bench] extra).
"""

from __future__ import annotations

import importlib
import json
import math
import sys
from pathlib import Path
from typing import Any

from gemmc.bench import SUITES, harness

REPORTED = ("irregular", "uniform", "precision", "half", "tallskinny", "concurrent", "dynamic", "moe_half",
            "host_overhead", "planner_time")


def suite_of(path: Path, data: dict[str, Any]) -> str | None:
    """The suite a results file belongs to: its folder under the results root, else its `suite` field's prefix
    (`irregular_sliced`, `tallskinny-tsm2r-f64`)."""
    if path.parent.name in SUITES:
        return path.parent.name
    name = str(data.get("suite", "")).replace("-", "_")
    return next((s for s in sorted(SUITES, key=len, reverse=True) if name == s or name.startswith(s)), None)


# The results files the docs' performance pages are drawn from, per suite (paths under bench/results/): `report`
# with no files named rewrites docs/results/<suite>.md from these, and a test checks the pages match them.
DOCS_TABLES: dict[str, tuple[str, ...]] = {
    "irregular": ("irregular/2026-11-23_h100_irregular_stop20.json",),
    "uniform": ("uniform/2026-11-22_h100_uniform_final.json",),
    "precision": ("precision/2026-11-22_h100_precision_merged.json",
                  "precision/2026-11-26_h100_precision_hopper-tf32.json",
                  "precision/2026-11-27_h100_hopper-split.json", "precision/2026-11-27_h100_tf32.json",
                  "precision/2026-11-27_h100_split.json"),
    "half": ("half/2026-11-26_h100_half-epilogue.json",),
    "tallskinny": ("tallskinny/2026-11-23_h100_tallskinny-tsm2r-f32-colmajor.json",
                   "tallskinny/2026-11-23_h100_tallskinny-tsm2r-f32-rowmajor.json",
                   "tallskinny/2026-11-23_h100_tallskinny-tsm2r-f64-colmajor.json",
                   "tallskinny/2026-11-23_h100_tallskinny-tsm2l-colmajor-staged.json",
                   "tallskinny/2026-11-23_h100_tallskinny-tsm2l-rowmajor-staged.json"),
    "concurrent": ("concurrent/2026-11-26_h200_concurrent.json", "concurrent/2026-11-27_h100_bf16-own-operands.json",
                   "concurrent/2026-11-27_h100_f32-own-operands.json"),
    "dynamic": ("dynamic/2026-11-28_h100_warp-tlp-suite.json", "dynamic/2026-11-28_h100_warp-tlp.json",
                "dynamic/2026-11-28_h100_thin.json"),
    "moe_half": ("moe_half/2026-11-27_h100.json", "moe_half/2026-11-27_h100_tail-split.json"),
}


def pages(files: list[Path]) -> dict[str, str]:
    """suite -> its page: one section per results file, in the order given."""
    out: dict[str, list[str]] = {}
    for path in files:
        data = json.loads(path.read_text())
        suite = suite_of(path, data)
        if suite not in REPORTED:
            raise ValueError(f"{path}: not a results file of a reported suite ({', '.join(REPORTED)})")
        out.setdefault(suite, []).append(markdown(suite, data, path.as_posix()))
    head = ("Written by `python -m gemmc.bench report` from the results files named below; the performance pages "
            "quote these tables.\n")
    return {suite: f"# {suite}\n\n{head}\n" + "\n".join(sections) for suite, sections in out.items()}


def newest(results: Path) -> list[Path]:
    """The newest results file of each reported suite (file names begin with the date) that is a run of the suite
    (its rows: experiments beside the suite's runs keep other shapes)."""
    def is_run(path: Path) -> bool:
        data = json.loads(path.read_text())
        return isinstance(data, dict) and isinstance(data.get("rows"), list)

    found = []
    for suite in REPORTED:
        runs = [p for p in sorted((results / suite).glob("*.json")) if is_run(p)]
        if runs:
            found.append(runs[-1])
    return found


def markdown(suite: str, data: dict[str, Any], source: str) -> str:
    """One suite's summary: where the numbers come from, then its columns as a markdown table."""
    columns = importlib.import_module(f"gemmc.bench.{suite}").COLUMNS
    rows = data["rows"]
    shown = [c for c in columns if any(c in r for r in rows)]
    name = Path(source).name  # <date>_<gpu>_...: what an older file without the fields still tells
    gpu, date = data.get("gpu") or name.split("_")[1].upper(), data.get("date") or name[:10]
    lines = [f"## {name}", "", f"{gpu}, {date}; from `{source}`.", ""]
    if data.get("protocol"):
        lines += [f"Timing: {data['protocol']}.", ""]
    lines += ["| " + " | ".join(shown) + " |", "|" + "---|" * len(shown)]
    lines += ["| " + " | ".join(harness.fmt(r.get(c, "")).replace("|", "\\|") for c in shown) + " |" for r in rows]
    return "\n".join(lines) + "\n"


SERIES = {"tile auto": "auto_us", "uniform (core)": "uniform_us", "load-balanced": "loadbalanced_us",
          "load-balanced, old TLP": "loadbalanced-oldTLP_us", "coordinated": "coordinated_us"}


def irregular_plot(data: dict[str, Any], dst: Path) -> None:
    """gemmc's speedup per case over the best baseline (cuBLAS loop, padded bmm, grouped GEMM) and per ablation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = data["rows"]
    series = {label: key for label, key in SERIES.items() if all(key in r for r in rows)}
    best = [min(r["loop_us"], r["bmm_us"], r["grouped_us"]) for r in rows]
    fig, ax = plt.subplots(figsize=(14, 5.5))
    width = 0.8 / len(series)
    for j, (label, key) in enumerate(series.items()):
        xs = [i + (j - len(series) / 2 + 0.5) * width for i in range(len(rows))]
        ax.bar(xs, [b / r[key] for b, r in zip(best, rows, strict=True)], width, label=label)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(rows)), [r["case"] for r in rows], rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("speedup over the best baseline\n(cuBLAS loop / padded bmm / grouped, all in graphs)")
    speedups = [b / r["auto_us"] for b, r in zip(best, rows, strict=True)]
    geomean = math.exp(sum(map(math.log, speedups)) / len(speedups))
    ax.set_title(f"gemmc irregular batches, {data.get('gpu', '')}, f32 on CUDA cores: tile auto geomean "
                 f"{geomean:.2f}x, min {min(speedups):.2f}x")
    ax.legend(fontsize=8, ncol=3)
    fig.tight_layout()
    dst.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(dst, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser("report", __doc__, results=False)
    parser.add_argument("files", nargs="*", type=Path,
                        help="results files (default: those the docs cite, DOCS_TABLES in gemmc/bench/report.py)")
    parser.add_argument("--newest", action="store_true", help="the newest results file of each suite instead")
    parser.add_argument("--results", type=Path, default=harness.RESULTS, help="results root (default: %(default)s)")
    parser.add_argument("--tables", type=Path, default=Path("docs/results"), help="default: %(default)s")
    parser.add_argument("--plots", type=Path, default=Path("docs"), help="default: %(default)s")
    args = parser.parse_args(argv)
    if args.files:
        files = args.files
    elif args.newest:
        files = newest(args.results)
    else:
        files = [args.results / f for sources in DOCS_TABLES.values() for f in sources]
    if not files:
        parser.error(f"no results files under {args.results}/<suite>/ and none named")
    try:
        written = pages(files)
    except (ValueError, OSError) as e:
        parser.error(str(e))
    args.tables.mkdir(parents=True, exist_ok=True)
    for suite, text in written.items():
        out = args.tables / f"{suite}.md"
        out.write_text(text)
        print(f"wrote {out}")
    for path in files:
        data = json.loads(path.read_text())
        if suite_of(path, data) == "irregular":
            plot = args.plots / "irregular-speedups.png"
            try:
                irregular_plot(data, plot)
            except ModuleNotFoundError as e:  # matplotlib is in the [bench] extra only
                if e.name != "matplotlib":
                    raise
                sys.exit(f"not written: {plot}, which needs matplotlib (pip install -e '.[bench]'); "
                         "the tables above are written")
            print(f"wrote {plot}")

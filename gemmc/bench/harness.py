"""What every suite shares around the timing: its command line, progress, result tables and results files.

A run writes `bench/results/<suite>/<yyyy-mm-dd>_<gpu>.json` (docs/PERFORMANCE.md): the suite, the GPU's full
name, the date, the timing protocol and one row per case. rich draws the progress and the tables on a terminal and
plain text elsewhere; it is imported when a suite runs, so `--help` needs neither rich nor torch.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from datetime import date
from pathlib import Path
from typing import Any, TypeVar

from gemmc.bench import timing

RESULTS = Path("bench/results")
PROTOCOL = (f"CUDA events, {timing.CALLS} back-to-back calls per window, median of {timing.WINDOWS} windows, after "
            "warm-up; graph replay for baselines and gemmc device time")

T = TypeVar("T")


def example(name: str) -> Path:
    """An example schedule the suites take their cases from: the repository's examples/ (a clone, an editable
    install), else the copy a wheel carries in gemmc/bench/examples/ (pyproject.toml)."""
    here = Path(__file__).resolve()
    for folder in (here.parents[2] / "examples", here.parent / "examples"):
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(f"example schedule {name} is neither in the repository's examples/ nor in the package")


def parser(suite: str, doc: str | None, *, results: bool = True) -> argparse.ArgumentParser:
    """A suite's command line: `gemmc bench <suite>` with its module docstring as the description and, for a suite
    that writes a results file (`results`), its folder (`--out`) and a tag for its name (`--tag`)."""
    p = argparse.ArgumentParser(prog=f"gemmc bench {suite}", description=doc,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    if results:
        p.add_argument("--out", default=str(RESULTS), help="results folder (default: %(default)s)")
        p.add_argument("--tag", default="", help="appended to the results file's name")
    return p


def gpu_short(name: str) -> str:
    """The file-name form of a GPU's name: its model token (`NVIDIA H100 80GB HBM3` -> `h100`), else its last word."""
    words = name.split()
    model = next((w for w in words if re.fullmatch(r"[A-Z]+[0-9]+[A-Z]?", w) and not w.endswith("GB")), None)
    return (model or (words[-1] if words else "unknown")).lower()


def results_path(out_dir: str | Path, suite: str, gpu: str, day: str, tag: str = "") -> Path:
    """`<out_dir>/<suite>/<day>_<gpu>[_<tag>].json`; a tag tells apart two runs of one suite on one day."""
    return Path(out_dir) / suite / f"{day}_{gpu_short(gpu)}{'_' + tag if tag else ''}.json"


def write_results(out_dir: str | Path, suite: str, rows: list[dict], extra: dict | None = None, *,
                  gpu: str | None = None, tag: str = "") -> Path:
    """Write a run's rows with the GPU's name (the current CUDA device unless `gpu` names another machine, as the
    host-only suites do) and the protocol; returns the path."""
    name = gpu if gpu is not None else timing.gpu_name()
    day = date.today().isoformat()
    path = results_path(out_dir, suite, name, day, tag)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"suite": suite, "gpu": name, "date": day, "protocol": PROTOCOL, **(extra or {}), "rows": rows}
    path.write_text(json.dumps(payload, indent=2) + "\n")
    return path


def progress(items: Iterable[T], description: str) -> Iterator[T]:
    """Iterate over `items` with a progress bar on standard error."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    items = items if isinstance(items, Sequence) else list(items)
    count = len(items)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=_console(stderr=True), transient=False) as bar:
        task = bar.add_task(description, total=count)
        for item in items:
            yield item
            bar.advance(task)


def log(message: str) -> None:
    """One line of a run's progress (a case's result as it comes), above the progress bar."""
    _console(stderr=False).print(message, markup=False, highlight=False)


def fmt(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def table(rows: list[dict], columns: Sequence[str], title: str = "") -> None:
    """Print `rows` as a table of the `columns` any row has."""
    from rich.table import Table

    shown = [c for c in columns if any(c in r for r in rows)]
    out = Table(*shown, title=title or None)
    for r in rows:
        out.add_row(*(fmt(r.get(c, "")) for c in shown))
    _console(stderr=False).print(out)


def _console(stderr: bool) -> Any:
    from rich.console import Console

    return Console(stderr=stderr)

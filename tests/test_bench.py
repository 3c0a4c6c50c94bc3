"""The benchmark tool without a GPU: every suite's `--help` with torch, CuPy, Triton, rich and matplotlib missing,
where results files go, and the report's tables."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gemmc.bench import SUITES, harness, irregular, report
from tests.conftest import ROOT

# Importing a module whose sys.modules entry is None raises ImportError: the suites must not import these to parse
# their command line.
WITHOUT = "import sys\nfor m in ('torch', 'cupy', 'triton', 'rich', 'matplotlib'): sys.modules[m] = None\n"


def run_help(*args: str) -> subprocess.CompletedProcess:
    code = WITHOUT + f"sys.argv = ['gemmc'] + {list(args)!r}\nfrom gemmc.cli import main\nmain()"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_every_suite_has_help_without_the_gpu_packages(suite: str) -> None:
    done = run_help("bench", suite, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: gemmc bench {suite}")


def test_bench_lists_the_suites() -> None:
    done = run_help("bench", "--help")
    assert done.returncode == 0, done.stderr
    assert all(suite in done.stdout for suite in SUITES)


def test_an_unknown_suite_is_a_usage_error() -> None:
    done = run_help("bench", "nosuch")
    assert done.returncode == 2 and "invalid choice: 'nosuch'" in done.stderr


def test_python_dash_m_runs_a_suite() -> None:
    done = subprocess.run([sys.executable, "-m", "gemmc.bench", "report", "--help"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "docs/results" in done.stdout, done.stderr


@pytest.mark.parametrize(("name", "short"), [("NVIDIA H100 80GB HBM3", "h100"), ("NVIDIA H200", "h200"),
                                             ("NVIDIA GH200 480GB", "gh200"), ("AMD Instinct MI300X", "mi300x"),
                                             ("NVIDIA GeForce RTX 4090", "4090"), ("devhost", "devhost")])
def test_gpu_short_names(name: str, short: str) -> None:
    assert harness.gpu_short(name) == short


def test_results_go_under_the_suite_with_the_date_and_gpu(tmp_path: Path) -> None:
    rows = [{"case": "a", "auto_us": 1.5}]
    path = harness.write_results(tmp_path, "irregular", rows, {"summary": {"x": 1}}, gpu="NVIDIA H100 80GB HBM3")
    assert path.parent == tmp_path / "irregular"
    assert path.name.endswith("_h100.json") and len(path.name) == len("2026-01-01_h100.json")
    data = json.loads(path.read_text())
    assert data["gpu"] == "NVIDIA H100 80GB HBM3" and data["rows"] == rows and data["summary"] == {"x": 1}
    assert "median of 7 windows" in data["protocol"]
    tagged = harness.write_results(tmp_path, "irregular", rows, gpu="NVIDIA H200", tag="quick")
    assert tagged.name.endswith("_h200_quick.json")


def test_suite_of_a_results_file(tmp_path: Path) -> None:
    assert report.suite_of(tmp_path / "tallskinny" / "x.json", {}) == "tallskinny"
    assert report.suite_of(tmp_path / "x.json", {"suite": "tallskinny-tsm2r-f64-rowmajor"}) == "tallskinny"
    assert report.suite_of(tmp_path / "x.json", {"suite": "concurrent_train"}) == "concurrent_train"
    assert report.suite_of(tmp_path / "x.json", {"suite": "host-overhead"}) == "host_overhead"
    assert report.suite_of(tmp_path / "x.json", {"suite": "other"}) is None


def test_report_writes_the_newest_file_of_each_suite_as_a_table(tmp_path: Path) -> None:
    results = tmp_path / "results"
    old = harness.results_path(results, "uniform", "NVIDIA H100", "2026-01-01")
    new = harness.results_path(results, "uniform", "NVIDIA H100", "2026-02-01")
    for path, us in ((old, 9.0), (new, 2.0)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"suite": "uniform", "gpu": "NVIDIA H100", "date": path.name[:10],
                                    "rows": [{"case": "4096^3 | f32", "gemmc_us": us, "ratio": 1.25}]}))
    report.main(["--newest", "--results", str(results), "--tables", str(tmp_path / "tables"), "--plots", str(tmp_path)])
    text = (tmp_path / "tables" / "uniform.md").read_text()
    assert "NVIDIA H100, 2026-02-01" in text and new.as_posix() in text
    assert "| case | gemmc_us | ratio |" in text and "| 4096^3 \\| f32 | 2 | 1.25 |" in text


def test_the_suites_find_their_example_schedules() -> None:
    assert harness.example("inception_all.gs").read_text().startswith("#")
    assert len(irregular.inception_cases()) == 10  # the nine modules and all of them


def test_the_docs_tables_are_the_report_of_their_results_files(monkeypatch: pytest.MonkeyPatch) -> None:
    # docs/results/<suite>.md is what `python -m gemmc.bench report` writes from DOCS_TABLES: a page edited by hand,
    # or a results file replaced without regenerating, fails here.
    monkeypatch.chdir(ROOT)  # the pages name their files relative to the repository, as `report` run there does
    files = [harness.RESULTS / f for sources in report.DOCS_TABLES.values() for f in sources]
    for suite, text in report.pages(files).items():
        assert (Path("docs/results") / f"{suite}.md").read_text() == text, f"regenerate docs/results/{suite}.md"


def test_report_without_matplotlib_writes_the_tables_and_says_what_it_needs(tmp_path: Path) -> None:
    # `pip install -e .[docs]` has no matplotlib: the irregular plot ended in a ModuleNotFoundError traceback.
    results = harness.results_path(tmp_path / "results", "irregular", "NVIDIA H100", "2026-02-01")
    results.parent.mkdir(parents=True)
    results.write_text(json.dumps({"suite": "irregular", "gpu": "NVIDIA H100", "date": "2026-02-01", "rows": [
        {"case": "a", "auto_us": 1.0, "loop_us": 2.0, "bmm_us": 3.0, "grouped_us": 4.0}]}))
    code = (WITHOUT + "from gemmc.bench import report\n"
            f"report.main([{str(results)!r}, '--tables', {str(tmp_path / 'tables')!r}, '--plots', {str(tmp_path)!r}])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "needs matplotlib (pip install -e '.[bench]')" in proc.stderr
    assert (tmp_path / "tables" / "irregular.md").is_file() and not (tmp_path / "irregular-speedups.png").exists()

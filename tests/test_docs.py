"""The user documentation stays true to the tree: every results file it cites exists, every example schedule it
names compiles, and it tells the current state, not the history (no numbered rounds)."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest

import gemmc
from tests.conftest import ROOT

RESULTS = ROOT / "bench" / "results"
# The user pages, and the READMEs of bench/results/ (the log of GPU test runs: bench/results/checks/README.md).
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted(RESULTS.rglob("README.md"))]
IDS = [str(p.relative_to(ROOT)) for p in PAGES]
# A results file as the docs cite it: a date, the GPU and the run, with or without the bench/results/ folder.
CITED = re.compile(r"(?:bench/results/)?(?:[\w-]+/)?\d{4}-\d{2}-\d{2}_[\w.+-]+?\.(?:json|log|txt|csv\.gz|csv)")
HISTORY = re.compile(r"\bstop[ -]?[0-9]+\b", re.IGNORECASE)


def _cited(text: str) -> list[str]:
    return [m.group(0) for m in CITED.finditer(text) if "*" not in m.group(0)]


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_results_files_cited_exist(page: Path):
    missing = []
    for cited in _cited(page.read_text()):
        path = ROOT / cited if cited.startswith("bench/results/") else RESULTS / cited
        if not path.is_file():
            missing.append(cited)
    assert not missing, f"{page.name} cites results files that are not in bench/results/: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_no_numbered_rounds(page: Path):
    found = [m.group(0) for m in HISTORY.finditer(page.read_text())]
    assert not found, f"{page.name} tells history ({found}); git keeps it, the docs say what holds now"


def test_results_pattern_sees_a_citation():
    # The pattern must find the citations it checks, or the test above passes on nothing.
    text = "see `bench/results/uniform/2026-11-22_h100_uniform_final.json` and `half/2026-11-26_h100_half.json`."
    assert _cited(text) == ["bench/results/uniform/2026-11-22_h100_uniform_final.json",
                            "half/2026-11-26_h100_half.json"]


def test_every_results_file_is_cited():
    # bench/results/ keeps what the docs, the code or the tests cite (by name, or by a glob such as
    # `..._first-call*.log`); a run nobody cites stays in git's history, not in the tree.
    texts = [p.read_text() for p in [*PAGES, *ROOT.glob("gemmc/**/*.py"), *ROOT.glob("bench/**/*.py"),
                                     *ROOT.glob("tests/**/*.py"), *ROOT.glob("examples/*.gs")]]
    names = set(re.findall(r"\d{4}-\d{2}-\d{2}_[\w.+*?\[\]-]+", "\n".join(texts)))
    uncited = [str(f.relative_to(RESULTS)) for f in sorted(RESULTS.rglob("*")) if f.is_file() and f.name != "README.md"
               and not any(fnmatch.fnmatchcase(f.name, n.rstrip(".")) for n in names)]
    assert not uncited, f"results files no page or code cites: {uncited}"


def _schedules() -> list[str]:
    names: set[str] = set()
    for page in PAGES:
        names.update(re.findall(r"examples/[\w/]+\.gs", page.read_text()))
    return sorted(names)


@pytest.mark.parametrize("schedule", _schedules())
def test_example_schedules_named_in_the_docs_compile(schedule: str):
    prog = gemmc.compile_file(ROOT / schedule)
    for kernel in prog:
        assert kernel.standalone and kernel.header


def _shown_schedules() -> list[tuple[str, str]]:
    """Every schedule the docs show inline (a code block with a `kernel name {` or `group name {`; the grammar's
    summary, which writes `kernel NAME {`, is not one): the page and the text."""
    shown = []
    for page in PAGES:
        fence: str | None = None  # the open block's language ("" for none), None outside a block
        lines: list[str] = []
        for line in page.read_text().splitlines():
            if line.startswith("```"):
                if fence is None:
                    fence, lines = line[3:].strip(), []
                    continue
                body = "\n".join(lines)
                if fence == "" and re.search(r"^\s*(kernel|group) [a-z]\w* \{", body, re.M):
                    shown.append((page.name, body))
                fence = None
            elif fence is not None:
                lines.append(line)
    return shown


@pytest.mark.parametrize(("page", "text"), _shown_schedules(),
                         ids=[p + ": " + re.findall(r"(?:kernel|group) (\w+) \{", t)[0] for p, t in _shown_schedules()])
def test_schedules_shown_in_the_docs_compile(page: str, text: str):
    shown = gemmc.compile_string(text, filename=page)
    assert list(shown), f"{page} shows a schedule with nothing in it"
    # a block headed `# examples/x.gs` is that file: the same kernels and groups, each planned the same (a block
    # that shows part of it says so: `# examples/x.gs (first kernel)`)
    head = re.match(r"# (examples/[\w/]+\.gs)( \(.*\))?\n", text)
    if head:
        whole = gemmc.compile_file(ROOT / head.group(1))
        names, file_names = [k.name for k in shown], [k.name for k in whole]
        if head.group(2):
            assert set(names) <= set(file_names), f"{page}: {head.group(1)} has no {set(names) - set(file_names)}"
        else:
            assert names == file_names, f"{page} shows {names} as {head.group(1)}, which has {file_names}"
        for kernel in shown:
            assert kernel.plan == whole[kernel.name].plan, f"{page}: {kernel.name} differs from {head.group(1)}'s"


def _shown_commands() -> list[tuple[str, str, list[str]]]:
    """Every `$ gemmc compile|inspect ...` block of the docs: the page, the command, the output lines it shows."""
    shown = []
    for page in PAGES:
        for block in re.findall(r"```\n(\$ gemmc .*?)```", page.read_text(), re.S):
            command, *lines = block.strip().splitlines()
            shown.append((page.name, command[2:], lines))
    return shown


@pytest.mark.parametrize(("page", "command", "lines"), _shown_commands(),
                         ids=[f"{p}: {c}" for p, c, _ in _shown_commands()])
def test_shown_cli_output_is_what_gemmc_prints(page, command, lines, tmp_path, capsys, monkeypatch):
    from gemmc.cli import main

    words = command.split()[1:]
    if words[0] == "run":
        pytest.skip("gemmc run needs a GPU")
    monkeypatch.chdir(tmp_path)
    words = [str(ROOT / w) if w.startswith("examples/") else w for w in words]
    assert main(words) == 0
    out = capsys.readouterr().out
    for line in lines:
        if "..." in line or not line.strip():
            continue  # an elided line
        assert line.strip() in out, f"{page} shows `{line.strip()}` for `{command}`, which gemmc does not print"


def test_the_tutorial_picture_is_the_current_plan():
    # docs/inception3-plan.svg is `gemmc inspect examples/inception3.gs --svg docs/inception3-plan.svg`.
    kernel = gemmc.compile_file(ROOT / "examples" / "inception3.gs")["inception3"]
    assert (ROOT / "docs" / "inception3-plan.svg").read_text() == kernel.svg(), \
        "regenerate it: gemmc inspect examples/inception3.gs --svg docs/inception3-plan.svg"

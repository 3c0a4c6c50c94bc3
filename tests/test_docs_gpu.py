"""The Python the user documentation shows runs as written: every ```python block of a page, in order, in one
namespace (later blocks use the names earlier ones made), from the repository root as the docs assume. The GEMMs
themselves are checked against float64 by the families' tests; this test keeps the docs' calls true to the API."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
PAGES = [ROOT / "README.md", ROOT / "docs" / "tutorial.md"]  # api.md shows fragments, not a program


def blocks(page: Path) -> list[str]:
    return [m.group(1) for m in BLOCK.finditer(page.read_text())]


def test_the_pages_show_python():
    assert all(blocks(page) for page in PAGES)


@pytest.mark.gpu
@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_a_pages_python_runs(page: Path, monkeypatch):
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for i, code in enumerate(blocks(page)):
        exec(compile(code, f"{page.name} block {i + 1}", "exec"), namespace)  # the docs' own code

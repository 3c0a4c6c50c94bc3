"""Shared test setup: the `gpu` marker skips cleanly without a GPU; `--update-golden` rewrites golden files."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.gs"))
GOLDEN = Path(__file__).resolve().parent / "golden"


def covers_every_output_once(ir) -> bool:
    """Every output element of every problem lies in exactly one tile of the planned kernel's work list."""
    import numpy as np

    counts = [np.zeros((p.m, p.n), dtype=np.int32) for p in ir.problems]
    for t in ir.work.tiles:
        v = ir.plan.variants[t.variant]
        counts[t.problem][t.m0:t.m0 + v.bm, t.n0:t.n0 + v.bn] += 1
    return all(bool((c == 1).all()) for c in counts)


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden/ from the current output")


@cache
def gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no device: all mean "no GPU"
        return False


def gpu_description() -> str:
    if not gpu_available():
        return "gpu: none (the GPU tests were skipped)"
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    return f"gpu: {name}, CUDA runtime {cupy.cuda.runtime.runtimeGetVersion()}"


def pytest_terminal_summary(terminalreporter):
    """Name the device at the end of every run (also under -q), so a saved GPU-test log says where it ran."""
    terminalreporter.write_line(gpu_description())


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a GPU and CuPy (run on the GPU machine: pytest -m gpu)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def golden(request):
    """golden(name, text): compare with tests/golden/<name>, or rewrite it under --update-golden."""
    update = request.config.getoption("--update-golden")

    def check(name: str, text: str) -> None:
        path = GOLDEN / name
        if update or not path.exists():
            if not update:
                pytest.fail(f"golden file {path} is missing; run pytest --update-golden and review the diff")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            return
        assert text == path.read_text(), f"{name} differs from its golden file (pytest --update-golden to accept)"

    return check

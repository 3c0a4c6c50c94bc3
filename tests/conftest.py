"""Shared test setup: the `gpu` marker skips cleanly without a GPU; `--update-golden` rewrites golden files; every
schedule the tests compile through the API is checked by the IR verifier after every pass."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.gs"))
GOLDEN = Path(__file__).resolve().parent / "golden"


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
        return "gpu: none (the GPU tests were skipped, as expected without a GPU and CuPy)"
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


@pytest.fixture(autouse=True, scope="session")
def verified_pipeline():
    """Every run of the pipeline through gemmc.api (compile_string, compile_file, plan_for) checks the IR's
    invariants after every pass (gemmc/passes/verify.py), whatever `verify` its caller passes: a pass that breaks
    one fails the test that planned through it, with an InternalError naming the pass."""
    import gemmc.api
    from gemmc.passes import run_pipeline

    def verifying(program, **options):
        return run_pipeline(program, **{**options, "verify": True})

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gemmc.api, "run_pipeline", verifying)
        yield


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


@pytest.fixture
def launches(monkeypatch):
    """A stand-in CuPy (numpy tables) and a kernel function for the launch path; the list it returns records each
    launch's arguments."""
    import types

    import numpy as np

    from gemmc.ir.hardware import TARGETS
    from gemmc.runtime import executable, launch, streams

    calls = []

    class Function:
        max_threads_per_block, num_regs = 1024, 64

        def __call__(self, grid, block, args, **kwargs):
            calls.append(args)

    cp = types.SimpleNamespace(int32=np.int32, int64=np.int64, uint8=np.uint8, uint64=np.uint64, float32=np.float32,
                               float64=np.float64, asarray=np.asarray, empty=np.empty,
                               cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(getDevice=lambda: 0),
                                                          get_current_stream=lambda: None))
    monkeypatch.setattr(launch, "cupy", lambda: cp)
    monkeypatch.setattr(streams, "cupy", lambda: cp)
    monkeypatch.setattr(streams, "external_stream", lambda handle: None)  # torch\'s stream, stood in
    monkeypatch.setattr(streams, "torch_stream", lambda: 0)
    monkeypatch.setattr(executable, "cupy", lambda: cp)
    monkeypatch.setattr(executable, "hardware", lambda: TARGETS["sm_90"])
    monkeypatch.setattr(executable, "device_function", lambda rendered, entry: Function())
    monkeypatch.setenv("GEMMC_TUNE", "0")  # the stand-in cannot time `tile auto`'s alternatives
    return calls

"""examples/cpp: a CMake project that runs `gemmc compile` and builds the generated .cu with a C++ driver.
CI builds it (nvcc, no GPU); the GPU test builds and runs it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

needs_toolchain = pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("nvcc") is None,
                                     reason="needs cmake and nvcc")


def build(tmp: Path) -> Path:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    source = str(ROOT / "examples" / "cpp")
    configure = ["cmake", "-S", source, "-B", str(tmp), f"-DPython3_EXECUTABLE={sys.executable}"]
    for cmd in (configure, ["cmake", "--build", str(tmp)]):
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return tmp / "inception3_example"


@needs_toolchain
def test_cpp_example_builds(tmp_path):
    assert build(tmp_path / "build").exists()


@needs_toolchain
@pytest.mark.gpu
def test_cpp_example_runs(tmp_path):
    exe = build(tmp_path / "build")
    proc = subprocess.run([str(exe)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all problems match" in proc.stdout

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


GEMMC = Path(sys.executable).with_name("gemmc")  # the test environment's command, whichever checkout it runs
needs_gemmc = pytest.mark.skipif(not GEMMC.exists(), reason="needs the gemmc command beside the tests' Python")


def configure(tmp: Path, *args: str, source: Path = ROOT / "examples" / "cpp",
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["cmake", "-S", str(source), "-B", str(tmp), *args], capture_output=True, text=True, env=env)


def build(tmp: Path) -> Path:
    for proc in (configure(tmp, f"-DGEMMC={GEMMC}"),
                 subprocess.run(["cmake", "--build", str(tmp)], capture_output=True, text=True)):
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return tmp / "inception3_example"


@needs_toolchain
@needs_gemmc
def test_cpp_example_builds(tmp_path):
    assert build(tmp_path / "build").exists()


@needs_toolchain
def test_cpp_example_says_how_to_get_gemmc_when_it_is_missing(tmp_path):
    # a checkout without .venv, no virtual environment active, and no gemmc on the PATH
    shutil.copytree(ROOT / "examples" / "cpp", tmp_path / "examples" / "cpp")
    shutil.copy(ROOT / "examples" / "inception3.gs", tmp_path / "examples")
    tools = {str(Path(shutil.which(tool) or "").parent) for tool in ("cmake", "nvcc")}
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["PATH"] = os.pathsep.join(sorted(tools) + ["/usr/bin", "/bin"])
    assert shutil.which("gemmc", path=env["PATH"]) is None
    proc = configure(tmp_path / "build", "-DCMAKE_CUDA_ARCHITECTURES=90", source=tmp_path / "examples" / "cpp", env=env)
    assert proc.returncode != 0
    assert "gemmc not found: run `make demo`" in proc.stderr and "-DGEMMC=/path/to/gemmc" in proc.stderr


@needs_toolchain
@needs_gemmc
@pytest.mark.gpu
def test_cpp_example_runs(tmp_path):
    exe = build(tmp_path / "build")
    proc = subprocess.run([str(exe)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all problems match" in proc.stdout

"""gemmc's disk caches without a GPU: processes writing at once lose nothing, a malformed entry is ignored with a
warning and rewritten, the cubin cache's key holds everything its output depends on, the folders are where the
docs say, and the nvcc fallback leaves no temporary folder behind."""

from __future__ import annotations

import json
import multiprocessing
import os
import struct
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import gemmc
from gemmc.runtime import cache, compile, tune
from gemmc.runtime.cache import CacheWarning

LABELS = ["model", "cluster 2", "cluster 4"]
WRITERS, ENTRIES = 8, 25


@pytest.fixture(autouse=True)
def folder(monkeypatch, tmp_path):
    monkeypatch.setenv("GEMMC_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _writer(args):
    """One process: wait for the others, then write ENTRIES entries of its own (and one that every process
    writes) as fast as it can."""
    barrier, writer = args
    barrier.wait()
    for i in range(ENTRIES):
        tune.store_choice(f"GPU|writer {writer} entry {i}", tuple(LABELS), (3e-6, 2e-6, 1e-6 * (1 + writer)), i % 3)
        tune.store_choice("GPU|shared", tuple(LABELS), (1e-6, 1e-6, 1e-6), writer % 3)


def _context():
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def test_processes_writing_at_once_lose_no_entry():
    ctx = _context()
    barrier = ctx.Manager().Barrier(WRITERS)
    processes = [ctx.Process(target=_writer, args=((barrier, w),)) for w in range(WRITERS)]
    for p in processes:
        p.start()
    for p in processes:
        p.join(60)
    assert [p.exitcode for p in processes] == [0] * WRITERS
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not one torn or malformed file either
        lost = [(w, i) for w in range(WRITERS) for i in range(ENTRIES)
                if tune.read_choice(f"GPU|writer {w} entry {i}", LABELS) is None]
        assert lost == []
        assert tune.read_choice("GPU|shared", LABELS) is not None


def _path(key):
    return cache.entry_path("tuning", key, ".json")


def _good(key="GPU|k"):
    return {"key": key, "labels": LABELS, "seconds": [3e-6, 2e-6, 1e-6], "chosen": 2}


@pytest.mark.parametrize("content", [
    b"", b"{", b"\xff\xfe not utf-8", b"[1, 2]", b"null",
    json.dumps({**_good(), "key": "GPU|another"}).encode(),
    json.dumps({**_good(), "labels": "model"}).encode(),
    json.dumps({**_good(), "chosen": 99}).encode(),  # an IndexError once
    json.dumps({**_good(), "chosen": -1}).encode(),
    json.dumps({**_good(), "chosen": True}).encode(),
    json.dumps({**_good(), "chosen": "2"}).encode(),
    json.dumps({k: v for k, v in _good().items() if k != "chosen"}).encode(),  # a KeyError once
    json.dumps({k: v for k, v in _good().items() if k != "seconds"}).encode(),
    json.dumps({**_good(), "seconds": [3e-6, 2e-6]}).encode(),
    json.dumps({**_good(), "seconds": [3e-6, float("nan"), 1e-6]}).encode(),
    json.dumps({**_good(), "seconds": [3e-6, "fast", 1e-6]}).encode(),
])
def test_a_malformed_entry_is_ignored_with_a_warning_and_rewritten(content):
    path = _path("GPU|k")
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    with pytest.warns(CacheWarning, match=f"ignoring the cache entry {path}"):
        assert tune.read_choice("GPU|k", LABELS) is None
    tune.store_choice("GPU|k", tuple(LABELS), (3e-6, 2e-6, 1e-6), 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tune.read_choice("GPU|k", LABELS)["chosen"] == 2


def test_an_entry_for_other_candidates_is_measured_again_without_a_warning():
    tune.store_choice("GPU|k", ("model", "cluster 2"), (2e-6, 1e-6), 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tune.read_choice("GPU|k", LABELS) is None
        assert tune.read_choice("GPU|absent", LABELS) is None


def test_an_unwritable_cache_costs_only_the_timing(folder):
    folder.parent.mkdir(exist_ok=True)
    folder.write_text("a file where the folder should be")
    tune.store_choice("GPU|k", tuple(LABELS), (3e-6, 2e-6, 1e-6), 2)  # no exception
    assert not any(p.name.endswith(".tmp") for p in folder.parent.iterdir())


def test_the_tuning_key_holds_the_gemmc_version_and_the_toolkit(monkeypatch):
    kernel = gemmc.compile_string("kernel k { dtype f64 layout A col, B col, C col gemm 30720 x 32 x 30720 "
                                  "algorithm tsm2r }")["k"].executable
    key = tune.cache_key(kernel, "H100", "nvrtc 12.4, driver 12080")
    assert key != tune.cache_key(kernel, "H100", "nvrtc 12.6, driver 12080")
    assert key != tune.cache_key(kernel, "H100", "nvrtc 12.4, driver 12090")
    monkeypatch.setattr(tune, "__version__", "0.0.0-other")
    assert key != tune.cache_key(kernel, "H100", "nvrtc 12.4, driver 12080")


# --- where the caches live ----------------------------------------------------------------------------------------

def test_the_cache_folder_is_the_platforms_unless_gemmc_cache_dir_says(monkeypatch, tmp_path):
    import platformdirs

    assert cache.cache_dir() == tmp_path / "cache"
    monkeypatch.delenv("GEMMC_CACHE_DIR")
    assert cache.cache_dir() == platformdirs.user_cache_path("gemmc", appauthor=False)
    if sys.platform.startswith("linux"):
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert cache.cache_dir() == tmp_path / "xdg" / "gemmc"
    assert cache.entry_path("tuning", "k", ".json").parent == cache.cache_dir() / "tuning"


# --- the cubin cache (architecture-specific kernels) ------------------------------------------------------------

def elf(size=256):
    """A minimal 64-bit little-endian ELF image whose one section header ends the file, as in a cubin."""
    data = bytearray(size)
    data[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<Q", data, 0x28, size - 64)
    struct.pack_into("<HH", data, 0x3A, 64, 1)
    return bytes(data)


def test_whole_elf_tells_a_cubin_from_a_torn_one():
    assert compile.whole_elf(elf())
    assert not compile.whole_elf(elf()[:200]) and not compile.whole_elf(b"") and not compile.whole_elf(b"x" * 256)


def test_the_cubin_key_holds_everything_the_cubin_depends_on(monkeypatch):
    nvrtc, nvcc = ("nvrtc", "12.4"), ("nvcc", "Build cuda_12.4.r12.4/compiler.34097967_0")
    flags = ("-gencode=arch=compute_90a,code=sm_90a",)
    base = compile.cubin_key("src", "sm_90a", flags, nvrtc)
    others = [compile.cubin_key("src2", "sm_90a", flags, nvrtc), compile.cubin_key("src", "sm_100a", flags, nvrtc),
              compile.cubin_key("src", "sm_90a", flags, ("nvrtc", "12.6")),
              compile.cubin_key("src", "sm_90a", flags, nvcc),
              compile.cubin_key("src", "sm_90a", flags, ("nvcc", "Build cuda_12.6.r12.6/compiler.0"))]
    nvcc_key = compile.cubin_key("src", "sm_90a", flags, nvcc)
    assert nvcc_key != compile.cubin_key("src", "sm_90a", ("-gencode=arch=compute_90a,code=sm_90a", "-G"), nvcc)
    monkeypatch.setattr(compile, "OPTIONS", ("--std=c++20",))
    others.append(compile.cubin_key("src", "sm_90a", flags, nvrtc))
    monkeypatch.setattr(compile, "__version__", "0.0.0-other")
    monkeypatch.setattr(compile, "OPTIONS", ("--std=c++17",))
    others.append(compile.cubin_key("src", "sm_90a", flags, nvrtc))
    assert len({base, *others}) == len(others) + 1


@pytest.fixture
def compiles(monkeypatch):
    """NVRTC stood in for: each compile is recorded and returns a valid ELF image."""
    made = []

    def fake(source, arch):
        made.append((source, arch))
        return elf()

    monkeypatch.setattr(compile, "compiler", lambda: ("nvrtc", "12.4"))
    monkeypatch.setattr(compile, "_cubin_nvrtc", fake)
    return made


def test_a_cubin_is_compiled_once_and_read_back(compiles, folder):
    path = compile.cubin_file("src", "sm_90a", ())
    assert compile.cubin_file("src", "sm_90a", ()) == path and len(compiles) == 1
    assert [p for p in (folder / "cubin").iterdir()] == [Path(path)] and Path(path).read_bytes() == elf()


def test_a_torn_cubin_is_ignored_with_a_warning_and_rebuilt(compiles, folder):
    compile.cubin_file("src", "sm_90a", ())
    (path,) = (folder / "cubin").iterdir()
    path.write_bytes(elf()[:100])
    with pytest.warns(CacheWarning, match=f"{path}: it is not a whole cubin"):
        assert compile.cubin_file("src", "sm_90a", ()) == str(path)
    assert len(compiles) == 2 and path.read_bytes() == elf()


def test_an_unwritable_cubin_cache_still_gives_a_file(compiles, folder):
    folder.parent.mkdir(exist_ok=True)
    folder.write_text("a file where the folder should be")
    path = compile.cubin_file("src", "sm_90a", ())
    assert Path(path).read_bytes() == elf() and Path(path).parent.name.startswith("gemmc_")


def test_the_nvcc_fallback_removes_its_temporary_folder(monkeypatch, tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(compile.tempfile, "tempdir", str(scratch))
    seen = []

    def nvcc(cmd, **kwargs):
        out = cmd[cmd.index("-o") + 1]
        seen.append(os.path.dirname(out))
        if "-G" in cmd:
            raise subprocess.CalledProcessError(1, cmd, "", "error")
        with open(out, "wb") as f:
            f.write(elf())

    monkeypatch.setattr(compile.subprocess, "run", nvcc)
    assert compile._cubin_nvcc("src", ("-arch=sm_90a",)) == elf()
    with pytest.raises(subprocess.CalledProcessError):
        compile._cubin_nvcc("src", ("-G",))
    assert all(os.path.basename(d).startswith("gemmc_") for d in seen) and list(scratch.iterdir()) == []


def test_no_compiler_for_sm_90a_is_a_gemmc_error(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_cupy(name, *args, **kwargs):
        if name.startswith("cupy"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    def no_nvcc(cmd, **kwargs):
        raise FileNotFoundError(cmd[0])

    monkeypatch.setattr(builtins, "__import__", no_cupy)
    monkeypatch.setattr(compile.subprocess, "run", no_nvcc)
    compile.compiler.cache_clear()
    try:
        with pytest.raises(gemmc.GemmcError, match="needs NVRTC's cubin output .* or nvcc on the PATH"):
            compile.compiler()
    finally:
        compile.compiler.cache_clear()

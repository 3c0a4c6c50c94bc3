"""Kernel source -> loaded function, through NVRTC (CuPy's RawModule).

CuPy keeps compiled binaries on disk (~/.cupy/kernel_cache, or $CUPY_CACHE_DIR) keyed by the source text and
the options, so a schedule compiles once per machine; this module adds an in-process cache on top.

Sources that use sm_90a-only instructions (wgmma: the tensor-core family on sm_90) are compiled by NVRTC for
`sm_90a` into a cubin here (CuPy would build for plain sm_90, where the kernel's wgmma path is compiled out), and
loaded from that cubin.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from functools import cache
from typing import Any

from gemmc.runtime.device import cupy, hardware

OPTIONS = ("--std=c++17",)
ARCH_SPECIFIC = "wgmma.mma_async"  # a source containing this needs the architecture-specific target (sm_90a)


def needs_arch_specific(source: str) -> bool:
    return ARCH_SPECIFIC in source


def _cubin_sm90a(source: str) -> bytes:
    from cupy_backends.cuda.libs import nvrtc  # type: ignore[import-not-found]

    prog = nvrtc.createProgram(source, "gemmc.cu", (), ())
    try:
        try:
            nvrtc.compileProgram(prog, [*OPTIONS, "-arch=sm_90a"])
        except Exception as err:
            raise RuntimeError(f"NVRTC (sm_90a) failed: {err}\n{nvrtc.getProgramLog(prog)}") from err
        return bytes(nvrtc.getCUBIN(prog))
    finally:
        nvrtc.destroyProgram(prog)


@cache
def function(source: str, entry: str, arch: str) -> Any:
    """`arch` keys the cache; CuPy itself compiles for the current device's architecture."""
    if needs_arch_specific(source) and arch == "sm_90":
        return _module_sm90a(source).get_function(entry)
    module = cupy().RawModule(code=source, options=OPTIONS)
    return module.get_function(entry)


def _cubin_nvcc(source: str, directory: str) -> bytes:
    """The same through nvcc (where CuPy's NVRTC binding lacks a call this module uses)."""
    src = os.path.join(directory, "gemmc.cu")
    with open(src, "w") as f:
        f.write(source)
    out = src + ".cubin"
    subprocess.run(["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "-std=c++17", "--cubin", src, "-o", out],
                   check=True, capture_output=True, text=True)
    with open(out, "rb") as f:
        return f.read()


def _cache_dir() -> str:
    return os.environ.get("CUPY_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cupy", "kernel_cache")


@cache
def _module_sm90a(source: str) -> Any:
    """A RawModule loaded from an sm_90a cubin, kept on disk beside CuPy's cache (keyed by the source's hash) so
    that a schedule compiles once per machine, as with CuPy's own cache."""
    path = os.path.join(_cache_dir(), f"gemmc_sm90a_{hashlib.sha256(source.encode()).hexdigest()[:32]}.cubin")
    if not os.path.exists(path):
        try:
            cubin = _cubin_sm90a(source)
        except (ImportError, AttributeError):
            cubin = _cubin_nvcc(source, tempfile.mkdtemp(prefix="gemmc_"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(cubin)
        os.replace(tmp, path)  # atomic: parallel compiles of one source never see half a file
    return cupy().RawModule(path=path)


def device_function(source: str, entry: str) -> Any:
    """The kernel compiled for the current device's architecture."""
    return function(source, entry, hardware().arch)

"""Kernel source -> loaded function, through NVRTC (CuPy's RawModule).

CuPy keeps compiled binaries on disk (~/.cupy/kernel_cache, or $CUPY_CACHE_DIR) keyed by the source text and
the options, so a schedule compiles once per machine; this module adds an in-process cache on top.

Kernels whose plan needs the architecture-specific target (Rendered.device_arch "sm_90a": wgmma) are compiled by
NVRTC for that target into a cubin here, since CuPy builds for the plain one (where such a source stops with an
#error), and loaded from that cubin.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from functools import cache
from typing import Any

from gemmc.codegen import Rendered
from gemmc.errors import GemmcError
from gemmc.runtime.device import cupy, hardware
from gemmc.stats import count

OPTIONS = ("--std=c++17",)


def _cubin_nvrtc(source: str, arch: str) -> bytes:
    from cupy_backends.cuda.libs import nvrtc  # type: ignore[import-not-found]

    prog = nvrtc.createProgram(source, "gemmc.cu", (), ())
    try:
        try:
            nvrtc.compileProgram(prog, [*OPTIONS, f"-arch={arch}"])
        except Exception as err:
            raise RuntimeError(f"NVRTC ({arch}) failed: {err}\n{nvrtc.getProgramLog(prog)}") from err
        return bytes(nvrtc.getCUBIN(prog))
    finally:
        nvrtc.destroyProgram(prog)


def _cubin_nvcc(source: str, flags: tuple[str, ...], directory: str) -> bytes:
    """The same through nvcc (where CuPy's NVRTC binding lacks a call this module uses)."""
    src = os.path.join(directory, "gemmc.cu")
    with open(src, "w") as f:
        f.write(source)
    out = src + ".cubin"
    subprocess.run(["nvcc", *flags, "-std=c++17", "--cubin", src, "-o", out], check=True, capture_output=True,
                   text=True)
    with open(out, "rb") as f:
        return f.read()


def _cache_dir() -> str:
    return os.environ.get("CUPY_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cupy", "kernel_cache")


@cache
def _module_arch_specific(source: str, arch: str, flags: tuple[str, ...]) -> Any:
    """A RawModule loaded from a cubin for `arch` (e.g. sm_90a), kept on disk beside CuPy's cache (keyed by the
    source's hash) so that a schedule compiles once per machine, as with CuPy's own cache."""
    count("compiles")
    digest = hashlib.sha256(source.encode()).hexdigest()[:32]
    path = os.path.join(_cache_dir(), f"gemmc_{arch}_{digest}.cubin")
    if not os.path.exists(path):
        try:
            cubin = _cubin_nvrtc(source, arch)
        except (ImportError, AttributeError):
            cubin = _cubin_nvcc(source, flags, tempfile.mkdtemp(prefix="gemmc_"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(cubin)
        os.replace(tmp, path)  # atomic: parallel compiles of one source never see half a file
    return cupy().RawModule(path=path)


@cache
def _module(source: str, arch: str) -> Any:
    """`arch` keys the cache; CuPy itself compiles for the current device's architecture."""
    count("compiles")
    return cupy().RawModule(code=source, options=OPTIONS)


def device_function(rendered: Rendered, entry: str) -> Any:
    """`entry` of the rendered kernel source, compiled for the current device."""
    arch = hardware().arch
    if rendered.device_arch.endswith("a"):
        if rendered.device_arch != arch + "a":
            raise GemmcError(f"kernel '{rendered.name}' was planned for {rendered.device_arch} (its main loop is "
                             f"wgmma) but this GPU is {arch}; compile the schedule for this GPU (`target cuda {arch}`)",
                             code="E303")
        return _module_arch_specific(rendered.source, rendered.device_arch, rendered.build_flags).get_function(entry)
    return _module(rendered.source, arch).get_function(entry)

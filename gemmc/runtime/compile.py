"""Kernel source -> loaded function, through NVRTC (CuPy's RawModule).

CuPy keeps what it compiles on disk (`~/.cupy/kernel_cache`, or `$CUPY_CACHE_DIR`), keyed by the source, the
options, the target architecture and the NVRTC and CuPy versions, so a schedule compiles once per machine; this
module adds an in-process cache on top.

Kernels whose plan needs the architecture-specific target (Rendered.device_arch "sm_90a": wgmma) are compiled here
into a cubin for that target, since CuPy builds for the plain one (where such a source stops with an #error): by
NVRTC where CuPy's binding offers the calls, else by nvcc in a temporary folder that is removed afterwards. The
cubins are cached in gemmc's cache folder (runtime/cache.py, `cubin/`) under `cubin_key`: the source, the
compiler and its version, its options, and the gemmc version. The driver is not in the key: a cubin is machine
code that the driver loads as it is (it JIT-compiles only PTX, which gemmc does not cache). A cached cubin that is
not a whole ELF file is ignored with a warning and rebuilt.
"""

from __future__ import annotations

import hashlib
import os
import struct
import subprocess
import tempfile
from functools import cache
from typing import Any

from gemmc.codegen import Rendered
from gemmc.errors import GemmcError
from gemmc.ir.hardware import CUDA_ARCHS
from gemmc.runtime import cache as disk
from gemmc.runtime.device import cupy, hardware
from gemmc.stats import count
from gemmc.version import __version__

OPTIONS = ("--std=c++17",)
NVCC_OPTIONS = ("-std=c++17", "--cubin")


@cache
def compiler() -> tuple[str, str]:
    """The compiler that builds architecture-specific cubins here and its version: NVRTC through CuPy's binding
    where it has the calls `_cubin_nvrtc` makes, else nvcc on the PATH."""
    try:
        from cupy_backends.cuda.libs import nvrtc  # type: ignore[import-not-found]

        for call in ("createProgram", "compileProgram", "getCUBIN", "getProgramLog", "destroyProgram"):
            getattr(nvrtc, call)
        major, minor = nvrtc.getVersion()
        return "nvrtc", f"{major}.{minor}"
    except (ImportError, AttributeError):
        pass
    try:
        out = subprocess.run(["nvcc", "--version"], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        raise GemmcError("compiling a kernel for an architecture-specific target (sm_90a) needs NVRTC's cubin "
                         "output (CuPy's NVRTC binding) or nvcc on the PATH; neither was found") from None
    return "nvcc", out.strip().splitlines()[-1]  # "Build cuda_12.4.r12.4/compiler.34097967_0"


@cache
def toolkit() -> str:
    """What builds and runs CuPy's kernels on this machine: NVRTC's and the driver's CUDA versions (the tuning
    cache's key: a new compiler or driver may change which candidate is fastest)."""
    cp = cupy()
    if cp.cuda.runtime.is_hip:
        return f"hip {cp.cuda.runtime.runtimeGetVersion()}"
    from cupy.cuda import nvrtc  # type: ignore[import-not-found]

    major, minor = nvrtc.getVersion()
    return f"nvrtc {major}.{minor}, driver {cp.cuda.runtime.driverGetVersion()}"


def cubin_key(source: str, arch: str, flags: tuple[str, ...], tool: tuple[str, str]) -> str:
    """Everything a cached cubin depends on: the source, the target, the compiler, its version and the options it
    is given, and the gemmc version."""
    options = (*OPTIONS, f"-arch={arch}") if tool[0] == "nvrtc" else (*flags, *NVCC_OPTIONS)
    digest = hashlib.sha256(source.encode()).hexdigest()
    return "\0".join((f"gemmc {__version__}", *tool, arch, *options, digest))


def _cubin_nvrtc(source: str, arch: str) -> bytes:
    from cupy_backends.cuda.libs import nvrtc

    prog = nvrtc.createProgram(source, "gemmc.cu", (), ())
    try:
        try:
            nvrtc.compileProgram(prog, [*OPTIONS, f"-arch={arch}"])
        except Exception as err:
            raise RuntimeError(f"NVRTC ({arch}) failed: {err}\n{nvrtc.getProgramLog(prog)}") from err
        return bytes(nvrtc.getCUBIN(prog))
    finally:
        nvrtc.destroyProgram(prog)


def _cubin_nvcc(source: str, flags: tuple[str, ...]) -> bytes:
    """The same through nvcc, in a temporary folder that is removed whatever happens."""
    with tempfile.TemporaryDirectory(prefix="gemmc_") as directory:
        src = os.path.join(directory, "gemmc.cu")
        with open(src, "w") as f:
            f.write(source)
        out = src + ".cubin"
        subprocess.run(["nvcc", *flags, *NVCC_OPTIONS, src, "-o", out], check=True, capture_output=True, text=True)
        with open(out, "rb") as f:
            return f.read()


def whole_elf(data: bytes) -> bool:
    """True when `data` is a 64-bit little-endian ELF file whose section headers (at its end, in a cubin) lie
    inside it: a truncated or overwritten cubin fails."""
    if len(data) < 64 or data[:6] != b"\x7fELF\x02\x01":
        return False
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    return shnum > 0 and shoff + shentsize * shnum <= len(data)


_UNCACHED: list[tempfile.TemporaryDirectory] = []  # where cubins go when the cache folder cannot be written


def cubin_file(source: str, arch: str, flags: tuple[str, ...]) -> str:
    """A file holding the cubin of `source` for `arch`: gemmc's cache entry, compiled and written there first if
    it is missing or torn. Where the cache cannot be written, a file in a temporary folder that lives as long as
    the process (CuPy reads the file when the kernel is first used)."""
    tool = compiler()
    path = disk.entry_path("cubin", cubin_key(source, arch, flags, tool), ".cubin")
    data = disk.read(path)
    if data is not None:
        if whole_elf(data):
            return str(path)
        disk.ignore(path, "it is not a whole cubin (ELF) file")
    data = _cubin_nvrtc(source, arch) if tool[0] == "nvrtc" else _cubin_nvcc(source, flags)
    if disk.write(path, data):
        return str(path)
    if not _UNCACHED:
        _UNCACHED.append(tempfile.TemporaryDirectory(prefix="gemmc_"))
    fd, name = tempfile.mkstemp(dir=_UNCACHED[0].name, suffix=".cubin")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return name


@cache
def _module_arch_specific(source: str, arch: str, flags: tuple[str, ...]) -> Any:
    """A RawModule of the cubin for `arch` (e.g. sm_90a)."""
    count("compiles")
    return cupy().RawModule(path=cubin_file(source, arch, flags))


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
            fix = (f"compile the schedule for this GPU (`target cuda {arch}`)" if arch in CUDA_ARCHS else
                   f"gemmc has no target for {arch} yet (its targets: {', '.join(CUDA_ARCHS)}): run this kernel on "
                   f"an sm_90 GPU (H100, H200), or write `algorithm simt` (CUDA cores, built for any GPU)")
            raise GemmcError(f"kernel '{rendered.name}' was planned for {rendered.device_arch} (its main loop is "
                             f"wgmma) but this GPU is {arch}; {fix}", code="E303")
        return _module_arch_specific(rendered.source, rendered.device_arch, rendered.build_flags).get_function(entry)
    try:
        return _module(rendered.source, arch).get_function(entry)
    except Exception as err:
        if rendered.device_arch in ("", arch) or type(err).__name__ != "CompileException":
            raise
        # A kernel planned for another GPU (the default target is sm_90) may use what this one lacks (clusters).
        raise GemmcError(f"kernel '{rendered.name}' was planned for {rendered.device_arch} and does not compile for "
                         f"this GPU ({arch}): {str(err).strip().splitlines()[0]}; compile the schedule for this GPU "
                         f"(`target cuda {arch}`)", code="E303") from None


def check_threads(fn: Any, kernel: str, threads: int, advice: str = "") -> None:
    """E302 unless a block of `threads` threads fits the loaded function `fn` of kernel `kernel`: the registers per
    thread ptxas gave it may exceed what the planner allowed for, and the launch would then fail. `advice`, where
    given, ends the message."""
    if fn.max_threads_per_block < threads:
        raise GemmcError(f"kernel '{kernel}': the compiled kernel uses {fn.num_regs} registers per thread, so at most "
                         f"{fn.max_threads_per_block} threads fit in a block; the plan needs {threads}"
                         + (f". {advice}" if advice else ""), code="E302")

"""Kernel source -> loaded function, through NVRTC (CuPy's RawModule).

CuPy keeps compiled binaries on disk (~/.cupy/kernel_cache, or $CUPY_CACHE_DIR) keyed by the source text and
the options, so a schedule compiles once per machine; this module adds an in-process cache on top.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from gemmc.runtime.device import cupy, hardware

OPTIONS = ("--std=c++17",)


@cache
def function(source: str, entry: str, arch: str) -> Any:
    """`arch` keys the cache; CuPy itself compiles for the current device's architecture."""
    module = cupy().RawModule(code=source, options=OPTIONS)
    return module.get_function(entry)


def device_function(source: str, entry: str) -> Any:
    """The kernel compiled for the current device's architecture."""
    return function(source, entry, hardware().arch)

"""A small cached tuning step: where a family's planner offers alternatives to its model's choice
(`alternatives(kernel, hw)`: TSM2R's cluster sizes, the SIMT family's tilings for `tile auto`), the first call on a
GPU times each of them on the call's own A and B (C goes to scratch memory, so the call's C is untouched), as
replays of a CUDA graph of back-to-back launches, and the kernel keeps the fastest.

The choice is kept on the kernel's `Executable` in the process and on disk (runtime/cache.py: one file per entry
under `tuning/` in gemmc's cache folder, keyed by `cache_key`), so later processes skip the timing. An entry is
validated when read (`read_choice`): one that is malformed is ignored with a warning and rewritten; one measured for
other candidates is measured again. `GEMMC_TUNE=0` turns the step off (the model's choice runs). A call inside a
CUDA graph capture never tunes: it runs the cached choice, or the model's. `Executable.tuning`
(`CompiledKernel.tuning`) reports what was measured and by how much the model was off.

A first call that will take longer than NOTICE_SECONDS to decide says so on standard error, in one line, before it
waits: the compiles of the candidates are still running after the time left once their timing is counted
(TIMING_SECONDS each).
"""

from __future__ import annotations

import hashlib
import math
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

from gemmc.families.registry import family
from gemmc.ir.types import Layout
from gemmc.runtime import cache
from gemmc.runtime.compile import toolkit
from gemmc.runtime.device import cupy, device_name
from gemmc.runtime.executable import Executable, Tuning
from gemmc.stats import count
from gemmc.version import __version__

WINDOW_SECONDS = 5e-3  # each timing window launches a candidate back to back for about this long
WINDOWS = 5  # the median of these per candidate (3 windows of 2 ms picked choices 12% off the benchmark's time)
# a candidate's timing: its windows, a warm-up, and two graph captures (about 10 ms on the H100 machine)
TIMING_SECONDS = WINDOWS * WINDOW_SECONDS + 10e-3
NOTICE_SECONDS = 1.0  # a first call that takes longer than this says why on standard error


def enabled() -> bool:
    return os.environ.get("GEMMC_TUNE", "1") != "0"


def candidates(kernel: Executable) -> list[tuple[str, Executable]]:
    """The model's kernel and the planner's alternatives to it (the family's `alternatives`), each an executable
    of its own (sources not rendered yet)."""
    if kernel.ir.family is None:
        return []
    found = family(kernel.ir.family).alternatives(kernel.ir, kernel.target)
    return [(label, Executable(ir, kernel.target, kernel.filename)) for label, ir in found]


def cache_key(kernel: Executable, gpu: str, toolkit: str = "") -> str:
    """The GPU, the model's kernel source and its launch data (the sizes live in the problem table, not in the
    source: two shapes with the same template parameters share a source but not a choice), the gemmc version (which
    makes the candidates) and the compiler and driver that build and run them (`compile.toolkit`): what the
    measured times depend on."""
    work = kernel.ir.work
    assert work is not None
    digest = hashlib.sha256(kernel.rendered.source.encode())
    digest.update(work.problems.data + repr((work.grid, work.block, work.smem_bytes)).encode())
    digest.update(f"|gemmc {__version__}|{toolkit}".encode())
    return gpu + "|" + digest.hexdigest()[:32]


def _finite_seconds(values: object, count: int) -> bool:
    return (isinstance(values, list) and len(values) == count
            and all(type(t) in (int, float) and math.isfinite(t) and t >= 0 for t in values))


def read_choice(key: str, labels: list[str], folder: str = "tuning") -> dict[str, Any] | None:
    """The cached choice of `key` in `folder` (its fields: the candidates' `labels`, their `seconds`, the `chosen`
    index) if it is one among these candidates; None when there is none, when it was measured for other candidates
    (gemmc changed its alternatives: measured again), or, with a warning naming the file, when it is malformed."""
    path, entry = cache.read_json(folder, key, f"{folder} entry")
    if entry is None:
        return None
    found = entry.get("labels")
    if not isinstance(found, list) or not all(isinstance(label, str) for label in found):
        cache.ignore(path, "its labels are not a list of names")
        return None
    if found != labels:
        return None
    chosen = entry.get("chosen")
    if type(chosen) is not int or not 0 <= chosen < len(labels):
        cache.ignore(path, f"its chosen index {chosen!r} is not one of the {len(labels)} candidates")
        return None
    if not _finite_seconds(entry.get("seconds"), len(labels)):
        cache.ignore(path, f"its times are not {len(labels)} finite numbers")
        return None
    return entry


def store_choice(key: str, labels: tuple[str, ...], seconds: tuple[float, ...], chosen: int,
                 folder: str = "tuning") -> None:
    """Write the choice of `key` in `folder` (atomically; an unwritable cache only costs the next process the
    timing)."""
    cache.write_json(folder, key, {"labels": list(labels), "seconds": list(seconds), "chosen": chosen,
                                     "gemmc": __version__})


def _scratch_c(kernel: Executable) -> list[Any]:
    """Device memory standing in for each problem's C, with the plan's leading dimension."""
    cp = cupy()
    work = kernel.ir.work
    assert work is not None
    out = []
    for row in work.problems:
        extent = (row.m - 1) * row.ldc + row.n if kernel.ir.layout_c is Layout.ROW else (row.n - 1) * row.ldc + row.m
        out.append(cp.zeros(max(1, extent) * kernel.ir.c_dtype.nbytes, dtype=cp.uint8))
    return out


def captured(run: Callable[[Any], None], calls: int) -> Any:
    """A CUDA graph of `calls` launches: replayed, the kernels run back to back with no host in between, as a
    user's graph (and the benchmark) runs them. Plain launches would time the host's launch cost for a kernel of
    a few microseconds, not the kernel."""
    cp = cupy()
    capture = cp.cuda.Stream(non_blocking=True)
    with capture:
        capture.begin_capture()
        for _ in range(calls):
            run(capture)
        return capture.end_capture()


def graph_seconds(graph: Any, stream: Any, per: int, windows: int) -> float:
    """Device time of one of the `per` launches (or rounds) a CUDA graph holds: the median of `windows` replays of
    `graph` on `stream`, each timed by a pair of events, divided by `per`."""
    cp = cupy()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(windows):
        start.record(stream)
        graph.launch(stream=stream)
        end.record(stream)
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) * 1e-3 / per)
    return sorted(times)[len(times) // 2]


def median_seconds(run: Callable[[Any], None], stream: Any) -> float:
    """Device time of one `run(stream)`: the median of WINDOWS replays of a graph of as many back-to-back calls as
    WINDOW_SECONDS holds (at most 100), per call."""
    run(stream)  # warm-up: the first launch of a freshly loaded module, and the uploads a capture cannot hold
    stream.synchronize()
    once = max(graph_seconds(captured(run, 1), stream, 1, 1), 1e-6)
    calls = max(1, min(100, round(WINDOW_SECONDS / once)))
    return graph_seconds(captured(run, calls), stream, calls, WINDOWS)


def notice(name: str, count: int, gpu: str) -> str:
    return (f"gemmc: first call of '{name}': compiling and timing {count} candidate plans on {gpu}; the choice is "
            f"kept in {cache.cache_dir() / 'tuning'} for later processes (GEMMC_TUNE=0 runs the model's choice "
            "untimed)")


def load_all(kernels: Sequence[Any], slow: Callable[[], None]) -> None:
    """Compile and load every kernel's function, in threads (NVRTC runs without the GIL); call `slow()` once, as
    soon as the compiles and the timing still to come are sure to take longer than NOTICE_SECONDS."""
    budget = NOTICE_SECONDS - len(kernels) * TIMING_SECONDS
    with ThreadPoolExecutor(min(8, len(kernels))) as pool:
        loads = [pool.submit(getattr, k, "function") for k in kernels]
        if budget <= 0 or wait(loads, timeout=budget).not_done:
            slow()
        for load in loads:
            load.result()


def tuned(kernel: Executable, launcher: Callable[[list[int]], Callable[[Executable, Any], None]],
          stream: Any) -> Executable:
    """The kernel a call should launch: the model's, or the fastest of its alternatives on this GPU, kept in
    `kernel.tuned` (and what was measured in `kernel.tuning`) once decided. `launcher(c_pointers)` uploads the call's
    A and B with the given C pointers once and returns a function that launches a candidate on them on a given
    stream (each candidate is timed as graph replays: `captured`). The candidates are compiled and loaded all at
    once, in threads: NVRTC runs without the GIL."""
    if kernel.tuned is not None:
        return kernel.tuned
    if not enabled():
        return kernel
    options = candidates(kernel)
    if len(options) < 2:
        kernel.tuned = kernel
        return kernel
    cp = cupy()
    gpu = device_name()
    key = cache_key(kernel, gpu, toolkit())
    entry = read_choice(key, [label for label, _ in options])
    if entry is not None:
        chosen = entry["chosen"]
        kernel.tuning = Tuning(gpu, tuple(entry["labels"]), tuple(map(float, entry["seconds"])), chosen, cached=True)
        kernel.tuned = options[chosen][1] if chosen else kernel
        return kernel.tuned
    if cp.cuda.runtime.streamIsCapturing(stream.ptr):
        return kernel  # no timing inside a graph capture; a later plain call tunes
    count("tuning_runs")
    scratch = _scratch_c(kernel)
    run = launcher([int(arr.data.ptr) for arr in scratch])
    kernels = [kernel] + [k for _, k in options[1:]]
    load_all(kernels, lambda: print(notice(kernel.name, len(kernels), gpu), file=sys.stderr, flush=True))
    seconds = tuple(median_seconds(lambda s, k=k: run(k, s), stream) for k in kernels)  # type: ignore[misc]
    chosen = min(range(len(seconds)), key=seconds.__getitem__)
    labels = tuple(label for label, _ in options)
    kernel.tuning = Tuning(gpu, labels, seconds, chosen, cached=False)
    store_choice(key, labels, seconds, chosen)
    kernel.tuned = kernels[chosen]
    return kernel.tuned

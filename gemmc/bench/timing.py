"""The timing protocol of docs/PERFORMANCE.md, shared by every benchmark suite.

Device time per call: CUDA events around `calls` back-to-back calls, the median of `windows` such windows, after
warm-up. Anything a user would capture in a CUDA graph (cuBLAS loops, torch.bmm, and gemmc's own launches) is
captured and replayed, so no side pays Python's launch overhead in device time; gemmc's host-inclusive time per
call (plain Python calls, synchronised) is reported beside it.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

CALLS = 100
WINDOWS = 7


def device_seconds(fn: Callable[[], Any], *, calls: int = CALLS, windows: int = WINDOWS) -> float:
    """Median over windows of the mean device time of one call (torch events on the current stream)."""
    import torch

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(windows):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop) / 1e3 / calls)
    return statistics.median(samples)


def copy_roof(nbytes: int, *, calls: int = CALLS) -> float:
    """Bytes per second a device-to-device copy of `nbytes` moves, read and write counted: the memory roof the
    suites hold memory-bound kernels to. The copy is of f32 elements (torch's copy of uint8 moves about a fifth less
    on the H100)."""
    import torch

    src = torch.empty(max(nbytes // 4, 1), device="cuda", dtype=torch.float32).uniform_()
    dst = torch.empty_like(src)
    return 2 * src.numel() * 4 / device_seconds(lambda: dst.copy_(src), calls=calls)


def host_seconds(fn: Callable[[int], Any], *, calls: int = CALLS, windows: int = WINDOWS,
                 sync: bool = True) -> float:
    """Median over windows of wall seconds per call of `fn(i)` (i: the call's index in its window, for inputs that
    cycle), after one untimed call. With `sync` each window ends by synchronising, inside the timing: the host's time
    per call including what the GPU makes it wait for; without, the synchronisation follows the timing: the host's
    own time to issue a call (the caller's work, the checks and the launch)."""
    import torch

    fn(0)
    torch.cuda.synchronize()
    samples = []
    for _ in range(windows):
        t0 = time.perf_counter()
        for i in range(calls):
            fn(i)
        if sync:
            torch.cuda.synchronize()
        samples.append((time.perf_counter() - t0) / calls)
        if not sync:
            torch.cuda.synchronize()
    return statistics.median(samples)


def torch_graph(fn: Callable[[], Any], *, repeat: int = 1) -> Callable[[], Any]:
    """Capture `repeat` calls of fn (torch work) in a CUDA graph; return its replay."""
    import torch

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(repeat):
            fn()
    return graph.replay


def gemmc_graph(fn: Callable[[], Any], *, repeat: int = 1) -> Callable[[], Any]:
    """Capture one gemmc call (`repeat` calls, back to back) in a CUDA graph on torch's stream and return its replay,
    so device timing with torch events sees it. gemmc launches on torch's current stream for torch tensors and on
    CuPy's for CuPy arrays: during the capture both are the capturing stream. The calls before it compile and upload
    the tables, so the capture holds only the launches."""
    import torch

    from gemmc.runtime.streams import external_stream, torch_stream

    fn()
    # Once more on the stream the capture runs on: what a kernel keeps per stream (a split's planes, staged
    # operands) is allocated there now, not inside the capture, where allocating invalidates it.
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), external_stream(torch_stream()):
        fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream), external_stream(torch_stream()):
        for _ in range(repeat):
            fn()
    return graph.replay


def inputs(shapes) -> tuple[list, list, list]:
    """Random f32 A_i (m x k), B_i (k x n) and C_i on the GPU for (m, n, k) shapes."""
    import torch

    return ([torch.randn(m, k, device="cuda") for m, n, k in shapes],
            [torch.randn(k, n, device="cuda") for m, n, k in shapes],
            [torch.empty(m, n, device="cuda") for m, n, k in shapes])


def checked_gemmc_us(kern: Any, As: list, Bs: list, Cs: list, label: str = "") -> tuple[float, float]:
    """For the studies in bench/experiments: a gemmc kernel checked first as `gemmc run --check` checks
    (gemmc.runtime.check: fresh random inputs, NaN-poisoned outputs, float64 reference), then its device time per
    call on As, Bs, Cs in microseconds (graph replays, as above). Returns (microseconds, relative error)."""
    from gemmc.runtime.check import check_kernel

    err = check_kernel(kern, seed=1, time_it=False)["errors"]
    assert err["nonfinite"] == 0 and err["rel_fro"] < 1e-5, (label, err)
    return device_seconds(gemmc_graph(lambda: kern(As, Bs, Cs))) * 1e6, err["rel_fro"]


def compare(name: str, shapes, variants) -> str:
    """The A/B experiments' line for one case: each (label, kernel) of `variants` (built as it is reached) checked
    and timed on the same inputs (checked_gemmc_us), with its registers, time, TFLOP/s and error."""
    As, Bs, Cs = inputs(shapes)
    flops = sum(2 * m * n * k for m, n, k in shapes)
    parts = []
    for label, kern in variants:
        us, err = checked_gemmc_us(kern, As, Bs, Cs, label=f"{name} {label}")
        parts.append(f"{label} ({kern.executable.function.num_regs} regs) {us:8.1f} us "
                     f"({flops / us / 1e6:5.1f} TFLOP/s, err {err:.1e})")
    return " | ".join(parts)


def compile_schedule(text: str) -> str:
    """In a worker process: NVRTC-compile every kernel of a schedule (its pre-pass, and the alternatives its first
    call will time: gemmc.runtime.tune) into the disk caches."""
    import gemmc
    from gemmc.runtime.compile import device_function
    from gemmc.runtime.tune import candidates

    for k in gemmc.compile_string(text):
        for kernel in [k.executable] + [alt for _, alt in candidates(k.executable)[1:]]:
            r = kernel.rendered
            for entry in (r.entry, r.prologue):
                if entry:
                    device_function(r, entry)
    return text


def precompile(texts: list[str], jobs: int = 16) -> None:
    """Compile every kernel a run needs in parallel processes first (one at a time, NVRTC took most of a run);
    the disk caches then serve the measuring process, and no compile is timed."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    with ProcessPoolExecutor(jobs, mp_context=get_context("spawn")) as pool:
        list(pool.map(compile_schedule, texts))


def gpu_name() -> str:
    import torch

    return torch.cuda.get_device_name()

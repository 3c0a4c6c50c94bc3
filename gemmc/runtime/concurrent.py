"""Running a concurrent group, and tuning its GO-kernels under contention (paper 004 §3.4).

A call checks that the group's GEMMs are independent (no output overlaps any operand), then runs them as the plan
says: one after another on the caller's stream, forked onto side streams through an event and joined back
through one event per side stream (so a capture of the call holds the whole fork/join), or as the fused launch.

GO-kernels (`go_tune`), once per distinct member shape and GPU, on the first call outside a capture:
1. RC step: every candidate (gemmc.concurrent.plan.go_candidates) is timed alone on the whole GPU and on green
   contexts of 1/2 and 1/4 of the SMs (gemmc/runtime/green.py); the fastest under each share is a finalist.
2. CD step: for each degree 2, 4, 8, 16, that many copies of each finalist run at once on as many streams (each
   `reps` times back to back, paper 004 §5), captured in a CUDA graph with the fork and join; the finalist with
   the shortest makespan is the GO-kernel of that degree. Its speedup is degree x T_alone / makespan, T_alone the
   fastest candidate alone on the whole GPU: the training script labels GEMMs with it.
Choices are cached in the process and on disk beside the tuning step's (keyed by the GPU and the member's code).
GEMMC_TUNE=0 turns the measuring off: a degree's GO-kernel is then the member's plan for 1/2 (degree 2) or 1/4
(degree 4 and up) of the SMs, as in the generated C++ launcher.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from gemmc.concurrent.plan import go_degree
from gemmc.errors import GemmcError
from gemmc.ir.group import DEGREES, SHARES, Mode
from gemmc.runtime.args import describe
from gemmc.runtime.device import cupy, device_name
from gemmc.runtime.launch import enqueue, kernel_function, launch, pointer_tables, scalars
from gemmc.runtime.tune import _cache_path, _median_seconds, enabled

if TYPE_CHECKING:
    from gemmc.api import CompiledKernel
    from gemmc.api_group import CompiledGroup

WINDOW_SECONDS = 2e-3  # a makespan window holds about this much work
WINDOWS = 5
MAX_REPS = 8  # back-to-back runs of each copy within one makespan measurement


@dataclass(frozen=True)
class GoTuning:
    """What the GO-kernel tuning of one member shape measured (seconds)."""

    gpu: str
    labels: tuple[str, ...]  # the candidates
    alone: dict[int, list[float | None]]  # share -> each candidate's time alone on that share of the SMs
    finalists: tuple[int, ...]  # candidate indices
    makespans: dict[int, list[float]]  # degree -> each finalist's makespan of `degree` concurrent copies
    chosen: dict[int, int]  # degree -> candidate index (degree 1: the fastest alone on the whole GPU)
    partitions: str  # how the shares were made (or why not)
    cached: bool = False

    @property
    def t_alone(self) -> float:
        return float(min(t for t in self.alone[1] if t is not None))

    def speedup(self, degree: int) -> float:
        """degree x T_alone / the GO-kernel's makespan at that degree (1.0 at degree 1)."""
        if degree == 1:
            return 1.0
        best = min(self.makespans[degree])
        return degree * self.t_alone / best

    def __str__(self) -> str:
        lines = [f"GO-kernels on {self.gpu}" + (" (cached)" if self.cached else "") + f"; {self.partitions}:"]
        for i, label in enumerate(self.labels):
            alone = "  ".join(f"1/{s}: " + (f"{v * 1e6:8.1f} us" if (v := t[i]) is not None else "     -   ")
                              for s, t in sorted(self.alone.items()))
            lines.append(f"  [{i}] {label:<34} {alone}" + ("  finalist" if i in self.finalists else ""))
        for d in DEGREES[1:]:
            if d in self.makespans:
                lines.append(f"  degree {d:2d}: kernel [{self.chosen[d]}], makespan "
                             f"{min(self.makespans[d]) * 1e6:.1f} us, speedup {self.speedup(d):.2f}x")
        return "\n".join(lines)


def _cache_file() -> str:
    return os.path.join(os.path.dirname(_cache_path()), "concurrent.json")


def _read_cache() -> dict[str, Any]:
    try:
        with open(_cache_file()) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_cache(key: str, entry: dict[str, Any]) -> None:
    path = _cache_file()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        data = _read_cache()
        data[key] = entry
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        pass  # an unwritable cache only costs the next process the timing


def signature(kernel: CompiledKernel) -> str:
    """The member's code and launch data, its name aside: copies of one GEMM share one tuning."""
    import dataclasses

    from gemmc.codegen import render_kernel

    ir = kernel.ir
    work = ir.work
    assert work is not None
    source = render_kernel(dataclasses.replace(ir, name="member"), kernel.target).source
    digest = hashlib.sha256(source.encode() + work.problems.data + repr((work.grid, work.block)).encode())
    return digest.hexdigest()[:32]


def pin(kernel: CompiledKernel) -> CompiledKernel:
    """The kernel launches as it is: the isolated tuning step does not swap it for an alternative."""
    kernel._runtime_state["tuned"] = kernel
    return kernel


def _wall_seconds(run: Callable[[Any], None], stream: Any) -> float:
    """Median time per launch of plain back-to-back launches on `stream`, by the host clock around a synchronised
    window (a green context's stream: its events would belong to another context than CuPy's)."""
    run(stream)
    stream.synchronize()
    t0 = time.perf_counter()
    run(stream)
    stream.synchronize()
    once = max(time.perf_counter() - t0, 1e-6)
    calls = max(1, min(50, round(WINDOW_SECONDS / once)))
    samples = []
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(calls):
            run(stream)
        stream.synchronize()
        samples.append((time.perf_counter() - t0) / calls)
    return sorted(samples)[1]


def makespan_seconds(runs: list[Callable[[Any], None]], reps: int, stream: Any) -> float:
    """Device time of running every function of `runs` `reps` times back to back, each on its own stream, all at
    once (forked from and joined to a captured stream), per rep: the median of WINDOWS graph replays."""
    cp = cupy()
    sides = side_streams(len(runs))
    for run, side in zip(runs, sides, strict=False):  # warm-up outside the capture: uploads, first launches
        run(side)
    cp.cuda.Device().synchronize()
    capture = cp.cuda.Stream(non_blocking=True)
    fork = cp.cuda.Event(disable_timing=True)
    joins = [cp.cuda.Event(disable_timing=True) for _ in runs]
    with capture:
        capture.begin_capture()
        fork.record(capture)
        for run, side, join in zip(runs, sides, joins, strict=False):
            side.wait_event(fork)
            for _ in range(reps):
                run(side)
            join.record(side)
            capture.wait_event(join)
        graph = capture.end_capture()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    graph.launch(stream=stream)
    times = []
    for _ in range(WINDOWS):
        start.record(stream)
        graph.launch(stream=stream)
        end.record(stream)
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) * 1e-3 / reps)
    return sorted(times)[len(times) // 2]


_SIDE: dict[int, list[Any]] = {}


def side_streams(n: int) -> list[Any]:
    """n non-blocking streams of the current device, made once and reused by every group."""
    cp = cupy()
    pool = _SIDE.setdefault(cp.cuda.Device().id, [])
    while len(pool) < n:
        pool.append(cp.cuda.Stream(non_blocking=True))
    return pool[:n]


def go_tune(group: CompiledGroup, index: int, A: Any, B: Any, stream: Any) -> tuple[GoTuning, list[Any]]:
    """The GO-kernel tuning of member `index` (measured, or read from the caches) and its candidates as compiled
    kernels. A and B are the call's own operands; the copies write scratch outputs."""
    from gemmc.api import CompiledKernel
    from gemmc.concurrent.plan import go_candidates
    from gemmc.runtime.green import partitions

    member = group.members[index]
    state: dict = group._runtime_state.setdefault("go", {})
    kernels: dict = group._runtime_state.setdefault("go_kernels", {})
    sigs: dict = group._runtime_state.setdefault("signatures", {})
    if index not in sigs:
        sigs[index] = signature(member)
    sig = sigs[index]
    plan = group.group_plan
    if sig not in kernels:
        found = go_candidates(member.ir, plan.choices[index], member.target)
        kernels[sig] = ([label for label, _ in found],
                        [pin(CompiledKernel(ir, member.target, member.filename)) for _, ir in found])
    labels, compiled = kernels[sig]
    if sig in state:
        return state[sig], compiled
    cp = cupy()
    gpu = device_name()
    key = f"{gpu}|{sig}"
    entry = _read_cache().get(key)
    if entry is not None and entry.get("labels") == labels:
        tuning = GoTuning(gpu, tuple(labels), {int(s): v for s, v in entry["alone"].items()},
                          tuple(entry["finalists"]), {int(d): v for d, v in entry["makespans"].items()},
                          {int(d): v for d, v in entry["chosen"].items()}, entry["partitions"], cached=True)
        state[sig] = tuning
        return tuning, compiled
    if cp.cuda.runtime.streamIsCapturing(stream.ptr):
        raise GemmcError(f"group {group.name}: the first call tunes its GO-kernels and cannot run inside a graph "
                         "capture; call the group once before capturing it")
    with ThreadPoolExecutor(min(8, len(compiled))) as pool:
        list(pool.map(kernel_function, compiled))
    alpha_, beta_ = scalars(member, None, None)
    a, b = describe(A, "As", index).ptr, describe(B, "Bs", index).ptr
    p = member.ir.problems[0]
    scratch = [cp.empty(p.m * p.n * member.ir.dtype.nbytes, dtype=cp.uint8) for _ in range(max(DEGREES))]

    def runner(k: CompiledKernel, copy: int) -> Callable[[Any], None]:
        _, pa, pb, pc = pointer_tables(OrderedDict(), [a], [b], [int(scratch[copy].data.ptr)])
        return lambda s: enqueue(k, pa, pb, pc, alpha_, beta_, s)

    parts = partitions()
    how = parts.how
    alone: dict[int, list[float | None]] = {1: [_median_seconds(runner(k, 0), stream) for k in compiled]}
    for share in SHARES[1:]:
        side = parts.streams.get(share)
        if side is None:
            continue
        try:
            alone[share] = [_wall_seconds(runner(k, 0), side) for k in compiled]
        except Exception as err:  # noqa: BLE001 - a driver that refuses the partition's launches: no RC step
            how = f"{parts.how}, but launching on them failed ({type(err).__name__}: {err})"
            alone = {1: alone[1]}
            break

    def fastest(times: list[float | None]) -> int:
        return min(range(len(times)), key=lambda i: times[i] or float("inf"))

    finalists = tuple(dict.fromkeys(fastest(t) for t in alone.values()))
    if len(alone) == 1:  # no partitions: the model's share plans stand in for the shares' winners
        finalists = tuple(dict.fromkeys((*finalists, *range(1, min(3, len(compiled))))))
    t1 = alone[1]
    makespans: dict[int, list[float]] = {}
    chosen = {1: fastest(t1)}
    for degree in DEGREES[1:]:
        reps = max(1, min(MAX_REPS, round(WINDOW_SECONDS / max(degree * (t1[chosen[1]] or 1e-6), 1e-6))))
        makespans[degree] = [makespan_seconds([runner(compiled[f], c) for c in range(degree)], reps, stream)
                             for f in finalists]
        chosen[degree] = finalists[min(range(len(finalists)), key=makespans[degree].__getitem__)]
    tuning = GoTuning(gpu, tuple(labels), alone, finalists, makespans, chosen, how)
    record = asdict(tuning)
    record.pop("cached")
    _write_cache(key, {**record, "labels": labels})
    state[sig] = tuning
    return tuning, compiled


def canonical(group: CompiledGroup) -> list[CompiledKernel]:
    """Per GEMM, the first member of the group with the same code and launch data (copies of one GEMM): one
    compile, one isolated tuning and one GO tuning per distinct GEMM; the arrays are each call's own."""
    state = group._runtime_state
    if "canonical" not in state:
        sigs: dict = state.setdefault("signatures", {})
        first: dict[str, CompiledKernel] = {}
        out = []
        for i, k in enumerate(group.members):
            if i not in sigs:
                sigs[i] = signature(k)
            out.append(first.setdefault(sigs[i], k))
        state["canonical"] = out
    return state["canonical"]


def _check_independent(group: CompiledGroup, As: Any, Bs: Any, Cs: Any) -> None:
    """Every output is its own memory and no operand reads one: the GEMMs of a group do not depend on each other."""
    spans = []
    for name, arrays in (("As", As), ("Bs", Bs), ("Cs", Cs)):
        for i, x in enumerate(arrays):
            info = describe(x, name, i)
            extent = sum((n - 1) * abs(s) for n, s in zip(info.shape, info.strides, strict=True)) + 1
            spans.append((info.ptr, info.ptr + extent * info.itemsize, name, i))
    outputs = [s for s in spans if s[2] == "Cs"]
    for lo, hi, _, i in outputs:
        for olo, ohi, oname, j in spans:
            if (oname, j) != ("Cs", i) and lo < ohi and olo < hi:
                raise GemmcError(f"Cs[{i}] ({group.members[i].name}) overlaps {oname}[{j}]: the GEMMs of group "
                                 f"{group.name} are independent, so no output may be another GEMM's operand or "
                                 "output", code="E400")


def run_group(group: CompiledGroup, As: Any, Bs: Any, Cs: Any, *, stream: Any = None) -> None:
    cp = cupy()
    n = len(group.members)
    for name, arrays in (("As", As), ("Bs", Bs), ("Cs", Cs)):
        if not isinstance(arrays, (list, tuple)) or len(arrays) != n:
            got = f"{len(arrays)} arrays" if isinstance(arrays, (list, tuple)) else type(arrays).__name__
            raise GemmcError(f"{name}: expected a list of {n} arrays, one per GEMM of group {group.name} in order "
                             f"({', '.join(k.name for k in group.members)}); got {got}", code="E400")
    stream = stream if stream is not None else cp.cuda.get_current_stream()
    state = group._runtime_state
    key = tuple(describe(x, name, i).ptr for name, arrays in (("As", As), ("Bs", Bs), ("Cs", Cs))
                for i, x in enumerate(arrays))
    if state.get("checked") != key:
        _check_independent(group, As, Bs, Cs)
        state["checked"] = key
    if group.mode is Mode.FUSED:
        fused = group.fused
        assert fused is not None
        launch(fused, list(As), list(Bs), list(Cs), alpha=None, beta=None, stream=stream)
        return
    members = canonical(group)
    if group.mode is Mode.SEQUENTIAL or group.degree <= 1:
        for i, k in enumerate(members):
            launch(k, [As[i]], [Bs[i]], [Cs[i]], alpha=None, beta=None, stream=stream)
        return
    degree = group.degree
    degrees: dict = state.setdefault("go_degrees", {})
    if degree not in degrees:  # each member's GO degree at this group degree (plan.go_degree), worked out once
        irs = [k.ir for k in group.members]
        degrees[degree] = [go_degree(irs, i, degree) for i in range(n)]
    kernels = []
    for i, member in enumerate(members):
        go = degrees[degree][i] if group.kernels == "go" else 1
        if go == 1:
            kernels.append(member)  # the isolated kernel (and its own tuning)
        elif not enabled():  # no measuring: the model's plan for the degree's share of the SMs
            kernels.append(pin(group.share_kernel(group.members.index(member), min(4, go))))
        else:
            tuning, compiled = go_tune(group, i, As[i], Bs[i], stream)
            kernels.append(compiled[tuning.chosen[go]])
    sides = side_streams(degree)
    events: dict = state.setdefault("events", {})
    if degree not in events:
        events[degree] = (cp.cuda.Event(disable_timing=True), [cp.cuda.Event(disable_timing=True)
                                                               for _ in range(degree)])
    fork, joins = events[degree]
    fork.record(stream)
    for side in sides:
        side.wait_event(fork)
    try:
        for i, k in enumerate(kernels):
            launch(k, [As[i]], [Bs[i]], [Cs[i]], alpha=None, beta=None, stream=sides[i % degree])
    finally:  # join every side stream, so that the caller's stream (and a capture) is never left forked
        for side, join in zip(sides, joins, strict=True):
            join.record(side)
            stream.wait_event(join)

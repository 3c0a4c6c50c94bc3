"""`concurrency auto`'s floor: the planner's choice confirmed by timing it on the group's first call.

The planner chooses a group's mode from models (the predictor's degree, the fit rule, the SIMT cost model), none of
which sees the GPU. On the first call of an auto group outside a graph capture (and with measuring on,
GEMMC_TUNE != 0), the runtime times the plan's way against the group one after another (each member's own tuned
kernel), the group in one launch (where its members allow one: plan.fused_kernel) and the members' own kernels on
streams, on the call's own arrays, as replays of a graph of one
call (`replay_seconds`); another way replaces the plan's only where it is CONFIRM_MARGIN faster, and every later
call of the group runs it. So `auto` is never slower than gemmc's sequential mode by more than the margin, whatever
the models said: on the H100 a bf16
FFN dX/dW pair of about one wave each ran 55.9 us one after another and 54.4-54.6 us two at once, where a
projection's pair ran 32.4 and 34.4-34.6 us (bench/results/concurrent/2026-11-27_h100_bf16.json); no model of the
planner tells the two apart.

A fused bf16/f16 group is timed as its graph replays it: the list kernel alone, its problem table and tensor maps
filled when the graph was captured; plain calls of it also copy the table and run the planning kernel (a few us).
The timing graphs' capture buffers go back to the kernel afterwards.

The timed calls write the call's own outputs, so a group whose members read C (beta != 0) is not timed: its plan
runs as planned. The outcome stays in the `GroupRun` and, like the members' own tuning (runtime/tune.py), on disk:
one file per group under `group_floor/` in gemmc's cache folder, keyed by `cache_key`, so a later process (or a call
inside a graph capture, which cannot time) runs the way a first call kept.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gemmc.concurrent.plan import MAX_AUTO_DEGREE, go_degree, tuned_degree
from gemmc.ir.group import Mode
from gemmc.runtime import tune
from gemmc.runtime.compile import toolkit
from gemmc.runtime.device import cupy, device_name
from gemmc.runtime.streams import is_torch, launch_stream
from gemmc.runtime.tune import WINDOW_SECONDS, captured, enabled, read_choice, store_choice

if TYPE_CHECKING:
    from gemmc.runtime.concurrent import GroupRun

CONFIRM_MARGIN = 0.98  # another way must take at most 98% of the plan's time: graph replays vary by about 1%
WINDOWS = 7  # the median of these windows of back-to-back replays (the benchmark's protocol)
MAX_CALLS = 100  # replays per window, fewer where WINDOW_SECONDS holds fewer
FOLDER = "group_floor"  # the cache's subfolder (runtime/cache.py)


def replay_seconds(call: Callable[[Any], None], stream: Any) -> float:
    """Device time per call of the group as a user's graph runs it and as the benchmark times it: one call
    captured, its graph launched back to back, the median of WINDOWS windows. (A graph of many calls, as the
    isolated tuning step times kernels, runs sequential groups with less overhead between calls than streams: on
    the H100 it put bf16 QKV groups 10% faster one after another, where replays of one call put them 7% slower,
    bench/results/concurrent/2026-11-27_h100_bf16-floor-graphs.json.)"""
    cp = cupy()
    call(stream)  # warm-up: GO-kernel tuning, uploads and first launches, which a capture cannot hold
    stream.synchronize()
    graph = captured(call, 1)
    start, end = cp.cuda.Event(), cp.cuda.Event()

    def window(calls: int) -> float:
        start.record(stream)
        for _ in range(calls):
            graph.launch(stream=stream)
        end.record(stream)
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end) * 1e-3 / calls

    window(1)
    once = max(window(1), 1e-6)
    calls = max(1, min(MAX_CALLS, round(WINDOW_SECONDS / once)))
    times = sorted(window(calls) for _ in range(WINDOWS))
    return times[len(times) // 2]


@dataclass(frozen=True)
class Way:
    """One way to run the group: a mode, a degree and the kernels its streams launch ("go" or "isolated")."""

    mode: Mode
    degree: int
    kernels: str = "go"

    @property
    def label(self) -> str:
        if self.mode is Mode.STREAMS:
            return f"{'GO-kernels' if self.kernels == 'go' else 'own kernels'} on {self.degree} streams"
        return self.mode.value


@dataclass(frozen=True)
class Confirmed:
    """What the first call measured (seconds per call of each way, the plan's first) and the way it kept."""

    way: Way
    seconds: dict[str, float]
    planned: str  # the plan's way's label
    cached: bool = False  # read from the cache: a first call of an earlier process measured it

    def __str__(self) -> str:
        times = ", ".join(f"{label} {t * 1e6:.1f} us" for label, t in self.seconds.items())
        kept = "the plan's" if self.way.label == self.planned else f"{CONFIRM_MARGIN:.0%} of the plan's or less"
        when = "on a first call (cached)" if self.cached else "on the first call"
        return f"measured {when}: {times}; runs {self.way.label} ({kept})"


def ways(run: GroupRun) -> list[Way]:
    """The plan's way, then sequential, the fused launch (where the members allow one), the members' own kernels on
    the plan's streams and on a stream each (up to MAX_AUTO_DEGREE), each where it differs from the plan's. All at
    once is no tuned degree for 3 GEMMs, which the plan rounds down to 2: on the H100 the bf16 QKV H768 T4096 group
    ran its own kernels in 29.4 us on 3 streams against 31.8 on 2, and QKV H1024 T8192 in 81.2 us on 3 where auto's
    choice without this way took 89.3 (bench/results/concurrent/2026-11-27_h100_bf16-merged.json); with it, the
    floor took 3 streams for two of the three QKV groups and every group ran within 5% of the oracle
    (2026-11-27_h100_bf16-floor-every-stream.json)."""
    plan = run.plan
    n = len(run.members)
    planned = Way(plan.mode, plan.degree if plan.mode is Mode.STREAMS else 1)
    out = [planned]
    if n == 1:
        return out
    if plan.mode is not Mode.SEQUENTIAL:
        out.append(Way(Mode.SEQUENTIAL, 1))
    if plan.fused is not None and plan.mode is not Mode.FUSED:
        out.append(Way(Mode.FUSED, 1))
    degree = plan.degree if plan.mode is Mode.STREAMS else tuned_degree(min(n, MAX_AUTO_DEGREE))
    irs = [k.ir for k in run.members]
    same = plan.mode is Mode.STREAMS and all(go_degree(irs, i, degree) == 1 for i in range(n))
    if not same:  # GO-kernels at that degree would be the members' own kernels: the plan's way already
        out.append(Way(Mode.STREAMS, degree, "isolated"))
    every = min(n, MAX_AUTO_DEGREE)
    if every > degree:
        out.append(Way(Mode.STREAMS, every, "isolated"))
    return out


def reads_c(run: GroupRun) -> bool:
    """Some member reads C (beta != 0): timing it would change the outputs."""
    return any(k.ir.beta != 0.0 for k in run.members)


def cache_key(run: GroupRun, gpu: str, toolkit: str = "") -> str:
    """The GPU, the group's plan and the tuning key (source and launch data, the gemmc version and the toolkit:
    tune.cache_key) of each member in call order and of the fused kernel: what the ways' times depend on."""
    digest = hashlib.sha256(repr((run.plan.mode.value, run.plan.degree)).encode())
    for member in (*run.members, *((run.fused,) if run.fused is not None else ())):
        digest.update(tune.cache_key(member, gpu, toolkit).encode())
    return gpu + "|" + digest.hexdigest()[:32]


def confirm(run: GroupRun, As: Any, Bs: Any, Cs: Any, stream: Any) -> Way | None:
    """The way an auto group's calls run: measured once and cached (module docstring), or None where it is not
    measured (one GEMM, measuring off, members that read C, a graph capture with nothing cached): then the plan's."""
    if run.confirmed is not None:
        return run.confirmed.way
    # the cheap tests first: a group that is never measured asks them on every call
    if len(run.members) == 1 or not enabled() or reads_c(run):
        return None
    candidates = ways(run)
    labels = [way.label for way in candidates]
    key = cache_key(run, device_name(), toolkit())
    entry = read_choice(key, labels, FOLDER)
    if entry is not None:
        run.confirmed = Confirmed(candidates[entry["chosen"]], dict(zip(labels, map(float, entry["seconds"]),
                                                                        strict=True)), labels[0], cached=True)
        return run.confirmed.way
    cp = cupy()
    stream = launch_stream(stream, is_torch(As))  # where the call launches (torch's current stream for tensors)
    if cp.cuda.runtime.streamIsCapturing(stream.ptr):
        return None
    from gemmc.runtime.concurrent import run_group

    seconds: dict[str, float] = {}
    for way in candidates:
        def call(s: Any, way: Way = way) -> None:
            run_group(run, As, Bs, Cs, mode=way.mode, degree=way.degree, kernels=way.kernels, stream=s)

        # a fused way's list calls captured in the timing graph take buffers of their own, which come back once
        # the graph is destroyed (DynamicState.keep)
        seconds[way.label] = replay_seconds(call, stream)
    planned = candidates[0]
    fastest = min(candidates, key=lambda w: seconds[w.label])
    kept = fastest if seconds[fastest.label] <= CONFIRM_MARGIN * seconds[planned.label] else planned
    run.confirmed = Confirmed(kept, seconds, planned.label)
    store_choice(key, tuple(labels), tuple(seconds[label] for label in labels), candidates.index(kept), FOLDER)
    return kept

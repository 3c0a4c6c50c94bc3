"""Running a concurrent group, and tuning its GO-kernels under contention (paper 004 §3.4).

A call checks that the group's GEMMs are independent (no output overlaps any operand), then runs them as the plan
says: one after another on the caller's stream, forked onto side streams through an event and joined back
through one event per side stream (so a capture of the call holds the whole fork/join), or as the fused launch
(one SIMT batch of f32 members, or one `grouped list` launch of bf16/f16 members on the tensor cores).

GO-kernels (`go_tune`), once per distinct member shape and GPU, on the first call outside a capture:
1. RC step: every candidate (gemmc.concurrent.plan.go_candidates) is timed alone on the whole GPU and on green
   contexts of 1/2 and 1/4 of the SMs (gemmc/runtime/green.py); the fastest under each share is a finalist.
2. CD step: for each degree 2, 4, 8, 16, that many copies of each finalist run at once on as many streams (each
   `reps` times back to back, paper 004 §5), captured in a CUDA graph with the fork and join; the finalist with
   the shortest makespan is the GO-kernel of that degree. Each copy reads operands of its own, as the group's
   GEMMs do: the call's (the group's copies of the GEMM), then device copies of them up to the degree, within an
   eighth of the free GPU memory (`own_operands`). Copies sharing one A and one B find them in L2, which the
   group's GEMMs do not: 16 copies of bf16 4096x128x1024 cycling 4 operand pairs took 37.9 us, where 16 GEMMs
   reading their own took 75.2 us (H100, bench/results/concurrent/2026-11-27_h100_bf16-own-operands.json).
   Its speedup is degree x T_alone / makespan, T_alone the fastest candidate alone on the whole GPU: the training
   script labels GEMMs with it.
Choices are cached in the process and on disk beside the tuning step's (keyed by the GPU, the member's code, the
gemmc version and the toolkit).
GEMMC_TUNE=0 turns the measuring off: a degree's GO-kernel is then the member's plan for 1/2 (degree 2) or 1/4
(degree 4 and up) of the SMs, as in the generated C++ launcher.

A `GroupRun` is the group on the runtime's side, built from plain data (the planned `Group`, its members'
`Executable`s, the target) and keeping in its own fields what the runtime loads and measures for the group;
`gemmc.api_group.CompiledGroup` holds one and passes its calls to it. The runtime knows nothing of the API.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from functools import cached_property
from typing import Any

from gemmc.codegen import render_kernel
from gemmc.concurrent.plan import go_candidates, go_degree
from gemmc.errors import GemmcError, InternalError
from gemmc.ir.group import DEGREES, SHARES, Group, GroupPlan, Mode
from gemmc.ir.hardware import Hardware
from gemmc.runtime import cache
from gemmc.runtime.args import ArrayInfo, check_matrix, describe
from gemmc.runtime.compile import toolkit
from gemmc.runtime.device import cupy, device_name
from gemmc.runtime.executable import Executable
from gemmc.runtime.green import partitions
from gemmc.runtime.grouped_list import launch_grouped_list
from gemmc.runtime.launch import enqueue, launch, pointer_tables, prepare, scalars
from gemmc.runtime.streams import is_torch, launch_stream
from gemmc.runtime.tma import enqueue_tma
from gemmc.runtime.tune import enabled, graph_seconds, median_seconds
from gemmc.version import __version__

OPERAND_SHARE = 8  # the tuning's extra operand copies take at most 1/8 of the free GPU memory
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
    operands: int = 0  # the A and B pairs a degree's copies read (own_operands; fewer than 16 where memory is short)
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
        if self.operands:
            lines.append(f"  the concurrent copies read {self.operands} operand pairs of their own")
        for d in DEGREES[1:]:
            if d in self.makespans:
                lines.append(f"  degree {d:2d}: kernel [{self.chosen[d]}], makespan "
                             f"{min(self.makespans[d]) * 1e6:.1f} us, speedup {self.speedup(d):.2f}x")
        return "\n".join(lines)


def _read_go(key: str, labels: list[str]) -> dict[str, Any] | None:
    """The cached GO-kernel choice of `key` (one file per entry, runtime/cache.py) if it is one for these
    candidates; None when there is none or it was measured for others, and, with a warning naming the file, when
    it is malformed (then the next call measures again and rewrites it)."""
    path, entry = cache.read_json("go", key, "GO-kernel entry")
    if entry is None:
        return None
    if entry.get("labels") != labels:
        return None  # measured for other candidates: measured again
    tables = ("alone", "makespans", "chosen")
    if not all(isinstance(entry.get(f), dict) and all(str(k).isdigit() for k in entry[f]) for f in tables) \
            or not isinstance(entry.get("finalists"), list) or "partitions" not in entry:
        cache.ignore(path, "its fields are not those of a GO-kernel entry")
        return None
    return entry


def _write_go(key: str, entry: dict[str, Any]) -> None:
    """Write the entry of `key` atomically; an unwritable cache only costs the next process the timing."""
    cache.write_json("go", key, {**entry, "gemmc": __version__})


def signature(kernel: Executable) -> str:
    """The member's code and launch data, its name aside: copies of one GEMM share one tuning."""
    ir = kernel.ir
    work = ir.work
    assert work is not None
    source = render_kernel(replace(ir, name="member"), kernel.target).source
    digest = hashlib.sha256(source.encode() + work.problems.data + repr((work.grid, work.block)).encode())
    return digest.hexdigest()[:32]


def pin(kernel: Executable) -> Executable:
    """The kernel launches as it is: the isolated tuning step (tune.tuned) does not swap it for an alternative."""
    kernel.tuned = kernel
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
    graph.launch(stream=stream)  # warm-up: the graph's first launch uploads it
    return graph_seconds(graph, stream, reps, WINDOWS)


_SIDE: dict[int, list[Any]] = {}


def side_streams(n: int) -> list[Any]:
    """n non-blocking streams of the current device, made once and reused by every group."""
    cp = cupy()
    pool = _SIDE.setdefault(cp.cuda.Device().id, [])
    while len(pool) < n:
        pool.append(cp.cuda.Stream(non_blocking=True))
    return pool[:n]


class GroupRun:
    """One planned group as the runtime runs it, in whichever mode a call asks for. Built from plain data: the
    planned `Group` (its plan gives the fused kernel, the share plans and the GO candidates), its members'
    `Executable`s in call order (a member called on its own shares its loads and its tuning with the group's
    calls), the `Hardware` it was planned for and the schedule's file name. Nothing is loaded until a call needs it;
    what is loaded and measured stays in its fields, shared by every mode of the group."""

    def __init__(self, ir: Group, members: Sequence[Executable], target: Hardware, filename: str):
        if ir.plan is None:
            raise InternalError("runtime.concurrent", f"group '{ir.name}' is not planned")
        if len(members) != len(ir.members):
            raise InternalError("runtime.concurrent", f"group '{ir.name}' has {len(ir.members)} members, "
                                f"not {len(members)}")
        self.ir = ir
        self.members = tuple(members)
        self.target = target
        self.filename = filename
        self.signatures: dict[int, str] = {}  # member index -> `signature`: copies of one GEMM share one
        self.go: dict[str, GoTuning] = {}  # signature -> what its GO-kernel tuning measured (`go_tune`)
        self.candidates: dict[str, tuple[list[str], list[Executable]]] = {}  # signature -> its GO candidates
        self.shares: dict[tuple[int, int], Executable] = {}  # (member, share) -> its plan for 1/share of the SMs
        self.go_degrees: dict[int, list[int]] = {}  # group degree -> each member's GO degree (plan.go_degree)
        self.events: dict[int, tuple[Any, list[Any]]] = {}  # degree -> the fork event and one join per side stream
        self.checked: tuple[int, ...] | None = None  # the pointers of the last call found independent
        # what an auto group's first call measured: a group_floor.Confirmed (which imports this module), or None
        self.confirmed: Any = None

    @property
    def name(self) -> str:
        return self.ir.name

    @property
    def plan(self) -> GroupPlan:
        assert self.ir.plan is not None
        return self.ir.plan

    def signature(self, index: int) -> str:
        """Member `index`'s `signature`, worked out once."""
        found = self.signatures.get(index)
        if found is None:
            found = self.signatures[index] = signature(self.members[index])
        return found

    @cached_property
    def canonical(self) -> tuple[Executable, ...]:
        """Per GEMM, the first member of the group with the same code and launch data (copies of one GEMM): one
        compile, one isolated tuning and one GO tuning per distinct GEMM; the arrays are each call's own."""
        first: dict[str, Executable] = {}
        return tuple(first.setdefault(self.signature(i), k) for i, k in enumerate(self.members))

    @cached_property
    def copies(self) -> tuple[tuple[int, ...], ...]:
        """Per member, the members with its code and launch data (itself included), in call order: the copies whose
        operands its GO-kernel tuning reads."""
        return tuple(tuple(j for j in range(len(self.members)) if self.signature(j) == self.signature(i))
                     for i in range(len(self.members)))

    @cached_property
    def fused(self) -> Executable | None:
        """The whole group as one launch (GroupPlan.fused), where the members allow it."""
        fused = self.plan.fused
        return Executable(fused, self.target, self.filename) if fused is not None else None

    def share(self, index: int, share: int) -> Executable:
        """Member `index`'s kernel planned for 1/share of the SMs (its own executable where that plan is the same)."""
        key = (index, share)
        found = self.shares.get(key)
        if found is None:
            ir = self.plan.share_kernel(self.members[index].name, share) if share > 1 else None
            found = self.shares[key] = Executable(ir, self.target, self.filename) if ir else self.members[index]
        return found

    @property
    def tuning(self) -> dict[str, GoTuning]:
        """Each member's GO-kernel measurements by member name, once tuned (copies of one GEMM share theirs)."""
        return {k.name: self.go[sig] for i, k in enumerate(self.members)
                if (sig := self.signatures.get(i)) is not None and sig in self.go}


def span(info: ArrayInfo) -> tuple[int, int]:
    """The bytes an array's elements occupy: [first, last + 1) (gemmc's arrays have non-negative strides)."""
    extent = sum((n - 1) * abs(s) for n, s in zip(info.shape, info.strides, strict=True)) + 1
    return info.ptr, info.ptr + extent * info.itemsize


def own_operands(infos: Sequence[ArrayInfo], copies: int, keep: list[Any], stream: Any) -> list[int]:
    """Pointers to `copies` operands like those of `infos` (ArrayInfo of the call's arrays of one operand): the
    call's own, then copies of them in turn, made on `stream` (after what the call's work there writes). The copies'
    memory (device allocations outside CuPy's pool: freed when released) is appended to `keep`, which the caller
    holds while the pointers are used."""
    cp = cupy()
    ptrs = [i.ptr for i in infos][:copies]
    for c in range(len(ptrs), copies):
        lo, hi = span(infos[c % len(infos)])
        memory = cp.cuda.Memory(hi - lo)
        cp.cuda.runtime.memcpyAsync(memory.ptr, lo, hi - lo, cp.cuda.runtime.memcpyDeviceToDevice, stream.ptr)
        keep.append(memory)
        ptrs.append(memory.ptr)
    return ptrs


def go_tune(run: GroupRun, index: int, As: Sequence[Any], Bs: Sequence[Any],
            stream: Any) -> tuple[GoTuning, list[Executable]]:
    """The GO-kernel tuning of member `index` (measured, or read from the caches) and its candidates as
    executables. As and Bs are operands of the member's shape and layouts, the call's own; each copy of a degree's
    makespan reads operands of its own (`own_operands`) and writes a scratch output."""
    member = run.members[index]
    sig = run.signature(index)
    if sig not in run.candidates:
        found = go_candidates(member.ir, run.plan.choices[index], member.target)
        run.candidates[sig] = ([label for label, _ in found],
                               [pin(Executable(ir, member.target, member.filename)) for _, ir in found])
    labels, compiled = run.candidates[sig]
    if sig in run.go:
        return run.go[sig], compiled
    cp = cupy()
    gpu = device_name()
    # the copies' own operands are part of what was measured (module docstring): entries of shared ones are stale
    key = f"{gpu}|{sig}|own operand copies|gemmc {__version__}|{toolkit()}"
    entry = _read_go(key, labels)
    if entry is not None:
        tuning = GoTuning(gpu, tuple(labels), {int(s): v for s, v in entry["alone"].items()},
                          tuple(entry["finalists"]), {int(d): v for d, v in entry["makespans"].items()},
                          {int(d): v for d, v in entry["chosen"].items()}, entry["partitions"],
                          int(entry.get("operands", 0)), cached=True)
        run.go[sig] = tuning
        return tuning, compiled
    if cp.cuda.runtime.streamIsCapturing(stream.ptr):
        raise GemmcError(f"group {run.name}: the first call tunes its GO-kernels and cannot run inside a graph "
                         "capture; call the group once before capturing it")
    with ThreadPoolExecutor(min(8, len(compiled))) as pool:
        list(pool.map(lambda k: k.function, compiled))  # compiles and loads each: NVRTC runs without the GIL
    alpha_, beta_ = scalars(member, None, None)
    a_infos = [describe(A, "As", index) for A in As]
    b_infos = [describe(B, "Bs", index) for B in Bs]
    p = member.ir.problems[0]
    scratch = [cp.empty(p.m * p.n * member.ir.c_dtype.nbytes, dtype=cp.uint8) for _ in range(max(DEGREES))]
    pair = sum(hi - lo for lo, hi in (span(a_infos[0]), span(b_infos[0])))
    fit = cp.cuda.runtime.memGetInfo()[0] // OPERAND_SHARE // pair
    copies = min(max(DEGREES), max(min(len(As), len(Bs)), fit))
    held: list[Any] = []
    a_ptrs, b_ptrs = own_operands(a_infos, copies, held, stream), own_operands(b_infos, copies, held, stream)
    stream.synchronize()  # the copies are made before any stream reads them

    def runner(k: Executable, copy: int) -> Callable[[Any], None]:
        a, b, c = a_ptrs[copy % len(a_ptrs)], b_ptrs[copy % len(b_ptrs)], int(scratch[copy].data.ptr)
        if k.ir.plan is not None and k.ir.plan.tensor_maps:  # read through TMA: tensor maps, no pointer tables
            return lambda s: enqueue_tma(k, a, b, c, alpha_, beta_, s)
        _, pa, pb, pc = pointer_tables(OrderedDict(), [a], [b], [c], None)
        cp.cuda.get_current_stream().synchronize()  # uploaded before a side or green stream launches with it
        return lambda s: enqueue(k, pa, pb, pc, alpha_, beta_, s)

    parts = partitions()
    how = parts.how
    alone: dict[int, list[float | None]] = {1: [median_seconds(runner(k, 0), stream) for k in compiled]}
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
    tuning = GoTuning(gpu, tuple(labels), alone, finalists, makespans, chosen, how, copies)
    record = asdict(tuning)
    record.pop("cached")
    _write_go(key, {**record, "labels": labels})
    run.go[sig] = tuning
    return tuning, compiled


OPERANDS = ("As", "Bs", "Cs")


def _check_independent(run: GroupRun, infos: list[list[ArrayInfo]]) -> None:
    """Every output is its own memory and no operand reads one: the GEMMs of a group do not depend on each other.
    `infos`: the As', Bs' and Cs' ArrayInfo."""
    spans = [(*span(info), name, i)
             for name, group in zip(OPERANDS, infos, strict=True) for i, info in enumerate(group)]
    outputs = [s for s in spans if s[2] == "Cs"]
    for lo, hi, _, i in outputs:
        for olo, ohi, oname, j in spans:
            if (oname, j) != ("Cs", i) and lo < ohi and olo < hi:
                raise GemmcError(f"Cs[{i}] ({run.members[i].name}) overlaps {oname}[{j}]: the GEMMs of group "
                                 f"{run.name} are independent, so no output may be another GEMM's operand or "
                                 "output", code="E400")


def _check_members(run: GroupRun, infos: list[list[ArrayInfo]]) -> None:
    """Every array (`infos`: the As', Bs' and Cs' ArrayInfo) is what its member's own launch takes (shape, dtype,
    layout, device), named as that launch names it: GemmcError otherwise."""
    device = cupy().cuda.runtime.getDevice()
    for i, member in enumerate(run.members):
        expected = member.expected
        for slot, name in enumerate(OPERANDS):
            check_matrix(infos[slot][i], name, i, expected.operands[0][slot], expected.dtype_of(slot), device,
                         f"{member.ir.name}")


def run_group(run: GroupRun, As: Any, Bs: Any, Cs: Any, *, mode: Mode, degree: int, kernels: str = "go",
              stream: Any = None) -> None:
    """Run every GEMM of the group as `mode` says (never AUTO: a plan's mode), `degree` at once on streams;
    `kernels` "go" (each member's GO-kernel for its degree) or "isolated" (each member's own kernel)."""
    cp = cupy()
    n = len(run.members)
    for name, arrays in (("As", As), ("Bs", Bs), ("Cs", Cs)):
        if not isinstance(arrays, (list, tuple)) or len(arrays) != n:
            got = f"{len(arrays)} arrays" if isinstance(arrays, (list, tuple)) else type(arrays).__name__
            raise GemmcError(f"{name}: expected a list of {n} arrays, one per GEMM of group {run.name} in order "
                             f"({', '.join(k.name for k in run.members)}); got {got}", code="E400")
    stream = launch_stream(stream, is_torch(As))
    # each array's metadata, read once a call: the key, the checks and a fused list launch's table are made of it
    infos = [[describe(x, name, i) for i, x in enumerate(arrays)] for name, arrays in zip(OPERANDS, (As, Bs, Cs),
                                                                                            strict=True)]
    key = tuple(info.ptr for group in infos for info in group)
    new_arrays = run.checked != key
    if new_arrays:  # new arrays: checked before any kernel (GO tuning's included) reads them
        _check_independent(run, infos)
        _check_members(run, infos)
        run.checked = key
    if mode is Mode.FUSED:
        fused = run.fused
        assert fused is not None
        if fused.ir.dynamic is None:  # f32: one SIMT batch of the members' fixed sizes, checked as a batch
            launch(fused, list(As), list(Bs), list(Cs), alpha=None, beta=None, stream=stream)
            return
        # bf16/f16: one `grouped list` launch, which takes arrays of any sizes: each is checked as its member's
        # (every call: the pointers alone do not tell a view of another shape), and the table is made of the
        # metadata read for that check
        if not new_arrays:
            _check_members(run, infos)
        launch_grouped_list(fused, list(As), list(Bs), list(Cs), offsets=None, alpha=None, beta=None, stream=stream,
                            validate=False, infos=infos)
        return
    members = run.canonical
    if mode is Mode.SEQUENTIAL or degree <= 1:
        for i, k in enumerate(members):
            launch(k, [As[i]], [Bs[i]], [Cs[i]], alpha=None, beta=None, stream=stream)
        return
    if degree not in run.go_degrees:  # each member's GO degree at this group degree (plan.go_degree), worked out once
        irs = [k.ir for k in run.members]
        run.go_degrees[degree] = [go_degree(irs, i, degree) for i in range(n)]
    launched = []
    for i, member in enumerate(members):
        go = run.go_degrees[degree][i] if kernels == "go" else 1
        if go == 1:
            launched.append(member)  # the isolated kernel (and its own tuning)
        elif not enabled():  # no measuring: the model's plan for the degree's share of the SMs
            launched.append(pin(run.share(run.members.index(member), min(4, go))))
        else:
            copies = run.copies[i]
            tuning, compiled = go_tune(run, i, [As[j] for j in copies], [Bs[j] for j in copies], stream)
            launched.append(compiled[tuning.chosen[go]])
    # every member's tables and pointer tables are uploaded on the caller's stream before the fork, so that the
    # side streams, which wait only for the fork, never read a pointer table still being copied
    enqueues = [prepare(k, [As[i]], [Bs[i]], [Cs[i]], alpha=None, beta=None, stream=stream)
                for i, k in enumerate(launched)]
    sides = side_streams(degree)
    if degree not in run.events:
        run.events[degree] = (cp.cuda.Event(disable_timing=True), [cp.cuda.Event(disable_timing=True)
                                                                   for _ in range(degree)])
    fork, joins = run.events[degree]
    fork.record(stream)
    for side in sides:
        side.wait_event(fork)
    try:
        for i, enqueue_on in enumerate(enqueues):
            enqueue_on(sides[i % degree])
    finally:  # join every side stream, so that the caller's stream (and a capture) is never left forked
        for side, join in zip(sides, joins, strict=True):
            join.record(side)
            stream.wait_event(join)

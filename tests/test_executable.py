"""The runtime's side of a kernel and of a concurrent group without a GPU: a stand-in CuPy (numpy tables, streams and
events that only record), kernel functions that record their launches, and tuning steps whose timers read a table
instead of the device. What is checked is the bookkeeping the GPU tests rely on: where the executable and the group's
run keep what they loaded and decided, what each call launches where, and what `CompiledKernel` and `CompiledGroup`
show of it."""

from __future__ import annotations

import types

import pytest

import gemmc
from tests.test_args import FakeArray

TSM2R = ("kernel k { dtype f32 layout A col, B col, C col alpha 1.5 beta -0.5 gemm 4099 x 7 x 20011 "
         "algorithm tsm2r }")
AUTO = "kernel k { tile auto batch { a 196 x 192 x 192  b 196 x 16 x 192  c 33 x 17 x 5 } }"


class Function:
    """A loaded kernel that records each launch as (its module's entry, the C pointer table), and in `streams` the
    stream it was launched on."""

    max_threads_per_block, num_regs = 1024, 64

    def __init__(self, entry, launches, streams):
        self.entry, self.launches, self.streams = entry, launches, streams

    def __call__(self, grid, block, args, **kwargs):
        self.launches.append((self.entry, args[5], args[3]))  # C's and A's pointer tables
        self.streams.append(kwargs.get("stream"))


class Stream:
    """A stream that records what is ordered on it: ("record", event) and ("wait", event)."""

    def __init__(self, name, log):
        self.name, self.log, self.ptr = name, log, 0

    def wait_event(self, event):
        self.log.append((self.name, "wait", event))

    def synchronize(self):
        """The host waits for the stream (GO-kernel tuning, after uploading a candidate's pointer table)."""

    def __repr__(self):
        return self.name


@pytest.fixture
def device(monkeypatch, tmp_path):
    """The stand-ins; `device.capturing` makes the stream report a graph capture, `device.seconds(i)` is the time
    the timer reports for the i-th candidate timed (the last is fastest unless a test says otherwise)."""
    import numpy as np

    from gemmc.ir.hardware import TARGETS
    from gemmc.runtime import concurrent, executable, group_floor, launch, streams, tune
    from gemmc.runtime.green import Partitions

    state = types.SimpleNamespace(launches=[], streams=[], loaded=[], timed=0, capturing=False, order=[],
                                  seconds=lambda i: 1e-3 / (1 + i), memcpys=[])
    scratch = iter(range(1 << 30, 1 << 31, 1 << 20))
    caller = Stream("caller", state.order)
    made = iter(range(1 << 10))

    def memory(n, dtype):
        return types.SimpleNamespace(data=types.SimpleNamespace(ptr=next(scratch)))

    class Event:
        def __init__(self, **kwargs):
            self.name = f"event{next(made)}"

        def record(self, stream):
            state.order.append((stream.name, "record", self))

        def __repr__(self):
            return self.name

    def upload(x, dtype=None):  # a host-to-device copy, ordered on the current (the caller's) stream
        state.order.append(("caller", "upload", None))
        return np.asarray(x, dtype=dtype)

    cp = types.SimpleNamespace(
        int32=np.int32, int64=np.int64, uint8=np.uint8, uint64=np.uint64, float32=np.float32, float64=np.float64,
        asarray=upload, empty=memory, zeros=memory,
        cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(getDevice=lambda: 0,
                                                                 streamIsCapturing=lambda ptr: state.capturing,
                                                                 memGetInfo=lambda: (80 << 30, 80 << 30),
                                                                 memcpyDeviceToDevice=3,
                                                                 memcpyAsync=lambda dst, src, n, kind, stream:
                                                                 state.memcpys.append((dst, src, n))),
                                   Memory=lambda n: types.SimpleNamespace(ptr=next(scratch)),
                                   get_current_stream=lambda: caller, Device=lambda: types.SimpleNamespace(id=0),
                                   Event=Event,
                                   Stream=lambda non_blocking: Stream(f"side{next(made)}", state.order)))

    def timer(run, stream):
        run(stream)
        state.timed += 1
        return state.seconds(state.timed - 1)

    for module in (launch, executable, tune, concurrent, streams, group_floor):
        monkeypatch.setattr(module, "cupy", lambda: cp)
    monkeypatch.setattr(executable, "hardware", lambda: TARGETS["sm_90"])
    def load(rendered, entry):
        state.loaded.append(entry)
        return Function(entry, state.launches, state.streams)

    monkeypatch.setattr(executable, "device_function", load)
    for module in (tune, concurrent, group_floor):
        monkeypatch.setattr(module, "toolkit", lambda: "stand-in NVRTC and driver")
    for module in (tune, concurrent, group_floor):
        monkeypatch.setattr(module, "device_name", lambda: "Stand-in GPU")
    for module in (tune, concurrent):
        monkeypatch.setattr(module, "median_seconds", timer)
    monkeypatch.setattr(group_floor, "replay_seconds", timer)  # an auto group's first call (its floor)
    # GO-kernel tuning: no SM partitions (the model's share plans stand in), and each makespan measured is shorter
    # than the one before, so that the last finalist of each degree is chosen
    state.makespans, state.copies = 0, []
    def makespan(runs, reps, stream):  # runs each copy once: the launches record what each copy reads
        state.makespans += 1
        state.copies.append(len(runs))
        for run in runs:
            run(stream)
        return 1e-3 / state.makespans

    monkeypatch.setattr(concurrent, "partitions", lambda: Partitions({}, {}, "no green contexts (stand-in)"))
    monkeypatch.setattr(concurrent, "makespan_seconds", makespan)
    monkeypatch.setattr(concurrent, "_SIDE", {})
    monkeypatch.setenv("GEMMC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("GEMMC_TUNE", "1")
    return state


def operands(kernel):
    """Stand-in arrays in the kernel's layouts, one per problem."""
    ir = kernel.ir
    order = {"row": "C", "col": "F"}
    return tuple([FakeArray(shape, order[layout.value]) for shape in shapes]
                 for layout, shapes in ((ir.layout_a, [(m, k) for m, n, k in kernel.shapes]),
                                        (ir.layout_b, [(k, n) for m, n, k in kernel.shapes]),
                                        (ir.layout_c, [(m, n) for m, n, k in kernel.shapes])))


def test_the_first_call_times_every_candidate_keeps_the_fastest_and_leaves_c_alone(device):
    kern = gemmc.compile_string(TSM2R)["k"]
    As, Bs, Cs = operands(kern)
    kern(As, Bs, Cs)
    tuning = kern.tuning
    assert tuning is not None and not tuning.cached and len(tuning.seconds) == device.timed == 7
    assert tuning.chosen == 6 and kern.executable.tuned is not kern.executable
    c = Cs[0].__cuda_array_interface__["data"][0]
    *timing, last = device.launches
    assert all(int(table[0]) != c for _, table, _ in timing)  # the timing wrote scratch memory, never the call's C
    assert [int(p) for p in last[1]] == [c]  # then the call ran the kept candidate on its own C
    kern(As, Bs, Cs)
    assert device.timed == 7 and kern.tuning is tuning  # decided once
    again = gemmc.compile_string(TSM2R)["k"]  # another process would read the same cache file
    again(*operands(again))
    assert again.tuning.cached and again.tuning.chosen == 6 and device.timed == 7


def test_a_batch_of_other_sizes_is_tuned_on_the_plan_that_plan_for_returns(device):
    kern = gemmc.compile_string(AUTO)["k"]
    shapes = [(97, 13, 251), (1, 1, 1), (50, 300, 33)]
    other = kern.plan_for(shapes)
    assert other.tuning is None and other.executable is kern.executable.plan_for(shapes)
    kern(*operands(other))  # the schedule's kernel called on the other batch: re-planned to `other`'s plan
    assert other.tuning is not None and kern.tuning is None
    assert kern.plan_for(list(reversed(shapes))) is other


def test_no_tuning_inside_a_graph_capture_or_when_turned_off(device, monkeypatch):
    kern = gemmc.compile_string(TSM2R)["k"]
    device.capturing = True
    kern(*operands(kern))
    assert kern.tuning is None and device.timed == 0 and kern.executable.tuned is None  # a later plain call tunes
    device.capturing = False
    monkeypatch.setenv("GEMMC_TUNE", "0")
    kern(*operands(kern))
    assert kern.tuning is None and device.timed == 0
    monkeypatch.setenv("GEMMC_TUNE", "1")
    kern(*operands(kern))
    assert kern.tuning is not None and device.timed == 7


def test_a_kernel_is_loaded_once_from_the_source_it_rendered(device, monkeypatch):
    from gemmc.ir.hardware import TARGETS
    from gemmc.model.tlp import occupancy

    monkeypatch.setenv("GEMMC_TUNE", "0")
    kern = gemmc.compile_string("kernel k { batch { a 8 x 4 x 6  b 3 x 5 x 2 } }")["k"]
    rendered = kern.rendered
    exe = kern.executable
    assert exe.rendered is rendered  # rendered once, not again for the runtime
    kern(*operands(kern))
    kern(*operands(kern))
    assert kern.executable is exe and device.loaded == [rendered.entry] and len(device.launches) == 2
    work = kern.ir.work
    assert kern.occupancy() == occupancy(TARGETS["sm_90"], work.block, Function.num_regs, work.smem_bytes)


def test_a_compiled_kernel_whose_registers_leave_too_few_threads_a_block_is_refused(monkeypatch):
    from gemmc.ir.hardware import TARGETS
    from gemmc.runtime import executable

    kern = gemmc.compile_string("kernel k { gemm 8 x 4 x 6 }")["k"]
    assert kern.ir.work.block == 256
    monkeypatch.setattr(executable, "hardware", lambda: TARGETS["sm_90"])
    monkeypatch.setattr(executable, "device_function",
                        lambda rendered, entry: types.SimpleNamespace(num_regs=255, max_threads_per_block=128))
    with pytest.raises(gemmc.GemmcError) as info:
        kern.executable.function  # noqa: B018 - loading is what raises
    assert str(info.value) == ("error[E302]: kernel 'k': the compiled kernel uses 255 registers per thread, so at most "
                               "128 threads fit in a block; the plan needs 256. Use fewer threads or a smaller tile.")


def test_a_graphs_time_is_the_median_replay_per_launch_it_holds(monkeypatch):
    from gemmc.runtime import tune

    elapsed = iter([9.0, 3.0, 5.0, 1.0, 7.0])  # ms, one per replay
    launches = []

    class Event:
        def record(self, stream):
            pass

        def synchronize(self):
            pass

    cuda = types.SimpleNamespace(Event=Event, get_elapsed_time=lambda start, end: next(elapsed))
    monkeypatch.setattr(tune, "cupy", lambda: types.SimpleNamespace(cuda=cuda))
    graph = types.SimpleNamespace(launch=lambda stream: launches.append(stream))
    assert tune.graph_seconds(graph, "caller", 4, 5) == 5.0 * 1e-3 / 4
    assert launches == ["caller"] * 5


# --- a concurrent group's run -----------------------------------------------------------------------------------

GROUP = "group t { concurrency streams 4 gemm a 2048 x 512 x 512 copies 4 gemm b 8 x 8 x 8 }"


def group_operands(group):
    """Stand-in arrays for each GEMM of the group in its member's layouts, 4 GiB apart: no two overlap."""
    order = {"row": "C", "col": "F"}
    out = []
    for operand, dims in (("a", lambda p: (p.m, p.k)), ("b", lambda p: (p.k, p.n)), ("c", lambda p: (p.m, p.n))):
        arrays = []
        for k in group.members:
            x = FakeArray(dims(k.ir.problems[0]), order[getattr(k.ir, f"layout_{operand}").value])
            x.__cuda_array_interface__["data"] = ((1 + len(out) * len(group.members) + len(arrays)) << 32, False)
            arrays.append(x)
        out.append(arrays)
    return out


def pointer(x):
    return x.__cuda_array_interface__["data"][0]


def test_a_group_runs_on_the_executables_of_its_members_in_every_mode(device, monkeypatch):
    monkeypatch.setenv("GEMMC_TUNE", "0")  # the model's share plans as GO-kernels
    group = gemmc.compile_string(GROUP).groups[0]
    run = group.group_run
    assert run.members == tuple(k.executable for k in group.members)  # a member's loads are its kernel's
    share = run.share(0, 4)
    assert share.name == "t_a_0_share4" and run.canonical == (run.members[0],) * 4 + (run.members[4],)
    As, Bs, Cs = group_operands(group)
    group(As, Bs, Cs)
    # the four copies of a launch one executable, their GO-kernel for 4 at once, on side streams 0-3; b (no copies)
    # its own kernel on side stream 0; each writes its own C
    entries = [entry for entry, _, _ in device.launches]
    assert entries == [share.rendered.entry] * 4 + [run.members[4].rendered.entry]
    assert [[int(p) for p in c] for _, c, _ in device.launches] == [[pointer(c)] for c in Cs]
    sides = device.streams[:4]
    assert len(set(map(id, sides))) == 4 and device.streams[4] is sides[0]
    assert share.tuned is share  # pinned: the isolated tuning step does not swap the GO-kernel
    fork, joins = run.events[4]
    # every table and pointer table is uploaded on the caller's stream before the fork: a side stream waits only
    # for the fork, so an upload after it could still be in flight when a side stream's kernel reads it
    at = device.order.index(("caller", "record", fork))
    assert at > 0 and all(step == ("caller", "upload", None) for step in device.order[:at])
    order = device.order[at:]
    assert order[:5] == [("caller", "record", fork)] + [(s.name, "wait", fork) for s in sides]
    assert order[5:] == [step for side, join in zip(sides, joins, strict=True)
                         for step in ((side.name, "record", join), ("caller", "wait", join))]

    device.launches.clear(), device.streams.clear()
    sequential = group.with_mode("sequential")
    assert sequential.group_run is run  # one run for every mode: what was loaded and measured is shared
    sequential(As, Bs, Cs)
    assert [e for e, _, _ in device.launches] == [run.members[0].rendered.entry] * 4 + [run.members[4].rendered.entry]
    assert all(s.name == "caller" for s in device.streams)

    device.launches.clear()
    fused = group.with_mode("fused")
    fused(As, Bs, Cs)
    assert fused.fused is not None and fused.fused.executable is run.fused
    [(entry, c, _)] = device.launches
    assert entry == run.fused.rendered.entry and [int(p) for p in c] == [pointer(x) for x in Cs]
    assert group.tuning == {} and "GO-kernels on" not in group.plan  # nothing measured


def test_go_kernels_are_tuned_once_per_distinct_gemm_and_kept_on_the_run(device):
    group = gemmc.compile_string(GROUP).groups[0]
    run = group.group_run
    As, Bs, Cs = group_operands(group)
    device.capturing = True
    with pytest.raises(gemmc.GemmcError, match="cannot run inside a graph capture"):
        group(As, Bs, Cs)
    device.capturing = False
    group(As, Bs, Cs)
    tuning = group.tuning["t_a_0"]
    assert not tuning.cached and {group.tuning[f"t_a_{i}"] is tuning for i in range(4)} == {True}
    assert "t_b" not in group.tuning  # no copies: its own kernel, and its own (isolated) tuning
    labels, compiled = run.candidates[run.signature(0)]
    assert list(tuning.labels) == labels and all(k.tuned is k for k in compiled)  # pinned: runs as measured
    go = compiled[tuning.chosen[4]]
    assert tuning.chosen[4] == tuning.finalists[-1]  # the stand-in's makespans favour the last finalist
    calls = [(e, int(c[0])) for e, c, _ in device.launches if int(c[0]) in map(pointer, Cs)]  # timing wrote scratch
    entries = [go.rendered.entry] * 4 + [run.members[4].rendered.entry]
    assert calls == list(zip(entries, map(pointer, Cs), strict=True))
    # the makespans' copies each read an A of their own: the group's 4 copies of t_a, then 12 device copies of them
    copies = device.copies[-1]
    candidates = {k.rendered.entry for k in compiled}
    timed_a = [int(a[0]) for e, c, a in device.launches if e in candidates and int(c[0]) not in map(pointer, Cs)]
    made = {dst: src for dst, src, _ in device.memcpys}
    assert copies == 16 and timed_a[-copies:][:4] == [pointer(As[i]) for i in range(4)]
    assert [made.get(a) for a in timed_a[-copies:][4:]] == [pointer(As[i % 4]) for i in range(4, copies)]
    assert tuning.operands == 16
    timed, measured = device.timed, device.makespans
    group(As, Bs, Cs)
    group.with_mode("streams", 2)(As, Bs, Cs)
    assert (device.timed, device.makespans) == (timed, measured)  # measured once, for every degree and mode
    assert "GO-kernels on Stand-in GPU" in group.plan
    again = gemmc.compile_string(GROUP).groups[0]  # another process would read the same cache file
    again(*group_operands(again))
    assert again.tuning["t_a_0"].cached and again.tuning["t_a_0"].chosen == tuning.chosen
    assert (device.timed, device.makespans) == (timed, measured)


def test_a_malformed_cached_choice_is_measured_again_not_a_crash(device):
    # A chosen index past the candidates was an IndexError, a missing one a KeyError, in every later process.
    import json

    from gemmc.runtime import cache, tune

    kern = gemmc.compile_string(TSM2R)["k"]
    kern(*operands(kern))
    key = tune.cache_key(kern.executable, "Stand-in GPU", "stand-in NVRTC and driver")
    path = cache.entry_path("tuning", key, ".json")
    entry = json.loads(path.read_text())
    path.write_text(json.dumps({**entry, "chosen": 99}))
    again = gemmc.compile_string(TSM2R)["k"]
    with pytest.warns(cache.CacheWarning, match="chosen index 99"):
        again(*operands(again))
    assert not again.tuning.cached and device.timed == 14 and json.loads(path.read_text())["chosen"] == 6


def test_a_kernel_planned_for_another_gpu_that_does_not_compile_for_this_one_says_which_target_to_write(
        monkeypatch):
    """device_function: a kernel planned for sm_90 (the default target) that NVRTC cannot compile for the GPU at hand
    (an sm_80: no clusters) is refused with the target to write, not with the compiler's error alone."""
    from types import SimpleNamespace

    from gemmc.runtime import compile as compile_

    class CompileException(Exception):  # CuPy's compiler error, by its name
        pass

    def refuse(source: str, arch: str) -> None:
        raise CompileException("error: identifier \"__cluster_dims__\" is undefined\nmore lines")

    rendered = gemmc.compile_string("kernel k { gemm 64 x 64 x 64 }")["k"].rendered
    assert rendered.device_arch == "sm_90"
    monkeypatch.setattr(compile_, "hardware", lambda: SimpleNamespace(arch="sm_80"))
    monkeypatch.setattr(compile_, "_module", refuse)
    with pytest.raises(gemmc.GemmcError, match=r"E303.*planned for sm_90 and does not compile for this GPU \(sm_80\): "
                       r"error: identifier \"__cluster_dims__\" is undefined; compile the schedule for this GPU "
                       r"\(`target cuda sm_80`\)") as info:
        compile_.device_function(rendered, rendered.entry)
    assert info.value.diagnostics[0].code == "E303"
    monkeypatch.setattr(compile_, "hardware", lambda: SimpleNamespace(arch="sm_90"))
    with pytest.raises(CompileException):  # planned for this GPU: the compiler's own error, a gemmc bug
        compile_.device_function(rendered, rendered.entry)

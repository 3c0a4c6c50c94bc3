"""The runtime's side of a kernel without a GPU: a stand-in CuPy (numpy tables), kernel functions that record their
launches, and a tuning step whose timer reads a table instead of the device. What is checked is the bookkeeping the
GPU tests rely on: where the executable keeps what it loaded and decided, and what `CompiledKernel` shows of it."""

from __future__ import annotations

import types

import pytest

import gemmc
from tests.test_args import FakeArray

TSM2R = ("kernel k { dtype f32 layout A col, B col, C col alpha 1.5 beta -0.5 gemm 4099 x 7 x 20011 "
         "algorithm tsm2r }")
AUTO = "kernel k { tile auto batch { a 196 x 192 x 192  b 196 x 16 x 192  c 33 x 17 x 5 } }"


class Function:
    """A loaded kernel that records each launch as (its module's entry, the C pointer table)."""

    max_threads_per_block, num_regs = 1024, 64

    def __init__(self, entry, launches):
        self.entry, self.launches = entry, launches

    def __call__(self, grid, block, args, **kwargs):
        self.launches.append((self.entry, args[5]))


@pytest.fixture
def device(monkeypatch, tmp_path):
    """The stand-ins; `device.capturing` makes the stream report a graph capture, `device.seconds(i)` is the time
    the timer reports for the i-th candidate timed (the last is fastest unless a test says otherwise)."""
    import numpy as np

    from gemmc.ir.hardware import TARGETS
    from gemmc.runtime import executable, launch, tune

    state = types.SimpleNamespace(launches=[], loaded=[], timed=0, capturing=False, seconds=lambda i: 1e-3 / (1 + i))
    scratch = iter(range(1 << 30, 1 << 31, 1 << 20))
    cp = types.SimpleNamespace(
        int32=np.int32, int64=np.int64, uint8=np.uint8, uint64=np.uint64, float32=np.float32, float64=np.float64,
        asarray=np.asarray, empty=np.empty,
        zeros=lambda n, dtype: types.SimpleNamespace(data=types.SimpleNamespace(ptr=next(scratch))),
        cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(getDevice=lambda: 0,
                                                                 streamIsCapturing=lambda ptr: state.capturing),
                                   get_current_stream=lambda: types.SimpleNamespace(ptr=0)))

    def timer(run, stream):
        run(stream)
        state.timed += 1
        return state.seconds(state.timed - 1)

    for module in (launch, executable, tune):
        monkeypatch.setattr(module, "cupy", lambda: cp)
    monkeypatch.setattr(executable, "hardware", lambda device_id=None: TARGETS["sm_90"])
    def load(rendered, entry):
        state.loaded.append(entry)
        return Function(entry, state.launches)

    monkeypatch.setattr(executable, "device_function", load)
    monkeypatch.setattr(tune, "device_name", lambda: "Stand-in GPU")
    monkeypatch.setattr(tune, "toolkit", lambda: "stand-in NVRTC and driver")
    monkeypatch.setattr(tune, "_median_seconds", timer)
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
    assert all(int(table[0]) != c for _, table in timing)  # the timing wrote scratch memory, never the call's C
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

"""`concurrency auto`'s floor without a GPU (gemmc.runtime.group_floor): which ways the first call times, which it
keeps, and that a later process reads the choice from the cache, with the timer and CuPy's capture query stood in."""

from __future__ import annotations

import shutil
from types import SimpleNamespace

import pytest

import gemmc
from gemmc.ir.group import Mode
from gemmc.runtime import group_floor
from gemmc.runtime.group_floor import CONFIRM_MARGIN, Way, confirm, ways


def group(text: str):
    return gemmc.compile_string(text).groups[0]


COPIES = "group g { concurrency auto dtype bf16 gemm a 2048 x 1024 x 1024 copies 4 }"  # 128 tiles each: not fused
PAIR = ("group g { concurrency auto dtype bf16 gemm dx 4096 x 1024 x 1024 { layout B col } "
        "gemm dw 1024 x 1024 x 4096 { layout A col } }")


def test_ways_start_with_the_plan_and_add_sequential_fused_and_own_kernels():
    g = group(COPIES)
    assert (g.mode, g.degree) == (Mode.STREAMS, 4) and g.group_plan.fused is not None
    assert ways(g.group_run) == [Way(Mode.STREAMS, 4), Way(Mode.SEQUENTIAL, 1), Way(Mode.FUSED, 1),
                                 Way(Mode.STREAMS, 4, "isolated")]
    pair = group(PAIR)
    assert pair.mode is Mode.SEQUENTIAL  # two GEMMs of about one wave each (the fit rule)
    assert ways(pair.group_run) == [Way(Mode.SEQUENTIAL, 1), Way(Mode.STREAMS, 2, "isolated")]
    forced = group(PAIR.replace("concurrency auto", "concurrency streams 2"))
    # copy-less members run their own kernels on streams: the plan's way already; such a group is not auto anyway
    assert ways(forced.group_run) == [Way(Mode.STREAMS, 2), Way(Mode.SEQUENTIAL, 1)]
    assert ways(group("group g { dtype bf16 gemm a 512 x 1024 x 1024 }").group_run) == [Way(Mode.SEQUENTIAL, 1)]
    # three GEMMs: their own kernels two at once (a tuned degree) and on a stream each
    three = group("group g { concurrency auto dtype bf16 gemm q 8192 x 1024 x 1024 gemm k 8192 x 1024 x 1024 "
                  "{ layout B col } gemm v 8192 x 1024 x 1024 { alpha 2.0 } }")
    assert ways(three.group_run) == [Way(Mode.SEQUENTIAL, 1), Way(Mode.STREAMS, 2, "isolated"),
                                     Way(Mode.STREAMS, 3, "isolated")]


@pytest.fixture
def timed(monkeypatch, tmp_path):
    """confirm() with a timer that returns the time given per way (by label), a stand-in CuPy and GPU, and a cache
    folder of its own."""
    times: dict[str, float] = {}
    # forget(): what an earlier first call cached, so that a new group is measured again
    state = SimpleNamespace(capturing=False, times=times, timed=[],
                            forget=lambda: shutil.rmtree(tmp_path / group_floor.FOLDER, ignore_errors=True))
    stream = SimpleNamespace(ptr=1)
    cp = SimpleNamespace(cuda=SimpleNamespace(get_current_stream=lambda: stream,
                                              runtime=SimpleNamespace(streamIsCapturing=lambda p: state.capturing)))
    monkeypatch.setattr(group_floor, "cupy", lambda: cp)
    monkeypatch.setattr(group_floor, "launch_stream", lambda given, torch_args: stream)
    monkeypatch.setattr(group_floor, "enabled", lambda: True)
    monkeypatch.setattr(group_floor, "device_name", lambda: "Stand-in GPU")
    monkeypatch.setattr(group_floor, "toolkit", lambda: "stand-in NVRTC and driver")
    monkeypatch.setenv("GEMMC_CACHE_DIR", str(tmp_path))

    def timer(call, s):
        label = call.__defaults__[0].label  # the way the call runs
        state.timed.append(label)
        return times[label]

    monkeypatch.setattr(group_floor, "replay_seconds", timer)
    return state


def test_the_plan_stays_unless_another_way_is_faster_by_the_margin(timed):
    g = group(COPIES)
    timed.times.update({"GO-kernels on 4 streams": 10e-6, "sequential": 18e-6, "fused": 12e-6,
                        "own kernels on 4 streams": 10e-6 * CONFIRM_MARGIN * 1.005})
    assert confirm(g.group_run, [], [], [], None) == Way(Mode.STREAMS, 4)
    assert timed.timed == ["GO-kernels on 4 streams", "sequential", "fused", "own kernels on 4 streams"]
    assert "runs GO-kernels on 4 streams (the plan's)" in str(g.group_run.confirmed)
    timed.timed.clear()
    assert confirm(g.group_run, [], [], [], None) == Way(Mode.STREAMS, 4) and timed.timed == []  # measured once
    timed.forget()
    g = group(COPIES)
    timed.times["sequential"] = 9.7e-6
    assert confirm(g.group_run, [], [], [], None) == Way(Mode.SEQUENTIAL, 1)
    assert "auto: measured on the first call" in g.plan and "runs sequential" in g.plan
    timed.forget()
    g = group(COPIES)
    timed.times["fused"] = 9.0e-6
    assert confirm(g.group_run, [], [], [], None) == Way(Mode.FUSED, 1) and "runs fused" in g.plan


def test_pairs_take_the_streams_where_they_measure_faster(timed):
    g = group(PAIR)
    timed.times.update({"sequential": 55.9e-6, "own kernels on 2 streams": 54.6e-6})
    assert confirm(g.group_run, [], [], [], None) == Way(Mode.STREAMS, 2, "isolated")
    timed.forget()
    g = group(PAIR)
    timed.times.update({"sequential": 32.4e-6, "own kernels on 2 streams": 34.4e-6})
    assert confirm(g.group_run, [], [], [], None) == Way(Mode.SEQUENTIAL, 1)


def test_a_later_process_runs_the_cached_way_even_in_a_capture(timed, monkeypatch):
    timed.times.update({"GO-kernels on 4 streams": 10e-6, "sequential": 9.0e-6, "fused": 9.5e-6,
                        "own kernels on 4 streams": 11e-6})
    assert confirm(group(COPIES).group_run, [], [], [], None) == Way(Mode.SEQUENTIAL, 1)
    timed.timed.clear()
    timed.capturing = True  # a fresh GroupRun (a later process) inside a capture: nothing to time, the cache answers
    g = group(COPIES)
    assert confirm(g.group_run, [], [], [], None) == Way(Mode.SEQUENTIAL, 1) and timed.timed == []
    assert "measured on a first call (cached): GO-kernels on 4 streams 10.0 us" in str(g.group_run.confirmed)
    monkeypatch.setattr(group_floor, "device_name", lambda: "Another GPU")  # measured per GPU
    assert confirm(group(COPIES).group_run, [], [], [], None) is None


def test_nothing_is_timed_in_a_capture_with_measuring_off_or_when_c_is_read(timed, monkeypatch):
    g = group(COPIES)
    timed.capturing = True
    assert confirm(g.group_run, [], [], [], None) is None and g.group_run.confirmed is None
    timed.capturing = False
    assert confirm(group(COPIES.replace("dtype bf16", "dtype bf16 beta 1.0")).group_run, [], [], [], None) is None
    monkeypatch.setattr(group_floor, "enabled", lambda: False)
    assert confirm(g.group_run, [], [], [], None) is None
    assert timed.timed == []


def test_groups_of_another_mode_do_not_confirm():
    g = group(COPIES)
    assert g.confirms and not g.with_mode("sequential").confirms
    assert not group(COPIES.replace("concurrency auto", "concurrency streams 4")).confirms


def test_a_fused_plan_is_timed_against_sequential_and_own_kernels():
    g = group("group g { concurrency auto dtype bf16 gemm a 512 x 1024 x 1024 copies 4 }")  # 32 tiles each: fused
    assert g.mode is Mode.FUSED
    assert ways(g.group_run) == [Way(Mode.FUSED, 1), Way(Mode.SEQUENTIAL, 1), Way(Mode.STREAMS, 4, "isolated")]

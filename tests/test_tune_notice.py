"""The first call's tuning step says on standard error that it will take a while (gemmc.runtime.tune.load_all),
once, and only when it will: no GPU needed, the candidates are stand-ins whose compile takes a set time."""

from __future__ import annotations

import threading
import time

from gemmc.runtime import tune


class Candidate:
    def __init__(self, seconds: float):
        self.seconds = seconds
        self.loaded = threading.Event()

    @property
    def function(self) -> object:
        time.sleep(self.seconds)
        self.loaded.set()
        return self


def test_slow_compiles_are_announced_once_before_they_finish() -> None:
    kernels = [Candidate(1.5), Candidate(0.0)]
    seen: list[bool] = []
    tune.load_all(kernels, lambda: seen.append(kernels[0].loaded.is_set()))
    assert seen == [False]  # announced while the slow compile was still running
    assert all(k.loaded.is_set() for k in kernels)


def test_quick_compiles_of_few_candidates_say_nothing() -> None:
    kernels = [Candidate(0.0) for _ in range(3)]
    seen: list[bool] = []
    tune.load_all(kernels, lambda: seen.append(True))
    assert seen == [] and all(k.loaded.is_set() for k in kernels)


def test_many_candidates_are_announced_even_when_their_compiles_are_cached() -> None:
    count = int(tune.NOTICE_SECONDS / tune.TIMING_SECONDS) + 1
    seen: list[bool] = []
    tune.load_all([Candidate(0.0) for _ in range(count)], lambda: seen.append(True))
    assert seen == [True]


def test_the_notice_names_the_kernel_the_count_the_gpu_and_how_to_skip_it() -> None:
    line = tune.notice("inception3", 15, "NVIDIA H100 80GB HBM3")
    assert "\n" not in line
    assert all(part in line for part in ("'inception3'", "15 candidate", "NVIDIA H100 80GB HBM3", "GEMMC_TUNE=0"))

"""The dynamic kernel's TLP sums on the device: every level's TLP summed over the groups (each thread its run of groups,
each 32 lanes by shuffles, one shared atomic per 32 lanes) and the cap picked from them, read back through a probe in
the kernel's source (helpers.tlp_probe) and compared exactly with the NumPy scheduler's. A wrong sum changes only which
tile variants run, never C, so no test of the results sees it. Many groups (up to the most a schedule takes) give the
lanes runs of different lengths; empty groups, one group with everything and garbage ends vary what they hold."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import gemmc
from gemmc.families.dynamic import scheduler
from tests.gpu.helpers import TLP_LIST, TLP_MOE, TLP_SEEN, tlp_probe
from tests.test_dynamic import routings

pytestmark = pytest.mark.gpu


class Probe:
    """A schedule's kernel with the probe in its source, called through the runtime as any kernel is (its grid, its
    threshold, its arguments), and the sums and cap its block 0 derived, read back after each call."""

    def __init__(self, text: str, broken: tuple[str, str] | None = None):
        import cupy as cp

        from gemmc.api_kernel import CompiledKernel
        from gemmc.runtime.dynamic import state
        from gemmc.runtime.executable import Executable

        kern = next(iter(gemmc.compile_string(text)))
        self.plan = kern.ir.plan
        levels = len(self.plan.levels)
        assert kern.ir.family == "dynamic" and levels > 1  # a ladder of one level sums nothing
        source = tlp_probe(kern.rendered.source, levels)
        if broken is not None:  # (text, replacement): a fault put in on purpose
            assert source.count(broken[0]) == 1
            source = source.replace(*broken)
        rendered = dataclasses.replace(kern.rendered, source=source)
        exe = Executable(kern.ir, kern.target, kern.filename, rendered)
        self.kernel = CompiledKernel.of(exe)
        st = state(exe)  # loaded as a first call loads it
        self.grid, self.threshold = st.grid, st.threshold
        ptr = st.fn.kernel.module.get_global_var(TLP_SEEN)  # the module the runtime launches from
        memory = cp.cuda.UnownedMemory(ptr, 8 * (levels + 1), st.fn)
        self.seen = cp.ndarray((levels + 1,), cp.uint64, cp.cuda.MemoryPointer(memory, 0))

    def sums(self, *args, **kwargs) -> tuple[list[int], int]:
        """Call the kernel; return each level's TLP sum and the cap, as block 0 derived them."""
        import cupy as cp

        self.seen.fill(np.uint64(2**64 - 1))  # a launch that stores nothing fails the comparison
        cp.cuda.Device().synchronize()
        self.kernel(*args, **kwargs)
        cp.cuda.Device().synchronize()
        got = [int(x) for x in self.seen.get()]
        return got[:-1], got[-1]

    def expected(self, m: np.ndarray, n: np.ndarray) -> tuple[list[int], int]:
        """The same from the NumPy scheduler, at the runtime's threshold."""
        sched = scheduler.schedule(self.plan, m, n, self.threshold)
        return [int(x) for x in sched.tlp], sched.cap


@pytest.fixture(scope="module")
def moe() -> Probe:
    return Probe(TLP_MOE)


@pytest.fixture(scope="module")
def varlen() -> Probe:
    return Probe(TLP_LIST)


ROUTINGS = ("uniform", "half empty", "one group", "small sizes", "zipf")  # tests.test_dynamic.routings, in order


@pytest.mark.parametrize("groups", [64, 257, 4096])
def test_grouped_m_sums_and_cap_are_the_schedulers(moe, groups):
    """256 threads a block: a group each for the first 64 threads (six warps sum nothing), two each for the first 128
    and one for the next, sixteen each for all."""
    import torch as t

    n, k = 97, 8
    levels_apart = 0
    # few rows, then rows for about 1.2 and 3.5 waves of the top level's 128-row tiles
    for rows in (3 * groups, 150 * moe.grid, 450 * moe.grid):
        A, C = t.zeros(rows, k, device="cuda"), t.zeros(rows, n, device="cuda")
        B = t.zeros(groups, k, n, device="cuda")
        # zipf's ends may pass the rows: the kernel clamps them, as clamped_starts does
        for name, ends in zip(ROUTINGS, routings(seed=groups, groups=groups, rows=rows), strict=True):
            got = moe.sums(A, B, C, offsets=t.tensor(ends, dtype=t.int32, device="cuda"))
            m = np.diff(scheduler.clamped_starts(ends, rows))
            assert got == moe.expected(m, np.full(groups, n)), f"{rows} rows, {name}"
            levels_apart += len(set(got[0])) > 1
    assert levels_apart  # some call whose levels' sums differ: a sum added to the wrong level shows


@pytest.mark.parametrize("problems", [64, 300, 512])
def test_list_sums_and_cap_are_the_schedulers(varlen, problems):
    import torch as t

    rng = np.random.default_rng(problems)
    levels_apart = 0
    for top in (40, 120, 400):
        m, n = rng.integers(0, top, (2, problems))
        m[rng.choice(problems, problems // 4, replace=False)] = 0
        m[rng.integers(problems)] = 50 * top  # one problem far larger than the rest
        k = rng.integers(0, 9, problems)
        As = [t.zeros(int(a), int(c), device="cuda") for a, c in zip(m, k, strict=True)]
        Bs = [t.zeros(int(c), int(b), device="cuda") for b, c in zip(n, k, strict=True)]
        Cs = [t.zeros(int(a), int(b), device="cuda") for a, b in zip(m, n, strict=True)]
        got = varlen.sums(As, Bs, Cs)
        assert got == varlen.expected(m, n), f"sizes up to {top}"
        levels_apart += len(set(got[0])) > 1
    assert levels_apart


def test_the_probe_sees_a_reduction_that_drops_half_the_lanes():
    """The same kernel with its shuffles starting at 8 lanes apart, not 16: each 32 lanes' atomic adds only lanes 0-15,
    and the probe reports sums the scheduler's are not."""
    import torch as t

    broken = Probe(TLP_MOE, ("for (int off = 16; off > 0;", "for (int off = 8; off > 0;"))
    groups, rows, n, k = 64, 6400, 97, 8
    ends = routings(seed=groups, groups=groups, rows=rows)[0]  # uniform: every lane of the first two warps holds rows
    got = broken.sums(t.zeros(rows, k, device="cuda"), t.zeros(groups, k, n, device="cuda"),
                      t.zeros(rows, n, device="cuda"), offsets=t.tensor(ends, dtype=t.int32, device="cuda"))
    want = broken.expected(np.diff(scheduler.clamped_starts(ends, rows)), np.full(groups, n))
    assert all(0 < g < w for g, w in zip(got[0], want[0], strict=True)), (got, want)

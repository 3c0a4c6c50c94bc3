"""A destroyed CUDA graph's grouped tile counters on the GPU: the driver posts the graph's GraphRelease only once every
executable graph made from it is destroyed and their launches have run, so a pair is never handed to another capture
while a replay that reads it is still queued."""

from __future__ import annotations

import numpy as np
import pytest

from tests.gpu.helpers import rel
from tests.gpu.test_dynamic_gpu import K32, TOL, WGRAD, kernel, torch, wgrad_operands, wgrad_reference, wgrad_routing

pytestmark = pytest.mark.gpu

SLEEP_CYCLES = 2_000_000_000  # about a second of one SM's clock: the replay stays queued while the test looks


def test_a_graph_destroyed_while_its_replay_is_queued_keeps_its_counters_until_the_replay_has_run():
    """A grouped K call captured in a torch graph, replayed on a side stream behind a sleeping kernel and the graph
    destroyed at once: while the replay is still queued its pair of counters stays taken (its release unposted, its
    key still found), the replay computes its routing (NaN-poisoned C), and the pair is given back after it has run."""
    import gc
    import time

    t = torch()
    kern = kernel(K32, m=WGRAD[0], n=WGRAD[1])
    X, dY = wgrad_operands(t)
    sizes, ends, C = wgrad_routing(t, np.random.default_rng(29))
    kern(X.t(), dY, C, offsets=ends, alpha=1.0, beta=0.0)
    t.cuda.synchronize()  # the first call (loads the kernel) outside any capture
    slots = kern.executable.dynamic.graph_counters
    before, held = set(slots.found), slots.held
    g = t.cuda.CUDAGraph()
    with t.cuda.graph(g):
        kern(X.t(), dY, C, offsets=ends, alpha=1.0, beta=0.0)
    (key,) = set(slots.found) - before
    release = slots.pool.releases[slots.keys.index(key)]
    assert release.attached and not release.posted() and slots.held == held + 1

    C.fill_(float("nan"))
    side, done = t.cuda.Stream(), t.cuda.Event()
    side.wait_stream(t.cuda.current_stream())  # after the poisoning
    with t.cuda.stream(side):
        t.cuda._sleep(SLEEP_CYCLES)
        g.replay()
        done.record()
    del g  # the graph and its executable graph destroyed with the replay queued
    gc.collect()
    time.sleep(0.05)
    assert not done.query(), "the replay ran before the check: the sleep was too short, or the destructor waited"
    assert not release.posted() and key in slots.found and slots.held == held + 1

    side.synchronize()
    assert rel(C, wgrad_reference(t, X, dY, sizes)) < TOL["f32"]
    deadline = time.monotonic() + 5.0
    while not release.posted() and time.monotonic() < deadline:  # the driver posts it on a thread of its own
        time.sleep(0.01)
    assert release.posted() and slots.held == held

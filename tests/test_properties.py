"""Property tests: any valid schedule plans and renders, the work list covers every output element of every
problem exactly once, and rendering is deterministic."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import gemmc
from tests.conftest import covers_every_output_once

sizes = st.integers(min_value=1, max_value=300)
problem = st.tuples(sizes, sizes, st.integers(min_value=1, max_value=64))
layouts = st.sampled_from(["row", "col"])
tiles = st.sampled_from(["tile auto", "tile auto(uniform)", "tile auto(coordinated)", "tile 32x32x8 threads 64",
                         "tile 64x64x8 threads 128", "tile 128x128x8 threads 256", "tile 48x40x4 threads 64",
                         "tile 16x16x16 threads 32", "tile 32x32x32 kslices 2 threads 256"])


@st.composite
def schedules(draw):
    probs = draw(st.lists(problem, min_size=1, max_size=6))
    batch = " ".join(f"p{i} {m} x {n} x {k}" for i, (m, n, k) in enumerate(probs))
    la, lb, lc = draw(layouts), draw(layouts), draw(layouts)
    dtype = draw(st.sampled_from(["f32", "f64"]))
    return (f"kernel k {{ dtype {dtype} layout A {la}, B {lb}, C {lc} {draw(tiles)} "
            f"pipeline stages {draw(st.sampled_from([1, 2]))} batch {{ {batch} }} }}")


@settings(max_examples=60, deadline=None)
@given(schedules())
def test_work_list_covers_every_element_once(text):
    k = gemmc.compile_string(text)["k"].ir
    offsets = k.work.block_offsets
    assert offsets[0] == 0 and offsets[-1] == len(k.work.tiles)  # the blocks hand out every tile once
    assert all(a < b for a, b in zip(offsets, offsets[1:], strict=False))
    assert covers_every_output_once(k)


@settings(max_examples=30, deadline=None)
@given(schedules())
def test_every_valid_schedule_renders_deterministically(text):
    a = gemmc.compile_string(text)["k"]
    b = gemmc.compile_string(text)["k"]
    assert a.standalone == b.standalone and a.header == b.header
    assert a.rendered.entry in a.source

"""The batching engine (paper 003 §4): threshold and binary batching of tiles into blocks, the `batching auto`
rule, and the property that every work list covers each output element of each problem exactly once."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import gemmc
from gemmc.ir.nodes import WorkTile
from gemmc.ir.types import Batching
from gemmc.passes import batching


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 700), st.integers(1, 700), st.integers(1, 600)), min_size=1, max_size=40),
       st.sampled_from(["auto", "auto(loadbalanced)", "auto(coordinated)", "auto(uniform)"]),
       st.sampled_from(["none", "threshold", "binary"]))
def test_batched_work_lists_cover_every_element_once(shapes, tile, mode):
    body = " ".join(f"p{i} {m} x {n} x {k}" for i, (m, n, k) in enumerate(shapes))
    k = gemmc.compile_string(f"kernel k {{ tile {tile} batching {mode} batch {{ {body} }} }}")["k"].ir
    counts = [np.zeros((p.m, p.n), dtype=np.int32) for p in k.problems]
    for t in k.work.tiles:
        v = k.plan.variants[t.variant]
        counts[t.problem][t.m0:t.m0 + v.bm, t.n0:t.n0 + v.bn] += 1
    assert all((c == 1).all() for c in counts)
    assert k.work.block_offsets[0] == 0 and k.work.block_offsets[-1] == len(k.work.tiles)
    assert all(b > a for a, b in zip(k.work.block_offsets, k.work.block_offsets[1:], strict=False))


def _items(ks):
    return [batching.Item(WorkTile(i, 0, 0, 0), k, k) for i, k in enumerate(ks)]


def test_threshold_batching_fills_blocks_past_theta():
    # 256 tiles of K = 32 with T = 256 and the V100 threshold: 16 blocks of 9 tiles, then 112 single tiles.
    blocks = batching.threshold_batching(_items([32] * 256), 256, 65536, theta=256)
    sizes = sorted((len(b) for b in blocks), reverse=True)
    assert sizes[:16] == [9] * 16 and sizes[16:] == [1] * 112


def test_binary_batching_pairs_short_with_long_within_theta():
    blocks = batching.binary_batching(_items([10, 200, 30, 240, 300]), theta=256)
    ks = sorted(tuple(sorted(it.k for it in b)) for b in blocks)
    assert ks == [(10, 240), (30, 200), (300,)]


def test_blocks_are_ordered_longest_first():
    blocks = batching.group(_items([5, 50, 500]), Batching.NONE, 256, 1)
    assert [b[0].k for b in blocks] == [500, 50, 5]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 600), min_size=1, max_size=300), st.sampled_from(list(Batching)),
       st.integers(1, 1 << 20), st.integers(1, 1024))
def test_every_tile_lands_in_exactly_one_nonempty_block(ks, mode, threshold, theta):
    items = _items(ks)
    blocks = batching.group(items, mode, 256, threshold, theta)
    assert all(blocks)
    assert sorted(it.tile.problem for b in blocks for it in b) == list(range(len(ks)))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 600), min_size=1, max_size=300), st.integers(1, 1024))
def test_binary_batching_never_serialises_past_theta(ks, theta):
    for block in batching.binary_batching(_items(ks), theta):
        assert len(block) <= 2 and (len(block) == 1 or sum(it.k for it in block) <= theta)


def _kernel(shapes, mode="auto"):
    body = " ".join(f"p{i} {m} x {n} x {k}" for i, (m, n, k) in enumerate(shapes))
    return gemmc.compile_string(f"kernel k {{ tile auto(uniform) batching {mode} batch {{ {body} }} }}")["k"]


def test_batching_auto_batches_many_small_k_tiles_and_shows_theta():
    k = _kernel([(512, 512, 32)] * 128)  # 7.8 waves of 128x128 tiles
    assert k.ir.plan.batching is Batching.THRESHOLD and k.ir.plan.theta == batching.THETA
    assert f"theta {batching.THETA}" in k.plan and "median K 32 <= theta/2" in k.plan
    assert len(k.ir.work.block_offsets) - 1 < len(k.ir.work.tiles)


def test_batching_auto_leaves_few_or_long_tiles_alone():
    assert _kernel([(64, 64, 32)] * 2).ir.plan.batching is Batching.NONE  # far below 4 waves
    assert _kernel([(512, 512, 512)] * 64).ir.plan.batching is Batching.NONE  # K past theta / 2


def test_batching_from_the_schedule_wins():
    k = _kernel([(64, 64, 32)] * 2, "binary")
    assert k.ir.plan.batching is Batching.BINARY and "batching binary from the schedule" in k.plan

"""The batching engine (paper 003 §4): threshold and binary batching of tiles into blocks, the `batching auto`
rule, and the property that every work list covers each output element of each problem exactly once."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import gemmc
from gemmc.families.simt import batching
from gemmc.ir.types import Batching
from gemmc.passes.verify import output_coverage


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 700), st.integers(1, 700), st.integers(1, 600)), min_size=1, max_size=40),
       st.sampled_from(["auto", "auto(loadbalanced)", "auto(coordinated)", "auto(uniform)"]),
       st.sampled_from(["none", "threshold", "binary"]))
def test_batched_work_lists_cover_every_element_once(shapes, tile, mode):
    body = " ".join(f"p{i} {m} x {n} x {k}" for i, (m, n, k) in enumerate(shapes))
    compiled = gemmc.compile_string(f"kernel k {{ tile {tile} batching {mode} batch {{ {body} }} }}")["k"]
    k = compiled.ir
    assert output_coverage(k, compiled.target) == []
    if k.work.raster is not None:  # equal problems: computed tiles, covered as output_coverage checks
        return
    assert k.work.block_offsets[0] == 0 and k.work.block_offsets[-1] == len(k.work.tiles)
    assert all(b > a for a, b in zip(k.work.block_offsets, k.work.block_offsets[1:], strict=False))


def _reference_group(ks, works, mode, block_threads, tlp_threshold, theta):
    """Paper 003 §4 one tile at a time, as the planner did before it worked on columns: the blocks as lists."""
    items = list(range(len(ks)))
    if mode is Batching.THRESHOLD:
        pending, blocks, i = sorted(items, key=lambda t: ks[t]), [], 0
        while i < len(pending):
            if (len(pending) - i + len(blocks)) * block_threads > tlp_threshold / 2:
                block, ksum = [], 0
                while i < len(pending) and ksum <= theta:
                    block.append(pending[i])
                    ksum += ks[pending[i]]
                    i += 1
                blocks.append(block)
            else:
                blocks.extend([t] for t in pending[i:])
                break
    elif mode is Batching.BINARY:
        ordered, blocks = sorted(items, key=lambda t: ks[t]), []
        lo, hi = 0, len(ordered) - 1
        while lo < hi:
            if ks[ordered[lo]] + ks[ordered[hi]] <= theta:
                blocks.append([ordered[lo], ordered[hi]])
                lo += 1
            else:
                blocks.append([ordered[hi]])
            hi -= 1
        if lo == hi:
            blocks.append([ordered[lo]])
    else:
        blocks = [[t] for t in items]
    return sorted(blocks, key=lambda b: -sum(works[t] for t in b))


def _group(ks, mode=Batching.NONE, threshold=1, theta=batching.THETA, works=None):
    return batching.group(np.array(ks), np.array(works or ks), mode, 256, threshold, theta).lists()


def test_threshold_batching_fills_blocks_past_theta():
    # 256 tiles of K = 32 with T = 256 and the V100 threshold: 16 blocks of 9 tiles, then 112 single tiles.
    blocks = batching.threshold_batching(np.array([32] * 256), 256, 65536, theta=256).lists()
    sizes = sorted((len(b) for b in blocks), reverse=True)
    assert sizes[:16] == [9] * 16 and sizes[16:] == [1] * 112


def test_binary_batching_pairs_short_with_long_within_theta():
    ks = [10, 200, 30, 240, 300]
    blocks = batching.binary_batching(np.array(ks), theta=256).lists()
    assert sorted(tuple(sorted(ks[t] for t in b)) for b in blocks) == [(10, 240), (30, 200), (300,)]


def test_blocks_are_ordered_longest_first():
    assert _group([5, 50, 500]) == [[2], [1], [0]]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 600), min_size=1, max_size=300), st.sampled_from(list(Batching)),
       st.integers(1, 1 << 20), st.integers(1, 1024))
def test_every_tile_lands_in_exactly_one_nonempty_block(ks, mode, threshold, theta):
    blocks = _group(ks, mode, threshold, theta)
    assert all(blocks)
    assert sorted(t for b in blocks for t in b) == list(range(len(ks)))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 600), st.integers(1, 64)), min_size=1, max_size=300),
       st.sampled_from(list(Batching)), st.integers(1, 1 << 20), st.integers(1, 1024))
def test_blocks_match_the_tile_at_a_time_rule(tiles, mode, threshold, theta):
    # The engine works on columns (sorted K, prefix sums, one permutation); every block and its place in the
    # launch order must be what the paper's rule, applied tile by tile, gives.
    ks = [k for k, _ in tiles]
    works = [k * micro for k, micro in tiles]
    assert _group(ks, mode, threshold, theta, works) == _reference_group(ks, works, mode, 256, threshold, theta)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 600), min_size=1, max_size=300), st.integers(1, 1024))
def test_binary_batching_never_serialises_past_theta(ks, theta):
    for block in batching.binary_batching(np.array(ks), theta).lists():
        assert len(block) <= 2 and (len(block) == 1 or sum(ks[t] for t in block) <= theta)


def _kernel(shapes, mode="auto"):
    body = " ".join(f"p{i} {m} x {n} x {k}" for i, (m, n, k) in enumerate(shapes))
    return gemmc.compile_string(f"kernel k {{ tile auto(uniform) batching {mode} batch {{ {body} }} }}")["k"]


def test_batching_auto_batches_many_small_k_tiles_and_shows_theta():
    k = _kernel([(512, 512, 32)] * 512)  # 62 waves of 128x128 tiles, more of any smaller tile
    assert k.ir.plan.batching is Batching.THRESHOLD and k.ir.plan.theta == batching.THETA
    assert f"theta {batching.THETA}" in k.plan and "median K 32 <= theta/2" in k.plan
    assert len(k.ir.work.block_offsets) - 1 < len(k.ir.work.tiles)


def test_batching_auto_leaves_few_or_long_tiles_alone():
    assert _kernel([(64, 64, 32)] * 2).ir.plan.batching is Batching.NONE  # far below 24 waves
    assert _kernel([(512, 512, 32)] * 128).ir.plan.batching is Batching.NONE  # 7.8 waves of 128x128 tiles
    assert _kernel([(512, 512, 512)] * 64).ir.plan.batching is Batching.NONE  # K past theta / 2


def test_batching_from_the_schedule_wins():
    k = _kernel([(64, 64, 32)] * 2, "binary")
    assert k.ir.plan.batching is Batching.BINARY and "batching binary from the schedule" in k.plan


def test_the_schedules_tlp_threshold_is_the_one_a_uniform_tiling_batches_to():
    # `tlp threshold N` reached the load-balanced and coordinated planners only: a uniform tiling batched to the
    # hardware's default (270336 threads on sm_90) and `inspect` printed that, not the schedule's number.
    text = "kernel k {{ tile auto(uniform) batching threshold {} gemm 64 x 64 x 64 count 512 }}"
    default, low = (gemmc.compile_string(text.format(t))["k"] for t in ("", "tlp threshold 1000"))
    assert low.ir.plan.tlp_threshold == 1000 and "threshold 1000;" in low.plan
    assert default.ir.plan.tlp_threshold == 270336
    assert low.ir.work.blocks < default.ir.work.blocks == 512  # 512 tiles, now fewer blocks of several

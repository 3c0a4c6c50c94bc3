"""The irregular planners against the papers' worked examples and hand-checked figures."""

from __future__ import annotations

import re

import pytest

import gemmc
from gemmc.families.simt import planner as simt
from gemmc.families.simt import tiling
from gemmc.families.simt.plan import SimtVariant
from gemmc.ir.hardware import TARGETS
from gemmc.ir.nodes import Problem
from gemmc.model.tlp import coordinated_threshold, default_threshold, occupancy, tlp_new, tlp_old
from gemmc.passes.verify import output_coverage

H100 = TARGETS["sm_90"]


def test_paper_003_worked_example_ends_at_17920():
    # 16x32x128, 64x64x64, 256x256x64 with T = 256 and the V100 threshold 65536: (small, small, small) gives
    # 70144 > 65536, the next lockstep step (small, medium, medium) gives 17920 and is final.
    problems = (Problem("a", 16, 32, 128), Problem("b", 64, 64, 64), Problem("c", 256, 256, 64))
    t = tiling.coordinated(problems, 1, 65536)
    assert [(v.bm, v.bn, v.threads) for v in t.variants] == [(16, 16, 256), (32, 32, 256), (32, 32, 256)]
    counts = t.tile_counts(problems, 1)
    assert tlp_old(counts, 256) == 17920
    first = simt.everyone("x", tiling.COORDINATED[256][0][1], 3).tile_counts(problems, 1)
    assert tlp_old(first, 256) == 70144


@pytest.mark.parametrize("bm, bn, bk, threads, w_cp, w_dl", [
    (16, 16, 16, 128, 2, 6), (16, 32, 16, 128, 4, 10), (32, 32, 16, 128, 8, 16), (32, 64, 16, 256, 8, 14),
    (64, 64, 16, 256, 16, 24),
])
def test_paper_000_table_3(bm, bn, bk, threads, w_cp, w_dl):
    v = SimtVariant(bm, bn, bk, 1, 1, threads)
    assert (v.w_cp, v.w_dl) == (w_cp, w_dl)


def test_catalogue_thread_counts_follow_paper_000():
    for level in tiling.LOADBALANCED_LEVELS:
        expected = 128 if level.tall.bm * level.tall.bn <= 32 * 32 else 256
        assert level.tall.threads == level.wide.threads == expected


def test_old_tlp_counts_retired_warps_new_tlp_does_not():
    # 10 tiles of a 128-thread variant launched in 256-thread blocks: Eq. 3 counts 2560 threads, Eq. 4 1280.
    assert tlp_old([10], 256) == 2560
    assert tlp_new([10], [128], 32) == 1280


def test_occupancy_limits_on_h100():
    assert occupancy(H100, 256, 177, 16896).blocks_per_sm == 1  # registers: 177 -> 184 x 32 x 8 warps
    assert occupancy(H100, 128, 40, 4096).blocks_per_sm == 12  # 40 x 32 = 1280 regs a warp, 5120 a block
    assert occupancy(H100, 32, 16, 1024).limit == "blocks"  # 32 blocks of one warp
    assert occupancy(H100, 1024, 32, 0).warps_per_sm == 64


def test_thresholds_derive_from_the_hardware():
    assert default_threshold(H100) == 132 * 2048
    assert coordinated_threshold(TARGETS["sm_80"]) == int(0.4 * 108 * 2048)


def test_initial_tile_for_sizes_no_tile_divides():
    # 196 and 49 are divisible by no tile: the initial level is the largest the problem fills to >= 75%.
    v = tiling.LOADBALANCED_LEVELS[tiling.initial_level(Problem("p", 196, 192, 192))].pick(Problem("p", 196, 192, 1))
    assert tiling.fill(Problem("p", 196, 192, 1), v) >= tiling.FILL
    assert tiling.initial_level(Problem("p", 1, 1, 1)) == 0


def test_loadbalanced_steps_down_until_the_threshold_and_stops():
    problems = tuple(Problem(f"p{i}", 512, 512, 64) for i in range(2))
    coarse = tiling.loadbalanced(problems, 1, H100, threshold=1)
    fine = tiling.loadbalanced(problems, 1, H100, threshold=10**9)  # unreachable: must still terminate
    assert coarse.steps == 0 and coarse.variants[0].bm == 128
    assert all(v.bm * v.bn == 16 * 16 for v in fine.variants)


FIGURES = re.compile(r"TLP old \(Eq\. 3\) (\d+), new \(Eq\. 4\) (\d+), threshold (\d+); "
                     r"occupancy (\d+) warps/SM \((\w+)\)")


def tiles_of(sizes: list[tuple[int, int]], bm: int, bn: int) -> list[int]:
    return [-(-m // bm) * -(-n // bn) for m, n in sizes]


def resident_warps(threads: int, regs: int, smem: int) -> int:
    """Paper 000 Eqs. 5-9 with the H100's constants, by hand: blocks per SM by threads, registers (per warp, in
    units of 256), shared memory (and the 1 KiB the runtime keeps per block), blocks; warps of those blocks."""
    warps = threads // 32
    regs_per_warp = -(-regs * 32 // 256) * 256
    blocks = min(2048 // threads, 65536 // (regs_per_warp * warps), 233472 // (smem + 1024), 32)
    return blocks * warps


def test_plan_shows_the_tlp_figures_of_paper_000():
    # inception3 on the H100: the model's cheapest tiling is 32x32x32 tiles of 128 threads in 4 k slices (4x8
    # micro-tiles), bound to 4 blocks of 128 registers. Its figures by hand: 84 tiles of 128 threads (every tile a
    # full block of whole warps, so Eq. 3 and Eq. 4 agree), the threshold one machine of threads, 2 stages of
    # 32 x (32 + 32 + 2 x 2 padding) floats.
    plan = gemmc.compile_file("examples/inception3.gs")["inception3"].plan
    sizes = [(196, 192), (196, 16), (196, 96), (196, 64)]
    tiles = tiles_of(sizes, 32, 32)
    assert tiles == [42, 7, 21, 14]
    smem = 2 * 32 * (32 + 32 + 2 * 2) * 4
    figures = (sum(tiles) * 128, sum(tiles) * 4 * 32, 132 * 2048, resident_warps(128, 128, smem), "registers")
    assert figures == (10752, 10752, 270336, 16, "registers")
    assert FIGURES.search(plan).groups() == tuple(map(str, figures))
    assert "variant 0: 32x32x32 threads 128 micro 4x8 kslices 4, W_CP 8, W_DL 24 (~128 regs)" in plan  # Eqs. 1-2
    assert f"shared memory {smem} B, bound 4 blocks/SM (128 registers)" in plan
    assert f"work: grid {sum(tiles)}x1x1, 128 threads/block, {sum(tiles)} tiles" in plan
    for (m, n), count in zip(sizes, tiles, strict=True):
        assert re.search(rf"{m} x {n} x 192  -> variant 0 \(32x32, 128 threads, {count} tiles\)", plan)


def test_plan_shows_where_eq_4_counts_fewer_threads_than_eq_3():
    # Paper 000 §4.2.1: with 128x128 tiles (256 threads) and 16x16 tiles (128 threads) in one launch of 256-thread
    # blocks, Eq. 3 counts every tile with 256 threads; Eq. 4 counts the warps that work, 4 for a 16x16 tile. The
    # low threshold keeps Algorithm 1 at each problem's initial level. 255 registers: one block of 8 warps per SM.
    text = ("kernel k { tile auto(loadbalanced) tlp threshold 1000 "
            "batch { a 1024 x 1024 x 64  b 16 x 16 x 64  c 40 x 40 x 64 } }")
    plan = gemmc.compile_string(text)["k"].plan
    big, small = tiles_of([(1024, 1024)], 128, 128), tiles_of([(16, 16), (40, 40)], 16, 16)
    assert (big, small) == ([64], [1, 9])
    tlp_old = (sum(big) + sum(small)) * 256
    tlp_new = (sum(big) * 8 + sum(small) * 4) * 32
    figures = (tlp_old, tlp_new, 1000, resident_warps(256, 255, 2 * 16 * (128 + 128 + 2 * 2) * 4), "registers")
    assert figures == (18944, 17664, 1000, 8, "registers")
    assert FIGURES.search(plan).groups() == tuple(map(str, figures))
    assert "variant 0: 128x128x16 threads 256 micro 8x8, W_CP 64, W_DL 80" in plan  # Eqs. 1-2: 16384 / 256, ...
    assert "variant 1: 16x16x32 threads 128 micro 1x2, W_CP 2, W_DL 10" in plan  # ... (256 + 1024) / 128


def test_plan_for_replans_and_caches_by_multiset():
    k = gemmc.compile_file("examples/inception3.gs")["inception3"]
    shapes = [(33, 17, 5), (1, 1, 1), (300, 200, 100)]
    again = k.plan_for(list(reversed(shapes)))
    first = k.plan_for(shapes)
    assert first is again  # one plan per multiset of shapes
    assert sorted(first.shapes) == sorted(shapes) and first.planner_seconds > 0
    assert first.ir.layouts == k.ir.layouts and first.ir.work is not None


def test_occupancy_uses_the_compiled_registers_and_the_device(monkeypatch):
    # Without a GPU: a fake compiled function with 200 registers per thread and the H100 record as the device.
    import types

    from gemmc.runtime import executable

    k = gemmc.compile_file("examples/inception3.gs")["inception3"]
    monkeypatch.setattr(executable, "hardware", lambda: H100)
    monkeypatch.setattr(executable, "device_function",
                        lambda rendered, entry: types.SimpleNamespace(num_regs=200, max_threads_per_block=1024))
    occ = k.occupancy()
    assert occ == occupancy(H100, k.ir.work.block, 200, k.ir.work.smem_bytes) and occ.limit == "registers"


def test_tile_auto_costs_every_tiling_and_forced_modes_do_not():
    auto = gemmc.compile_file("examples/inception_all.gs")["inception_all"].ir.plan
    names = [name for name, _ in auto.candidates]
    assert names[:4] == ["uniform 64x64x16_t256", "coordinated 3 tiles", "loadbalanced-eq3 3 tiles",
                         "loadbalanced 3 tiles"]
    assert "uniform 32x32x32_t128_s4" in names and len(names) == len(set(names))
    # The fastest of the 21 candidates timed on the H100: 15.0 us, where the Eq. 3 ladder the old model chose
    # took 20.3 (bench/results/irregular/2026-11-23_h100_irregular_slices.json).
    assert auto.method == "uniform" and auto.variants[0].name == "32x32x32_t128_s4"
    body = open("examples/inception_all.gs").read().split("batch {", 1)[1].split("}", 1)[0]
    forced = gemmc.compile_string(f"kernel k {{ tile auto(loadbalanced) batch {{ {body} }} }}")["k"].ir.plan
    assert forced.method == "loadbalanced" and forced.candidates == ()


def test_latency_bound_counts_the_scheduler_load_of_small_micro_tiles():
    # Inception module 2 on the H100: 16x16 tiles (1x2 micro-tiles, 686 blocks) measured 12.6 us, 32x32x32 with
    # 128 threads 8.5 us (bench/results/irregular/2026-11-22_h100_simt_tiles_call2.log). The latency bound used to
    # charge
    # a k step the same whatever the warps sharing a scheduler issue, and ranked 16x16 first.
    text = "kernel k { batch { a 784 x 64 x 192  b 784 x 32 x 192  c 784 x 128 x 192 } }"
    k = gemmc.compile_string(text)["k"]
    hw, problems = k.target, k.ir.problems
    small = simt.everyone("x", tiling.variant(16, 16, 32, 128), 3)
    mid = simt.everyone("x", tiling.variant(32, 32, 32, 128), 3)
    est = {name: tiling.estimate(simt.with_edges(simt.plan_from(k.ir, hw, t)), problems, 1, hw).seconds
           for name, t in (("16", small), ("32", mid))}
    assert est["32"] < est["16"]
    assert k.ir.plan.variants[0].bm == 32 and k.ir.plan.variants[0].bn == 32 and set(k.ir.plan.assignment) == {0}


def test_tile_auto_offers_the_other_tilings_for_timing_and_forced_choices_none():
    # The runtime's tuning step times these (gemmc.runtime.tune): the model's plan first, every other tiling it
    # costed, the uniform catalogue's other tiles, each with both batchings; no two share tiles and blocks.
    k = gemmc.compile_file("examples/inception_all.gs")["inception_all"]
    found = simt.alternatives(k.ir, k.target)
    labels = [label for label, _ in found]
    assert labels[0].endswith("(model)") and found[0][1].plan == k.ir.plan
    methods = {ir.plan.method for _, ir in found}
    assert methods == {"uniform", "coordinated", "loadbalanced-eq3", "loadbalanced"}
    assert {ir.plan.batching.value for _, ir in found} == {"none", "threshold"}
    keys = [(ir.plan.variants, ir.plan.assignment, ir.work.block_offsets, ir.work.tiles.data, ir.work.grid)
            for _, ir in found]
    assert len(set(keys)) == len(keys) == len(set(labels))
    split = [ir for _, ir in found if ir.plan.ksplit > 1]  # the split-k forms of the cheapest tilings under a wave
    assert split and all(ir.plan.batching.value == "none" and ir.work.one_tile_per_block for ir in split)
    assert all(output_coverage(ir, k.target) == [] for _, ir in found)
    body = open("examples/inception_all.gs").read().split("batch {", 1)[1].split("}", 1)[0]
    for fixed in ("tile auto(coordinated)", "tile 64x64x16 threads 256"):
        forced = gemmc.compile_string(f"kernel k {{ {fixed} batch {{ {body} }} }}")["k"]
        assert simt.alternatives(forced.ir, forced.target) == ()
    pinned = gemmc.compile_string(f"kernel k {{ batching none batch {{ {body} }} }}")["k"]
    assert {ir.plan.batching.value for _, ir in simt.alternatives(pinned.ir, pinned.target)} == {"none"}

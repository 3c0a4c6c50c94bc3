"""Irregular batches on the GPU: every catalogue variant, mixed thread counts in one launch, both batching
heuristics, sizes of 1, primes and below the smallest tile; NaN-poisoned outputs, float64 references."""

from __future__ import annotations

import random

import pytest

import gemmc
from gemmc.families.simt.tiling import COORDINATED, LOADBALANCED_LEVELS
from tests.gpu.helpers import TOLERANCE, check_schedule

pytestmark = pytest.mark.gpu

ODD = [(1, 1, 1), (7, 3, 1), (13, 1, 5), (3, 17, 2), (97, 13, 251), (196, 192, 192), (49, 24, 7), (130, 131, 129),
       (257, 63, 31), (5, 300, 17), (784, 16, 192)]
CATALOGUE = sorted({v for lv in LOADBALANCED_LEVELS for v in (lv.tall, lv.wide)} |
                   {v for group in COORDINATED.values() for _, v in group}, key=str)


def batch(shapes) -> str:
    return "batch { " + " ".join(f"p{i} {m} x {n} x {k}" for i, (m, n, k) in enumerate(shapes)) + " }"


def random_shapes(seed: int, count: int, top: int) -> list[tuple[int, int, int]]:
    rng = random.Random(seed)
    return [(rng.randint(1, top), rng.randint(1, top), rng.randint(1, top)) for _ in range(count)]


@pytest.mark.parametrize("v", CATALOGUE, ids=str)
def test_every_catalogue_variant(v):
    check_schedule(f"kernel k {{ tile {v.bm}x{v.bn}x{v.bk} threads {v.threads} {batch(ODD)} }}")


@pytest.mark.parametrize("mode", ["loadbalanced", "coordinated", "uniform"])
@pytest.mark.parametrize("batching", ["none", "threshold", "binary"])
@pytest.mark.parametrize("seed", [1, 2])
def test_planners_and_batching(mode, batching, seed):
    shapes = ODD + random_shapes(seed, 40, 300)
    result = check_schedule(f"kernel k {{ tile auto({mode}) batching {batching} layout A col {batch(shapes)} }}",
                            seed=seed)
    assert result["errors"]["nonfinite"] == 0


# Sizes on both sides of half a tile (64, 32, 16, 8) and of a whole one, so that every edge variant of the
# uniform tiles (half height, half width, both) meets full, partial and single-row edges.
EDGES = [(m, n, k) for m, n, k in zip([64, 65, 129, 192, 193, 33, 17, 200, 320, 9],
                                      [65, 64, 192, 129, 33, 193, 200, 17, 9, 320],
                                      [16, 33, 7, 64, 100, 1, 48, 31, 5, 129], strict=True)]


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("tiling", ["uniform", "coordinated"])
@pytest.mark.parametrize("batching", ["none", "threshold"])
def test_edge_tiles(dtype, tiling, batching):
    k = gemmc.compile_string(f"kernel k {{ dtype {dtype} tile auto({tiling}) batching {batching} "
                             f"{batch(EDGES + ODD)} }}")["k"]
    assert k.ir.plan.edges and len({t.variant for t in k.ir.work.tiles}) > len(set(k.ir.plan.assignment))
    check_schedule(f"kernel k {{ dtype {dtype} tile auto({tiling}) batching {batching} {batch(EDGES + ODD)} }}")


SLICED = ["32x32x32 kslices 2 threads 256", "32x32x32 kslices 4 threads 512", "64x64x16 kslices 2 threads 512",
          "128x128x16 kslices 2 threads 512", "16x16x32 kslices 4 threads 128", "32x32x32 kslices 2 threads 128",
          "32x32x32 kslices 4 threads 128", "64x64x16 kslices 4 threads 256"]


@pytest.mark.parametrize("layout", ["A row, B row, C row", "A col, B col, C col"])
@pytest.mark.parametrize("tile", SLICED)
def test_sliced_k(tile, layout):
    # Each slice sums its share of every k-tile, partial last k-tiles included (K = 1, 5, 7, 251 ...); the sums
    # meet in shared memory, and the next tile of a block (threshold batching) reuses that memory.
    shapes = batch(ODD + random_shapes(3, 30, 300))
    check_schedule(f"kernel k {{ tile {tile} layout {layout} batching threshold {shapes} }}")


def test_sliced_k_f64():
    check_schedule(f"kernel k {{ dtype f64 tile 32x32x8 kslices 2 threads 512 layout B col {batch(ODD)} }}")


SPLIT = ["32x32x32 ksplit 2 threads 128", "32x32x32 kslices 4 ksplit 3 threads 256", "64x64x16 ksplit 4",
         "16x16x32 kslices 4 ksplit 2 threads 64", "128x128x16 ksplit 2", "32x32x32 kslices 2 ksplit 8 threads 128"]


@pytest.mark.parametrize("layout", ["A row, B row, C row", "A col, B col, C col"])
@pytest.mark.parametrize("tile", SPLIT)
def test_split_k(tile, layout):
    # The cluster's blocks share each tile's k-tiles (K = 1 and 5 leave the last ranks none; 251 a partial last
    # k-tile) and rank 0 adds their sums; alpha and beta (C read once, by rank 0). 16x16x32 in 4 slices of 16
    # threads: a warp holds two slices, one of which leaves before the cluster barriers.
    check_schedule(f"kernel k {{ tile {tile} layout {layout} {batch(ODD + random_shapes(4, 20, 300))} }}")


def test_split_k_f64_and_auto():
    check_schedule(f"kernel k {{ dtype f64 tile 32x32x8 kslices 2 ksplit 3 threads 256 {batch(ODD)} }}")
    long_k = [(35, 29, 366), (108, 61, 96), (28, 112, 96), (73, 61, 252), (113, 87, 311), (102, 123, 123),
              (105, 122, 412), (44, 87, 371)]  # examples/split_k.gs
    text = f"kernel k {{ tile auto {batch(long_k)} }}"
    assert gemmc.compile_string(text)["k"].ir.plan.ksplit > 1  # the model's choice for few tiles with long K
    check_schedule(text)


def test_split_k_is_deterministic():
    # Rank 0 adds the cluster's sums in rank order, whichever block finishes first: two runs give the same bits.
    import cupy as cp

    shapes = [(97, 45, 1031), (33, 130, 517), (5, 7, 3001)]
    k = gemmc.compile_string(f"kernel k {{ tile 32x32x32 kslices 2 ksplit 4 threads 128 {batch(shapes)} }}")["k"]
    rng = cp.random.default_rng(7)
    As = [rng.standard_normal((m, kk), dtype=cp.float32) for m, n, kk in shapes]
    Bs = [rng.standard_normal((kk, n), dtype=cp.float32) for m, n, kk in shapes]
    runs = []
    for _ in range(2):
        Cs = [cp.full((m, n), cp.nan, dtype=cp.float32) for m, n, kk in shapes]
        k(As, Bs, Cs)
        runs.append([c.get() for c in Cs])
    for first, second in zip(*runs, strict=True):
        assert (first.view("u4") == second.view("u4")).all()


def test_mixed_thread_counts_in_one_launch():
    # Small and large problems: the load-balanced plan mixes 128- and 256-thread variants in one launch, and
    # batching puts tiles of different variants into one block.
    shapes = [(16, 16, 8)] * 30 + [(512, 512, 64)] * 2 + [(33, 17, 5)] * 20
    text = f"kernel k {{ tile auto(loadbalanced) tlp threshold 4096 batching threshold {batch(shapes)} }}"
    k = gemmc.compile_string(text)["k"]
    assert len({v.threads for v in k.ir.plan.variants}) > 1
    assert max(b - a for a, b in zip(k.ir.work.block_offsets, k.ir.work.block_offsets[1:], strict=False)) > 1
    check_schedule(text)


def test_f64_irregular():
    check_schedule(f"kernel k {{ dtype f64 layout B col {batch(ODD + random_shapes(5, 20, 200))} }}")


def test_call_with_other_sizes_replans():
    import cupy as cp

    k = gemmc.compile_file("examples/inception3.gs")["inception3"]
    shapes = [(97, 13, 251), (1, 1, 1), (196, 24, 7), (50, 300, 33), (97, 13, 251)]
    rng = cp.random.default_rng(3)
    As = [rng.standard_normal((m, kk), dtype=cp.float32) for m, n, kk in shapes]
    Bs = [rng.standard_normal((kk, n), dtype=cp.float32) for m, n, kk in shapes]
    Cs = [cp.full((m, n), cp.nan, dtype=cp.float32) for m, n, kk in shapes]
    k(As, Bs, Cs)
    for a, b, c in zip(As, Bs, Cs, strict=True):
        ref = a.astype(cp.float64) @ b.astype(cp.float64)
        assert float(cp.linalg.norm(c - ref) / cp.linalg.norm(ref)) < 1e-5
    with pytest.raises(gemmc.GemmcError, match="inner dimensions differ"):
        k([As[0]], [Bs[1]], [Cs[0]])


def test_occupancy_from_the_compiled_kernel():
    k = gemmc.compile_file("examples/inception_all.gs")["inception_all"]
    occ = k.occupancy()
    fn_regs = k.executable.function.num_regs
    assert 0 < occ.blocks_per_sm and occ.warps_per_sm <= 64 and fn_regs > 0


IRREGULAR_AUTO = "kernel k {{ dtype {} tile auto alpha 1.5 beta -0.5 layout B col {} }}"


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_every_tuning_candidate_is_correct(dtype):
    # `tile auto`'s first call may keep any of the planner's alternatives (families/simt/planner.py: alternatives): each
    # against float64 on 1, primes and sizes below the smallest tile, beta != 0.
    from gemmc.api import CompiledKernel
    from gemmc.families.simt import planner as simt
    from gemmc.runtime.check import check_kernel

    kern = gemmc.compile_string(IRREGULAR_AUTO.format(dtype, batch(ODD + random_shapes(7, 60, 400))))["k"]
    found = simt.alternatives(kern.ir, kern.target)
    assert len(found) >= 6 and any(v.slices > 1 for _, ir in found for v in ir.plan.variants)
    for label, ir in found:
        err = check_kernel(CompiledKernel(ir, kern.target, "<alt>"), seed=3, alpha=1.5, beta=-0.5,
                           time_it=False)["errors"]
        assert err["nonfinite"] == 0 and err["rel_fro"] < TOLERANCE[dtype], (label, err)


def test_tuning_an_irregular_batch_keeps_the_fastest_and_leaves_c_alone(monkeypatch):
    # The tuning step times each candidate as graph replays on the call's A and B, C in scratch memory: with
    # beta != 0 a C written by the timing would show in the result. A re-planned batch is tuned the same way.
    from gemmc.runtime.check import errors, random_batch, reference

    monkeypatch.setenv("GEMMC_TUNE", "1")
    kern = gemmc.compile_string(IRREGULAR_AUTO.format("f32", batch(ODD + random_shapes(8, 30, 300))))["k"]
    for k in (kern, kern.plan_for(random_shapes(9, 20, 200))):
        As, Bs, Cs = random_batch(k, seed=4, poison=False)
        C0 = [c.copy() for c in Cs]
        kern(As, Bs, Cs)  # the schedule's batch, or one of other sizes: re-planned to k
        for a, b, c0, c in zip(As, Bs, C0, Cs, strict=True):
            e = errors(c, reference(a, b, c0, 1.5, -0.5))
            assert e["nonfinite"] == 0 and e["rel_fro"] < 1e-5, e
        tuning = k.tuning
        assert tuning is not None and len(tuning.seconds) >= 2 and not tuning.cached
        assert tuning.seconds[tuning.chosen] == min(tuning.seconds) and tuning.labels[0].endswith("(model)")

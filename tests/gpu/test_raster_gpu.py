"""Uniform launches on the GPU, their tiles computed by the kernel (WorkList.raster): single GEMMs and `count`
batches of odd sizes on both tile families, threshold-batched blocks, a grid of more than 65535 blocks, and a grid
capped below the mapping's blocks so that blocks stride. Fresh random inputs, C poisoned with NaN, float64
reference."""

from __future__ import annotations

import pytest

import gemmc
from gemmc.grammar import limits
from tests.gpu.helpers import check_schedule

pytestmark = pytest.mark.gpu


def raster_of(text: str):
    work = gemmc.compile_string(text)["k"].ir.work
    assert work.raster is not None
    return work.raster


@pytest.mark.parametrize("text", [
    "kernel k { gemm 1000 x 777 x 129 }",
    "kernel k { dtype f64 layout A col, C col gemm 331 x 97 x 45 }",
    "kernel k { layout B col batching threshold gemm 333 x 222 x 17 count 300 }",  # blocks of several tiles
])
def test_simt_uniform(text):
    check_schedule(text, seed=11)


def test_simt_uniform_batches_several_tiles_a_block():
    r = raster_of("kernel k { layout B col batching threshold gemm 333 x 222 x 17 count 300 }")
    assert r.per_block > 1 and r.batched > 0


@pytest.mark.parametrize("text", [
    "kernel k { precision tf32 layout A col gemm 129 x 65 x 33 count 7 }",
])
def test_tensorcore_uniform(text):
    check_schedule(text, seed=5, tolerance=5e-3)


def test_a_grid_smaller_than_the_mapping_strides(monkeypatch):
    monkeypatch.setattr(limits, "MAX_GRID_X", 7)  # as a launch past the grid's limit would: blocks stride
    text = "kernel k { tile 16x16x16 threads 32 batching none gemm 101 x 99 x 23 count 3 }"
    assert raster_of(text).blocks > 7
    check_schedule(text, seed=2)
    check_schedule("kernel k { precision tf32 gemm 301 x 257 x 99 }", seed=4, tolerance=5e-3)


def test_a_batch_of_70000_tiny_gemms_runs_past_65535_blocks():
    import cupy as cp

    k = gemmc.compile_string("kernel k { batching none gemm 5 x 3 x 7 count 70000 }")["k"]
    assert k.ir.work.grid[0] == 70000 and k.ir.work.raster.tiles == 70000
    rng = cp.random.default_rng(9)
    a = rng.uniform(-1, 1, (70000, 5, 7)).astype(cp.float32)
    b = rng.uniform(-1, 1, (70000, 7, 3)).astype(cp.float32)
    c = cp.full((70000, 5, 3), cp.nan, dtype=cp.float32)
    k(a, b, c)
    ref = cp.matmul(a.astype(cp.float64), b.astype(cp.float64))
    assert int((~cp.isfinite(c)).sum()) == 0
    assert float(cp.linalg.norm(c - ref) / cp.linalg.norm(ref)) < 1e-6

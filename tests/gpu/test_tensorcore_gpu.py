"""Tensor-core family on the GPU: every precision mode against float64 on odd sizes, both layouts, alpha/beta,
a batch in one launch, and inputs far outside the f16 range. Fresh random inputs, NaN-poisoned outputs."""

from __future__ import annotations

import numpy as np
import pytest

import gemmc
from tests.gpu.helpers import check_schedule

pytestmark = pytest.mark.gpu

# Relative Frobenius error bounds: one pass ~ the part type's unit roundoff times a small factor; splits ~ f32's.
MODES = {
    "f16": 3e-3, "bf16": 2e-2, "tf32": 3e-3,
    "split f16 x3 method le": 2e-5, "split f16 x3 method ootomo": 1e-5, "split f16 x3": 1e-5,
    "split f16 x4 method markidis": 2e-5, "split bf16 x3": 1e-4, "split bf16 x6": 1e-5, "split tf32 x3": 1e-5,
}

ODD_BATCH = """
    one    1 x 1 x 1
    thin   1 x 7 x 13
    tall   13 x 1 x 5
    primes 97 x 13 x 251
    near   130 x 131 x 129
    skew   257 x 63 x 31
"""


# Every mode in two layouts; the mixed layouts (each operand's other shared-memory orientation) for the default
# split and one single pass.
CASES = [(mode, lay) for mode in MODES for lay in ("rrr", "ccc")] + \
    [(mode, lay) for mode in ("split f16 x3", "tf32") for lay in ("rcr", "crc")]


@pytest.mark.parametrize(("mode", "layouts"), CASES)
def test_odd_batch(mode, layouts):
    names = {"r": "row", "c": "col"}
    lay = f"layout A {names[layouts[0]]}, B {names[layouts[1]]}, C {names[layouts[2]]}"
    check_schedule(f"kernel k {{ dtype f32 precision {mode} {lay} batch {{ {ODD_BATCH} }} }}",
                   tolerance=MODES[mode], beta=0.0)
    check_schedule(f"kernel k {{ dtype f32 precision {mode} {lay} gemm 300 x 259 x 1000 }}",
                   tolerance=MODES[mode], alpha=1.5, beta=-0.5)


def _run(mode: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    import cupy as cp

    m, k = a.shape
    n = b.shape[1]
    prog = gemmc.compile_string(f"kernel k {{ dtype f32 precision {mode} gemm {m} x {n} x {k} }}")
    c = cp.full((m, n), cp.nan, dtype=cp.float32)
    prog["k"]([cp.asarray(a)], [cp.asarray(b)], [c])
    return cp.asnumpy(c)


@pytest.mark.parametrize("mode", ["f16", "split f16 x3 method le", "split f16 x3", "split f16 x4 method markidis"])
def test_outside_f16_range(mode):
    """Rows of A and columns of B scaled by 2^-40..2^40 (f16 holds 6e-5..65504): finite, f32-class accuracy
    per row (the row/column power-of-two scaling of docs/PRECISION.md)."""
    rng = np.random.default_rng(7)
    m, n, k = 131, 67, 301
    a = rng.standard_normal((m, k)) * np.exp2(rng.integers(-40, 41, size=(m, 1)))
    b = rng.standard_normal((k, n)) * np.exp2(rng.integers(-40, 41, size=(1, n)))
    a[3] = 0.0  # an all-zero row keeps scale 1
    a, b = a.astype(np.float32), b.astype(np.float32)
    out = _run(mode, a, b)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.isfinite(out).all()
    # Error relative to each entry's natural size |A_i| |B_j| (rows and columns of very different scales).
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    worst = float(np.max(np.abs(out - ref) / np.where(scale > 0, scale, 1.0)))
    assert worst < (2e-3 if mode == "f16" else 2e-6), worst


@pytest.mark.parametrize("knobs", ["pipeline stages 2", "pipeline stages 3 tile 128x128x32",
                                   "tile 64x64x32", "tile 256x128x32", "tile 128x64x64 pipeline stages 2"])
@pytest.mark.parametrize("mode", ["split f16 x3", "f16"])
def test_tiles_and_stages(mode, knobs):
    """Other instantiations of the main loop than the model's choice: pipeline depth, block and warp tiles, a
    64-wide k-tile; odd sizes so every plane has padding."""
    check_schedule(f"kernel k {{ dtype f32 precision {mode} {knobs} batch {{ {ODD_BATCH} }} }}",
                   tolerance=MODES[mode], alpha=1.5, beta=-0.5)


def test_standalone_launcher(tmp_path):
    """`gemmc compile` output (kernel, pre-pass, the launcher allocating their scratch with cudaMallocAsync),
    built with nvcc into a shared library and called through ctypes on CuPy arrays."""
    import ctypes
    import shutil
    import subprocess

    import cupy as cp

    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc")
    sizes = [(130, 67, 301), (1, 9, 17)]
    batch = " ".join(f"p{i} {m} x {n} x {k}" for i, (m, n, k) in enumerate(sizes))
    cc = cp.cuda.Device().compute_capability  # plan for this GPU: sm_90 is the wgmma loop, older ones mma.sync
    prog = gemmc.compile_string(f"kernel k {{ dtype f32 precision split f16 x3 layout A col, B row, C row "
                                f"batch {{ {batch} }} }}", target=f"sm_{cc}")
    src = tmp_path / "k.cu"
    src.write_text(prog["k"].standalone)
    lib = tmp_path / "libk.so"
    flags = prog["k"].rendered.build_flags  # what `gemmc compile` tells the user (sm_90a for the wgmma loop)
    res = subprocess.run(["nvcc", *flags, "-std=c++17", "-shared", "-Xcompiler", "-fPIC", str(src), "-o",
                          str(lib)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-3000:]
    rng = np.random.default_rng(11)
    a = [rng.standard_normal((m, k)).astype(np.float32) for m, _, k in sizes]
    b = [rng.standard_normal((k, n)).astype(np.float32) for _, n, k in sizes]
    da = [cp.asfortranarray(cp.asarray(x)) for x in a]  # A column-major
    db = [cp.asarray(x) for x in b]
    dc = [cp.full((m, n), cp.nan, dtype=cp.float32) for m, n, _ in sizes]
    ptrs = (ctypes.c_void_p * len(sizes))
    fn = ctypes.CDLL(str(lib)).gemmc_k
    fn.restype = ctypes.c_int
    err = fn(ptrs(*[x.data.ptr for x in da]), ptrs(*[x.data.ptr for x in db]), ptrs(*[x.data.ptr for x in dc]),
             ctypes.c_void_p(cp.cuda.get_current_stream().ptr))
    cp.cuda.get_current_stream().synchronize()
    assert err == 0
    for x, y, z in zip(a, b, dc, strict=True):
        ref = x.astype(np.float64) @ y.astype(np.float64)
        assert np.linalg.norm(cp.asnumpy(z) - ref) / np.linalg.norm(ref) < 1e-5


@pytest.mark.parametrize("mode", ["f16", "split f16 x3"])
@pytest.mark.parametrize("layouts", ["layout A row, B row, C row", "layout A col, B col, C col"])
def test_mma_sync_fallback(mode, layouts):
    """The mma.sync + ldmatrix main loop (sm_80/86/89, and what sm_90 used before wgmma) still runs, here on
    whatever device there is: the schedule targets sm_80."""
    check_schedule(f"target cuda sm_80\nkernel k {{ dtype f32 precision {mode} {layouts} batch {{ {ODD_BATCH} }} }}",
                   tolerance=MODES[mode], alpha=1.5, beta=-0.5)


@pytest.mark.parametrize("mode", ["f16", "split f16 x3", "split bf16 x6"])
@pytest.mark.parametrize("knobs", ["tile 64x64x16", "tile 256x128x32 pipeline stages 2", "tile 128x128x64"])
def test_wgmma_tiles(mode, knobs):
    """wgmma instantiations on sm_90: one warpgroup (64x64, one k16 step per tile), two warpgroups of two m64
    products each (256x128), a 64-wide k-tile; mixed layouts so one operand is K-major and the other MN-major."""
    for lay in ("layout A row, B row, C col", "layout A col, B col, C row"):
        check_schedule(f"target cuda sm_90\nkernel k {{ dtype f32 precision {mode} {knobs} {lay} "
                       f"batch {{ {ODD_BATCH} }} }}", tolerance=MODES[mode], alpha=1.5, beta=-0.5)

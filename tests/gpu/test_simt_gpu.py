"""SIMT family on the GPU: odd sizes, every layout, alpha/beta, f32/f64, explicit tiles, count batches, and the
argument checks. Every run draws fresh random inputs and poisons C with NaN (when beta is 0)."""

from __future__ import annotations

import pytest

import gemmc
from tests.gpu.helpers import LAYOUTS, check_schedule, layout_line

pytestmark = pytest.mark.gpu

ODD_BATCH = """
    one    1 x 1 x 1
    thin   1 x 7 x 13
    tall   13 x 1 x 5
    k1     5 x 3 x 1
    primes 97 x 13 x 251
    inc    196 x 192 x 192
    small  49 x 16 x 7
    near   130 x 131 x 129
    skew   257 x 63 x 31
"""

@pytest.mark.parametrize("layouts", LAYOUTS)
@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_odd_batch_every_layout(dtype, layouts):
    check_schedule(f"kernel k {{ dtype {dtype} {layout_line(layouts)} alpha 1.5 beta 0 batch {{ {ODD_BATCH} }} }}")


@pytest.mark.parametrize("scalars", ["alpha 1 beta 0", "alpha 2.0 beta 0.5", "alpha runtime beta runtime",
                                     "alpha -1 beta runtime"])
def test_alpha_beta(scalars):
    check_schedule(f"kernel k {{ {scalars} batch {{ {ODD_BATCH} }} }}", seed=3)


def test_runtime_beta_zero_never_reads_c():
    # beta passed as 0 at run time: C holds NaN and must not leak into the result.
    check_schedule(f"kernel k {{ alpha runtime beta runtime batch {{ {ODD_BATCH} }} }}", alpha=1.0, beta=0.0)


@pytest.mark.parametrize("tile", ["tile 128x128x8 threads 256", "tile 64x64x8 threads 128",
                                  "tile 32x32x8 threads 64", "tile 48x40x4 threads 64", "tile 16x16x16 threads 32",
                                  "tile 128x64x16 threads 256 pipeline stages 1"])
@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_explicit_tiles(tile, dtype):
    check_schedule(f"kernel k {{ dtype {dtype} {tile} layout A col batch {{ {ODD_BATCH} }} }}", seed=7)


def test_single_large_gemm():
    check_schedule("kernel k { gemm 1031 x 1029 x 1027 }", seed=11)


def test_count_batch_with_3d_arrays():
    import cupy as cp

    k = gemmc.compile_string("kernel k { gemm 33 x 65 x 17 count 5 }")["k"]
    rng = cp.random.default_rng(5)
    A = rng.standard_normal((5, 33, 17), dtype=cp.float32)
    B = rng.standard_normal((5, 17, 65), dtype=cp.float32)
    C = cp.full((5, 33, 65), cp.nan, dtype=cp.float32)
    k(A, B, C)
    ref = cp.matmul(A.astype(cp.float64), B.astype(cp.float64))
    assert float(cp.linalg.norm(C - ref) / cp.linalg.norm(ref)) < 1e-5


def test_torch_tensors_are_accepted():
    torch = pytest.importorskip("torch")
    k = gemmc.compile_string("kernel k { batch { a 37 x 41 x 43  b 5 x 6 x 7 } }")["k"]
    shapes = [(37, 41, 43), (5, 6, 7)]
    As = [torch.randn(m, kk, device="cuda") for m, _, kk in shapes]
    Bs = [torch.randn(kk, n, device="cuda") for _, n, kk in shapes]
    Cs = [torch.full((m, n), float("nan"), device="cuda") for m, n, _ in shapes]
    k(As, Bs, Cs)
    torch.cuda.synchronize()
    for a, b, c in zip(As, Bs, Cs, strict=True):
        ref = a.double() @ b.double()
        assert float((c.double() - ref).norm() / ref.norm()) < 1e-5


@pytest.fixture
def small_kernel():
    return gemmc.compile_string("kernel k { layout B col batch { a 8 x 4 x 6  b 3 x 5 x 2 } }")["k"]


def _arrays(shapes_a, shapes_b, shapes_c, order_b="F", dtype="float32"):
    import cupy as cp

    return ([cp.ones(s, dtype=dtype) for s in shapes_a], [cp.ones(s, dtype=dtype, order=order_b) for s in shapes_b],
            [cp.zeros(s, dtype=dtype) for s in shapes_c])


@pytest.mark.parametrize("mutate, message", [
    (lambda a, b, c: (a, b, c[:1]), "Cs: expected 2 arrays"),
    (lambda a, b, c: ([a[0], a[1].T], b, c), "As[1]"),
    (lambda a, b, c: (a, [b[0].copy(order="C"), b[1]], c), "As[0]" if False else "Bs[0]: the array is row-major"),
    (lambda a, b, c: ([x.astype("float64") for x in a], b, c), "As[0]: expected dtype float32"),
    (lambda a, b, c: (a, b, [c[0][:, ::2], c[1]]), "Cs[0]"),
    (lambda a, b, c: (a, b, [c[0], c[0]]), "Cs[1]: expected shape"),
])
def test_bad_arguments_name_the_argument(small_kernel, mutate, message):
    a, b, c = _arrays([(8, 6), (3, 2)], [(6, 4), (2, 5)], [(8, 4), (3, 5)])
    with pytest.raises(gemmc.GemmcError, match=message.replace("[", r"\[").replace("]", r"\]")):
        small_kernel(*mutate(a, b, c))


def test_baked_scalar_refuses_call_argument(small_kernel):
    a, b, c = _arrays([(8, 6), (3, 2)], [(6, 4), (2, 5)], [(8, 4), (3, 5)])
    with pytest.raises(gemmc.GemmcError, match="alpha: the schedule bakes"):
        small_kernel(a, b, c, alpha=2.0)


def test_host_arrays_are_refused(small_kernel):
    import numpy as np

    with pytest.raises(gemmc.GemmcError, match=r"As\[0\]: expected a GPU array"):
        small_kernel([np.ones((8, 6), "float32")] * 2, [], [])


def test_standalone_launcher_replays_from_a_graph(tmp_path):
    """`gemmc compile` output built with nvcc, its launcher captured once in a CUDA graph and replayed: the pointer
    tables reach the device as kernel arguments (three fill launches for 170 problems), so every replay computes
    every problem again, here with C poisoned between replays."""
    import ctypes
    import shutil
    import subprocess

    import cupy as cp
    import numpy as np

    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc")
    rng = np.random.default_rng(5)
    sizes = [tuple(int(x) for x in rng.integers(1, 70, 3)) for _ in range(170)]
    batch = " ".join(f"p{i} {m} x {n} x {k}" for i, (m, n, k) in enumerate(sizes))
    cc = cp.cuda.Device().compute_capability
    prog = gemmc.compile_string(f"kernel k {{ dtype f32 batch {{ {batch} }} }}", target=f"sm_{cc}")
    src = tmp_path / "k.cu"
    src.write_text(prog["k"].standalone)
    lib = tmp_path / "libk.so"
    res = subprocess.run(["nvcc", *prog["k"].rendered.build_flags, "-std=c++17", "-shared", "-Xcompiler", "-fPIC",
                          str(src), "-o", str(lib)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-3000:]
    a = [cp.asarray(rng.standard_normal((m, k)), dtype=cp.float32) for m, _, k in sizes]
    b = [cp.asarray(rng.standard_normal((k, n)), dtype=cp.float32) for _, n, k in sizes]
    c = [cp.empty((m, n), dtype=cp.float32) for m, n, _ in sizes]
    ptrs = ctypes.c_void_p * len(sizes)
    fn = ctypes.CDLL(str(lib)).gemmc_k
    fn.restype = ctypes.c_int
    stream = cp.cuda.Stream(non_blocking=True)
    args = [ptrs(*[x.data.ptr for x in arrays]) for arrays in (a, b, c)]
    assert fn(*args, ctypes.c_void_p(stream.ptr)) == 0  # loads the module's kernels before the capture
    with stream:
        stream.begin_capture()
        err = fn(*args, ctypes.c_void_p(stream.ptr))
        graph = stream.end_capture()
    assert err == 0
    for _ in range(2):
        for x in c:
            x.fill(cp.nan)
        cp.cuda.Device().synchronize()  # the fills ran on the default stream, the replay runs on `stream`
        graph.launch(stream)
        stream.synchronize()
        for x, y, z in zip(a, b, c, strict=True):
            ref = cp.asnumpy(x).astype(np.float64) @ cp.asnumpy(y).astype(np.float64)
            assert np.linalg.norm(cp.asnumpy(z) - ref) / np.linalg.norm(ref) < 1e-5

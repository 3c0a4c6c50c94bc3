"""`gemmc run --check`: random inputs, NaN-poisoned outputs, float64 reference, time per call."""

from __future__ import annotations

from typing import Any, Protocol

from gemmc.ir.nodes import Kernel
from gemmc.ir.types import Layout
from gemmc.runtime.args import NUMPY_DTYPES, operands
from gemmc.runtime.device import cupy, device_name
from gemmc.runtime.reference import errors, reference


class Runnable(Protocol):
    """What the checks run: a planned kernel called as a user calls one (`gemmc.CompiledKernel`)."""

    @property
    def ir(self) -> Kernel: ...

    @property
    def name(self) -> str: ...

    def __call__(self, As: Any, Bs: Any, Cs: Any, *, alpha: float | None = None, beta: float | None = None,
                 stream: Any = None) -> None: ...


def random_matrix(shape: tuple[int, int], layout: Layout, dtype: str, rng: Any) -> Any:
    """Uniform [-1, 1) in `dtype` and `layout`: a CuPy array, or a torch tensor for bfloat16 (CuPy has none)."""
    cp = cupy()
    data = rng.uniform(-1.0, 1.0, size=shape)
    if dtype == "bfloat16":
        import torch

        t = torch.from_dlpack(data.astype(cp.float32)).to(torch.bfloat16)
        return t if layout is Layout.ROW else t.t().contiguous().t()
    data = data.astype(dtype)
    return cp.ascontiguousarray(data) if layout is Layout.ROW else cp.asfortranarray(data)


def as_cupy(x: Any) -> Any:
    """A CuPy view (or, for a bfloat16 tensor, an exact float32 copy) of a matrix random_matrix made."""
    if type(x).__module__.split(".")[0] == "torch":
        return cupy().from_dlpack(x.float() if str(x.dtype) == "torch.bfloat16" else x)
    return x


def _copy(x: Any) -> Any:
    return x.clone() if type(x).__module__.split(".")[0] == "torch" else x.copy()


def random_batch(kernel: Runnable, seed: int = 0, poison: bool = True) -> tuple[list, list, list]:
    """Fresh uniform [-1, 1) inputs in the kernel's layouts; C filled with NaN when beta is 0 (a kernel that
    forgets an element leaves a NaN), else random."""
    cp = cupy()
    rng = cp.random.default_rng(seed)
    dtype, c_dtype = NUMPY_DTYPES[kernel.ir.dtype], NUMPY_DTYPES[kernel.ir.c_dtype]
    As, Bs, Cs = [], [], []
    for i in range(kernel.ir.batch_size):
        a, b, c = operands(kernel.ir, i)
        As.append(random_matrix(a.shape, a.layout, dtype, rng))
        Bs.append(random_matrix(b.shape, b.layout, dtype, rng))
        C = random_matrix(c.shape, c.layout, c_dtype, rng)
        if poison and kernel.ir.beta == 0.0:
            if hasattr(C, "fill_"):
                C.fill_(float("nan"))
            else:
                C.fill(cp.nan)
        Cs.append(C)
    return As, Bs, Cs


def time_calls(fn, calls: int = 100, windows: int = 7) -> float:
    """Median over `windows` of the mean device time (seconds) of `calls` back-to-back calls, after warm-up."""
    cp = cupy()
    fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(windows):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(calls):
            fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3 / calls)
    times.sort()
    return times[len(times) // 2]


def sgemm_errors(As: list, Bs: list, C0: list, alpha: float, beta: float) -> dict[str, float]:
    """The worst errors of cuBLAS SGEMM (CuPy's f32 matmul, TF32 off by default) on the same inputs: the yardstick
    a tensor-core precision is compared with (issue 4)."""
    worst: dict[str, float] = {"rel_fro": 0.0, "max_abs": 0.0, "mred": 0.0, "nonfinite": 0}
    for a, b, c0 in zip(As, Bs, C0, strict=True):
        s = alpha * (a @ b)
        if beta != 0:
            s = s + beta * c0
        e = errors(s, reference(a, b, c0, alpha, beta))
        for key in worst:
            worst[key] = max(worst[key], e[key])
    return worst


def check_kernel(kernel: Runnable, *, seed: int = 0, alpha: float = 1.0, beta: float = 0.0,
                 time_it: bool = True) -> dict[str, Any]:
    """Run once against float64 and (optionally) time it. Returns the worst errors over the batch."""
    ir = kernel.ir
    As, Bs, Cs = random_batch(kernel, seed)
    C0 = [_copy(c) for c in Cs]
    kw: dict[str, Any] = {}
    if ir.alpha is None:
        kw["alpha"] = alpha
    if ir.beta is None:
        kw["beta"] = beta
    a_used = ir.alpha if ir.alpha is not None else alpha
    b_used = ir.beta if ir.beta is not None else beta
    kernel(As, Bs, Cs, **kw)
    worst: dict[str, float] = {"rel_fro": 0.0, "max_abs": 0.0, "mred": 0.0, "nonfinite": 0}
    for a, b, c0, c in zip(As, Bs, C0, Cs, strict=True):
        e = errors(as_cupy(c), reference(as_cupy(a), as_cupy(b), as_cupy(c0), a_used, b_used))
        for key in worst:
            worst[key] = max(worst[key], e[key]) if e[key] == e[key] else float("nan")
    result: dict[str, Any] = {"kernel": kernel.name, "device": device_name(), "errors": worst,
                              "gflop": ir.flops / 1e9}
    if ir.dtype.value == "f32" and ir.precision is not None and ir.precision.compute.value not in ("f32", "f64"):
        result["sgemm_errors"] = sgemm_errors(As, Bs, C0, a_used, b_used)
    if time_it:
        seconds = time_calls(lambda: kernel(As, Bs, Cs, **kw))
        result["seconds"] = seconds
        result["tflops"] = ir.flops / seconds / 1e12
    return result

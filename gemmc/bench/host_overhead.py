"""Host time of a plain Python call of a compiled irregular kernel, and where it goes (cProfile).

    python -m gemmc.bench host_overhead [--profile]   # bench/results/host_overhead/<date>_devhost.{json,txt}
    python -m gemmc.bench host_overhead --gpu         # GPU machine: bench/results/host_overhead/<date>_<gpu>.*

Without --gpu no device is needed: gemmc.runtime's launch path gets a stand-in `cupy` module (numpy tables, a launch
that does nothing), and the arrays are stand-ins of the three kinds a call takes, read the way gemmc reads the real
ones: CuPy-like (attributes; shape and strides build a new tuple on every read, as CuPy's do), torch-like
(methods) and __cuda_array_interface__ objects (a new dict on every read). Their getters are Python code, so a
library's own getters cost more or less than these; what is measured is gemmc's side of the call (the checks, the
pointer-table cache, the re-planning path), not NVRTC or a real launch. The wall time of a window counts time
another process held the core (the development host is shared), the CPU time does not: both are written.
With --gpu the same cases run with real CuPy arrays and torch tensors, synchronising after each window.

Cases: all 34 Inception GEMMs and the 1024-GEMM batch (M, N, K <= 512) of the irregular suite, each as compiled
(the schedule's sizes), as a re-planned call (a kernel compiled for other sizes, plan cache warm: the cost of
every call after the first), and "reads only": the library getters any check must call, and nothing else. Time
per call: median of 7 windows of `calls` calls, after one warm-up call.
"""

from __future__ import annotations

import cProfile
import io
import json
import os
import platform
import pstats
import statistics
import time
import types
from collections.abc import Callable
from datetime import date
from typing import Any

from gemmc.bench import harness, irregular

# the columns of its table (and of `gemmc bench report`'s)
COLUMNS = ("case", "arrays", "mode", "host_us", "cpu_us", "cpu_us_min", "cpu_us_per_array")

WINDOWS = 7  # the protocol's median of 7; the minimum is written too (this host is shared)


# --- stand-ins (no GPU) -------------------------------------------------------------------------------------------

class _Pointer:
    __slots__ = ("ptr", "device_id")

    def __init__(self, ptr: int):
        self.ptr, self.device_id = ptr, 0


class _Next:
    address = 1 << 24


def _address(nbytes: int) -> int:
    """A fresh allocation of `nbytes` (gemmc refuses outputs that overlap anything)."""
    address = _Next.address
    _Next.address += (nbytes + 511) // 256 * 256
    return address


def _c_or_f_strides(shape: tuple[int, ...], item: int, order: str) -> tuple[int, int]:
    return (shape[1] * item, item) if order == "C" else (item, shape[0] * item)


class FakeCupyArray:
    """What gemmc reads of a cupy.ndarray: data (.ptr, .device_id), shape, strides (bytes), dtype, itemsize. Like
    CuPy's, shape and strides are properties that build a new tuple on every read."""

    __slots__ = ("data", "_shape", "_strides", "dtype", "itemsize")

    def __init__(self, shape: tuple[int, int], order: str = "C"):
        import numpy as np

        self.dtype = np.dtype("float32")
        self.itemsize = 4
        self._shape = list(shape)
        self._strides = list(_c_or_f_strides(tuple(shape), 4, order))
        self.data = _Pointer(_address(shape[0] * shape[1] * 4))

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._shape)

    @property
    def strides(self) -> tuple[int, ...]:
        return tuple(self._strides)


FakeCupyArray.__module__ = "cupy"  # gemmc takes the CuPy path by the class's module, as for cupy.ndarray


class _TorchDtype:
    def __str__(self) -> str:
        return "torch.float32"


class FakeTensor:
    """What gemmc reads of a torch.Tensor on the GPU (methods, strides in elements; new tuples on every read)."""

    __slots__ = ("_ptr", "_shape", "_stride", "dtype")
    DTYPE = _TorchDtype()
    is_cuda = True
    requires_grad = False

    def __init__(self, shape: tuple[int, int], order: str = "C"):
        self._shape = list(shape)
        self._stride = list(_c_or_f_strides(tuple(shape), 1, order))
        self._ptr = _address(shape[0] * shape[1] * 4)
        self.dtype = self.DTYPE

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._shape)

    def data_ptr(self) -> int:
        return self._ptr

    def stride(self) -> tuple[int, ...]:
        return tuple(self._stride)

    def element_size(self) -> int:
        return 4

    def get_device(self) -> int:
        return 0


FakeTensor.__name__ = "Tensor"
FakeTensor.__module__ = "torch"


class FakeInterface:
    """A __cuda_array_interface__ (version 3) built on every read as CuPy and numba do; strides None for C order."""

    __slots__ = ("_shape", "_strides", "_ptr")

    def __init__(self, shape: tuple[int, int], order: str = "C"):
        self._shape = list(shape)
        self._strides = None if order == "C" else list(_c_or_f_strides(tuple(shape), 4, order))
        self._ptr = _address(shape[0] * shape[1] * 4)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {"shape": tuple(self._shape), "typestr": "<f4",
                "strides": None if self._strides is None else tuple(self._strides), "data": (self._ptr, False),
                "version": 3}


class _FakeFunction:
    num_regs, max_threads_per_block, max_dynamic_shared_size_bytes = 128, 1024, 0

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        pass


def install_fake_cupy() -> None:
    """A `cupy` module with what gemmc.runtime.launch and .executable use, numpy behind it; the device is an H100
    (sm_90)."""
    import numpy as np

    from gemmc.ir.hardware import TARGETS
    from gemmc.runtime import executable, launch

    cp = types.ModuleType("cupy")
    for name in ("int32", "int64", "uint8", "uint64", "float32", "float64", "asarray", "empty"):
        setattr(cp, name, getattr(np, name))
    stream = object()
    setattr(cp, "cuda", types.SimpleNamespace(runtime=types.SimpleNamespace(getDevice=lambda: 0, is_hip=False),  # noqa: B010
                                              get_current_stream=lambda: stream))
    setattr(cp, "ndarray", FakeCupyArray)  # noqa: B010
    os.environ.setdefault("GEMMC_TUNE", "0")  # the stand-in cannot time `tile auto`'s alternatives
    launch.cupy = executable.cupy = lambda: cp
    setattr(executable, "hardware", lambda: TARGETS["sm_90"])  # noqa: B010
    executable.device_function = lambda rendered, entry: _FakeFunction()


def fake_batch(kind: str, kernel: Any, shapes: list[tuple[int, int, int]]) -> tuple[list, list, list]:
    make = {"cupy": FakeCupyArray, "torch": FakeTensor, "cai": FakeInterface}[kind]
    ir = kernel.ir
    a, b, c = ("C" if layout.value == "row" else "F" for layout in (ir.layout_a, ir.layout_b, ir.layout_c))
    return ([make((m, k), a) for m, n, k in shapes], [make((k, n), b) for m, n, k in shapes],
            [make((m, n), c) for m, n, k in shapes])


# --- real arrays (GPU) --------------------------------------------------------------------------------------------

def gpu_batch(kind: str, kernel: Any, shapes: list[tuple[int, int, int]]) -> tuple[list, list, list]:
    import cupy as cp

    rng = cp.random.default_rng(0)
    As = [rng.standard_normal((m, k), dtype=cp.float32) for m, n, k in shapes]
    Bs = [rng.standard_normal((k, n), dtype=cp.float32) for m, n, k in shapes]
    Cs = [cp.zeros((m, n), dtype=cp.float32) for m, n, k in shapes]
    if kind == "torch":
        import torch

        return tuple([torch.as_tensor(x, device="cuda") for x in group] for group in (As, Bs, Cs))  # type: ignore
    return As, Bs, Cs


def _reads(read: Callable[[list], Any]) -> Callable[[list, list, list], Any]:
    return lambda As, Bs, Cs: (read(As), read(Bs), read(Cs))


# What any check of the arguments has to read of each array (the library's getters, one comprehension each): the
# floor of a call's host time, written as the mode "reads only".
READS = {
    "cupy": _reads(lambda g: ([x.data.ptr for x in g], [x.shape for x in g], [x.strides for x in g],
                              [x.dtype for x in g], [x.data.device_id for x in g])),
    "torch": _reads(lambda g: ([x.data_ptr() for x in g], [x.shape for x in g], [x.stride() for x in g],
                               [x.dtype for x in g], [x.get_device() for x in g])),
    "cai": _reads(lambda g: [x.__cuda_array_interface__ for x in g]),
}


def per_call(fn: Callable[[], Any], calls: int, sync: Callable[[], Any]) -> tuple[float, list[float]]:
    """Median over windows of the wall time per call, and this process's CPU time per call in each window (the
    development host is shared: CPU time does not count the time another process held the core)."""
    fn()
    sync()
    wall, cpu = [], []
    for _ in range(WINDOWS):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(calls):
            fn()
        sync()
        wall.append((time.perf_counter() - t0) / calls)
        cpu.append((time.process_time() - c0) / calls)
    return statistics.median(wall), cpu


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser("host_overhead", __doc__)
    parser.add_argument("--gpu", action="store_true", help="real CuPy arrays and torch tensors on the GPU")
    parser.add_argument("--profile", action="store_true", help="cProfile each case (top functions in the .txt)")
    parser.add_argument("--kinds", default="cupy,torch,cai")
    opts = parser.parse_args(argv)
    if not opts.gpu:
        install_fake_cupy()
    import gemmc

    if opts.gpu:
        import cupy as cp

        sync: Callable[[], Any] = cp.cuda.Device().synchronize
        make = gpu_batch
    else:
        sync, make = (lambda: None), fake_batch
    cases = dict(irregular.inception_cases() + irregular.random_cases(False))
    wanted = [("inception-all (34)", 34), ("random MN<=512 K<=512 x1024", 1024)]
    other = gemmc.compile_file(harness.example("inception3.gs"))["inception3"]  # planned for other sizes
    rows, text = [], io.StringIO()
    for name, batch in harness.progress(wanted, "host_overhead"):
        shapes = cases[name]
        compiled = gemmc.compile_string(irregular.schedule(shapes, "auto"))["irregular"]
        calls = max(20, 20000 // batch)
        for kind in opts.kinds.split(","):
            if opts.gpu and kind == "cai":
                continue
            for mode, kernel in (("compiled", compiled), ("replanned", other), ("reads only", READS[kind])):
                As, Bs, Cs = make(kind, compiled, shapes)

                def fn(k: Any = kernel, a: list = As, b: list = Bs, c: list = Cs) -> None:
                    k(a, b, c)

                wall, cpu = per_call(fn, calls, sync)
                median = statistics.median(cpu)
                row = {"case": name, "batch": batch, "arrays": kind, "mode": mode, "host_us": wall * 1e6,
                       "cpu_us": median * 1e6, "cpu_us_min": min(cpu) * 1e6,
                       "cpu_us_per_array": median * 1e6 / (3 * batch), "calls": calls}
                rows.append(row)
                line = f"{name:30s} {kind:6s} {mode:10s} wall {row['host_us']:9.1f} us/call, " \
                       f"CPU {row['cpu_us']:9.1f} (min {row['cpu_us_min']:9.1f}) us/call " \
                       f"({row['cpu_us_per_array']:.3f} us per array)"
                harness.log(line)
                text.write(line + "\n")
                if opts.profile:
                    prof = cProfile.Profile()
                    prof.enable()
                    for _ in range(calls):
                        fn()
                    prof.disable()
                    stream = io.StringIO()
                    pstats.Stats(prof, stream=stream).sort_stats("tottime").print_stats(14)
                    stats = stream.getvalue()
                    text.write(stats[stats.index("   ncalls"):] + "\n")
    if opts.gpu:
        from gemmc.runtime.device import device_name

        gpu = device_name()
    else:
        gpu = "devhost"
    out = harness.results_path(opts.out, "host_overhead", gpu, date.today().isoformat(), opts.tag)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"suite": "host_overhead", "gpu": gpu, "host": platform.processor() or platform.machine(),
            "python": platform.python_version(), "windows": WINDOWS, "rows": rows}
    out.with_suffix(".json").write_text(json.dumps(meta, indent=1) + "\n")
    out.with_suffix(".txt").write_text(text.getvalue())
    harness.table(rows, COLUMNS,
                  "host_overhead")
    print(f"wrote {out.with_suffix('.json')}")


if __name__ == "__main__":
    main()

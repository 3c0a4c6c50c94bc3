"""Launch a kernel whose batch is sized at run time (the dynamic family): argument checks, the persistent grid, one
launch. The grouped forms never synchronise and never allocate per call, so a call can be captured in a CUDA graph
and the graph replayed with other group ends; the list form writes its problem table to the device as data
(runtime/dynamic_list.py). Nothing here plans, tunes or compiles after a kernel's first call (gemmc.stats()).

Host time per call is the checks (a few attribute reads per argument), a dictionary look-up for the stream and the
launch itself (gemmc/bench/dynamic.py measures it).
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from gemmc.errors import GemmcError
from gemmc.families.dynamic.plan import DynamicPlan
from gemmc.ir.dynamic import INT32_MAX, Grouping
from gemmc.ir.types import Layout
from gemmc.model.tlp import occupancy
from gemmc.runtime.args import NUMPY_DTYPES, ArrayInfo, check_array, describe
from gemmc.runtime.compile import check_threads, device_function
from gemmc.runtime.device import cupy, hardware
from gemmc.runtime.dynamic_state import DynamicState, zeroed_counters
from gemmc.runtime.launcher import Launcher
from gemmc.runtime.streams import is_torch, launch_stream, load_outside_capture

if TYPE_CHECKING:
    from gemmc.runtime.executable import Executable



def dynamic_plan(kernel: Executable) -> DynamicPlan:
    return kernel.ir.plan_as(DynamicPlan, "runtime.dynamic")


def blocks_per_sm(fn: Any, block: int, smem: int, static_smem: int) -> int:
    """Resident blocks per SM of the loaded kernel: the driver's occupancy calculator, else the model of
    gemmc/model/tlp.py with the compiled kernel's registers."""
    try:
        from cupy.cuda import driver  # type: ignore[import-not-found]

        found = int(driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.kernel.ptr, block, smem))
        if found > 0:
            return found
    except Exception:  # noqa: BLE001 - a CuPy without the binding (or HIP): the model gives the same figure
        pass
    return occupancy(hardware(), block, fn.num_regs, smem + static_smem).blocks_per_sm


PROGRESS_AFTER = 1.0  # seconds: a first call still compiling by then says so on stderr


def compiled(kernel: Executable, entry: str) -> Any:
    """`entry` of the kernel's source, loaded; a compile that takes longer than PROGRESS_AFTER says so."""
    timer = threading.Timer(PROGRESS_AFTER, lambda: print(
        f"gemmc: compiling kernel '{kernel.name}' for this GPU (its first call; the binary is cached on disk for "
        "later processes) ...", file=sys.stderr, flush=True))
    timer.start()
    try:
        return device_function(kernel.rendered, entry)
    finally:
        timer.cancel()


def state(kernel: Executable) -> DynamicState:
    """The kernel's DynamicState, kept on its Executable (`Executable.dynamic`): loaded on the first call."""
    found: DynamicState | None = kernel.dynamic
    if found is None:
        plan = dynamic_plan(kernel)
        rendered = kernel.rendered
        fn = compiled(kernel, rendered.entry)
        smem = plan.tile_smem
        hw = hardware()
        static = getattr(fn, "shared_size_bytes", plan.sched_smem)
        if smem + static > hw.smem_per_block_default:  # the scheduler's static arrays count against the default too
            fn.max_dynamic_shared_size_bytes = smem
        check_threads(fn, kernel.name, plan.threads)
        validate = (compiled(kernel, rendered.entry + "_validate")
                    if plan.grouping is not Grouping.LIST else None)
        grid = hw.sm_count * max(1, blocks_per_sm(fn, plan.threads, smem, static))
        threshold = plan.threshold(grid)
        dyn = kernel.ir.dynamic
        assert dyn is not None
        found = DynamicState(kernel.name, fn, validate, grid, threshold, smem, plan.threads,
                             tuple(np.int64(x) for x in (dyn.m, dyn.n, dyn.k, threshold)))
        found.baked = kernel.ir.alpha is not None and kernel.ir.beta is not None
        found.counters = zeroed_counters()
        scalar = ctypes.c_double if kernel.ir.dtype.value == "f64" else ctypes.c_float
        ptr, i64 = ctypes.c_uint64, ctypes.c_int64
        try:
            found.fast = Launcher(fn, [t() for t in (ptr, ptr, ptr, ptr, ptr, ctypes.c_int32, i64, i64, i64, i64, i64,
                                                     ptr, scalar, scalar)], counter=11)
            for index, value in enumerate((dyn.m, dyn.n, dyn.k, threshold), start=7):
                found.fast.set(index, value)
            if found.baked:  # the kernel ignores them; stored once
                found.fast.set(12, 0.0)
                found.fast.set(13, 0.0)
        except (ImportError, AttributeError):
            found.fast = None
        kernel.dynamic = found
    return found


def _dense(info: ArrayInfo, want: tuple[int, ...]) -> bool:
    """Strides (elements) as `want` wherever the extent exceeds 1 (torch reports any stride for extents of 1); an
    empty array holds nothing to misread."""
    return 0 in info.shape or all(s == w or e <= 1 for s, w, e in zip(info.strides, want, info.shape, strict=True))


def _matrix(rows: int, cols: int, layout: Layout) -> tuple[int, int]:
    return (cols, 1) if layout is Layout.ROW else (1, rows)


def _layout_hint(name: str, layout: Layout) -> str:
    return f"densely packed {layout.value}-major (the schedule's `layout {name} {layout.value}`)"


def operand(obj: Any, name: str, dtype: str, device: int, ndim: int, what: str) -> ArrayInfo:
    """The checked description of one argument: a GPU array of the schedule's dtype, on the current device."""
    info = describe(obj, name)
    check_array(info, name, ndim, dtype, device, what)
    return info


def matrix(obj: Any, name: str, dtype: str, device: int, shape: tuple[int | None, int | None], layout: Layout,
           what: str) -> ArrayInfo:
    """A 2-D operand of `shape` (None: any extent) densely packed in `layout`."""
    info = operand(obj, name, dtype, device, 2, what)
    rows, cols = info.shape
    if any(want is not None and got != want for got, want in zip((rows, cols), shape, strict=True)):
        raise GemmcError(f"{name}: expected shape ({what}), got {tuple(info.shape)}")
    if not _dense(info, _matrix(rows, cols, layout)):
        raise GemmcError(f"{name}: expected a {_layout_hint(name, layout)} array, got element strides "
                         f"{tuple(info.strides)}")
    return info


def stacked(obj: Any, name: str, dtype: str, device: int, groups: int, rows: int, cols: int, layout: Layout,
            what: str) -> ArrayInfo:
    """A 3-D operand of `groups` matrices rows x cols, each densely packed in `layout`, one after another. A
    column-major one may also come as groups x cols x rows in C order (the same memory)."""
    info = operand(obj, name, dtype, device, 3, what)
    g, r, c = info.shape
    size = rows * cols
    if (g, r, c) == (groups, rows, cols) and _dense(info, (size, *_matrix(rows, cols, layout))):
        return info
    if layout is Layout.COL and (g, r, c) == (groups, cols, rows) and _dense(info, (size, rows, 1)):
        return info
    if (g, r, c) not in ((groups, rows, cols), (groups, cols, rows)):
        raise GemmcError(f"{name}: expected shape ({what}), got {tuple(info.shape)}")
    raise GemmcError(f"{name}: expected {groups} matrices {rows} x {cols}, each {_layout_hint(name, layout)}, got "
                     f"element strides {tuple(info.strides)}")


def ends(obj: Any, device: int, max_groups: int) -> ArrayInfo:
    """The group ends: a 1-D int32 GPU array of at most max_groups entries."""
    if obj is None:
        raise GemmcError("offsets: a grouped kernel needs the cumulative group ends: k(A, B, C, offsets=ends)")
    info = describe(obj, "offsets")
    if info.ndim != 1 or info.dtype != "int32":
        convert = " (torch: `ends.to(torch.int32)`; torch.cumsum returns int64)" if info.dtype == "int64" else ""
        raise GemmcError(f"offsets: expected a 1-D int32 array of cumulative group ends, got {info.dtype} with "
                         f"shape {tuple(info.shape)}{convert}")
    if info.device is not None and info.device != device:
        raise GemmcError(f"offsets: lives on GPU {info.device}, but the current device is GPU {device}")
    if info.shape[0] > max_groups:
        raise GemmcError(f"offsets: {info.shape[0]} groups, but the schedule allows at most {max_groups}")
    if info.shape[0] > 1 and info.strides[0] != 1:
        raise GemmcError(f"offsets: expected a contiguous array, got element stride {info.strides[0]}")
    return info


def grouped_operands(kernel: Executable, A: Any, B: Any, C: Any, offsets: Any, device: int
                     ) -> tuple[int, int, int, int, int, int]:
    """Check a grouped call; return (A, B, C, ends) pointers, the group count and the rows."""
    ir = kernel.ir
    dyn = ir.dynamic
    assert dyn is not None
    dtype, c_dtype = NUMPY_DTYPES[ir.dtype], NUMPY_DTYPES[ir.c_dtype]
    o = ends(offsets, device, dyn.max_groups)
    groups = o.shape[0]
    if dyn.grouping is Grouping.M:
        n, k = dyn.n, dyn.k
        a = matrix(A, "A", dtype, device, (None, k), ir.layout_a, f"rows x {k}: the groups' rows stacked")
        rows = a.shape[0]
        b = stacked(B, "B", dtype, device, groups, k, n, ir.layout_b, f"{groups} x {k} x {n}: one matrix per group")
        c = matrix(C, "C", c_dtype, device, (rows, n), ir.layout_c, f"{rows} x {n}: the rows of A")
        writable(c)
        if (rows // min_tile(kernel) + groups) * -(-n // min_tile(kernel)) > INT32_MAX:
            raise GemmcError(f"A: {rows} rows give more tiles than the int32 tile numbering holds")
    else:
        m, n = dyn.m, dyn.n
        a = matrix(A, "A", dtype, device, (m, None), ir.layout_a, f"{m} x rows: the groups' reduction side by side")
        rows = a.shape[1]
        b = matrix(B, "B", dtype, device, (rows, n), ir.layout_b, f"{rows} x {n}: the reduction rows of A")
        c = stacked(C, "C", c_dtype, device, groups, m, n, ir.layout_c, f"{groups} x {m} x {n}: one matrix per group")
        writable(c)
    if rows > dyn.max_rows:
        raise GemmcError(f"A: {rows} rows, but the schedule allows at most {dyn.max_rows} (`rows` in the schedule)")
    return a.ptr, b.ptr, c.ptr, o.ptr, groups, rows


def writable(c: ArrayInfo) -> None:
    if c.readonly:
        raise GemmcError(f"C: {c.readonly}")


def min_tile(kernel: Executable) -> int:
    return dynamic_plan(kernel).min_tile


def check_ends(st: DynamicState, ptr: int, groups: int, rows: int, stream: Any) -> None:
    """validate=True: the ends checked on the device, read back (a synchronisation), a GemmcError naming the first
    bad group."""
    cp = cupy()
    if st.workspace is None:
        st.workspace = cp.zeros(4, dtype=cp.int32)
    st.validate((1, 1, 1), (256, 1, 1), (np.uint64(ptr), np.int32(groups), np.int64(rows), st.workspace),
                stream=stream)
    bad, why, end, prev = (int(x) for x in st.workspace.get(stream=stream))
    if bad >= 0:
        detail = {1: f"{end} is negative", 2: f"{end} is below offsets[{bad - 1}] = {prev}",
                  3: f"{end} is past the {rows} rows"}[why]
        raise GemmcError(f"offsets[{bad}] = {detail}: group ends must be cumulative, from 0 to at most the rows "
                         f"(group {bad} is the first bad one)")


def _torch_key(A: Any, B: Any, C: Any, offsets: Any) -> tuple:
    """What the checks of a grouped call read of torch tensors, in one tuple, the library and the current device first:
    a call with the same tuple passes the same checks (device, dtypes, shapes, strides, addresses, whether C requires
    grad)."""
    return ("torch", _torch_device(), A.data_ptr(), A.shape, A.stride(), A.dtype, A.get_device(), B.data_ptr(), B.shape,
            B.stride(), B.dtype, B.get_device(), C.data_ptr(), C.shape, C.stride(), C.dtype, C.get_device(),
            C.requires_grad, offsets.data_ptr(), offsets.shape, offsets.stride(), offsets.dtype, offsets.get_device())


def _cupy_key(A: Any, B: Any, C: Any, offsets: Any) -> tuple:
    return ("cupy", cupy().cuda.runtime.getDevice(), A.data.ptr, A.shape, A.strides, A.dtype, A.data.device_id,
            B.data.ptr, B.shape, B.strides, B.dtype, B.data.device_id, C.data.ptr, C.shape, C.strides, C.dtype,
            C.data.device_id, offsets.data.ptr, offsets.shape, offsets.strides, offsets.dtype, offsets.data.device_id)


_TORCH: list[Any] = []  # torch's current-device and current-stream functions, looked up once


def _torch_device() -> int:
    if not _TORCH:
        import torch

        _TORCH.extend((torch._C._cuda_getDevice, torch._C._cuda_getCurrentRawStream))
    return _TORCH[0]()


def _quick(st: DynamicState, A: Any, B: Any, C: Any, offsets: Any, alpha: float | None, beta: float | None,
           stream: Any) -> tuple[tuple, Callable[[], int]] | None:
    """The quick path's key for a call, and how to read the stream it launches on, or None where a call always takes
    the full checks: alpha, beta or a stream given, scalars not baked, no ctypes launcher, or arguments that are not
    torch tensors or CuPy arrays alike."""
    if st.fast is None or not st.baked or alpha is not None or beta is not None or stream is not None:
        return None
    key = call_key(A, B, C, offsets)
    return None if key is None else (key, lambda: current_stream(key))


def call_key(A: Any, B: Any, C: Any, offsets: Any) -> tuple | None:
    """What the checks of a grouped call read of its arguments, in one tuple (the library, then the current device
    first): a call with the same tuple passes the same checks. None where the arguments are not torch tensors or CuPy
    arrays alike (such calls always take the full checks)."""
    a, o = type(A).__module__, type(offsets).__module__
    if a == "torch" == o:
        return _torch_key(A, B, C, offsets)
    if a.startswith("cupy") and o.startswith("cupy"):
        return _cupy_key(A, B, C, offsets)
    return None


def current_stream(key: tuple) -> int:
    """The raw handle of the stream a call of `call_key`'s `key` launches on without a stream given: torch's current
    stream on the key's device for torch tensors (where torch.cuda.graph captures), else CuPy's."""
    return _TORCH[1](key[1]) if key[0] == "torch" else cupy().cuda.get_current_stream().ptr


SEEN = 64  # checked argument sets a kernel remembers (the buffers a training loop cycles through)


def launch_dynamic(kernel: Executable, As: Any, Bs: Any, Cs: Any, *, offsets: Any, alpha: float | None,
                   beta: float | None, stream: Any, validate: bool) -> None:
    """C = alpha A B + beta C over a batch sized at run time, in one launch (CompiledKernel.__call__ passes its
    Executable).

    The quick path (the host time per call): a grouped call of torch tensors or CuPy arrays on the default stream
    whose arguments' metadata (addresses, shapes, strides, dtypes, devices) equal those of a call already checked
    launches with that call's values, after reading the metadata once; anything else takes the full checks."""
    st = kernel.dynamic or load_outside_capture(kernel, state, stream, is_torch(As))
    quick = _quick(st, As, Bs, Cs, offsets, alpha, beta, stream) if not validate else None
    if quick is not None and st.fast is not None:  # (_quick found st.fast; said again for the type checker)
        key, current = quick
        values = st.seen.get(key)
        if values is not None:
            handle = current()
            st.fast(st.grid, st.block, st.smem, handle, values, st.launch_counter(handle))
            return
    _launch_checked(kernel, st, As, Bs, Cs, offsets=offsets, alpha=alpha, beta=beta, stream=stream,
                    validate=validate)


def _launch_checked(kernel: Executable, st: DynamicState, As: Any, Bs: Any, Cs: Any, *, offsets: Any,
                    alpha: float | None, beta: float | None, stream: Any, validate: bool) -> None:
    """Every check, then the launch; a grouped call of torch tensors or CuPy arrays is remembered for the quick
    path."""
    from gemmc.runtime.launch import scalars

    cp = cupy()
    alpha_, beta_ = scalars(kernel, alpha, beta)
    device = cp.cuda.runtime.getDevice()
    torch_args = is_torch(As)
    if dynamic_plan(kernel).grouping is Grouping.LIST:
        from gemmc.runtime.dynamic_list import launch_list, list_arguments

        list_arguments(offsets)
        launch_list(kernel, st, As, Bs, Cs, alpha_, beta_, launch_stream(stream, torch_args), device, exact=validate)
        return
    pa, pb, pc, po, groups, rows = grouped_operands(kernel, As, Bs, Cs, offsets, device)
    on = launch_stream(stream, torch_args)
    if validate:
        check_ends(st, po, groups, rows, on)
    if groups == 0:
        return
    values = (pa, pb, pc, po, 0, groups, rows)
    if st.fast is not None:
        quick = _quick(st, As, Bs, Cs, offsets, alpha, beta, stream)
        if quick is not None:
            if len(st.seen) >= SEEN:
                st.seen.clear()
            st.seen[quick[0]] = values
        st.fast(st.grid, st.block, st.smem, on.ptr, values, st.launch_counter(on.ptr),
                (float(alpha_), float(beta_)))
        return
    st.fn((st.grid, 1, 1), (st.block, 1, 1),
          (np.uint64(pa), np.uint64(pb), np.uint64(pc), np.uint64(po), np.uint64(0), np.int32(groups),
           np.int64(rows), *st.sizes, np.uint64(st.launch_counter(on.ptr)), alpha_, beta_), shared_mem=st.smem,
          stream=on)

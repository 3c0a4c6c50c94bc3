"""Launch a `grouped M` or `grouped K` kernel of half storage (the hopper_grouped family): argument checks, the tensor
maps, one persistent launch. As the dynamic family's grouped calls (runtime/dynamic.py), a call never synchronises and
never allocates, so it can be captured in a CUDA graph and the graph replayed with other group ends; nothing plans,
tunes or compiles after the first call.

The tensor maps name the arrays' addresses, the rows and the group count, so each checked set of arguments gets its
own argument block, built once: a `Launcher` (runtime/dynamic_state.py) whose values are all stored when it is made,
the maps and the scalars as cuLaunchKernel reads them; a launch stores only grouped K's tile counters. A call whose
arguments' metadata (addresses, shapes, strides, dtypes, devices) equal those of a call already checked launches that
block after reading the metadata once (the dynamic family's quick path, with the same key).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gemmc.errors import GemmcError
from gemmc.families.hopper_grouped.plan import HopperGroupedPlan
from gemmc.families.tma_loop import TMA_ALIGN
from gemmc.ir.dynamic import INT32_MAX
from gemmc.ir.types import Layout
from gemmc.runtime import dynamic as grouped  # the grouped forms' checks, stream and quick-path key
from gemmc.runtime.args import NUMPY_DTYPES
from gemmc.runtime.device import cupy, hardware
from gemmc.runtime.dynamic_state import DynamicState, zeroed_counters
from gemmc.runtime.launcher import Launcher
from gemmc.runtime.streams import is_torch, launch_stream, load_outside_capture
from gemmc.runtime.tma import TMAP, TMAP_ARG, encode_tensor

if TYPE_CHECKING:
    from gemmc.runtime.executable import Executable



def argument_block(st: GroupedTmaState, maps: tuple[Any, Any, Any], c_by_tma: int, c: int, ends_ptr: int, groups: int,
                   rows: int, n: int, k: int, alpha: float, beta: float, counters: bool = False) -> Launcher:
    """One checked call's argument block (three tensor maps, c_by_tma, C, the ends, groups, rows, N, K, alpha, beta;
    grouped K: M, N for N, K, and the tile counters, stored at each launch), every value stored once: a launch
    passes no values."""
    values: list[Any] = [
        *(TMAP_ARG.from_buffer_copy(m.tobytes()) for m in maps), ctypes.c_int32(c_by_tma), ctypes.c_uint64(c),
        ctypes.c_uint64(ends_ptr), ctypes.c_int32(groups), ctypes.c_int64(rows), ctypes.c_int32(n), ctypes.c_int32(k),
        ctypes.c_float(alpha), ctypes.c_float(beta)]
    if counters:
        values.append(ctypes.c_uint64(0))
    return Launcher(st.fn, values, counter=len(values) - 1 if counters else None, first=len(values), dependent=True)


@dataclass
class GroupedTmaState(DynamicState):
    """The loaded kernel and its launch constants (DynamicState's fields: the function, the validation kernel and its
    result buffer, the grid, the dynamic shared memory, the block), and the argument blocks of the calls checked so
    far (`blocks`: the quick path's key -> its `argument_block`)."""

    blocks: dict[tuple, Launcher] = field(default_factory=dict)


def grouped_plan(kernel: Executable) -> HopperGroupedPlan:
    return kernel.ir.plan_as(HopperGroupedPlan, "runtime.grouped_tma")


def state(kernel: Executable) -> GroupedTmaState:
    """The kernel's state, kept on its Executable (`Executable.dynamic`): loaded on the first call."""
    found = kernel.dynamic
    if isinstance(found, GroupedTmaState):
        return found
    plan = grouped_plan(kernel)
    rendered = kernel.rendered
    fn = grouped.compiled(kernel, rendered.entry)
    fn.max_dynamic_shared_size_bytes = plan.dynamic_smem_bytes
    st = GroupedTmaState(kernel.name, fn, grouped.compiled(kernel, rendered.entry + "_validate"),
                         plan.grid(hardware().sm_count), 0, plan.dynamic_smem_bytes, plan.threads)
    st.baked = kernel.ir.alpha is not None and kernel.ir.beta is not None
    if plan.grouped_k:  # its blocks claim tiles from counters, a pair per stream, zeroed once (launches leave them 0)
        st.counters = zeroed_counters()
    kernel.dynamic = st
    return st


def _launch(st: GroupedTmaState, args: Launcher, stream: int) -> None:
    """`args` on `stream` (a raw handle): grouped K's with the stream's tile counters (the Launcher's lock keeps two
    threads launching one block each with their own)."""
    args(st.grid, st.block, st.smem, stream, (), st.launch_counter(stream) if args.counter is not None else 0)


def launch_grouped_tma(kernel: Executable, A: Any, B: Any, C: Any, *, offsets: Any, alpha: float | None,
                       beta: float | None, stream: Any, validate: bool) -> None:
    """C = alpha A B_g + beta C over each group's rows, in one launch (CompiledKernel.__call__ passes its Executable).
    A call with the metadata of one already checked, on the default stream, launches that call's argument block."""
    st = (kernel.dynamic if isinstance(kernel.dynamic, GroupedTmaState)
          else load_outside_capture(kernel, state, stream, is_torch(A)))
    key = grouped.call_key(A, B, C, offsets) if stream is None and not validate else None
    if key is not None:
        found = st.blocks.get((key, alpha, beta))
        if found is not None:
            _launch(st, found, grouped.current_stream(key))
            return
    _launch_checked(kernel, st, A, B, C, offsets=offsets, alpha=alpha, beta=beta, stream=stream, validate=validate,
                    key=key)


def _launch_checked(kernel: Executable, st: GroupedTmaState, A: Any, B: Any, C: Any, *, offsets: Any,
                    alpha: float | None, beta: float | None, stream: Any, validate: bool, key: tuple | None) -> None:
    from gemmc.runtime.launch import scalars

    cp = cupy()
    ir = kernel.ir
    plan = grouped_plan(kernel)
    dyn = ir.dynamic
    assert dyn is not None
    alpha_, beta_ = scalars(kernel, alpha, beta)
    device = cp.cuda.runtime.getDevice()
    dtype = NUMPY_DTYPES[ir.dtype]
    n, k = dyn.n, dyn.k
    o = grouped.ends(offsets, device, dyn.max_groups)
    groups = o.shape[0]
    if plan.grouped_k:
        _launch_k(kernel, st, plan, A, B, C, o, groups, alpha_, beta_, stream=stream, validate=validate, key=key,
                  scalars=(alpha, beta))
        return
    a = grouped.matrix(A, "A", dtype, device, (None, k), Layout.ROW, f"rows x {k}: the groups' rows stacked")
    rows = a.shape[0]
    b = grouped.stacked(B, "B", dtype, device, groups, k, n, ir.layout_b, f"{groups} x {k} x {n}: one matrix per group")
    c = grouped.matrix(C, "C", NUMPY_DTYPES[ir.c_dtype], device, (rows, n), Layout.ROW, f"{rows} x {n}: the rows of A")
    grouped.writable(c)
    _check_rows_and_alignment(rows, dyn.max_rows, a, b)
    on = launch_stream(stream, is_torch(A))
    if validate:
        grouped.check_ends(st, o.ptr, groups, rows, on)
    if groups == 0 or rows == 0:
        return  # no row belongs to a group (and a tensor map of no rows does not exist)
    elem, c_bytes = ir.dtype.nbytes, plan.c_bytes
    map_a = encode_tensor(ir.dtype, a.ptr, (k, rows), (k * elem,), plan.a_box)
    if plan.b_kmajor:
        map_b = encode_tensor(ir.dtype, b.ptr, (k, n, groups), (k * elem, n * k * elem), plan.b_box)
    else:
        map_b = encode_tensor(ir.dtype, b.ptr, (n, k, groups), (n * elem, k * n * elem), plan.b_box)
    c_by_tma = (n * c_bytes) % TMA_ALIGN == 0 and c.ptr % TMA_ALIGN == 0
    map_c = (encode_tensor(ir.c_dtype, c.ptr, (n, rows), (n * c_bytes,), plan.c_box) if c_by_tma
             else np.zeros(1, dtype=TMAP))
    args = argument_block(st, (map_a, map_b, map_c), int(c_by_tma), c.ptr, o.ptr, groups, rows, n, k, float(alpha_),
                          float(beta_))
    _remember(st, key, alpha, beta, args)
    _launch(st, args, on.ptr)


def _remember(st: GroupedTmaState, key: tuple | None, alpha: float | None, beta: float | None, args: Launcher
              ) -> None:
    if key is not None:
        if len(st.blocks) >= grouped.SEEN:
            st.blocks.clear()
        st.blocks[(key, alpha, beta)] = args


def _check_rows_and_alignment(rows: int, max_rows: int, a: Any, b: Any) -> None:
    if rows > max_rows or rows > INT32_MAX:
        raise GemmcError(f"A: {rows} rows, but the schedule allows at most {min(max_rows, INT32_MAX)} (`rows` in "
                         "the schedule; the ends are int32)")
    for name, info in (("A", a), ("B", b)):
        if info.ptr % TMA_ALIGN:
            raise GemmcError(f"{name}: TMA reads it in place from a {TMA_ALIGN}-byte aligned address; got "
                             f"0x{info.ptr:x} (a view at an offset): pass an aligned array")


def _launch_k(kernel: Executable, st: GroupedTmaState, plan: HopperGroupedPlan, A: Any, B: Any, C: Any, o: Any,
              groups: int, alpha_: float, beta_: float, *, stream: Any, validate: bool, key: tuple | None,
              scalars: tuple[float | None, float | None]) -> None:
    """grouped K (the weight gradient): A m x rows (X^T: M-major), B rows x n, C groups x m x n, each read or written
    through a 2-D tensor map (C's over its groups * m rows)."""
    cp = cupy()
    ir = kernel.ir
    dyn = ir.dynamic
    assert dyn is not None
    device = cp.cuda.runtime.getDevice()
    dtype = NUMPY_DTYPES[ir.dtype]
    m, n = dyn.m, dyn.n
    a = grouped.matrix(A, "A", dtype, device, (m, None), ir.layout_a, f"{m} x rows: the groups' reduction side by side")
    rows = a.shape[1]
    b = grouped.matrix(B, "B", dtype, device, (rows, n), ir.layout_b, f"{rows} x {n}: the reduction rows of A")
    c = grouped.stacked(C, "C", NUMPY_DTYPES[ir.c_dtype], device, groups, m, n, ir.layout_c,
                        f"{groups} x {m} x {n}: one matrix per group")
    grouped.writable(c)
    _check_rows_and_alignment(rows, dyn.max_rows, a, b)
    on = launch_stream(stream, is_torch(A))
    if validate:
        grouped.check_ends(st, o.ptr, groups, rows, on)
    if groups == 0:
        return  # no C
    elem, c_bytes = ir.dtype.nbytes, plan.c_bytes
    if rows:
        map_a = encode_tensor(ir.dtype, a.ptr, (m, rows), (m * elem,), plan.a_box)
        map_b = encode_tensor(ir.dtype, b.ptr, (n, rows), (n * elem,), plan.b_box)
    else:  # every group empty: C = beta C, nothing read (a tensor map of no rows does not exist)
        map_a = map_b = np.zeros(1, dtype=TMAP)
    c_by_tma = (n * c_bytes) % TMA_ALIGN == 0 and c.ptr % TMA_ALIGN == 0
    map_c = (encode_tensor(ir.c_dtype, c.ptr, (n, groups * m), (n * c_bytes,), plan.c_box) if c_by_tma
             else np.zeros(1, dtype=TMAP))
    args = argument_block(st, (map_a, map_b, map_c), int(c_by_tma), c.ptr, o.ptr, groups, rows, m, n, float(alpha_),
                          float(beta_), counters=True)
    _remember(st, key, *scalars, args)
    _launch(st, args, on.ptr)

"""Launch a `grouped list` kernel of half storage (the hopper_grouped family, hopper_grouped_list.cu.j2): independent
problems of any sizes on the TMA + wgmma loop, new sizes every call, never recompiled.

A call checks the arrays and writes the problem table as the dynamic family's list form does (runtime/dynamic_list.py:
read in bulk, a pinned staging ring, one asynchronous copy), except that an array may be a view of unit-stride lines
(its leading dimension from its strides). Then two launches on the call's stream: the planning kernel builds every
problem's three tensor maps from the template maps (encoded here once per kernel) in the maps of the call's ring slot
(the call's until its launches are recorded, as its table is: no other call, on any stream or thread, writes them in
between), and the persistent kernel computes the tiles. A call captured in a CUDA graph copies its table and builds
its maps when it is captured, on a stream of its own into buffers of its own (`dynamic_state.Captured`), so that its
graph holds the persistent kernel alone: no copy node from the host and no planning kernel at every replay.

TMA reads A and B in place, so it takes the problems whose A and B have 16-byte aligned bases and leading dimensions;
the others (of a call) run the schedule in the dynamic family, launched first on the same stream
(`GroupedListState.cuda_cores`: f32 products on CUDA cores, any lines). C may be anything the list form takes: a C
that TMA cannot store is stored from the accumulators.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gemmc.families.hopper_grouped.plan import (
    LIST_MAPS_WARPS,
    LIST_TEMPLATE_DIMS,
    LIST_TEMPLATE_PITCH,
    HopperGroupedPlan,
)
from gemmc.families.tma_loop import TMA_ALIGN
from gemmc.runtime import dynamic as grouped  # the compile with its progress note
from gemmc.runtime.device import cupy, hardware
from gemmc.runtime.dynamic_list import Staging, list_arguments, make_tables, problem_table
from gemmc.runtime.dynamic_state import DynamicState, zeroed_counters
from gemmc.runtime.launcher import Launcher
from gemmc.runtime.streams import is_torch, launch_stream, load_outside_capture, relaxed_capture
from gemmc.runtime.tma import TMAP_ARG, encode_tensor

if TYPE_CHECKING:
    from gemmc.runtime.executable import Executable

@dataclass
class GroupedListState(DynamicState):
    """The two loaded kernels, their argument blocks (the planning kernel's template maps stored once), per staging
    slot a set of tensor maps (max_groups x 3 x 128 bytes, `dynamic_list.Ring`'s `map_bytes`: the planning kernel of
    a call writes them and the main kernel of the same call reads them), and each captured call's own problem table,
    tensor maps and tile counters (`DynamicState.captures`: CAPTURES sets made with the state, a later capture's made
    while it is captured, with the capture mode relaxed)."""

    main: Any = None  # the persistent kernel's Launcher (the table, problems, maps, tile counters, alpha, beta)
    planner: Any = None  # the planning kernel's Launcher (the template maps, stored once, then table, problems, maps)
    lock: threading.Lock = field(default_factory=threading.Lock)  # loads the CUDA-core kernel once
    fallback: Any = None  # the Executable of `cuda_cores`, once a call needs it

    def cuda_cores(self, kernel: Executable) -> Executable:
        """The schedule in the dynamic family (`algorithm dynamic`: f32 products on CUDA cores, lines of any stride),
        for the problems with an A or B that TMA cannot read in place; planned and loaded on the first such call."""
        with self.lock:
            if self.fallback is None:
                from gemmc.ir.types import DType, Precision
                from gemmc.passes.replan import in_family
                from gemmc.runtime.executable import Executable

                cores = in_family(kernel.ir, kernel.target, "dynamic", kernel.filename, Precision(DType.F32))
                fallback = Executable(cores, kernel.target, kernel.filename)
                grouped.state(fallback)  # loaded before it is published: a later capture must find it ready
                self.fallback = fallback
            return self.fallback


def list_plan(kernel: Executable) -> HopperGroupedPlan:
    return kernel.ir.plan_as(HopperGroupedPlan, "runtime.grouped_list")


def state(kernel: Executable) -> GroupedListState:
    """The kernel's state, kept on its Executable (`Executable.dynamic`): both kernels loaded on the first call, the
    template maps encoded once."""
    found = kernel.dynamic
    if isinstance(found, GroupedListState):
        return found
    ir = kernel.ir
    plan = list_plan(kernel)
    entry = kernel.rendered.entry
    fn = grouped.compiled(kernel, entry)
    fn.max_dynamic_shared_size_bytes = plan.dynamic_smem_bytes
    maps_fn = grouped.compiled(kernel, entry + "_maps")
    st = GroupedListState(kernel.name, fn, None, plan.grid(hardware().sm_count), 0, plan.dynamic_smem_bytes,
                          plan.threads)
    st.baked = ir.alpha is not None and ir.beta is not None
    st.counters = zeroed_counters()
    make_tables(st, plan.max_groups, plan.list_maps_bytes)
    # The templates: each operand's element type, box and swizzle; the address (a placeholder: the counters), dims
    # and pitch are replaced per problem on the device.
    where = int(st.counters.data.ptr)
    templates = [encode_tensor(dtype, where, LIST_TEMPLATE_DIMS, (LIST_TEMPLATE_PITCH,), box)
                 for dtype, box in ((ir.dtype, plan.a_box), (ir.dtype, plan.b_box), (ir.c_dtype, plan.c_box))]
    st.planner = Launcher(maps_fn, [*(TMAP_ARG.from_buffer_copy(t.tobytes()) for t in templates), ctypes.c_uint64(0),
                                    ctypes.c_int32(0), ctypes.c_uint64(0)], counter=None, first=3)
    st.main = Launcher(fn, [ctypes.c_uint64(0), ctypes.c_int32(0), ctypes.c_uint64(0), ctypes.c_uint64(0),
                            ctypes.c_float(0.0), ctypes.c_float(0.0)], counter=3, dependent=True)
    kernel.dynamic = st
    return st


def tma_misfits(table: np.ndarray) -> np.ndarray:
    """Per problem, whether TMA cannot read its A or B in place (a base or leading dimension not a 16-byte multiple)
    where the problem has work (m, n and k above 0): such problems run on CUDA cores (GroupedListState.cuda_cores)."""
    work = (table[:, 0] > 0) & (table[:, 1] > 0) & (table[:, 2] > 0)
    bad = np.zeros(len(table), dtype=bool)
    for ld, ptr in ((3, 6), (4, 7)):
        bad |= ((table[:, ld] * 2) % TMA_ALIGN != 0) | (table[:, ptr] % TMA_ALIGN != 0)
    return work & bad


def build_maps(st: GroupedListState, problems: int, count: int, maps: int, stream: int) -> None:
    """The planning kernel on `stream`: every problem's three tensor maps, written at `maps` from the table at
    `problems` (device addresses)."""
    st.planner(-(-count // LIST_MAPS_WARPS), 32 * LIST_MAPS_WARPS, 0, stream, (problems, count, maps))


CORES_FIRST_CALL = ("the first call whose A or B TMA cannot read in place (it plans and loads the kernel that runs "
                    "such problems on CUDA cores)")


def _checked(kernel: Executable, st: GroupedListState, As: Any, Bs: Any, Cs: Any, device: int, call: Staging, on: Any,
             alpha_: Any, beta_: Any, exact: bool, infos: Any) -> tuple[int, int, int] | None:
    """A call's checks and table (written into the staging buffer `call.out`), its problems TMA cannot read launched
    on CUDA cores once every check has passed; then the tensor cores' problem count, maps and tile counters (a
    captured call's own), or None where no problem is left for them."""
    table = problem_table(kernel, As, Bs, Cs, device, out=call.out, views=True, exact=exact, infos=infos)
    misfits = tma_misfits(table)
    picked = np.flatnonzero(misfits).tolist()  # problems TMA cannot read: on CUDA cores, in the dynamic family
    count = len(table) - len(picked)
    if picked:
        table[:count] = table[~misfits]  # the rest, on the tensor cores: moved to the front of the staging buffer
        table = table[:count]
    if not count:
        maps = counter = 0
    else:
        maps, counter = call.maps(), call.counter(on.ptr)
    if picked:  # every check done: the first launch writes outputs
        from gemmc.runtime.dynamic_list import launch_list

        cores = (st.fallback if st.fallback is not None
                 else load_outside_capture(kernel, st.cuda_cores, on, False, CORES_FIRST_CALL))
        launch_list(cores, grouped.state(cores), [As[i] for i in picked], [Bs[i] for i in picked],
                    [Cs[i] for i in picked], alpha_, beta_, on, device, views=True)
    return (count, maps, counter) if count else None


def launch_grouped_list(kernel: Executable, As: Any, Bs: Any, Cs: Any, *, offsets: Any, alpha: float | None,
                        beta: float | None, stream: Any, validate: bool, infos: Any = None) -> None:
    """C_p = alpha A_p B_p + beta C_p for every problem p of the lists: the checks and the table, then the planning
    kernel and the persistent kernel on the call's stream (a captured call: the table and maps filled outside the
    graph, the persistent kernel alone in it). CompiledKernel.__call__ passes its Executable. `infos`: the arrays'
    ArrayInfo, read and checked by the caller (`problem_table`'s `infos`: a fused concurrent group's)."""
    from gemmc.runtime.launch import scalars

    list_arguments(offsets)
    st = (kernel.dynamic if isinstance(kernel.dynamic, GroupedListState)
          else load_outside_capture(kernel, state, stream, is_torch(As)))
    alpha_, beta_ = scalars(kernel, alpha, beta)
    device = cupy().cuda.runtime.getDevice()
    on = launch_stream(stream, is_torch(As))
    # A call inside a CUDA-graph capture takes a table, maps and tile counters of its own (Staging) and fills them
    # when it is captured: its graph holds the main kernel alone.
    with Staging(st, on) as call:
        launch = _checked(kernel, st, As, Bs, Cs, device, call, on, alpha_, beta_, validate, infos)
        if launch is None:  # nothing for the tensor cores
            return
        count, maps, counter = launch
        if call.index is not None:  # outside the graph, on the side stream, waited for
            with relaxed_capture():
                problems = call.send(count, st.side)
                build_maps(st, problems, count, maps, st.side.ptr)
                st.side.synchronize()
        else:
            problems = call.send(count, on)
            build_maps(st, problems, count, maps, on.ptr)
        st.main(st.grid, st.block, st.smem, on.ptr, (problems, count, maps), counter, (float(alpha_), float(beta_)))
        call.done(on)

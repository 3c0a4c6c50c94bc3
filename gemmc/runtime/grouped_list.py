"""Launch a `grouped list` kernel of half storage (the hopper_grouped family, hopper_grouped_list.cu.j2): independent
problems of any sizes on the TMA + wgmma loop, new sizes every call, never recompiled.

A call checks the arrays and writes the problem table as the dynamic family's list form does (runtime/dynamic_list.py:
read in bulk, a pinned staging ring, one asynchronous copy), except that an array may be a view of unit-stride lines
(its leading dimension from its strides). Then two launches on the call's stream: the planning kernel builds every
problem's three tensor maps in the stream's map workspace from the template maps (encoded here once per kernel), and
the persistent kernel computes the tiles. A call captured in a CUDA graph copies its table and builds its maps when it
is captured, on a stream of its own into buffers of its own (`GroupedListState.capture_maps`), so that its graph holds
the persistent kernel alone: no copy node from the host and no planning kernel at every replay.

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

from gemmc.errors import GemmcError
from gemmc.families.hopper_grouped.plan import HopperGroupedPlan
from gemmc.runtime import dynamic as grouped  # the compile with its progress note
from gemmc.runtime.device import cupy, hardware
from gemmc.runtime.dynamic_list import list_arguments, make_tables, problem_table
from gemmc.runtime.dynamic_state import CAPTURES, DynamicState, zeroed_counters
from gemmc.runtime.streams import is_torch, launch_stream, outside_capture, relaxed_capture
from gemmc.runtime.tma import ALIGN, TMAP_BYTES, encode_tensor

if TYPE_CHECKING:
    from gemmc.runtime.executable import Executable

_Map = ctypes.c_uint64 * (TMAP_BYTES // 8)  # a CUtensorMap by value
MAPS_PER_PROBLEM = 3  # A, B, C (plan.LIST_MAPS)
WARPS_PER_BLOCK = 4  # the planning kernel: one warp a problem, 128 threads a block
TEMPLATE_DIMS = (256, 256)  # the template maps' placeholder tensor (replaced per problem on the device)
TEMPLATE_PITCH = 1024  # bytes: a valid pitch for 256 elements of 2 or 4 bytes
MAP_SLOTS = 8  # streams a kernel keeps tensor-map workspaces for (launches on one stream share one)


class _Block:
    """A kernel's argument block, stored where cuLaunchKernel reads it; a call stores its values into it."""

    def __init__(self, values: list[Any]):
        self.values = values
        self.params = (ctypes.c_void_p * len(values))(*(ctypes.addressof(v) for v in values))
        self.address = ctypes.addressof(self.params)


@dataclass
class GroupedListState(DynamicState):
    """The two loaded kernels, their argument blocks (the planning kernel's template maps stored once), per launch
    stream a workspace of tensor maps (max_groups x 3 x 128 bytes: the planning kernel of a call writes it and the
    main kernel of the same call reads it, so calls in stream order share it, calls on two streams at once must not),
    and each captured call's own problem table, tensor maps and tile counters. Everything is allocated with the state:
    allocating inside a CUDA-graph capture is not allowed."""

    func: int = 0
    maps_func: int = 0
    maps_args: Any = None
    main_args: Any = None
    map_bytes: int = 0
    workspace: Any = None  # MAP_SLOTS x map_bytes
    workspaces: dict[int, int] = field(default_factory=dict)  # raw stream handle -> its maps' device address
    lock: threading.Lock = field(default_factory=threading.Lock)
    fallback: Any = None  # the Executable of `cuda_cores`, once a call needs it
    capture_maps: Any = None  # CAPTURES x map_bytes: each captured call's own maps, built when it is captured
    side: Any = None  # the stream a captured call fills its table and maps on, outside the graph

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

    def maps(self, stream: int) -> int:
        """The device address of the tensor-map workspace for launches on `stream` (a raw handle)."""
        with self.lock:
            found = self.workspaces.get(stream)
            if found is None:
                if len(self.workspaces) >= MAP_SLOTS:
                    raise GemmcError(f"stream: this kernel has run on {MAP_SLOTS} streams, the most it keeps tensor "
                                     "maps for; launch it on fewer streams", code="E900")
                found = self.workspaces[stream] = int(self.workspace.data.ptr) + self.map_bytes * len(self.workspaces)
            return found


def list_plan(kernel: Executable) -> HopperGroupedPlan:
    return kernel.ir.plan_as(HopperGroupedPlan, "runtime.grouped_list")


def state(kernel: Executable) -> GroupedListState:
    """The kernel's state, kept on its Executable (`Executable.dynamic`): both kernels loaded on the first call, the
    template maps encoded once."""
    found = kernel.dynamic
    if isinstance(found, GroupedListState):
        return found
    cp = cupy()
    ir = kernel.ir
    plan = list_plan(kernel)
    entry = kernel.rendered.entry
    fn = grouped.compiled(kernel, entry)
    fn.max_dynamic_shared_size_bytes = plan.dynamic_smem_bytes
    maps_fn = grouped.compiled(kernel, entry + "_maps")
    st = GroupedListState(fn, None, plan.grid(hardware().sm_count), 0, plan.dynamic_smem_bytes, plan.threads,
                          func=int(fn.kernel.ptr), maps_func=int(maps_fn.kernel.ptr), map_bytes=plan.list_maps_bytes)
    st.baked = ir.alpha is not None and ir.beta is not None
    st.counters = zeroed_counters()
    make_tables(st, plan.max_groups)
    st.workspace = cp.empty(MAP_SLOTS * plan.list_maps_bytes, dtype=np.uint8)
    st.capture_maps = cp.empty(CAPTURES * plan.list_maps_bytes, dtype=np.uint8)
    st.side = cp.cuda.Stream(non_blocking=True)
    # The templates: each operand's element type, box and swizzle; the address (a placeholder: the counters), dims
    # and pitch are replaced per problem on the device.
    where = int(st.counters.data.ptr)
    templates = [encode_tensor(dtype, where, TEMPLATE_DIMS, (TEMPLATE_PITCH,), box)
                 for dtype, box in ((ir.dtype, plan.a_box), (ir.dtype, plan.b_box), (ir.c_dtype, plan.c_box))]
    st.maps_args = _Block([*(_Map.from_buffer_copy(t.tobytes()) for t in templates), ctypes.c_uint64(0),
                           ctypes.c_int32(0), ctypes.c_uint64(0)])
    st.main_args = _Block([ctypes.c_uint64(0), ctypes.c_int32(0), ctypes.c_uint64(0), ctypes.c_uint64(0),
                           ctypes.c_float(0.0), ctypes.c_float(0.0)])
    kernel.dynamic = st
    return st


def tma_misfits(table: np.ndarray) -> np.ndarray:
    """Per problem, whether TMA cannot read its A or B in place (a base or leading dimension not a 16-byte multiple)
    where the problem has work (m, n and k above 0): such problems run on CUDA cores (GroupedListState.cuda_cores)."""
    work = (table[:, 0] > 0) & (table[:, 1] > 0) & (table[:, 2] > 0)
    bad = np.zeros(len(table), dtype=bool)
    for ld, ptr in ((3, 6), (4, 7)):
        bad |= ((table[:, ld] * 2) % ALIGN != 0) | (table[:, ptr] % ALIGN != 0)
    return work & bad


def build_maps(st: GroupedListState, problems: int, count: int, maps: int, stream: int) -> None:
    """The planning kernel on `stream`: every problem's three tensor maps, written at `maps` from the table at
    `problems` (device addresses)."""
    from cupy.cuda import driver  # type: ignore[import-not-found]

    with st.lock:
        a = st.maps_args.values
        a[3].value, a[4].value, a[5].value = problems, count, maps
        driver.launchKernel(st.maps_func, -(-count // WARPS_PER_BLOCK), 1, 1, 32 * WARPS_PER_BLOCK, 1, 1, 0, stream,
                            st.maps_args.address, 0)


def _checked(kernel: Executable, st: GroupedListState, plan: HopperGroupedPlan, As: Any, Bs: Any, Cs: Any,
             device: int, out: np.ndarray, index: int | None, on: Any, alpha_: Any, beta_: Any, exact: bool
             ) -> tuple[int, int, int] | None:
    """A call's checks and table (written into `out`), its problems TMA cannot read launched on CUDA cores once every
    check has passed; then the tensor cores' problem count, maps and tile counters (a captured call's own: `index`),
    or None where no problem is left for them."""
    table = problem_table(kernel, As, Bs, Cs, device, out=out, views=True, exact=exact)
    misfits = tma_misfits(table)
    picked = np.flatnonzero(misfits).tolist()  # problems TMA cannot read: on CUDA cores, in the dynamic family
    if picked and st.fallback is None and index is not None:
        outside_capture(on, False, f"kernel {kernel.ir.name}: the first call whose A or B TMA cannot read in place "
                        "(it plans and loads the kernel that runs such problems on CUDA cores)")
    count = len(table) - len(picked)
    if picked:
        table[:count] = table[~misfits]  # the rest, on the tensor cores: moved to the front of the staging buffer
        table = table[:count]
    if not count:
        maps = counter = 0
    elif index is not None:
        maps, counter = int(st.capture_maps.data.ptr) + index * st.map_bytes, st.capture_counter(index)
    else:
        maps, counter = st.maps(on.ptr), st.counter(on.ptr)
    if picked:  # every check done: the first launch writes outputs
        from gemmc.runtime.dynamic_list import launch_list

        cores = st.cuda_cores(kernel)
        launch_list(cores, grouped.state(cores), [As[i] for i in picked], [Bs[i] for i in picked],
                    [Cs[i] for i in picked], alpha_, beta_, on, device, views=True)
    return (count, maps, counter) if count else None


def launch_grouped_list(kernel: Executable, As: Any, Bs: Any, Cs: Any, *, offsets: Any, alpha: float | None,
                        beta: float | None, stream: Any, validate: bool) -> None:
    """C_p = alpha A_p B_p + beta C_p for every problem p of the lists: the checks and the table, then the planning
    kernel and the persistent kernel on the call's stream (a captured call: the table and maps filled outside the
    graph, the persistent kernel alone in it). CompiledKernel.__call__ passes its Executable."""
    from cupy.cuda import driver  # type: ignore[import-not-found]

    from gemmc.runtime.launch import scalars

    list_arguments(offsets)
    if not isinstance(kernel.dynamic, GroupedListState):
        outside_capture(stream, is_torch(As), f"kernel {kernel.ir.name}: the first call (it loads the kernel)")
    st = kernel.dynamic if isinstance(kernel.dynamic, GroupedListState) else state(kernel)
    alpha_, beta_ = scalars(kernel, alpha, beta)
    cp = cupy()
    device = cp.cuda.runtime.getDevice()
    on = launch_stream(stream, is_torch(As))
    plan = list_plan(kernel)
    # A call inside a CUDA-graph capture takes a table, maps and tile counters of its own, kept with the state and
    # never reused, and fills them when it is captured: its graph holds the main kernel alone.
    index = st.capture() if cp.cuda.runtime.streamIsCapturing(on.ptr) != 0 else None
    ring = st.captures[index] if index is not None else st.ring
    slot, out = ring.host_table()
    try:
        launch = _checked(kernel, st, plan, As, Bs, Cs, device, out, index, on, alpha_, beta_, validate)
    except BaseException:
        if index is not None:
            st.uncapture(index)
        raise
    if launch is None:  # nothing for the tensor cores
        if index is not None:
            st.uncapture(index)
        return
    count, maps, counter = launch
    if index is not None:  # outside the graph, on the side stream, waited for
        with relaxed_capture():
            problems = ring.send(slot, count, st.side)
            build_maps(st, problems, count, maps, st.side.ptr)
            st.side.synchronize()
    else:
        problems = ring.send(slot, count, on)
        build_maps(st, problems, count, maps, on.ptr)
    with st.lock:
        b = st.main_args.values
        b[0].value, b[1].value, b[2].value, b[3].value = problems, count, maps, counter
        b[4].value, b[5].value = float(alpha_), float(beta_)
        driver.launchKernel(st.func, st.grid, 1, 1, st.block, 1, 1, st.smem, on.ptr, st.main_args.address, 0)
    if index is None:
        ring.done(slot, on)


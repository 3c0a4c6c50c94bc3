"""Launch a planned kernel: upload the plan's tables once, the pointer tables once per set of arrays."""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import numpy as np

from gemmc.errors import GemmcError
from gemmc.ir.nodes import TileTable
from gemmc.runtime.args import ShapeMismatch, batch_pointers, call_shapes, expected_operands
from gemmc.runtime.compile import device_function
from gemmc.runtime.device import cupy, hardware
from gemmc.runtime.tune import tuned

if TYPE_CHECKING:
    from gemmc.api import CompiledKernel

POINTER_CACHE = 16  # pointer tables kept per kernel (a training loop reuses a few sets of buffers)


def plan_tables(kernel: CompiledKernel) -> tuple[Any, Any, Any]:
    """The problem table, block offsets and tiles on the device, uploaded once per plan."""
    state = kernel._runtime_state
    if "tables" not in state:
        cp = cupy()
        work = kernel.ir.work
        assert work is not None
        problems = cp.asarray(np.frombuffer(work.problems.data, dtype="<i8").reshape(-1, 6), dtype=cp.int64)
        offsets = cp.asarray(list(work.block_offsets) or [0, 0], dtype=cp.int32)
        packed = work.tiles.data or bytes(TileTable.FORMAT.size)  # the kernel's int4 rows; one dummy when empty
        tiles = cp.asarray(np.frombuffer(packed, dtype="<i4").reshape(-1, 4), dtype=cp.int32)
        state["tables"] = (problems, offsets, tiles)
    return state["tables"]


def pointer_table(kernel: CompiledKernel, a: list[int], b: list[int], c: list[int]) -> Any:
    cache: OrderedDict = kernel._runtime_state.setdefault("pointers", OrderedDict())
    key = (tuple(a), tuple(b), tuple(c))
    table = cache.get(key)
    if table is None:
        cp = cupy()
        table = cp.asarray(a + b + c, dtype=cp.uint64)
        cache[key] = table
        if len(cache) > POINTER_CACHE:
            cache.popitem(last=False)
    else:
        cache.move_to_end(key)
    return table


def kernel_function(kernel: CompiledKernel) -> Any:
    state = kernel._runtime_state
    if "function" not in state:
        work = kernel.ir.work
        assert work is not None
        fn = device_function(kernel.rendered, kernel.rendered.entry)
        if work.smem_bytes > hardware().smem_per_block_default:
            fn.max_dynamic_shared_size_bytes = work.smem_bytes
        if fn.max_threads_per_block < work.block:
            raise GemmcError(f"kernel '{kernel.name}': the compiled kernel uses {fn.num_regs} registers per thread, "
                             f"so at most {fn.max_threads_per_block} threads fit in a block; the plan needs "
                             f"{work.block}. Use fewer threads or a smaller tile.", code="E302")
        state["function"] = fn
    return state["function"]


def prologue_function(kernel: CompiledKernel) -> Any:
    state = kernel._runtime_state
    if "prologue" not in state:
        state["prologue"] = device_function(kernel.rendered, kernel.rendered.prologue)
    return state["prologue"]


def scratch_buffer(kernel: CompiledKernel) -> Any:
    """The kernel's scratch memory (FamilyPlan.scratch_bytes), allocated once. The pre-pass and the main kernel
    of one call run in order on one stream; calls of the same kernel on different streams at the same time would
    share it, so such calls must be ordered (one stream, or events)."""
    state = kernel._runtime_state
    if "scratch" not in state:
        plan = kernel.ir.plan
        assert plan is not None
        state["scratch"] = cupy().empty(plan.scratch_bytes, dtype=cupy().uint8)
    return state["scratch"]


def scalars(kernel: CompiledKernel, alpha: float | None, beta: float | None) -> tuple[Any, Any]:
    cp = cupy()
    ir = kernel.ir
    for name, given, baked in (("alpha", alpha, ir.alpha), ("beta", beta, ir.beta)):
        if baked is None and given is None:
            raise GemmcError(f"{name}: the schedule says `{name} runtime`, so pass {name}=... to the call")
        if baked is not None and given is not None:
            raise GemmcError(f"{name}: the schedule bakes {name} = {baked:g}; write `{name} runtime` in the "
                             f"schedule to pass it at call time")
    ctype = cp.float64 if ir.dtype.value == "f64" else cp.float32
    return ctype(alpha if alpha is not None else 0.0), ctype(beta if beta is not None else 0.0)


def launch(kernel: CompiledKernel, As: Any, Bs: Any, Cs: Any, *, alpha: float | None, beta: float | None,
           stream: Any = None, replan: bool = True) -> None:
    cp = cupy()
    alpha_, beta_ = scalars(kernel, alpha, beta)
    state = kernel._runtime_state
    if "expected" not in state:
        state["expected"] = expected_operands(kernel.ir)
    try:
        a, b, c = batch_pointers(kernel.ir, As, Bs, Cs, state["expected"], cp.cuda.runtime.getDevice())
    except ShapeMismatch:
        lists = all(isinstance(g, (list, tuple)) for g in (As, Bs, Cs))
        if not replan or not lists or not len(As) == len(Bs) == len(Cs):
            raise
        # A and B of other sizes than the schedule's: plan for them (cached by the multiset of shapes) and pass
        # the arrays in the order that plan was made in (sorted by shape, stable). When A and B already match
        # the plan, the mismatch is C's, and the error stands.
        shapes = call_shapes(As, Bs, Cs)
        if sorted(shapes) == sorted(kernel.shapes):
            raise
        replanned = kernel.plan_for(shapes)
        order = sorted(range(len(shapes)), key=lambda i: shapes[i])
        launch(replanned, [As[i] for i in order], [Bs[i] for i in order], [Cs[i] for i in order], alpha=alpha,
               beta=beta, stream=stream, replan=False)
        return
    stream = stream if stream is not None else cp.cuda.get_current_stream()
    kernel = tuned(kernel, lambda k, scratch_c: enqueue(k, a, b, scratch_c, alpha_, beta_, stream), kernel_function,
                   stream)
    enqueue(kernel, a, b, c, alpha_, beta_, stream)


def enqueue(kernel: CompiledKernel, a: list[int], b: list[int], c: list[int], alpha_: Any, beta_: Any,
            stream: Any) -> None:
    """Launch the planned kernel (and its pre-pass) on checked device pointers."""
    cp = cupy()
    fn = kernel_function(kernel)
    problems, offsets, tiles = plan_tables(kernel)
    ptrs = pointer_table(kernel, a, b, c)
    n = len(a)
    work = kernel.ir.work
    assert work is not None
    args: tuple = (problems, offsets, tiles, ptrs[:n], ptrs[n:2 * n], ptrs[2 * n:], alpha_, beta_)
    prologue = kernel.ir.plan.prologue if kernel.ir.plan is not None else None
    if prologue is not None:  # a pre-pass fills the scratch the main kernel reads (FamilyPlan.prologue)
        scratch = scratch_buffer(kernel)
        prep = prologue_function(kernel)
        prep((prologue[0], 1, 1), (prologue[1], 1, 1), (problems, cp.int32(n), ptrs[:n], ptrs[n:2 * n], scratch),
             stream=stream)
        args += (scratch,)
    fn(work.grid, (work.block, 1, 1), args, shared_mem=work.smem_bytes, stream=stream)

"""Launch a planned kernel (an `Executable`): its tables and function are loaded once, the pointer tables once per
set of arrays.

Host time per call (gemmc/bench/host_overhead.py, docs/PERFORMANCE-irregular.md "Host time"): the argument checks in
bulk (runtime/args.py), then look-ups: the executable's loaded pieces (attributes), the pointer tables of this set of
arrays, and for a batch of other sizes than the schedule's the plan made for them."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from gemmc.errors import GemmcError
from gemmc.runtime.args import (
    Columns,
    Expected,
    ShapeMismatch,
    batch_pointers,
    call_shapes,
    read_batch,
    scalar,
)
from gemmc.runtime.device import cupy
from gemmc.runtime.executable import Executable, Replan
from gemmc.runtime.memory import check_memory
from gemmc.runtime.streams import is_torch, launch_stream
from gemmc.runtime.tune import tuned

POINTER_CACHE = 16  # pointer tables kept per kernel (a training loop reuses a few sets of buffers)
REPLAN_ORDERS = 64  # batches of other sizes (in call order) whose plan and order a kernel keeps


def pointer_tables(cache: OrderedDict, a: list[int], b: list[int], c: list[int], expected: Expected | None,
                   order: list[int] | None = None) -> tuple[Any, Any, Any, Any]:
    """The uint64 table of A, B and C pointers on the device and its three views, uploaded once per set of arrays
    (a training loop reuses a few sets of buffers) and kept in `cache` by the pointers in call order; `order` puts
    them in the plan's order (order[p] is the caller's index of problem p). A new set is where the memory the
    arrays occupy is checked (memory.check_memory: alignment, outputs overlapping anything) against `expected`, the
    sizes of the plan that `cache` belongs to, in call order; a set seen before has passed. `expected` None: the
    pointers are gemmc's own (the tuning step's scratch C)."""
    key = (tuple(a), tuple(b), tuple(c))
    found = cache.get(key)
    if found is None:
        if expected is not None:
            check_memory(a, b, c, expected)
        if order is not None:
            a, b, c = ([p[i] for i in order] for p in (a, b, c))
        table = cupy().asarray(a + b + c, dtype=cupy().uint64)
        n = len(a)
        found = cache[key] = (table, table[:n], table[n:2 * n], table[2 * n:])
        if len(cache) > POINTER_CACHE:
            cache.popitem(last=False)
    else:
        cache.move_to_end(key)
    return found


def pointer_table(kernel: Executable, a: list[int], b: list[int], c: list[int]) -> Any:
    """The pointer table of a call of `kernel` on these arrays (for experiments that launch by hand)."""
    return pointer_tables(kernel.pointers, a, b, c, kernel.expected)[0]


def replanned(kernel: Executable, As: Any, Bs: Any, Cs: Any, columns: tuple[Columns | None, ...]) -> Replan | None:
    """The re-planned call (`Executable.plan_for`, kept by the multiset of shapes); None when A and B have the
    plan's own shapes (then the mismatch is C's and re-planning cannot help). Kept by the shapes of A and B in call
    order, so that a repeated call pays a dictionary look-up, not the checks and the sort of a new batch."""
    cache = kernel.replans
    ca, cb = columns[0], columns[1]
    key = None if ca is None or cb is None else (tuple(ca.shapes), tuple(cb.shapes))
    found = cache.get(key)
    if found is None:
        shapes = call_shapes(As, Bs, Cs)
        if sorted(shapes) == sorted(kernel.shapes):
            return None
        plan = kernel.plan_for(shapes)
        order = sorted(range(len(shapes)), key=shapes.__getitem__)
        found = Replan(plan, order, plan.expected.reordered(order), OrderedDict())
        if key is not None:
            cache[key] = found
            if len(cache) > REPLAN_ORDERS:
                cache.pop(next(iter(cache)))
    return found


def scalars(kernel: Executable, alpha: float | None, beta: float | None) -> tuple[Any, Any]:
    cp = cupy()
    ir = kernel.ir
    for name, given, baked in (("alpha", alpha, ir.alpha), ("beta", beta, ir.beta)):
        if baked is None and given is None:
            raise GemmcError(f"{name}: the schedule says `{name} runtime`, so pass {name}=... to the call")
        if baked is not None and given is not None:
            raise GemmcError(f"{name}: the schedule bakes {name} = {baked:g}; write `{name} runtime` in the "
                             f"schedule to pass it at call time")
    double = ir.dtype.value == "f64"
    ctype = cp.float64 if double else cp.float32
    return (ctype(0.0 if alpha is None else scalar("alpha", alpha, double)),
            ctype(0.0 if beta is None else scalar("beta", beta, double)))


def launch(kernel: Executable, As: Any, Bs: Any, Cs: Any, *, alpha: float | None, beta: float | None,
           stream: Any = None) -> None:
    stream = launch_stream(stream, is_torch(As))
    prepare(kernel, As, Bs, Cs, alpha=alpha, beta=beta, stream=stream)(stream)


def prepare(kernel: Executable, As: Any, Bs: Any, Cs: Any, *, alpha: float | None, beta: float | None,
            stream: Any = None) -> Callable[[Any], None]:
    """Everything a launch does before the kernel is enqueued (checks, tables and pointer tables uploaded on
    `stream`, the first call's tuning), and the function that enqueues it on a stream. A launch on another stream
    than `stream` must be ordered after `stream`'s work so far (a concurrent group records its fork event after
    preparing every member): a pointer table is uploaded on `stream`."""
    cp = cupy()
    alpha_, beta_ = scalars(kernel, alpha, beta)
    device = cp.cuda.runtime.getDevice()
    columns = read_batch(As, Bs, Cs)  # read once, checked against the schedule's plan and, if need be, a new one
    pointers, want = kernel.pointers, kernel.expected
    order = None
    try:
        a, b, c = batch_pointers(kernel.ir, As, Bs, Cs, kernel.expected, device, columns)
    except ShapeMismatch:
        lists = all(isinstance(g, (list, tuple)) for g in (As, Bs, Cs))
        if not lists or not len(As) == len(Bs) == len(Cs):
            raise
        found = replanned(kernel, As, Bs, Cs, columns)
        if found is None:
            raise
        kernel, order, want, pointers = found
        a, b, c = batch_pointers(kernel.ir, As, Bs, Cs, want, device, columns)
    stream = stream if stream is not None else cp.cuda.get_current_stream()
    if kernel.ir.plan is not None and kernel.ir.plan.tensor_maps:  # one GEMM read through TMA: no pointer tables
        from gemmc.runtime.tma import enqueue_tma

        tma = kernel
        return lambda on: enqueue_tma(tma, a[0], b[0], c[0], alpha_, beta_, on)
    _, ptr_a, ptr_b, ptr_c = pointer_tables(pointers, a, b, c, want, order)

    def on_scratch(scratch_c: list[int]) -> Any:  # the tuning step's launches: this call's A and B, C in scratch
        if order is not None:  # scratch_c is in the plan's order, the call's pointers in the caller's
            scratch_c = [scratch_c[p] for p in sorted(range(len(order)), key=order.__getitem__)]
        _, sa, sb, sc = pointer_tables(OrderedDict(), a, b, scratch_c, None, order)
        return lambda candidate, on: enqueue(candidate, sa, sb, sc, alpha_, beta_, on)

    chosen = tuned(kernel, on_scratch, stream)
    _ = chosen.tables, chosen.function  # loaded (tables uploaded on `stream`) before the launch, wherever it goes
    return lambda on: enqueue(chosen, ptr_a, ptr_b, ptr_c, alpha_, beta_, on)


def enqueue(kernel: Executable, ptr_a: Any, ptr_b: Any, ptr_c: Any, alpha_: Any, beta_: Any,
            stream: Any) -> None:
    """Launch the planned kernel (and its pre-pass) on device tables of checked pointers."""
    cp = cupy()
    fn = kernel.function
    problems, offsets, tiles = kernel.tables
    n = len(ptr_a)
    work = kernel.ir.work
    assert work is not None
    args: tuple = (problems, offsets, tiles, ptr_a, ptr_b, ptr_c, alpha_, beta_)
    prologue = kernel.ir.plan.prologue if kernel.ir.plan is not None else None
    if prologue is not None:  # a pre-pass fills the scratch the main kernel reads (FamilyPlan.prologue)
        scratch = kernel.scratch(stream)
        kernel.prologue_function((prologue[0], 1, 1), (prologue[1], 1, 1),
                                 (problems, cp.int32(n), ptr_a, ptr_b, scratch), stream=stream)
        args += (scratch,)
    fn(work.grid, (work.block, 1, 1), args, shared_mem=work.smem_bytes, stream=stream)

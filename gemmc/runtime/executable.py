"""A planned kernel as the runtime runs it, and everything the runtime keeps of it.

An `Executable` is built from plain data: the planned `ir.Kernel`, the `Hardware` it was planned for, the schedule's
file name and, where the caller has rendered it already, the `Rendered` source. Its own fields keep what the runtime
loads and learns, each made once on first use: the compiled function and its pre-pass, the plan's tables and the
scratch memory on the device, the pointer tables of the calls' arrays, the plans for batches of other sizes and the
tuning step's result. `gemmc.api.CompiledKernel` holds one and passes its calls to it; the runtime knows nothing of
the API.

The launch path (runtime/launch.py) reads the loaded pieces as plain attributes: after the first call each is an
instance-dictionary look-up (`functools.cached_property`), which is what keeps the host time per call flat.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from gemmc.codegen import Rendered, render_kernel
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel, TileTable
from gemmc.model import tlp
from gemmc.passes.replan import replan
from gemmc.runtime.args import Expected, expected_operands
from gemmc.runtime.compile import check_threads, device_function
from gemmc.runtime.device import cupy, hardware
from gemmc.runtime.streams import relaxed_capture

if TYPE_CHECKING:
    from gemmc.runtime.dynamic_state import DynamicState
    from gemmc.runtime.launcher import Launcher

Shapes = tuple[tuple[int, int, int], ...]

REPLAN_CACHE = 64  # plans kept per kernel for batches whose sizes differ from the schedule's


@dataclass(frozen=True)
class Tuning:
    """What the tuning step (runtime/tune.py) measured: one label and device time per candidate (the model's
    first)."""

    gpu: str
    labels: tuple[str, ...]
    seconds: tuple[float, ...]
    chosen: int
    cached: bool  # read from the disk cache, not measured in this process

    @property
    def chosen_label(self) -> str:
        return self.labels[self.chosen]

    @property
    def microseconds(self) -> dict[str, float]:
        """Each candidate's device time in us, by label (what the benchmarks record as `tuning_us`)."""
        return {label: t * 1e6 for label, t in zip(self.labels, self.seconds, strict=True)}

    @property
    def model_slowdown(self) -> float:
        """How much slower the model's choice was than the fastest candidate (0.08: 8%)."""
        return self.seconds[0] / self.seconds[self.chosen] - 1.0

    def __str__(self) -> str:
        lines = [f"tuned on {self.gpu}" + (" (cached)" if self.cached else "") + ":"]
        for i, (label, t) in enumerate(zip(self.labels, self.seconds, strict=True)):
            lines.append(f"  {label:<20} {t * 1e6:10.1f} us" + ("  <- chosen" if i == self.chosen else ""))
        lines.append(f"  the model's choice took {self.model_slowdown:.1%} longer than the fastest"
                     if self.chosen else "  the model's choice was the fastest")
        return "\n".join(lines)


class Executable:
    """One planned kernel on the GPU side. Nothing on it is loaded until a call (or `occupancy`) needs it."""

    def __init__(self, ir: Kernel, target: Hardware, filename: str, rendered: Rendered | None = None,
                 planner_seconds: float = 0.0):
        self.ir = ir
        self.target = target
        self.filename = filename
        self.planner_seconds = planner_seconds  # host time the passes took for this plan (paper 000 Fig. 7)
        self._rendered = rendered
        self.pointers: OrderedDict = OrderedDict()  # device pointer tables by the calls' pointers (launch.py)
        self.replans: dict[Any, Replan] = {}  # calls of other sizes, by the A and B shapes in call order
        self.plans: dict[Shapes, Executable] = {}  # plans for other sizes, by the sorted shapes (`plan_for`)
        self.tuned: Executable | None = None  # what calls launch once the tuning step has decided (tune.py)
        self.tuning: Tuning | None = None  # what the tuning step measured, where it measured
        self.tensor_maps: OrderedDict = OrderedDict()  # TMA tensor maps by (operand, address, pitch) (tma.py)
        self.launcher: Launcher | None = None  # the TMA kernel's argument block, made on its first launch (tma.py)
        self.scratches: dict[int, Any] = {}  # a pre-pass's scratch by stream (`scratch`)
        self.staging: dict[tuple[str, int], Any] = {}  # scratch for operands TMA cannot read in place, by operand
        #                                                and stream (tma.py)
        self.dynamic: DynamicState | None = None  # a batch sized at run time: made on its first call (dynamic.py)

    @property
    def name(self) -> str:
        return self.ir.name

    @property
    def shapes(self) -> Shapes:
        """(M, N, K) of every problem in batch order."""
        return tuple((p.m, p.n, p.k) for p in self.ir.problems) * (self.ir.count or 1)

    @property
    def rendered(self) -> Rendered:
        if self._rendered is None:
            self._rendered = render_kernel(self.ir, self.target, self.filename)
        return self._rendered

    @cached_property
    def expected(self) -> Expected:
        """What the arguments of a call must be (runtime/args.py), in batch order."""
        return expected_operands(self.ir)

    @cached_property
    def function(self) -> Any:
        """The compiled and loaded kernel, its dynamic shared memory raised where the plan needs more than the
        default."""
        work = self.ir.work
        assert work is not None
        fn = device_function(self.rendered, self.rendered.entry)
        if work.smem_bytes > hardware().smem_per_block_default:
            fn.max_dynamic_shared_size_bytes = work.smem_bytes
        check_threads(fn, self.name, work.block, "Use fewer threads or a smaller tile.")
        return fn

    @cached_property
    def prologue_function(self) -> Any:
        """The pre-pass kernel (FamilyPlan.prologue) of the same module."""
        return device_function(self.rendered, self.rendered.prologue)

    @cached_property
    def tables(self) -> tuple[Any, Any, Any]:
        """The problem table, block offsets and tiles on the device."""
        cp = cupy()
        work = self.ir.work
        assert work is not None
        problems = cp.asarray(np.frombuffer(work.problems.data, dtype="<i8").reshape(-1, 6), dtype=cp.int64)
        # one tile per block or computed tiles: a null pointer, and the kernel reads no offsets (WorkList.reads_offsets)
        offsets = np.uint64(0) if not work.reads_offsets else cp.asarray(list(work.block_offsets) or [0, 0],
                                                                          dtype=cp.int32)
        packed = work.tiles.data or bytes(TileTable.FORMAT.size)  # the kernel's int4 rows; one dummy when empty
        tiles = cp.asarray(np.frombuffer(packed, dtype="<i4").reshape(-1, 4), dtype=cp.int32)
        return problems, offsets, tiles

    def scratch(self, stream: Any) -> Any:
        """The kernel's scratch memory (FamilyPlan.scratch_bytes) for its calls on `stream`. The pre-pass and the
        main kernel of one call run in order on one stream; a call of the same kernel on another stream at the same
        time (copies of one GEMM in a concurrent group) gets scratch of its own, kept for that stream. A first call
        on a stream that is being captured into a CUDA graph allocates it outside the graph."""
        plan = self.ir.plan
        assert plan is not None
        key = int(getattr(stream, "ptr", 0) or 0)  # the legacy default stream: 0 (a caller may pass None for it)
        found = self.scratches.get(key)
        if found is None:
            with relaxed_capture():
                found = self.scratches[key] = cupy().empty(plan.scratch_bytes, dtype=cupy().uint8)
        return found

    def occupancy(self) -> tlp.Occupancy:
        """Resident blocks and warps per SM on the current device (paper 000 Eqs. 5-9 in CUDA terms), with the
        compiled kernel's own register count."""
        work = self.ir.work
        assert work is not None
        return tlp.occupancy(hardware(), work.block, self.function.num_regs, work.smem_bytes)

    def plan_for(self, shapes: Sequence[tuple[int, int, int]]) -> Executable:
        """This kernel re-planned for a batch of other sizes (same dtype, layouts, knobs), on the host.

        Plans are kept by the multiset of shapes: the batch is planned in sorted order, and a call passes its arrays
        in that order (launch.replanned), so any permutation of a batch reuses one plan. The planner's own cost is
        in `.planner_seconds`."""
        ordered = tuple(sorted((int(m), int(n), int(k)) for m, n, k in shapes))
        found = self.plans.get(ordered)
        if found is None:
            start = time.perf_counter()
            ir = replan(self.ir, self.target, ordered, self.filename)
            found = Executable(ir, self.target, self.filename, planner_seconds=time.perf_counter() - start)
            if len(self.plans) >= REPLAN_CACHE:
                self.plans.pop(next(iter(self.plans)))
            self.plans[ordered] = found
        return found


class Replan(NamedTuple):
    """A list batch of other sizes than the schedule's as a call takes it: the plan made for them (in sorted order),
    the order it takes the arrays in (order[p] is the caller's index of problem p), what the arrays must be in the
    caller's order, and the pointer tables of calls in that order."""

    kernel: Executable
    order: list[int]
    expected: Expected
    pointers: OrderedDict

"""The dynamic family: batches sized at run time (`grouped M`, `grouped K`, `grouped list`), f32/f64 on CUDA cores,
one persistent launch that derives its tiles from the sizes on the device, with the SIMT family's tile function.
bf16/f16 storage is widened to f32 as it is loaded (the SIMT family's loader) wherever the hopper_grouped family does
not run: every grouped form on targets other than cuda sm_90, there the layouts TMA cannot read (families/tma_loop.py:
grouped_misfit) and `algorithm dynamic`; a `grouped list` call whose arrays TMA cannot read falls back to it too."""

from __future__ import annotations

from pathlib import Path

from gemmc.errors import Diagnostic, InternalError
from gemmc.families.base import Claim, GridTile, PlannerFamily
from gemmc.families.dynamic import codegen, planner, preview, steps
from gemmc.families.dynamic.plan import DynamicPlan
from gemmc.families.preview import CallSizes, SchedulePreview
from gemmc.families.tma_loop import grouped_misfit, grouped_on_loop, grouped_on_loop_target
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import FamilyPlan, Kernel
from gemmc.ir.types import AUTO, Batching, DType, TileMode

NAME = "dynamic"


class Dynamic(PlannerFamily):
    planning = steps
    planner = planner
    codegen = codegen
    name = NAME
    plan_type = DynamicPlan
    folder = Path(__file__).parent
    # device pointers and group ends; no baked work list
    launcher = codegen.LAUNCHER
    header = codegen.HEADER

    def claim(self, kernel: Kernel, hw: Hardware) -> tuple[Claim, str] | None:
        dyn = kernel.dynamic
        if dyn is None:
            return None
        if kernel.dtype.half:
            if grouped_on_loop(kernel, hw):
                return None  # the hopper_grouped family's (tensor cores)
            misfit = grouped_misfit(kernel) if grouped_on_loop_target(kernel, hw) else ""
            why = f" (the TMA + wgmma loop does not run it: {misfit})" if misfit else ""
            return Claim.REQUIRED, (f"a batch sized at run time of dtype {kernel.dtypes}: a persistent kernel that "
                                    "schedules on the device, computing in f32 on CUDA cores (halves widened as they "
                                    f"are loaded){why}")
        return Claim.REQUIRED, "the batch is sized at run time: a persistent kernel that schedules on the device"

    def grid_tile(self, kernel: Kernel, plan: FamilyPlan, hw: Hardware) -> GridTile | None:
        # Persistent blocks stride over tiles derived on the device from the sizes of each call.
        if not isinstance(plan, DynamicPlan):
            raise InternalError("dynamic", f"grid_tile of a {type(plan).__name__}")
        top = plan.classes[-1].variant
        return GridTile(top.bm, top.bn, persistent=True)

    def schedule_for(self, kernel: Kernel, sizes: CallSizes, hw: Hardware) -> SchedulePreview | None:
        return preview.schedule_for(kernel, kernel.plan_as(DynamicPlan, NAME), sizes, hw)

    def check(self, kernel: Kernel, hw: Hardware) -> list[Diagnostic]:
        dyn = kernel.dynamic
        if dyn is None:
            if kernel.algorithm == NAME:
                return [Diagnostic("E202", "algorithm dynamic computes batches sized at run time",
                                   kernel.where("algorithm"),
                                   "declare one: `grouped M n N k K groups G`, `grouped K m M n N groups G` or "
                                   "`grouped list problems P`")]
            return []
        if grouped_on_loop(kernel, hw):
            return []  # the hopper_grouped family computes it and checks it
        stmt = "grouped"
        out: list[Diagnostic] = []

        def err(code: str, where: str, message: str, hint: str | None = None) -> None:
            out.append(Diagnostic(code, message, kernel.where(where), hint))

        if dyn.max_groups > planner.MAX_GROUPS:
            err("E201", stmt, f"a batch sized at run time takes at most {planner.MAX_GROUPS} groups, not "
                f"{dyn.max_groups}", "the scheduler keeps every group in shared memory")
        if kernel.algorithm not in (AUTO, NAME, "hopper_grouped"):  # hopper_grouped checks its own claim
            err("E202", "algorithm", f"algorithm {kernel.algorithm} cannot compute a batch sized at run time",
                "use algorithm auto (or dynamic)")
        if kernel.precision is not None and kernel.precision.tensor_core:
            misfit = grouped_misfit(kernel) if grouped_on_loop_target(kernel, hw) else ""
            why = f": the TMA + wgmma loop does not run it ({misfit})" if misfit else " is not supported yet"
            err("E900", "precision", f"a batch sized at run time with precision {kernel.precision} (tensor cores)"
                f"{why}", "use precision f32 (or f64 with dtype f64); for tensor cores store A and B as bf16 or f16 "
                "(dtype bf16, target cuda sm_90)")
        if kernel.dtype.widened not in (DType.F32, DType.F64):
            err("E900", "dtype", f"a batch sized at run time with dtype {kernel.dtype.value} is not supported yet")
        if kernel.tile is not None and (kernel.tile.slices > 1 or kernel.tile.split > 1):
            err("E900", "tile", "kslices and ksplit with a batch sized at run time are not supported yet")
        if kernel.tile is None and kernel.tile_mode is not TileMode.AUTO:
            err("E202", "tile", f"tile auto({kernel.tile_mode.value}) names a host planner; a batch sized at run "
                "time chooses its tiles on the device", "use tile auto, or a fixed tile")
        if kernel.batching not in (Batching.AUTO, Batching.NONE):
            err("E202", "batching", f"batching {kernel.batching.value} packs a plan's tiles on the host; the "
                "persistent kernel takes its tiles on the device", "use batching auto (or none)")
        return out


FAMILY = Dynamic()

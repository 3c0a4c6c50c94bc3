"""The hopper_grouped family: `grouped M` (the contiguous grouped form of mixture-of-experts layers), `grouped K`
(its weight gradient, hopper_grouped_k.cu.j2: docs/INTERNALS.md "Grouped K in bf16/f16") and `grouped list`
(independent problems of any sizes, hopper_grouped_list.cu.j2: tensor maps built on the device) of bf16/f16 storage on
sm_90's TMA + wgmma loop. One persistent launch whose blocks derive the tiles from the group ends on the device, as
the dynamic family's kernel does, and run each with the hopper family's producer warp, ring of mbarrier stages and two
consumer warpgroups (wgmma): 128-row tiles, and 64-row tiles for a group's last 64 rows or fewer (paper 000's size
classes). A reads through a 2-D tensor map over all rows, B through a 3-D map (groups x K x N) whose bounds clip every
group's K and N edges, C through TMA stores where a 64-row sub-tile lies inside its group."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from gemmc.errors import Diagnostic, InternalError
from gemmc.families.base import Claim, Declined, Fusion, GridTile, NotFused, PlannerFamily
from gemmc.families.hopper_grouped import codegen, fusion, planner, preview, steps
from gemmc.families.hopper_grouped.plan import HopperGroupedPlan
from gemmc.families.preview import CallSizes, SchedulePreview
from gemmc.families.tma_loop import GROUPED_TARGET as TARGET
from gemmc.families.tma_loop import (
    TMA_ALIGN,
    grouped_list_misfit,
    grouped_misfit,
    grouped_on_loop,
    grouped_on_loop_target,
)
from gemmc.ir.dynamic import INT32_MAX, Grouping
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import FamilyPlan, Kernel
from gemmc.ir.types import AUTO, DType, Layout, Span

NAME = "hopper_grouped"


class HopperGrouped(PlannerFamily):
    planning = steps
    planner = planner
    codegen = codegen
    name = NAME
    plan_type = HopperGroupedPlan
    folder = Path(__file__).parent
    launcher = codegen.LAUNCHER
    header = codegen.HEADER

    def claim(self, kernel: Kernel, hw: Hardware) -> tuple[Claim, str] | None:
        if not grouped_on_loop(kernel, hw):
            return None  # the misfits (and `algorithm dynamic`) are the dynamic family's (f32 on CUDA cores)
        form = kernel.dynamic.grouping.value if kernel.dynamic is not None else "M"
        return Claim.REQUIRED, (f"grouped {form} of dtype {kernel.dtypes} on cuda {TARGET}: a persistent TMA + wgmma "
                                "kernel that schedules on the device")

    def declines(self, kernel: Kernel, hw: Hardware) -> Declined | None:
        """A bf16/f16 batch sized at run time on sm_90 whose operands the loop cannot read (`grouped_misfit`), at the
        statement that is the reason (`Misfit.stmt`: its `layout`, or its `grouped` line for a size TMA cannot
        read)."""
        if kernel.algorithm != AUTO or not grouped_on_loop_target(kernel, hw):
            return None
        misfit = grouped_misfit(kernel)
        if not misfit:
            return None
        return Declined(f"the tensor cores' TMA + wgmma loop does not run it: {misfit}", kernel.written(misfit.stmt))

    def template(self, kernel: Kernel) -> str:
        dyn = kernel.dynamic
        if dyn is not None and dyn.grouping is Grouping.LIST:
            return codegen.TEMPLATE_LIST
        return codegen.TEMPLATE_K if dyn is not None and dyn.grouping is Grouping.K else codegen.TEMPLATE

    def check(self, kernel: Kernel, hw: Hardware) -> list[Diagnostic]:
        if not grouped_on_loop_target(kernel, hw):
            if kernel.algorithm == NAME:
                return [Diagnostic("E202", f"algorithm {NAME} computes `grouped M`, `grouped K` and `grouped list` of "
                                   f"bf16/f16 storage on target cuda {TARGET}", kernel.where("algorithm"),
                                   "write `algorithm auto`")]
            return []
        if kernel.algorithm == "dynamic" or (kernel.algorithm != NAME and grouped_misfit(kernel)):
            return []  # the dynamic family computes it (named, or by its claim, which says why); named: errors below
        out: list[Diagnostic] = []

        def err(code: str, where: str, message: str, hint: str | None = None) -> None:
            out.append(Diagnostic(code, message, kernel.where(where), hint))

        dyn = kernel.dynamic
        assert dyn is not None
        if kernel.algorithm not in (AUTO, NAME):
            err("E202", "algorithm", f"algorithm {kernel.algorithm} cannot compute a batch sized at run time of "
                f"{kernel.dtype.value} storage", "use algorithm auto")
        if dyn.max_groups > planner.MAX_GROUPS:
            err("E201", "grouped", f"grouped {dyn.grouping.value} of {kernel.dtype.value} takes at most "
                f"{planner.MAX_GROUPS} {'problems' if dyn.grouping is Grouping.LIST else 'groups'}, not "
                f"{dyn.max_groups}",
                f"the scheduler keeps every {'problem' if dyn.grouping is Grouping.LIST else 'group'} in shared memory "
                "beside the TMA ring; `algorithm dynamic` takes more, computing in f32 on CUDA cores")
        nbytes = kernel.dtype.nbytes
        form = dyn.grouping.value
        if dyn.grouping is Grouping.K:
            if (kernel.layout_a, kernel.layout_b, kernel.layout_c) != (Layout.COL, Layout.ROW, Layout.ROW):
                err("E900", "layout", f"grouped K of {kernel.dtype.value} reads A as X^T (X rows x m row-major), B "
                    "rows x n and each C_g row-major (torch._grouped_mm's weight gradient); other layouts have lines "
                    "of the reduction's rows, a count known only at the call", "write `layout A col` and leave B and "
                    "C row-major")
            if dyn.max_groups * dyn.m > INT32_MAX:
                err("E201", "grouped", f"grouped K of {kernel.dtype.value}: {dyn.max_groups} groups of m {dyn.m} are "
                    "more rows of C than a tensor map's int32 coordinates reach", "declare fewer groups")
            for name, size in (("m", dyn.m), ("n", dyn.n)):
                if (size * nbytes) % TMA_ALIGN:
                    err("E900", "grouped", f"{name} {size}: TMA reads lines of {size * nbytes} bytes, not a multiple "
                        f"of {TMA_ALIGN}", f"pad {name} to a multiple of {TMA_ALIGN // nbytes}")
        elif dyn.grouping is Grouping.LIST:
            misfit = grouped_list_misfit(kernel)
            if misfit:
                err("E900", "layout", f"grouped list of {kernel.dtype.value}: {misfit}; a column-major A or C is not "
                    "supported", "leave A and C row-major (B may be either)")
        else:
            if kernel.layout_a is not Layout.ROW or kernel.layout_c is not Layout.ROW:
                err("E900", "layout", f"grouped M of {kernel.dtype.value} reads A and writes C row-major (rows stacked "
                    "by group, as torch._grouped_mm); a column-major A or C is not supported", "write `layout B col` "
                    "or leave the layouts out")
            if (dyn.k * nbytes) % TMA_ALIGN:
                err("E900", "grouped", f"k {dyn.k}: TMA reads rows of A of {dyn.k * nbytes} bytes, not a multiple of "
                    f"{TMA_ALIGN}", f"pad k to a multiple of {TMA_ALIGN // nbytes}")
            if kernel.layout_b is Layout.ROW and (dyn.n * nbytes) % TMA_ALIGN:
                err("E900", "grouped", f"n {dyn.n}: TMA reads rows of row-major B of {dyn.n * nbytes} bytes, not a "
                    f"multiple of {TMA_ALIGN}", f"pad n to a multiple of {TMA_ALIGN // nbytes}, or write "
                    "`layout B col`")
        prec = kernel.precision
        if prec is not None and prec.compute is DType.F32:
            err("E202", "precision", f"grouped {form} of half storage multiplies on tensor cores, not in f32",
                "leave `precision` out, or write `algorithm dynamic` to compute in f32 on CUDA cores")
        if kernel.threads is not None and kernel.threads != 384:
            err("E202", "threads", f"the hopper_grouped family's blocks are 384 threads, not {kernel.threads}",
                "write `threads auto`")
        if kernel.tile is not None and (kernel.tile.slices > 1 or kernel.tile.split > 1):
            err("E900", "tile", "kslices and ksplit with a batch sized at run time are not supported yet")
        return out

    def schedule_for(self, kernel: Kernel, sizes: CallSizes, hw: Hardware) -> SchedulePreview | None:
        return preview.schedule_for(kernel, kernel.plan_as(HopperGroupedPlan, NAME), sizes, hw)

    def grid_tile(self, kernel: Kernel, plan: FamilyPlan, hw: Hardware) -> GridTile | None:
        if not isinstance(plan, HopperGroupedPlan):
            raise InternalError(NAME, f"grid_tile of a {type(plan).__name__}")
        return GridTile(plan.bm, plan.bn, persistent=True)  # blocks walk the tiles derived on the device

    fuses = fusion.MEMBERS

    def fuse(self, members: Mapping[str, Kernel], name: str, span: Span, hw: Hardware) -> Fusion | NotFused:
        return fusion.fuse(members, name, span, hw)

    def prefer_fused(self, fused: Kernel, members: Sequence[Kernel], hw: Hardware) -> tuple[bool, str]:
        return fusion.prefer_fused(members, hw.sm_count)


FAMILY = HopperGrouped()

"""Template context of the dynamic family (dynamic.cu.j2, dynamic_sched.cuh.j2, and the launcher and header
of a dynamic kernel beside them)."""

from __future__ import annotations

from gemmc.families.base import cbool
from gemmc.families.dynamic.plan import SORT_GROUPS, DynamicPlan
from gemmc.ir.dynamic import INT32_MAX
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel
from gemmc.ir.types import Layout

TEMPLATE = "dynamic.cu.j2"
LAUNCHER = "dynamic_launcher.j2"
HEADER = "dynamic_header.h.j2"
SM_COUNT_ATTRIBUTE = {"cuda": "cudaDevAttrMultiProcessorCount", "hip": "hipDeviceAttributeMultiprocessorCount"}


def dynamic_plan(kernel: Kernel) -> DynamicPlan:
    return kernel.plan_as(DynamicPlan, "codegen.dynamic")


def context(kernel: Kernel, hw: Hardware) -> dict:
    plan = dynamic_plan(kernel)
    dyn = kernel.dynamic
    assert dyn is not None
    variants = [dict(index=i, bm=c.variant.bm, bn=c.variant.bn, bk=c.variant.bk, tm=c.variant.tm, tn=c.variant.tn,
                     threads=c.variant.threads, slices=c.variant.slices, level=c.level, weight=c.weight,
                     smem=plan.tiles.variant_smem(c.variant), edges=c.edges)
                for i, c in enumerate(plan.classes)]
    return {
        # the SIMT family's template, included for its loader and tile function only (simt.cu.j2)
        "tile_library": True,
        "ksplit": 1,
        "variants": variants,
        "levels": len(plan.levels),
        "block_threads": plan.threads,
        "min_blocks": plan.tiles.min_blocks,
        "stages": plan.tiles.stages,
        "pad": plan.tiles.pad,
        "grouping": dyn.grouping.value,
        "dynamic_summary": str(dyn),
        "max_groups": plan.max_groups,
        "parts": plan.parts,
        "tail_split": plan.tail_split,
        "sort_groups": SORT_GROUPS,
        "max_rows": dyn.max_rows,
        "int32_max": INT32_MAX,
        "fixed_m": dyn.m,
        "fixed_n": dyn.n,
        "fixed_k": dyn.k,
        "tlp_threshold": plan.tlp_threshold,
        "tlp_waves": plan.tlp_waves,  # the default threshold: this many waves of the grid's threads
        "min_tile": plan.min_tile,
        "tile_smem": plan.tile_smem,
        "sm_count_attribute": SM_COUNT_ATTRIBUTE[hw.vendor],
        # Row-major A (m x k) and column-major B (k x n) are contiguous along k.
        "a_kcontig": cbool(kernel.layout_a is Layout.ROW),
        "b_kcontig": cbool(kernel.layout_b is Layout.COL),
        "a_row": cbool(kernel.layout_a is Layout.ROW),
        "b_row": cbool(kernel.layout_b is Layout.ROW),
        "c_row": cbool(kernel.layout_c is Layout.ROW),
    }


def knobs(kernel: Kernel) -> list[str]:
    plan = dynamic_plan(kernel)
    assert kernel.dynamic is not None
    # The fixed sizes are launch arguments, not in the source: schedules that differ only in them share a compile.
    return ([f"grouping {kernel.dynamic.grouping.value}, up to {plan.max_groups} groups"]
            + [f"variant {i}: level {c.level} {c.level_name}, {c.variant}, weight {c.weight}"
               for i, c in enumerate(plan.classes)]
            + [f"pipeline stages {plan.tiles.stages}", f"scheduler: up to {plan.max_groups} groups, TLP threshold "
               + (f"{plan.tlp_threshold} threads" if plan.tlp_threshold else "one wave of the persistent grid")])

"""Template context of the SIMT family (simt.cu.j2 beside this file)."""

from __future__ import annotations

from gemmc.families.base import cbool, raster_context
from gemmc.families.simt.plan import SimtPlan
from gemmc.families.simt.tiling import edge_lookup
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel
from gemmc.ir.types import Layout

TEMPLATE = "simt.cu.j2"


def context(kernel: Kernel, hw: Hardware) -> dict:
    plan = kernel.plan_as(SimtPlan, "codegen.simt")
    variants = [dict(index=i, bm=v.bm, bn=v.bn, bk=v.bk, tm=v.tm, tn=v.tn, threads=v.threads, slices=v.slices,
                     smem=plan.variant_smem(v))
                for i, v in enumerate(plan.variants)]
    raster = raster_context(kernel)
    return {
        "variants": variants,
        "raster": raster,
        # a uniform launch's edge tiles: the variant each edge kind of its tiles runs (tiling.edge_lookup)
        "raster_edges": tuple(edge_lookup(plan)[raster["variant"]].tolist()) if raster and plan.edges else (),
        "block_threads": plan.threads,
        "min_blocks": plan.min_blocks,
        "ksplit": plan.ksplit,
        "cluster_attribute": f"__cluster_dims__({plan.ksplit}, 1, 1)" if plan.ksplit > 1 else "",
        "stages": plan.stages,
        "pad": plan.pad,
        # Row-major A (m x k) and column-major B (k x n) are contiguous along k.
        "a_kcontig": cbool(kernel.layout_a is Layout.ROW),
        "b_kcontig": cbool(kernel.layout_b is Layout.COL),
        "c_row": cbool(kernel.layout_c is Layout.ROW),
    }


def knobs(kernel: Kernel) -> list[str]:
    plan = kernel.plan_as(SimtPlan, "codegen.simt")
    split = [f"k split over clusters of {plan.ksplit} blocks"] if plan.ksplit > 1 else []
    return [f"variant {i}: {v}" for i, v in enumerate(plan.variants)] + [f"pipeline stages {plan.stages}"] + split

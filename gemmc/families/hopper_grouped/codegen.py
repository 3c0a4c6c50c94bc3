"""Template context of the hopper_grouped family (hopper_grouped.cu.j2 and its launcher and header beside it). The
kernel includes the hopper family's device helpers (hopper/hopper_device.cuh.j2, hopper/wgmma.cuh.j2) and the
dynamic family's validation kernel (dynamic/validate.cuh.j2), so their context names are given here too."""

from __future__ import annotations

from gemmc.families.base import cbool
from gemmc.families.hopper_grouped.plan import (
    LIST_COUNTER_BYTES,
    LIST_MAPS,
    LIST_MAPS_WARPS,
    LIST_TEMPLATE_DIMS,
    LIST_TEMPLATE_PITCH,
    HopperGroupedPlan,
)
from gemmc.families.tma_loop import C_BUFFERS, MAX_STAGES, TMAP_DTYPE
from gemmc.ir.dynamic import INT32_MAX
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel

TEMPLATE = "hopper_grouped.cu.j2"
TEMPLATE_K = "hopper_grouped_k.cu.j2"  # grouped K (the weight gradient): the family's template(kernel) picks it
TEMPLATE_LIST = "hopper_grouped_list.cu.j2"  # grouped list: tensor maps per problem, built on the device
LAUNCHER = "hopper_grouped_launcher.j2"
HEADER = "hopper_grouped_header.h.j2"


def _plan(kernel: Kernel) -> HopperGroupedPlan:
    return kernel.plan_as(HopperGroupedPlan, "codegen.hopper_grouped")


def context(kernel: Kernel, hw: Hardware) -> dict:
    plan = _plan(kernel)
    dyn = kernel.dynamic
    assert dyn is not None
    number = hw.arch.removeprefix("sm_")
    return {
        # the hopper family's device helpers (hopper/hopper_device.cuh.j2): one block, no cluster, half storage
        # (grouped K: A M-major, the transpose bit set)
        "cluster": plan.cluster, "tma_store": True, "parts": 0, "split": False, "c_row": "true",
        "a_kmajor": cbool(not plan.grouped_k),
        "acc_regs": plan.bn // 2, "half_bn": plan.bn // 2, "half_regs": plan.bn // 4,
        "bm": plan.bm, "small_bm": plan.small_bm, "bn": plan.bn, "bk": plan.bk, "stages": plan.stages,
        "consumers": plan.consumers, "threads": plan.threads, "producer_regs": plan.producer_regs,
        "consumer_regs": plan.consumer_regs, "tail_split": plan.tail_split, "band": plan.band,
        "a_bytes": plan.a_bytes, "a_small_bytes": plan.a_small_bytes,
        "b_bytes": plan.b_bytes, "stage_bytes": plan.stage_bytes, "dynamic_smem": plan.dynamic_smem_bytes,
        "sched_smem": plan.sched_smem, "b_kmajor": cbool(plan.b_kmajor), "compute": plan.compute,
        "boxw": plan.box_width, "a_box": plan.a_box, "b_box": plan.b_box, "c_box": plan.c_box,
        "c_type": kernel.c_dtype.value, "c_bytes": plan.c_bytes, "c_sub_cols": plan.c_sub_cols,
        "c_buffers": C_BUFFERS, "beta_zero": cbool(kernel.beta == 0.0),
        "max_groups": plan.max_groups, "max_rows": dyn.max_rows, "int32_max": INT32_MAX,
        "fixed_m": dyn.m, "fixed_n": dyn.n, "fixed_k": dyn.k, "dynamic_summary": str(dyn),
        "grouped_k": plan.grouped_k, "grouped_list": plan.grouped_list, "maps_bytes": plan.list_maps_bytes,
        # grouped list: the stages' tile numbers (s_tile) as the plan counts them, the maps per problem, the planning
        # kernel's block, the launcher's workspace and template maps as the Python runtime has them too
        "max_stages": MAX_STAGES, "list_maps": LIST_MAPS, "maps_warps": LIST_MAPS_WARPS,
        "maps_threads": 32 * LIST_MAPS_WARPS, "list_counter_bytes": LIST_COUNTER_BYTES,
        "template_dims": LIST_TEMPLATE_DIMS, "template_pitch": LIST_TEMPLATE_PITCH,
        "tmap_dtype": TMAP_DTYPE[kernel.dtype], "tmap_dtype_c": TMAP_DTYPE[kernel.c_dtype],
        "header_notes": [f"Build the .cu with nvcc -gencode=arch=compute_{number}a,code=sm_{number}a -std=c++17 and "
                         "link with -lcuda: the launcher encodes TMA tensor maps with the driver API "
                         "(cuTensorMapEncodeTiled)."],
    }


def knobs(kernel: Kernel) -> list[str]:
    return list(_plan(kernel).lines())

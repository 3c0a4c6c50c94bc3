"""The hopper family: bf16/f16 storage, and f32 storage with tf32 products (`precision tf32`, `split tf32 x3`, which
the tensorcore family hands over where TMA can read the operands), on sm_90's TMA + wgmma main loop (sm_90a), the way
CUTLASS's and DeepGEMM's warp-specialized persistent kernels are built: a producer warp streams A and B tiles through
a ring of shared-memory stages with the tensor memory accelerator, two consumer warpgroups multiply them with wgmma,
mbarriers pass the stages between them, and the blocks stay resident and walk the output tiles in L2-friendly
bands."""

from __future__ import annotations

from pathlib import Path

from gemmc.errors import Diagnostic, InternalError
from gemmc.families.base import Claim, PlannerFamily
from gemmc.families.hopper import codegen, planner, steps
from gemmc.families.hopper.plan import HopperPlan
from gemmc.families.tensorcore import hopper_loop
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import FamilyPlan, Kernel
from gemmc.ir.types import AUTO, DType

NAME = "hopper"
TARGET = "sm_90"  # the TMA + wgmma loop; the kernel is built for the architecture-specific sm_90a


class Hopper(PlannerFamily):
    planning = steps
    planner = planner
    codegen = codegen
    name = NAME
    plan_type = HopperPlan
    folder = Path(__file__).parent
    launcher = "hopper_launcher.j2"

    def claim(self, kernel: Kernel, hw: Hardware) -> tuple[Claim, str] | None:
        if kernel.dtype.half:
            return Claim.REQUIRED, f"dtype {kernel.dtype.value} storage multiplies on the TMA + wgmma loop"
        if hopper_loop.blocker(kernel, hw) is None:
            return Claim.REQUIRED, (f"precision {kernel.precision} of f32 data on the TMA + wgmma loop (TMA reads "
                                    "the f32 tiles; the tf32 parts are formed in shared memory)")
        return None

    def check(self, kernel: Kernel, hw: Hardware) -> list[Diagnostic]:
        diags: list[Diagnostic] = []

        def err(code: str, stmt: str, message: str, hint: str | None = None) -> None:
            diags.append(Diagnostic(code, message, kernel.where(stmt), hint))

        half = kernel.dtype.half
        if kernel.algorithm == NAME and not half:
            err("E202", "algorithm", f"algorithm hopper multiplies bf16/f16 storage, not {kernel.dtype.value}",
                "write `dtype bf16` or `dtype f16`; f32 data on tensor cores is `precision f16|bf16|tf32` "
                "(the tensorcore family)")
        if not half:
            return diags
        if kernel.algorithm not in (AUTO, NAME):
            err("E202", "algorithm", f"dtype {kernel.dtype.value} storage runs in the hopper family, not with "
                f"algorithm {kernel.algorithm}", "write `algorithm auto` or `algorithm hopper`")
        if hw.vendor != "cuda" or hw.arch != TARGET:
            err("E900", "dtype", f"dtype {kernel.dtype.value} storage runs on target cuda {TARGET} only so far "
                f"(the hopper family's TMA + wgmma loop); {hw.vendor} {hw.arch} is not supported yet",
                f"write `target cuda {TARGET}`")
        if kernel.count is not None or len(kernel.problems) != 1:
            err("E900", "batch" if kernel.count is None else "gemm", f"dtype {kernel.dtype.value} storage runs "
                "one GEMM per kernel so far; batches are not supported yet", "use `gemm M x N x K`")
        prec = kernel.precision
        if prec is not None and prec.compute is DType.F32:
            err("E900", "precision", f"f32 products of {kernel.dtype.value} storage (CUDA cores) are not "
                "supported yet", f"leave `precision` out: {kernel.dtype.value} products accumulate in f32")
        if kernel.threads is not None and kernel.threads != 384:
            err("E202", "threads", f"the hopper family's blocks are 384 threads (a producer and two consumer "
                f"warpgroups), not {kernel.threads}", "write `threads auto`")
        if kernel.tile is not None and (kernel.tile.slices > 1 or kernel.tile.split > 1):
            err("E202", "tile", "kslices and ksplit belong to the SIMT family", "leave them out")
        return diags

    def grid_tile(self, kernel: Kernel, plan: FamilyPlan, hw: Hardware) -> tuple[int, int, int] | None:
        if not isinstance(plan, HopperPlan):
            raise InternalError("hopper", f"grid_tile of a {type(plan).__name__}")
        return plan.bm, plan.bn, 0  # persistent blocks walk every tile of the raster order


FAMILY = Hopper()

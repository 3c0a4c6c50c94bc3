"""The hopper family: bf16/f16 storage, and f32 storage with tf32 products (`precision tf32`, `split tf32 x3`, which
the tensorcore family hands over where TMA can read the operands), on sm_90's TMA + wgmma main loop (sm_90a), the way
CUTLASS's and DeepGEMM's warp-specialized persistent kernels are built: a producer warp streams A and B tiles through
a ring of shared-memory stages with the tensor memory accelerator, two consumer warpgroups multiply them with wgmma,
mbarriers pass the stages between them, and the blocks stay resident and walk the output tiles in L2-friendly
bands."""

from __future__ import annotations

from pathlib import Path

from gemmc.errors import Diagnostic, InternalError
from gemmc.families.base import Claim, Declined, GridTile, PlannerFamily
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
        if runs_here(kernel, hw):
            return Claim.SHAPE, f"dtype {kernel.dtypes}, one GEMM on cuda {TARGET}: the TMA + wgmma loop"
        if hopper_loop.blocker(kernel, hw) is None:
            if planner.f32_split(kernel) is not None:
                return Claim.REQUIRED, (f"precision {kernel.precision} of f32 data on the TMA + wgmma loop (a "
                                        "pre-pass writes the parts as planes; TMA streams them as half data)")
            return Claim.REQUIRED, (f"precision {kernel.precision} of f32 data on the TMA + wgmma loop (TMA reads "
                                    "the f32 tiles; the tf32 parts are formed in shared memory)")
        return None

    def declines(self, kernel: Kernel, hw: Hardware) -> Declined | None:
        """One bf16/f16 GEMM on sm_90 that a statement keeps off the loop (`kept_off`), under `algorithm auto`."""
        return kept_off(kernel) if kernel.algorithm == AUTO and on_target(kernel, hw) else None

    def check(self, kernel: Kernel, hw: Hardware) -> list[Diagnostic]:
        diags: list[Diagnostic] = []

        def err(code: str, stmt: str, message: str, hint: str | None = None) -> None:
            diags.append(Diagnostic(code, message, kernel.where(stmt), hint))

        if kernel.algorithm != NAME:
            return diags  # under `algorithm auto` the family claims only what it builds (runs_here)
        if not kernel.dtype.half:
            if hopper_loop.candidate(kernel, hw):  # f32 data with tensor-core products
                why = hopper_loop.blocker(kernel, hw)
                if why is not None:
                    err("E202", "algorithm", f"algorithm hopper runs precision {kernel.precision} of f32 data, but "
                        f"not here: {why}", "write `algorithm auto`: the tensorcore family takes it")
            else:
                err("E202", "algorithm", f"algorithm hopper multiplies bf16/f16 storage, or f32 data with "
                    f"tensor-core products on cuda {TARGET}, not {kernel.dtype.value}",
                    "write `dtype bf16` or `dtype f16`, or a tensor-core precision such as `precision split f16 x3`")
            return diags
        if hw.vendor != "cuda" or hw.arch != TARGET:
            err("E202", "algorithm", f"algorithm hopper is the TMA + wgmma loop of target cuda {TARGET}; "
                f"{hw.vendor} {hw.arch} has neither", "write `algorithm auto`: the SIMT family computes "
                f"{kernel.dtype.value} storage on every target")
        if kernel.count is not None or len(kernel.problems) != 1:
            err("E900", "batch" if kernel.count is None else "gemm", "algorithm hopper runs one GEMM per kernel; "
                "its batches are not supported yet", "write `algorithm auto`: the SIMT family runs a batch of "
                f"{kernel.dtype.value} GEMMs in one launch")
        prec = kernel.precision
        if prec is not None and prec.compute is DType.F32:
            err("E202", "precision", "algorithm hopper multiplies on tensor cores, not in f32",
                "leave `precision` out, or write `algorithm auto`: f32 products of half storage run in the SIMT "
                "family")
        if kernel.threads is not None and kernel.threads != 384:
            err("E202", "threads", f"the hopper family's blocks are 384 threads (a producer and two consumer "
                f"warpgroups), not {kernel.threads}", "write `threads auto`")
        if kernel.tile is not None and kernel.tile.slices > 1:
            err("E202", "tile", "kslices belong to the SIMT family", "leave them out")
        if kernel.tile is not None and kernel.tile.split not in planner.KSPLITS:
            err("E204", "tile", f"the hopper family splits K over clusters of at most {max(planner.KSPLITS)} blocks, "
                f"not {kernel.tile.split}", f"write ksplit 2 to {max(planner.KSPLITS)}, or leave it out")
        return diags

    def grid_tile(self, kernel: Kernel, plan: FamilyPlan, hw: Hardware) -> GridTile | None:
        if not isinstance(plan, HopperPlan):
            raise InternalError("hopper", f"grid_tile of a {type(plan).__name__}")
        # persistent blocks (clusters of k-slices with split K) walk every tile of the raster order
        return GridTile(plan.bm, plan.bn, plan.ksplit, persistent=True)


def runs_here(kernel: Kernel, hw: Hardware) -> bool:
    """`algorithm auto` takes the TMA + wgmma loop for one bf16/f16 GEMM on target cuda sm_90 that nothing in its
    schedule keeps off it (`kept_off`); the SIMT family computes every other half-precision kernel (batches, other
    targets)."""
    return on_target(kernel, hw) and kept_off(kernel) is None


def on_target(kernel: Kernel, hw: Hardware) -> bool:
    """bf16/f16 data with sizes in the schedule on target cuda sm_90: what the loop is built for."""
    return kernel.dtype.half and hw.vendor == "cuda" and hw.arch == TARGET and kernel.dynamic is None


def kept_off(kernel: Kernel) -> Declined | None:
    """What in a schedule keeps a bf16/f16 kernel off the loop, at its statement, or None: a batch (the loop
    computes one GEMM a launch), threads other than its 384, kslices, a ksplit it does not run (KSPLITS), or
    products in f32 (`precision f32`)."""
    loop = "the tensor cores' TMA + wgmma loop"
    if kernel.count is not None or len(kernel.problems) != 1:
        return Declined(f"a batch of {kernel.batch_size} GEMMs: {loop} computes one GEMM a launch (a `grouped list` "
                        "kernel runs a batch of GEMMs on the tensor cores)", kernel.problems_span)
    if kernel.threads not in (None, 384):
        return Declined(f"`threads {kernel.threads}`: {loop} runs 384 threads (a producer warpgroup and two "
                        "consumers); write `threads auto`", kernel.where("threads"))
    tile = kernel.tile
    if tile is not None and tile.slices != 1:
        return Declined(f"`kslices {tile.slices}`: {loop} slices no k-tile", kernel.where("tile"))
    if tile is not None and tile.split not in planner.KSPLITS:
        return Declined(f"`ksplit {tile.split}`: {loop} splits K in "
                        f"{', '.join(map(str, planner.KSPLITS))} blocks", kernel.where("tile"))
    if kernel.precision is not None and kernel.precision.compute is DType.F32:
        return Declined("`precision f32`: f32 products, which the tensor cores do not compute",
                        kernel.where("precision"))
    return None


FAMILY = Hopper()

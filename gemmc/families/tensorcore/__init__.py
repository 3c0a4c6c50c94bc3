"""The tensor-core family: f32 data with products on tensor cores, in one pass (f16, bf16, tf32) or split into
several terms that emulate f32 products (paper 001, LE-GEMM, and its successors); wgmma on sm_90, mma.sync
elsewhere."""

from __future__ import annotations

from pathlib import Path

from gemmc.errors import Diagnostic
from gemmc.families.base import Claim, PlannerFamily
from gemmc.families.cells import CellKind, Cells, planned, tile_cells
from gemmc.families.tensorcore import codegen, hopper_loop, planner, steps
from gemmc.families.tensorcore.plan import TensorCorePlan
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel
from gemmc.ir.types import DType

NAME = "tensorcore"


def requested(kernel: Kernel) -> bool:
    """The schedule asks for this family: a tensor-core precision of f32 data, or `algorithm tensorcore`."""
    return kernel.algorithm == NAME or _tc_precision(kernel)


def _tc_precision(kernel: Kernel) -> bool:
    """f32 data with products on tensor cores (bf16/f16 storage multiplies on them too, in the hopper family)."""
    prec = kernel.precision
    return prec is not None and prec.tensor_core and not kernel.dtype.half


class TensorCore(PlannerFamily):
    planning = steps
    planner = planner
    codegen = codegen
    name = NAME
    plan_type = TensorCorePlan
    folder = Path(__file__).parent

    def cells(self, kernel: Kernel, hw: Hardware) -> Cells:
        """The work list's tiles, one block each, all of the plan's one block tile."""
        plan, work = planned(kernel, TensorCorePlan)
        v = plan.variant
        kind = CellKind("variant 0", v.bm, v.bn, v.threads,
                        f"{v.bm}x{v.bn}x{v.bk}, warp tile {v.wm}x{v.wn}, {v.threads} threads")
        return tile_cells(work, (kind,))

    def claim(self, kernel: Kernel, hw: Hardware) -> tuple[Claim, str] | None:
        if _tc_precision(kernel) and hopper_loop.blocker(kernel, hw) is not None:
            return Claim.REQUIRED, f"precision {kernel.precision} runs on tensor cores"
        return None

    def check(self, kernel: Kernel, hw: Hardware) -> list[Diagnostic]:
        diags: list[Diagnostic] = []
        prec = kernel.precision
        tc_precision = _tc_precision(kernel)
        if kernel.dtype.half:  # bf16/f16 storage: the hopper family (one GEMM on sm_90) or SIMT (f32 FMAs)
            if kernel.algorithm == NAME:
                diags.append(Diagnostic(
                    "E202", f"algorithm tensorcore computes f32 data; dtype {kernel.dtype.value} storage runs in the "
                    "hopper family (one GEMM on sm_90) or the SIMT family", kernel.where("algorithm"),
                    "write `algorithm auto`"))
            return diags
        if kernel.algorithm == NAME and not tc_precision:
            diags.append(Diagnostic(
                "E202", "algorithm tensorcore needs a tensor-core precision", kernel.where("algorithm"),
                "the tensor-core family computes f32 data only: use `algorithm simt` for f64 (or `algorithm tsm2r`, "
                "on sm_90's f64 tensor cores, for a tall-and-skinny B)" if kernel.dtype is DType.F64 else
                "add `precision f16`, `precision tf32` or `precision split f16 x3` (f32 products on tensor cores)"))
        elif tc_precision and kernel.algorithm not in ("auto", NAME) and not (
                kernel.algorithm == hopper_loop.HOPPER and hopper_loop.candidate(kernel, hw)):  # the hopper check's
            diags.append(Diagnostic("E202", f"precision {prec} runs on tensor cores, not with algorithm "
                                    f"{kernel.algorithm}", kernel.where("algorithm"),
                                    "use `algorithm tensorcore` or `algorithm auto`"))
        if requested(kernel) and kernel.tile is not None and kernel.tile.slices > 1:
            diags.append(Diagnostic("E202", "kslices splits the k-tiles of the SIMT family; the tensor-core family "
                                    "has none", kernel.where("tile"), "leave out `kslices`, or use precision f32/f64"))
        # a schedule's tile keeps a tensor-core precision off the hopper loop (hopper_loop.blocker): under auto, and
        # named, this family runs the kernel the ksplit is on
        ours = kernel.algorithm in (NAME, "auto")
        if requested(kernel) and ours and kernel.tile is not None and kernel.tile.split > 1:
            diags.append(Diagnostic("E202", f"ksplit {kernel.tile.split} splits K over a thread-block cluster in the "
                                    "SIMT and hopper families; the tensor-core family's mma.sync loop does not",
                                    kernel.where("tile"), "leave out `ksplit`" + (  # SIMT splits on clusters only
                                        ", or use precision f32 (SIMT)" if hw.has_clusters else "")))
        if requested(kernel) and not hw.has_tensor_cores:
            diags.append(Diagnostic("E900", f"precision {prec} needs tensor cores (CUDA sm_80 or newer); HIP MFMA is "
                                    "not generated yet", kernel.where("precision")))
        return diags


FAMILY = TensorCore()

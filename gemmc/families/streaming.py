"""Paper 002's streaming model (TSM2X), shared by the TSM2R and TSM2L families: the t2 threshold between memory-
and compute-bound, and Little's law over the launch's resident threads.

Both families read A once and are memory-bound while n is below the t2 threshold (Peak FLOP/s / peak bandwidth x
element bytes, paper §3.1.8). Their parameters come from Little's law over the launch's real parallelism, with the
constants of `Hardware` (paper §3.1.9 and §3.2; its gradient descent is replaced by enumeration of the few integer
candidates, which the digest recommends).
"""

from __future__ import annotations

import math

from gemmc.errors import Diagnostic
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel
from gemmc.ir.types import DType
from gemmc.model.tlp import occupancy

T2_MAX = 32  # C columns a thread keeps in registers per pass


def t2_threshold(hw: Hardware, dtype: DType) -> float:
    """Paper 002 §3.1.8 as printed: Peak FLOP/s / Peak bandwidth x bytes per element (with FLOP/s counting an FMA
    as 2, as the paper's reported thresholds do: V100 double ~ 67, K40c ~ 40)."""
    flops = hw.f64_flops if dtype is DType.F64 else hw.fp32_flops
    return flops / hw.mem_bandwidth * dtype.nbytes


def choose_t2(n: int, threshold: float) -> int:
    """Memory-bound (n <= threshold): all n columns in one pass, so A is read once (up to T2_MAX). Compute-bound:
    the smallest power of two at or above the threshold (the paper's M40 double case: threshold 5.9 -> t2 8)."""
    if n <= threshold:
        return min(n, T2_MAX)
    return min(n, T2_MAX, 1 << max(0, math.ceil(math.log2(threshold))))


LOADED_LATENCY = 2  # a loaded memory system's latency is about twice the idle one: Little's law gets this margin


def bytes_needed_in_flight(hw: Hardware) -> float:
    """Little's law per SM: bandwidth x latency under load / SMs."""
    return hw.mem_bandwidth * (LOADED_LATENCY * hw.mem_latency_cycles / hw.clock_hz) / hw.sm_count


def resident_threads(hw: Hardware, total_threads: int, regs: int, smem: int, block: int) -> int:
    """Threads per SM with blocks of `block` threads: what occupancy allows, or fewer when the grid has fewer
    threads than the machine holds."""
    occ = occupancy(hw, block, regs, smem)
    return min(occ.warps_per_sm * hw.warp_size, max(1, total_threads // hw.sm_count))


HALF_TMA_RESULTS = "bench/results/half/2026-11-26_h100_half-tsm2-point.json"


def half_goes_to_tma(kernel: Kernel, hw: Hardware) -> bool:
    """bf16/f16 storage on a target with TMA + wgmma (sm_90): `algorithm auto` leaves even tall-and-skinny shapes to
    the hopper family. Measured on the H100 (HALF_TMA_RESULTS): 16384 x 16 x 16384 bf16, A column-major, the hopper
    loop streams 3.0 TB/s (0.98x cuBLAS) and TSM2R 1.2 TB/s (0.39x): with f32 FMAs from halves TSM2R issues twice the
    FMAs per byte of f32 data and is bound by them, not by memory. Elsewhere the TSM2 families claim half shapes by
    their f32 crossovers against SIMT, which halves its bytes too (unmeasured for halves)."""
    return kernel.dtype.half and hw.has_tma


def one_gemm_diagnostics(kernel: Kernel, name: str) -> list[Diagnostic]:
    """What both TSM2 families refuse: batches (a half batch runs in the SIMT family)."""
    diags = []
    if kernel.count is not None or len(kernel.problems) != 1:
        diags.append(Diagnostic("E900", f"algorithm {name} runs one GEMM per kernel; batches are not "
                                "supported yet", kernel.where("algorithm"), "use `gemm M x N x K`"))
    return diags


def own_parameters_diagnostic(kernel: Kernel, name: str) -> list[Diagnostic]:
    if kernel.tile is not None or kernel.threads is not None:
        return [Diagnostic("E202", f"algorithm {name} chooses its own tile and threads (t1, t2, t3)",
                           kernel.where("tile" if kernel.tile is not None else "threads"))]
    return []

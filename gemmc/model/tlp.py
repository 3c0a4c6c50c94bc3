"""The warp-level parallelism model (paper 000 §4.2.1, Eqs. 3-9, in CUDA terms) and occupancy.

Paper 000 gives per-CU limits for AMD CDNA2 (Eqs. 5-9: work-items, VGPRs, SGPRs, LDS, waves per CU) and no NVIDIA
version. On NVIDIA the same limits are: threads per SM, registers per SM (allocated per warp in units of
`reg_alloc_unit` registers per thread... rounded to 256 registers a warp), shared memory per SM (plus 1 KiB the
runtime reserves per block on sm_80+), blocks per SM and warps per SM. All of them come from `Hardware`.

Two parallelism measures exist side by side so that the paper's ablation can be reproduced:
- old TLP (Eq. 3, paper 003's Eq. 1): sum over problems of tiles x threads per block;
- new TLP (Eq. 4): phi x warp size, where phi counts the warps that do work: a tile of a 128-thread variant in
  a 256-thread block retires its 4 idle warps at once, so it contributes 4 warps, not 8.
"""

from __future__ import annotations

from dataclasses import dataclass

from gemmc.ir.hardware import Hardware

SMEM_RESERVED_PER_BLOCK = 1024  # bytes the CUDA runtime keeps per resident block on sm_80 and newer
REGS_PER_WARP_GRANULE = 256  # registers are handed to warps in chunks of 256 (8 per thread x 32 lanes)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True, slots=True)
class Occupancy:
    """Resident blocks and warps per SM for one kernel, and which limit binds."""

    blocks_per_sm: int
    warps_per_sm: int
    limit: str  # "threads" | "registers" | "shared memory" | "blocks" | "warps"

    def fraction(self, hw: Hardware) -> float:
        return self.warps_per_sm / hw.max_warps_per_sm


def occupancy(hw: Hardware, threads: int, regs_per_thread: int, smem_per_block: int) -> Occupancy:
    """Eqs. 5-9 for NVIDIA (and, with the wave size, CDNA): the minimum over each resource's limit."""
    warps = ceil_div(threads, hw.warp_size)
    regs_per_warp = ceil_div(max(regs_per_thread, 1) * hw.warp_size, REGS_PER_WARP_GRANULE) * REGS_PER_WARP_GRANULE
    smem = smem_per_block + (SMEM_RESERVED_PER_BLOCK if hw.vendor == "cuda" else 0)
    limits = {
        "threads": hw.max_threads_per_sm // (warps * hw.warp_size),  # Eq. 5
        "registers": hw.regs_per_sm // (regs_per_warp * warps),  # Eq. 6
        "shared memory": hw.smem_per_sm // smem if smem_per_block else hw.max_blocks_per_sm,  # Eq. 8
        "blocks": hw.max_blocks_per_sm,
        "warps": hw.max_warps_per_sm // warps,  # Eq. 9's WF_C
    }
    limit = min(limits, key=lambda k: limits[k])
    blocks = max(limits[limit], 0)
    return Occupancy(blocks, blocks * warps, limit)


def tlp_old(tiles_per_problem: list[int], block_threads: int) -> int:
    """Eq. 3: every tile counted with the full block's threads."""
    return sum(tiles_per_problem) * block_threads


def active_warps(tiles_per_problem: list[int], threads_per_problem: list[int], warp_size: int) -> int:
    """phi of Eq. 4, uncapped: the warps that do work over the whole batch."""
    return sum(t * ceil_div(n, warp_size) for t, n in zip(tiles_per_problem, threads_per_problem, strict=True))


def tlp_new(tiles_per_problem: list[int], threads_per_problem: list[int], warp_size: int) -> int:
    """Eq. 4: phi x warp size."""
    return active_warps(tiles_per_problem, threads_per_problem, warp_size) * warp_size


def default_threshold(hw: Hardware) -> int:
    """The new-TLP target, in threads, when the schedule sets none: one full machine of resident warps
    (SMs x warps per SM x warp size; 270336 on an H100). The papers' constants are of this kind: paper 000's
    code uses 6000 wave64 = 1.8x an MI210's residency, paper 003's 65536 threads = 0.4x a V100's."""
    return hw.sm_count * hw.max_threads_per_sm


def coordinated_threshold(hw: Hardware) -> int:
    """Paper 003's TLP threshold keeps its V100 fraction of resident threads: 65536 / (80 x 2048) = 0.4."""
    return int(0.4 * hw.sm_count * hw.max_threads_per_sm)

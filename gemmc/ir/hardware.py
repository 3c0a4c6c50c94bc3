"""Hardware facts the passes plan against.

Offline compiles read the target table below (values from the vendors' tuning guides and, for sm_90, from
our H100: 132 SMs, 50 MB L2, 2.95 TB/s measured device-to-device copy). Plans are made for the
schedule's target from this table, the same on every machine, GPU or not. At run time
`gemmc.runtime.device.hardware()` builds the same record from the device's properties, and launches size their
persistent grids, occupancy and shared-memory opt-in from the real SM count, register file and shared memory
(an H200 is planned as the H100: the same 132 SMs). No paper constant lives here: the papers'
thresholds are derived from these numbers in the passes that use them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Hardware:
    arch: str  # "sm_90", "gfx90a"
    vendor: str  # "cuda" | "hip"
    sm_count: int  # streaming multiprocessors (CUDA) or compute units (HIP)
    warp_size: int  # 32 on NVIDIA, 64 (wavefront) on CDNA
    max_threads_per_block: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    regs_per_sm: int  # 32-bit registers in one SM's register file
    max_regs_per_thread: int
    reg_alloc_unit: int  # registers are allocated per warp in multiples of this many per thread
    smem_per_sm: int  # bytes usable by resident blocks
    smem_per_block: int  # bytes one block may use after opting in (cudaFuncSetAttribute)
    smem_per_block_default: int  # bytes one block may use without opting in
    l2_bytes: int
    mem_bandwidth: float  # bytes/s, device-to-device copy (read + write) where measured, else nominal
    fp32_flops: float  # FLOP/s on CUDA cores / vector ALUs (nominal)
    clock_hz: float = 1.755e9  # SM clock under load (nominal boost)
    fp64_flops: float = 0.0  # FLOP/s in f64 on CUDA cores / vector ALUs (nominal); 0: half the f32 rate
    mem_latency_cycles: int = 1000  # a global load's round trip from DRAM, for Little's law
    # Thread-block clusters: (blocks per SM, cluster size, share of the SMs' block slots the GPU fills with such
    # clusters at once), measured with cuOccupancyMaxActiveClusters; a cluster's blocks share a GPC, so slots of
    # a GPC short of a whole cluster stay empty. Sizes not listed fall back to the planner's estimate.
    cluster_fill: tuple[tuple[int, int, float], ...] = ()

    def cluster_share(self, blocks_per_sm: int, size: int) -> float | None:
        """The measured share of the block slots that clusters of `size` fill at `blocks_per_sm` resident blocks per
        SM (`cluster_fill`; 1.0 for clusters of one block), None where the target has no measurement."""
        if size == 1:
            return 1.0
        return next((fill for bps, s, fill in self.cluster_fill if (bps, s) == (blocks_per_sm, size)), None)

    @property
    def f64_flops(self) -> float:
        return self.fp64_flops or self.fp32_flops / 2

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // self.warp_size

    @property
    def compute_capability(self) -> int:
        """CUDA compute capability as a number (sm_90 -> 90); 0 for HIP targets."""
        return int(self.arch.removeprefix("sm_")) if self.vendor == "cuda" else 0

    @property
    def has_clusters(self) -> bool:
        """Thread-block clusters and distributed shared memory: sm_90 and newer."""
        return self.compute_capability >= 90

    @property
    def has_tma(self) -> bool:
        """The tensor memory accelerator and wgmma (sm_90): the hopper family's main loop for bf16/f16 storage."""
        return self.compute_capability >= 90

    @property
    def has_tensor_cores(self) -> bool:
        """mma.sync with f16/bf16/tf32 inputs (sm_80 and newer); HIP MFMA is not generated yet."""
        return self.compute_capability >= 80


def _cuda(arch: str, sms: int, threads_sm: int, blocks_sm: int, smem_sm: int, smem_block: int, l2: int,
          bw: float, fp32: float, fp64: float) -> Hardware:
    return Hardware(arch=arch, vendor="cuda", sm_count=sms, warp_size=32, max_threads_per_block=1024,
                    max_threads_per_sm=threads_sm, max_blocks_per_sm=blocks_sm, regs_per_sm=65536,
                    max_regs_per_thread=255, reg_alloc_unit=8, smem_per_sm=smem_sm, smem_per_block=smem_block,
                    smem_per_block_default=48 * 1024, l2_bytes=l2, mem_bandwidth=bw, fp32_flops=fp32,
                    fp64_flops=fp64)


def _hip(arch: str, cus: int, threads_cu: int, l2: int, bw: float, fp32: float, fp64: float) -> Hardware:
    # CDNA: 4 SIMDs x 512 VGPRs x 64 lanes per CU; 64 KiB LDS per workgroup and per CU.
    return Hardware(arch=arch, vendor="hip", sm_count=cus, warp_size=64, max_threads_per_block=1024,
                    max_threads_per_sm=threads_cu, max_blocks_per_sm=32, regs_per_sm=4 * 512 * 64,
                    max_regs_per_thread=512, reg_alloc_unit=8, smem_per_sm=64 * 1024, smem_per_block=64 * 1024,
                    smem_per_block_default=64 * 1024, l2_bytes=l2, mem_bandwidth=bw, fp32_flops=fp32,
                    fp64_flops=fp64)


# How many clusters the H100 SXM (132 SMs) holds at once, by resident blocks per SM (rows, 1-8) and cluster size
# (columns, 1-8), from cuOccupancyMaxActiveClusters (bench/results/irregular/2026-11-23_h100_cluster-occupancy.json,
# written
# by bench/experiments/cluster_occupancy.py). A cluster's blocks share one GPC, so clusters of 2 fill every slot
# and larger ones leave part of each GPC idle: e.g. 15 clusters of 7 at one block per SM fill 105 of 132 SMs.
H100_MAX_CLUSTERS = ((132, 66, 39, 30, 22, 17, 15, 15), (264, 132, 79, 62, 47, 39, 32, 30),
                     (396, 198, 124, 92, 69, 62, 47, 45), (528, 264, 163, 124, 94, 79, 69, 62),
                     (660, 330, 203, 154, 124, 101, 84, 77), (792, 396, 248, 186, 146, 124, 101, 92),
                     (924, 462, 287, 216, 171, 141, 124, 107), (1056, 528, 327, 248, 193, 163, 139, 124))
H100_CLUSTER_FILL = tuple((bps, size, clusters * size / row[0])  # row[0]: clusters of 1, every block slot
                          for bps, row in enumerate(H100_MAX_CLUSTERS, 1) for size, clusters in enumerate(row, 1))


TARGETS: dict[str, Hardware] = {
    "sm_80": _cuda("sm_80", 108, 2048, 32, 167936, 166912, 40 << 20, 1.9e12, 19.5e12, 9.7e12),  # A100 SXM 80 GB
    "sm_86": _cuda("sm_86", 84, 1536, 16, 102400, 101376, 6 << 20, 0.9e12, 35.6e12, 0.56e12),  # RTX 3090 class
    "sm_89": _cuda("sm_89", 142, 1536, 24, 102400, 101376, 96 << 20, 0.86e12, 91.6e12, 1.4e12),  # L40S
    "sm_90": dataclasses.replace(
        _cuda("sm_90", 132, 2048, 32, 233472, 232448, 50 << 20, 2.95e12, 67e12, 34e12),  # H100 SXM, copy measured
        cluster_fill=H100_CLUSTER_FILL),
    "gfx908": _hip("gfx908", 120, 2560, 8 << 20, 1.23e12, 23.1e12, 11.5e12),  # MI100
    "gfx90a": _hip("gfx90a", 104, 2048, 8 << 20, 1.6e12, 22.6e12, 22.6e12),  # MI210
    "gfx942": _hip("gfx942", 304, 2048, 4 << 20, 5.3e12, 81.7e12, 81.7e12),  # MI300X
}

CUDA_ARCHS = tuple(a for a, hw in TARGETS.items() if hw.vendor == "cuda")

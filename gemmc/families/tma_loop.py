"""What the two families of sm_90's TMA + wgmma loop share (the hopper family's one GEMM, hopper_grouped's grouped M):
the tile geometry the templates' descriptors and TMA boxes assume (hopper/hopper_device.cuh.j2), the tensor maps'
element types, and the waves model that picks a tile's N."""

from __future__ import annotations

from gemmc.ir.hardware import Hardware
from gemmc.ir.types import DType
from gemmc.model.tlp import ceil_div

BM = 128  # two consumer warpgroups of 64 rows: wgmma's M is 64 per warpgroup
SWIZZLE_BYTES = 128  # one row of the 128-byte swizzle, TMA's widest swizzled box row
BK = SWIZZLE_BYTES // 2  # 64 16-bit elements per k-row
ALIGN_SLACK = 1024  # dynamic shared memory is rounded up to a 1024-byte boundary (the 128-byte swizzle's atom)
WARPGROUP = 128
C_SUB_ROWS = 64  # a consumer warpgroup's rows: its C sub-tiles are 64 rows of 128 bytes (one swizzled TMA box)
C_BUFFERS = 2  # C sub-tile buffers per consumer warpgroup: one filled while TMA stores the other
MAX_STAGES = 8  # deeper buys nothing: 8 stages of 64 cover the TMA latency several times over
TILE_OVERHEAD = 32  # per tile, in columns of work (choose_tile_n)
TMAP_DTYPE = {DType.F16: "CU_TENSOR_MAP_DATA_TYPE_FLOAT16", DType.BF16: "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16",
              DType.F32: "CU_TENSOR_MAP_DATA_TYPE_FLOAT32"}  # the standalone launchers' tensor-map element types


def choose_tile_n(m: int, n: int, hw: Hardware, cluster: int, sizes: tuple[int, ...]) -> int:
    """The BN of the fewest column-equivalents per SM: a tile costs its BN columns plus a fixed TILE_OVERHEAD (the
    pipeline's fill, the epilogue, a narrower wgmma's issue cost), and a wave of the persistent grid costs its slowest
    block."""
    def cost(bn: int) -> tuple[int, int]:
        tiles = ceil_div(m, BM) * ceil_div(n, bn)
        waves = ceil_div(tiles, hw.sm_count // cluster * cluster)
        return waves * (bn + TILE_OVERHEAD), -bn
    return min(sizes, key=cost)

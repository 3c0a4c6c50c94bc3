"""What the two families of sm_90's TMA + wgmma loop share (the hopper family's one GEMM, hopper_grouped's grouped M
and K): the tile geometry the templates' descriptors and TMA boxes assume (hopper/hopper_device.cuh.j2), the tensor
maps' element types, and the waves model that picks a tile's N."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gemmc.ir.hardware import Hardware
from gemmc.ir.types import DType, Layout
from gemmc.model.tlp import ceil_div

if TYPE_CHECKING:
    from gemmc.ir.nodes import Kernel

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


TMA_ALIGN = 16  # bytes: TMA reads lines (global strides) and base addresses at 16-byte multiples
TMAP_BYTES = 128  # a CUtensorMap (the templates' gemmc_tmap, hopper/hopper_device.cuh.j2)


class Misfit(str):
    """Why the grouped loop cannot run a kernel ("" where it can), and the statement that is the reason (`stmt`:
    "layout", or "grouped" for a size TMA cannot read), for a note that points at it."""

    stmt: str

    def __new__(cls, why: str = "", stmt: str = "") -> Misfit:
        made = super().__new__(cls, why)
        made.stmt = stmt
        return made


FITS = Misfit()


def grouped_m_misfit(kernel: Kernel) -> Misfit:
    """Why a `grouped M` of bf16/f16 storage cannot run on this loop (the hopper_grouped family), or "" where it can:
    A and C row-major (rows stacked by group), and the lines TMA reads in place (A's k, row-major B's n) 16-byte
    multiples. The dynamic family computes the misfits in f32 on CUDA cores instead."""
    dyn = kernel.dynamic
    assert dyn is not None
    if kernel.layout_a is not Layout.ROW or kernel.layout_c is not Layout.ROW:
        return Misfit("it reads A and writes C row-major (rows stacked by group, as torch._grouped_mm): write "
                      "`layout A row, C row`", "layout")
    nbytes = kernel.dtype.nbytes
    if (dyn.k * nbytes) % TMA_ALIGN:
        return Misfit(f"TMA reads A's rows of k {dyn.k} ({dyn.k * nbytes} bytes) at {TMA_ALIGN}-byte multiples only",
                      "grouped")
    if kernel.layout_b is Layout.ROW and (dyn.n * nbytes) % TMA_ALIGN:
        return Misfit(f"TMA reads row-major B's rows of n {dyn.n} ({dyn.n * nbytes} bytes) at {TMA_ALIGN}-byte "
                      "multiples only", "grouped")
    return FITS


def grouped_k_misfit(kernel: Kernel) -> Misfit:
    """Why a `grouped K` (the weight gradient) of bf16/f16 storage cannot run on this loop (the hopper_grouped family),
    or "" where it can: A the transpose of a row-major rows x m array (`layout A col`, X^T), B rows x n and each C_g
    row-major, m and n 16-byte lines. A row-major A or a column-major B has lines of the reduction's rows, a count that
    arrives with each call and that TMA reads at 16-byte multiples only. The dynamic family computes the misfits in f32
    on CUDA cores instead."""
    dyn = kernel.dynamic
    assert dyn is not None
    if kernel.layout_a is not Layout.COL or kernel.layout_b is not Layout.ROW:
        return Misfit("it reads A as X^T and B row-major, whose lines are m and n (the other layouts' lines are the "
                      "reduction's rows, a count known only at the call): write `layout A col, B row`", "layout")
    if kernel.layout_c is not Layout.ROW:
        return Misfit("it writes each group's C row-major: write `layout C row`", "layout")
    nbytes = kernel.dtype.nbytes
    for name, size in (("m", dyn.m), ("n", dyn.n)):
        if (size * nbytes) % TMA_ALIGN:
            return Misfit(f"TMA reads lines of {name} {size} ({size * nbytes} bytes) at {TMA_ALIGN}-byte multiples "
                          "only", "grouped")
    return FITS


def grouped_list_misfit(kernel: Kernel) -> Misfit:
    """Why a `grouped list` of bf16/f16 storage cannot run on this loop (the hopper_grouped family), or "" where it can:
    A and C row-major (A read K-major, as grouped M reads it; C stored row by row), B either way. Each problem's tensor
    maps are built on the device from its sizes and leading dimensions; a problem whose arrays TMA cannot read (a base
    or a leading dimension not a 16-byte multiple) runs on CUDA cores, in the dynamic family
    (runtime/grouped_list.py)."""
    if kernel.layout_a is not Layout.ROW or kernel.layout_c is not Layout.ROW:
        return Misfit("it reads A and writes C row-major (A's rows K-major, as grouped M reads them): write "
                      "`layout A row, C row`", "layout")
    return FITS


GROUPED_TARGET = "sm_90"  # the only target with the TMA + wgmma loop of the grouped forms (the hopper_grouped family)


def grouped_on_loop_target(kernel: Kernel, hw: Hardware) -> bool:
    """`grouped M`, `grouped K` or `grouped list` of bf16/f16 storage on target cuda sm_90: the forms the grouped TMA +
    wgmma loop computes where it can read their operands (grouped_misfit)."""
    dyn = kernel.dynamic
    return dyn is not None and kernel.dtype.half and hw.vendor == "cuda" and hw.arch == GROUPED_TARGET


def grouped_misfit(kernel: Kernel) -> Misfit:
    """Why the grouped loop cannot read this grouped form's operands, or "" where it can."""
    from gemmc.ir.dynamic import Grouping

    dyn = kernel.dynamic
    assert dyn is not None
    if dyn.grouping is Grouping.LIST:
        return grouped_list_misfit(kernel)
    return grouped_k_misfit(kernel) if dyn.grouping is Grouping.K else grouped_m_misfit(kernel)


def grouped_on_loop(kernel: Kernel, hw: Hardware) -> bool:
    """Whether the hopper_grouped family computes this batch sized at run time: a grouped form the loop runs and
    reads (above), not sent to CUDA cores by `algorithm dynamic`. The dynamic family computes every other one."""
    return grouped_on_loop_target(kernel, hw) and not grouped_misfit(kernel) and kernel.algorithm != "dynamic"


def choose_tile_n(m: int, n: int, hw: Hardware, cluster: int, sizes: tuple[int, ...]) -> int:
    """The BN of the fewest column-equivalents per SM for one problem (choose_tile_n_for)."""
    return choose_tile_n_for([(m, n, 1)], hw, sizes, cluster)


def choose_tile_n_for(shapes: list[tuple[int, int, int]], hw: Hardware, sizes: tuple[int, ...],
                      cluster: int = 1) -> int:
    """The BN of the fewest column-equivalents per SM for problems (m, n, k) sharing one persistent grid: a tile
    costs its BN columns plus a fixed TILE_OVERHEAD (the pipeline's fill, the epilogue, a narrower wgmma's issue
    cost) per k-block of its depth, and a wave of the grid costs its slowest block, here the tiles' mean depth. Ties
    go to the wider tile. On the tensor-core list kernel it picked the faster N of 128 and 256 for each of four bf16
    groups run as one list, 0.78-1.09x apart (bench/results/dynamic/2026-11-27_h100_list-tile-n.json)."""
    def cost(bn: int) -> tuple[float, int]:
        tiles = [ceil_div(m, BM) * ceil_div(n, bn) for m, n, _ in shapes]
        count = sum(tiles)
        if not count:
            return 0.0, -bn
        depth = sum(t * ceil_div(k, BK) for t, (_, _, k) in zip(tiles, shapes, strict=True)) / count
        waves = ceil_div(count, hw.sm_count // cluster * cluster)
        return waves * depth * (bn + TILE_OVERHEAD), -bn
    return min(sizes, key=cost)


class TmaTiles:
    """What a plan of the TMA + wgmma loop derives from its tile (HopperPlan, HopperGroupedPlan: frozen dataclasses of
    FamilyPlan that list this class first): the block, the bytes of a stage, the swizzled box widths, the C sub-tiles.
    The fields are the plan's."""

    __slots__ = ()
    if TYPE_CHECKING:
        bm: int
        bn: int
        bk: int
        elem: int  # bytes of a storage element
        c_bytes: int  # bytes of C's element
        stages: int
        consumers: int
        consumer_regs: int

    @property
    def threads(self) -> int:
        return WARPGROUP * (1 + self.consumers)

    @property
    def a_bytes(self) -> int:
        """A's part of a stage: the block tile's rows of BK elements."""
        return self.bm * self.bk * self.elem

    @property
    def b_bytes(self) -> int:
        return self.bn * self.bk * self.elem

    @property
    def stage_bytes(self) -> int:
        return self.a_bytes + self.b_bytes

    @property
    def barrier_bytes(self) -> int:
        return 2 * self.stages * 8  # a full and an empty mbarrier per stage

    @property
    def box_width(self) -> int:
        """Elements of an MN-major operand per 128-byte swizzled row: the width of one TMA box and wgmma block."""
        return SWIZZLE_BYTES // self.elem

    @property
    def c_sub_cols(self) -> int:
        """Columns of a C sub-tile: one 128-byte swizzled row (64 bf16/f16 or 32 f32)."""
        return SWIZZLE_BYTES // self.c_bytes

    @property
    def c_sub_bytes(self) -> int:
        return C_SUB_ROWS * SWIZZLE_BYTES

    @property
    def c_box(self) -> tuple[int, int]:
        """TMA box of row-major C (innermost first): a consumer warpgroup's sub-tile of 64 rows of 128 bytes."""
        return (self.c_sub_cols, C_SUB_ROWS)

    @property
    def regs_estimate(self) -> int:
        return self.consumer_regs

    @property
    def arch_specific(self) -> bool:
        return True  # wgmma, setmaxnreg: sm_90a

    @property
    def tensor_maps(self) -> bool:
        return True

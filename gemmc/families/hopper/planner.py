"""The hopper planner: one bf16/f16 GEMM on sm_90's TMA + wgmma main loop.

The block tile is 128 x BN x 64 with BN the wgmma N: the largest N gives the most products per byte of shared
memory and L2 traffic, a smaller one more tiles to spread over the SMs. The model: a tile costs its BN columns plus
a fixed TILE_OVERHEAD (the pipeline's fill, the epilogue, a narrower wgmma's issue cost), and a wave of the
persistent grid costs its slowest block; the planner takes the BN of the fewest column-equivalents per SM.
"""

from __future__ import annotations

import dataclasses

from gemmc.errors import Diagnostic, GemmcError
from gemmc.families import tma_loop
from gemmc.families.hopper import calibration as cal
from gemmc.families.hopper.plan import BK, BK_F32, BM, HopperPlan
from gemmc.families.tensorcore.plan import SplitPlan
from gemmc.families.tensorcore.split import split_plan
from gemmc.families.tma_loop import MAX_STAGES, TILE_OVERHEAD, TMA_ALIGN
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel, TileTable, WorkList
from gemmc.ir.types import DType, Layout
from gemmc.model.tlp import ceil_div
from gemmc.model.worklist import problem_rows

TILE_N = (256, 192, 128, 64)  # wgmma N: multiples of 64 (N-major B arrives in 64-column TMA boxes)
# f32 storage: a consumer thread holds the f32 total and one stage's sum of the split's products (2 x N / 2 registers:
# 128 of the 168 a thread of a 384-thread block gets at N = 128) beside A's parts, so N stays at 128 or below.
TILE_N_F32 = (128, 64)
BAND_TILES = 16  # raster band height in m-tiles: 16 x 8 tiles of 128 x 256 is about one H100 wave, near square
ONE_WAVE_BAND = cal.ONE_WAVE_BAND.value  # the band where every tile runs in the first wave (calibration.py)
CLUSTER_MIN_WAVES = cal.CLUSTER_MIN_WAVES.value  # clusters of 2 from this many waves (calibration.py)
KSPLITS = (1, 2, 3, 4)  # blocks sharing one tile's K; more would leave most of a GPC idle (H100_MAX_CLUSTERS)
# split K keeps a BM x (BN + 8) f32 tile of partial sums in shared memory beside the ring: N <= 128 leaves 4 stages
TILE_N_KSPLIT = (128, 64)
SPLIT_KBLOCKS = cal.SPLIT_KBLOCKS.value  # the cluster's reduction costs about this many k-blocks of the tile
MIN_SLICE_KBLOCKS = 2  # a slice of one k-block would have no load to overlap with its wgmma


def _operands_kmajor(kernel: Kernel) -> tuple[bool, bool]:
    return kernel.layout_a is Layout.ROW, kernel.layout_b is Layout.COL


def staged_operands(kernel: Kernel) -> tuple[str, ...]:
    """A and/or B when the distance between their lines (K, M or N elements of 2 bytes) is not a multiple of 16
    bytes: TMA cannot describe them, so the launch copies them to scratch with padded lines first."""
    p = kernel.problems[0]
    a_kmajor, b_kmajor = _operands_kmajor(kernel)
    lines = {"A": p.k if a_kmajor else p.m, "B": p.k if b_kmajor else p.n}
    return tuple(op for op, ld in lines.items() if (ld * kernel.dtype.nbytes) % TMA_ALIGN)


def choose_tile_n(m: int, n: int, hw: Hardware, cluster: int, sizes: tuple[int, ...] = TILE_N) -> int:
    """The BN of the fewest column-equivalents per SM (module docstring; families/tma_loop.py)."""
    return tma_loop.choose_tile_n(m, n, hw, cluster, sizes)


def band_for(m: int, n: int, bn: int, cluster: int, hw: Hardware, ksplit: int = 1) -> int:
    """The raster band in units (a multicast pair of m-tiles, or one tile): BAND_TILES m-tiles, or ONE_WAVE_BAND
    where no pair is formed and every tile runs in the first wave (a split tile takes `ksplit` blocks, one per SM:
    HopperPlan.grid)."""
    if cluster == 1 and ceil_div(m, BM) * ceil_div(n, bn) <= hw.sm_count // ksplit:
        return ONE_WAVE_BAND
    return max(1, BAND_TILES // cluster)


def active_clusters(hw: Hardware, size: int) -> int:
    """Clusters of `size` blocks the GPU holds at once at one block per SM: its measured cluster fill
    (Hardware.cluster_fill; a cluster's blocks share a GPC), else every SM's."""
    share = hw.cluster_share(1, size)
    return max(1, int((1.0 if share is None else share) * hw.sm_count + 1e-6) // size)


def split_cost(m: int, n: int, k: int, bn: int, ksplit: int, hw: Hardware) -> int:
    """The waves model with split K: a tile costs (BN + TILE_OVERHEAD) columns per k-block of its slice, plus
    SPLIT_KBLOCKS k-blocks for the cluster's reduction where K is split; a wave holds as many tiles as the GPU
    holds clusters of `ksplit` blocks."""
    tiles = ceil_div(m, BM) * ceil_div(n, bn)
    waves = ceil_div(tiles, active_clusters(hw, ksplit))
    per_slice = ceil_div(ceil_div(k, BK), ksplit) + (SPLIT_KBLOCKS if ksplit > 1 else 0)
    return waves * (bn + TILE_OVERHEAD) * per_slice


def choose_tile(m: int, n: int, k: int, hw: Hardware, sizes: tuple[int, ...] = TILE_N,
                ksplits: tuple[int, ...] = KSPLITS) -> tuple[int, int]:
    """(BN, ksplit) of the least split_cost: without split K the choice of choose_tile_n (the k-blocks are a common
    factor); split K where a wave of the tiles leaves SMs idle and each slice keeps MIN_SLICE_KBLOCKS k-blocks. Ties
    go to no split, then to the wider tile."""
    kblocks = ceil_div(k, BK)
    choices = [(bn, ks) for bn in sizes for ks in ksplits
               if ks == 1 or (bn in TILE_N_KSPLIT and kblocks >= ks * MIN_SLICE_KBLOCKS)]
    return min(choices, key=lambda c: (split_cost(m, n, k, c[0], c[1], hw), c[1], -c[0]))


def f32_parts(kernel: Kernel) -> int:
    """f32 storage: the tf32 parts of each value the consumers form (1: one pass, 2: split tf32 x3); 0 for half
    storage and for the f16/bf16 splits, whose parts a pre-pass writes (f32_split)."""
    if kernel.dtype.half or kernel.precision is None or kernel.precision.compute is not DType.TF32:
        return 0
    return split_plan(kernel.precision).parts


def f32_split(kernel: Kernel) -> SplitPlan | None:
    """f32 storage split into f16/bf16 parts (`split f16 x3`, `split bf16 x3`, ...): the split the pre-pass writes
    as planes, every part stored unscaled and every product summed at one level (B's columns scaled into f16's range
    instead: HopperPlan.b_planes); None for every other kernel."""
    prec = kernel.precision
    if kernel.dtype.half or prec is None or not prec.is_split or prec.compute not in (DType.F16, DType.BF16):
        return None
    split = split_plan(prec)
    return dataclasses.replace(split, scale_bits=0, acc_levels=tuple(0 for _ in split.acc_levels))


PREP_BLOCKS_PER_SM = 8  # the pre-pass is memory-bound: enough 256-thread blocks in flight to cover HBM latency


def stages_for(bn: int, hw: Hardware, tma_store: bool = False, c_bytes: int = 2, parts: int = 0,
               ksplit: int = 1, split: SplitPlan | None = None) -> int:
    """As many stages as the block's shared memory holds beside the epilogue's C buffers, f32 storage's buffers of
    B's parts and split K's partial sums (HopperPlan.smem_bytes), at most MAX_STAGES; a split's stage holds a k-tile
    of every plane."""
    fields = {"compute": "bf16", **f32_fields(parts)}
    one = HopperPlan(bn=bn, stages=1, cluster=1, band=1, a_kmajor=True, b_kmajor=True, staged=(), tma_store=tma_store,
                     c_bytes=c_bytes, ksplit=ksplit, split=split, **fields)
    fixed = one.smem_bytes - one.stage_bytes - one.barrier_bytes
    per_stage = one.stage_bytes + one.barrier_bytes
    return min(MAX_STAGES, (hw.smem_per_block - fixed) // per_stage)


def f32_fields(parts: int) -> dict:
    """The HopperPlan fields of f32 storage with `parts` tf32 parts (none for half storage)."""
    return {"bk": BK_F32, "elem": 4, "parts": parts, "compute": "tf32"} if parts else {}


def choose_cluster(m: int, n: int, bn: int, hw: Hardware) -> int:
    """2 (B multicast to a pair of m-tiles) for at least CLUSTER_MIN_WAVES waves of tiles, else 1."""
    tiles_m = ceil_div(m, BM)
    return 2 if tiles_m >= 2 and tiles_m * ceil_div(n, bn) >= CLUSTER_MIN_WAVES * hw.sm_count else 1


def plan(kernel: Kernel, hw: Hardware) -> HopperPlan:
    p = kernel.problems[0]
    parts = f32_parts(kernel)
    split = f32_split(kernel)
    # a split's consumer holds its f32 total and the k-tile's sum of products beside it: N <= 128, as for tf32
    if parts or split:
        bn, ksplit = choose_tile_n(p.m, p.n, hw, 1, TILE_N_F32), 1
    else:
        bn, ksplit = choose_tile(p.m, p.n, p.k, hw)
    if kernel.tile is not None:
        t = kernel.tile
        if (t.m, t.k) != (BM, BK) or t.n not in TILE_N:
            raise GemmcError(Diagnostic("E202", f"the hopper family's tiles are {BM} x N x {BK} with N in "
                                        f"{', '.join(map(str, TILE_N))}; not {t}", kernel.where("tile"),
                                        "write `tile auto`, or e.g. `tile 128x256x64`"))
        bn = t.n
        if t.split > 1:  # `ksplit C`: the schedule's clusters
            if parts or split or bn not in TILE_N_KSPLIT:
                raise GemmcError(Diagnostic("E202", f"ksplit {t.split}: the hopper family splits K for bf16/f16 "
                                            f"storage at tile N {' or '.join(map(str, TILE_N_KSPLIT))}, not "
                                            f"{'f32 data' if parts or split else f'N {bn}'}", kernel.where("tile"),
                                            "leave ksplit out" if parts or split else
                                            f"write e.g. `tile {BM}x{TILE_N_KSPLIT[0]}x{BK} ksplit {t.split}`"))
            ksplit = t.split
        elif not (parts or split):
            ksplit = choose_tile(p.m, p.n, p.k, hw, (bn,))[1]
    written = kernel.stages_written  # `pipeline stages N`: the schedule's depth
    chosen = ksplit > 1 and (kernel.tile is None or kernel.tile.split == 1)  # the planner's split, not the schedule's
    if written and chosen and stages_for(bn, hw, False, kernel.c_dtype.nbytes, parts, ksplit) < kernel.stages:
        # the partial sums of a split the schedule did not ask for leave too little room for its stages: no split
        bn, ksplit = choose_tile(p.m, p.n, p.k, hw, (bn,) if kernel.tile is not None else TILE_N, (1,))
    # tf32 parts: no cluster (the consumers' forming of the parts has not been measured with the multicast pair),
    # and C stored from the accumulators (its shared memory holds B's parts; the TMA-store epilogue is not measured
    # with them). An f16/bf16 split takes the multicast pair as half storage does (`split f16 x3` at 8192^3: 212
    # against 180 TFLOP/s without it, bench/results/precision/2026-11-27_h100_split-variants.json).
    # split K: a cluster is the tile's k-slices (no multicast pair); fewer than CLUSTER_MIN_WAVES waves anyway
    cluster = 1 if parts or ksplit > 1 else choose_cluster(p.m, p.n, bn, hw)
    # TMA's boxes are rows of C; a column-major C is stored directly. Split K stores C from the cluster's sums.
    tma_store = kernel.layout_c is Layout.ROW and not parts and ksplit == 1
    c_bytes = kernel.c_dtype.nbytes
    stages = stages_for(bn, hw, tma_store, c_bytes, parts, ksplit, split)
    if written:
        stages = kernel.stages
    if stages < 2:
        raise GemmcError(Diagnostic("E201", f"the TMA pipeline needs at least 2 stages, not {stages}",
                                    kernel.where("pipeline")))
    a_kmajor, b_kmajor = _operands_kmajor(kernel)
    fields = {"compute": kernel.dtype.value, **f32_fields(parts)}
    if split is not None:
        pads = (ceil_div(p.m, BM) * BM, ceil_div(p.n, bn) * bn, ceil_div(p.k, BK) * BK)
        out = HopperPlan(bn=bn, stages=stages, cluster=cluster, band=band_for(p.m, p.n, bn, cluster, hw),
                         a_kmajor=a_kmajor, b_kmajor=b_kmajor, staged=(), tma_store=tma_store, c_bytes=c_bytes,
                         compute=split.compute, split=split, pads=pads)
        # the pre-pass's grid: its units (HopperPlan.prep_units), at most PREP_BLOCKS_PER_SM blocks per SM
        return dataclasses.replace(out, prep_blocks=max(1, min(out.prep_units, PREP_BLOCKS_PER_SM * hw.sm_count)))
    return HopperPlan(bn=bn, stages=stages, cluster=cluster, band=band_for(p.m, p.n, bn, cluster, hw, ksplit),
                      a_kmajor=a_kmajor, b_kmajor=b_kmajor, staged=staged_operands(kernel), tma_store=tma_store,
                      c_bytes=c_bytes, ksplit=ksplit, **fields)


def notes(kernel: Kernel, plan: HopperPlan, hw: Hardware) -> tuple[str, ...]:
    p = kernel.problems[0]
    tiles = ceil_div(p.m, plan.bm) * ceil_div(p.n, plan.bn)
    out = [f"hopper: tile N {plan.bn}: {tiles} tiles, {tiles / hw.sm_count:.2f} waves over {hw.sm_count} SMs "
           f"(a tile costs N + {TILE_OVERHEAD} columns; N in "
           f"{', '.join(map(str, TILE_N_F32 if plan.parts or plan.split else TILE_N))})",
           f"hopper: {plan.stages} stages of {plan.stage_bytes} B"
           + (f" and {plan.epilogue_bytes} B of C sub-tiles" if plan.tma_store else "")
           + (f" and {plan.work_bytes} B of B's tf32 parts and their barriers" if plan.parts else "")
           + f" fit {hw.smem_per_block} B of shared memory",
           "hopper: edges by TMA bounds (zero fill past M, N, K)"]
    out += split_notes(kernel, plan, hw)
    if plan.ksplit > 1:
        out.append(f"hopper: split K: each block writes its f32 partial sums ({plan.reduce_bytes // 1024} KiB of "
                   "shared memory), the cluster's blocks wait for each other's on an mbarrier, and each adds its "
                   "share of the tile over the slices in k order through distributed shared memory: deterministic, no "
                   "workspace in global memory and no atomics; C is stored from those sums with predicated stores")
    elif plan.tma_store:
        out.append(f"hopper: epilogue through shared memory: each consumer warpgroup writes its accumulators (alpha, "
                   f"beta C read in place) into {plan.c_box[1]}x{plan.c_box[0]} sub-tiles, "
                   f"{plan.epilogue_bytes // 1024} KiB in all, and one thread TMA-stores them (clipped at M and N) "
                   "while the warpgroup returns to the next tile's wgmma; a C whose lines or base are not "
                   "16-byte aligned is stored from the accumulators with predicated stores")
    elif plan.parts:
        out.append("hopper: f32 storage: C written from the accumulators with predicated stores (its shared memory "
                   "holds B's parts)")
    else:
        out.append("hopper: column-major C (TMA stores whole rows of C): written from the accumulators with "
                   "predicated stores (any ldc, any alignment)")
    if plan.split:
        out.append(f"hopper: {plan.split.compute} split of f32 storage: a pre-pass reads A and B and writes their "
                   f"parts as {plan.compute} planes (A {plan.a_planes}, B {plan.b_planes}), which TMA streams as half "
                   "data: the main loop is the half-storage loop with a stage of every plane per k-tile; forming the "
                   "parts from f32 stages in shared memory would add the f32 tiles' and the parts' shared-memory "
                   "traffic to every stage (docs/PRECISION.md)")
        out.append("hopper: split: the tensor core's f32 accumulation truncates, so each k-tile's products are summed "
                   "from zero and added to the f32 total with round-to-nearest")
        out.append("hopper: split: a stage holds one k-tile of every plane (A's and B's hi are loaded once for the "
                   "two products that read them); every part is stored unscaled and B's columns are scaled into f16's "
                   "range as A's rows are, so the products share one level and B needs no plane of hi * 2^11")
        if plan.line_regs:
            out.append(f"hopper: split: the pre-pass holds each K-contiguous line in registers ({plan.line_regs} x 4 "
                       "values a thread) and reads it once; M/N-contiguous lines are read twice (their maxima, then "
                       "the split)")
        pair = plan.cluster > 1
        share = "clusters of 2 blocks multicast B to a pair of m-tiles" if pair else "no cluster"
        out.append(f"hopper: split: {share} "
                   f"({tiles} tiles: {'at least' if pair else 'fewer than'} {CLUSTER_MIN_WAVES} waves"
                   f"{'' if pair else ', or one m-tile'}), as for half storage")
    elif plan.parts:
        out.append("hopper: f32 storage: TMA loads the f32 tiles once; the consumers round the tf32 parts to nearest "
                   "(A's into wgmma's register fragment, B's into K-major buffers), because tf32 wgmma reads B only "
                   "K-major and would otherwise use the f32 bits as they are (the 13 low mantissa bits ignored: "
                   "truncation, not rounding)")
        out.append("hopper: f32 storage: no cluster (the multicast pair is built and measured for half storage)")
    elif plan.ksplit > 1:
        pass  # the cluster is the tile's k-slices (above)
    elif plan.cluster > 1:
        out.append(f"hopper: {tiles} tiles >= {CLUSTER_MIN_WAVES} waves: clusters of 2 blocks on m-tiles 2p, 2p+1 "
                   "load half of B each and multicast it (a third less L2 traffic per tile pair)")
    else:
        out.append(f"hopper: no cluster: {tiles} tiles < {CLUSTER_MIN_WAVES} waves (or one m-tile), where a "
                   "multicast pair's lockstep costs more than the L2 traffic it saves")
    for op in plan.staged:
        out.append(f"hopper: {op}'s lines are not 16-byte multiples, which TMA cannot describe: each call copies "
                   f"{op} to scratch with lines padded to {16 // plan.elem} elements (one extra pass over {op})")
    return tuple(out)


def split_notes(kernel: Kernel, plan: HopperPlan, hw: Hardware) -> list[str]:
    """Why K is split, or why not where the tiles leave SMs idle (half storage; choose_tile)."""
    p = kernel.problems[0]
    tiles = ceil_div(p.m, plan.bm) * ceil_div(p.n, plan.bn)
    kblocks = ceil_div(p.k, plan.bk)
    unsplit = split_cost(p.m, p.n, p.k, plan.bn, 1, hw)
    if plan.ksplit > 1:
        return [f"hopper: split K: {tiles} tiles leave SMs idle, so clusters of {plan.ksplit} blocks share each "
                f"tile's {kblocks} k-blocks ({tiles * plan.ksplit} blocks, {active_clusters(hw, plan.ksplit)} "
                f"clusters of {plan.ksplit} fit at once); the model's cost, (N + {TILE_OVERHEAD}) columns per k-block "
                f"of a slice plus {SPLIT_KBLOCKS} k-blocks for the cluster's reduction, per wave: "
                f"{split_cost(p.m, p.n, p.k, plan.bn, plan.ksplit, hw)} against {unsplit} unsplit"]
    if tiles >= hw.sm_count or plan.parts or plan.split:
        return []
    why_not = f"hopper: no split K although {tiles} tiles leave SMs idle"
    sizes = (plan.bn,) if kernel.tile is not None else TILE_N_KSPLIT
    if plan.bn not in TILE_N_KSPLIT and kernel.tile is not None:
        return [f"{why_not}: split K runs tiles of N {', '.join(map(str, TILE_N_KSPLIT))}, not the schedule's "
                f"{plan.bn}"]
    splits = [(bn, ks) for bn in sizes for ks in KSPLITS[1:] if kblocks >= ks * MIN_SLICE_KBLOCKS]
    if not splits:
        return [f"{why_not}: K's {kblocks} k-block(s) are too few to share"]
    bn, ks = min(splits, key=lambda c: split_cost(p.m, p.n, p.k, c[0], c[1], hw))
    if split_cost(p.m, p.n, p.k, bn, ks, hw) < unsplit:  # the model would split: the schedule's stages forbid it
        return [f"{why_not}: the schedule's `pipeline stages {plan.stages}` leaves no room for split K's partial sums "
                f"beside them (the model's cost {split_cost(p.m, p.n, p.k, bn, ks, hw)} for {ks} slices at N {bn} "
                f"against {unsplit})"]
    return [f"{why_not}: the cluster's reduction costs about "
            f"{SPLIT_KBLOCKS} k-blocks of a tile, more than the idle SMs win at {kblocks} k-blocks (the model's cost "
            f"{split_cost(p.m, p.n, p.k, bn, ks, hw)} for {ks} slices at N {bn} against {unsplit})"]


def worklist(kernel: Kernel, plan: HopperPlan, hw: Hardware) -> WorkList:
    """No tile table: the persistent blocks walk the raster order by arithmetic. The grid is the target's; a
    launch recomputes it from the device's SM count (HopperPlan.grid)."""
    p = kernel.problems[0]
    return WorkList(problems=problem_rows(kernel), tiles=TileTable(), block_offsets=(),
                    grid=(plan.grid(p.m, p.n, hw.sm_count), 1, 1), block=plan.threads, smem_bytes=plan.smem_bytes)


def with_tile(kernel: Kernel, plan: HopperPlan, bn: int, ksplit: int, hw: Hardware) -> HopperPlan:
    """`plan` (half storage) with tile N `bn` and `ksplit` k-slices, the rest decided as `plan` decides it: the
    ablations of choose_tile that tests and benchmarks run."""
    p = kernel.problems[0]
    cluster = choose_cluster(p.m, p.n, bn, hw) if ksplit == 1 else 1
    tma_store = kernel.layout_c is Layout.ROW and ksplit == 1
    return dataclasses.replace(plan, bn=bn, ksplit=ksplit, cluster=cluster,
                               band=band_for(p.m, p.n, bn, cluster, hw, ksplit), tma_store=tma_store,
                               stages=stages_for(bn, hw, tma_store, plan.c_bytes, 0, ksplit))

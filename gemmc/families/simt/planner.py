"""The SIMT family's planner: tile variants on CUDA cores (FP32/FP64 FMA), one launch for the whole batch. The
pipeline runs it through the family's planning steps (families/simt/steps.py).

- `tile BMxBNxBK [threads N]`: one variant for every problem, checked against the target.
- `tile auto(uniform)`: the largest tile of a small catalogue that still gives one wave of blocks (the baseline).
- `tile auto(loadbalanced)`: paper 000's per-problem tiles with per-variant thread counts (families/simt/tiling.py).
- `tile auto(coordinated)`: paper 003's lockstep tiling with one thread count (families/simt/tiling.py).
- `tile auto`: all three, and the uniform catalogue's other tiles and their k-sliced forms, each costed by the model of
  `tiling.estimate` (a simulation of the launch); the cheapest wins, and the first call on a GPU times them all.
Batching (paper 003 §4, families/simt/batching.py) then packs tiles into blocks.
"""

from __future__ import annotations

import dataclasses
from statistics import median

import numpy as np

from gemmc.errors import Diagnostic, GemmcError, InternalError
from gemmc.families.simt import batching, tiling
from gemmc.families.simt import calibration as cal
from gemmc.families.simt.plan import SimtPlan, SimtVariant, micro_tile
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel, ProblemTable, TileTable, WorkList
from gemmc.ir.types import Batching, DType, TileMode
from gemmc.model import raster
from gemmc.model.tlp import SMEM_RESERVED_PER_BLOCK, coordinated_threshold, default_threshold, occupancy
from gemmc.model.worklist import Sizes, packed, problem_rows, tile_table

# Uniform catalogue, largest first. f32: measured (calibration.py). f64 halves the micro-tile to stay under the
# register file's 255 per thread and takes k steps of 8 (not timed on a GPU).
UNIFORM_F32 = tuple(SimtVariant(*v) for v in cal.UNIFORM_F32.value)
UNIFORM_F64 = (SimtVariant(128, 64, 8, 8, 4, 256), SimtVariant(64, 64, 8, 4, 4, 256),
               SimtVariant(32, 32, 8, 2, 2, 256))


def uniform_variant(kernel: Kernel, hw: Hardware, sizes: Sizes | None = None) -> tuple[SimtVariant, str]:
    """The largest catalogue tile that still gives one wave of blocks (>= SM count) over the batch."""
    catalogue = UNIFORM_F64 if kernel.dtype is DType.F64 else UNIFORM_F32
    batch = kernel.count or 1
    s = sizes if sizes is not None else Sizes.of(kernel.problems)
    for v in catalogue:
        tiles = batch * int(tiling.tile_counts(s, v.bm, v.bn).sum())
        if tiles >= hw.sm_count:
            return v, f"largest uniform tile with >= {hw.sm_count} blocks ({tiles} blocks)"
    return catalogue[-1], f"no uniform tile fills {hw.sm_count} SMs; smallest tile"


def explicit_variant(kernel: Kernel, hw: Hardware) -> SimtVariant:
    """The variant of an explicit `tile`: its threads the schedule's, else one per 16 outputs (within [a warp, 256])
    times the k slices, which must be whole warps: the tile's named barriers (`bar.sync id, threads`) take a count
    of whole warps, and any other count is an illegal instruction on the GPU (a 48 x 48 tile's 144 threads)."""
    assert kernel.tile is not None
    t = kernel.tile
    threads = kernel.threads or max(hw.warp_size, min(256, t.m * t.n // 16)) * t.slices
    if not kernel.threads and threads % hw.warp_size:
        whole = threads - threads % hw.warp_size
        raise GemmcError(Diagnostic("E301", f"tile {t} gives {threads} threads (one per 16 outputs), not whole warps "
                                    f"of {hw.warp_size}", kernel.where("tile"),
                                    f"give `threads {whole}` (or another multiple of {hw.warp_size} that splits the "
                                    "tile evenly), or a tile whose bm x bn / 16 is a multiple of the warp size"))
    micro = micro_tile(t.m, t.n, threads // t.slices) if threads % t.slices == 0 else None
    if micro is None:
        per = f" ({threads // t.slices} per k slice)" if t.slices > 1 and threads % t.slices == 0 else ""
        raise GemmcError(Diagnostic("E301", f"tile {t} cannot be split evenly over {threads} threads{per}",
                                    kernel.where("threads" if kernel.threads else "tile"),
                                    "threads / kslices must divide bm*bn into a micro-tile tm x tn with tm | bm, "
                                    "tn | bn"))
    return SimtVariant(t.m, t.n, t.k, micro[0], micro[1], threads, t.slices)


def check_variants(kernel: Kernel, plan: SimtPlan, hw: Hardware) -> None:
    """Resource limits per variant, reported at the line that chose the tile."""
    diags = []
    where = kernel.where("tile") if kernel.tile else kernel.span
    for v in plan.variants:
        smem = plan.variant_smem(v)
        if smem > hw.smem_per_block:
            diags.append(Diagnostic("E300", f"tile {v.bm}x{v.bn}x{v.bk} needs {smem} bytes of shared memory; "
                                    f"{hw.arch} allows {hw.smem_per_block} per block", where,
                                    "use a smaller tile or fewer " + ("kslices (their partial sums share it)"
                                                                      if v.slices > 1 else "pipeline stages")))
        if v.threads > hw.max_threads_per_block:
            diags.append(Diagnostic("E301", f"{v.threads} threads exceed {hw.arch}'s {hw.max_threads_per_block} "
                                    "per block", kernel.where("threads" if kernel.threads else "tile"),
                                    "fewer kslices, or a smaller tile" if v.slices > 1 else None))
        regs = plan.variant_floor(v)  # what no compiler can go below; the fitted estimates extrapolate past 255
        if regs > hw.max_regs_per_thread:
            diags.append(Diagnostic("E302", f"micro-tile {v.tm}x{v.tn} needs about {regs} registers per thread; "
                                    f"{hw.arch} allows {hw.max_regs_per_thread}", where,
                                    "use more threads or a smaller tile"))
    if diags:
        raise GemmcError(diags)


def split_problem(kernel: Kernel, plan: SimtPlan, hw: Hardware) -> Diagnostic | None:
    """Why this target and schedule cannot split the plan's k over clusters of plan.ksplit blocks, at the line at
    fault; None where they can. `tile auto` offers split forms only where this is None (split_forms); an explicit
    `ksplit` gets it as its error (checked)."""
    where = kernel.where("tile")
    if not hw.has_clusters:
        return Diagnostic("E900", f"ksplit needs thread-block clusters, which {hw.arch} lacks", where,
                          "clusters are sm_90 and newer; kslices splits k within a block")
    if plan.ksplit > MAX_CLUSTER_BLOCKS:
        return Diagnostic("E204", f"ksplit {plan.ksplit} exceeds the {MAX_CLUSTER_BLOCKS} blocks of a portable "
                          "cluster", where)
    if kernel.batching not in (Batching.AUTO, Batching.NONE):
        return Diagnostic("E202", f"ksplit runs one tile per cluster; batching {kernel.batching.value} puts several "
                          "tiles in a block", kernel.where("batching"), "use batching none (or auto) with ksplit")
    if len({v.threads for v in plan.variants}) > 1:  # untested with some threads idle: not offered, not accepted
        return Diagnostic("E900", "ksplit with variants of different thread counts in one launch", where)
    return None


def bound_blocks(plan: SimtPlan, hw: Hardware) -> tuple[int, int]:
    """(blocks per SM for `__launch_bounds__`, the registers per thread that leaves). Left unconstrained, ptxas
    spends registers freely (the 128x128 variant takes 165: one block, 8 warps per SM); capped at REG_CAP (two
    256-thread blocks) it spills nothing when the variant's arrays leave CAP_HEADROOM registers for the rest.
    Every other plan is bounded just above its estimate, so the estimate is what the SM allocates. The bound
    never asks for more blocks than threads or shared memory allow. HIP: no bound (0, 0)."""
    if hw.vendor != "cuda":
        return 0, 0
    need = max(plan.variant_need(v) for v in plan.variants)
    granule = hw.reg_alloc_unit
    blocks = hw.regs_per_sm // (plan.threads * (-(-need // granule) * granule))
    smem = plan.smem_bytes + SMEM_RESERVED_PER_BLOCK
    blocks = max(1, min(blocks, hw.max_threads_per_sm // plan.threads, hw.smem_per_sm // smem,
                        hw.max_blocks_per_sm))
    cap = min(hw.max_regs_per_thread, hw.regs_per_sm // (plan.threads * blocks) // granule * granule)
    return blocks, cap


def plan_from(kernel: Kernel, hw: Hardware, t: tiling.Tiling) -> SimtPlan:
    """A tiling's plan with its launch bound (bound_blocks); its batching is chosen later."""
    plan = SimtPlan(variants=t.palette, assignment=tuple(t.choice.tolist()), stages=kernel.stages,
                    elem_bytes=kernel.dtype.widened.nbytes, method=t.method)
    blocks, cap = bound_blocks(plan, hw)
    return dataclasses.replace(plan, min_blocks=blocks, reg_cap=cap)


def tiling_of(plan: SimtPlan) -> tiling.Tiling:
    """The tiling a plan carries (its problems' variants and each problem's choice; not its edge tiles), for the
    model's figures."""
    palette = plan.variants[:len(plan.edges)] if plan.edges else plan.variants  # with_edges appends the halves
    return tiling.Tiling(plan.method, palette, np.asarray(plan.assignment, dtype=np.int64), plan.tlp_threshold, 0)


def everyone(method: str, v: SimtVariant, problems: int) -> tiling.Tiling:
    """One variant for every problem."""
    return tiling.Tiling(method, (v,), np.zeros(problems, dtype=np.int64), 0, 0)


def candidate_tilings(kernel: Kernel, hw: Hardware, sizes: Sizes) -> list[tiling.Tiling]:
    """The tilings `tile auto` costs (a forced `tile auto(method)`: that method's): the uniform rule's tile,
    coordinated tiling, load-balanced tiling driven by Eq. 3 and by Eq. 4, then the uniform catalogue's other tiles
    and their k-sliced forms (`sliced`). Earlier candidates win ties; none repeats an earlier one."""
    count = kernel.count or 1
    uniform = everyone("uniform", uniform_variant(kernel, hw, sizes)[0], len(sizes))
    mode = kernel.tile_mode
    out = []
    if mode in (TileMode.AUTO, TileMode.UNIFORM):
        out.append(uniform)
    if mode in (TileMode.AUTO, TileMode.COORDINATED):
        max_outputs = 32 if kernel.dtype is DType.F64 else 64
        out.append(tiling.coordinated(sizes, count, kernel.tlp_threshold or coordinated_threshold(hw), max_outputs))
    if mode in (TileMode.AUTO, TileMode.LOADBALANCED) and (hw.vendor == "cuda" or mode is TileMode.LOADBALANCED):
        threshold = kernel.tlp_threshold or default_threshold(hw)
        rungs = tiling.ladder(sizes)
        new = tiling.loadbalanced(sizes, count, hw, threshold, rungs=rungs)
        if mode is TileMode.AUTO:
            # Algorithm 1 driven by Eq. 3 stops refining earlier (idle warps count). On the H100 it measured
            # faster than Eq. 4 in 5 of 26 cases and within noise (1.2%) in the rest (bench/results/
            # 2026-11-22_h100_irregular.json, docs/PERFORMANCE-irregular.md), so `tile auto` costs both.
            old = tiling.loadbalanced(sizes, count, hw, threshold, metric="old", rungs=rungs)
            if not old.same_variants(new):
                out.append(old)
        out.append(new)
    if mode is TileMode.AUTO:
        catalogue = UNIFORM_F64 if kernel.dtype is DType.F64 else UNIFORM_F32
        others = [everyone("uniform", v, len(sizes)) for v in catalogue + tuple(sliced(catalogue, kernel, hw))]
        out += [t for t in others if not any(u.method == "uniform" and u.same_variants(t) for u in out)]
    return out


def costed(kernel: Kernel, hw: Hardware, sizes: Sizes,
           tilings: list[tiling.Tiling]) -> list[tuple[float, SimtPlan]]:
    """Each tiling's plan (with its edge tiles) and the model's estimate of it (tiling.estimate), in the given
    order."""
    scored = []
    for t in tilings:
        planned = with_edges(plan_from(kernel, hw, t))
        est = tiling.estimate(planned, sizes, kernel.count or 1, hw, t.choice)
        occ = est.occupancy
        scored.append((est.seconds, dataclasses.replace(
            planned, tlp_threshold=t.threshold or kernel.tlp_threshold or default_threshold(hw), tlp_old=est.tlp_old,
            tlp_new=est.tlp_new,
            occupancy=f"{occ.warps_per_sm} warps/SM ({occ.limit})", estimate_us=est.seconds * 1e6)))
    return scored


def label(plan: SimtPlan) -> str:
    """A candidate's name: its method and its tile, or how many tiles it mixes, and its k split."""
    main = sorted(set(plan.assignment))  # the problems' own tiles (the rest are their edge tiles)
    return (f"{plan.method} " + (plan.variants[main[0]].name if len(main) == 1 else f"{len(main)} tiles")
            + (f" ksplit {plan.ksplit}" if plan.ksplit > 1 else ""))


# Split k (`ksplit`): for small launches that leave SMs idle and wait on each k step's round trip, clusters of 2 to
# MAX_KSPLIT blocks per tile (measured: calibration.py) for the model's SPLIT_CANDIDATES cheapest tilings of less
# than a wave, which bounds the forms the model costs and the tuning step times to 6.
MAX_KSPLIT = cal.MAX_KSPLIT.value
SPLIT_CANDIDATES = 2


def split_forms(kernel: Kernel, hw: Hardware, sizes: Sizes,
                scored: list[tuple[float, SimtPlan]]) -> list[tuple[float, SimtPlan]]:
    """Clusters of 2..MAX_KSPLIT blocks per tile for the cheapest SPLIT_CANDIDATES plans of `scored` whose tiles
    fill less than a wave, each costed by tiling.estimate."""
    count = kernel.count or 1
    out: list[tuple[float, SimtPlan]] = []
    for _, p in sorted(scored, key=lambda s: s[0]):
        if len(out) == SPLIT_CANDIDATES * (MAX_KSPLIT - 1):
            break
        occ = occupancy(hw, p.threads, p.regs_estimate, p.smem_bytes)
        if (split_problem(kernel, dataclasses.replace(p, ksplit=2), hw)
                or tiling_of(p).counts(sizes, count).sum() >= occ.blocks_per_sm * hw.sm_count):
            continue
        for c in range(2, MAX_KSPLIT + 1):
            q = dataclasses.replace(p, ksplit=c, candidates=())
            est = tiling.estimate(q, sizes, count, hw, tiling_of(q).choice)
            out.append((est.seconds, dataclasses.replace(q, estimate_us=est.seconds * 1e6)))
    return out


def scored_plans(kernel: Kernel, hw: Hardware, sizes: Sizes) -> list[tuple[float, SimtPlan]]:
    """Every candidate tiling's plan and its split-k forms, each with the model's estimate."""
    scored = costed(kernel, hw, sizes, candidate_tilings(kernel, hw, sizes))
    return scored + (split_forms(kernel, hw, sizes, scored) if kernel.tile_mode is TileMode.AUTO else [])


def cheapest(scored: list[tuple[float, SimtPlan]]) -> SimtPlan:
    """The plan the model estimates fastest (ties: the earlier), naming every plan it weighed (`candidates`)."""
    _, best = min(scored, key=lambda s: s[0])
    weighed = tuple((label(p), s * 1e6) for s, p in scored)
    return dataclasses.replace(best, candidates=weighed if len(weighed) > 1 else ())


# Threshold batching pays only on long launches: from BATCHING_MIN_WAVES waves of blocks (measured:
# calibration.py).
BATCHING_MIN_WAVES = cal.BATCHING_MIN_WAVES.value


def choose_batching(kernel: Kernel, plan: SimtPlan, hw: Hardware, sizes: Sizes | None = None) -> tuple[Batching, str]:
    """`batching auto`: threshold batching when there are at least BATCHING_MIN_WAVES waves of blocks and the median
    K is at most theta / 2 (small-K tiles, where a block's prologue is a large share of its work); otherwise
    none."""
    if kernel.batching is not Batching.AUTO:
        return kernel.batching, f"batching {kernel.batching.value} from the schedule"
    if plan.ksplit > 1:
        return Batching.NONE, f"batching none: k split over clusters of {plan.ksplit} blocks, one tile each"
    occ = occupancy(hw, plan.threads, plan.regs_estimate, plan.smem_bytes)
    s = sizes if sizes is not None else Sizes.of(kernel.problems)
    blocks = int(tiling_of(plan).counts(s, kernel.count or 1).sum())
    waves = blocks / max(1, occ.blocks_per_sm * hw.sm_count)
    k_med = median(s.k.tolist())
    why = f"{waves:.1f} waves of blocks, median K {k_med:g}"
    if waves >= BATCHING_MIN_WAVES and k_med <= batching.THETA / 2:
        return Batching.THRESHOLD, f"batching threshold: {why} <= theta/2"
    return Batching.NONE, f"batching none: {why}"


def finished(kernel: Kernel, result: SimtPlan, hw: Hardware, sizes: Sizes,
             mode: Batching | None = None) -> SimtPlan:
    """A tiling's plan checked against the target, with its batching (`mode`, or `batching auto`'s choice)."""
    checked(kernel, result, hw)
    return batched(kernel, result, hw, sizes, mode)


def checked(kernel: Kernel, result: SimtPlan, hw: Hardware) -> None:
    """Raise GemmcError where the target cannot run the tiling: variants of different thread counts on HIP, a
    variant past the block's limits (check_variants), a k split its clusters cannot take (split_problem)."""
    if hw.vendor == "hip" and len({v.threads for v in result.variants}) > 1:
        raise GemmcError(Diagnostic("E900", "variants with different thread counts in one launch need named "
                                    "barriers, which HIP lacks", kernel.where("tile"),
                                    "use tile auto(coordinated) or tile auto(uniform) for HIP"))
    check_variants(kernel, result, hw)
    if result.ksplit > 1 and (problem := split_problem(kernel, result, hw)):
        raise GemmcError(problem)


def batched(kernel: Kernel, result: SimtPlan, hw: Hardware, sizes: Sizes, mode: Batching | None = None) -> SimtPlan:
    """The tiling with its batching (`mode`, or `batching auto`'s choice), theta and the TLP threshold it works to."""
    mode = mode or choose_batching(kernel, result, hw, sizes)[0]
    theta = batching.THETA if mode in (Batching.THRESHOLD, Batching.BINARY) else 0
    return dataclasses.replace(result, batching=mode, theta=theta,
                               tlp_threshold=result.tlp_threshold or (kernel.tlp_threshold or 0))


def with_split(plan: SimtPlan, ksplit: int, hw: Hardware) -> SimtPlan:
    """The plan with its tiles' k split over clusters of `ksplit` blocks, its launch bound recounted for the
    partial sums a split keeps in shared memory."""
    split = dataclasses.replace(plan, ksplit=ksplit)
    blocks, cap = bound_blocks(split, hw)
    return dataclasses.replace(split, min_blocks=blocks, reg_cap=cap)


MAX_CLUSTER_BLOCKS = 8  # the portable cluster size
MAX_SLICED_THREADS = 512  # a sliced block's threads; 1024 leaves 64 registers per thread
MIN_SLICE_OUTPUTS = cal.MIN_SLICE_OUTPUTS.value  # a slice's micro-tile: 4x4 at least (2x4 is MIO-bound; calibration.py)


def sliced(catalogue: tuple[SimtVariant, ...], kernel: Kernel, hw: Hardware) -> list[SimtVariant]:
    """The catalogue's tiles with their k-tiles split 2 and 4 ways over slices of the tile's threads, a half or a
    quarter of them (the micro-tile grows accordingly, from 4x4 up to the catalogue's largest), where a slice
    still covers 4 k, the block has 4 to MAX_SLICED_THREADS threads and its registers fit an SM.

    Measured on the H100 (bench/results/irregular/2026-11-23_h100_simt-slices.log): the slices that kept the tile's 2x4
    micro-tile (32x32x32: 2 slices of 128 threads) waited on the shared-memory instruction queue (Nsight Compute,
    ..._ncu-inception3-sliced2_*): 3 shared loads per 8 FMAs, however many warps share them. 4x4 and 4x8 slices
    (32x32x32 in 2 slices of 64 threads, 4 of 64 or 4 of 32) ran the Inception modules 10-17% faster, all 34 of
    them 22.7 -> 15.8 us, MN, K <= 512 x8 22.5 -> 19.0 us."""
    max_outputs = 32 if kernel.dtype is DType.F64 else 64
    out = []
    for v in catalogue:
        for slices in (2, 4):
            for per_slice in (v.threads, v.threads // 2, v.threads // 4):
                threads = per_slice * slices
                outputs = v.bm * v.bn // per_slice if per_slice else 0
                if (v.bk % slices or v.bk // slices < 4 or per_slice < hw.warp_size or threads < 4 * hw.warp_size
                        or threads > min(MAX_SLICED_THREADS, hw.max_threads_per_block)
                        or not MIN_SLICE_OUTPUTS <= outputs <= max_outputs):
                    continue
                micro = micro_tile(v.bm, v.bn, per_slice)
                if micro is None:
                    continue
                s = SimtVariant(v.bm, v.bn, v.bk, micro[0], micro[1], threads, slices)
                probe = SimtPlan(variants=(s,), assignment=(0,), stages=kernel.stages,
                                 elem_bytes=kernel.dtype.widened.nbytes)
                if probe.variant_need(s) * threads <= hw.regs_per_sm and probe.variant_smem(s) <= hw.smem_per_block:
                    out.append(s)
    return out


def alternatives(kernel: Kernel, hw: Hardware) -> tuple[tuple[str, Kernel], ...]:
    """Planned kernels the runtime times against the model's choice on the device, keeping the fastest
    (runtime/tune.py), for a plain `tile auto` only (an explicit tile or `tile auto(method)` is what it says):
    the model's plan first, then every other tiling it costed (candidate_tilings), cheapest first, each with
    its `batching auto` choice and, unless the schedule fixes batching, the other of none / threshold.

    Why measure: the model ranks the benchmark's candidates within 2.6% of the fastest (geometric mean) but up to
    14% off (tiling.estimate), and a first call's timing costs milliseconds. Candidates with the same tiles and
    blocks as an earlier one are left out."""
    chosen = kernel.plan
    if not isinstance(chosen, SimtPlan) or kernel.tile is not None or kernel.tile_mode is not TileMode.AUTO:
        return ()
    sizes = Sizes.of(kernel.problems)
    model = tiling_of(chosen)
    others = [(s, p) for s, p in scored_plans(kernel, hw, sizes)
              if not (p.method == chosen.method and p.ksplit == chosen.ksplit and tiling_of(p).same_variants(model))]
    plans = [chosen]
    for _, p in sorted(others, key=lambda s: s[0]):
        try:
            plans.append(finished(kernel, dataclasses.replace(p, candidates=chosen.candidates), hw, sizes))
        except GemmcError:
            continue  # a tiling this target cannot run (HIP and mixed thread counts) is not a candidate
    if kernel.batching is Batching.AUTO:
        flip = {Batching.NONE: Batching.THRESHOLD, Batching.THRESHOLD: Batching.NONE}
        plans = [q for p in plans for q in ((p, finished(kernel, p, hw, sizes, flip[p.batching])) if p.ksplit == 1
                                             else (p,))]
    out, seen = [], set()
    for p in plans:
        planned = dataclasses.replace(kernel, plan=p)
        try:
            work = worklist(planned, p, hw)
        except GemmcError:
            continue  # a tiling with more tiles than a launch lists (grammar/limits.py) is not a candidate
        key = (p.variants, p.assignment, work.block_offsets, work.tiles.data, work.grid, work.raster)
        if key in seen:
            continue
        seen.add(key)
        name = f"{label(p)}, {p.batching.value}" + (" (model)" if p is chosen else "")
        out.append((name, dataclasses.replace(planned, work=work)))
    return tuple(out)


def with_edges(plan: SimtPlan) -> SimtPlan:
    """The plan with edge tiles: where a problem's last row (column) of tiles needs at most half the tile's rows
    (columns), those tiles take the variant of half the height (width), same threads and k step, and so issue
    half the FMAs. The tiles still cover [m0, M) x [n0, N); only the padding they compute shrinks. Over random
    sizes up to 512 the issued FMAs fall by a fifth with 128 x 128 tiles (65% -> 80% of them useful).

    Measured on the H100 (bench/results/irregular/2026-11-22_h100_simt-edges.log): MN, K <= 512 x64 / x256 / x1024 with
    128x128x16 10% / 10% / 9% faster, MN <= 128 K <= 128 x1024 with 64x64x16 18%, coordinated tiling 0-3%, the
    Inception modules 0-5%. Sliced tiles keep their padding: their halves (1x4 micro-tiles of 16x32) ran 7-9%
    slower on the two batches where slicing is kept, and the halves of the 4x8 slices (4x4 each) 1-38%
    slower (bench/results/irregular/2026-11-23_h100_simt-edges-sliced*.log, two runs)."""
    variants = list(plan.variants)

    def index(bm: int, bn: int, v: SimtVariant) -> int:
        micro = micro_tile(bm, bn, v.threads) if bm and bn and v.slices == 1 else None
        if micro is None:
            return -1
        half = SimtVariant(bm, bn, v.bk, micro[0], micro[1], v.threads, v.slices)
        if half not in variants:
            variants.append(half)
        return variants.index(half)

    edges = tuple((index(v.bm // 2, v.bn, v), index(v.bm, v.bn // 2, v), index(v.bm // 2, v.bn // 2, v))
                  for v in plan.variants)
    return dataclasses.replace(plan, variants=tuple(variants), edges=edges)


def edge_variants(plan: SimtPlan, table: np.ndarray, m: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The variant column of a tile table (rows: problem, m0, n0, variant) with the plan's edge tiles."""
    variant = table[:, 3]
    if not plan.edges:
        return variant
    column = tiling.palette_column
    bm, bn = column(plan.variants, "bm")[variant], column(plan.variants, "bn")[variant]
    problem = table[:, 0]
    kind = (m[problem] - table[:, 1] <= bm // 2).astype(np.int64) + 2 * (n[problem] - table[:, 2] <= bn // 2)
    return tiling.edge_lookup(plan)[variant, kind]


def worklist(kernel: Kernel, plan: SimtPlan, hw: Hardware) -> WorkList:
    """Every problem's tiles (worklist.tile_table, with the plan's edge tiles), grouped into blocks by the plan's
    batching; for a uniform launch, the same tiles and batching as a raster the kernel computes (its edge tiles
    chosen on the device by the same rule as edge_variants)."""
    rows = problem_rows(kernel)
    if raster.uniform(kernel, plan.assignment):
        return uniform_worklist(kernel, plan, hw, rows)
    s = Sizes.of_rows(rows)
    variant = np.resize(np.asarray(plan.assignment, dtype=np.int64), len(s))  # a `count` batch repeats its entry
    m, n, k = s.m, s.n, s.k
    column = tiling.palette_column
    table = tile_table(m, n, column(plan.variants, "bm")[variant], column(plan.variants, "bn")[variant], variant)
    table[:, 3] = edge_variants(plan, table, m, n)
    problem = table[:, 0]
    micro = (column(plan.variants, "tm") * column(plan.variants, "tn"))[table[:, 3]]
    threshold = plan.tlp_threshold or coordinated_threshold(hw)
    blocks = batching.group(k[problem], micro * k[problem], plan.batching, plan.threads, threshold,
                            plan.theta or batching.THETA)
    offsets = tuple(blocks.offsets.tolist())
    if plan.ksplit > 1 and offsets != tuple(range(len(table) + 1)):
        raise InternalError("passes.simt", "a split k needs one tile per cluster (batching none)")
    return WorkList(problems=rows, tiles=packed(table[blocks.order]), block_offsets=offsets,
                    grid=((len(offsets) - 1) * plan.ksplit, 1, 1), block=plan.threads, smem_bytes=plan.smem_bytes)


def uniform_worklist(kernel: Kernel, plan: SimtPlan, hw: Hardware, rows: ProblemTable) -> WorkList:
    """A uniform launch's work list: a raster of the assigned variant's tiles, batched in closed form."""
    base = plan.assignment[0]
    v = plan.variants[base]
    tiles = raster.raster(kernel, v.bm, v.bn, base).tiles
    per_block, batched = raster.batched_blocks(plan.batching, tiles, kernel.problems[0].k, plan.theta or batching.THETA,
                                               plan.threads, plan.tlp_threshold or coordinated_threshold(hw))
    if plan.ksplit > 1 and per_block > 1:
        raise InternalError("passes.simt", "a split k needs one tile per cluster (batching none)")
    r = raster.raster(kernel, v.bm, v.bn, base, per_block, batched, plan.ksplit)
    return WorkList(problems=rows, tiles=TileTable(), block_offsets=(), grid=raster.raster_grid(r, plan.threads, hw),
                    block=plan.threads, smem_bytes=plan.smem_bytes, raster=r)

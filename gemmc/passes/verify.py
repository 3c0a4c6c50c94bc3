"""The IR verifier: the invariants that hold between passes, each from the pass that establishes it on.

`verify(kernel, hw, ran)` checks a kernel after the passes `ran` (the pipeline's names so far, in order) and raises
InternalError naming the last of them, the pass after which an invariant broke: a bug in gemmc, never the user's.
`run_pipeline(verify=True)` runs it after every pass; the test suite always does, `gemmc compile --verify` and
`gemmc inspect --verify` on request. It is pure and cheap next to planning: the work list's coverage is checked
over numpy columns, band by band, with no array per output element.

- Until `select_family`: no family, draft, plan or work list. From it on: a registered family.
- Until `finish_plan`: no plan or work list. From it on: a plan of the family's plan type, no draft, and the
  family's own guarantees on the plan (`KernelFamily.limits`: tile sizes its template builds, thread counts).
- From `build_worklist` on: a work list for the plan: its problem table holds the kernel's problems, its blocks
  have the plan's threads and shared memory, and every output element of every problem lies in exactly one tile of
  its tile table (or its computed tiles, WorkList.raster; or, for a family whose grid maps blocks by arithmetic, one
  grid tile: `KernelFamily.grid_tile`).
- From `check_resources` on: a block fits the target (threads, shared memory, registers) and the grid is not empty.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gemmc.errors import InternalError
from gemmc.families.base import GridTile
from gemmc.families.registry import NAMES, family
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import FamilyPlan, Kernel, ProblemTable, TileTable, WorkList
from gemmc.model.raster import table as raster_table

SHOWN = 3  # coverage faults named per kernel; the rest are counted
ENUMERATED = 1 << 14  # a computed work list of at most this many tiles is also checked tile by tile


def verify(kernel: Kernel, hw: Hardware, ran: Sequence[str]) -> None:
    """Raise InternalError, naming the last pass of `ran`, where the kernel breaks an invariant those passes
    establish."""
    broken = broken_invariants(kernel, hw, frozenset(ran))
    if broken:
        raise InternalError(ran[-1], f"kernel '{kernel.name}': " + "; ".join(broken))


def broken_invariants(kernel: Kernel, hw: Hardware, ran: frozenset[str]) -> list[str]:
    """Each invariant of the passes in `ran` that the kernel breaks, as a sentence."""
    if "select_family" not in ran:
        decided = [what for what, value in (("a family", kernel.family), ("a draft", kernel.draft),
                                            ("a plan", kernel.plan), ("a work list", kernel.work)) if value is not None]
        return [f"{', '.join(decided)} before select_family"] if decided else []
    if kernel.family not in NAMES:
        return [f"family {kernel.family!r} is not a registered one ({', '.join(NAMES)})"]
    fam = family(kernel.family)
    if "finish_plan" not in ran:
        decided = [what for what, value in (("a plan", kernel.plan), ("a work list", kernel.work)) if value is not None]
        return [f"{', '.join(decided)} before finish_plan"] if decided else []
    plan = kernel.plan
    if not isinstance(plan, fam.plan_type):
        return [f"plan is a {type(plan).__name__}; family {fam.name} plans with a {fam.plan_type.__name__}"]
    out = ["a draft is left after finish_plan"] if kernel.draft is not None else []
    out += fam.limits(kernel, plan, hw)
    if "build_worklist" not in ran:
        return out + (["a work list before build_worklist"] if kernel.work is not None else [])
    work = kernel.work
    if work is None:
        return [*out, "no work list after build_worklist"]
    dynamic_smem = plan.smem_bytes - plan.static_smem_bytes  # the launch's share; the kernel declares the rest
    if work.block != plan.threads or work.smem_bytes != dynamic_smem:
        out.append(f"the work list's blocks have {work.block} threads and {work.smem_bytes} B of dynamic shared "
                   f"memory; the plan's {plan.threads} and {dynamic_smem} B")
    table = problem_table_faults(kernel, work.problems)
    out += table or output_coverage(kernel, hw)  # coverage reads the problem table: only once it is sound
    if "check_resources" in ran:
        out += resource_faults(plan, work, hw)
    return out


def problem_table_faults(kernel: Kernel, rows: ProblemTable) -> list[str]:
    """The problem table holds the kernel's problems in batch order (a `count` batch repeats its problem)."""
    table = np.frombuffer(rows.data, dtype="<i8").reshape(-1, 6)[:, :3]
    sizes = np.array([(p.m, p.n, p.k) for p in kernel.problems], dtype=np.int64).reshape(-1, 3)
    expected = np.tile(sizes, (kernel.count or 1, 1))
    if table.shape != expected.shape or not np.array_equal(table, expected):
        return [f"the problem table's {len(table)} rows are not the kernel's {len(expected)} problems"]
    return []


def resource_faults(plan: FamilyPlan, work: WorkList, hw: Hardware) -> list[str]:
    """A block fits the target: threads, shared memory, the plan's register estimate; the grid has blocks."""
    out = []
    if work.block > hw.max_threads_per_block:
        out.append(f"the block has {work.block} threads; {hw.arch} allows {hw.max_threads_per_block}")
    smem = work.smem_bytes + plan.static_smem_bytes
    if smem > hw.smem_per_block:
        out.append(f"the block has {smem} B of shared memory; {hw.arch} allows {hw.smem_per_block}")
    if plan.regs_estimate > hw.max_regs_per_thread:
        out.append(f"about {plan.regs_estimate} registers per thread; {hw.arch} allows {hw.max_regs_per_thread}")
    if work.blocks < 1:
        out.append("the grid has no blocks")
    return out


def output_coverage(kernel: Kernel, hw: Hardware) -> list[str]:
    """Where a planned kernel's work list fails to compute every output element of every problem exactly once, as
    sentences; empty: it computes each once. Tile-table families by their tiles (tile_coverage), the others by their
    grid (grid_coverage)."""
    plan, work = kernel.plan, kernel.work
    if plan is None or work is None:
        return ["no plan or work list to cover the outputs"]
    if plan.tile_shapes and work.raster is not None:
        return raster_coverage(work, plan.tile_shapes)
    if plan.tile_shapes:
        out = tile_coverage(work.problems, work.tiles, plan.tile_shapes)
        offsets = work.block_offsets
        if offsets[:1] != (0,) or offsets[-1:] != (len(work.tiles),) or (np.diff(offsets) <= 0).any():
            out.append(f"the block offsets do not hand out the {len(work.tiles)} tiles once each, in order")
        elif work.grid[1:] != (1, 1) or work.grid[0] % (len(offsets) - 1):
            out.append(f"grid {work.grid} is not the {len(offsets) - 1} blocks of the offsets (times a cluster)")
        return out
    tile = family(kernel.family).grid_tile(kernel, plan, hw)
    if tile is None or len(work.tiles) or work.block_offsets:
        return [f"family {kernel.family} maps blocks to outputs neither by a tile table of its plan's tiles nor by "
                "arithmetic alone (a grid tile)"]
    return grid_coverage(work.problems, work.grid, tile)


def raster_coverage(work: WorkList, shapes: Sequence[tuple[int, int]]) -> list[str]:
    """A computed work list (WorkList.raster) covers each output once when its numbers describe the problem table's
    launch: every problem of one size, tiles_m x tiles_n tiles of its variant's shape over each, the batched blocks
    within the tiles, and a grid of whole clusters, none idle. The grouped order visits each of a problem's tiles
    once for any tiles_m, tiles_n and group height (tests/test_raster.py checks it against the listed tiles);
    launches of up to ENUMERATED tiles are also listed here and checked as a tile table is."""
    r = work.raster
    assert r is not None
    sizes = np.frombuffer(work.problems.data, dtype="<i8").reshape(-1, 6)[:, :2]
    if len(sizes) != r.problems or len(sizes) == 0 or (sizes != sizes[0]).any():
        return [f"the raster's {r.problems} problems of one size are not the problem table's {len(sizes)}"]
    if work.tiles.data or work.block_offsets:
        return ["a computed work list also lists tiles or block offsets"]
    if not 0 <= r.variant < len(shapes) or (r.bm, r.bn) != tuple(shapes[r.variant]):
        return [f"the raster's {r.bm} x {r.bn} tiles are not variant {r.variant}'s of the plan"]
    m, n = (int(v) for v in sizes[0])
    if (r.tiles_m, r.tiles_n) != (-(-m // r.bm), -(-n // r.bn)):
        return [f"{r.tiles_m} x {r.tiles_n} tiles of {r.bm} x {r.bn} do not cover {m} x {n} outputs once"]
    if r.group_m < 1 or r.per_block < 1 or not 0 <= r.batched <= -(-r.tiles // r.per_block) or r.cluster < 1:
        return [f"the raster's blocks ({r.batched} of {r.per_block} tiles, groups of {r.group_m} rows, clusters of "
                f"{r.cluster}) do not hand out its {r.tiles} tiles"]
    x = work.grid[0]
    if work.grid[1:] != (1, 1) or x % r.cluster or not 1 <= x // r.cluster <= r.blocks:
        return [f"grid {work.grid} is not at most the raster's {r.blocks} blocks of {r.cluster}"]
    if r.tiles <= ENUMERATED:
        listed, offsets = raster_table(r)
        out = tile_coverage(work.problems, TileTable(listed.astype("<i4").tobytes()), shapes)
        if (np.diff(offsets) <= 0).any():
            out.append("a block of the raster runs no tile")
        return out
    return []


def grid_coverage(problems: ProblemTable, grid: tuple[int, int, int], tile: GridTile) -> list[str]:
    """A grid that maps blocks to outputs by arithmetic covers each output once when it has one block per grid tile
    (rows x columns of C) and sharer (the blocks of a cluster that split its k), over every problem; a persistent
    grid, when it has at most that many blocks, in whole clusters."""
    rows, columns, share = tile.rows, tile.columns, tile.sharers
    sizes = np.frombuffer(problems.data, dtype="<i8").reshape(-1, 6)
    tiles = int((-(-sizes[:, 0] // rows) * -(-sizes[:, 1] // columns)).sum())
    blocks = grid[0] * grid[1] * grid[2]
    if tile.persistent:  # blocks (clusters of `share` splitting k) stride over the tiles: each tile once
        # No problem rows: the sizes arrive with each call (the problem table matched the kernel's empty problems),
        # so any number of tiles may come and only an empty grid is wrong.
        most = max(1, tiles) * share if len(sizes) else blocks
        if 1 <= blocks <= most and blocks % share == 0:
            return []
        return [f"grid {grid} has {blocks} persistent blocks for {tiles} tiles of {rows} x {columns} outputs"
                + (f" in clusters of {share}" if share > 1 else "")]
    if blocks != tiles * share:
        return [f"grid {grid} has {blocks} blocks; {tiles} tiles of {rows} x {columns} outputs, {share} block(s) "
                f"each, need {tiles * share}"]
    return []


def tile_coverage(problems: ProblemTable, tiles: TileTable, shapes: Sequence[tuple[int, int]]) -> list[str]:
    """Where the tiles fail to cover every output element of every problem exactly once, as sentences (SHOWN of
    them, then a count; empty: they cover each once). A tile of variant v at (m0, n0) covers rows [m0, m0 + rows)
    and columns [n0, n0 + columns) of its problem, shapes[v], clipped at the problem's edge.

    Checked band by band. The tiles' first and past-last rows, with 0 and M, cut each problem's rows into bands
    inside which no tile starts or ends, so every tile that meets a band spans all of its rows; the band is then
    covered exactly once when its tiles, in order of their first column, each start where the ones before end,
    the first at column 0, and reach column N."""
    sizes = np.frombuffer(problems.data, dtype="<i8").reshape(-1, 6)[:, :2].astype(np.int64)
    m, n = sizes[:, 0], sizes[:, 1]
    problem, r0, c0, variant = np.frombuffer(tiles.data, dtype="<i4").reshape(-1, 4).astype(np.int64).T
    named = ((problem < 0) | (problem >= len(m))).nonzero()[0]
    if len(named):
        return [f"tile {named[0]} names problem {problem[named[0]]}; there are {len(m)}"]
    named = ((variant < 0) | (variant >= len(shapes))).nonzero()[0]
    if len(named):
        return [f"tile {named[0]} names variant {variant[named[0]]}; the plan has {len(shapes)}"]
    shape = np.array(shapes, dtype=np.int64).reshape(-1, 2)
    r1, c1 = np.minimum(r0 + shape[variant, 0], m[problem]), np.minimum(c0 + shape[variant, 1], n[problem])
    outside = ((r0 < 0) | (c0 < 0) | (r0 >= r1) | (c0 >= c1)).nonzero()[0]
    if len(outside):
        i = outside[0]
        return [f"tile {i} at ({r0[i]}, {c0[i]}) lies outside the {m[problem[i]]} x {n[problem[i]]} outputs of "
                f"problem {problem[i]}"]
    # Every problem's row edges as one sorted column of keys problem * stride + row; band b runs from edge b to
    # edge b + 1 where both belong to one problem.
    stride = int(m.max(initial=0)) + 1
    everyone = np.arange(len(m))
    edges = np.unique(np.concatenate([problem * stride + r0, problem * stride + r1, everyone * stride,
                                      everyone * stride + m]))
    first = np.searchsorted(edges, problem * stride + r0)
    spans = np.searchsorted(edges, problem * stride + r1) - first
    starts = np.cumsum(spans) - spans
    tile = np.repeat(np.arange(len(problem)), spans)  # one (tile, band) pair per band a tile spans
    band = np.repeat(first - starts, spans) + np.arange(int(spans.sum()))
    order = np.lexsort((c0[tile], band))
    band, tile = band[order], tile[order]
    begin, end = c0[tile], c1[tile]
    opens = np.r_[True, band[1:] != band[:-1]]
    closes = np.r_[band[1:] != band[:-1], True]
    widest = n.max(initial=0) + 1
    reach = np.maximum.accumulate(band * widest + end) - band * widest  # the band's columns reached so far
    before = np.where(opens, 0, np.r_[0, reach[:-1]])
    faults: list[tuple[int, str]] = []  # (band, fault), to name them in the problems' and rows' order

    def where(b: int) -> str:
        p = int(edges[b] // stride)
        return f"problem {p}: rows [{edges[b] - p * stride}, {edges[b + 1] - p * stride})"

    for k in (begin != before).nonzero()[0]:
        lo, hi, times = ((before[k], begin[k], "no tile") if begin[k] > before[k] else
                         (begin[k], min(before[k], end[k]), "more than one tile"))
        faults.append((band[k], f"{where(band[k])} x columns [{lo}, {hi}) are in {times}"))
    last_column = n[edges[band] // stride]
    for k in (closes & (reach < last_column)).nonzero()[0]:
        faults.append((band[k], f"{where(band[k])} x columns [{reach[k]}, {last_column[k]}) are in no tile"))
    met = np.zeros(len(edges), dtype=bool)
    met[band] = True
    missing = (~met[:-1] & (edges[:-1] // stride == edges[1:] // stride)).nonzero()[0]  # bands of one problem
    faults += [(b, f"{where(b)} are in no tile") for b in missing]
    ordered = [fault for _, fault in sorted(faults, key=lambda f: f[0])]
    return ordered[:SHOWN] + ([f"{len(ordered) - SHOWN} more such faults"] if len(ordered) > SHOWN else [])

"""The IR's stable text form: what `gemmc inspect` prints and golden tests store."""

from __future__ import annotations

from gemmc.ir.group import group_lines
from gemmc.ir.nodes import Kernel
from gemmc.ir.program import Program
from gemmc.ir.types import counted

MAX_TILES_SHOWN = 8


def _num(x: float | None) -> str:
    if x is None:
        return "runtime"
    return f"{x:g}"


def kernel_lines(k: Kernel) -> list[str]:
    out = [f"kernel {k.name}"]
    out.append(f"  dtype {k.dtypes}  layout {k.layouts}  alpha {_num(k.alpha)}  beta {_num(k.beta)}")
    out.append(f"  precision {k.precision if k.precision else 'auto'}  algorithm {k.algorithm}  "
               f"batching {k.batching.value}  stages {k.stages if k.stages_written else 'auto'}")
    tile = str(k.tile) if k.tile else f"auto({k.tile_mode.value})" if k.tile_mode.value != "auto" else "auto"
    threshold = k.tlp_threshold if k.tlp_threshold is not None else "auto"
    out.append(f"  tile {tile}  threads {k.threads or 'auto'}  tlp threshold {threshold}")
    count = f" x count {k.count}" if k.count else ""
    if k.dynamic is not None:
        out.append(f"  problems: {k.dynamic}")
    else:
        out.append(f"  problems ({len(k.problems)}{count}, {k.flops / 1e9:.3f} GFLOP):")
    width = max((len(p.name) for p in k.problems), default=0)
    for i, p in enumerate(k.problems):
        assigned = ""
        if k.plan is not None and hasattr(k.plan, "problem_detail"):
            assigned = f"  -> {k.plan.problem_detail(i, p.m, p.n)}"
        out.append(f"    {p.name:<{width}}  {p.m} x {p.n} x {p.k}{assigned}")
    if k.family is not None:
        out.append(f"  family {k.family}")
    if k.draft is not None:
        out.append("  decided so far:")
        out.extend(f"    {line}" for line in k.draft.lines())
    if k.plan is not None:
        out.append("  plan:")
        out.extend(f"    {line}" for line in k.plan.lines())
    if k.work is not None:
        w = k.work
        r = w.raster
        tiles = ("tiles derived on the device" if k.dynamic is not None else
                 f"{r.tiles} tiles computed on the device" if r is not None else
                 f"{len(w.tiles)} tiles" if w.tiles else "persistent blocks walk the plan's tiles")
        out.append(f"  work: grid {w.grid[0]}x{w.grid[1]}x{w.grid[2]}, {w.block} threads/block, "
                   f"{tiles}, dynamic shared memory {w.smem_bytes} B")
        if r is not None:
            batched = (f"; blocks 0-{r.batched - 1} run {r.per_block} tiles each, the rest one"
                       if r.batched else "; one tile a block")
            out.append(f"    tiles: {counted(r.problems, 'problem')} x {r.tiles_m} x {r.tiles_n} tiles of {r.bm} x "
                       f"{r.bn}, variant {r.variant}, in groups of {r.group_m} tile rows{batched}"
                       + (f"; clusters of {r.cluster} blocks" if r.cluster > 1 else ""))
        for t in w.tiles[:MAX_TILES_SHOWN]:
            out.append(f"    tile problem {t.problem} at ({t.m0}, {t.n0}) variant {t.variant}")
        if len(w.tiles) > MAX_TILES_SHOWN:
            out.append(f"    ... {len(w.tiles) - MAX_TILES_SHOWN} more")
    if k.notes:
        out.append("  decisions:")
        out.extend(f"    - {n}" for n in k.notes)
    return out


def format_kernel(k: Kernel) -> str:
    return "\n".join(kernel_lines(k))


def format_program(p: Program) -> str:
    hw = p.target
    head = (f"target {hw.vendor} {hw.arch}: {hw.sm_count} SMs, warp {hw.warp_size}, "
            f"{hw.max_threads_per_sm} threads/SM, {hw.regs_per_sm} regs/SM, {hw.smem_per_sm} B shared/SM")
    groups = ["\n".join(group_lines(g)) for g in p.groups]
    return "\n\n".join([head, *(format_kernel(k) for k in p.kernels), *groups]) + "\n"

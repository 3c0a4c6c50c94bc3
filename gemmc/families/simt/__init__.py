"""The SIMT family: FP32/FP64 GEMM on CUDA cores, any sizes and layouts, a whole batch in one launch, with the
irregular-batch tiling of paper 000 and the coordinated tiling and batching of paper 003."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path

from gemmc.errors import Diagnostic
from gemmc.families.base import Claim, Fusion, NotFused, PlannerFamily, differing
from gemmc.families.cells import CellKind, Cells, Figures, planned, tile_cells
from gemmc.families.simt import codegen, planner, steps
from gemmc.families.simt.plan import SimtPlan
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel, Problem
from gemmc.ir.types import Span

FUSED_MARGIN = 0.97  # fused where the batch is estimated 3% faster: the cost model is within ~3% (geomean)


class Simt(PlannerFamily):
    planning = steps
    planner = planner
    codegen = codegen
    name = "simt"
    plan_type = SimtPlan
    folder = Path(__file__).parent

    def cells(self, kernel: Kernel, hw: Hardware) -> Cells:
        """The work list's tiles, one kind per variant; a split k's cluster of `ksplit` blocks computes each tile.
        The TLP figures are those the tiling was chosen by, where it was (`tile auto`)."""
        plan, work = planned(kernel, SimtPlan)
        edge_of = {e: i for i, row in enumerate(plan.edges) for e in row if e >= 0}
        kinds = tuple(CellKind(f"variant {i}", v.bm, v.bn, v.threads, str(v),
                               f"edge tiles of variant {edge_of[i]}" if i in edge_of else "")
                      for i, v in enumerate(plan.variants))
        figures = (Figures(plan.tlp_old, plan.tlp_new, plan.tlp_threshold, plan.occupancy) if plan.occupancy
                   else None)
        return tile_cells(work, kinds, plan.ksplit, figures)

    def claim(self, kernel: Kernel, hw: Hardware) -> tuple[Claim, str] | None:
        if kernel.dtype.half:
            return Claim.DEFAULT, (f"dtype {kernel.dtypes} computed in f32 on CUDA cores (halves widened as they are "
                                   "loaded): the default family")
        return Claim.DEFAULT, "f32/f64 on CUDA cores: the default family"

    def check(self, kernel: Kernel, hw: Hardware) -> list[Diagnostic]:
        t = kernel.tile
        if t is not None and t.slices > 1 and t.k % t.slices:
            return [Diagnostic("E202", f"kslices {t.slices} does not divide the tile's K step {t.k}",
                               kernel.where("tile"), f"use a K step that is a multiple of {t.slices}")]
        return []

    def alternatives(self, kernel: Kernel, hw: Hardware) -> tuple[tuple[str, Kernel], ...]:
        return planner.alternatives(kernel, hw)

    fuses = "simt"

    def fuse(self, members: Mapping[str, Kernel], name: str, span: Span, hw: Hardware) -> Fusion | NotFused:
        """SIMT members as the problems of one irregular batch (a problem per member, in call order), under the
        members' own tile, threads and pipeline, which must agree; the batch's cost model estimates the launch."""
        why = differing(members, ("tile", "threads", "stages"))
        if why is not None:
            return why
        first = next(iter(members.values()))
        problems = tuple(Problem(member, k.problems[0].m, k.problems[0].n, k.problems[0].k, span=k.span)
                         for member, k in members.items())
        launch = dataclasses.replace(first, name=name, problems=problems, count=None, family=None, plan=None,
                                     work=None, notes=(), algorithm=self.name, span=span)
        return Fusion(launch, "fused: one SIMT launch of every member")

    def prefer_fused(self, fused: Kernel, members: Sequence[Kernel], hw: Hardware) -> tuple[bool, str]:
        """The cost model (`tiling.estimate`, which simulates a launch tile by tile) puts the batch at least
        1 - FUSED_MARGIN under the members' sum: one launch is concurrency already, its blocks balanced over the
        whole group (bench/results/concurrent/2026-11-26_h200_concurrent_run1.json: fused within 3% of gemmc's
        fastest mode in 12 of the 13 groups that allow it, and the fastest in 9)."""
        alone = [getattr(k.plan, "estimate_us", None) for k in members]
        fused_us = getattr(fused.plan, "estimate_us", None)
        if fused_us is None or None in alone:
            return False, "not fused: the cost model has no estimate of every launch"
        total = float(sum(us for us in alone if us is not None))
        verdict = fused_us <= FUSED_MARGIN * total
        return verdict, (f"{'' if verdict else 'not '}fused: the cost model estimates {fused_us:.1f} us for one "
                         f"launch against {total:.1f} us for the GEMMs one after another")

FAMILY = Simt()

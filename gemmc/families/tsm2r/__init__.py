"""The TSM2R family (paper 002, TSM2X): a large A times a tall-and-skinny B (n small), one GEMM,
streamed near memory bandwidth: k split over warps and thread-block clusters, f64 on the tensor cores where they
pay."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gemmc.errors import InternalError
from gemmc.families.base import Claim, GridTile, PlannerFamily
from gemmc.families.cells import CellKind, Cells, planned
from gemmc.families.tsm2r import codegen, planner, steps, tuning
from gemmc.families.tsm2r.plan import Tsm2rPlan
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import FamilyPlan, Kernel
from gemmc.model.tlp import ceil_div


class Tsm2r(PlannerFamily):
    planning = steps
    planner = planner
    codegen = codegen
    name = "tsm2r"
    plan_type = Tsm2rPlan
    folder = Path(__file__).parent

    def cells(self, kernel: Kernel, hw: Hardware) -> Cells:
        """Row tiles by passes over n, as tsm2r.cu.j2 and rows.cuh.j2 map the grid's blocks to them: the column
        kernel's blocks in clusters (neighbours in x) that split a row tile's k, the passes of a row tile next to
        each other; the row kernel's row tiles in x and passes in y. One kind per pass."""
        plan, _ = planned(kernel, Tsm2rPlan)
        p = kernel.problems[0]
        passes = ceil_div(p.n, plan.t2)
        if planner.column_kernel(kernel, plan):
            height, size = plan.row_groups * hw.warp_size * plan.rows_per_warp, plan.cluster
            cell = np.arange(ceil_div(p.m, height) * passes)
            tile, step, block = cell // passes, cell % passes, cell * size
            per = f"b // {size}" if size > 1 else "b"
            slices = f"{plan.kslices} k slice(s) of {plan.row_groups} warp(s)"
            mapping = (f"block b: row tile b // {size * passes} ({height} rows), pass {per} % {passes} over n "
                       f"({plan.t2} columns); " + (f"the {size} blocks of a cluster split k, each in {slices}"
                                                   if size > 1 else f"each block splits k in {slices}"),)
        else:
            height, size = plan.kslices * plan.rows_per_warp, 1
            tiles = ceil_div(p.m, height)
            block = np.arange(tiles * passes)
            tile, step = block % tiles, block // tiles
            mapping = (f"block b = x + y * {tiles}: rows x * {height} ({plan.kslices} warps of {plan.rows_per_warp} "
                       f"rows), pass y over n of {plan.t2} columns",)
        kinds = tuple(CellKind(f"pass {i}", height, plan.t2, plan.t1,
                               f"row tile of {height} rows x columns {i * plan.t2}-{min(p.n, (i + 1) * plan.t2) - 1}, "
                               f"{plan.t1} threads" + (f", a cluster of {size} blocks" if size > 1 else ""))
                      for i in range(passes))
        return Cells.of({"problem": 0, "m0": tile * height, "n0": step * plan.t2, "rows": height, "cols": plan.t2,
                         "kind": step, "block": block, "blocks": size, "tile": -1}, kinds, "row tile", mapping)

    def claim(self, kernel: Kernel, hw: Hardware) -> tuple[Claim, str] | None:
        why = planner.claim(kernel, hw)
        return (Claim.SHAPE, why) if why else None

    def alternatives(self, kernel: Kernel, hw: Hardware) -> tuple[tuple[str, Kernel], ...]:
        return tuning.alternatives(kernel, hw)

    def grid_tile(self, kernel: Kernel, plan: FamilyPlan, hw: Hardware) -> GridTile | None:
        if not isinstance(plan, Tsm2rPlan):
            raise InternalError("tsm2r", f"grid_tile of a {type(plan).__name__}")
        return planner.grid_tile(kernel, plan, hw)


FAMILY = Tsm2r()

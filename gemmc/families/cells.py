"""Where a launch computes what: the cells of C and the blocks that compute them.

A cell is a rectangle of one problem's C that one block computes, or the blocks of one thread-block cluster that
split its k between them: a tile of the work list for the families that have one (SIMT, tensor cores), a row tile
and its pass over n for the TSM2 families, whose grid maps blocks to rows by arithmetic. Every family describes its
launch this way (`KernelFamily.cells`); `gemmc inspect --svg` draws it (gemmc/codegen/svg.py), and the tests check
that the cells cover every output of every problem once and every block of the grid.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from gemmc.errors import GemmcError, InternalError
from gemmc.ir.nodes import FamilyPlan, Kernel, WorkList
from gemmc.model.raster import table as raster_table

DRAWN = 1 << 16  # computed tiles a picture lists at most (a picture of more would be boxes of thousands anyway)


@dataclass(frozen=True, slots=True)
class CellKind:
    """One kind of cell, as a legend names it: its name ("variant 0", "pass 1"), its shape (rows x columns of C; 0
    where cells of the kind differ in size), its block's threads, the family's description of it, and its role (""
    or, e.g., "edge tiles of variant 0")."""

    name: str
    rows: int
    cols: int
    threads: int
    text: str
    role: str = ""


@dataclass(frozen=True, slots=True)
class Figures:
    """The parallelism figures a family's plan keeps itself, as `gemmc inspect` prints them: old and new TLP (paper
    000 Eqs. 3 and 4), the threshold the tiling aimed at, the occupancy as text ("16 warps/SM (registers)")."""

    tlp_old: int
    tlp_new: int
    threshold: int
    occupancy: str


@dataclass(frozen=True, slots=True, eq=False)
class Cells:
    """The launch as cells, one row per cell in int64 columns: rows [m0, m0 + rows) x columns [n0, n0 + cols) of
    problem `problem` (its row in the work list's problem table) are computed by blocks `block` .. `block + blocks
    - 1` of the grid (numbered x + y * grid.x), as cell kind `kind`; `tile` is the cell's index in the work list's
    tile table (-1: the family has none). A cell may reach past its problem's M or N (a predicated edge)."""

    problem: np.ndarray
    m0: np.ndarray
    n0: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    kind: np.ndarray
    block: np.ndarray
    blocks: np.ndarray
    tile: np.ndarray
    kinds: tuple[CellKind, ...]
    unit: str  # what one cell is called: "tile", "row tile", "problem"
    mapping: tuple[str, ...] = ()  # how the grid's blocks map to cells, where no tile table says it
    figures: Figures | None = None  # the plan's own figures, where it keeps them

    @staticmethod
    def of(columns: dict[str, object], kinds: tuple[CellKind, ...], unit: str, mapping: tuple[str, ...] = (),
           figures: Figures | None = None) -> Cells:
        """Cells from columns by name (arrays or sequences; a column may be one number for all cells)."""
        values = [np.asarray(value) for value in columns.values()]
        arrays = [value.size for value in values if value.ndim > 0]
        size = max(arrays) if arrays else 1  # the arrays' length (0 for no problems), one cell for scalars alone

        def column(name: str) -> np.ndarray:
            return np.broadcast_to(np.asarray(columns[name], dtype=np.int64), (size,)).copy()

        return Cells(column("problem"), column("m0"), column("n0"), column("rows"), column("cols"), column("kind"),
                     column("block"), column("blocks"), column("tile"), kinds, unit, mapping, figures)

    def __len__(self) -> int:
        return len(self.m0)


Plan = TypeVar("Plan", bound=FamilyPlan)


def planned(kernel: Kernel, plan_type: type[Plan]) -> tuple[Plan, WorkList]:
    """The kernel's plan, of the family's plan type, and its work list: what `cells` describes."""
    plan = kernel.plan_as(plan_type, "cells")
    if kernel.work is None:
        raise InternalError("cells", f"kernel {kernel.name} has no work list")
    return plan, kernel.work


def tile_cells(work: WorkList, kinds: tuple[CellKind, ...], per_tile: int = 1,
               figures: Figures | None = None) -> Cells:
    """The work list's tiles as cells, each of its variant's shape (`kinds[variant]`). Block b computes tiles
    offsets[b] .. offsets[b + 1] - 1; with `per_tile` > 1 every tile is computed by a cluster of that many blocks
    that split its k (tile t by blocks t * per_tile ..), and the work list has one tile a block."""
    if work.raster is not None:  # computed tiles: listed for the picture, up to DRAWN of them
        if work.raster.tiles > DRAWN:
            raise GemmcError(f"the launch computes {work.raster.tiles} tiles on the device; its picture is drawn for "
                             f"at most {DRAWN} (`gemmc inspect` without --svg prints how they are computed)",
                             code="E900")
        table, offsets = raster_table(work.raster)
    else:
        table = np.frombuffer(work.tiles.data, dtype="<i4").reshape(-1, 4).astype(np.int64)
        offsets = np.asarray(work.block_offsets, dtype=np.int64)
    block = np.searchsorted(offsets, np.arange(len(table)), side="right") - 1
    shape = np.array([(k.rows, k.cols) for k in kinds], dtype=np.int64).reshape(-1, 2)
    variant = table[:, 3]
    return Cells.of({"problem": table[:, 0], "m0": table[:, 1], "n0": table[:, 2], "rows": shape[variant, 0],
                     "cols": shape[variant, 1], "kind": variant, "block": block * per_tile, "blocks": per_tile,
                     "tile": np.arange(len(table))}, kinds, "tile", figures=figures)


def whole_problems(kernel: Kernel) -> Cells:
    """Each problem as one cell computed by the whole grid: the description of a family that does not say which
    block computes which part of C."""
    if kernel.work is None:
        raise InternalError("cells", f"kernel {kernel.name} has no work list")
    work = kernel.work
    table = np.frombuffer(work.problems.data, dtype="<i8").reshape(-1, 6).astype(np.int64)
    kind = CellKind("problem", 0, 0, work.block, f"the {kernel.family} family's grid, blocks mapped by its own "
                    "arithmetic")
    return Cells.of({"problem": np.arange(len(table)), "m0": 0, "n0": 0, "rows": table[:, 0], "cols": table[:, 1],
                     "kind": 0, "block": 0, "blocks": work.blocks, "tile": -1}, (kind,), "problem")

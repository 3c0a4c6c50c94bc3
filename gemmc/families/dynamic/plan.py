"""The dynamic family's decisions: the ladder of tile variants compiled into the persistent kernel, and the
device scheduler's parameters.

The sizes arrive at run time, on the device, so the plan cannot give each problem its tile as the SIMT plan does.
It compiles in a table instead: per variant its tile, threads, ladder level and cost weight. Each block of the
persistent kernel reads the sizes, gives every group the variant the table makes cheapest (under a cap on the
level that the TLP rule sets for the whole launch), and walks the resulting tiles (gemmc/families/dynamic/
scheduler.py is the same computation in NumPy; docs/INTERNALS.md, "Dynamic batches").
"""

from __future__ import annotations

from dataclasses import dataclass

from gemmc.families.dynamic import calibration as cal
from gemmc.families.simt.plan import SimtPlan, SimtVariant
from gemmc.ir.dynamic import Grouping
from gemmc.ir.nodes import FamilyPlan

SCAN_WORDS = 8  # bytes per thread of the block-wide scan (long long)
# Groups the device scheduler sorts by tile cost (largest first): each thread counts, for its groups, the larger keys
# among all groups, so the work grows with the square of the groups; 1024 groups take 4096 comparisons a thread.
SORT_GROUPS = 1024
# Groups up to which a `grouped M` kernel numbers every group's tiles in two parts (DynamicPlan.parts): its
# whole-height rows of tiles, and its last row where that needs at most half a tile's height, after every group's
# first part. Every group has the same depth k there, so the half-height tiles are the shortest whatever the group:
# the blocks claim them last and fill the last wave with them (the static plan's longest-first order over all tiles,
# not group by group; calibration.PARTS). The scheduler keeps a position per part in shared memory: past this bound
# one part per group keeps 11 bytes a group within the static 48 KiB.
SPLIT_GROUPS = 1024


@dataclass(frozen=True, slots=True)
class SizeClass:
    """One variant of the ladder: its tile, its level (0: the smallest tiles), and its cost weight: the issue slots
    one of its tiles takes per k (the SIMT cost model's step_instructions x threads / bk), so that the tiles' weights
    summed compare the variants on one group; and the variants of its edge tiles (planner.edges)."""

    variant: SimtVariant
    level: int
    level_name: str
    weight: int
    edges: tuple[int, int, int]  # the variants of its edge tiles: half height, half width, both (its own where none)


@dataclass(frozen=True, slots=True)
class DynamicPlan(FamilyPlan):
    grouping: Grouping
    tiles: SimtPlan  # the variants (SimtPlan.variants, ladder order) with their stages and register bound
    classes: tuple[SizeClass, ...]  # one per variant of `tiles`, same order: level ascending, tall before wide
    levels: tuple[str, ...]  # level names, smallest tiles first
    max_groups: int
    tlp_threshold: int  # threads (paper 000 Eq. 4); 0: the launch sets one wave of the persistent grid
    blocks_per_sm: int  # the persistent grid per SM, by the occupancy model on the target table
    parts: int = 1  # 2: each group's half-height last row of tiles is numbered after every group's whole rows
    # the tiles past the grid's last whole round, where they are at most half the blocks, run in column halves (each
    # tile's half-width variant), so that twice as many blocks share that round
    tail_split: bool = False

    @property
    def positions(self) -> int:
        """Places of the tile numbering the scheduler keeps in shared memory: one per part of each group."""
        return self.parts * self.max_groups

    @property
    def tlp_waves(self) -> int:
        """Waves of the persistent grid's threads that make the default TLP threshold (the calibration table)."""
        return int(cal.TLP_WAVES.value)

    def threshold(self, grid: int) -> int:
        """The launch's TLP threshold in threads over a persistent grid of `grid` blocks."""
        return self.tlp_threshold or grid * self.threads * self.tlp_waves

    @property
    def threads(self) -> int:
        return self.tiles.threads

    @property
    def min_tile(self) -> int:
        """The shortest side of any size class's tile: a launch's tiles are at most its outputs' in squares of this
        side, the bound a call holds against the int32 tile numbering."""
        return min(min(c.variant.bm, c.variant.bn) for c in self.classes)

    @property
    def tile_smem(self) -> int:
        """Dynamic shared memory: the largest variant's k-tile buffers."""
        return self.tiles.smem_bytes

    @property
    def sched_smem(self) -> int:
        """Static shared memory of the scheduler: group starts, tile ends and the order (per position), variants, the
        scan, the TLP sums and the next tile."""
        groups, positions = self.max_groups, self.positions
        return (4 * (groups + 1) + 4 * positions + 2 * positions + (-(-groups // 8) * 8) + SCAN_WORDS * self.threads
                + 8 * len(self.levels) + 8)

    @property
    def smem_bytes(self) -> int:
        return self.tile_smem + self.sched_smem

    @property
    def static_smem_bytes(self) -> int:
        return self.sched_smem  # the scheduler's arrays are `__shared__`; the k-tile buffers are the launch's

    @property
    def regs_estimate(self) -> int:
        return self.tiles.regs_estimate

    def lines(self) -> tuple[str, ...]:
        t = self.tiles
        bound = f", bound {t.min_blocks} blocks/SM ({t.reg_cap} registers)" if t.min_blocks else ""
        threshold = (f"{self.tlp_threshold} threads" if self.tlp_threshold
                     else "one wave of the persistent grid (grid x block threads, set at launch)")
        out = [f"persistent kernel: block {self.threads} threads, grid SMs x {self.blocks_per_sm} (occupancy on the "
               f"target table; the launch reads the device's){bound}",
               f"shared memory {self.tile_smem} B k-tile buffers (stages {t.stages}) + {self.sched_smem} B scheduler "
               f"(up to {self.max_groups} groups)",
               f"size classes: per group the variant whose tiles weigh least at a level <= the cap (edge tiles at "
               f"their variant's weight); the cap is the largest level whose TLP (Eq. 4, threads) reaches {threshold}",
               "tiles: each block takes the next unclaimed one from a counter in the workspace"
               + (", every group's half-height last row after all groups' whole rows" if self.parts > 1 else "")
               + ("; the tiles past the grid's last whole round, where they are at most half the blocks, in column "
                  "halves (each tile's half-width variant)" if self.tail_split else "")]
        for i, c in enumerate(self.classes):
            v = c.variant
            edge = "" if c.edges == (i, i, i) else f", edge tiles {'/'.join(map(str, c.edges))}"
            out.append(f"variant {i}: level {c.level} {c.level_name}, {v}, weight {c.weight}{edge} "
                       f"(~{t.variant_regs(v)} regs)")
        return tuple(out)

"""What a family's device scheduler would do with one call's sizes (`KernelFamily.schedule_for`), computed on the host:
the sizes a call of a batch sized at run time takes (`call_sizes`, checked as a call checks them) and the preview a
family returns (`SchedulePreview`), whose text is what `gemmc inspect --sizes` prints.

A kernel whose batch is sized at run time has no plan per size: its blocks derive the tiles from the sizes on the
device. A family's preview runs its host model of that derivation (the dynamic family's NumPy scheduler, the
hopper_grouped family's tile rows and units) on sizes given here, so that a user sees the size class each group gets,
the tiles, and how the persistent grid takes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from gemmc.errors import GemmcError
from gemmc.ir.dynamic import INT32_MAX, DynamicBatch, Grouping


class CallSizes(NamedTuple):
    """Per group (problem) of one call: its m, n and k."""

    m: tuple[int, ...]
    n: tuple[int, ...]
    k: tuple[int, ...]

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        m, n, k = (np.array(x, dtype=np.int64) for x in self)
        return m, n, k


def _ints(values: Any, name: str) -> np.ndarray:
    try:
        array = np.asarray(values)
    except Exception as err:  # noqa: BLE001 - a device array NumPy cannot read: say what to pass instead
        raise GemmcError(f"{name}: expected numbers on the host (a list, a NumPy array; a device array's .cpu() or "
                         f".get()), got {type(values).__name__}: {err}") from None
    if array.dtype == object and all(type(v) is int for v in array.ravel()):  # past int64: NumPy keeps Python ints
        raise GemmcError(f"{name}: {max(array.ravel(), key=abs)} is past 64 bits: sizes are at most {INT32_MAX}")
    if array.dtype == object or not (array.size == 0 or np.issubdtype(array.dtype, np.integer)):
        raise GemmcError(f"{name}: expected whole numbers, got {array.dtype} values")
    return array.astype(np.int64)


def call_sizes(dyn: DynamicBatch, sizes: Any = None, offsets: Any = None) -> CallSizes:
    """The per-group sizes of one call from what a user has at hand: `grouped M` each group's rows, `grouped K` each
    group's depth (or, for both, the cumulative group ends a call takes as `offsets`), `grouped list` the (m, n, k) of
    each problem. Refused as a call refuses them (E400): more groups than the schedule's `groups`, more rows than its
    `rows`, a negative size; ends that are not cumulative from 0 are refused as `validate=True` refuses them; a size
    past int32 (a call's group ends are int32, and the device's tile arithmetic is 32-bit)."""
    listed = dyn.grouping is Grouping.LIST
    if (sizes is None) == (offsets is None):
        want = "the (m, n, k) of each problem" if listed else \
            f"each group's {'rows' if dyn.grouping is Grouping.M else 'depth'}, or offsets=the cumulative group ends"
        raise GemmcError(f"schedule_for: give {want}" + (" (not both)" if sizes is not None else ""))
    if listed:
        if offsets is not None:
            raise GemmcError("offsets: a `grouped list` kernel takes the (m, n, k) of each problem, not group ends")
        shapes = _ints(sizes, "sizes")
        if shapes.size == 0:
            shapes = shapes.reshape(0, 3)
        if shapes.ndim != 2 or shapes.shape[1] != 3:
            raise GemmcError(f"sizes: expected the (m, n, k) of each problem, got an array of shape {shapes.shape}")
        counts = shapes
    else:
        name = "sizes" if offsets is None else "offsets"
        values = _ints(sizes if offsets is None else offsets, name)
        if values.ndim != 1:
            raise GemmcError(f"{name}: expected one number per group, got an array of shape {values.shape}")
        if offsets is not None:
            for g, end in enumerate(values.tolist()):
                prev = int(values[g - 1]) if g else 0
                if end < prev:
                    detail = f"{end} is negative" if end < 0 else f"{end} is below offsets[{g - 1}] = {prev}"
                    raise GemmcError(f"offsets[{g}] = {detail}: group ends must be cumulative, from 0 (group {g} is "
                                     "the first bad one)")
                if end > INT32_MAX:
                    raise GemmcError(f"offsets[{g}] = {end}: a call's group ends are int32 (at most {INT32_MAX})")
            values = np.diff(values, prepend=0)
        counts = values
    if len(counts) > dyn.max_groups:
        what = "problems" if listed else "groups"
        raise GemmcError(f"{'sizes' if offsets is None else 'offsets'}: {len(counts)} {what}, but the schedule allows "
                         f"at most {dyn.max_groups}")
    negative = counts < 0
    bad = np.flatnonzero(negative.any(axis=1) if negative.ndim == 2 else negative)
    if len(bad):
        raise GemmcError(f"sizes[{int(bad[0])}] = {counts[bad[0]].tolist()}: sizes are 0 or more")
    large = counts > INT32_MAX
    bad = np.flatnonzero(large.any(axis=1) if large.ndim == 2 else large)
    if len(bad):
        raise GemmcError(f"sizes[{int(bad[0])}] = {counts[bad[0]].tolist()}: sizes are at most {INT32_MAX} (32-bit "
                         "on the device)")
    if listed:
        return CallSizes(*(tuple(int(x) for x in counts[:, i]) for i in range(3)))
    rows = int(counts.sum())
    if rows > dyn.max_rows:
        raise GemmcError(f"sizes: {rows} rows, but the schedule allows at most {dyn.max_rows} (`rows` in the "
                         "schedule)")
    size = tuple(int(x) for x in counts)
    if dyn.grouping is Grouping.M:
        return CallSizes(size, (dyn.n,) * len(size), (dyn.k,) * len(size))
    return CallSizes((dyn.m,) * len(size), (dyn.n,) * len(size), size)


def tile_numbering(sizes: CallSizes, grouping: Grouping, smallest: int) -> None:
    """Refuse (E400) sizes whose tiles the launch's int32 tile numbering might not hold, by the bound a call checks
    (runtime/dynamic.py, runtime/dynamic_list.py: the outputs in squares of the smallest tile side `smallest`):
    `grouped M` its rows, the list form its problems; `grouped K`'s tiles are fixed in the schedule."""
    if grouping is Grouping.M and sizes.m:
        rows = sum(sizes.m)
        if (rows // smallest + len(sizes.m)) * -(-sizes.n[0] // smallest) > INT32_MAX:
            raise GemmcError(f"sizes: {rows} rows give more tiles than the int32 tile numbering holds")
    elif grouping is Grouping.LIST:
        pairs = list(zip(sizes.m, sizes.n, strict=True))
        if sum(m * n for m, n in pairs) > INT32_MAX and \
                sum(-(-m // smallest) * -(-n // smallest) for m, n in pairs) > INT32_MAX:
            raise GemmcError("sizes: the problems give more tiles than the int32 tile numbering holds")


@dataclass(frozen=True, slots=True)
class GroupSchedule:
    """One group (problem) of the call: its sizes, and the tiles it runs by shape, largest first: its size class's
    tile, then its edge tiles (a group no taller than half its class's tile, such as 40 rows under 128 x 128, runs
    only the half-height edge tiles). `elsewhere`: where a call runs it instead of this launch, and why; empty:
    here."""

    m: int
    n: int
    k: int
    tiles: tuple[tuple[str, int], ...]
    elsewhere: str = ""

    @property
    def count(self) -> int:
        """Its tiles."""
        return sum(c for _, c in self.tiles)

    @property
    def tile(self) -> str:
        """The largest tile it runs (its size class's, or the edge tile that covers a group no taller than half of
        it), "" where it has none."""
        return self.tiles[0][0] if self.tiles else ""


@dataclass(frozen=True, slots=True)
class SchedulePreview:
    """The device scheduler's decisions for one call's sizes, computed on the host (`CompiledKernel.schedule_for`).

    `groups` in the call's order. `cap` is the level cap on the size classes that the TLP rule set (paper 000
    Algorithm 1: the largest level whose TLP, `tlp[level]` threads, reaches `threshold`), None for a family whose
    size classes the sizes alone decide; `why` says how the classes were chosen. The persistent grid of `grid` blocks,
    in clusters of `cluster`, takes `units` (tiles, or a cluster's tile rows by one n-tile) one at a time; the `tail`
    units past its last whole round, where they are at most half the grid, take two claims each, and `split` of them
    run in column halves, the others whole in their first claim (`tail_why` says why). `notes`: how the blocks take
    the units, and what the preview assumes."""

    kernel: str
    family: str
    grouping: Grouping
    groups: tuple[GroupSchedule, ...]
    grid: int
    units: int
    why: str
    cap: int | None = None
    threshold: int | None = None
    tlp: tuple[int, ...] = ()
    cluster: int = 1
    tail: int = 0
    split: int = 0
    tail_why: str = ""
    notes: tuple[str, ...] = ()

    @property
    def tiles(self) -> int:
        """The launch's tiles (a group run elsewhere has none here)."""
        return sum(g.count for g in self.groups)

    @property
    def rounds(self) -> float:
        """Units per block (per cluster, with clusters): how many times the grid goes over them."""
        return self.units / max(self.grid // self.cluster, 1)

    def lines(self) -> list[str]:
        count = len(self.groups)
        what = "problem" if self.grouping is Grouping.LIST else "group"
        out = [f"schedule of {self.kernel} ({self.family}, grouped {self.grouping.value}) for {count} "
               f"{what}{'' if count == 1 else 's'}", f"  size classes: {self.why}"]
        rows = [(str(i), str(g.m), str(g.n), str(g.k), str(g.count),
                 g.elsewhere or (", ".join(f"{s} x {c}" for s, c in g.tiles) if g.tiles else "-"))
                for i, g in enumerate(self.groups)]
        head = (what, "m", "n", "k", "tiles", "run as")
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(5)]
        out += ["  " + "  ".join(c.rjust(w) for c, w in zip(r[:5], widths, strict=True)) + "  " + r[5]
                for r in [head, *rows]]
        line = f"  {self.tiles} tiles"
        if self.cluster > 1:
            line += f" in {self.units} units of {self.cluster} tile rows by one n-tile"
        line += (f" on a grid of {self.grid} blocks: {self.rounds:.2f} rounds of "
                 + (f"{self.grid // self.cluster} clusters" if self.cluster > 1 else f"{self.grid} blocks"))
        if self.tail:
            what = "tiles" if self.cluster == 1 else "units"
            if self.split == self.tail:
                line += f"; the last round's {self.tail} {what} in column halves ({2 * self.tail} claims)"
            elif self.split == 0:
                line += f"; the last round's {self.tail} {what} run whole ({self.tail_why})"
            else:
                line += (f"; of the last round's {self.tail} {what}, {self.split} run in column halves and "
                         f"{self.tail - self.split} whole ({self.tail_why})")
        out.append(line)
        out += [f"  {n}" for n in self.notes]
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


def by_shape(counts: Sequence[tuple[int, int, int]]) -> tuple[tuple[str, int], ...]:
    """(bm, bn, tiles) as ("BMxBN", tiles) by decreasing area (taller first), each shape once, shapes of no tile left
    out."""
    merged: dict[tuple[int, int], int] = {}
    for bm, bn, c in counts:
        if c > 0:
            merged[(bm, bn)] = merged.get((bm, bn), 0) + int(c)
    ordered = sorted(merged.items(), key=lambda item: (-item[0][0] * item[0][1], -item[0][0]))
    return tuple((f"{bm}x{bn}", c) for (bm, bn), c in ordered)

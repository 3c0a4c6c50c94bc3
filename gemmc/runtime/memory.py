"""The memory a call's arrays occupy: every data pointer aligned to its item, and no output sharing a byte with
another output or with any input.

One launch computes every problem of the batch at once, so an output that overlaps another output, or an input
of any problem, is a race: the result depends on the order the blocks run in. Inputs may overlap each other
freely (they are only read). By the time these checks run the arrays have passed the shape, dtype and stride
checks (args.py), so each matrix is dense and occupies exactly `[ptr, ptr + rows * cols * itemsize)`.

The checks run once per new set of pointers (launch.pointer_tables keeps the sets it has uploaded), vectorised
with numpy: intervals sorted by start, neighbours compared, inputs looked up by binary search. A call on the same
buffers again pays nothing here.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import chain
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from gemmc.errors import GemmcError

if TYPE_CHECKING:
    from gemmc.runtime.args import Expected

ITEMSIZES = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2}
GROUPS = ("As", "Bs", "Cs")


@lru_cache(maxsize=256)
def _extents(expected: Expected) -> np.ndarray:
    """The bytes each matrix of a call occupies, (3, batch) for A, B, C: computed once per plan (an `Expected` is
    hashed by identity), not on every new set of pointers."""
    item = ITEMSIZES[expected.dtype]
    return np.array([[r * c * item for r, c in column] for column in expected.shapes], dtype=np.uint64)


def check_memory(a: list[int], b: list[int], c: list[int], expected: Expected) -> None:
    """Raise GemmcError naming the arrays unless every pointer is a multiple of the item size and no C overlaps
    another C or any A or B. `a`, `b`, `c` are in the order of `expected` (the caller's)."""
    item = ITEMSIZES[expected.dtype]
    n = len(c)
    start = np.fromiter(chain(a, b, c), dtype=np.uint64, count=3 * n).reshape(3, n)
    end = start + _extents(expected)
    odd = np.flatnonzero(start % np.uint64(item))
    if odd.size:
        slot, index = divmod(int(odd[0]), n)
        raise GemmcError(f"{GROUPS[slot]}[{index}]: the data pointer {int(start[slot, index]):#x} is not a multiple of "
                         f"the item size ({item} bytes), a view at a byte offset the kernel cannot read; pass an "
                         "aligned copy")
    keep = np.flatnonzero(end[2] > start[2])  # an empty C writes nothing
    order = keep[np.argsort(start[2, keep], kind="stable")]
    c_start, c_end = start[2, order], end[2, order]
    # Sorted by start, a C overlaps some other C exactly when one overlaps its successor.
    clash = np.flatnonzero(c_start[1:] < c_end[:-1])
    if clash.size:
        i, j = sorted((int(order[clash[0]]), int(order[clash[0] + 1])))
        raise GemmcError(f"Cs[{i}] and Cs[{j}] overlap: two problems would write the same memory; each C must be "
                         "memory of its own")
    if not order.size:
        return
    # For each A and B, the last C that starts before it ends: the Cs are disjoint and sorted, so that C reaches
    # furthest, and the input overlaps some C exactly when it overlaps that one.
    first, after = start[:2].ravel(), end[:2].ravel()
    last = np.searchsorted(c_start, after, side="left").astype(np.int64) - 1
    hit = np.flatnonzero((last >= 0) & (after > first) & (c_end[np.maximum(last, 0)] > first))
    if hit.size:
        slot, k = divmod(int(hit[0]), n)
        raise GemmcError(f"Cs[{int(order[last[hit[0]]])}] overlaps {GROUPS[slot]}[{k}]: a problem would write an "
                         "input while the batch reads it; C must not share memory with any A or B")


class _Views(NamedTuple):
    """One operand's arrays in a list call, each `lines` runs of `width` bytes, `pitch` bytes apart, from `start`;
    `end`: one past its last byte (`start` where it holds none)."""

    start: np.ndarray
    end: np.ndarray
    lines: np.ndarray
    width: np.ndarray
    pitch: np.ndarray


def view_fields(row_major: tuple[bool, ...], itemsizes: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """What `check_views` takes of a kernel's layouts and storage: the table's fields holding A's, B's and C's line
    counts and line lengths (A m x k, B k x n, C m x n: rows where row-major, columns else), and their item sizes."""
    rows, cols = (0, 2, 0), (2, 1, 1)
    lines = [r if by_rows else c for r, c, by_rows in zip(rows, cols, row_major, strict=True)]
    width = [c if by_rows else r for r, c, by_rows in zip(rows, cols, row_major, strict=True)]
    return np.array(lines), np.array(width), np.array(itemsizes, dtype=np.int64)[:, None]


def check_views(table: np.ndarray, fields: tuple[np.ndarray, ...]) -> None:
    """Raise GemmcError naming the arrays where a list call's C shares a byte with another C or with any A or B.
    `table`: the call's problem table (m, n, k, lda, ldb, ldc, a, b, c per problem: gemmc_dyn_problem), whose arrays
    may be views of wider matrices (lines `ld` elements apart); `fields`: `view_fields` of the kernel. Views of one
    matrix interleave without sharing a byte (column blocks of a row-major matrix), so where two arrays' spans
    overlap, their lines decide (`_meet`). The spans are compared as `check_memory` compares dense arrays; lines
    only where spans overlap, which arrays of their own never do."""
    t = table.T
    lines_at, width_at, item = fields
    lines, start = t[lines_at], t[6:]
    width = t[width_at] * item
    pitch = np.maximum(t[3:6] * item, width)
    end = np.where((lines > 0) & (width > 0), start + (lines - 1) * pitch + width, start)
    c = _Views(start[2], end[2], lines[2], width[2], pitch[2])
    keep = np.flatnonzero(c.end > c.start)  # an empty C writes nothing
    if not keep.size:
        return
    order = keep[np.argsort(c.start[keep])]
    starts, reach = c.start[order], np.maximum.accumulate(c.end[order])
    if (starts[1:] < reach[:-1]).any():  # some spans overlap: their lines decide
        i, j = np.nonzero(np.triu(starts[None, :] < c.end[order][:, None], 1))
        meet = _meet(c, order[i], c, order[j])
        if meet.any():
            first = int(np.flatnonzero(meet)[0])
            a, b = sorted((int(order[i[first]]), int(order[j[first]])))
            raise GemmcError(f"Cs[{a}] and Cs[{b}] overlap: two problems would write the same memory; each C must be "
                             "memory of its own")
    # each A and B against the last C to start before it ends: some C's span reaches into it where the running
    # furthest end of the Cs up to that one passes its start
    first_byte, after = start[:2].ravel(), end[:2].ravel()
    last = np.searchsorted(starts, after) - 1
    hits = np.flatnonzero((last >= 0) & (after > first_byte) & (reach[np.maximum(last, 0)] > first_byte))
    n = len(table)
    for hit in hits:
        slot, k = divmod(int(hit), n)
        x = _Views(start[slot], end[slot], lines[slot], width[slot], pitch[slot])
        near = order[: last[hit] + 1]
        near = near[c.end[near] > x.start[k]]
        meet = _meet(x, np.full(len(near), k), c, near)
        if meet.any():
            raise GemmcError(f"Cs[{int(near[np.flatnonzero(meet)[0]])}] overlaps {GROUPS[slot]}[{k}]: a problem "
                             "would write an input while the batch reads it; C must not share memory with any A or B")

def _meet(x: _Views, xi: np.ndarray, y: _Views, yi: np.ndarray) -> np.ndarray:
    """Per pair (x[xi], y[yi]) of arrays whose spans overlap: whether they share a byte. Lines r of x and t of y
    meet where -width_x < D + (r - t) pitch < width_y (D = start_x - start_y), so at one pitch the pair meets where
    an integer u = r - t in [-(lines_y - 1), lines_x - 1] lies in that open interval (a one-line array takes its
    partner's pitch: it has no other line); at two pitches each line of the array with fewer is tested."""
    lines_x, lines_y = x.lines[xi], y.lines[yi]
    w_x, w_y = x.width[xi], y.width[yi]
    pitch_y = np.where(lines_y == 1, x.pitch[xi], y.pitch[yi])
    pitch_x = np.where(lines_x == 1, pitch_y, x.pitch[xi])
    d = x.start[xi] - y.start[yi]
    same = pitch_x == pitch_y
    lo = np.maximum((-w_x - d) // pitch_x + 1, 1 - lines_y)
    hi = np.minimum(-((d - w_y) // pitch_x) - 1, lines_x - 1)
    out = same & (lo <= hi)
    for k in np.flatnonzero(~same):
        out[k] = _lines_meet(x, int(xi[k]), y, int(yi[k]))
    return out


def _lines_meet(x: _Views, i: int, y: _Views, j: int) -> bool:
    """Whether array i of x and array j of y, at different pitches, share a byte: each line of the one with fewer
    lines against the lines of the other it could meet (exact integer arithmetic)."""
    if x.lines[i] > y.lines[j]:
        x, i, y, j = y, j, x, i
    p, lines, width, pitch = int(x.start[i]), int(x.lines[i]), int(x.width[i]), int(x.pitch[i])
    q, other_lines, other_width, other_pitch = int(y.start[j]), int(y.lines[j]), int(y.width[j]), int(y.pitch[j])
    s = p + pitch * np.arange(lines, dtype=np.int64) - q  # each line's start, from the other's first byte
    # line t of the other, [t * other_pitch, + other_width), meets [s, s + width) for integers t in (lo, hi]
    lo = np.maximum((s - other_width) // other_pitch, -1)
    hi = np.minimum(-((-(s + width)) // other_pitch) - 1, other_lines - 1)
    return bool((hi > lo).any())

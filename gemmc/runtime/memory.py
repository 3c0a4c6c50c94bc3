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
from typing import TYPE_CHECKING

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

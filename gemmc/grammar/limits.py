"""gemmc's limits on the numbers of a schedule, each with the reason it holds (docs/LANGUAGE.md, "Limits").

A limit is checked where its number is first known, before anything is built from it: a single value in the
lowering, a launch's listed tiles before the tile table exists (model/worklist.py), the launch grid against the
target once the plan is made (passes/resources.py). Past a limit gemmc reports a located error: E205 (a number
past gemmc's limits), E304 (a grid past the target's).
"""

from __future__ import annotations

import math
import struct
import sys

from gemmc.ir.hardware import Hardware
from gemmc.ir.types import DType

INT32_MAX = 2**31 - 1
# Every whole number of a schedule becomes a C `int` (a template argument, a launch bound) or an int32 table entry.
MAX_INTEGER = INT32_MAX
# M, N, K: the work list stores a tile's first row and column as int32 (the kernels read int4 tiles) and the SIMT
# kernel counts k-tiles in an int; every other index is 64-bit.
MAX_SIZE = INT32_MAX
# Problems per launch, `count` copies included: the problem table holds one 48-byte row per problem, in memory and
# baked into the generated .cu (about 30 bytes of source a row).
MAX_BATCH = 1 << 20
# Output tiles of a launch whose tiles are listed (SIMT, tensor core: an irregular batch): the work list holds one
# 16-byte row per tile, baked into the .cu as about 25 bytes of source; 2^20 keeps a generated file near 30 MB, and
# a launch of one tile per block far below the grid's 2^31 - 1 blocks. A uniform launch (one size, one variant)
# lists no tile: its kernel computes them (ir/nodes.py: Raster), so no tile count limits it.
MAX_TILES = 1 << 20
# CUDA's grid: x up to 2^31 - 1 blocks (the kernels read blockIdx.x into an int), y and z up to 65535.
MAX_GRID_X = INT32_MAX
MAX_GRID_YZ = 65535
# HIP dispatches a grid as a 32-bit count of work-items per dimension: blocks x threads along x.
MAX_HIP_WORK_ITEMS = 2**32 - 1

_SCALAR_FORMAT = {"float": "<f", "double": "<d"}
_SCALAR_MAX = {"float": 3.4028234663852886e38, "double": sys.float_info.max}


def scalar_ctype(dtype: DType) -> str:
    """The C type alpha and beta take in a kernel of this storage type: double for f64 data, else float."""
    return "double" if dtype is DType.F64 else "float"


def scalar_problem(text: str, dtype: DType) -> str | None:
    """Why the number `text` (the grammar's NUMBER) cannot be alpha or beta of a kernel of this dtype, or None: it
    must be finite in the kernel's scalar type, and a nonzero number must not round to zero there."""
    ctype = scalar_ctype(dtype)
    value = float(text)  # a double: inf past its range, 0 below it
    if not math.isfinite(value):
        return f"is not a finite {ctype}"
    try:
        (rounded,) = struct.unpack(_SCALAR_FORMAT[ctype], struct.pack(_SCALAR_FORMAT[ctype], value))
    except OverflowError:
        return f"is past the largest {ctype} ({_SCALAR_MAX[ctype]:.9g})"
    if rounded == 0.0 and any(c in "123456789" for c in text.lower().partition("e")[0]):
        return f"rounds to 0 as a {ctype}"
    return None


def tiles_problem(total: float) -> str | None:
    """Why a launch of `total` listed tiles is refused, or None."""
    if total <= MAX_TILES:
        return None
    return f"the launch would list {total:.0f} output tiles; gemmc lists at most {MAX_TILES} per launch"


TILES_HINT = ("use larger tiles or fewer, smaller problems; a batch of equal problems (a `count` batch) or a "
              "tall-and-skinny product (algorithm tsm2r or tsm2l) runs without a tile list")


def max_grid_x(hw: Hardware, block: int) -> int:
    """The most blocks a grid of `block` threads a block may have along x on the target: a kernel whose blocks map
    to more work than that strides over it (model/raster.py)."""
    if hw.vendor == "hip":
        return min(MAX_GRID_X, MAX_HIP_WORK_ITEMS // max(1, block))
    return MAX_GRID_X


def grid_problem(grid: tuple[int, int, int], block: int, hw: Hardware) -> str | None:
    """Why this launch grid cannot run on the target, or None."""
    x, y, z = grid
    if x > MAX_GRID_X:
        return f"the launch needs {x} blocks along x; a grid has at most {MAX_GRID_X}"
    if max(y, z) > MAX_GRID_YZ:
        return f"the launch grid is {x} x {y} x {z} blocks; y and z are at most {MAX_GRID_YZ}"
    if hw.vendor == "hip" and x * block > MAX_HIP_WORK_ITEMS:
        return (f"the launch needs {x} blocks of {block} threads along x; HIP dispatches at most "
                f"{MAX_HIP_WORK_ITEMS} work-items per dimension")
    return None

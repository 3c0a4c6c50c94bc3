"""Arithmetic, no GPU: the share of issued FMAs that are useful when a batch runs 128 x 128 tiles whose last row
(column) of tiles in a problem takes the smallest of some fractions of the tile that covers what is left. The
fractions (128,) are plain tiles, (64, 128) gemmc's edge tiles (`passes/simt.py: with_edges`), the others
hypothetical finer edges. Over the irregular suite's MN, K <= 512 x1024 batch:

    python3 bench/experiments/edge_share.py

(printed on the dev host, 2026-11-23: 65.2%, 79.8%, 84.0%, 84.5%, 89.2%).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from irregular import random_cases  # noqa: E402

TILE = 128
RULES = ((128,), (64, 128), (32, 64, 128), (64, 96, 128), (32, 64, 96, 128))


def covered(x: np.ndarray, sizes: tuple[int, ...]) -> np.ndarray:
    """Rows (columns) computed for extents x: whole tiles, then the smallest size in `sizes` that covers the rest."""
    rest = x % TILE
    edge = np.array([min((s for s in sizes if s >= r), default=TILE) if r else 0 for r in rest.tolist()])
    return x - rest + edge


def main() -> None:
    shapes = dict(random_cases(quick=False))["random MN<=512 K<=512 x1024"]
    m, n, k = (np.array(c, dtype=np.int64) for c in zip(*shapes, strict=True))
    useful = float((m * n * k).sum())
    for sizes in RULES:
        issued = float((covered(m, sizes) * covered(n, sizes) * k).sum())
        print(f"edge tiles of {', '.join(map(str, sizes)):>15}: {useful / issued:.1%} of the issued FMAs useful")


if __name__ == "__main__":
    main()

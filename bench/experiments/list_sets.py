"""What the host-time experiments of the list form share (dynamic_host.py, dynamic_list_host.py,
list_overlap_cost.py; GPU machine only, imported from those scripts, run from the tree's root): their lists of random
f32 GEMMs and their timer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def random_lists(problems: int, sets: int = 8) -> list[tuple[list[Any], list[Any], list[Any]]]:
    """`sets` lists (As, Bs, Cs) of `problems` GEMMs each, M, N and K drawn in 8..640 (seeded by `problems`), torch
    tensors on the GPU: A and B random, C uninitialised."""
    import numpy as np
    import torch

    rng = np.random.default_rng(problems)
    out = []
    for _ in range(sets):
        shapes = rng.integers(8, 641, (problems, 3))
        out.append(([torch.randn(m, k, device="cuda") for m, n, k in shapes],
                    [torch.randn(k, n, device="cuda") for m, n, k in shapes],
                    [torch.empty(m, n, device="cuda") for m, n, k in shapes]))
    return out


def host_us(fn: Callable[[int], Any], n: int = 40, reps: int = 9) -> float:
    """Median over `reps` windows of `n` calls of the host microseconds per call (synchronised after each window,
    untimed)."""
    from gemmc.bench import timing

    return round(timing.host_seconds(fn, calls=n, windows=reps, sync=False) * 1e6, 2)

"""Experiment: shared-memory wavefronts of the SIMT k-loop (issue 3). GPU machine:

    python3 bench/experiments/simt_frag.py

Nsight Compute on inception-3 (32x32x32, 128 threads; bench/experiments/ncu_case.py) counted 4 wavefronts per
16-byte fragment read of B (one per quarter warp, although the quarters read the same 128 bytes) and 1 per
8-byte read of A, plus 4-way conflicts on the transposed stores of the k-contiguous A: about 800 shared-memory
wavefronts per k step of one block against 256 cycles of FMAs per scheduler, the step's ~1000 cycles.

Variants of the same plan, by editing the generated source (each checked against float64 first, outputs
NaN-poisoned):
- frag16/pad4: 16-byte fragment reads, rows padded by 4 elements (the kernel before this experiment);
- frag8/pad4: 8-byte fragment reads (1 wavefront each where the warp's distinct bytes fit in 128);
- frag8/pad2: and rows padded by 2, which halves the transposed stores' conflicts (row stride = 2 mod 32 banks).
Prediction: inception-3 5.2 -> ~4.0 us (a k step 0.54 -> ~0.33 us); 128x128x16 tiles +5-10% (their 16-byte
reads need 128 wavefronts per k of a block, the FMAs 128 cycles: the shared-memory pipe was saturated).
Measured (bench/results/2026-11-22_h100_simt-frag_call2.log, _call3.log): inception-3 unchanged (a lone wave of
4-warp blocks is latency-bound), inception-all -15%, 2-slice 32x32x32 -13%, 64x64x16 -4%, 128x128x16 -3% on the
1024 batch and +2.5% at 4096^3; 8-byte padding a further 0-5%. Both kept.
"""

from __future__ import annotations

import dataclasses
import os
import re

os.environ["GEMMC_TUNE"] = "0"

import gemmc
from gemmc.bench import timing
from gemmc.bench.irregular import inception_cases, random_cases, schedule
from gemmc.families.simt.plan import SimtPlan

CASES = [  # (case regex or explicit shapes, tile)
    ("inception-3$", "32x32x32 threads 128"),
    ("inception-all", "32x32x32 threads 128"),
    ([(4096, 4096, 4096)], "128x128x16 threads 256"),
    ("MN<=128 K<=128 x1024", "64x64x16 threads 256"),
    ("MN<=128 K<=512 x64", "32x32x32 kslices 2 threads 256"),
    ("MN<=512 K<=128 x1024", "auto(coordinated)"),
    ("MN<=512 K<=512 x1024", "128x128x16 threads 256"),
    ("MN<=512 K<=512 x1024", "128x64x16 threads 256"),
]


def compiled(shapes, tile: str, frag_bytes: int, pad_bytes: int):
    """The plan's kernel with fragment reads of `frag_bytes` and shared-memory rows padded by `pad_bytes`."""
    planned_pad = SimtPlan.pad
    SimtPlan.pad = property(lambda plan: pad_bytes // plan.elem_bytes)  # type: ignore[method-assign]
    try:
        kern = gemmc.compile_string(schedule(shapes, tile))["irregular"]
        source = kern.source  # rendered (and its shared memory planned) under this padding
    finally:
        SimtPlan.pad = planned_pad  # type: ignore[method-assign]
    if frag_bytes == 16:  # the reads before this experiment: 16 bytes where n allows, else 2 elements
        eight = "return (sizeof(T) < 8 && n % (8 / (int)sizeof(T)) == 0) ? 8 / (int)sizeof(T) : 1;"
        sixteen = ("return (n % (16 / (int)sizeof(T)) == 0) ? 16 / (int)sizeof(T) "
                   ": (n % 2 == 0 && sizeof(T) <= 8) ? 2 : 1;")
        assert eight in source
        source = source.replace(eight, sixteen)
    kern._rendered = dataclasses.replace(kern.rendered, source=source)  # before the first call builds its executable
    return kern


def main() -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"gpu: {timing.gpu_name()}", flush=True)
    named = dict(inception_cases() + random_cases(False))
    for case, tile in CASES:
        if isinstance(case, str):
            [name] = [n for n in named if re.search(case, n)]
            shapes = named[name]
        else:
            name, shapes = f"{case[0][0]}^3", case
        line = timing.compare(name, shapes, ((f"frag{frag}/pad{pad}", compiled(shapes, tile, frag, pad))
                                             for frag, pad in ((16, 16), (8, 16), (8, 8))))
        print(f"{name:28s} {tile:32s} {line}", flush=True)


if __name__ == "__main__":
    main()

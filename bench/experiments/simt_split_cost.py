"""Experiment: what a SIMT split k (`ksplit`, thread-block clusters) costs beyond the k-tiles it saves (issue 3).

Stop 13 measured the built split about 1 us slower than its proxy (s GEMMs of k / s), and on inception-3 the
split forms 0.9-2 us slower than the unsplit tile (tuning windows). Here one case at a time, the same tile
unsplit and split in 2, and the split kernel's source patched to take parts away:

- `rank 0 alone`: rank 0 sums every k-tile and ranks 1.. leave at once (correct): the cost of launching clusters.
- `no reduction`: the k-tiles split, ranks 1.. leave after their k-loop, rank 0 writes its own sum (wrong
  result, timed only): launch plus the shorter k-loops.
- `barriers, local reads`: both cluster barriers, rank 0 reads its own shared memory instead of the others'
  (wrong result, timed only): the barriers' cost without distributed shared memory.
- `rank 0 waits at the 2nd barrier too (stop 13)`: the template as it was until this experiment's first run
  (`..._simt-split-cost.log`), in which that patch was the other way round: rank 0 now skips the second barrier
  (ranks 1.. wait for it to leave: an exited thread counts as arrived at a cluster barrier, PTX ISA `exit`).

    python3 bench/experiments/simt_split_cost.py
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import timing  # noqa: E402
from irregular import inception_cases, random_cases, schedule  # noqa: E402

import gemmc  # noqa: E402

CASES = ["inception-3$", "inception-8$", "inception-1$", "MN<=128 K<=128 x8$", "MN<=128 K<=512 x8$"]
TILES = [("32x32x32 kslices 2", 128), ("32x32x32 kslices 4", 128)]
MEET = re.compile(r"  \{  // the cluster's blocks meet.*?      return;\n    \}\n  \}\n", re.S)
LEAVE = re.compile(r"    if \(rank > 0\) \{\n      gemmc_cluster_sync_divergent\(\);\n      return;\n    \}\n")
ARRIVE = "  gemmc_cluster_arrive_relaxed_divergent();\n"


def patched(kern, label: str, edits) -> tuple[str, object]:
    """`kern` with its rendered source edited: (old, new) pairs, each required to match."""
    src = kern.source
    for old, new in edits:
        if isinstance(old, re.Pattern):
            assert old.search(src), (label, old.pattern)
            src = old.sub(new, src)
        else:
            assert old in src, (label, old)
            src = src.replace(old, new)
    copy = gemmc.api.CompiledKernel(kern.ir, kern.target, label)
    copy._rendered = dataclasses.replace(kern.rendered, source=src)  # the source its executable will compile
    return label, copy


def variants(shapes, tile: str, threads: int):
    unsplit = gemmc.compile_string(schedule(shapes, f"{tile} threads {threads}"))["irregular"]
    split = gemmc.compile_string(schedule(shapes, f"{tile} ksplit 2 threads {threads}"))["irregular"]
    alone = "kt_per = (kt_all + 2 - 1) / 2;"
    checked = [("unsplit", unsplit), ("split 2", split),
               patched(split, "rank 0 alone", [(alone, "kt_per = kt_all;"),
                                               (MEET, "  if (rank > 0) return;\n"), (ARRIVE, "")]),
               patched(split, "rank 0 waits at the 2nd barrier too (stop 13)",
                       [(LEAVE, "    gemmc_cluster_sync_divergent();\n    if (rank > 0) return;\n"), (ARRIVE, "")])]
    timed = [patched(split, "no reduction", [(MEET, "  if (rank > 0) return;\n"), (ARRIVE, "")]),
             patched(split, "barriers, local reads", [("gemmc_dsmem_load(part + (i * TN + j) * NS, q)",
                                                      "part[(i * TN + j) * NS]")])]
    return checked, timed


def main() -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"gpu: {timing.gpu_name()}", flush=True)
    named = dict(inception_cases() + random_cases(False))
    chosen = [(n, named[n]) for c in CASES for n in named if re.search(c, n)]
    for name, shapes in chosen:
        for tile, threads in TILES:
            checked, timed = variants(shapes, tile, threads)
            print(f"{name:24s} {tile:20s} " + timing.compare(name, shapes, checked), flush=True)
            args = timing.inputs(shapes)
            us = [timing.device_seconds(timing.gemmc_graph(lambda k=k, args=args: k(*args))) * 1e6 for _, k in timed]
            cells = [f"{label} {t:6.2f} us" for (label, _), t in zip(timed, us, strict=True)]
            print(f"{name:24s} {tile:20s} (timed only) " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()

"""The dynamic kernel's level cap on MoE steps (docs/PERFORMANCE-dynamic.md, "Size classes"): each case
with the cap forced to every level of the ladder (a `tlp threshold` equal to that level's TLP for the case's sizes,
read from the NumPy scheduler), beside the default rule's cap, the wave-quantisation estimate of each level
(ceil(tiles / grid) x the tiles' mean weighted cost) and gemmc's static plan of the same sizes. GPU machine only,
from the tree's root:

    OUT=... python3 bench/experiments/dynamic_cap.py

Each kernel is timed as graph replays of 20 launches (gemmc.bench.dynamic.graph_seconds) on the first draw of the
routing, and checked against float64. Results: $OUT/cap.json.
"""

from __future__ import annotations

import json
import os

import numpy as np

os.environ.setdefault("GEMMC_TUNE", "0")  # the static roof runs the model's plan

MOE = "kernel moe_t{t} {{ layout B col  grouped M n {n} k {k} groups 128 {threshold} }}"
CASES = [(8, 4096, 512, 512, "uniform"), (8, 4096, 512, 512, "zipf"), (32, 8192, 1024, 512, "uniform"),
         (64, 16384, 1024, 2048, "uniform"), (8, 65536, 512, 512, "uniform")]


def levels(plan, m: np.ndarray, n: np.ndarray, k: np.ndarray, grid: int) -> list[dict]:
    """Per cap: the launch's TLP, tiles, and the wave-quantisation estimate (weight units)."""
    from gemmc.families.dynamic import scheduler

    choice, tlp = scheduler.choices(plan, m, n)
    tiles, cost = scheduler.costs(plan, m, n)
    g = np.arange(len(m))
    out = []
    for c in range(choice.shape[0]):
        count = int(tiles[choice[c], g].sum())
        work = float((cost[choice[c], g] * k).sum())
        out.append({"tlp": int(tlp[c].sum()), "tiles": count,
                    "estimate": float(np.ceil(count / grid) * work / max(count, 1))})
    return out


def main() -> None:
    import torch

    import gemmc
    from gemmc.bench import dynamic as d

    grid = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    for experts, tokens, nn, kk, kind in CASES:
        sizes = d.draws(experts, tokens, kind)[0].astype(np.int64)
        m, n, k = sizes, np.full_like(sizes, nn), np.full_like(sizes, kk)
        text = MOE.replace("{n}", str(nn)).replace("{k}", str(kk))
        A, W, C, ends, bounds, ref = d.moe_step(experts, tokens, nn, kk, sizes)
        name = f"moe E{experts} T{tokens} N{nn} K{kk} {kind}"
        default = next(iter(gemmc.compile_string(text.format(t="auto", threshold=""))))
        lv = levels(default.ir.plan, m, n, k, grid)
        row = {"case": name, "grid": grid, "levels": lv}
        for c, info in [("auto", None), *enumerate(lv)]:
            kern = default if info is None else next(iter(gemmc.compile_string(
                text.format(t=c, threshold=f"tlp threshold {info['tlp']}"))))
            C.fill_(float("nan"))
            kern(A, W, C, offsets=ends)
            row[f"cap_{c}_error"] = d.rel_error(C, ref)
            row[f"cap_{c}_us"] = d.graph_seconds(lambda i, kern=kern: kern(A, W, C, offsets=ends)) * 1e6  # noqa: B023
            print(name, c, f"{row[f'cap_{c}_us']:.1f} us", f"error {row[f'cap_{c}_error']:.2e}", flush=True)
        row["static_us"] = d.static_seconds(d.static_kernel(nn, kk), A, W, C, bounds) * 1e6
        print(name, "static", f"{row['static_us']:.1f} us", flush=True)
        rows.append(row)
    out = os.environ.get("OUT", ".")
    with open(os.path.join(out, "cap.json"), "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

"""Experiment: is the tuning step's first candidate timed slow? In stop 19's row-major f64 benchmark at m = k =
30720 the model's plan (cluster 1, timed first) took 3000-3100 us inside the tuning step for n = 2-32, and 2500-2540
us in a study process. Here, as bench/tallskinny.py does it (torch operands, every one row-major, a fresh kernel,
its first call tunes), then twice more with fresh kernels and an empty cache (the candidates already compiled): the
second right away, the third after 3 s of an idle GPU.

    python3 bench/experiments/tune_first.py --out $OUT
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import gemmc  # noqa: E402


def main() -> None:
    import torch

    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()
    rows = []
    for m, n in ((30720, 16), (30720, 2), (16384, 16)):
        text = f"kernel t {{ dtype f64 layout A row, B row, C row gemm {m} x {n} x {m} algorithm tsm2r }}"
        A = torch.randn(m, m, device="cuda", dtype=torch.float64)
        B = torch.randn(m, n, device="cuda", dtype=torch.float64)
        C = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float64)
        for attempt, pause in (("first", 0.0), ("again", 0.0), ("after 3 s idle", 3.0)):
            os.environ["GEMMC_CACHE_DIR"] = tempfile.mkdtemp()
            kern = gemmc.compile_string(text)["t"]
            time.sleep(pause)
            kern([A], [B], [C])
            row = {"m": m, "n": n, "attempt": attempt, "tuning_us": kern.tuning.microseconds}
            rows.append(row)
            print(json.dumps(row), flush=True)
        del A, B, C
        torch.cuda.empty_cache()
    path = Path(args.out) / "tune_first.json"
    path.write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "rows": rows}, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

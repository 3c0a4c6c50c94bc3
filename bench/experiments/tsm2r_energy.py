"""Experiment: energy per call of gemmc's TSM2R and cuBLAS on f64 n = 32 (issue 5). GPU machine:

    python3 bench/experiments/tsm2r_energy.py

f64 n = 32 at m = k = 16384 and 30720 is the last TSM2R goal missed (0.93x / 0.82x cuBLAS), with the GPU at its
700 W cap ("SW power cap" in nvidia-smi, SM clock 1.3-1.9 GHz). Under a power cap the kernel that spends fewer
joules per call runs at the higher clock, so the question is whether gemmc spends more energy than cuBLAS for the
same bytes. Each side runs graph replays back to back for ~4 s while nvidia-smi samples power and SM clock every
50 ms; energy per call = mean power x time per call (the idle power included on both sides). Column-major
operands, as bench/tallskinny.py; gemmc checked against float64 first.

Prediction: none written; a measurement for the next step (if gemmc spends more joules per call, cut its
shared-memory traffic per DMMA; if not, its loss is elsewhere).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import timing  # noqa: E402
from tallskinny import col_major, schedule  # noqa: E402

import gemmc  # noqa: E402

SECONDS = 4.0


def sampled(fn, calls: int) -> tuple[float, float, float, list[str]]:
    """(seconds per call, mean watts, mean SM MHz, throttle reasons seen) over ~SECONDS of back-to-back calls."""
    import torch

    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=power.draw,clocks.sm,clocks_throttle_reasons.active",
                            "--format=csv,noheader,nounits", "-lms", "50"], stdout=subprocess.PIPE, text=True)
    time.sleep(0.3)
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter()
    start.record()
    n = 0
    while time.perf_counter() - t0 < SECONDS:
        for _ in range(calls):
            fn()
        n += calls
        torch.cuda.synchronize()
    stop.record()
    stop.synchronize()
    smi.terminate()
    rows = [line.split(", ") for line in smi.communicate()[0].splitlines() if line.count(",") == 2]
    rows = rows[len(rows) // 5:]  # drop the ramp
    watts = statistics.mean(float(r[0]) for r in rows)
    mhz = statistics.mean(float(r[1]) for r in rows)
    return start.elapsed_time(stop) / 1e3 / n, watts, mhz, sorted({r[2] for r in rows})


def main() -> None:
    import torch

    os.environ.setdefault("GEMMC_TUNE", "1")
    print(f"gpu: {timing.gpu_name()}", flush=True)
    for m in (8192, 16384, 30720):
        n = 32
        A = col_major(torch.randn(m, m, device="cuda", dtype=torch.float64))
        B = col_major(torch.randn(m, n, device="cuda", dtype=torch.float64))
        C = col_major(torch.full((m, n), float("nan"), device="cuda", dtype=torch.float64))
        out = col_major(torch.empty(m, n, device="cuda", dtype=torch.float64))
        kern = gemmc.compile_string(schedule("tsm2r", m, n, m, "f64"))["t"]
        kern([A], [B], [C])
        ref = A @ B
        err = float((C - ref).norm() / ref.norm())
        assert err < 1e-12, err
        nbytes = (A.numel() + B.numel() + C.numel()) * 8
        sides = {"cublas": timing.torch_graph(lambda A=A, B=B, out=out: torch.mm(A, B, out=out)),
                 "gemmc": timing.gemmc_graph(lambda A=A, B=B, C=C, kern=kern: kern([A], [B], [C]))}
        for name, fn in [*sides.items(), *sides.items()]:  # twice each, alternating: the cap drifts
            t, watts, mhz, reasons = sampled(fn, 20)
            print(f"f64 m=k={m} n={n} {name:6s}: {t * 1e6:8.1f} us/call  {nbytes / t / 1e12:5.2f} TB/s  "
                  f"{watts:6.1f} W  {mhz:6.0f} MHz  {watts * t * 1e3:7.3f} mJ/call  "
                  f"{watts * t / nbytes * 1e12:6.1f} pJ/B  throttle {','.join(reasons)}  err {err:.1e}", flush=True)


if __name__ == "__main__":
    main()

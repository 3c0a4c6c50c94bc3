"""What a re-planned call adds to a compiled one, part by part (no GPU; the stand-ins of bench/host_overhead.py):

    python3 bench/experiments/host_replan.py > bench/results/<date>_devhost_host-replan.txt

CPU time per call, the minimum over 15 windows (the development host is shared; the minimum is the least
disturbed window). Parts: the failed check against the schedule's plan (a ShapeMismatch) and the look-up of the
re-planned call by the A and B shapes (`launch.replanned`, cache warm).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import host_overhead  # noqa: E402
import irregular  # noqa: E402

host_overhead.install_fake_cupy()

import gemmc  # noqa: E402
from gemmc.runtime import args, launch  # noqa: E402


def cpu_us(fn, calls: int) -> float:
    samples = []
    for _ in range(15):
        start = time.process_time()
        for _ in range(calls):
            fn()
        samples.append((time.process_time() - start) / calls * 1e6)
    return min(samples)


def parts(compiled, other, As, Bs, Cs, calls: int) -> tuple[float, float, float, float]:
    compiled(As, Bs, Cs)
    other(As, Bs, Cs)
    columns = args.read_batch(As, Bs, Cs)

    def failed_check() -> None:
        try:
            args.batch_pointers(other.ir, As, Bs, Cs, other.executable.expected, 0, columns)
        except args.ShapeMismatch:
            pass

    return (cpu_us(lambda: compiled(As, Bs, Cs), calls), cpu_us(lambda: other(As, Bs, Cs), calls),
            cpu_us(failed_check, calls), cpu_us(lambda: launch.replanned(other.executable, As, Bs, Cs, columns), calls))


def main() -> None:
    cases = dict(irregular.inception_cases() + irregular.random_cases(False))
    other = gemmc.compile_file(ROOT / "examples" / "inception3.gs")["inception3"]  # planned for other sizes
    print(f"python {sys.version.split()[0]}")
    for name in ("inception-all (34)", "random MN<=512 K<=512 x1024"):
        shapes = cases[name]
        compiled = gemmc.compile_string(irregular.schedule(shapes, "auto"))["irregular"]
        for kind in ("cupy", "torch"):
            batch = host_overhead.fake_batch(kind, compiled, shapes)
            us = parts(compiled, other, *batch, max(10, 10000 // len(shapes)))
            print(f"{name:30s} {kind:6s} compiled {us[0]:8.1f} us, re-planned {us[1]:8.1f} us; parts: failed check "
                  f"{us[2]:6.1f} us, look-up {us[3]:6.1f} us", flush=True)


if __name__ == "__main__":
    main()

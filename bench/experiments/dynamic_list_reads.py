"""What a list call's checks spend on the host, read by read (docs/PERFORMANCE-dynamic.md, "Host time of the list
form"), GPU machine only, from the tree's root: `python3 bench/experiments/dynamic_list_reads.py`.

For 64 and 512 problems of CUDA tensors (M, N, K in 8..640) in a process holding only them: the checks and table
(`table`), the whole call (`call`, windows of 8), the bulk reads (`bulk`), and each pass the bulk reads make over the
3n tensors on its own (the shape, dtype, device, requires_grad, contiguity and data_ptr passes, the shapes' conversion
to an array), medians of 9 windows of 40 calls; then a cProfile of 100 tables. Output:
bench/results/dynamic/2026-11-27_h100_list-reads.log (measured on a list form that also made a pass over the
arrays' types and left the collector running).
"""

from __future__ import annotations

import cProfile
import io
import pstats
import time
from itertools import chain
from operator import attrgetter

import numpy as np
import torch

import gemmc
from gemmc.runtime import dynamic_list as dl
from gemmc.runtime.args import _torch_name


def per(fn, n: int = 40, reps: int = 9) -> float:
    samples = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - t) / n)
    return round(sorted(samples)[reps // 2] * 1e6, 1)


def main() -> None:
    k = next(iter(gemmc.compile_string("kernel varlen { alpha runtime beta runtime grouped list problems 512 }")))
    for problems in (64, 512):
        one(k, problems)


def one(k: gemmc.CompiledKernel, problems: int) -> None:
    ex = k.executable
    shapes = np.random.default_rng(problems).integers(8, 641, (problems, 3))
    As = [torch.empty(m, kk, device="cuda") for m, n, kk in shapes]
    Bs = [torch.empty(kk, n, device="cuda") for m, n, kk in shapes]
    Cs = [torch.empty(m, n, device="cuda") for m, n, kk in shapes]
    every, cls = [*As, *Bs, *Cs], torch.Tensor
    shape, grad = attrgetter("shape"), attrgetter("requires_grad")
    sizes = list(map(shape, every))
    out = np.empty((512, dl.FIELDS), dtype=np.int64)
    reads = {
        "table": lambda: dl.problem_table(ex, As, Bs, Cs, 0, out=out),
        "call": lambda: k(As, Bs, Cs, alpha=1.0, beta=0.0),
        "bulk": lambda: dl._bulk(every, problems, (dl.Layout.ROW,) * 3, ("float32", "float32"), 0),
        "concat": lambda: [*As, *Bs, *Cs],
        "types": lambda: len(set(map(type, every))),
        "shape": lambda: list(map(shape, every)),
        "lens": lambda: set(map(len, sizes)),
        "dtypes": lambda: dl._dtypes(every, problems, _torch_name),
        "getdev": lambda: set(map(cls.get_device, every)),
        "grad": lambda: any(map(grad, every[2 * problems:])),
        "contig": lambda: all(map(cls.is_contiguous, every)),
        "ptr": lambda: list(map(cls.data_ptr, every)),
        "fromiter": lambda: np.fromiter(chain.from_iterable(sizes), dtype=np.int64, count=6 * problems),
    }
    print(problems, {name: per(fn, n=8 if name == "call" else 40) for name, fn in reads.items()}, flush=True)
    torch.cuda.synchronize()
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(100):
        dl.problem_table(ex, As, Bs, Cs, 0, out=out)
    profile.disable()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(12)
    print(text.getvalue()[:3000])


if __name__ == "__main__":
    main()

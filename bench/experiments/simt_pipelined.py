"""Experiment (issue 26): a register-lean SIMT main loop for large f32 tiles, two 256-thread blocks per SM. GPU machine.

The loop is not in gemmc: it lives in simt_pipelined.patch beside this file (the template, SimtPlan.pipelined, the
prelude's zero-filling cp.async), which applies to the commit that added this file. To run:

    python3 bench/experiments/simt_pipelined.py --base     # unpatched tree: today's sources (simt_pipelined_base/)
    git apply bench/experiments/simt_pipelined.patch
    python3 bench/experiments/simt_pipelined.py --ptxas 7  # here, with nvcc: registers and spills of each candidate
    python3 bench/experiments/simt_pipelined.py OUT_DIR        # OUT_DIR/simt_pipelined.json
    python3 bench/experiments/simt_pipelined.py --wide OUT_DIR # 8x16 micro-tiles: OUT_DIR/simt_pipelined_wide.json
    python3 bench/experiments/simt_pipelined.py --vec OUT_DIR  # and 16-byte fragments: OUT_DIR/simt_pipelined_vec.json

The pipelined loop: the k-tiles come by cp.async (4-byte copies that transpose a k-contiguous operand into k-major
shared memory, 16-byte vectors otherwise, zero-filled past the edges), STAGES - 1 ahead of the one multiplied, so no
register stages a global load; the fragments of k step kk + 1 are read while kk is multiplied (two register buffers),
across the k-tile's one barrier too. Rows are padded by 16 bytes (cp.async's 16-byte destinations). The patch also
drops the `if (tid < threads)` around a variant that has the whole block: inside that branch ptxas spilled 64-204 bytes
at 128 registers (it keeps fewer values in uniform registers there); without it 128x128x8 fits in 124-128 registers
with no spill, staged or pipelined, in every layout (`--ptxas`).

Candidates (tile, loop, stages, blocks per SM), each checked against float64 with NaN-poisoned C on its cases and on
odd sizes (1000x999x1003, 333x129x7, 130x258x1; gemmc.runtime.check), and timed in CUDA graphs beside cuBLAS (torch.mm,
TF32 off) on the same inputs: "main" is the model's plan (tile auto) rendered by the unpatched tree; s* the staged
loop, p* the pipelined one.

Measured on the H100 (bench/results/uniform/2026-11-27_h100_simt-pipelined.json, ..._simt-pipelined-wide.json,
..._simt-pipelined-vec.json), TFLOP/s at 4096^3 (cuBLAS 51.7): main 44.6; 128x128x8 two blocks staged 38.8, pipelined
39.4 (3 stages 39.0); 128x128x16 two blocks pipelined 42.7, one block 39.8; 8x16 micro-tiles 128x256x16 44.6,
256x128x16 42.6, 128 threads 128x128x16 42.3; with 16-byte fragments 42.2 (A and B) and 43.9 (B). 4096x1024x2048 and
4096x1024x1024 rank the same; only 8192x2048x128 (two k-contiguous operands, 16 k-tiles) gains, 34.3 -> 36.6 with
128x128x16 on two blocks. Two blocks per SM are not what the kernel lacks: Nsight Compute at 4096^3
(..._simt-pipelined-ncu.csv, clocks locked at 1.6 GHz) has main issuing in 80.5% of the cycles with 2 warps per
scheduler, the two-block pipelined 128x128x16 in 79.8% with 3.8 (more warps eligible, no more issued), and cuBLAS's
sm80_xmma_gemm_f32f32_..._tilesize256x128x8_stage3 kernel in 88.1% with 2; the SIMT kernels execute 2.60 G (main) to
2.79 G (128x128x8 pipelined) warp instructions for its 2.43 G (2.15 G of them FFMAs): 7-15% more instructions per FMA
and 8-12% fewer cycles issuing.
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import tempfile

os.environ["GEMMC_TUNE"] = "0"

from simt_cases import CASES, measure

import gemmc

CANDIDATES = {  # name: (tile, pipelined, stages, blocks per SM bound (None: the planner's))
    "main": ("auto", False, 2, None),  # the source gemmc rendered before this experiment (simt_pipelined_base/)
    "s16b1": ("128x128x16 threads 256", False, 2, None),
    "s8b2": ("128x128x8 threads 256", False, 2, 2),
    "p8b2": ("128x128x8 threads 256", True, 2, 2),
    "p8b2s3": ("128x128x8 threads 256", True, 3, 2),
    "p16b2": ("128x128x16 threads 256", True, 2, 2),
    "p16b2s3": ("128x128x16 threads 256", True, 3, 2),
    "p16b1s3": ("128x128x16 threads 256", True, 3, 1),
}
# The second run (`--wide`): 8x16 micro-tiles, 128 FMAs per 24 fragment values read from shared memory instead of 64
# per 16; with 256 threads a 256x128 or 128x256 tile (one block per SM), with 128 threads a 128x128 tile (two).
WIDE = {
    "main": ("auto", False, 2, None),
    "s16b1": ("128x128x16 threads 256", False, 2, None),
    "p256x128x16": ("256x128x16 threads 256", True, 2, None),
    "p128x256x16": ("128x256x16 threads 256", True, 2, None),
    "p256x128x8": ("256x128x8 threads 256", True, 2, None),
    "s256x128x8": ("256x128x8 threads 256", False, 2, None),
    "p128x128x16t128": ("128x128x16 threads 128", True, 2, None),
    "s128x128x16t128": ("128x128x16 threads 128", False, 2, None),
    "p128x128x8t128": ("128x128x8 threads 128", True, 2, None),
}
# The third run (`--vec`): 8x16 micro-tiles read as 16-byte fragments ("v16": A and B; "vB": B only, A 8-byte), 6 or 8
# shared loads per 128 FMAs instead of 12: cuBLAS's SGEMM (sm80_xmma_gemm_f32f32_..._tilesize256x128x8_stage3) executes
# 2.43 G instructions at 4096^3 where 128x128x16 executes 2.60 G (simt_pipelined_ncu.py).
VEC = {
    "main": ("auto", False, 2, None),
    "p128x256x16": ("128x256x16 threads 256", True, 2, None),
    "p128x256x16v16": ("128x256x16 threads 256", True, 2, None),
    "p128x256x16vB": ("128x256x16 threads 256", True, 2, None),
    "p256x128x16v16": ("256x128x16 threads 256", True, 2, None),
    "p256x128x8s3v16": ("256x128x8 threads 256", True, 3, None),
    "p256x128x8s3vB": ("256x128x8 threads 256", True, 3, None),
}
if "--vec" in sys.argv:
    sys.argv.remove("--vec")
    CANDIDATES = VEC  # noqa: F811 - the third run's
    CASES = [c for c in CASES if c[1] >= 768]
    RUN = "simt_pipelined_vec"
elif "--wide" in sys.argv:
    sys.argv.remove("--wide")
    CANDIDATES = WIDE  # noqa: F811 - the second run's
    CASES = [c for c in CASES if c[1] >= 768]
    RUN = "simt_pipelined_wide"
else:
    RUN = "simt_pipelined"


def schedule(m: int, n: int, k: int, la: str, lb: str, tile: str) -> str:
    return (f"target cuda sm_90\nkernel g {{\n dtype f32\n layout A {la}, B {lb}, C row\n gemm {m} x {n} x {k}\n"
            f" tile {tile}\n}}\n")


def candidate(case, name: str):
    tile, pipelined, stages, blocks = {**CANDIDATES, **WIDE, **VEC}[name]
    kern = gemmc.compile_string(schedule(*case, tile))["g"]
    if name == "main":
        kern._rendered = dataclasses.replace(kern.rendered, source=open(base_source(case)).read())
        return kern
    plan = kern.ir.plan
    regs = {1: 255, 2: 128}
    new = dataclasses.replace(plan, pipelined=pipelined, stages=stages, min_blocks=blocks or plan.min_blocks,
                              reg_cap=regs[blocks] if blocks else plan.reg_cap)
    kern = kern.with_plan(new, name)
    if name.endswith(("v16", "vB")):  # 16-byte fragment reads of B (and of A for v16): rows are 16-byte aligned
        source = kern.source
        width = "constexpr int VM = gemmc_frag_width<T>(TM), VN = gemmc_frag_width<T>(TN);"
        assert width in source
        sixteen = "(TN % (16 / (int)sizeof(T)) == 0 ? 16 / (int)sizeof(T) : gemmc_frag_width<T>(TN))"
        wide_a = sixteen.replace("TN", "TM") if name.endswith("v16") else "gemmc_frag_width<T>(TM)"
        source = source.replace(width, f"constexpr int VM = {wide_a}, VN = {sixteen};")
        kern._rendered = dataclasses.replace(kern.rendered, source=source)
    return kern


def base_source(case) -> str:
    m, n, k, la, lb = case
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "simt_pipelined_base", f"{m}x{n}x{k}_{la}_{lb}.cu")


def ptxas(source: str) -> str:
    """ptxas's report for the main kernel (registers, spill stores/loads)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "k.cu")
        open(path, "w").write(source)
        cmd = ["nvcc", "-arch=sm_90", "-cubin", "-std=c++17", "-Xptxas", "-v", "-o", path + ".cubin", path]
        r = subprocess.run(cmd, capture_output=True, text=True)
    lines = r.stderr.splitlines()
    out = []
    for i, line in enumerate(lines):
        if "Compiling entry function" in line and "_fill" not in line:
            block = " ".join(lines[i + 1:i + 4])
            regs = re.search(r"Used (\d+) registers", block)
            spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", block)
            out.append(f"{regs.group(1) if regs else '?'} regs, spill {spill.group(1)}/{spill.group(2)} B"
                       if spill else block)
    return "; ".join(out) or r.stderr[-400:]


# Checked only: edges, partial k-tiles, k shorter than a tile (the later runs: the first two).
ODD = [(1000, 999, 1003, "row", "row"), (1000, 999, 1003, "col", "col"), (333, 129, 7, "col", "row"),
       (130, 258, 1, "row", "col")][:4 if RUN == "simt_pipelined" else 2]


def build(job) -> None:
    """In a worker process: NVRTC-compile a candidate into the disk cache."""
    case, name = job
    candidate(case, name).executable.function  # noqa: B018 - compiles


def main() -> None:
    if sys.argv[1:2] == ["--ptxas"]:
        for case in CASES[:int(sys.argv[2]) if len(sys.argv) > 2 else 1]:
            for name in CANDIDATES:
                k = candidate(case, name)
                print(f"{case} {name:8s} {ptxas(k.source)}", flush=True)
        return
    if sys.argv[1:2] == ["--base"]:  # with the gemmc before this experiment on the path: its sources of tile auto
        os.makedirs(os.path.dirname(base_source(CASES[0])), exist_ok=True)
        for case in CASES:
            open(base_source(case), "w").write(gemmc.compile_string(schedule(*case, "auto"))["g"].source)
        return
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    import torch

    from gemmc.bench import timing

    torch.backends.cuda.matmul.allow_tf32 = False
    out = sys.argv[1]
    odd = [(case, name) for case in ODD for name in CANDIDATES if CANDIDATES[name][1]]
    jobs = [(case, name) for case in CASES for name in CANDIDATES] + odd
    with ProcessPoolExecutor(16, mp_context=get_context("spawn")) as pool:
        list(pool.map(build, jobs))
    res = {"gpu": timing.gpu_name(), "candidates": {n: list(c) for n, c in CANDIDATES.items()}, "cases": [],
           "odd": []}
    measure(candidate, list(CANDIDATES), odd, CASES, res, os.path.join(out, RUN + ".json"))


if __name__ == "__main__":
    main()

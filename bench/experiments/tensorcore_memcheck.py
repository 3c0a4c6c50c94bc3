"""Run every tensor-core precision once on odd sizes (both layouts, beta != 0): for compute-sanitizer."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import gemmc  # noqa: E402
from gemmc.runtime.check import check_kernel  # noqa: E402

MODES = ["split f16 x3", "split f16 x3 method le", "split f16 x4 method markidis", "split bf16 x3", "split bf16 x6",
         "split tf32 x3", "f16", "bf16", "tf32"]
for mode in MODES:
    for lay in ("layout A row, B row, C row", "layout A col, B col, C col"):
        prog = gemmc.compile_string(f"kernel k {{ dtype f32 precision {mode} {lay} beta 0.5 "
                                    "batch { a 1 x 1 x 1 b 97 x 13 x 251 c 130 x 131 x 129 } }")
        res = check_kernel(next(iter(prog)), seed=1, alpha=1.0, beta=0.5, time_it=False)
        print(mode, lay, res["errors"]["rel_fro"], flush=True)

"""Tensor-core family without a GPU: every precision renders and compiles with nvcc for sm_80 and sm_90 (both
layouts), inspect shows the tiles the model weighed, and the checks reject what cannot run."""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from gemmc.api import front_end
from gemmc.codegen import render_kernel
from gemmc.errors import GemmcError
from gemmc.passes import run_pipeline

MODES = ["f16", "bf16", "tf32", "split f16 x3 method le", "split f16 x3 method ootomo",
         "split f16 x4 method markidis", "split bf16 x3", "split bf16 x6", "split tf32 x3"]


def planned(text: str):
    prog = run_pipeline(front_end(text))
    return prog.kernels[0], prog.target


def schedule(mode: str, arch: str = "sm_90", layout: str = "layout A row, B row, C row",
             gemm: str = "1000 x 999 x 517") -> str:
    return f"target cuda {arch}\nkernel k {{\n dtype f32\n precision {mode}\n {layout}\n gemm {gemm}\n}}\n"


def test_inspect_shows_candidates_and_the_emulation_verdict():
    k, _ = planned(schedule("split f16 x3", gemm="8192 x 8192 x 8192"))
    lines = "\n".join(k.plan.lines())
    assert "candidate 128x128" in lines and "candidate 64x64" in lines and "ratio 96.0" in lines
    assert k.plan.variant.bm == 128 and k.plan.variant.bn == 128  # 4096 blocks fill 132 SMs: highest ratio
    assert any(n.startswith("emulation pays") for n in k.notes)
    small, _ = planned(schedule("split f16 x3", gemm="16 x 16 x 8"))
    assert any("does not pay" in n for n in small.notes)


def test_precision_selects_the_family_and_ootomo_is_the_default():
    k, _ = planned(schedule("split f16 x3"))
    assert k.family.value == "tensorcore" and k.plan.split.method == "ootomo" and k.plan.split.scale_bits == 11


@pytest.mark.parametrize(("text", "code"), [
    ("kernel k { dtype f32 algorithm tensorcore gemm 8 x 8 x 8 }", "E202"),
    ("target hip gfx90a\nkernel k { dtype f32 precision split f16 x3 gemm 8 x 8 x 8 }", "E900"),
    ("kernel k { dtype f32 precision f16 algorithm simt gemm 8 x 8 x 8 }", "E202"),
    ("kernel k { dtype f32 precision split f16 x3 pipeline stages 3 gemm 8 x 8 x 8 }", "E900"),
])
def test_rejections(text, code):
    with pytest.raises(GemmcError) as err:
        run_pipeline(front_end(text))
    assert code in str(err.value)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_every_split_compiles_for_sm80_and_sm90(tmp_path):
    jobs = []
    for arch in ("sm_80", "sm_90"):
        for mode in MODES:
            for lay in ("layout A row, B row, C row", "layout A col, B col, C col"):
                k, hw = planned(schedule(mode, arch, lay))
                path = tmp_path / f"{arch}_{len(jobs)}.cu"
                path.write_text(render_kernel(k, hw).source)
                jobs.append((arch, mode, lay, path))

    def compile_one(job):
        arch, mode, lay, path = job
        res = subprocess.run(["nvcc", f"-arch={arch}", "-std=c++17", "-c", str(path), "-o", str(path) + ".o"],
                             capture_output=True, text=True)
        return job, res

    with ThreadPoolExecutor(8) as pool:
        for (arch, mode, lay, _), res in pool.map(compile_one, jobs):
            assert res.returncode == 0, f"{arch} {mode} {lay}:\n{res.stderr[-2000:]}"

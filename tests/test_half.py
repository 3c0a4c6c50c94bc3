"""bf16/f16 storage outside the hopper family, without a GPU: which family `algorithm auto` picks and why (`inspect`'s
note), the located errors of combinations that make no sense or are still missing, the plans' shared memory in the
computed type, the element types of the generated CUDA and HIP code and headers, and nvcc/hipcc compiles of SIMT,
TSM2R and TSM2L half kernels on sm_80, sm_90 and gfx90a."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

import gemmc
from gemmc.families.tsm2l import planner as tsm2l
from gemmc.families.tsm2r import planner as tsm2r
from gemmc.ir.hardware import TARGETS
from gemmc.ir.nodes import Problem
from gemmc.ir.types import DType, Layout

NVCC = shutil.which("nvcc")
HIPCC = shutil.which("hipcc")
H100 = TARGETS["sm_90"]


def kernel(text: str, target: str | None = None):
    return gemmc.compile_string(text, target=target)["k"]


def diagnostics(text: str, target: str | None = None) -> list[tuple[str, int, int]]:
    with pytest.raises(gemmc.GemmcError) as info:
        gemmc.compile_string(text, target=target)
    return [(d.code, d.span.line, d.span.column) for d in info.value.diagnostics]


@pytest.mark.parametrize(("body", "target", "family"), [
    ("gemm 4096 x 4096 x 4096", "sm_90", "hopper"),  # one GEMM where TMA can read it
    ("gemm 4096 x 4096 x 4096", "sm_80", "simt"),  # no TMA, no wgmma
    ("gemm 4096 x 4096 x 4096", "sm_89", "simt"),
    ("gemm 4096 x 4096 x 4096", "hip", "simt"),
    ("gemm 512 x 512 x 512 count 8", "sm_90", "simt"),  # batches: one launch of the SIMT family
    ("batch { a 100 x 33 x 77 b 64 x 64 x 64 }", "sm_90", "simt"),
    ("precision f32 gemm 4096 x 4096 x 4096", "sm_90", "simt"),  # f32 products: CUDA cores
    ("threads 256 gemm 4096 x 4096 x 4096", "sm_90", "simt"),  # a block size the hopper loop does not have
    ("gemm 16384 x 16 x 16384", "sm_90", "hopper"),  # the TMA loop streams B faster than TSM2R (streaming.py)
    ("gemm 16384 x 16 x 16384", "sm_80", "tsm2r"),  # tall-and-skinny B
    ("layout A col gemm 16384 x 16 x 16384", "hip", "tsm2r"),
    ("gemm 10000000 x 16 x 16", "sm_90", "hopper"),
    ("gemm 10000000 x 16 x 16", "sm_89", "tsm2l"),  # tall-and-skinny A
    ("gemm 10000000 x 16 x 16", "hip", "tsm2l"),
])
@pytest.mark.parametrize("dtype", ["bf16", "A f16, B f16, C f32"])
def test_auto_picks_and_says_why(dtype, body, target, family):
    k = kernel(f"kernel k {{ dtype {dtype} {body} }}", target)
    assert k.ir.family == family
    note = next(n for n in k.ir.notes if n.startswith("family "))
    assert note.startswith(f"family {family}: ")
    if family == "simt":
        assert "computed in f32 on CUDA cores" in note
    if family == "hopper":
        assert "TMA + wgmma" in note


@pytest.mark.parametrize(("text", "expected"), [
    ("kernel k {\n dtype A f16, B f16, C bf16\n gemm 8 x 8 x 8 }", [("E202", 2, 2)]),  # C half of the other kind
    ("kernel k {\n dtype A bf16, B bf16, C f64\n gemm 8 x 8 x 8 count 2 }", [("E202", 2, 2)]),
    ("kernel k {\n dtype f16\n precision bf16\n gemm 8 x 8 x 8 count 2 }", [("E202", 3, 2)]),
    ("kernel k {\n dtype bf16\n precision tf32\n batch { a 8 x 8 x 8 }\n}", [("E202", 3, 2)]),
    ("kernel k {\n dtype bf16\n precision split f16 x3\n gemm 8 x 8 x 8 count 2 }", [("E202", 3, 2)]),
    ("kernel k {\n dtype bf16\n precision f64\n gemm 8 x 8 x 8 count 2 }", [("E202", 3, 2)]),
    ("kernel k {\n dtype bf16\n algorithm tensorcore\n gemm 8 x 8 x 8 count 2 }", [("E202", 3, 2)]),
    ("kernel k {\n dtype bf16\n algorithm tsm2r\n gemm 8 x 8 x 8 count 2 }", [("E900", 3, 2)]),  # TSM2: one GEMM
    ("kernel k {\n dtype bf16\n algorithm tsm2l\n batch { a 8 x 8 x 8 b 8 x 8 x 8 }\n}", [("E900", 3, 2)]),
])
def test_located_errors(text, expected):
    assert diagnostics(text) == expected


def test_hopper_on_another_target_is_located():
    assert diagnostics("kernel k {\n dtype f16\n algorithm hopper\n gemm 8 x 8 x 8 }", "sm_80") == [("E202", 3, 2)]


def test_half_batches_sized_at_run_time():
    """grouped M of half storage runs in the hopper_grouped family on sm_90 (tensor cores), as grouped K of X^T
    (`layout A col`); the other grouped forms and layouts, and every form on other targets, in the dynamic family, in
    f32 on CUDA cores from the widened halves."""
    text = "kernel k {\n dtype bf16\n grouped M  n 256  k 128  groups 8\n}"
    assert gemmc.compile_string(text)["k"].ir.family == "hopper_grouped"
    elsewhere = gemmc.compile_string(text, target="sm_80")["k"]
    assert elsewhere.ir.family == "dynamic" and "computing in f32 on CUDA cores" in "\n".join(elsewhere.ir.notes)
    wgrad = gemmc.compile_string("kernel k {\n dtype bf16\n grouped K  m 256  n 128  groups 8\n}")["k"]
    assert wgrad.ir.family == "dynamic" and wgrad.ir.plan.tiles.elem_bytes == 4  # shared memory holds f32
    assert "gemmc_bf16* __restrict__ A" in wgrad.source and "float* smem" in wgrad.source
    xt = gemmc.compile_string("kernel k {\n dtype bf16\n layout A col\n grouped K  m 256  n 128  groups 8\n}")["k"]
    assert xt.ir.family == "hopper_grouped" and xt.ir.plan.grouped_k
    tf32 = "kernel k {\n dtype bf16\n precision tf32\n grouped K  m 256  n 128  groups 8\n}"
    assert ("E202", 3, 2) in diagnostics(tf32)


def test_simt_plan_counts_shared_memory_in_f32():
    f32 = kernel("kernel k { dtype f32 tile 64x64x16 threads 256 gemm 300 x 300 x 300 count 2 }").ir.plan
    bf16 = kernel("kernel k { dtype bf16 tile 64x64x16 threads 256 gemm 300 x 300 x 300 count 2 }").ir.plan
    assert bf16.elem_bytes == 4 and bf16.smem_bytes == f32.smem_bytes


def test_tsm2r_half_rows_are_16_byte_vectors_and_sums_f32():
    p = Problem("p", 16384, 8, 16384)
    half = tsm2r.tsm2r_params(p, DType.BF16, Layout.COL, H100)
    assert half.rows_per_warp == 8  # a lane's column vector: 8 halves, 16 bytes
    assert half.elem_bytes == 2
    # the ring holds halves, the sums f32 (t2 x rows x warp x 4 bytes): whichever is larger, per k slice
    ring = half.stages * (half.t3 * 32 * 8 * 2 + 4 * 8 * 2 // 16 * 16)
    sums = half.t2 * 8 * 32 * 4
    assert half.smem == half.kslices * max(ring, sums)


def test_tsm2l_half_staging_rows():
    row = Layout.ROW
    # k = 16 halves: two 16-byte vectors of A; staged as f32, 4 vectors, padded to an odd 5
    assert tsm2l.tsm2l_stage_elems(16, 16, DType.BF16, row, row) == 20
    assert tsm2l.tsm2l_stage_elems(12, 8, DType.F16, row, row) == 12  # only C (8 halves) is whole vectors: 3 of f32
    assert tsm2l.tsm2l_stage_elems(12, 12, DType.F16, row, row, DType.F32) == 12  # an f32 C of 12: 3 vectors
    assert tsm2l.tsm2l_stage_elems(12, 12, DType.F16, row, row) == 0  # neither is whole 8-half vectors
    plan = tsm2l.tsm2l_params(Problem("p", 10**7, 16, 16), DType.BF16, H100, row, row)
    assert plan.smem == (16 * 16 + plan.t1 * 20) * 4


@pytest.mark.parametrize(("target", "a", "c", "header_a", "header_c"), [
    ("sm_80", "gemmc_bf16", "gemmc_bf16", "__nv_bfloat16", "__nv_bfloat16"),
    ("hip", "hip_bfloat16", "hip_bfloat16", "hip_bfloat16", "hip_bfloat16"),
])
def test_element_types_in_code_and_header(target, a, c, header_a, header_c):
    k = kernel("kernel k { dtype bf16 gemm 100 x 100 x 100 count 3 }", target)
    assert f"const {a}* const* __restrict__ A" in k.source and f"{c}* const* __restrict__ C" in k.source
    assert f"const {header_a}* const* A" in k.header and f"{header_c}* const* C" in k.header
    if target == "hip":
        assert "#include <hip/hip_bfloat16.h>" in k.header
    else:
        assert "#include <cuda_bf16.h>" in k.header and "cuda_bf16.h>" not in k.source  # NVRTC needs no header


def test_f16_to_f32_on_hip_uses_float16():
    k = kernel("kernel k { dtype A f16, B f16, C f32 gemm 100 x 100 x 100 count 3 }", "hip")
    assert "const _Float16* const* __restrict__ A" in k.source and "float* const* __restrict__ C" in k.source
    assert "gemmc_hip_f16" not in k.source


HALF_KERNELS = """
kernel simt_batch {
  dtype bf16
  layout A row, B col, C row
  beta runtime
  batch { a 100 x 33 x 77  b 64 x 64 x 64  c 1 x 129 x 5 }
}
kernel simt_count {
  dtype A f16, B f16, C f32
  layout A col, B row, C col
  beta 0.5
  gemm 200 x 100 x 64 count 3
}
kernel tsm2r_col {
  dtype bf16
  layout A col, B row, C col
  gemm 16384 x 8 x 16384
}
kernel tsm2r_row {
  dtype A f16, B f16, C f32
  layout A row, B col, C row
  beta runtime
  algorithm tsm2r
  gemm 8192 x 24 x 8191
}
kernel tsm2r_edge {
  dtype f16
  layout A col, B col, C row
  beta 0.5
  algorithm tsm2r
  gemm 5001 x 13 x 3007
}
kernel tsm2l_row {
  dtype bf16
  layout A row, B row, C row
  gemm 1000003 x 16 x 16
}
kernel tsm2l_col {
  dtype A f16, B f16, C f32
  layout A col, B col, C col
  beta runtime
  algorithm tsm2l
  gemm 5000 x 7 x 5
}
kernel dyn_wgrad {
  dtype bf16
  layout A col
  alpha runtime beta runtime
  grouped K m 96 n 80 groups 16
}
kernel dyn_list {
  dtype A f16, B f16, C f32
  layout B col
  grouped list problems 64
}
kernel dyn_moe {
  dtype bf16
  layout B col
  grouped M n 96 k 40 groups 16
}
"""


def _compile(command: list[str], text: str, suffix: str, tmp_path) -> None:
    src = tmp_path / f"k.{suffix}"
    src.write_text(text)
    proc = subprocess.run([*command, str(src), "-o", str(tmp_path / "k.o")], capture_output=True, text=True,
                          env={**os.environ, "HIP_PLATFORM": "amd"})
    assert proc.returncode == 0, proc.stderr[-4000:]


def test_half_kernels_go_where_they_should():
    families = {k.name: k.ir.family for k in gemmc.compile_string("target cuda sm_80\n" + HALF_KERNELS)}
    assert families == {"simt_batch": "simt", "simt_count": "simt", "tsm2r_col": "tsm2r", "tsm2r_row": "tsm2r",
                        "tsm2r_edge": "tsm2r", "tsm2l_row": "tsm2l", "tsm2l_col": "tsm2l", "dyn_wgrad": "dynamic",
                        "dyn_list": "dynamic", "dyn_moe": "dynamic"}


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_half_kernels_compile_with_nvcc(arch, tmp_path):
    for k in gemmc.compile_string(HALF_KERNELS, target=arch):
        _compile([NVCC, *k.rendered.build_flags, "-c", "-std=c++17"], k.standalone, "cu", tmp_path)


@pytest.mark.skipif(HIPCC is None, reason="hipcc is not installed (Debian package hipcc)")
def test_half_kernels_compile_with_hipcc(tmp_path):
    for k in gemmc.compile_string(HALF_KERNELS, target="hip"):
        _compile([HIPCC, "--offload-arch=gfx90a", "--genco", "-std=c++17"], k.standalone, "hip", tmp_path)


HALF_GROUP = """
group g {
  dtype A bf16, B bf16, C f32
  concurrency auto
  gemm dx 1024 x 512 x 512 { layout B col }
  gemm dw 512 x 512 x 1024 { layout A col }
}
"""


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_half_group_compiles_with_nvcc(tmp_path):
    """A concurrent group of half GEMMs off sm_90 (SIMT members): its launcher casts the pointer tables to the
    kernels' element types."""
    group = gemmc.compile_string("target cuda sm_80\n" + HALF_GROUP)["g"]
    _compile([NVCC, "-arch=sm_80", "-c", "-std=c++17"], group.rendered.source, "cu", tmp_path)


@pytest.mark.skipif(HIPCC is None, reason="hipcc is not installed (Debian package hipcc)")
def test_half_group_compiles_with_hipcc(tmp_path):
    group = gemmc.compile_string("target hip gfx90a\n" + HALF_GROUP)["g"]
    _compile([HIPCC, "--offload-arch=gfx90a", "--genco", "-std=c++17"], group.rendered.source, "hip", tmp_path)


def test_half_group_on_sm_90_runs_hopper_members_or_simt_when_asked():
    """On sm_90 half members run in the hopper family, each through its own launcher (TMA maps); `algorithm simt`
    in the group plans them on CUDA cores instead."""
    assert {k.ir.family for k in gemmc.compile_string("target cuda sm_90\n" + HALF_GROUP)} == {"hopper"}
    prog = gemmc.compile_string("target cuda sm_90\n" + HALF_GROUP.replace("concurrency auto", "algorithm simt"))
    assert {k.ir.family for k in prog} == {"simt"}

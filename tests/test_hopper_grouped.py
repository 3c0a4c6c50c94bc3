"""`grouped M` of bf16/f16 storage without a GPU: the hopper_grouped family takes it on cuda sm_90 (E900 with a hint
for the other forms and targets), the located errors of what it cannot build, the plan and its shared memory, the
scheduler's arithmetic against a plain model, and the kernel and its launcher compiling with nvcc for sm_90a."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess

import numpy as np
import pytest

import gemmc
from gemmc.errors import InternalError
from gemmc.families import tma_loop
from gemmc.families.hopper_grouped.plan import HopperGroupedPlan
from gemmc.ir.hardware import TARGETS
from gemmc.passes import PASS_NAMES
from gemmc.passes.verify import verify


def kernel(text: str, target: str = "cuda sm_90"):
    return gemmc.compile_string(f"target {target}\nkernel k {{ {text} }}")["k"]


def errors(text: str, target: str = "cuda sm_90") -> list[tuple[str, str]]:
    with pytest.raises(gemmc.GemmcError) as info:
        kernel(text, target)
    return [(d.code, d.message) for d in info.value.diagnostics]


def test_half_grouped_m_takes_the_hopper_loop():
    k = kernel("dtype bf16 layout B col grouped M n 1024 k 512 groups 32")
    assert k.ir.family == "hopper_grouped"
    plan = k.ir.plan
    assert isinstance(plan, HopperGroupedPlan)
    assert (plan.bm, plan.small_bm, plan.bn, plan.bk, plan.b_kmajor) == (128, 64, 256, 64, True)
    assert plan.cluster == 1 and plan.b_box == (64, 256, 1)  # k 512: no cluster
    assert plan.threads == 384 and plan.arch_specific and k.rendered.device_arch == "sm_90a"
    # the ring takes what the C sub-tiles and the scheduler leave of the block's shared memory
    assert plan.smem_bytes <= 232448 < plan.smem_bytes + plan.stage_bytes + 16
    assert plan.sched_smem == 4 * (3 * 32 + 1) + 8
    assert k.ir.work.smem_bytes == plan.dynamic_smem_bytes == plan.smem_bytes - plan.sched_smem
    assert kernel("dtype f32 grouped M n 64 k 64 groups 4").ir.family == "dynamic"


def test_mixed_c_and_f16_and_the_tile_from_the_schedule():
    k = kernel("dtype A f16, B f16, C f32 tile 128x128x64 grouped M n 4096 k 4096 groups 8")
    plan = k.ir.plan
    assert (plan.bn, plan.c_bytes, plan.compute, plan.b_kmajor, plan.c_sub_cols) == (128, 4, "f16", False, 32)
    assert plan.cluster == 2 and plan.b_box == (64, 32, 1) and plan.a_box == (64, 64)  # k 4096: B halves along K
    assert "m64n64k16" in k.source and "m64n128k16" in k.source


@pytest.mark.parametrize("text, target, code, words", [
    ("algorithm hopper_grouped dtype bf16 layout A col grouped M n 64 k 64 groups 8", "cuda sm_90", "E900",
     "reads A and writes C row-major"),
    ("algorithm hopper_grouped dtype bf16 grouped M n 64 k 36 groups 8", "cuda sm_90", "E900",
     "k 36: TMA reads rows of A of 72 bytes"),
    ("algorithm hopper_grouped dtype bf16 grouped M n 60 k 64 groups 8", "cuda sm_90", "E900",
     "n 60: TMA reads rows of row-major B"),
    ("dtype bf16 grouped M n 64 k 64 groups 2048", "cuda sm_90", "E201", "takes at most 1024 groups"),
    ("dtype bf16 precision f32 grouped M n 64 k 64 groups 8", "cuda sm_90", "E202", "not in f32"),
    ("dtype bf16 tile 128x192x64 grouped M n 64 k 64 groups 8", "cuda sm_90", "E202", "N in 256, 128"),
])
def test_what_it_cannot_build_is_refused_with_the_reason(text, target, code, words):
    found = errors(text, target)
    assert any(c == code and words in m for c, m in found), found


def test_algorithm_hopper_grouped_names_the_family_the_planner_takes():
    # the reference's `algorithm hopper_grouped`: the same kernel as auto, and where TMA cannot read the operands
    # only the padding error, not a second one saying the family cannot compute a batch sized at run time
    assert kernel("algorithm hopper_grouped dtype bf16 layout B col grouped M n 64 k 64 groups 8").ir.family == \
        "hopper_grouped"
    assert [c for c, _ in errors("algorithm hopper_grouped dtype bf16 grouped M n 64 k 36 groups 8")] == ["E900"]
    assert errors("algorithm hopper_grouped dtype f32 grouped M n 64 k 64 groups 8") == [
        ("E202", "algorithm hopper_grouped computes `grouped M`, `grouped K` and `grouped list` of bf16/f16 storage on "
                 "target cuda sm_90")]


def test_precision_on_half_storage_gets_one_error_and_a_hint_that_leads_somewhere():
    # the loop's own precision needs no statement; f32 arithmetic is the dynamic family's (named); a misfit says why
    # its tensor-core precision cannot run, naming the line the loop cannot read
    assert kernel("dtype bf16 grouped M n 64 k 48 groups 8 precision bf16").ir.family == "hopper_grouped"
    assert kernel("dtype bf16 grouped M n 64 k 48 groups 8 precision f32 algorithm dynamic").ir.family == "dynamic"
    (code, message), = errors("dtype bf16 grouped M n 64 k 48 groups 8 precision f32")
    assert code == "E202" and "tensor cores" in message
    (code, message), = errors("dtype bf16 grouped M n 64 k 41 groups 8 precision bf16")
    assert code == "E900" and "k 41" in message
    with pytest.raises(gemmc.GemmcError) as info:
        kernel("dtype bf16 grouped M n 64 k 48 groups 8 precision f32")
    assert "algorithm dynamic" in (info.value.diagnostics[0].hint or "")


@pytest.mark.parametrize("text, why", [
    ("dtype bf16 layout A col grouped M n 64 k 64 groups 8", "reads A and writes C row-major"),
    ("dtype bf16 grouped M n 64 k 36 groups 8", "A's rows of k 36 (72 bytes)"),
    ("dtype f16 grouped M n 60 k 64 groups 8", "row-major B's rows of n 60 (120 bytes)"),
    ("dtype bf16 layout A col grouped list problems 8", "reads A and writes C row-major"),
    ("dtype f16 layout C col grouped list problems 8", "reads A and writes C row-major"),
    ("dtype bf16 algorithm dynamic grouped list problems 8", ""),
])
def test_what_tma_cannot_read_runs_in_the_dynamic_family_and_says_why(text, why):
    k = kernel(text)
    assert k.ir.family == "dynamic" and any(why in note for note in k.ir.notes), k.ir.notes
    assert "algorithm dynamic" in text or any("CUDA cores" in note for note in k.ir.notes), k.ir.notes


def test_pipeline_depth_from_the_schedule():
    assert kernel("dtype bf16 pipeline stages 3 grouped M n 64 k 64 groups 8").ir.plan.stages == 3
    assert errors("dtype bf16 pipeline stages 1 grouped M n 64 k 64 groups 8") == [
        ("E201", "the TMA pipeline needs at least 2 stages, not 1")]
    # deeper than the ring holds: refused at the pipeline line, naming the most that fit (not E300 at the kernel)
    for form in ("grouped M n 64 k 64 groups 8", "grouped list problems 64",
                 "layout A col grouped K m 64 n 64 groups 8"):
        (code, message), = errors(f"dtype bf16 pipeline stages 9 {form}")
        assert code == "E201" and "ring holds at most" in message and message.endswith("not 9"), message


def test_odd_n_with_col_major_b_is_fine():
    assert kernel("dtype bf16 layout B col grouped M n 97 k 40 groups 8").ir.family == "hopper_grouped"


def vars_of(plan: HopperGroupedPlan) -> dict:
    return {f: getattr(plan, f) for f in plan.__dataclass_fields__}


def model(ends: list[int], rows: int) -> tuple[list[int], list[tuple[int, int, int]]]:
    """The kernel's schedule in Python: clamped starts, then the tile rows (group, first row, rows), 128-row tiles
    first, then the 64-row ones."""
    first, run = [0], 0
    for e in ends:
        run = max(run, min(max(e, 0), rows))
        first.append(run)
    big, small = [], []
    for g in range(len(ends)):
        m = first[g + 1] - first[g]
        full = m // 128 + (m % 128 > 64)
        big += [(g, first[g] + 128 * i, min(128, first[g + 1] - first[g] - 128 * i)) for i in range(full)]
        if 0 < m % 128 <= 64:
            small.append((g, first[g] + 128 * (m // 128), m % 128))
    return first, big + small


@pytest.mark.parametrize("ends, rows", [([0, 1, 40, 40, 300, 1000, 1064], 1100), ([5, 3, -1, 900, 2000], 1000),
                                        ([64, 128, 192, 320], 320), ([], 10)])
def test_schedule_model_covers_every_row_of_every_group_once(ends, rows):
    first, tiles = model(ends, rows)
    covered = np.zeros(rows, dtype=int)
    for g, m0, h in tiles:
        assert first[g] <= m0 and m0 + h <= first[g + 1] and 1 <= h <= 128
        covered[m0:m0 + h] += 1
    inside = np.zeros(rows, dtype=int)
    for g in range(len(ends)):
        inside[first[g]:first[g + 1]] = 1
    assert np.array_equal(covered, inside)
    assert all(h <= 64 for _, _, h in tiles[len([t for t in tiles if t[2] > 64]):])  # the small ones last


VARIANTS = [
    "dtype bf16 layout B col grouped M n 1024 k 512 groups 128",
    "dtype bf16 grouped M n 2048 k 1024 groups 64",
    "dtype A f16, B f16, C f32 layout B col alpha runtime beta runtime grouped M n 96 k 40 groups 1024",
    "dtype f16 beta 1.0 tile 128x128x64 grouped M n 4096 k 4096 groups 8",
]


@pytest.mark.parametrize("k, cluster", [(512, 1), (4088, 1), (4096, 2), (7168, 2)])
def test_clusters_from_the_calibrated_depth(k, cluster):
    plan = kernel(f"dtype bf16 grouped M n 2048 k {k} groups 64").ir.plan
    assert plan.cluster == cluster and plan.b_box == (64, 64 // cluster, 1)
    paired = HopperGroupedPlan(**{**vars_of(plan), "cluster": 2, "tail_split": False})
    assert plan.grid(132) == 132 and paired.grid(133) == 132


def test_a_plan_with_clusters_and_a_split_last_round_is_refused():
    k = kernel("dtype bf16 grouped M n 2048 k 512 groups 64")
    assert k.ir.plan.cluster == 1 and k.ir.plan.tail_split
    with pytest.raises(ValueError, match="split in column halves with clusters"):  # its kernel would never finish
        k.with_plan(dataclasses.replace(k.ir.plan, cluster=2))
    paired = dataclasses.replace(k.ir, plan=dataclasses.replace(k.ir.plan, cluster=2))
    with pytest.raises(InternalError, match="split in column halves with clusters"):
        verify(paired, TARGETS["sm_90"], PASS_NAMES)


@pytest.mark.parametrize("band", [0, -1])
def test_a_band_below_one_is_refused(band):
    k = kernel("dtype bf16 grouped M n 2048 k 512 groups 64")
    with pytest.raises(ValueError, match="raster bands"):
        k.with_plan(dataclasses.replace(k.ir.plan, band=band))
    gk = kernel("dtype bf16 layout A col grouped K m 1024 n 1024 groups 32")
    with pytest.raises(ValueError, match="raster bands"):  # grouped K orders its tiles longest first
        gk.with_plan(dataclasses.replace(gk.ir.plan, band=2))


def test_bands_of_unit_rows_walk_rows_fastest():
    k = kernel("dtype bf16 grouped M n 2048 k 512 groups 64")
    assert k.ir.plan.band == 1 and "per_band" not in k.source  # each row's n-tiles in turn
    banded = k.with_plan(dataclasses.replace(k.ir.plan, band=4))
    assert "const long long per_band = (long long)4 * tiles_n;" in banded.source
    assert "in bands of 4 unit rows walked rows-fastest" in banded.plan


def test_cluster_sources():
    k = kernel(VARIANTS[3])
    assert k.ir.plan.cluster == 2 and "__cluster_dims__(2, 1, 1)" in k.source and "multicast" in k.source
    single = k.with_plan(dataclasses.replace(k.ir.plan, cluster=1))
    assert single.ir.plan.b_box == (64, 64, 1) and "__cluster_dims__" not in single.source


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("text, cluster, band", [(v, 1, 1) for v in VARIANTS] + [(v, 2, 1) for v in VARIANTS[:3]]
                         + [(VARIANTS[0], 1, 3), (VARIANTS[0], 2, 8)])
def test_compiles_with_nvcc_for_sm90a(text, cluster, band, tmp_path):
    k = kernel(text)
    if (cluster, band) != (k.ir.plan.cluster, k.ir.plan.band):
        k = k.with_plan(dataclasses.replace(k.ir.plan, cluster=cluster, band=band,
                                            tail_split=cluster == 1 and k.ir.plan.tail_split))
    src = tmp_path / "k.cu"
    src.write_text(k.standalone)
    proc = subprocess.run(["nvcc", *k.rendered.build_flags, "-std=c++17", "-c", str(src), "-o", str(src) + ".o",
                           "-Xptxas", "-v"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "warning" not in proc.stderr, proc.stderr[-4000:]  # no ignored setmaxnreg
    assert "C7515" not in proc.stderr, proc.stderr[-4000:]  # wgmma not serialised (the accumulators stay in place)
    assert " 0 bytes spill stores" in proc.stderr
    assert "_validate(const int32_t* group_end" in k.header


# ---- grouped K (the weight gradient): hopper_grouped_k.cu.j2 ----

def test_half_grouped_k_takes_the_hopper_loop():
    k = kernel("dtype bf16 layout A col grouped K m 1024 n 1024 groups 32")
    assert k.ir.family == "hopper_grouped"
    plan = k.ir.plan
    assert isinstance(plan, HopperGroupedPlan) and plan.grouped_k
    assert (plan.bm, plan.bn, plan.bk, plan.b_kmajor, plan.cluster, plan.tail_split) == (128, 256, 64, False, 1, False)
    assert plan.a_box == (64, 64) and plan.b_box == (64, 64)
    assert plan.sched_smem == 4 * (2 * 32 + 1) + 8 * tma_loop.MAX_STAGES  # ends and order, each stage's tile number
    assert plan.smem_bytes <= 232448 < plan.smem_bytes + plan.stage_bytes + 16
    assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16" in k.source
    assert "p, 1, 1, 1, 1;" in k.source  # both operands transposed (M-major A, N-major B)
    assert "gemmc_zero_krows" in k.source and "hopper_grouped_k" not in k.source  # the template's name stays out
    assert any("longest first" in n for n in k.ir.notes)
    assert "reduction's rows of A (M x rows, X^T)" in k.header


@pytest.mark.parametrize("text, why", [
    ("dtype bf16 grouped K m 64 n 64 groups 8", "reads A as X^T"),
    ("dtype bf16 layout A col, B col grouped K m 64 n 64 groups 8", "reads A as X^T"),
    ("dtype bf16 layout A col, C col grouped K m 64 n 64 groups 8", "writes each group's C row-major"),
    ("dtype f16 layout A col grouped K m 60 n 64 groups 8", "lines of m 60 (120 bytes)"),
    ("dtype f16 layout A col grouped K m 64 n 36 groups 8", "lines of n 36 (72 bytes)"),
    ("dtype bf16 layout A col algorithm dynamic grouped K m 64 n 64 groups 8", ""),
])
def test_grouped_k_that_tma_cannot_read_runs_in_the_dynamic_family_and_says_why(text, why):
    k = kernel(text)
    assert k.ir.family == "dynamic" and any(why in note for note in k.ir.notes), k.ir.notes
    assert not why or any(why in note and "CUDA cores" in note for note in k.ir.notes), k.ir.notes


@pytest.mark.parametrize("text, code, words", [
    ("algorithm hopper_grouped dtype bf16 grouped K m 64 n 64 groups 8", "E900", "reads A as X^T"),
    ("algorithm hopper_grouped dtype bf16 layout A col grouped K m 60 n 64 groups 8", "E900",
     "m 60: TMA reads lines of 120 bytes"),
    ("dtype bf16 layout A col grouped K m 64 n 64 groups 2048", "E201", "takes at most 1024 groups"),
    ("dtype bf16 layout A col grouped K m 4194304 n 64 groups 1024", "E201", "int32 coordinates"),
    ("dtype bf16 layout A col precision f32 grouped K m 64 n 64 groups 8", "E202", "not in f32"),
])
def test_grouped_k_it_cannot_build_is_refused_with_the_reason(text, code, words):
    found = errors(text)
    assert any(c == code and words in m for c, m in found), found


def test_grouped_k_off_sm90_stays_in_the_dynamic_family():
    assert kernel("dtype bf16 layout A col grouped K m 64 n 64 groups 8", "cuda sm_80").ir.family == "dynamic"
    assert kernel("dtype f32 layout A col grouped K m 64 n 64 groups 8").ir.family == "dynamic"


VARIANTS_K = [
    "dtype bf16 layout A col grouped K m 1024 n 1024 groups 32",
    "dtype A f16, B f16, C f32 layout A col alpha runtime beta runtime grouped K m 200 n 136 groups 1024",
    "dtype f16 beta 1.0 layout A col tile 128x128x64 grouped K m 512 n 512 groups 8",
]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("text", VARIANTS_K)
def test_grouped_k_compiles_with_nvcc_for_sm90a(text, tmp_path):
    test_compiles_with_nvcc_for_sm90a(text, 1, 1, tmp_path)


# ---- grouped list: hopper_grouped_list.cu.j2, tensor maps built on the device ----

def test_half_grouped_list_takes_the_hopper_loop():
    k = kernel("dtype bf16 layout B col grouped list problems 512")
    assert k.ir.family == "hopper_grouped"
    plan = k.ir.plan
    assert plan.grouped_list and not plan.grouped_k and (plan.bm, plan.small_bm, plan.bn) == (128, 64, 128)
    assert plan.cluster == 1 and not plan.tail_split and plan.b_box == (64, 128) and plan.a_box == (64, 64)
    assert plan.sched_smem == 4 * (512 + 1) + 8 * 8 and plan.list_maps_bytes == 512 * 3 * 128
    assert plan.smem_bytes <= 232448 < plan.smem_bytes + plan.stage_bytes + 16
    # the maps: template copies changed by tensormap.replace, released to the tensormap proxy, acquired before use
    for words in ("tensormap.replace.tile.global_address", "tensormap.replace.tile.global_dim",
                  "tensormap.replace.tile.global_stride",
                  "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu",
                  "fence.proxy.tensormap::generic.acquire.gpu", "m64n128k16", "m64n64k16"):
        assert words in k.source, words
    assert k.rendered.entry + "_maps(" in k.source
    assert "gemmc_dyn_problem" in k.header and "_validate" not in k.header
    assert any("tensor maps built on the device" in note for note in k.ir.notes)
    row = kernel("dtype A f16, B f16, C f32 grouped list problems 64")
    assert row.ir.plan.b_box == (64, 64) and not row.ir.plan.b_kmajor and row.ir.plan.c_sub_cols == 32


def test_a_list_takes_tile_n_256_from_the_schedule_and_refuses_others():
    wide = kernel("dtype bf16 layout B col tile 128x256x64 grouped list problems 8")
    assert (wide.ir.plan.bn, wide.ir.plan.b_box) == (256, (64, 256)) and "m64n256k16" in wide.source
    assert "64x128 each on a 64-row tile (m64n128k16)" in " ".join(wide.ir.plan.lines())
    (code, message), = errors("dtype bf16 tile 128x64x64 grouped list problems 8")
    assert code == "E202" and "N in 256, 128; not 128x64x64" in message


def test_a_list_call_tma_cannot_read_takes_the_schedule_in_the_dynamic_family():
    """What runtime/grouped_list.py runs for a call whose A or B TMA cannot read in place: the same schedule
    planned with `algorithm dynamic` (CUDA cores), its sources compiling as the dynamic family's do."""
    from gemmc.ir.types import DType, Precision
    from gemmc.passes.replan import in_family

    k = kernel("dtype A f16, B f16, C f32 beta runtime tile 128x128x64 pipeline stages 4 grouped list problems 64")
    cores = in_family(k.ir, TARGETS["sm_90"], "dynamic", "<test>", Precision(DType.F32))
    assert cores.family == "dynamic" and cores.name == k.ir.name + "_dynamic" and cores.dynamic == k.ir.dynamic
    assert (cores.dtype, cores.c_dtype, cores.beta) == (k.ir.dtype, k.ir.c_dtype, k.ir.beta)
    from gemmc.codegen import render_kernel

    assert "gemmc_simt_tile" in render_kernel(cores, TARGETS["sm_90"]).source


@pytest.mark.parametrize("text, code, words", [
    ("algorithm hopper_grouped dtype bf16 layout A col grouped list problems 8", "E900", "writes C row-major"),
    ("dtype bf16 grouped list problems 2048", "E201", "takes at most 1024 problems"),
    ("dtype bf16 precision f32 grouped list problems 8", "E202", "not in f32"),
])
def test_grouped_list_it_cannot_build_is_refused_with_the_reason(text, code, words):
    got = errors(text)
    assert len(got) == 1 and got[0][0] == code and words in got[0][1], got


def test_grouped_list_off_sm90_stays_in_the_dynamic_family():
    assert kernel("dtype bf16 grouped list problems 8", "cuda sm_80").ir.family == "dynamic"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("text", ["dtype bf16 layout B col grouped list problems 1024",
                                  "dtype A f16, B f16, C f32 alpha runtime beta runtime grouped list problems 64",
                                  "dtype bf16 layout B col tile 128x256x64 grouped list problems 64",
                                  "dtype bf16 tile 128x256x64 grouped list problems 64"])
def test_grouped_list_compiles_with_nvcc_for_sm90a(text, tmp_path):
    k = kernel(text)
    src = tmp_path / "k.cu"
    src.write_text(k.standalone)
    proc = subprocess.run(["nvcc", *k.rendered.build_flags, "-std=c++17", "-c", str(src), "-o", str(src) + ".o",
                           "-Xptxas", "-v"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "warning" not in proc.stderr and "C7515" not in proc.stderr, proc.stderr[-4000:]
    assert " 0 bytes spill stores" in proc.stderr


def test_list_lines_and_what_tma_cannot_read():
    """Views of unit-stride lines: their leading dimension from the strides (one line or none: the line length
    rounded up to 8); the TMA checks mark the problems with work whose A or B base or line pitch is not a 16-byte
    multiple, and pass one without work."""
    from gemmc.ir.types import Layout
    from gemmc.runtime.dynamic_list import lines
    from gemmc.runtime.grouped_list import tma_misfits

    shape = np.array([[4, 7], [4, 7], [1, 7], [0, 3], [4, 7]])
    strides = np.array([[7, 1], [264, 1], [99, 3], [1, 1], [7, 2]])
    ok, ld = lines(shape, strides, Layout.ROW)
    assert ok.tolist() == [True, True, False, True, False]
    assert ld[:4].tolist() == [7, 264, 8, 8]
    ok, ld = lines(np.array([[7, 4]]), np.array([[1, 16]]), Layout.COL)
    assert ok.tolist() == [True] and ld.tolist() == [16]

    def table(rows):  # m, n, k, lda, ldb, ldc, a, b, c
        return np.array(rows, dtype=np.int64)

    good = [4, 8, 8, 8, 8, 8, 4096, 8192, 12289]  # C misaligned: stored from the accumulators, fine
    assert tma_misfits(table([good])).tolist() == [False]
    assert tma_misfits(table([good, [4, 8, 7, 7, 8, 8, 4096, 8192, 0]])).tolist() == [False, True]  # lda 14 bytes
    assert tma_misfits(table([[4, 8, 8, 8, 8, 8, 4096, 8194, 0], good])).tolist() == [True, False]  # B's base
    assert tma_misfits(table([[4, 8, 0, 7, 3, 8, 4097, 3, 0], [0, 8, 8, 7, 3, 8, 1, 1, 0]])).tolist() == [False, False]


def test_list_sizes_the_runtime_shares_have_one_source():
    """The numbers the list's kernel, its C++ launcher and the Python runtime must agree on are the plan's constants,
    rendered into the source and imported by the runtime: the stages' tile numbers (s_tile, at most MAX_STAGES), the
    planning kernel's warps, the template maps' placeholder, the workspace's counter region."""
    from gemmc.families.hopper_grouped import plan as hp
    from gemmc.families.tma_loop import MAX_STAGES, TMAP_BYTES

    k = kernel("dtype bf16 grouped list problems 64")
    src, maps_bytes = k.standalone, k.ir.plan.list_maps_bytes
    assert f"__shared__ long long s_tile[{MAX_STAGES}];" in src and f"STAGES <= {MAX_STAGES}," in src
    assert k.ir.plan.sched_smem == 4 * (64 + 1) + 8 * MAX_STAGES
    warps = hp.LIST_MAPS_WARPS
    assert f"__launch_bounds__({32 * warps}) {k.rendered.entry}_maps(" in src and f"s_maps[{warps}][" in src
    assert f"dim3((count + {warps} - 1) / {warps}), dim3({32 * warps})" in src
    (x, y), pitch = hp.LIST_TEMPLATE_DIMS, hp.LIST_TEMPLATE_PITCH
    assert f"dims[2] = {{{x}, {y}}}, strides[1] = {{{pitch}}};" in src
    counters = hp.LIST_COUNTER_BYTES
    assert f"return {counters} + {maps_bytes};" in src and f"static_cast<char*>(workspace) + {counters});" in src
    assert maps_bytes == hp.LIST_MAPS * TMAP_BYTES * 64


@pytest.mark.parametrize("grouped_k", [False, True], ids=["grouped-M", "grouped-K"])
def test_a_checked_calls_argument_block_launches_with_no_values_but_grouped_ks_counters(monkeypatch, grouped_k):
    """runtime/grouped_tma.py: a checked call's argument block is a Launcher holding every value in the kernel's
    order (three tensor maps by value, then the scalars); a launch of it stores nothing but grouped K's tile counters
    (the launch stream's), and grouped M reads no counters."""
    import ctypes
    import sys
    from types import ModuleType, SimpleNamespace

    from gemmc.runtime import dynamic_state, grouped_tma, pdl
    from gemmc.runtime.tma import TMAP

    launched = []
    cuda = ModuleType("cupy.cuda")
    cuda.driver = SimpleNamespace(launchKernel=lambda *a: pytest.fail("a plain launch"))  # type: ignore[attr-defined]
    monkeypatch.setattr(pdl, "launch_params", lambda *a: launched.append(a))  # the kernel waits: a dependent launch
    monkeypatch.setitem(sys.modules, "cupy", ModuleType("cupy"))
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)
    monkeypatch.setattr(dynamic_state, "capture_of", lambda stream: None)
    fn = SimpleNamespace(kernel=SimpleNamespace(ptr=77))
    st = grouped_tma.GroupedTmaState("moe", fn, None, 132, 0, 1000, 384)
    if grouped_k:
        st.counters = SimpleNamespace(data=SimpleNamespace(ptr=4096))
    maps = []
    for fill in (1, 2, 3):
        m = np.zeros(1, dtype=TMAP)
        m["opaque"][0, :] = fill
        maps.append(m)
    block = grouped_tma.argument_block(st, tuple(maps), 1, 0xC0, 0xE0, 5, 600, 256, 128, 2.0, 0.5,
                                       counters=grouped_k)
    assert [list(v) for v in block.values[:3]] == [[fill] * 16 for fill in (1, 2, 3)]
    assert [v.value for v in block.values[3:12]] == [1, 0xC0, 0xE0, 5, 600, 256, 128, 2.0, 0.5]
    assert len(block.values) == 12 + grouped_k and block.per_call == []
    for stream in (7, 8):
        grouped_tma._launch(st, block, stream)
        assert launched[-1] == (77, 132, 384, 1000, stream, block.address, block.config)
        if grouped_k:  # each stream's own pair of counters
            assert block.values[12].value == st.counter(stream)
    assert block.counter is None or len({st.counter(7), st.counter(8)}) == 2
    params = ctypes.cast(block.address, ctypes.POINTER(ctypes.c_void_p))
    assert [params[i] for i in range(len(block.values))] == [ctypes.addressof(v) for v in block.values]

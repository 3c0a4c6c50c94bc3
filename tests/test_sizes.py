"""Every size has one source: the plan computes each byte count, the template receives it, and the generated code
static_asserts that the template's own layout agrees. Here the context carries a deliberately wrong value for each
such size, and nvcc must refuse the kernel on that static_assert."""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

import gemmc
from gemmc.families.hopper import codegen as hopper_codegen
from gemmc.families.simt import codegen as simt_codegen
from gemmc.families.tensorcore import codegen as tc_codegen
from gemmc.families.tsm2l import codegen as tsm2l_codegen
from gemmc.families.tsm2r import codegen as tsm2r_codegen

NVCC = shutil.which("nvcc")


def _wrong_smem(context: dict) -> dict:
    return {"smem_bytes": context["smem_bytes"] + 16} if "smem_bytes" in context else {}


def _wrong_variant_smem(context: dict) -> dict:
    return {"variants": [dict(v, smem=v["smem"] + 8) for v in context["variants"]]}


def _wrong_scratch(context: dict) -> dict:
    return {"scratch_probe": context["scratch_probe"] + 256}


def _wrong_regions(context: dict) -> dict:
    a, b, ia, ib, total = context["regions"]
    return {"regions": (a, b - 256, ia, ib, total)}  # A's planes cut short by B's


# (id, schedule, target, the family's codegen module, what to break, the static_assert message nvcc must print)
CASES = [
    ("simt", "dtype f32 gemm 300 x 200 x 100", "sm_90", simt_codegen, _wrong_variant_smem,
     "SimtPlan.variant_smem"),
    ("simt_split_k", "dtype f32 gemm 108 x 61 x 400 tile 32x32x32 kslices 2 ksplit 3 threads 128", "sm_90",
     simt_codegen, _wrong_variant_smem, "SimtPlan.variant_smem"),
    ("tensorcore_mma", "dtype f32 precision split bf16 x3 gemm 1000 x 999 x 517", "sm_80", tc_codegen, _wrong_smem,
     "TensorCorePlan.smem_bytes"),
    ("tensorcore_wgmma", "dtype f32 precision split f16 x3 algorithm tensorcore gemm 1000 x 999 x 517", "sm_90",
     tc_codegen, _wrong_smem, "TensorCorePlan.smem_bytes"),
    ("hopper_split", "dtype f32 precision split f16 x3 gemm 1000 x 999 x 517", "sm_90", hopper_codegen,
     _wrong_regions, "the plan's scratch regions"),
    ("tensorcore_scratch", "dtype f32 precision f16 gemm 1000 x 999 x 517", "sm_80", tc_codegen, _wrong_scratch,
     "plan.scratch_bytes"),
    ("tsm2r_column", "dtype f64 layout A col, B col, C col gemm 8192 x 40 x 8192 algorithm tsm2r", "sm_90",
     tsm2r_codegen, _wrong_smem, "planner.column_smem"),
    ("tsm2r_rows", "dtype f32 layout A row, B col, C row gemm 8192 x 1 x 8192 algorithm tsm2r", "sm_90",
     tsm2r_codegen, _wrong_smem, "tsm2r_params"),
    ("tsm2l", "dtype f64 gemm 100000 x 32 x 4 algorithm tsm2l", "sm_90", tsm2l_codegen, _wrong_smem,
     "tsm2l_params"),
]


def _render(schedule: str, target: str, module, breaks, monkeypatch) -> tuple[str, str, str]:
    """The kernel as planned, then rendered with the family's context broken by `breaks`: (good, bad, arch)."""
    good = gemmc.compile_string(f"kernel k {{ {schedule} }}", target=target)["k"]
    right = module.context

    def wrong(kernel, hw):
        context = right(kernel, hw)
        full = {"smem_bytes": kernel.work.smem_bytes, **context}  # the common context's value, where it lives
        return {**context, **breaks(full)}

    with monkeypatch.context() as patch:
        patch.setattr(module, "context", wrong)
        bad = gemmc.compile_string(f"kernel k {{ {schedule} }}", target=target)["k"].source  # renders here
    assert bad != good.source
    return good.source, bad, good.rendered.device_arch


def _nvcc(source: str, arch: str, path) -> subprocess.CompletedProcess:
    path.write_text(source)
    return subprocess.run([NVCC, "-std=c++17", f"-arch={arch}", "-cubin", "-o", f"{path}.cubin", str(path)],
                          capture_output=True, text=True)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_a_wrong_size_from_the_plan_fails_the_build(tmp_path, monkeypatch):
    jobs = []
    for name, schedule, target, module, breaks, message in CASES:
        _, bad, arch = _render(schedule, target, module, breaks, monkeypatch)
        jobs.append((name, bad, arch, message))
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda job: (job, _nvcc(job[1], job[2], tmp_path / f"{job[0]}.cu")), jobs))
    for (name, _, _, message), proc in results:
        assert proc.returncode != 0, f"{name}: the wrong size compiled"
        assert "static assertion failed" in proc.stderr and message in proc.stderr, f"{name}:\n{proc.stderr[-2000:]}"


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_the_same_kernels_with_the_plans_sizes_build(tmp_path, monkeypatch):
    """The control: what the test above breaks compiles as the plan rendered it."""
    jobs = []
    for name, schedule, target, module, breaks, _ in CASES:
        good, _, arch = _render(schedule, target, module, breaks, monkeypatch)
        jobs.append((name, good, arch))
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda job: (job[0], _nvcc(job[1], job[2], tmp_path / f"{job[0]}.cu")), jobs))
    for name, proc in results:
        assert proc.returncode == 0, f"{name}:\n{proc.stderr[-2000:]}"

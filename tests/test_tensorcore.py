"""Tensor-core family without a GPU: every precision renders and compiles with nvcc for sm_80 and sm_90 (both
layouts), inspect shows the tiles the model weighed, and the checks reject what cannot run."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from gemmc.api import front_end
from gemmc.codegen import render_kernel
from gemmc.errors import GemmcError
from gemmc.families.tensorcore.plan import scratch_bytes
from gemmc.passes import run_pipeline

MODES = ["f16", "bf16", "tf32", "split f16 x3 method le", "split f16 x3 method ootomo",
         "split f16 x4 method markidis", "split bf16 x3", "split bf16 x6", "split tf32 x3"]


def planned(text: str):
    prog = run_pipeline(front_end(text), verify=True)
    return prog.kernels[0], prog.target


def schedule(mode: str, arch: str = "sm_90", layout: str = "layout A row, B row, C row",
             gemm: str = "1000 x 999 x 517") -> str:
    # on sm_90 the hopper family takes one GEMM of most precisions (tensorcore/hopper_loop.py): this family's own
    # sm_90 loop is what these tests check
    algo = "\n algorithm tensorcore" if arch == "sm_90" else ""
    return f"target cuda {arch}\nkernel k {{\n dtype f32\n precision {mode}\n {layout}\n gemm {gemm}{algo}\n}}\n"


def test_inspect_shows_candidates_and_the_emulation_verdict():
    k, _ = planned(schedule("split f16 x3", gemm="8192 x 8192 x 8192"))
    lines = "\n".join(k.plan.lines())
    assert "candidate 128x128" in lines and "candidate 64x64" in lines and "ratio 128.0" in lines
    v = k.plan.variant  # 2048 blocks fill 132 SMs: the highest ratio; two warpgroups of 128 x 128 (wgmma)
    assert (v.bm, v.bn, v.wm, v.wn, v.threads) == (256, 128, 128, 128, 256) and k.plan.wgmma
    assert k.plan.wg_n == 128 and k.plan.b_planes == 3  # the split sums at n128; B's hi x 2^11 is a third plane
    assert k.plan.stages == 4 and k.plan.smem_bytes <= 232448  # the deepest pipeline that fits the H100
    ada, _ = planned(schedule("split f16 x3", "sm_89", gemm="8192 x 8192 x 8192"))
    assert not ada.plan.wgmma and ada.plan.pad == 8  # mma.sync and ldmatrix from padded rows elsewhere
    six, _ = planned(schedule("split bf16 x6", "sm_80", gemm="8192 x 8192 x 8192"))
    assert six.plan.variant.wn == 32  # three parts' fragments do not fit 255 registers beside 64x64 accumulators
    one, _ = planned(schedule("f16", gemm="8192 x 8192 x 8192"))
    assert one.plan.wg_n == 128 and one.plan.variant.bk == 64 and one.plan.b_planes == 1  # 256x128: two m64 each
    tf32, _ = planned(schedule("split tf32 x3", gemm="8192 x 8191 x 8192").replace("\n algorithm tensorcore", ""))
    assert not tf32.plan.wgmma  # tf32 off the Hopper TMA loop stays on mma.sync
    assert "not the Hopper TMA loop: the lines of B (8191 f32 per line) are not 16-byte multiples" in tf32.notes[-1]
    assert any(n.startswith("emulation pays") for n in k.notes)
    small, _ = planned(schedule("split f16 x3", gemm="16 x 16 x 8"))
    assert any("does not pay" in n for n in small.notes)


def test_precision_selects_the_family_and_ootomo_is_the_default():
    k, _ = planned(schedule("split f16 x3", "sm_80"))
    assert k.family == "tensorcore" and k.plan.split.method == "ootomo" and k.plan.split.scale_bits == 11
    hopper, _ = planned(schedule("split f16 x3").replace("\n algorithm tensorcore", ""))
    assert hopper.family == "hopper"  # one GEMM on sm_90: the TMA loop streams the pre-pass's planes


@pytest.mark.parametrize(("text", "code"), [
    ("kernel k { dtype f32 algorithm tensorcore gemm 8 x 8 x 8 }", "E202"),
    ("target hip gfx90a\nkernel k { dtype f32 precision split f16 x3 gemm 8 x 8 x 8 }", "E900"),
    ("kernel k { dtype f32 precision f16 algorithm simt gemm 8 x 8 x 8 }", "E202"),
    ("kernel k { dtype f32 precision split f16 x3 algorithm tensorcore pipeline stages 5 gemm 8 x 8 x 8 }", "E202"),
    ("kernel k { dtype f32 precision split f16 x3 algorithm tensorcore pipeline stages 1 gemm 8 x 8 x 8 }", "E202"),
])
def test_rejections(text, code):
    with pytest.raises(GemmcError) as err:
        run_pipeline(front_end(text))
    assert code in str(err.value)


def test_f64_on_the_tensor_core_family_points_elsewhere():
    # A tensor-core precision would not go with f64 data either: the hint names the families that run f64.
    with pytest.raises(GemmcError) as err:
        run_pipeline(front_end("kernel k { dtype f64 algorithm tensorcore gemm 8 x 8 x 8 }"))
    assert err.value.code == "E202" and "use `algorithm simt` for f64" in str(err.value)
    assert "precision f16" not in str(err.value)


def test_stages_from_the_schedule_and_by_fit():
    text = schedule("split f16 x3", gemm="8192 x 8192 x 8192")
    k, _ = planned(text.replace(" dtype f32", " dtype f32\n pipeline stages 3"))
    assert k.plan.stages == 3
    a100, _ = planned(schedule("split f16 x3", "sm_80", gemm="8192 x 8192 x 8192"))
    assert a100.plan.smem_bytes <= 166912 and a100.plan.stages >= 2  # sm_80's 163 KiB per block


def test_scratch_layout_by_hand():
    # 100 x 300 x 50 in 128 x 256 x 32 tiles: mp 128, np 512, kp 64; two f16 parts; regions 256-byte aligned.
    expected = 256 + 2 * 128 * 64 * 2 + 2 * 512 * 64 * 2 + 512 + 2048
    assert scratch_bytes(((100, 300, 50),), 128, 256, 32, 2, 2) == expected
    # Two problems: one 8-byte offset each in the header (256 bytes), then the regions one after another.
    one = scratch_bytes(((1, 1, 1),), 64, 64, 32, 1, 4)
    assert one == 256 + 64 * 32 * 4 * 2 + 256 * 2
    assert scratch_bytes(((1, 1, 1), (1, 1, 1)), 64, 64, 32, 1, 4) == 2 * one - 256


def test_the_standalone_launcher_runs_the_pre_pass():
    k, hw = planned(schedule("split f16 x3", gemm="8192 x 8192 x 8192"))
    text = render_kernel(k, hw).standalone
    assert f"MallocAsync(&scratch, {k.plan.scratch_bytes}, stream)" in text
    assert "_prep<<<dim3(1056), dim3(256), 0, stream>>>" in text and "FreeAsync(scratch, stream)" in text


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_every_split_compiles_for_sm80_and_sm90(tmp_path):
    """sm_80 (mma.sync); sm_90 built for sm_90a (wgmma), and built for plain sm_90 where the kernel is mma.sync
    (tf32). A plain sm_90 build of a wgmma kernel is refused: test_wgmma_needs_sm90a."""
    jobs = []
    for arch in ("sm_80", "sm_90", "sm_90a"):
        for mode in MODES:
            for lay in ("layout A row, B row, C row", "layout A col, B col, C col"):
                if arch == "sm_90a" and "tf32" in mode:
                    continue
                k, hw = planned(schedule(mode, arch.rstrip("a"), lay))
                text = render_kernel(k, hw).standalone
                if arch == "sm_90" and "wgmma.mma_async" in text:
                    continue
                path = tmp_path / f"{arch}_{len(jobs)}.cu"
                # The standalone file: kernel, pre-pass and the host launcher that allocates their scratch.
                path.write_text(text)
                jobs.append((arch, mode, lay, path))

    def compile_one(job):
        arch, mode, lay, path = job
        target = ["-gencode=arch=compute_90a,code=sm_90a"] if arch == "sm_90a" else [f"-arch={arch}"]
        res = subprocess.run(["nvcc", *target, "-std=c++17", "-c", str(path), "-o", str(path) + ".o"],
                             capture_output=True, text=True)
        return job, res

    with ThreadPoolExecutor(8) as pool:
        for (arch, mode, lay, _), res in pool.map(compile_one, jobs):
            assert res.returncode == 0, f"{arch} {mode} {lay}:\n{res.stderr[-2000:]}"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("mode", ["f16", "split f16 x3"])
def test_wgmma_needs_sm90a(mode, tmp_path):
    """The sm_90 kernel holds wgmma in its PTX for compute_90a; built for plain sm_90 (where wgmma does not exist)
    it stops the build with an error that says how to build it, instead of compiling into a kernel that traps."""
    k, hw = planned(schedule(mode, layout="layout A col, B row, C col"))
    src = tmp_path / "k.cu"
    src.write_text(render_kernel(k, hw).source)
    ptx = tmp_path / "k.ptx"
    ok = subprocess.run(["nvcc", "-gencode=arch=compute_90a,code=compute_90a", "-std=c++17", "-ptx", str(src), "-o",
                         str(ptx)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert "wgmma.mma_async" in ptx.read_text() and "fence.proxy.async" in ptx.read_text()
    plain = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-c", str(src), "-o", str(tmp_path / "k.o")],
                           capture_output=True, text=True)
    assert plain.returncode != 0 and "-gencode=arch=compute_90a,code=sm_90a" in plain.stderr


@pytest.mark.parametrize(("mode", "arch", "device_arch", "flag"), [
    ("split f16 x3", "sm_90", "sm_90a", "-gencode=arch=compute_90a,code=sm_90a"),  # wgmma
    ("f16", "sm_90", "sm_90a", "-gencode=arch=compute_90a,code=sm_90a"),
    ("split tf32 x3", "sm_90", "sm_90", "-arch=sm_90"),  # tf32 off the Hopper TMA loop (K 517) stays on mma.sync
    ("split f16 x3", "sm_80", "sm_80", "-arch=sm_80"),
])
def test_device_arch_and_build_flags(mode, arch, device_arch, flag):
    k, hw = planned(schedule(mode, arch))
    r = render_kernel(k, hw)
    assert r.device_arch == device_arch and r.build_flags == (flag,)
    assert ("wgmma.mma_async" in r.source) == device_arch.endswith("a")


def test_wgmma_kernel_on_another_gpu_is_refused_before_compiling(monkeypatch):
    """A kernel planned for sm_90a called on an sm_80 GPU: E303 naming both, not an NVRTC #error."""
    import gemmc.runtime.compile as compile_mod
    from gemmc.ir.hardware import TARGETS

    monkeypatch.setattr(compile_mod, "hardware", lambda: TARGETS["sm_80"])
    k, hw = planned(schedule("split f16 x3"))
    r = render_kernel(k, hw)
    with pytest.raises(GemmcError) as err:
        compile_mod.device_function(r, r.entry)
    text = str(err.value)
    assert "E303" in text and "sm_90a" in text and "target cuda sm_80" in text
    # a GPU gemmc has no target for: no `target` to suggest that the language would refuse (E203)
    monkeypatch.setattr(compile_mod, "hardware", lambda: dataclasses.replace(TARGETS["sm_90"], arch="sm_100"))
    with pytest.raises(GemmcError, match=r"this GPU is sm_100; gemmc has no target for sm_100 yet \(its targets: "
                                         r"sm_80, sm_86, sm_89, sm_90\): run this kernel on an sm_90 GPU") as err:
        compile_mod.device_function(r, r.entry)
    assert "target cuda sm_100" not in str(err.value)


def test_threads_with_tile_auto_restricts_the_tiles():
    """`threads N` without a tile picks among the tiles that run with N threads (it was silently ignored)."""
    k, _ = planned(schedule("split f16 x3", gemm="8192 x 8192 x 8192").replace(" dtype f32", " dtype f32 threads 128"))
    assert k.plan.variant.threads == 128 and all(c.bm * c.bn <= 128 * 128 for c in k.plan.candidates)
    text = schedule("f16").replace(" dtype f32", " dtype f32\n threads 96")
    with pytest.raises(GemmcError) as err:
        planned(text)
    d = err.value.diagnostics[0]
    assert d.code == "E301" and "threads 96" in d.message and d.span.line == 4


def test_ksplit_is_refused_where_the_tensor_core_family_runs_the_kernel():
    """The mma.sync loop splits no K over a cluster: `ksplit` there is E202 at the tile, not a split the kernel
    ignores; the hopper family's loop, named, is its own check's."""
    from gemmc import compile_string

    for target, hint in (("sm_80", "leave out `ksplit`"), ("sm_90", "leave out `ksplit`, or use precision f32 (SIMT)")):
        with pytest.raises(GemmcError, match=r"E202.*ksplit 2 splits K over a thread-block cluster in the SIMT "
                                             r"and hopper families; the tensor-core family's mma.sync loop does not"
                           ) as err:
            compile_string(f"target cuda {target}\nkernel k {{ precision tf32 tile 128x128x32 ksplit 2 "
                           "gemm 1024 x 1024 x 1024 }")
        (d,) = err.value.diagnostics
        assert d.hint == hint  # sm_80 has no clusters: the SIMT family's ksplit would be E900 there

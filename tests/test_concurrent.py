"""Concurrent groups without a GPU: the group form and its errors, the share plans and the features, the
predictor's inference against its training script, the mode choice, and the C++ launcher (CUDA and HIP)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import gemmc
from gemmc.api import front_end
from gemmc.bench.concurrent_train import acceptable, evaluate, targets
from gemmc.concurrent import predictor
from gemmc.concurrent.features import FEATURE_NAMES, features, plan_for_share
from gemmc.concurrent.plan import (
    MAX_AUTO_DEGREE,
    copies,
    fit_degree,
    go_candidates,
    go_degree,
    tuned_degree,
)
from gemmc.concurrent.table3 import TABLE3, gemm_set
from gemmc.errors import GemmcError
from gemmc.families.simt import FUSED_MARGIN
from gemmc.ir.group import DEGREES, Mode
from gemmc.ir.types import Layout

ROOT = Path(__file__).resolve().parent.parent
NVCC = shutil.which("nvcc")
HIPCC = shutil.which("hipcc")

GROUP = """
group layer {
  concurrency streams 4
  layout B col
  gemm q 2048 x 1024 x 1024
  gemm dw 1024 x 1024 x 2048 { layout A col, B row }
  gemm y 512 x 256 x 128 copies 3
}
"""


def errors_of(text: str) -> str:
    with pytest.raises(GemmcError) as info:
        gemmc.compile_string(text, filename="g.gs")
    return info.value.render()


def test_members_inherit_defaults_and_override_them():
    prog = front_end(GROUP)
    (g,) = prog.groups
    assert g.members == ("layer_q", "layer_dw", "layer_y_0", "layer_y_1", "layer_y_2")
    assert (g.mode, g.streams) == (Mode.STREAMS, 4)
    kernels = {k.name: k for k in prog.kernels}
    assert kernels["layer_q"].layout_b is Layout.COL
    assert (kernels["layer_dw"].layout_a, kernels["layer_dw"].layout_b) == (Layout.COL, Layout.ROW)
    assert [(p.m, p.n, p.k) for p in kernels["layer_y_2"].problems] == [(512, 256, 128)]
    assert g.span.line == 2 and g.mode_span.line == 3


@pytest.mark.parametrize("spelling, mode, streams", [("auto", Mode.AUTO, None), ("sequential", Mode.SEQUENTIAL, None),
                                                     ("fused", Mode.FUSED, None), ("streams 8", Mode.STREAMS, 8)])
def test_every_concurrency_spelling(spelling, mode, streams):
    (g,) = front_end(f"group g {{ concurrency {spelling} gemm a 8 x 8 x 8 gemm b 8 x 8 x 8 "
                     "gemm c 8 x 8 x 8 copies 8 }").groups
    assert (g.mode, g.streams) == (mode, streams)


def test_a_dependent_gemm_cannot_be_written():
    # operands are never named: there is no way to say that b reads a's output
    assert "error[E101]: unknown statement 'input'" in errors_of("group g { gemm a 8 x 8 x 8 gemm b 8 x 8 x 8 "
                                                                 "{ input a } }")


def test_too_many_streams_is_refused_at_its_line():
    text = "group g {\n  concurrency streams 40\n  gemm a 8 x 8 x 8\n}\n"
    assert errors_of(text) == (
        "g.gs:2:23: error[E301]: streams 40 exceeds the 32 hardware work queues a GPU runs at once\n"
        "      concurrency streams 40\n"
        "                          ^^\n"
        "hint: use at most 32 streams")


def test_too_many_gemms_is_refused_at_the_group():
    out = errors_of("group big { gemm a 8 x 8 x 8 copies 129 }")
    assert "g.gs:1:7: error[E301]: group 'big' has 129 GEMMs; a group runs at most 128" in out


def test_a_member_over_the_resource_limits_is_refused_at_its_line():
    out = errors_of("group g {\n  gemm a 64 x 64 x 64\n  gemm b 64 x 64 x 64 { tile 256x256x64 }\n}\n")
    assert "g.gs:3:25: error[E30" in out


def test_group_errors_are_all_reported():
    out = errors_of("group g {\n concurrency streams\n gemm a 8 x 8 x 8\n gemm a 8 x 8 x 8\n"
                    " gemm b 8 x 8 x 8 { batch { p 1 x 1 x 1 } }\n alpha runtime\n}\n")
    assert "2:2: error[E202]: concurrency streams needs the number of streams" in out
    assert "4:7: error[E200]: member 'a' is defined twice in group 'g'" in out
    assert "5:21: error[E202]: member 'b' has its size on its `gemm` line" in out
    assert out.count("6:2: error[E900]: a group bakes alpha") == 1


def test_a_group_member_needs_a_name():
    assert "g.gs:1:16: error[E100]: expected a name, found a number '8'" in errors_of("group g { gemm 8 x 8 x 8 }")


def test_member_names_may_not_collide_with_kernels():
    out = errors_of("kernel g_a { gemm 8 x 8 x 8 }\ngroup g { gemm a 8 x 8 x 8 }")
    assert "error[E200]: group member 'g_a' has the name of another kernel" in out


def test_unknown_concurrency_suggests_the_spellings():
    out = errors_of("group g { concurrency parallel gemm a 8 x 8 x 8 }")
    assert "error[E204]: unknown concurrency 'parallel'" in out and "auto, sequential, streams, fused" in out


def test_share_plans_take_larger_tiles_and_features_count_them():
    prog = gemmc.compile_string("group g { gemm a 4096 x 256 x 1024 }")
    hw = prog.target
    member = prog["g_a"].ir
    shares = tuple(plan_for_share(member, hw, s) for s in (1, 2, 4))
    assert shares[2].name == "g_a_share4"
    blocks = [k.work.blocks for k in shares]
    assert blocks[0] >= blocks[1] >= blocks[2]  # fewer SMs: the uniform rule takes larger tiles, fewer blocks
    x = features(member, shares, hw)
    assert len(x) == len(FEATURE_NAMES) == 15
    assert x[:6] == (12.0, 8.0, 10.0, 0.0, 0.0, 0.0)
    assert x[6] == np.log2(blocks[0]).round(6)
    # the group plan carries the same features
    assert prog.groups[0].group_plan.choices[0].features == x


def test_go_candidates_are_distinct_and_start_with_the_model():
    group = gemmc.compile_string("group g { gemm a 4096 x 256 x 1024 }").groups[0]
    member = group.members[0]
    found = go_candidates(member.ir, group.group_plan.choices[0], member.target)
    assert found[0][0] == "model (all SMs)" and found[0][1] is member.ir
    assert 2 <= len(found) <= 6
    sources = {gemmc.CompiledKernel(ir, member.target, "").rendered.source.replace(ir.name, "X") for _, ir in found}
    assert len(sources) == len(found)


def test_fused_needs_one_dtype_and_layout():
    mixed = gemmc.compile_string("group g { gemm a 64 x 64 x 64 gemm b 64 x 64 x 64 { layout B col } }").groups[0]
    assert mixed.group_plan.fused is None
    same = gemmc.compile_string("group g { gemm a 64 x 64 x 64 gemm b 32 x 48 x 16 }").groups[0]
    fused = same.group_plan.fused
    assert fused is not None and [(p.name, p.m) for p in fused.problems] == [("a", 64), ("b", 32)]
    forced = gemmc.compile_string("group g { concurrency fused gemm a 64 x 64 x 64 "
                                  "gemm b 64 x 64 x 64 { dtype f64 } }").groups[0]
    assert forced.mode is Mode.STREAMS and "falls back to streams" in forced.plan


def test_with_mode_refuses_what_the_group_cannot_run_with_the_reason_first():
    mixed = gemmc.compile_string("group g { gemm a 64 x 64 x 64 gemm b 64 x 64 x 64 { layout B col } }").groups[0]
    with pytest.raises(gemmc.GemmcError, match=r"group g cannot run fused: fused needs one layout B for every "
                                               r"member; a has row, b col"):
        mixed.with_mode("fused")
    with pytest.raises(gemmc.GemmcError, match="unknown mode 'parallel'; expected one of sequential, streams, fused$"):
        mixed.with_mode("parallel")
    assert mixed.with_mode("sequential").mode is Mode.SEQUENTIAL and mixed.with_mode(Mode.STREAMS, 2).degree == 2


def test_tuned_degree_rounds_down():
    assert [tuned_degree(n) for n in (1, 2, 3, 5, 8, 15, 16, 40)] == [1, 2, 2, 4, 8, 8, 16, 16]


def fake_model(degree_of_log2m) -> predictor.Predictor:
    """A predictor whose class grows with log2 M: weights favour class c where log2 M (normalised over 6..14) is
    near c/4."""
    f, c = len(FEATURE_NAMES), len(DEGREES)
    w = np.zeros((f, c))
    w[0] = [0.0, 10.0, 20.0, 30.0, 40.0]
    b = -np.array([0.0, 10.0, 20.0, 30.0, 40.0]) * np.array([0, 0.5, 1.0, 1.5, 2.0]) * 0.5
    return predictor.Predictor("fake", "sm_90", FEATURE_NAMES, (6.0,) + (0.0,) * (f - 1), (14.0,) + (1.0,) * (f - 1),
                               tuple(map(tuple, w)), tuple(b))


def test_auto_chooses_by_the_models(monkeypatch):
    model = fake_model(None)
    monkeypatch.setattr(predictor, "load", lambda arch, key="": model)
    for text in ("group g { gemm a 16384 x 64 x 64 copies 4 }",  # fused allowed
                 "group g { gemm a 16384 x 64 x 64 gemm b 2048 x 64 x 64 { layout B col } }"):  # not
        group = gemmc.compile_string(text).groups[0]
        plan = group.group_plan
        assert [c.predicted for c in plan.choices] == [model.predict(c.features) for c in plan.choices]
        taken = [c.predicted if copies(members(group), i) > 1 else fit_degree(group.members[i].ir, group.target)
                 for i, c in enumerate(plan.choices)]
        assert [c.degree for c in plan.choices] == taken
        degree = tuned_degree(min(min(taken), len(plan.choices), MAX_AUTO_DEGREE))
        estimates = dict(plan.estimates_us)
        if plan.fused is not None and estimates["fused"] <= FUSED_MARGIN * estimates["sequential"]:
            assert plan.mode is Mode.FUSED
        else:
            assert (plan.mode, plan.degree) == ((Mode.STREAMS, degree) if degree > 1 else (Mode.SEQUENTIAL, 1))
        assert "predictor" in plan.notes[0]


def members(group) -> list:
    return [k.ir for k in group.members]


def test_a_gemm_without_copies_takes_the_fit_rule(monkeypatch):
    """A GEMM with no copies in its group runs its own kernel beside the others (go_degree 1), so its degree is how
    many copies of its launch fit the GPU, not the predictor's (trained on copies running GO-kernels); GEMMs with
    copies keep the predictor's. The bf16 dX/dW pair of a Transformer projection (each about one wave) runs one
    after another: on the H100 that is 32.4 us, 2 at once 34.6 us
    (bench/results/concurrent/2026-11-27_h100_bf16.json)."""
    model = fake_model(None)
    monkeypatch.setattr(predictor, "load", lambda arch, key="": model)
    group = gemmc.compile_string("group g { dtype bf16 gemm q 4096 x 64 x 1024 copies 2 gemm dx 4096 x 1024 x 1024 "
                                 "{ layout B col } gemm dw 1024 x 1024 x 4096 { layout A col } }").groups[0]
    plan = group.group_plan
    by_name = {c.member: c for c in plan.choices}
    assert not by_name["g_q_0"].fit and by_name["g_q_0"].degree == by_name["g_q_0"].predicted
    for name in ("g_dx", "g_dw"):
        c = by_name[name]
        assert c.fit and c.degree == fit_degree(next(k.ir for k in group.members if k.name == name), group.target)
    assert by_name["g_dx"].degree == 1 and (plan.mode, plan.degree) == (Mode.SEQUENTIAL, 1)
    assert any("(fit)" in n for n in plan.notes) and "takes 1 (copies of its own launch" in group.plan
    pair = gemmc.compile_string("group g { concurrency auto dtype bf16 gemm dx 4096 x 1024 x 1024 { layout B col } "
                                "gemm dw 1024 x 1024 x 4096 { layout A col } }").groups[0].group_plan
    assert (pair.mode, pair.degree) == (Mode.SEQUENTIAL, 1)


def test_auto_runs_at_most_eight_at_once(monkeypatch):
    """16 copies that the predictor gives 16P run 8 at once (MAX_AUTO_DEGREE: 16 at once never beat 8 measured);
    `concurrency streams 16` still runs 16."""
    sixteen = predictor.Predictor("fake", "sm_90", FEATURE_NAMES, (0.0,) * len(FEATURE_NAMES),
                                  (1.0,) * len(FEATURE_NAMES), ((0.0,) * len(DEGREES),) * len(FEATURE_NAMES),
                                  (0.0, 0.0, 0.0, 0.0, 1.0))
    monkeypatch.setattr(predictor, "load", lambda arch, key="": sixteen)
    group = gemmc.compile_string("group g { dtype bf16 gemm a 2048 x 1024 x 1024 copies 16 }").groups[0]
    plan = group.group_plan
    assert {c.predicted for c in plan.choices} == {16} and MAX_AUTO_DEGREE == 8
    assert (plan.mode, plan.degree) == (Mode.STREAMS, 8)
    forced = gemmc.compile_string("group g { concurrency streams 16 dtype bf16 gemm a 2048 x 1024 x 1024 copies 16 }")
    assert forced.groups[0].group_plan.degree == 16


def test_go_degree_counts_copies():
    prog = gemmc.compile_string("group g { gemm a 64 x 64 x 64 copies 4 gemm b 64 x 64 x 32 gemm c 64 x 64 x 64 }")
    members = [k.ir for k in prog.groups[0].members]
    assert [go_degree(members, i, 8) for i in range(len(members))] == [4, 4, 4, 4, 1, 4]
    assert [go_degree(members, i, 2) for i in range(len(members))] == [2, 2, 2, 2, 1, 2]


def test_softmax_fit_separates_separable_classes():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(200, 3))
    y = np.minimum((X[:, 0] * 5).astype(int), 4)
    W, b, lo, hi = predictor.fit(X, y, l2=0.0, steps=6000, rate=2.0)
    model = predictor.Predictor("t", "t", ("a", "b", "c"), tuple(lo), tuple(hi), tuple(map(tuple, W)), tuple(b))
    assert np.mean([DEGREES.index(model.predict(x)) == t for x, t in zip(X, y, strict=True)]) > 0.9


@pytest.mark.parametrize("key", predictor.STORAGE)
def test_shipped_predictor_matches_its_training_script(key):
    """Inference on the rows the training script recorded gives the classes the script's own model gave them, and
    refitting the recorded rows with the script's settings gives the shipped weights (each storage's model)."""
    shipped = predictor.model_path("sm_90", key)
    if not shipped.exists():
        pytest.skip(f"no predictor trained for sm_90 {key}")
    data = json.loads(shipped.read_text())
    model = predictor.load("sm_90", key)
    assert model is not None and model.features == FEATURE_NAMES
    for row in data["rows"]:
        assert model.predict(row["features"]) == row["predicted"], row["gemm"]
    X = np.array([r["features"] for r in data["rows"]])
    assert all(r["label"] in r["acceptable"] for r in data["rows"])
    W, b, lo, hi = predictor.fit(X, targets([r["acceptable"] for r in data["rows"]]))
    assert np.allclose(W, data["weights"]) and np.allclose(b, data["bias"])
    assert np.allclose(lo, data["x_min"]) and np.allclose(hi, data["x_max"])


def test_right_answers_are_the_degrees_within_5pct_of_the_oracle():
    def s(*v):
        return {str(d): x for d, x in zip(DEGREES, v, strict=True)}

    assert acceptable(s(1.0, 1.5, 2.0, 1.95, 1.7)) == [4, 8]  # 1.9 or more of the best 2.0
    assert acceptable(s(1.0, 1.5, 2.0, 1.95, 1.7), up_to=2) == [2]  # a group of 2: degrees 1 and 2 only
    assert acceptable(s(1.0, 1.02, 1.04, 0.96, 0.9)) == [1, 2, 4, 8]  # no gain of 5%: the oracle is sequential's 1.0
    assert targets([[4, 8], [1]]).tolist() == [[0, 0, 1, 1, 0], [1, 0, 0, 0, 0]]
    rows = [{"app": "a", "features": [0.0], "speedup": s(1.0, 1.5, 2.0, 1.95, 1.7)},
            {"app": "a", "features": [1.0], "speedup": s(1.0, 1.0, 0.9, 0.8, 0.7)}]

    class Always:
        def __init__(self, degree: int):
            self.degree = degree

        def predict(self, x):
            return self.degree

    report = evaluate(Always(8), rows)
    assert report["D=16"]["within_5pct_of_oracle"] == 0.5  # right on the first GEMM, 20% slow on the second
    assert report["D=16"]["constant_degree_within_5pct"] == {"1": 0.5, "2": 0.5, "4": 0.5, "8": 0.5, "16": 0.0}
    assert report["D=2"]["constant_degree_within_5pct"]["16"] == 1.0  # clamped to 2: right on both (1.0 ties 1S)


def test_table3_set_matches_the_papers_ranges():
    gemms = gemm_set()
    assert {g.app for g in gemms} == set(TABLE3)
    assert min(g.m * g.n for g in gemms) == 32768 and max(g.m * g.n for g in gemms) == 168427520  # "32K-168M"
    assert min(g.k for g in gemms) == 64 and max(g.k for g in gemms) == 20560  # "64-20K"
    assert len({g.key for g in gemms}) == len(gemms)


def compile_group(tmp_path: Path, text: str, target: str) -> Path:
    from gemmc.cli import main

    out = tmp_path / target
    assert main(["compile", str(_write(tmp_path, text)), "-o", str(out), "--target", target]) == 0
    return out


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "g.gs"
    path.write_text(text)
    return path


LAUNCHED = "group pair { concurrency streams 2 gemm a 100 x 64 x 48 copies 2 gemm b 64 x 32 x 16 { layout A col } }"


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_group_launcher_compiles_with_nvcc(tmp_path):
    out = compile_group(tmp_path, LAUNCHED, "sm_90")
    src = (out / "pair.cu").read_text()
    assert src.count("\nnamespace gemmc_pair_k") == 2  # the copies share one kernel
    assert "cudaStreamWaitEvent" in src and "cudaMemcpy" not in src  # capturable: no host-to-device copy
    proc = subprocess.run([NVCC, "-arch=sm_90", "-std=c++17", "-c", str(out / "pair.cu"), "-o",
                           str(tmp_path / "pair.o")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]


@pytest.mark.skipif(HIPCC is None, reason="hipcc is not installed (Debian package hipcc)")
def test_group_launcher_compiles_with_hipcc(tmp_path, monkeypatch):
    monkeypatch.setenv("HIP_PLATFORM", "amd")
    out = compile_group(tmp_path, LAUNCHED, "hip")
    assert "hipStreamWaitEvent" in (out / "pair.hip").read_text()
    proc = subprocess.run([HIPCC, "--offload-arch=gfx90a", "--genco", "-std=c++17", str(out / "pair.hip"), "-o",
                           str(tmp_path / "pair.o")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_cpp_predictor_table_agrees_with_numpy(tmp_path, monkeypatch):
    """The generated C++ computes the group's degree from its table as the Python planner does (run on the host:
    the degree function touches no GPU)."""
    model = fake_model(None)
    monkeypatch.setattr(predictor, "load", lambda arch, key="": model)
    text = ("group mix { concurrency auto gemm a 16384 x 64 x 64 copies 2 gemm b 4096 x 64 x 64 "
            "gemm c 1024 x 64 x 64 { layout B col } }")
    group = gemmc.compile_string(text).groups[0]
    expected = tuned_degree(min(min(c.degree for c in group.group_plan.choices), 4, MAX_AUTO_DEGREE))
    assert any(c.fit for c in group.group_plan.choices)  # b and c have no copies: the C++ takes their fit degrees
    out = compile_group(tmp_path, text, "sm_90")
    main = tmp_path / "main.cu"
    main.write_text('#include <cstdio>\n#include "mix.h"\nint main() { std::printf("%d\\n", gemmc_mix_degree()); }\n')
    exe = tmp_path / "degree"
    proc = subprocess.run([NVCC, "-arch=sm_90", "-std=c++17", "-I", str(out), str(main), str(out / "mix.cu"), "-o",
                           str(exe)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    if group.mode is Mode.FUSED:
        return  # a fused group runs one launch; its C++ has no degree to compute
    run = subprocess.run([str(exe)], capture_output=True, text=True)
    assert run.returncode == 0 and int(run.stdout) == expected


def test_inspect_shows_the_group(tmp_path, capsys):
    from gemmc.cli import main

    assert main(["inspect", str(_write(tmp_path, GROUP))]) == 0
    shown = capsys.readouterr().out
    assert "group layer: 5 GEMMs, concurrency streams 4" in shown
    assert "runs: streams: 4 at once on side streams" in shown
    assert "layer_q: degree" in shown and "features" in shown


def test_example_group_golden(golden):
    """The example group's plan text and C++ launcher, reviewed like code when they change."""
    prog = gemmc.compile_file(ROOT / "examples" / "concurrent_pair.gs")
    group = prog["pair"]
    golden("groups/concurrent_pair.txt", group.plan + "\n")
    golden("groups/concurrent_pair.cu", group.rendered.source)
    golden("groups/concurrent_pair.h", group.rendered.header)


BF16 = "group g { concurrency auto dtype bf16 gemm a 4096 x 64 x 1024 copies 4 gemm b 2048 x 1024 x 1024 }"


FUSED_BF16 = ("target cuda sm_90\ngroup f { concurrency fused dtype bf16 layout B col gemm a 256 x 128 x 64 "
              "gemm b 1000 x 72 x 136 copies 3 }")


def test_bf16_fused_is_one_grouped_list_launch():
    """bf16 members fuse into one `grouped list` kernel of the hopper_grouped family, a problem per member."""
    group = gemmc.compile_string(FUSED_BF16).groups[0]
    plan = group.group_plan
    assert plan.mode is Mode.FUSED and plan.fused is not None
    fused = plan.fused
    assert fused.family == "hopper_grouped" and fused.dynamic is not None
    assert fused.dynamic.grouping.value == "list" and fused.dynamic.max_groups == 4
    assert (fused.dtype.value, fused.layout_b) == ("bf16", Layout.COL)
    assert "runs: fused: one launch of kernel f_fused" in group.plan


ATTENTION = " ".join(f"gemm q{s} {s} x {s} x 64 gemm v{s} {s} x 64 x {s}" for s in (128, 256, 384, 512))


@pytest.mark.parametrize("members, bn", [("gemm a 8192 x 1024 x 1024 copies 3", 256),
                                         ("gemm a 4096 x 128 x 1024 copies 16", 128),
                                         ("gemm a 512 x 1024 x 1024 copies 16", 256), (ATTENTION, 128)])
def test_bf16_fused_tile_n_by_the_waves_model(members, bn):
    """The fused list kernel's tile N: the faster of 128 and 256 as measured on these four groups run as one list
    (bench/results/dynamic/2026-11-27_h100_list-tile-n.json)."""
    group = gemmc.compile_string(f"group g {{ concurrency fused dtype bf16 {members} }}").groups[0]
    assert group.group_plan.fused is not None and group.group_plan.fused.plan.bn == bn
    assert f"tile N {bn} by the waves model over the members' tiles" in group.plan


@pytest.mark.parametrize("text, why", [
    ("dtype bf16 gemm a 97 x 128 x 251 gemm b 64 x 64 x 64", "member a's A lines are 251 elements (502 bytes), not a "
     "multiple of 8 elements (16 bytes): pad them to 256"),
    ("dtype bf16 gemm a 96 x 130 x 64 gemm b 64 x 64 x 64", "member a's B lines are 130 elements"),
    ("dtype bf16 gemm a 64 x 64 x 64 { algorithm simt } gemm b 64 x 64 x 64",
     "fused runs members of one family as one launch; a is simt, b hopper"),
    ("dtype bf16 gemm a 64 x 64 x 64 { layout A col } gemm b 64 x 64 x 64",
     "fused needs one layout A for every member; a has col, b row"),
    ("dtype bf16 layout A col gemm a 64 x 64 x 64 gemm b 64 x 64 x 64", "it reads A and writes C row-major"),
    ("dtype bf16 gemm a 64 x 64 x 64 gemm b 64 x 64 x 64 { dtype f16 }", "fused needs one dtype for every member"),
    ("dtype bf16 gemm a 64 x 64 x 64 gemm b 64 x 64 x 64 { beta 1.0 }", "fused needs one beta for every member"),
])
def test_bf16_fused_falls_back_to_streams_and_says_why(text, why):
    group = gemmc.compile_string(f"target cuda sm_90\ngroup f {{ concurrency fused {text} }}").groups[0]
    assert group.group_plan.fused is None and group.group_plan.mode is Mode.STREAMS
    line = group.group_plan.fallback_span.line  # the member's (or the group's) line, as `gemmc compile` says it
    assert line == 2 and f"concurrency fused falls back to streams (line {line}): " in group.plan, group.plan
    assert why in group.plan, group.plan


@pytest.mark.parametrize("text, why", [
    ("precision tf32 gemm a 64 x 64 x 64 gemm b 64 x 64 x 32",
     "fused runs simt members as one simt launch; hopper members as one hopper_grouped launch; a, b are tensorcore"),
    ("gemm a 64 x 64 x 64 { tile 32x32x8 } gemm b 64 x 64 x 32",
     "fused needs one tile for every member; a has 32x32x8, b auto"),
])
def test_f32_fused_falls_back_to_streams_and_says_why(text, why):
    """Members of a family no family fuses, and SIMT members of different knobs: streams, with the reason."""
    group = gemmc.compile_string(f"target cuda sm_80\ngroup f {{ concurrency fused {text} }}").groups[0]
    assert group.group_plan.fused is None and group.group_plan.mode is Mode.STREAMS
    assert group.group_plan.fallback.startswith(why), group.group_plan.fallback


@pytest.mark.parametrize("target, lines, at", [
    ("sm_90", ["dtype bf16", "gemm b 64 x 64 x 64", "gemm a 97 x 128 x 251"], "gemm a 97 x 128 x 251"),
    ("sm_90", ["dtype bf16", "gemm a 64 x 64 x 64 { algorithm simt }", "gemm b 64 x 64 x 64"], "algorithm simt"),
    ("sm_90", ["dtype bf16", "gemm a 64 x 64 x 64 { layout A col }", "gemm b 64 x 64 x 64"], "layout A col"),
    ("sm_90", ["dtype bf16", "gemm a 64 x 64 x 64", "gemm b 64 x 64 x 64 { dtype f16 }"], "dtype f16"),
    ("sm_90", ["dtype bf16", "gemm a 64 x 64 x 64", "gemm b 64 x 64 x 64 { beta 1.0 }"], "beta 1.0"),
    ("sm_80", ["gemm a 64 x 64 x 64 { tile 32x32x8 }", "gemm b 64 x 64 x 32"], "tile 32x32x8"),
    ("sm_80", ["gemm a 64 x 64 x 64", "gemm b 64 x 64 x 32 { threads 128 }"], "threads 128"),
    ("sm_90", ["dtype bf16", "layout A col", "gemm a 64 x 64 x 64", "gemm b 64 x 64 x 64"], "layout A col"),
    ("sm_80", ["precision tf32", "gemm a 64 x 64 x 64", "gemm b 64 x 64 x 32"], "precision tf32"),
    ("sm_90", ["precision bf16", "gemm a 64 x 64 x 64", "gemm b 64 x 64 x 32"], "precision bf16"),
    ("sm_90", ["dtype bf16", "gemm a 64 x 64 x 64 copies 1"], "concurrency fused"),
])
def test_a_fused_fallback_points_at_the_member_that_is_the_reason(target, lines, at):
    """GroupPlan.fallback_span (the `gemmc compile` note's location): the statement or `gemm` line of the member
    whose knob or size keeps the group from one launch; the group's statement that every member takes where that
    is the reason; the `concurrency fused` line where no statement is (one GEMM)."""
    text = "\n".join([f"target cuda {target}", "group f {", "  concurrency fused", *(f"  {x}" for x in lines), "}"])
    plan = gemmc.compile_string(text).groups[0].group_plan
    assert plan.fused is None and plan.fallback
    span = plan.fallback_span
    assert text.split("\n")[span.line - 1][span.column - 1:].startswith(at), (span, plan.fallback)


def test_auto_fuses_bf16_gemms_that_each_fill_at_most_half_the_sms():
    """No cost model estimates the list kernel: auto fuses where every GEMM alone fills at most half the SMs in
    128x128 tiles (the measured rule, hopper_grouped calibration FUSE_SHARE), and runs streams otherwise."""
    small = gemmc.compile_string(f"group g {{ dtype bf16 {ATTENTION} }}").groups[0]
    assert small.group_plan.mode is Mode.FUSED and "fused: every GEMM alone fills at most 1/2" in small.plan
    edge = gemmc.compile_string("group g { dtype bf16 gemm a 1024 x 1056 x 512 copies 4 }").groups[0]  # 8 x 9 tiles
    assert edge.group_plan.mode is not Mode.FUSED and "(72 tiles of 128x128, more than 66)" in edge.plan


def test_bf16_fused_off_sm90_is_the_simt_batch():
    """Without the grouped TMA + wgmma loop (sm_80) bf16 members are SIMT kernels, which fuse as f32 members do."""
    group = gemmc.compile_string(FUSED_BF16.replace("sm_90", "sm_80")).groups[0]
    assert group.group_plan.fused is not None and group.group_plan.fused.family == "simt"


def test_bf16_fused_plans_its_own_knobs():
    """The members' `pipeline stages` and `tile` lines are their own kernels'; the list kernel plans its own."""
    plain = gemmc.compile_string(FUSED_BF16).groups[0].group_plan.fused
    knobs = gemmc.compile_string(FUSED_BF16.replace("concurrency fused", "concurrency fused pipeline stages 3 "
                                                    "tile 128x256x64")).groups[0].group_plan.fused
    assert plain is not None and knobs is not None
    assert (knobs.plan.stages, knobs.plan.bn) == (plain.plan.stages, plain.plan.bn) == (6, 128)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_bf16_fused_launcher_compiles_with_nvcc(tmp_path, golden):
    """The fused group's C++: the list kernel with its own launcher (static), a problem table filled per call from
    the schedule's sizes and the call's pointers, the tile counters zeroed in a stream-ordered allocation: no
    host-to-device copy, so a graph can capture it."""
    out = compile_group(tmp_path, FUSED_BF16, "sm_90")
    src = (out / "f.cu").read_text()
    golden("groups/fused_bf16.cu", src)
    assert "cudaMemcpy" not in src and "cudaMemsetAsync(workspace, 0, workspace_bytes, stream)" in src
    assert "{ 1000, 72, 136, 136, 136, 72 }," in src  # b's sizes and leading dimensions (B column-major)
    assert 'extern "C" cudaError_t gemmc_f_k0' not in src and "static cudaError_t gemmc_f_k0(" in src
    assert "16-byte aligned (cudaErrorInvalidValue otherwise)" in (out / "f.h").read_text()
    proc = subprocess.run([NVCC, "-gencode=arch=compute_90a,code=sm_90a", "-std=c++17", "-Werror", "all-warnings",
                           "-c", str(out / "f.cu"), "-o", str(tmp_path / "f.o")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]


def test_bf16_members_run_hopper_kernels_capped_to_their_share(monkeypatch):
    """bf16 members plan on the hopper family; their GO-kernels for 1/2 and 1/4 of the SMs cap the persistent grid
    to that share; a member fills more than half the SMs alone, so auto does not fuse them and says why."""
    group = gemmc.compile_string(BF16).groups[0]
    plan = group.group_plan
    assert {k.ir.family for k in group.members} == {"hopper"}
    assert plan.fused is not None and plan.mode is not Mode.FUSED
    assert "not fused: a GEMM alone fills more than 1/2 of the 132 SMs (128 tiles of 128x128" in group.plan
    sms = group.target.sm_count
    for share in (2, 4):
        k = plan.share_kernel("g_a_0", share)
        assert k is not None and k.plan.sm_cap == sms // share
        assert k.work.grid[0] <= sms // share and "grid capped" in k.plan.lines()[1]
        assert any("persistent grid capped" in n for n in k.notes)
    assert group.members[0].ir.plan.sm_cap == 0  # the isolated kernel takes every SM of the device


def test_bf16_members_take_the_bf16_model():
    """bf16 members are predicted by the model trained on bf16 measurements, f32 members by the f32 one."""
    group = gemmc.compile_string(BF16.replace("gemm b", "gemm c 512 x 256 x 128 { dtype f32 } gemm b")).groups[0]
    half, single = predictor.load("sm_90", "half"), predictor.load("sm_90")
    if half is None or single is None:
        pytest.skip("no predictors trained for sm_90")
    for c, k in zip(group.group_plan.choices, group.members, strict=True):
        assert c.predicted == (half if k.ir.dtype.half else single).predict(c.features), k.name
    assert half.source in group.group_plan.model and single.source in group.group_plan.model


def test_without_a_model_a_member_runs_as_many_copies_as_fit(monkeypatch):
    """No predictor trained for bf16 on sm_90: each member's degree is how many copies of its launch fit the GPU at
    once (a 32-tile persistent grid: 4 on 132 SMs; a 128-tile one: 1), and the group runs the smallest."""
    real = predictor.load
    monkeypatch.setattr(predictor, "load", lambda arch, key="": None if key else real(arch))
    group = gemmc.compile_string(BF16).groups[0]
    plan = group.group_plan
    degrees = {c.member: c.predicted for c in plan.choices}
    assert degrees["g_a_0"] == fit_degree(group.members[0].ir, group.target) == 4
    assert degrees["g_b"] == 1 and (plan.mode, plan.degree) == (Mode.SEQUENTIAL, 1)
    assert "none trained for bf16 storage" in plan.model


MIXED_LAUNCHED = ("group mix { concurrency streams 2 dtype bf16 gemm q 256 x 384 x 192 copies 2 "
                  "gemm o 130 x 131 x 129 { layout A col } gemm f 100 x 64 x 48 { dtype f32 } }")


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_bf16_group_launcher_compiles_with_nvcc(tmp_path):
    """A group with hopper members and an f32 one: the hopper kernels bring their launchers (static, tensor maps
    encoded from the call's host pointers), and the whole file builds for sm_90a."""
    out = compile_group(tmp_path, MIXED_LAUNCHED, "sm_90")
    src = (out / "mix.cu").read_text()
    assert "cuTensorMapEncodeTiled" in src and 'extern "C" cudaError_t gemmc_mix_k' not in src
    assert "if (sms > 66) sms = 66;" in src  # the copies' GO-kernel for half of the SMs
    assert "-lcuda" in (out / "mix.h").read_text()
    proc = subprocess.run([NVCC, "-gencode=arch=compute_90a,code=sm_90a", "-std=c++17", "-c", str(out / "mix.cu"),
                           "-o", str(tmp_path / "mix.o")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_group_of_tma_members_allocates_no_pointer_table(tmp_path):
    """Every member encodes its tensor maps from the host pointers: the launcher allocates and fills no device table
    of pointers, and builds without warnings."""
    out = compile_group(tmp_path, "group tma { concurrency streams 2 dtype bf16 gemm q 256 x 384 x 192 copies 2 "
                        "gemm o 136 x 128 x 64 { layout B col } }", "sm_90")
    src = (out / "tma.cu").read_text()
    launcher = src.split('extern "C" cudaError_t gemmc_tma(')[1]
    assert "MallocAsync" not in launcher and "fill<<<" not in launcher and "__global__ void fill(" not in src
    proc = subprocess.run([NVCC, "-gencode=arch=compute_90a,code=sm_90a", "-std=c++17", "-Werror", "all-warnings",
                           "-c", str(out / "tma.cu"), "-o", str(tmp_path / "tma.o")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]


def test_inspect_names_the_predictor_features_in_their_order():
    from gemmc.concurrent.features import FEATURE_NAMES
    from gemmc.ir.group import SHARES, _features

    assert len(FEATURE_NAMES) == 6 + 3 * len(SHARES)
    assert FEATURE_NAMES[:6] == ("log2 M", "log2 N", "log2 K", "A col", "B col", "C col")
    assert FEATURE_NAMES[6:9] == ("log2 blocks (1/1 SMs)", "blocks/SM (1/1 SMs)", "log2 waves (1/1 SMs)")
    text = _features(tuple(float(i) for i in range(len(FEATURE_NAMES))))
    assert text.startswith("log2 M, N, K 0 1 2; column-major A, B, C 3 4 5; all SMs: log2 blocks 6, blocks/SM 7, "
                           "log2 waves 8; 1/2 of the SMs: log2 blocks 9")


def test_bf16_fused_reads_each_array_once_a_call(monkeypatch):
    """A fused bf16 group's call reads each array's metadata once (concurrent.run_group's describe): the key, the
    independence and member checks, and the grouped list's table (problem_table's `infos`) are made of it; the
    members' checks run every call, so a view of another shape at a known address is refused."""
    from types import SimpleNamespace

    from gemmc.runtime import concurrent
    from gemmc.runtime.args import describe
    from gemmc.runtime.dynamic_list import problem_table
    from tests.test_args import FakeTensor, TorchDtype

    def bf16(shape, order="C"):
        t = FakeTensor(shape, order)
        t.dtype, t._item = TorchDtype("torch.bfloat16"), 2
        return t

    group = gemmc.compile_string(FUSED_BF16).groups[0]
    run = group.group_run
    sizes = [(256, 128, 64)] + [(1000, 72, 136)] * 3
    As = [bf16((m, k)) for m, n, k in sizes]
    Bs = [bf16((k, n), "F") for m, n, k in sizes]
    Cs = [bf16((m, n)) for m, n, k in sizes]
    reads, launches = [], []

    def counted(obj, name, index=None):
        reads.append((name, index))
        return describe(obj, name, index)

    monkeypatch.setattr(concurrent, "describe", counted)
    monkeypatch.setattr(concurrent, "cupy", lambda: SimpleNamespace(
        cuda=SimpleNamespace(runtime=SimpleNamespace(getDevice=lambda: 0))))
    monkeypatch.setattr(concurrent, "launch_stream", lambda stream, torch_args: stream)
    monkeypatch.setattr(concurrent, "launch_grouped_list", lambda kernel, *lists, **kw: launches.append((lists, kw)))
    for _ in range(2):
        reads.clear()
        concurrent.run_group(run, As, Bs, Cs, mode=Mode.FUSED, degree=1)
        assert sorted(reads) == sorted((name, i) for name in ("As", "Bs", "Cs") for i in range(4))
    infos = launches[-1][1]["infos"]
    assert [[i.ptr for i in group] for group in infos] == [[x.data_ptr() for x in g] for g in (As, Bs, Cs)]
    fused = run.fused
    np.testing.assert_array_equal(problem_table(fused, As, Bs, Cs, 0, views=True),
                                  problem_table(fused, As, Bs, Cs, 0, views=True, infos=infos))
    other = bf16((256, 64))
    other._ptr = Cs[0].data_ptr()
    with pytest.raises(GemmcError, match=r"Cs\[0\]: expected shape \(256, 128\)"):
        concurrent.run_group(run, As, Bs, [other, *Cs[1:]], mode=Mode.FUSED, degree=1)
    assert len(launches) == 2

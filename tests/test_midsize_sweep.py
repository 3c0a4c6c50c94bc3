"""bench/experiments/midsize_sweep.py without a GPU: the members it takes from the concurrent suite, the
configurations it builds and refuses for each, its listing and table with torch and CuPy missing."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import ROOT

SCRIPT = ROOT / "bench" / "experiments" / "midsize_sweep.py"
WITHOUT = "import sys\nfor m in ('torch', 'cupy', 'triton', 'rich', 'matplotlib'): sys.modules[m] = None\n"


@cache
def sweep():
    spec = importlib.util.spec_from_file_location("midsize_sweep", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["midsize_sweep"] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def test_members_are_the_groups_gemms_with_their_layouts() -> None:
    got = [(m.name, m.count, m.m, m.n, m.k, m.layout_a, m.layout_b) for m in sweep().members()]
    assert got == [("qkv", 3, 2048, 1024, 1024, "row", "row"), ("ffn1.dX", 1, 2048, 1024, 4096, "row", "col"),
                   ("ffn1.dW", 1, 1024, 4096, 2048, "col", "row")]


@pytest.mark.parametrize("index", [0, 1, 2])
def test_configs_cover_the_knobs_once_with_the_planned_one_among_them(index: int) -> None:
    from gemmc.families.hopper import planner

    s = sweep()
    member = s.members()[index]
    planned, built, refused = s.configs(member)
    cfgs = [cfg for cfg, _ in built]
    assert len(set(cfgs)) == len(cfgs)
    assert len({k.ir.plan for _, k in built}) == len(built)  # every configuration is a plan of its own
    assert sum(k.ir.plan == planned.ir.plan for _, k in built) == 1  # the planned kernel's twin
    for cfg, k in built:
        p = k.ir.plan
        assert (p.bn, p.cluster, p.ksplit, p.band * p.cluster) == (cfg.bn, cfg.cluster, cfg.ksplit, cfg.band)
        assert p.tma_store == (cfg.ksplit == 1)  # row-major C: TMA stores unless split K stores from its sums
    tiles_m = -(-member.m // 128)
    bands = 2 if tiles_m > planner.BAND_TILES // 2 else 1
    # each (tile N, cluster, k-slices) is built (in every band that walks differently) or refused, never both
    seen = Counter((c.bn, c.cluster, c.ksplit) for c in cfgs)
    assert set(seen.values()) == {bands}
    assert {(c.bn, c.cluster, c.ksplit) for c, _ in refused}.isdisjoint(seen)
    assert len(seen) + len(refused) == len(planner.TILE_N) * 2 * len(planner.KSPLITS)
    # what the family refuses: split K at a tile N it does not split, and split K beside a multicast pair
    assert all((c.ksplit > 1 and c.bn not in planner.TILE_N_KSPLIT) or (c.ksplit > 1 and c.cluster == 2)
               for c, _ in refused)
    assert all(c.ksplit == 1 or (c.cluster == 1 and c.bn in planner.TILE_N_KSPLIT) for c in cfgs)


def test_the_planned_plan_is_the_groups_and_the_planners() -> None:
    import gemmc

    s = sweep()
    for member in s.members():
        planned, _, _ = s.configs(member)
        assert planned.ir.plan == gemmc.compile_string(member.schedule)["k"].ir.plan, member.name


def test_listing_runs_without_torch_and_cupy() -> None:
    code = WITHOUT + f"sys.argv = ['sweep', '--list']\nsys.path.insert(0, {str(ROOT)!r})\n" \
        f"import runpy\nrunpy.run_path({str(SCRIPT)!r}, run_name='__main__')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("<- planned") == 3
    assert "ffn1.dX x1: 2048x1024x4096 A row B col; planned bn 128 c1 ks1 band 8; 28 built, 18 refused" in done.stdout


def test_an_existing_results_file_is_never_written_over(tmp_path: Path) -> None:
    out = tmp_path / "sweep.json"
    out.write_text("kept")
    code = WITHOUT + f"sys.argv = ['sweep', {str(out)!r}]\nsys.path.insert(0, {str(ROOT)!r})\n" \
        f"import runpy\nrunpy.run_path({str(SCRIPT)!r}, run_name='__main__')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2 and "exists" in done.stderr
    assert out.read_text() == "kept"


def test_table_and_group_summary_from_measured_rows(capsys) -> None:
    s = sweep()

    def row(label: str, us: float | None, planned: bool = False) -> dict:
        r = {"label": label, "stages": 6, "tiles": 128, "waves": 0.97, "model_cost": 2560, "is_planned": planned,
             "err": 1e-3}
        if us is not None:
            r.update({"us": us, "rounds_us": [us, us * 1.01], "vs_cublas": 9.0 / us})
        return r

    def shape(group: str, member: str, count: int, cublas: float, planned: float, best: float) -> dict:
        configs = [row("bn 128 c1 ks1 band 16", planned, True), row("bn 64 c1 ks1 band 16", best),
                   row("bn 128 c1 ks4 band 16", None)]
        return {"group": group, "member": member, "count": count, "m": 2048, "n": 1024, "k": 1024,
                "layout_a": "row", "layout_b": "row", "cublas_us": cublas, "cublas_tflops": 477.0,
                "planned": row("planned", planned, True), "best": configs[1], "best_vs_planned": planned / best,
                "configs": configs}

    shapes = [shape(s.GROUPS[0], "qkv", 3, 9.0, 9.9, 8.8), shape(s.GROUPS[1], "ffn1.dX", 1, 27.0, 30.0, 26.0),
              shape(s.GROUPS[1], "ffn1.dW", 1, 27.0, 28.0, 27.5)]
    for x in shapes:
        s.print_shape(x)
    printed = capsys.readouterr().out
    assert "*planned" in printed and printed.index("bn 64 c1 ks1") < printed.index("bn 128 c1 ks1 band 16 ")
    assert "best bn 64 c1 ks1 band 16, 1.125x the planned" in printed
    got = s.summary(shapes)
    assert got[s.GROUPS[0]]["cublas_us"] == pytest.approx(27.0)
    assert got[s.GROUPS[0]]["best_us"] == pytest.approx(26.4)
    assert got[s.GROUPS[1]]["planned_vs_cublas"] == pytest.approx(54.0 / 58.0)
    assert got[s.GROUPS[1]]["best"] == {"ffn1.dX": "bn 64 c1 ks1 band 16", "ffn1.dW": "bn 64 c1 ks1 band 16"}

"""Pictures of the plan (gemmc/codegen/svg.py, `gemmc inspect --svg`, `CompiledKernel.svg()`): golden pictures,
every tile of the work list drawn once, the header's figures are the ones `gemmc inspect` prints, batching and
coarsening show, and the text is valid, escaped and deterministic."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from hypothesis import given, settings

import gemmc
from gemmc.codegen import svg
from gemmc.families.registry import family
from tests.conftest import ROOT
from tests.test_properties import schedules

NS = "{http://www.w3.org/2000/svg}"
GOLDEN = ("inception3", "inception_all", "uniform_batch", "tsm2r")


def parse(text: str) -> ET.Element:
    root = ET.fromstring(text)
    assert root.tag == f"{NS}svg"
    return root


def drawn(root: ET.Element, cls: str) -> list[ET.Element]:
    return [e for e in root.iter() if e.get("class") == cls]


def numbers(runs: str) -> list[int]:
    """The integers of svg.ranges' runs ("0-3 7"), in order, repeats kept."""
    out: list[int] = []
    for run in runs.split():
        a, _, b = run.partition("-")
        out += range(int(a), int(b or a) + 1)
    return out


def header(picture: str) -> str:
    """The header's text, its wrapped lines joined again."""
    root = parse(picture)
    lines = [t.text or "" for t in root if t.tag == f"{NS}text" and t.get("font-size") == str(int(svg.HEAD))]
    return " ".join(line.strip() for line in lines)


def labels(cell: ET.Element) -> list[str]:
    return [t.text or "" for t in cell.iter(f"{NS}text")]


@pytest.mark.parametrize("stem", GOLDEN)
def test_golden_pictures(stem, golden):
    for kernel in gemmc.compile_file(ROOT / "examples" / f"{stem}.gs"):
        golden(f"svg/{stem}.{kernel.name}.svg", kernel.svg())


@settings(max_examples=40, deadline=None)
@given(schedules())
def test_every_tile_is_drawn_once_and_rendering_is_deterministic(text):
    kernel = gemmc.compile_string(text)["k"]
    picture = kernel.svg()
    assert picture == kernel.svg() == gemmc.compile_string(text)["k"].svg()
    root = parse(picture)
    cells = drawn(root, "cell")
    tiles = sorted(t for g in cells for t in numbers(g.get("data-tiles", "")))
    assert tiles == list(range(kernel.ir.work.tile_count))
    blocks = {b for g in cells for b in numbers(g.get("data-blocks", ""))}
    assert blocks == set(range(kernel.ir.work.blocks))
    assert len(drawn(root, "problem")) == kernel.ir.batch_size


def test_the_header_gives_the_figures_inspect_prints():
    for stem in ("inception3", "inception_all"):
        kernel = gemmc.compile_file(ROOT / "examples" / f"{stem}.gs")[stem]
        text, picture = kernel.plan, header(kernel.svg())
        tlp = re.search(r"(TLP old \(Eq\. 3\) \d+, new \(Eq\. 4\) \d+, threshold \d+); occupancy ([^;]+);", text)
        waves = re.search(r"batching none: ([\d.]+ waves of blocks)", text)
        assert tlp and waves, text
        assert tlp.group(1) in picture and f"occupancy {tlp.group(2)}:" in picture and waves.group(1) in picture


def test_the_model_over_the_cells_gives_the_tilings_own_figures():
    # Families whose plans keep no TLP figures get them from the same model (gemmc/model/tlp.py) over their cells:
    # over a SIMT plan's cells it gives the figures the tiling was chosen by.
    kernel = gemmc.compile_file(ROOT / "examples" / "inception_all.gs")["inception_all"]
    ir, hw = kernel.ir, kernel.target
    cells = family(ir.family).cells(ir, hw)
    fig = cells.figures
    assert fig is not None
    own = svg.header(ir, ir.plan, ir.work, hw, cells)
    model = svg.header(ir, ir.plan, ir.work, hw, dataclasses.replace(cells, figures=None))
    assert f"TLP old (Eq. 3) {fig.tlp_old}, new (Eq. 4) {fig.tlp_new} (paper 000" in model[2]
    assert own[3] == model[3] and f"occupancy {fig.occupancy}:" in model[3]


BINARY = ("kernel k { dtype f32 tile 32x32x8 threads 64 batching binary batch { a 100 x 100 x 40  b 60 x 70 x 30  "
          "c 90 x 33 x 200 } }")


def test_the_tiles_of_one_block_carry_its_label_and_a_frame():
    kernel = gemmc.compile_string(BINARY)["k"]
    offsets = kernel.ir.work.block_offsets
    several = [b for b in range(len(offsets) - 1) if offsets[b + 1] - offsets[b] > 1]
    assert several  # binary batching pairs tiles of small K (paper 003)
    root = parse(kernel.svg())
    cells = drawn(root, "cell")
    for b in several:
        mine = [g for g in cells if numbers(g.get("data-blocks", "")) == [b]]
        assert len(mine) == offsets[b + 1] - offsets[b]
        assert all(labels(g) in ([f"b{b}"], []) for g in mine)  # a sliver of one column has no room for it
        assert any(labels(g) for g in mine)
    assert len(drawn(root, "f")) == sum(offsets[b + 1] - offsets[b] for b in several) + 1  # + the legend's


def test_a_large_gemm_is_drawn_in_boxes_that_count_their_tiles():
    kernel = gemmc.compile_string("kernel k { dtype f32 gemm 16384 x 16384 x 1024 tile 128x128x8 threads 256 }")["k"]
    root = parse(kernel.svg())
    cells = drawn(root, "cell")
    assert len(cells) == 256  # 128 x 128 tiles of 5 px, in boxes of 8 x 8
    assert sorted(t for g in cells for t in numbers(g.get("data-tiles", ""))) == list(range(128 * 128))
    assert all(labels(g)[0] == "64 tiles" for g in cells)
    assert labels(cells[0]) == ["64 tiles", "b0-63"]  # tiles run in groups of 8 rows: the first box's 64 blocks


def test_a_batch_of_1024_problems_fits_a_few_screens():
    rng = np.random.default_rng(0)
    batch = " ".join(f"p{i} {m} x {n} x {k}" for i, (m, n, k) in enumerate(
        zip(rng.integers(16, 513, 1024), rng.integers(16, 513, 1024), rng.integers(16, 129, 1024), strict=True)))
    kernel = gemmc.compile_string(f"kernel k {{ dtype f32 tile 64x64x16 threads 128 batch {{ {batch} }} }}")["k"]
    root = parse(kernel.svg())
    assert float(root.get("height", 0)) < 4 * float(root.get("width", 0))
    outlines = drawn(root, "C")
    assert len(outlines) == 1024 and min(float(r.get("width", 0)) for r in outlines) >= svg.MIN_SIDE
    assert sorted(t for g in drawn(root, "cell") for t in numbers(g.get("data-tiles", ""))) == \
        list(range(len(kernel.ir.work.tiles)))


def test_tsm2l_draws_its_passes_over_the_rows():
    kernel = gemmc.compile_file(ROOT / "examples" / "tsm2l.gs")["tsm2l_10m"]
    picture = kernel.svg()
    root = parse(picture)
    assert {b for g in drawn(root, "cell") for b in numbers(g.get("data-blocks", ""))} == \
        set(range(kernel.ir.work.blocks))
    assert all(f"pass {r}: 256 rows x 16 columns" in picture for r in range(4))
    assert "rows r * 2500096 + b * 256" in picture  # the grid's arithmetic, in the header


def test_edge_tiles_are_hatched():
    kernel = gemmc.compile_file(ROOT / "examples" / "inception3.gs")["inception3"]
    root = parse(kernel.svg())
    hatched = [g for g in drawn(root, "cell") if any(r.get("class") == "e" for r in g.iter(f"{NS}rect"))]
    ir = kernel.ir
    past = [t for t in ir.work.tiles
            if t.m0 + 32 > ir.problems[t.problem].m or t.n0 + 32 > ir.problems[t.problem].n]
    assert len(hatched) == len(past) == 18  # 196 rows: the last row of 32 x 32 tiles; b3x3r's 16 of 32 columns


def test_text_is_escaped_and_numbers_are_runs():
    assert svg.attr('a"<&>') == "a&quot;&lt;&amp;&gt;"
    assert svg.ranges([7, 0, 1, 2, 3, 9, 10, 3]) == "0-3 7 9-10"
    assert svg.block_label([4, 5, 6, 7]) == "b4-7"
    assert svg.block_label([0, 1, 8, 9]) == "b0-1, b8-9"
    assert svg.block_label([0, 5, 9]) == "b0-9"
    assert svg.num(12.04) == "12" and svg.num(0.25) == "0.2"


def gemmc_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gemmc", *args], capture_output=True, text=True, cwd=ROOT)


def test_inspect_svg_writes_to_stdout_a_file_or_a_folder(tmp_path):
    one = str(ROOT / "examples" / "inception3.gs")
    proc = gemmc_cli("inspect", one, "--svg", "-")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == gemmc.compile_file(one)["inception3"].svg()
    proc = gemmc_cli("inspect", one, "--svg", str(tmp_path / "p.svg"))
    assert proc.returncode == 0 and (tmp_path / "p.svg").read_text() == gemmc.compile_file(one)["inception3"].svg()
    several = str(ROOT / "examples" / "inception_modules.gs")
    proc = gemmc_cli("inspect", several, "--svg", str(tmp_path / "modules") + "/")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (tmp_path / "modules").iterdir()) == [f"module{i}.svg" for i in range(1, 10)]
    proc = gemmc_cli("inspect", several, "--svg", "-")
    assert proc.returncode == 1 and "9 kernels" in proc.stderr and "Traceback" not in proc.stderr


def test_a_batched_launch_gives_the_waves_batching_counted_too():
    rng = np.random.default_rng(1)
    batch = " ".join(f"p{i} {m} x {n} x {k}" for i, (m, n, k) in enumerate(
        zip(rng.integers(64, 321, 1024), rng.integers(64, 321, 1024), rng.integers(16, 65, 1024), strict=True)))
    kernel = gemmc.compile_string(f"kernel k {{ dtype f32 tile 32x32x8 threads 64 batch {{ {batch} }} }}")["k"]
    work, picture = kernel.ir.work, header(kernel.svg())
    counted = re.search(r"batching threshold: ([\d.]+) waves of blocks", kernel.plan)
    resident = re.search(r"(\d+) resident at once", picture)
    assert counted and resident and work.blocks < len(work.tiles), kernel.plan
    waves = f"{work.blocks / int(resident.group(1)):.1f}"
    assert f"{waves} waves of blocks ({resident.group(1)} resident at once, {counted.group(1)} waves of tiles " \
           "before batching)" in picture


def test_a_batch_sized_at_run_time_is_refused_with_a_reason_not_a_crash(tmp_path):
    # Its tiles come from each call's group ends, on the device: there is no plan to draw. This was an internal
    # error (exit 70) from `gemmc inspect examples/moe.gs --svg out/`.
    prog = gemmc.compile_file(ROOT / "examples" / "moe.gs")
    with pytest.raises(gemmc.GemmcError, match="sized at run time") as err:
        prog["moe_up"].svg()
    assert err.value.code == "E900"
    proc = gemmc_cli("inspect", str(ROOT / "examples" / "moe.gs"), "--svg", str(tmp_path / "moe") + "/")
    assert proc.returncode == 1 and "E900" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert "moe_up, moe_wgrad, varlen are batches sized at run time: their tiles" in proc.stderr
    mixed = tmp_path / "mixed.gs"
    mixed.write_text("kernel up { grouped M n 64 k 64 groups 4 }\nkernel one { gemm 64 x 64 x 64 }\n")
    proc = gemmc_cli("inspect", str(mixed), "--svg", str(tmp_path / "mixed") + "/")
    assert proc.returncode == 0, proc.stderr
    assert "skipped up" in proc.stderr and [p.name for p in (tmp_path / "mixed").iterdir()] == ["one.svg"]

"""Kernel names (grammar/names.py, docs/LANGUAGE.md "Reserved names"): a name that would clash with the generated
code, with another kernel's symbols or with what C++ reserves is refused at the name (E206, E200); every other name
compiles, named after any identifier the templates declare."""

from __future__ import annotations

import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import gemmc
from gemmc.codegen.env import template_dir
from gemmc.families.registry import NAMES
from gemmc.grammar import names

NVCC = shutil.which("nvcc")
FAMILIES_DIR = Path(gemmc.__file__).parent / "families"
TEMPLATES = "\n".join(p.read_text() for p in sorted([*template_dir().glob("*.j2"),
                                                       *FAMILIES_DIR.rglob("*.j2")]))

# One schedule per family, `{}` the kernel's name: between them they render every template. Cheapest to compile first.
FAMILIES = {
    "tsm2l": "kernel {} {{ algorithm tsm2l gemm 30000 x 8 x 8 }}",
    "simt": "kernel {} {{ algorithm simt tile 64x64x16 ksplit 2 gemm 64 x 64 x 64 }}",
    "tsm2r": "kernel {} {{ algorithm tsm2r gemm 30000 x 8 x 8 }}",
    "tensorcore-mma": "target cuda sm_80 kernel {} {{ precision split f16 x3 gemm 512 x 512 x 512 }}",
    "tensorcore": "kernel {} {{ precision split bf16 x3 gemm 4096 x 4096 x 4096 }}",
}


def test_template_names_are_every_gemmc_identifier_of_the_templates():
    used = set(re.findall(r"\bgemmc_([A-Za-z0-9_]+)\b(?!\s*\{\{)", TEMPLATES))
    assert used == names.TEMPLATE_NAMES, "update grammar/names.py's TEMPLATE_NAMES to the templates' identifiers"


def test_entry_suffixes_are_every_symbol_the_templates_derive_from_the_entry():
    derived = set(re.findall(r"\{\{ entry \}\}(_[A-Za-z0-9_]+)", TEMPLATES))
    assert derived == set(names.ENTRY_SUFFIXES)
    assert set(re.findall(r"\{\{ launcher \}\}(_[A-Za-z0-9_]+)", TEMPLATES)) == set(names.LAUNCHER_SUFFIXES)


def test_codegen_names_symbols_as_names_py_does():
    k = gemmc.compile_string("kernel mine { dtype f64 layout A col gemm 8 x 8 x 8 }")["mine"]
    assert (k.rendered.launcher, k.rendered.entry) == ("gemmc_mine", "gemmc_mine_simt_f64_crr")
    symbols = set(names.symbols("mine", k.ir.dtype_tag, k.ir.layouts, NAMES))
    assert symbols >= {"gemmc_mine", "gemmc_mine_simt_f64_crr_tiles"}


REFUSED = {
    "problem": "would make the launcher 'gemmc_problem', an identifier the generated code declares",
    "vec": "would make the launcher 'gemmc_vec', an identifier the generated code declares",
    "elem": "would make the launcher 'gemmc_elem', an identifier the generated code declares",
    "int": "is a C/C++ keyword",
    "namespace": "is a C/C++ keyword",
    "_k": "starts with '_', which C and C++ reserve",
    "_K": "starts with '_', which C and C++ reserve",
    "a__b": "would give symbols such as 'gemmc_a__b_simt_f32_rrr' with '__' in them, which C++ reserves",
    "k_": "would give symbols such as 'gemmc_k__simt_f32_rrr' with '__' in them, which C++ reserves",
    "gemmc_k": "starts with 'gemmc_', the prefix of gemmc's own symbols",
    "k" * 65: "is 65 characters long; a kernel name has at most 64",
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_unusable_kernel_names_are_refused_at_the_name(name):
    text = f"kernel {name} {{ gemm 4 x 4 x 4 }}"
    with pytest.raises(gemmc.GemmcError) as info:
        gemmc.compile_string(text)
    (d,) = info.value.diagnostics
    assert (d.code, d.span.line, d.span.column) == ("E206", 1, 8)
    assert d.message.endswith(REFUSED[name])


def test_a_refused_name_renders_with_a_hint():
    with pytest.raises(gemmc.GemmcError) as info:
        gemmc.compile_string("kernel problem {\n  gemm 4 x 4 x 4\n}\n", filename="n.gs")
    assert info.value.render() == (
        "n.gs:1:8: error[E206]: kernel name 'problem' would make the launcher 'gemmc_problem', an identifier the "
        "generated code declares\n"
        "    kernel problem {\n"
        "           ^^^^^^^\n"
        "hint: choose another name")


def test_a_name_at_the_length_limit_is_accepted():
    name = "k" * names.MAX_NAME_LENGTH
    assert gemmc.compile_string(f"kernel {name} {{ gemm 4 x 4 x 4 }}")[name].header


def test_long_problem_names_are_refused():
    with pytest.raises(gemmc.GemmcError) as info:
        gemmc.compile_string(f"kernel k {{ batch {{ {'p' * 65} 4 x 4 x 4 }} }}")
    assert [(d.code, d.span.column) for d in info.value.diagnostics] == [("E206", 20)]


def test_kernels_whose_symbols_coincide_are_refused():
    text = "kernel a { gemm 4 x 4 x 4 }\nkernel a_simt_f32_rrr { gemm 4 x 4 x 4 }\n"
    with pytest.raises(gemmc.GemmcError) as info:
        gemmc.compile_string(text, filename="c.gs")
    assert info.value.render() == (
        "c.gs:2:8: error[E200]: kernels 'a' and 'a_simt_f32_rrr' would both define the symbol 'gemmc_a_simt_f32_rrr'\n"
        "    kernel a_simt_f32_rrr { gemm 4 x 4 x 4 }\n"
        "           ^^^^^^^^^^^^^^\n"
        "hint: rename one of them")


def test_kernel_names_that_differ_only_in_case_are_refused():
    with pytest.raises(gemmc.GemmcError) as info:
        gemmc.compile_string("kernel Attn { gemm 4 x 4 x 4 } kernel attn { gemm 4 x 4 x 4 }")
    (d,) = info.value.diagnostics
    assert (d.code, d.span.column, d.message) == ("E200", 39, "kernels 'Attn' and 'attn' differ only in case")


def test_names_sharing_a_prefix_are_fine():
    prog = gemmc.compile_string("kernel attn { gemm 4 x 4 x 4 } kernel attn_out { gemm 4 x 4 x 4 }")
    assert prog.names == ("attn", "attn_out")


def _declared(family: str) -> set[str]:
    """The identifiers a rendered kernel of this family declares or uses that are not its own symbols."""
    k = gemmc.compile_string(FAMILIES[family].format("probe"))["probe"]
    found = set(re.findall(r"\b(?:gemmc|GEMMC)_[A-Za-z0-9_]+", k.standalone))
    return {x for x in found if not x.startswith("gemmc_probe")}


def _nvcc(flags: list[str], text: str, path: Path) -> str:
    path.write_text(text)
    out = path.with_suffix(".o" if "-c" in flags else ".ptx")
    proc = subprocess.run([NVCC, *flags, "-std=c++17", str(path), "-o", str(out)],
                          capture_output=True, text=True)
    return "" if proc.returncode == 0 else f"{path.name}: {proc.stderr[-2000:]}"


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_kernels_named_after_every_template_identifier_are_refused_or_compile(tmp_path):
    """Every name is tried in every family; an accepted one is compiled in the first family whose code holds the
    identifier it is named after (elsewhere it cannot meet it)."""
    jobs: dict[str, tuple[list[str], str, Path]] = {}
    for family in FAMILIES:
        for ident in sorted(_declared(family)):
            for name in {ident, re.sub(r"^(?:gemmc|GEMMC)_", "", ident)}:
                text = FAMILIES[family].format(name)
                try:
                    k = gemmc.compile_string(text)[name]
                except gemmc.GemmcError as err:
                    (d,) = err.diagnostics  # E100: one of the language's own words (split, auto, ...)
                    assert d.code in ("E206", "E100") and d.span.column == text.index(f"kernel {name}") + 8, \
                        err.render()
                    continue
                if name not in jobs:
                    jobs[name] = ([*k.rendered.build_flags, "-ptx"], k.standalone, tmp_path / f"{family}-{name}.cu")
    assert len(jobs) >= 18  # the GEMMC_ macros, with and without their prefix
    with ThreadPoolExecutor() as pool:
        failures = [f for f in pool.map(lambda job: _nvcc(*job), jobs.values()) if f]
    assert not failures, "\n".join(failures)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_kernels_of_one_schedule_link_into_one_program(tmp_path):
    prog = gemmc.compile_string("kernel attn { algorithm tsm2l gemm 30000 x 8 x 8 }\n"
                                "kernel attn_tsm2l_f32_rrr_x { algorithm tsm2l gemm 30000 x 8 x 8 }")
    objects = []
    for k in prog:
        src = tmp_path / f"{k.name}.cu"
        assert not _nvcc([*k.rendered.build_flags, "-c"], k.standalone, src)
        objects.append(str(src.with_suffix(".o")))
    main = tmp_path / "main.cu"
    main.write_text("int main() { return 0; }\n")
    proc = subprocess.run([NVCC, str(main), *objects, "-o", str(tmp_path / "prog")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]

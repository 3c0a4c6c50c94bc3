"""Numbers past gemmc's limits (grammar/limits.py, docs/LANGUAGE.md "Limits"): refused with a located E205/E304
before anything is built from them, in milliseconds; numbers at the limits are accepted."""

from __future__ import annotations

import time

import pytest

import gemmc
from gemmc.grammar import limits

HUGE = {"2^31": str(2**31), "2^63": str(2**63), "2^64": str(2**64), "5000 digits": "9" * 5000}


def refused(text: str) -> gemmc.GemmcError:
    start = time.perf_counter()
    with pytest.raises(gemmc.GemmcError) as info:
        gemmc.compile_string(text, filename="s.gs")
    assert time.perf_counter() - start < 2.0, "a refusal must not build what it refuses"
    return info.value


# Every place a whole number appears, with `{}` where the number goes.
NUMBER_PLACES = {
    "M": "kernel k {{ gemm {} x 4 x 4 }}",
    "N": "kernel k {{ gemm 4 x {} x 4 }}",
    "K": "kernel k {{ gemm 4 x 4 x {} }}",
    "batch M": "kernel k {{ batch {{ p {} x 4 x 4 }} }}",
    "count": "kernel k {{ gemm 4 x 4 x 4 count {} }}",
    "tile M": "kernel k {{ tile {} x 64 x 16 gemm 4 x 4 x 4 }}",
    "tile K": "kernel k {{ tile 64 x 64 x {} gemm 4 x 4 x 4 }}",
    "threads": "kernel k {{ threads {} gemm 4 x 4 x 4 }}",
    "stages": "kernel k {{ pipeline stages {} gemm 4 x 4 x 4 }}",
    "tlp": "kernel k {{ tlp threshold {} gemm 4 x 4 x 4 }}",
    "kslices": "kernel k {{ tile 64x64x16 kslices {} gemm 4 x 4 x 4 }}",
    "ksplit": "kernel k {{ tile 64x64x16 ksplit {} gemm 4 x 4 x 4 }}",
}


@pytest.mark.parametrize("huge", sorted(HUGE))
@pytest.mark.parametrize("place", sorted(NUMBER_PLACES))
def test_numbers_past_int32_are_refused_where_they_are_written(place, huge):
    text = NUMBER_PLACES[place].format(HUGE[huge])
    err = refused(text)
    assert [d.code for d in err.diagnostics] == ["E205"]
    assert err.diagnostics[0].span.column == text.index(HUGE[huge]) + 1
    assert "must be at most" in err.diagnostics[0].message


@pytest.mark.parametrize("number", ["1e400", "1e3", "2.5", "-1e400"])
def test_sizes_in_exponent_form_are_not_whole_numbers(number):
    err = refused(f"kernel k {{ gemm {number} x 4 x 4 }}")
    assert [(d.code, d.message) for d in err.diagnostics] == [("E102", f"M must be a whole number, not '{number}'")]


def test_huge_size_renders_with_its_limit_and_reason():
    err = refused("kernel k {\n  gemm 9223372036854775808 x 4 x 4\n}\n")
    assert err.render() == (
        "s.gs:2:8: error[E205]: M must be at most 2147483647, not 9223372036854775808\n"
        "      gemm 9223372036854775808 x 4 x 4\n"
        "           ^^^^^^^^^^^^^^^^^^^\n"
        "hint: a tile's first row and column are int32 in the work list, and k-tiles are counted in an int")


def test_a_long_number_is_cut_in_the_message():
    err = refused("kernel k { gemm " + "9" * 5000 + " x 4 x 4 }")
    assert "(5000 characters)" in err.diagnostics[0].message and len(err.render()) < 12000


def test_negative_huge_is_below_one():
    err = refused(f"kernel k {{ gemm -{2**64} x 4 x 4 }}")
    assert err.code == "E201"


@pytest.mark.parametrize("text, expected", [
    ("alpha 1e400", "alpha 1e400 is not a finite float"),
    ("alpha -1e400", "alpha -1e400 is not a finite float"),
    ("alpha 1e39", "alpha 1e39 is past the largest float (3.40282347e+38)"),
    ("beta 1e-50", "beta 1e-50 rounds to 0 as a float"),
    ("dtype f64 alpha 1e309", "alpha 1e309 is not a finite double"),
    ("dtype f64 beta 1e-400", "beta 1e-400 rounds to 0 as a double"),
])
def test_scalars_must_be_finite_in_the_kernels_type(text, expected):
    err = refused(f"kernel k {{ {text} gemm 4 x 4 x 4 }}")
    assert [(d.code, d.message) for d in err.diagnostics] == [("E205", expected)]
    assert err.diagnostics[0].span.column == len("kernel k { ") + text.index(expected.split()[1]) + 1


@pytest.mark.parametrize("text, literal", [
    ("dtype f64 alpha 1e39", "1e+39"),
    ("alpha 3.4028234663852886e38", "3.4028234663852886e+38f"),
    ("alpha 1e-40", "1e-40f"),  # subnormal in float, not zero
    ("beta -0.0", "-0.0f"),
])
def test_scalars_in_range_are_baked(text, literal):
    k = gemmc.compile_string(f"kernel k {{ {text} gemm 4 x 4 x 4 }}")["k"]
    assert literal in k.standalone and "inf" not in k.standalone


def test_sizes_at_the_limit_are_accepted():
    k = gemmc.compile_string(f"kernel k {{ gemm {limits.MAX_SIZE} x 4 x 4 }}")["k"]  # TSM2: no tile list
    assert k.ir.problems[0].m == 2**31 - 1 and k.header


def test_count_past_the_batch_limit():
    err = refused(f"kernel k {{ gemm 4 x 4 x 4 count {limits.MAX_BATCH + 1} }}")
    assert [d.code for d in err.diagnostics] == ["E205"]
    assert f"count must be at most {limits.MAX_BATCH}" in err.diagnostics[0].message


def test_batch_past_the_batch_limit(monkeypatch):
    monkeypatch.setattr(limits, "MAX_BATCH", 2)
    err = refused("kernel k {\n  batch { a 1 x 1 x 1 b 1 x 1 x 1 c 1 x 1 x 1 }\n}\n")
    assert err.render().startswith("s.gs:2:3: error[E205]: the batch has 3 problems; a kernel has at most 2\n")


@pytest.mark.parametrize("text, tiles", [
    ("tile 16x16x16 batch { a 65536 x 65536 x 64 b 65536 x 65535 x 64 }", 33554432),
    ("batch { a 2147483647 x 2147483647 x 4 b 2147483647 x 2147483646 x 4 }", 562949953421312),
    ("precision tf32 batch { a 2147483647 x 2147483647 x 2147483647 b 1 x 1 x 1 }", 140737488355329),
])
def test_irregular_launches_past_the_tile_limit_are_refused_at_the_problems(text, tiles):
    # a uniform launch computes its tiles (tests/test_raster.py); an irregular one lists them
    err = refused(f"kernel k {{ {text} }}")
    d = err.diagnostics[0]
    assert (d.code, d.message) == ("E205", f"the launch would list {tiles} output tiles; gemmc lists at most "
                                           f"{limits.MAX_TILES} per launch")
    assert d.span.column == len("kernel k { ") + text.index("batch") + 1


def test_an_irregular_launch_at_the_tile_limit_is_accepted():
    text = "kernel k { tile 128x128x16 batching none batch { a 131072 x 65536 x 64 b 131072 x 65535 x 64 } }"
    k = gemmc.compile_string(text)["k"]
    assert len(k.ir.work.tiles) == limits.MAX_TILES and k.ir.work.raster is None


@pytest.mark.parametrize("text", ["algorithm tsm2r gemm 2147483647 x 4096 x 4",
                                  "algorithm tsm2r layout A row gemm 2147483647 x 4000000 x 4"])
def test_grids_past_the_hardware_limit_are_refused(text):
    err = refused(f"kernel k {{ {text} }}")
    d = err.diagnostics[0]
    assert d.code == "E304" and "a grid has at most 2147483647" in d.message
    assert d.span.column == len("kernel k { ") + text.index("gemm") + 1


def test_grid_limits():
    from gemmc.ir.hardware import TARGETS

    assert limits.grid_problem((2**31 - 1, 65535, 65535), 1024, TARGETS["sm_90"]) is None
    assert "y and z are at most 65535" in limits.grid_problem((1, 65536, 1), 32, TARGETS["sm_90"])
    assert "work-items" in limits.grid_problem((2**23, 1, 1), 1024, TARGETS["gfx90a"])
    assert limits.grid_problem((2**22 - 1, 1, 1), 1024, TARGETS["gfx90a"]) is None


def test_a_huge_tile_is_refused_without_searching_its_micro_tiles():
    err = refused("kernel k { tile 2147483647x64x16 gemm 64 x 64 x 64 }")  # hung in micro_tile
    assert err.code == "E301"
    err = refused("kernel k { tile 1073741824x64x16 threads 1024 gemm 64 x 64 x 64 }")
    assert {d.code for d in err.diagnostics} == {"E300", "E302"}

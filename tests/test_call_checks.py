"""Run-time arguments that once went unchecked (issue 27): each is refused with a GemmcError naming the argument
before anything is launched, or accepted (and the GPU fuzz test checks the result). No GPU: stand-in arrays
(tests/test_args.py) and a stand-in CuPy whose kernel functions record their launches."""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np
import pytest

import gemmc
from gemmc.runtime.args import batch_pointers, expected_operands
from gemmc.runtime.memory import check_memory
from tests.test_args import EXPECTED, KERNEL, FakeArray, FakeCupy, FakeTensor, args

KERNEL_TEXT = "kernel k { layout B col batch { a 8 x 4 x 6  b 3 x 5 x 2 } }"  # tests/test_args.py's KERNEL


def view(base, offset_bytes, shape, typestr="<f4", strides=None, readonly=False):
    """A stand-in array `offset_bytes` into `base`'s memory (a view of the same buffer)."""
    out = FakeArray(shape, typestr=typestr, strides=strides)
    ptr = base.__cuda_array_interface__["data"][0] + offset_bytes
    out.__cuda_array_interface__["data"] = (ptr, readonly)
    return out


def refused(match, *call_args):
    with pytest.raises(gemmc.GemmcError, match=match) as info:
        batch_pointers(KERNEL, *call_args, EXPECTED, device=0)
    assert info.value.code == "E400"


# --- dtype, strides, writability: the per-array checks of args.py ------------------------------------------------

@pytest.mark.parametrize("make", [FakeArray, FakeCupy])
def test_a_big_endian_array_is_not_taken_for_the_schedule_dtype(make):
    a, b, c = args()
    refused(r"As\[0\]: expected dtype float32 \(the schedule's dtype of A\), got float32 in big-endian order",
            [make((8, 6), typestr=">f4"), a[1]], b, c)
    refused(r"Cs\[1\]: expected dtype float32 .* big-endian", a, b, [c[0], make((3, 5), typestr=">f4")])


@pytest.mark.parametrize("make", [FakeArray, FakeCupy])
def test_byte_strides_must_be_whole_items(make):
    # 17 // 4 == 4 == the row length: before, the stride was rounded down and the view read as dense.
    a, b, c = args()
    refused(r"Cs\[0\]: byte strides \(17, 4\) are not multiples of the item size \(4 bytes\)", a, b,
            [make((8, 4), strides=(17, 4)), c[1]])
    k = gemmc.compile_string("kernel k { gemm 4 x 5 x 6 count 3 }")["k"].ir
    A = make((3, 4, 6), strides=(97, 24, 4))
    with pytest.raises(gemmc.GemmcError, match=r"As: byte strides \(97, 24, 4\) are not multiples"):
        batch_pointers(k, A, make((3, 6, 5)), make((3, 4, 5)), expected_operands(k), device=0)


def test_a_read_only_output_is_refused_and_a_read_only_input_is_not():
    a, b, c = args()
    ro_c = view(FakeArray((8, 4)), 0, (8, 4), readonly=True)
    refused(r"Cs\[0\]: gemmc writes C in place, but the array is read-only", a, b, [ro_c, c[1]])
    ro_a = view(FakeArray((8, 6)), 0, (8, 6), readonly=True)
    assert batch_pointers(KERNEL, [ro_a, a[1]], b, c, EXPECTED, device=0)[0][0] == ro_a.__cuda_array_interface__[
        "data"][0]


def test_a_tensor_that_requires_grad_is_not_written():
    a, b, c = args("torch")
    grad = FakeTensor((8, 4))
    grad.requires_grad = True
    refused(r"Cs\[0\]: gemmc writes C in place, but the tensor requires grad", a, b, [grad, c[1]])
    weight = FakeTensor((8, 6))
    weight.requires_grad = True
    batch_pointers(KERNEL, [weight, a[1]], b, c, EXPECTED, device=0)  # an input that requires grad is only read


COUNT = gemmc.compile_string("kernel k { gemm 4 x 5 x 6 count 3 }")["k"].ir


@pytest.mark.parametrize("first_stride", [0, 4, -4, 19])
def test_a_count_batch_whose_outputs_overlap_is_refused(first_stride):
    C = FakeArray((3, 4, 5), strides=(first_stride * 4, 20, 4))
    with pytest.raises(gemmc.GemmcError, match=rf"Cs: the matrices of the 3-D array overlap: each holds 20 elements "
                                               rf"but they start {first_stride} elements apart"):
        batch_pointers(COUNT, FakeArray((3, 4, 6)), FakeArray((3, 6, 5)), C, expected_operands(COUNT), device=0)


def test_a_count_batch_may_broadcast_its_inputs():
    A, B = FakeArray((3, 4, 6), strides=(0, 24, 4)), FakeArray((3, 6, 5), strides=(0, 20, 4))
    pa, pb, pc = batch_pointers(COUNT, A, B, FakeArray((3, 4, 5)), expected_operands(COUNT), device=0)
    assert len(set(pa)) == len(set(pb)) == 1 and len(set(pc)) == 3


# --- memory: alignment and overlap (memory.check_memory, run on a new set of pointers) -------------------------

def test_outputs_that_overlap_each_other_are_refused(launches):
    k = gemmc.compile_string(KERNEL_TEXT)["k"]
    a, b, c = args()
    k(a, b, c)
    # Cs[1] starts inside Cs[0] (same pointer or not): before, only equal pointers were caught.
    for offset in (0, 4, 8 * 4 * 4 - 4):
        with pytest.raises(gemmc.GemmcError, match=r"Cs\[0\] and Cs\[1\] overlap"):
            k(a, b, [c[0], view(c[0], offset, (3, 5))])
    k(a, b, [c[0], view(c[0], 8 * 4 * 4, (3, 5))])  # right after Cs[0] ends: no byte shared


@pytest.mark.parametrize("slot", [0, 1])
def test_an_output_overlapping_an_input_is_refused(launches, slot):
    k = gemmc.compile_string(KERNEL_TEXT)["k"]
    a, b, c = args()
    inputs = [a, b]
    big = inputs[slot][0]  # C of problem 1 (3 x 5 = 60 bytes) lies inside A or B of problem 0
    inside = view(big, 16, (3, 5))
    name = ("As", "Bs")[slot]
    with pytest.raises(gemmc.GemmcError, match=rf"Cs\[1\] overlaps {name}\[0\]"):
        k(a, b, [c[0], inside])
    same = view(inputs[slot][1], 0, (3, 5))  # C of a problem is its own A or B
    with pytest.raises(gemmc.GemmcError, match=rf"Cs\[1\] overlaps {name}\[1\]"):
        k(a, b, [c[0], same])


def test_inputs_may_overlap_each_other(launches):
    k = gemmc.compile_string("kernel k { batch { a 6 x 6 x 6  b 6 x 6 x 6 } }")["k"]
    shared = FakeArray((6, 6))
    k([shared, shared], [shared, view(shared, 4, (6, 6))], [FakeArray((6, 6)), FakeArray((6, 6))])
    assert len(launches) == 1


def test_a_pointer_off_the_item_size_is_refused(launches):
    k = gemmc.compile_string(KERNEL_TEXT)["k"]
    a, b, c = args()
    with pytest.raises(gemmc.GemmcError, match=r"Bs\[1\]: the data pointer 0x[0-9a-f]+ is not a multiple of the item "
                                               r"size \(4 bytes\)"):
        k(a, [b[0], view(FakeArray((2, 5)), 2, (2, 5), strides=(4, 8))], c)


def test_the_memory_checks_run_once_per_set_of_pointers(launches, monkeypatch):
    from gemmc.runtime import launch

    checked = []
    monkeypatch.setattr(launch, "check_memory", lambda *a: checked.append(a))
    k = gemmc.compile_string(KERNEL_TEXT)["k"]
    a, b, c = args()
    for _ in range(3):
        k(a, b, c)
    assert len(checked) == 1 and len(launches) == 3


def test_the_overlap_check_of_a_large_batch_is_vectorised():
    # 4096 problems, all C disjoint (the slow case: nothing stops the scan early). Pairwise Python would take
    # seconds; sorted numpy intervals take about a millisecond.
    n = 4096
    k = gemmc.compile_string("kernel k { gemm 16 x 16 x 16 count 4096 }")["k"].ir
    expected = expected_operands(k)
    base = 1 << 32
    a = [base + 1024 * i for i in range(n)]
    b = [base + (1 << 24) + 1024 * i for i in range(n)]
    c = [base + (1 << 25) + 1024 * i for i in range(n)]
    start = time.perf_counter()
    check_memory(a, b, c, expected)
    assert time.perf_counter() - start < 0.5
    with pytest.raises(gemmc.GemmcError, match=r"Cs\[4094\] and Cs\[4095\] overlap"):
        check_memory(a, b, c[:-1] + [c[-2] + 1020], expected)


# --- alpha and beta -------------------------------------------------------------------------------------------------

RUNTIME = "kernel k { dtype DT alpha runtime beta runtime batch { a 8 x 4 x 6 } }"


def scalar_call(launches, dtype="f32", **scalars):
    k = gemmc.compile_string(RUNTIME.replace("DT", dtype))["k"]
    typestr = {"f32": "<f4", "f64": "<f8"}[dtype]
    k([FakeArray((8, 6), typestr=typestr)], [FakeArray((6, 4), typestr=typestr)], [FakeArray((8, 4), typestr=typestr)],
      **scalars)
    return launches[-1][6:8]


@pytest.mark.parametrize("value, message", [
    ("x", r"alpha: expected a real number \(a Python int or float\), got str 'x'"),
    (1 + 2j, "alpha: expected a real number .* got complex"),
    (True, "alpha: expected a real number .* got bool"),
    ([1.0], "alpha: expected a real number .* got list"),
    (FakeArray((1,)), "alpha: expected a real number .* got FakeArray"),
    (math.nan, "alpha: expected a finite number, got nan"),
    (math.inf, "alpha: expected a finite number, got inf"),
    (np.float32("-inf"), "alpha: expected a finite number, got -inf"),
    pytest.param(10 ** 400, "alpha: 1000.* is past float64's range", id="10**400"),
    (1e39, r"alpha: 1e\+39 is past float32's range"),
])
def test_a_bad_alpha_is_named(launches, value, message):
    with pytest.raises(gemmc.GemmcError, match=message) as info:
        scalar_call(launches, alpha=value, beta=0.0)
    assert info.value.code == "E400" and not launches


def test_beta_is_checked_as_alpha_is(launches):
    with pytest.raises(gemmc.GemmcError, match="beta: expected a finite number, got nan"):
        scalar_call(launches, alpha=1.0, beta=math.nan)


@pytest.mark.parametrize("value", [2, -0.5, np.float32(1.5), np.float64(0.25), np.int64(3), Fraction(1, 4),
                                   3.4e38, 1e-50])
def test_real_numbers_are_taken(launches, value):
    alpha, beta = scalar_call(launches, alpha=value, beta=1)
    assert alpha.dtype == np.float32 and float(alpha) == np.float32(float(value)) and float(beta) == 1.0


def test_an_f64_kernel_takes_the_whole_float64_range(launches):
    alpha, _ = scalar_call(launches, "f64", alpha=1e39, beta=0.0)
    assert alpha.dtype == np.float64 and float(alpha) == 1e39

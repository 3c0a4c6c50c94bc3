"""Argument checks without a GPU: fake device arrays through __cuda_array_interface__."""

from __future__ import annotations

import pytest

import gemmc
from gemmc.runtime.args import batch_pointers, expected_operands


class FakeArray:
    """A device array as __cuda_array_interface__ describes it (no memory behind it; nothing is launched)."""

    _next = 1 << 20

    def __init__(self, shape, order="C", typestr="<f4", strides=None):
        item = int(typestr[-1])
        if strides is None and order == "F":
            strides = (item, shape[0] * item) if len(shape) == 2 else None
        FakeArray._next += 1 << 16
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr, "strides": strides,
                                         "data": (FakeArray._next, False), "version": 3}


KERNEL = gemmc.compile_string("kernel k { layout B col batch { a 8 x 4 x 6  b 3 x 5 x 2 } }")["k"].ir
EXPECTED = expected_operands(KERNEL)


def args():
    return ([FakeArray((8, 6)), FakeArray((3, 2))], [FakeArray((6, 4), "F"), FakeArray((2, 5), "F")],
            [FakeArray((8, 4)), FakeArray((3, 5))])


def test_good_arguments_give_pointers():
    a, b, c = args()
    pa, pb, pc = batch_pointers(KERNEL, a, b, c, EXPECTED, device=0)
    assert pa == [x.__cuda_array_interface__["data"][0] for x in a] and len(pb) == len(pc) == 2


@pytest.mark.parametrize("change, message", [
    (lambda a, b, c: (a, b, c[:1]), "Cs: expected 2 arrays (one per problem), got 1"),
    (lambda a, b, c: ([a[0], FakeArray((2, 3))], b, c),
     "As[1]: expected shape (3, 2) for A of problem 'b', got (2, 3)"),
    (lambda a, b, c: (a, [FakeArray((6, 4)), b[1]], c), "Bs[0]: the array is row-major but the schedule says "
                                                         "`layout B col`"),
    (lambda a, b, c: ([FakeArray((8, 6), typestr="<f8"), a[1]], b, c), "As[0]: expected dtype float32"),
    (lambda a, b, c: (a, b, [FakeArray((8, 4), strides=(32, 8)), c[1]]), "Cs[0]: expected a densely packed row-major"),
    (lambda a, b, c: (a, b, [FakeArray((8, 4, 1)), c[1]]), "Cs[0]: expected a 2-D array"),
    (lambda a, b, c: (a[0], b, c), "As: expected a list of 2 arrays"),
    (lambda a, b, c: (a, b, [c[0], c[0]]), "Cs[1]: expected shape (3, 5)"),
    (lambda a, b, c: (["not an array", a[1]], b, c), "As[0]: expected a GPU array"),
])
def test_bad_arguments_are_named(change, message):
    with pytest.raises(gemmc.GemmcError) as info:
        batch_pointers(KERNEL, *change(*args()), EXPECTED, device=0)
    assert message in str(info.value)


def test_count_batch_takes_a_3d_array():
    k = gemmc.compile_string("kernel k { gemm 4 x 5 x 6 count 3 }")["k"].ir
    A, B, C = FakeArray((3, 4, 6)), FakeArray((3, 6, 5)), FakeArray((3, 4, 5))
    pa, _, pc = batch_pointers(k, A, B, C, expected_operands(k), device=0)
    base = A.__cuda_array_interface__["data"][0]
    assert pa == [base, base + 96, base + 192]
    with pytest.raises(gemmc.GemmcError, match="Bs: expected a 3-D array of 3 matrices"):
        batch_pointers(k, A, FakeArray((2, 6, 5)), C, expected_operands(k), device=0)


def test_host_arrays_are_refused():
    np = pytest.importorskip("numpy")
    a, b, c = args()
    with pytest.raises(gemmc.GemmcError, match=r"As\[0\]: expected a GPU array, got a host \(numpy\) array"):
        batch_pointers(KERNEL, [np.ones((8, 6), "float32"), a[1]], b, c, EXPECTED, device=0)


def test_a_wrong_c_is_an_error_not_a_replan():
    # A and B match the plan, C does not: re-planning cannot help, the shape error must stand (a GPU run once
    # recursed here).
    from gemmc.runtime.args import ShapeMismatch

    a, b, c = args()
    with pytest.raises(ShapeMismatch, match=r"Cs\[0\]: expected shape \(8, 4\)"):
        batch_pointers(KERNEL, a, b, [FakeArray((8, 2)), c[1]], EXPECTED, device=0)

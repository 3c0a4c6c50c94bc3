"""Argument checks without a GPU: fake device arrays through __cuda_array_interface__."""

from __future__ import annotations

import types

import pytest

import gemmc
from gemmc.runtime.args import batch_pointers, c_strides, describe, expected_operands


class FakeArray:
    """A device array as __cuda_array_interface__ describes it (no memory behind it; nothing is launched). Each
    gets addresses of its own, as an allocator would give them: the overlap checks compare byte ranges."""

    _next = 1 << 20

    def __init__(self, shape, order="C", typestr="<f4", strides=None):
        item = int(typestr[-1])
        if strides is None and order == "F":
            strides = (item, shape[0] * item) if len(shape) == 2 else None
        nbytes = item
        for extent in shape:
            nbytes *= extent
        ptr = FakeArray._next
        FakeArray._next += (nbytes + 0xFFFF) // 0x10000 * 0x10000 + 0x10000
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr, "strides": strides,
                                         "data": (ptr, False), "version": 3}


class FakeCupy:
    """What gemmc reads of a cupy.ndarray (by its module's name), built from the same description."""

    def __init__(self, shape, order="C", typestr="<f4", strides=None):
        import numpy as np

        cai = FakeArray(shape, order, typestr, strides).__cuda_array_interface__
        self.dtype = np.dtype(typestr)
        self.itemsize = self.dtype.itemsize
        self.shape = tuple(shape)
        self.strides = cai["strides"] or c_strides(self.shape, self.itemsize)
        self.data = types.SimpleNamespace(ptr=cai["data"][0], device_id=0)


FakeCupy.__module__ = "cupy"


class TorchDtype(str):
    """torch.float32 and its kin: gemmc reads their names through str()."""


class FakeTensor:
    """What gemmc reads of a torch.Tensor (by its class's name and module): methods, strides in elements."""

    DTYPES = {"<f4": TorchDtype("torch.float32"), "<f8": TorchDtype("torch.float64"),
              "<i4": TorchDtype("torch.int32"), "<i8": TorchDtype("torch.int64")}
    requires_grad = False

    def __init__(self, shape, order="C", typestr="<f4", strides=None, device=0):
        array = FakeCupy(shape, order, typestr, strides)
        self.shape, self._strides = array.shape, tuple(s // array.itemsize for s in array.strides)
        self._ptr, self._item, self._device, self.dtype = array.data.ptr, array.itemsize, device, self.DTYPES[typestr]
        self.is_cuda = device >= 0

    def data_ptr(self):
        return self._ptr

    def stride(self):
        return self._strides

    def element_size(self):
        return self._item

    def get_device(self):
        return self._device

    def size(self):
        return self.shape

    def is_contiguous(self):
        """torch's test: row-major strides wherever the extent is not 1; an empty tensor is contiguous."""
        if 0 in self.shape:
            return True
        want = 1
        for extent, stride in zip(reversed(self.shape), reversed(self._strides), strict=True):
            if extent != 1 and stride != want:
                return False
            want *= extent
        return True


FakeTensor.__name__, FakeTensor.__module__ = "Tensor", "torch"

KINDS = {"cai": FakeArray, "cupy": FakeCupy, "torch": FakeTensor}
KERNEL = gemmc.compile_string("kernel k { layout B col batch { a 8 x 4 x 6  b 3 x 5 x 2 } }")["k"].ir
EXPECTED = expected_operands(KERNEL)


def args(kind="cai"):
    make = KINDS[kind]
    return ([make((8, 6)), make((3, 2))], [make((6, 4), "F"), make((2, 5), "F")], [make((8, 4)), make((3, 5))])


def pointer(x):
    return x.__cuda_array_interface__["data"][0] if isinstance(x, FakeArray) else describe(x, "x").ptr


@pytest.mark.parametrize("kind", KINDS)
def test_good_arguments_give_pointers(kind):
    a, b, c = args(kind)
    pa, pb, pc = batch_pointers(KERNEL, a, b, c, EXPECTED, device=0)
    assert (pa, pb, pc) == tuple([pointer(x) for x in group] for group in (a, b, c))
    # the same arrays read one by one (a list of mixed kinds is not read in bulk)
    mixed = [a[0], args("cai" if kind != "cai" else "cupy")[0][1]]
    assert batch_pointers(KERNEL, mixed, b, c, EXPECTED, device=0)[0] == [pointer(x) for x in mixed]


def test_a_size_one_dimension_may_have_any_stride():
    # Dense in the kernel's sense, though not what the bulk check compares with: the arrays are then checked one
    # by one, and accepted.
    k = gemmc.compile_string("kernel k { batch { a 1 x 5 x 1 } }")["k"].ir
    for make in KINDS.values():
        a, b, c = make((1, 1), strides=(400, 40)), make((1, 5), strides=(4000, 4)), make((1, 5), strides=(8, 4))
        assert batch_pointers(k, [a], [b], [c], expected_operands(k), device=0) == ([pointer(a)], [pointer(b)],
                                                                                      [pointer(c)])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("change, message", [
    (lambda make, a, b, c: (a, b, c[:1]), "Cs: expected 2 arrays (one per problem), got 1"),
    (lambda make, a, b, c: ([a[0], make((2, 3))], b, c),
     "As[1]: expected shape (3, 2) for A of problem 'b', got (2, 3)"),
    (lambda make, a, b, c: (a, [make((6, 4)), b[1]], c), "Bs[0]: the array is row-major but the schedule says "
                                                         "`layout B col`"),
    (lambda make, a, b, c: ([make((8, 6), typestr="<f8"), a[1]], b, c), "As[0]: expected dtype float32"),
    (lambda make, a, b, c: (a, b, [make((8, 4), strides=(32, 8)), c[1]]),
     "Cs[0]: expected a densely packed row-major array, got element strides (8, 2)"),
    (lambda make, a, b, c: (a, b, [make((8, 4, 1)), c[1]]), "Cs[0]: expected a 2-D array"),
    (lambda make, a, b, c: (a[0], b, c), "As: expected a list of 2 arrays"),
    (lambda make, a, b, c: (a, b, [c[0], c[0]]), "Cs[1]: expected shape (3, 5)"),
    (lambda make, a, b, c: (["not an array", a[1]], b, c), "As[0]: expected a GPU array"),
    (lambda make, a, b, c: (a, b, [c[0], "not an array"]), "Cs[1]: expected a GPU array"),
])
def test_bad_arguments_are_named(kind, change, message):
    with pytest.raises(gemmc.GemmcError) as info:
        batch_pointers(KERNEL, *change(KINDS[kind], *args(kind)), EXPECTED, device=0)
    assert message in str(info.value) and info.value.code == "E400"


def test_a_bare_array_for_a_kernel_of_one_gemm_shows_the_lists():
    k = gemmc.compile_string("kernel k { gemm 8 x 4 x 6 }")["k"].ir
    make = KINDS["cai"]
    with pytest.raises(gemmc.GemmcError, match=r"^error\[E400\]: As: expected a list of 1 arrays in batch order \(a "
                                               r"kernel of one GEMM too: k\(\[A\], \[B\], \[C\]\)\), got FakeArray$"):
        batch_pointers(k, make((8, 6)), [make((6, 4))], [make((8, 4))], expected_operands(k), device=0)


@pytest.mark.parametrize("kind", KINDS)
def test_int64_group_ends_say_how_to_convert(kind):
    from gemmc.runtime.dynamic import ends

    make = KINDS[kind]
    assert ends(make((4,), typestr="<i4"), device=0, max_groups=8).shape == (4,)
    with pytest.raises(gemmc.GemmcError) as info:
        ends(make((4,), typestr="<i8"), device=0, max_groups=8)
    assert str(info.value) == ("error[E400]: offsets: expected a 1-D int32 array of cumulative group ends, got int64 "
                               "with shape (4,) (torch: `ends.to(torch.int32)`; torch.cumsum returns int64)")
    with pytest.raises(gemmc.GemmcError) as info:  # the conversion is named only where it is the fix
        ends(make((4,), typestr="<f4"), device=0, max_groups=8)
    assert "torch" not in str(info.value)


def test_a_dynamic_kernels_operand_is_named_with_what_it_holds():
    from gemmc.runtime.dynamic import operand

    holds = "rows x 8: the groups' rows stacked"
    assert operand(FakeArray((5, 8)), "A", "float32", 0, 2, holds).shape == (5, 8)
    for array, device, message in [
        (FakeArray((5, 8, 1)), 0, "A: expected a 2-D array (rows x 8: the groups' rows stacked), got shape (5, 8, 1)"),
        (FakeArray((5, 8), typestr="<f8"), 0, "A: expected dtype float32 (the schedule's dtype), got float64"),
        (FakeTensor((5, 8)), 1, "A: lives on GPU 0, but the current device is GPU 1"),
    ]:
        with pytest.raises(gemmc.GemmcError) as info:
            operand(array, "A", "float32", device, 2, holds)
        assert str(info.value) == f"error[E400]: {message}"


def test_an_array_on_another_gpu_or_the_cpu_is_named():
    a, b, c = args("cupy")
    with pytest.raises(gemmc.GemmcError, match=r"As\[0\]: lives on GPU 0, but the current device is GPU 1"):
        batch_pointers(KERNEL, a, b, c, EXPECTED, device=1)
    a, b, c = args("torch")
    with pytest.raises(gemmc.GemmcError, match=r"As\[1\]: the tensor is on the CPU"):
        batch_pointers(KERNEL, [a[0], FakeTensor((3, 2), device=-1)], b, c, EXPECTED, device=0)


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


# --- the launch path, with a stand-in CuPy (tests/conftest.py: `launches`) ----------------------------------


def batch(shapes, kind="cupy"):
    make = KINDS[kind]
    return ([make((m, k)) for m, n, k in shapes], [make((k, n)) for m, n, k in shapes],
            [make((m, n)) for m, n, k in shapes])


def test_the_pointer_table_is_uploaded_once_per_set_of_arrays(launches):
    k = gemmc.compile_string("kernel k { batch { a 8 x 4 x 6  b 3 x 5 x 2 } }")["k"]
    As, Bs, Cs = batch([(8, 4, 6), (3, 5, 2)])
    k(As, Bs, Cs)
    k(As, Bs, Cs)
    first, second = launches
    assert [list(t) for t in first[3:6]] == [[pointer(x) for x in g] for g in (As, Bs, Cs)]
    assert all(x is y for x, y in zip(first[3:6], second[3:6], strict=True))
    assert len(k.executable.pointers) == 1


def test_two_outputs_in_one_array_are_refused(launches):
    k = gemmc.compile_string("kernel k { batch { a 8 x 4 x 6  b 8 x 4 x 6 } }")["k"]
    As, Bs, Cs = batch([(8, 4, 6)] * 2)
    k(As, Bs, Cs)
    with pytest.raises(gemmc.GemmcError, match=r"Cs\[0\] and Cs\[1\] overlap"):
        k(As, Bs, [Cs[0], Cs[0]])


@pytest.mark.parametrize("kind", KINDS)
def test_a_batch_of_other_sizes_is_replanned_once_and_passed_in_plan_order(launches, kind):
    k = gemmc.compile_file("examples/inception3.gs")["inception3"]
    shapes = [(97, 13, 251), (1, 1, 1), (196, 24, 7), (50, 300, 33), (97, 13, 251)]
    As, Bs, Cs = batch(shapes, kind)
    k(As, Bs, Cs)
    k(As, Bs, Cs)
    order = sorted(range(len(shapes)), key=shapes.__getitem__)
    for args_ in launches:
        assert [list(t) for t in args_[3:6]] == [[pointer(g[i]) for i in order] for g in (As, Bs, Cs)]
    (replan,) = k.executable.replans.values()
    assert replan.kernel is k.plan_for(shapes).executable and replan.order == order and len(replan.pointers) == 1
    # An error in the re-planned call names the array the caller passed (Cs[3] is the plan's problem 1).
    wrong = Cs[:3] + [KINDS[kind]((50, 299))] + Cs[4:]
    with pytest.raises(gemmc.GemmcError, match=r"Cs\[3\]: expected shape \(50, 300\)"):
        k(As, Bs, wrong)


def test_a_permuted_batch_of_the_schedule_sizes_is_an_error_not_a_replan(launches):
    k = gemmc.compile_file("examples/inception3.gs")["inception3"]
    with pytest.raises(gemmc.GemmcError, match=r"Bs\[0\]: expected shape \(192, 192\) for B of problem 'b1x1'"):
        k(*batch(k.shapes[::-1]))
    with pytest.raises(gemmc.GemmcError, match="inner dimensions differ"):
        k(*batch([(5, 6, 7)])[:1], *batch([(5, 6, 8)])[1:])

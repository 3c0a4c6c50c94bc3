"""The run-time fuzz test without a GPU: argument sets drawn by tests/args_fuzz.py, made into stand-ins of CuPy
arrays, torch tensors and __cuda_array_interface__ objects (pointers into address ranges, no memory), passed to a
few kernels through the launch path with a stand-in CuPy. gemmc may raise nothing but GemmcError; it must refuse
what `verdict` refuses and accept what it accepts, and launch a valid call on the arrays' own pointers.
tests/gpu/test_args_fuzz_gpu.py runs the same argument sets on a GPU and checks the results."""

from __future__ import annotations

import itertools
import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import gemmc
from tests.args_fuzz import KERNELS, TYPESTR, Call, View, calls, verdict

BASES = itertools.count(1 << 36, 1 << 32)  # each call's buffers at addresses no earlier call used


class CaiView:
    def __init__(self, ptr: int, v: View):
        self.__cuda_array_interface__ = {"shape": v.shape, "typestr": (">" if v.big_endian else "<") + TYPESTR[v.dtype],
                                         "strides": v.byte_strides, "data": (ptr, v.readonly), "version": 3}


class CupyView:
    def __init__(self, ptr: int, v: View):
        self.dtype, self.itemsize = np.dtype(v.dtype), v.item
        self.shape, self.strides = v.shape, v.byte_strides
        self.data = types.SimpleNamespace(ptr=ptr, device_id=v.device)


class TorchDtype(str):
    pass


class TensorView:
    def __init__(self, ptr: int, v: View):
        self.shape, self._strides, self._ptr, self._item, self._device = v.shape, v.strides, ptr, v.item, v.device
        self.dtype, self.requires_grad, self.is_cuda = TorchDtype(f"torch.{v.dtype}"), v.readonly, True

    def data_ptr(self):
        return self._ptr

    def stride(self):
        return self._strides

    def element_size(self):
        return self._item

    def get_device(self):
        return self._device


CupyView.__module__ = "cupy"
TensorView.__module__, TensorView.__name__ = "torch", "Tensor"
MAKE = {"cai": CaiView, "cupy": CupyView, "torch": TensorView}


def stand_ins(call: Call) -> tuple[tuple, dict[int, int]]:
    base = next(BASES)
    bases = {b: base + b * (1 << 24) for b in call.buffers()}

    def make(v: View, slot: int):
        return np.zeros(v.shape, v.dtype) if v.host else MAKE[call.kind](bases[v.buffer] + v.start, v)

    return call.args(make), bases


def c_pointers(call: Call, bases: dict[int, int]) -> list[int]:
    group = call.groups[2]
    views = group if isinstance(group, list) else group.matrices()
    return [bases[v.buffer] + v.start for v in views]


@pytest.mark.parametrize("name", KERNELS)
def test_only_gemmc_errors_and_the_right_verdicts(launches, name):
    kernel = gemmc.compile_string(KERNELS[name])["k"]

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(calls(kernel.ir, devices=2))
    def run(call: Call) -> None:
        outcome, why = verdict(call, kernel.ir)
        args, bases = stand_ins(call)
        launched = len(launches)
        try:
            kernel(*args, **call.scalars())
        except gemmc.GemmcError as err:
            assert outcome != "accept", f"a valid call was refused: {err}\n{call}"
            assert len(launches) == launched, "refused after a launch"
            return
        assert outcome != "refuse", f"accepted, but {why}:\n{call}"
        if outcome == "accept":
            assert [int(p) for p in launches[-1][5]] == c_pointers(call, bases)

    run()


def test_the_fuzz_draws_every_verdict():
    # The strategies must reach valid calls, refused ones and re-planned ones, or the test above checks little.
    from hypothesis import find

    kernel = gemmc.compile_string(KERNELS["simt"])["k"].ir
    for outcome in ("accept", "refuse", "either"):
        find(calls(kernel), lambda c, o=outcome: verdict(c, kernel)[0] == o,
             settings=settings(max_examples=500, derandomize=True, database=None))

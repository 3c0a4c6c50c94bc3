"""The run-time fuzz test on a GPU: the argument sets of tests/args_fuzz.py (wrong shapes, dtypes, strides,
layouts, overlapping and non-contiguous views, read-only and big-endian arrays, host arrays, another GPU where there
is one, bad scalars; and valid variations) made into real CuPy arrays, torch tensors and __cuda_array_interface__
objects over device buffers, passed to a few compiled kernels. gemmc may raise nothing but GemmcError; it must
refuse what `verdict` refuses and run what it accepts; and whatever it runs must match a float64 reference (outputs
NaN-poisoned where beta is 0) and leave every byte outside the outputs as it was."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import gemmc
from tests.args_fuzz import KERNELS, TYPESTR, Call, View, calls, verdict

pytestmark = pytest.mark.gpu

TOLERANCE = {"simt": 1e-5, "count": 1e-12, "tsm2r": 1e-5, "tensorcore": 1e-4}
CANARY = 0x7F  # every byte of a buffer before the arrays are filled: 3.4e38 as f32, a kernel reading it shows


class Interface:
    """A bare __cuda_array_interface__ over a buffer (any strides, byte order and read-only flag)."""

    def __init__(self, buffer: Any, v: View):
        self.buffer = buffer  # keeps the memory alive
        self.__cuda_array_interface__ = {"shape": v.shape, "typestr": (">" if v.big_endian else "<") + TYPESTR[v.dtype],
                                         "strides": v.byte_strides, "data": (buffer.data.ptr + v.start, v.readonly),
                                         "version": 3}


def _cupy_view(cp: Any, buffer: Any, v: View) -> Any:
    return cp.ndarray(v.shape, dtype=v.dtype, memptr=buffer.data + v.start, strides=v.byte_strides)


def _torch_view(buffer: Any, v: View) -> Any:
    import torch

    whole = torch.from_dlpack(buffer).view(getattr(torch, v.dtype))
    out = torch.as_strided(whole, v.shape, v.strides, v.start // v.item)
    return out.requires_grad_() if v.readonly else out


def _plain(v: View) -> bool:
    """A view CuPy can show as it is: whole items, native order (the others are refused; their bytes are never
    filled or read back)."""
    return not (v.host or v.big_endian or v.stride_skew or v.start % v.item)


class Arrays:
    """A call's buffers on the device, its views filled with random inputs (outputs NaN where beta is 0), and
    what each held before the call."""

    def __init__(self, cp: Any, call: Call, beta: float, seed: int):
        self.cp, self.call = cp, call
        devices = {v.buffer: v.device for v in call.views}
        self.buffers = {}
        for b, size in call.buffers().items():
            with cp.cuda.Device(devices[b]):
                self.buffers[b] = cp.full((size + 7) // 8 * 8, CANARY, dtype=cp.uint8)
        rng = np.random.default_rng(seed)
        for slot, group in enumerate(call.groups):
            for v in group if isinstance(group, list) else [group]:
                for m in v.matrices():
                    if _plain(m) and not v.host:
                        with cp.cuda.Device(v.device):
                            view = _cupy_view(cp, self.buffers[v.buffer], m)
                            view[...] = cp.nan if slot == 2 and beta == 0 else cp.asarray(rng.uniform(-1, 1, m.shape))
        self.before = {b: buf.copy() for b, buf in self.buffers.items()}

    def make(self, v: View, slot: int) -> Any:
        if v.host:
            return np.zeros(v.shape, v.dtype)
        buffer = self.buffers[v.buffer]
        if self.call.kind == "torch":
            return _torch_view(buffer, v)
        if self.call.kind == "cupy":
            return _cupy_view(self.cp, buffer, v)
        return Interface(buffer, v)

    def problems(self, buffers: dict[int, Any]) -> list[tuple[Any, Any, Any]]:
        """(A, B, C) of each problem as float64 copies, read from `buffers`."""
        cp = self.cp
        mats = [[m for v in (g if isinstance(g, list) else [g]) for m in v.matrices()] for g in self.call.groups]
        return [tuple(_cupy_view(cp, buffers[m.buffer], m).astype(cp.float64) for m in ms)
                for ms in zip(*mats, strict=True)]

    def check(self, alpha: float, beta: float, tolerance: float) -> None:
        cp = self.cp
        cp.cuda.Device().synchronize()
        for p, ((a, b, c0), (_, _, c)) in enumerate(zip(self.problems(self.before), self.problems(self.buffers),
                                                           strict=True)):
            ref = alpha * (a @ b) + (beta * c0 if beta != 0 else 0)
            assert bool(cp.isfinite(c).all()), f"problem {p}: outputs left NaN/inf"
            err = float(cp.linalg.norm(c - ref)) / (float(cp.linalg.norm(ref)) or 1.0)
            assert err < tolerance, f"problem {p}: relative error {err:.2e}"
        written = {b: np.zeros(buf.size, bool) for b, buf in self.buffers.items()}
        group = self.call.groups[2]
        for v in group if isinstance(group, list) else [group]:
            for m in v.matrices():
                written[m.buffer][m.start:m.end] = True
        for b, buf in self.buffers.items():
            kept = cp.asarray(~written[b])
            assert bool((buf[kept] == self.before[b][kept]).all()), f"buffer {b}: bytes outside the outputs changed"

    def unchanged(self) -> bool:
        self.cp.cuda.Device().synchronize()
        return all(bool((buf == self.before[b]).all()) for b, buf in self.buffers.items())


@pytest.mark.parametrize("name", KERNELS)
def test_only_gemmc_errors_right_verdicts_and_right_results(name):
    import cupy as cp

    kernel = gemmc.compile_string(KERNELS[name])["k"]
    ir = kernel.ir
    devices = cp.cuda.runtime.getDeviceCount()
    seeds = iter(range(1 << 30))

    @settings(max_examples=60, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(calls(ir, devices=devices))
    def run(call: Call) -> None:
        outcome, why = verdict(call, ir)
        alpha = ir.alpha if ir.alpha is not None else call.alpha
        beta = ir.beta if ir.beta is not None else call.beta
        arrays = Arrays(cp, call, beta if isinstance(beta, float) else -0.5, next(seeds))
        try:
            kernel(*call.args(arrays.make), **call.scalars())
        except gemmc.GemmcError as err:
            assert outcome != "accept", f"a valid call was refused: {err}\n{call}"
            assert arrays.unchanged(), "a refused call wrote memory (a launch before the error)"
            return
        assert outcome != "refuse", f"accepted, but {why}:\n{call}"
        arrays.check(float(alpha), float(beta), TOLERANCE[name])

    run()

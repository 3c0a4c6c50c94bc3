"""The split emulator (gemmc/families/tensorcore/emulate.py): hand-checked bit patterns, 2^10 vs 2^11, RZ vs RN, and the
error ordering the digest of paper 001 predicts."""

from __future__ import annotations

import numpy as np
import pytest

from gemmc.families.tensorcore.emulate import (
    emulate_gemm,
    error_metrics,
    round_bf16,
    round_f16,
    round_tf32,
    scale_shifts,
    split,
)
from gemmc.families.tensorcore.split import split_plan
from gemmc.ir.types import DType, Precision

LE = split_plan(Precision(DType.F16, 3, "le"))
OOTOMO = split_plan(Precision(DType.F16, 3, "ootomo"))


def f16_bits(x: float) -> int:
    return int(np.float16(x).view(np.uint16))


def test_scales_and_rounding_of_each_method():
    assert (LE.scale_bits, LE.hi_round, LE.lo_round) == (10, "rz", "rz")  # paper 001 Eqs. 5-8
    assert (OOTOMO.scale_bits, OOTOMO.hi_round, OOTOMO.lo_round) == (11, "rn", "rn")
    assert split_plan(Precision(DType.F16, 3)).method == "ootomo"  # the default: the more accurate one
    markidis = split_plan(Precision(DType.F16, 4, "markidis"))
    assert markidis.scale_bits == 0 and len(markidis.terms) == 4 and markidis.accumulators == 1
    assert len(split_plan(Precision(DType.BF16, 6)).terms) == 6


def test_hand_checked_f16_split():
    # a = 1 + 2^-11 + 2^-13: RN to f16 rounds up to 1 + 2^-10, RZ (truncation) keeps 1.
    a = np.array([1 + 2.0 ** -11 + 2.0 ** -13], dtype=np.float32)
    hi, lo = split(a, OOTOMO)
    assert f16_bits(hi[0]) == 0x3C01 and f16_bits(lo[0]) == 0xBA00  # lo = RN((a - hi) * 2^11) = -0.75
    hi, lo = split(a, LE)
    assert f16_bits(hi[0]) == 0x3C00 and f16_bits(lo[0]) == 0x3900  # lo = RZ((a - hi) * 2^10) = 0.625


def test_rz_never_rounds_away():
    x = np.random.default_rng(0).standard_normal(10000).astype(np.float32)
    assert np.all(np.abs(round_f16(x, "rz")) <= np.abs(x))
    assert round_f16(np.array([1e6], dtype=np.float32), "rz")[0] == 65504.0  # saturates, no inf
    assert np.isinf(round_f16(np.array([1e6], dtype=np.float32), "rn")[0])


def test_bf16_and_tf32_bits():
    x = np.array([1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, 1 + 2.0 ** -11], dtype=np.float32)
    assert list(round_bf16(x)) == [1.0, 1 + 2.0 ** -6, 1.0]  # ties to even
    assert list(round_tf32(x)) == [1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, 1 + 2.0 ** -10]  # tie away from zero


def test_two_parts_hold_every_bit_of_f32_in_range():
    x = np.random.default_rng(1).uniform(-1, 1, 1000).astype(np.float32)
    for plan in (OOTOMO, split_plan(Precision(DType.BF16, 6))):
        parts = split(x, plan)
        back = sum(np.ldexp(p, -i * plan.scale_bits) for i, p in enumerate(parts))
        assert np.max(np.abs(back - x) / np.abs(x)) < 2.0 ** -20


def test_scale_shifts_bring_rows_into_f16_range():
    a = np.array([[3e6, 1.0], [1e-7, 0.0], [0.0, 0.0]], dtype=np.float32)
    s = scale_shifts(a, 1)
    scaled = np.ldexp(np.abs(a).max(axis=1), s)
    assert np.all((scaled[:2] >= 2 ** 14) & (scaled[:2] < 2 ** 15)) and s[2] == 0


def test_b_columns_leave_room_for_the_premultiplied_hi_part():
    # The kernel sums hi*hi*2^11 with the correction terms on the tensor core: B's hi part times 2^11 must stay a
    # finite f16, so B's columns are scaled below 2^(15 - 11).
    assert (OOTOMO.premul_bits, OOTOMO.top_b, OOTOMO.level_factor_bits) == (11, 4, 11)
    assert (LE.premul_bits, LE.top_b) == (10, 5)
    assert split_plan(Precision(DType.F16, 4, "markidis")).premul_bits == 0
    b = np.random.default_rng(5).standard_normal((300, 40)).astype(np.float32) * 1e4
    scaled = np.ldexp(b, scale_shifts(b, 0, OOTOMO.top_b)[None, :].astype(np.int32)).astype(np.float32)
    hi = split(scaled, OOTOMO)[0]
    assert np.max(np.abs(hi)) * 2.0 ** 11 <= 32768 < 65504


def _errors(prec: Precision, a, b, ref) -> float:
    return error_metrics(emulate_gemm(a, b, split_plan(prec)), ref)["rel_fro"]


def test_error_ordering_matches_the_digest():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((64, 512)).astype(np.float32)
    b = rng.standard_normal((512, 48)).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    e = {name: _errors(p, a, b, ref) for name, p in {
        "f16": Precision(DType.F16), "le": Precision(DType.F16, 3, "le"), "ootomo": Precision(DType.F16, 3, "ootomo"),
        "markidis": Precision(DType.F16, 4, "markidis"), "bf16x3": Precision(DType.BF16, 3),
        "bf16x6": Precision(DType.BF16, 6), "tf32x3": Precision(DType.TF32, 3)}.items()}
    assert e["ootomo"] < e["le"]  # digest 001 §2.7: RN split beats the truncating split
    assert e["f16"] / e["ootomo"] > 300  # the goal, before f32 accumulation error
    assert e["bf16x6"] < e["bf16x3"]
    assert max(e["ootomo"], e["tf32x3"], e["bf16x6"]) < 1e-6


@pytest.mark.parametrize("mode", ["f16", "split f16 x3 method le", "split f16 x3", "split f16 x4 method markidis"])
def test_far_outside_f16_range(mode):
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((20, 40)) * np.exp2(rng.integers(-60, 61, (20, 1)))).astype(np.float32)
    b = (rng.standard_normal((40, 10)) * np.exp2(rng.integers(-60, 61, (1, 10)))).astype(np.float32)
    words = mode.split()
    prec = Precision(DType.F16) if mode == "f16" else Precision(DType.F16, int(words[2][1:]),
                                                               words[4] if len(words) > 4 else "ootomo")
    out = emulate_gemm(a, b, split_plan(prec))
    ref = a.astype(np.float64) @ b.astype(np.float64)
    natural = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert np.all(np.isfinite(out))
    assert np.max(np.abs(out - ref) / natural) < (1e-3 if mode == "f16" else 1e-6)

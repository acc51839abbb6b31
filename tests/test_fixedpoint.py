"""kernels_py.fixedpoint against independent definitions written from the math, not the C.

The oracle here uses exact rational arithmetic (``fractions.Fraction``) and states each
rounding in words, so a transliteration slip in fixedpoint.py cannot hide in both.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from kernels_py import fixedpoint as fp

I32 = st.integers(-(2**31), 2**31 - 1)


def _round_half_up(q: Fraction) -> int:
    return math.floor(q + Fraction(1, 2))


def _round_half_away(q: Fraction) -> int:
    return int(math.copysign(math.floor(abs(q) + Fraction(1, 2)), q)) if q else 0


def _wrap(x: int) -> int:
    return (x + 2**31) % 2**32 - 2**31


def oracle_high_mult(a: int, b: int) -> int:
    """a·b / 2^31 rounded half toward +inf (VQRDMULH), saturating the single overflow."""
    return min(_round_half_up(Fraction(a * b, 2**31)), 2**31 - 1)


def oracle_divide_pow2(x: int, e: int) -> int:
    """x / 2^e rounded half away from zero."""
    return _round_half_away(Fraction(x, 2**e))


def oracle_requantize(val: int, mult: int, shift: int) -> int:
    """Double rounding: (val · 2^left wrapped to int32) · mult / 2^31 half-up, then / 2^right half-away."""
    scaled = _wrap(val * 2 ** max(shift, 0))
    high = _wrap(_round_half_up(Fraction(scaled * mult, 2**31)))
    return oracle_divide_pow2(high, max(-shift, 0))


def oracle_requantize_single(val: int, mult: int, shift: int) -> int:
    """Single rounding: val · mult / 2^(31 - shift), rounded half up once."""
    return _round_half_up(Fraction(val * mult, 2 ** (31 - shift)))


# --- 100k+ values including the edges -----------------------------------------------

EDGE_VALUES = [0, 1, -1, 2, -2, 127, -128, 255, -255, 2**15, -(2**15), 2**30, -(2**30), 2**31 - 1, -(2**31)]
EDGE_MULTS = [0, 1, 1 << 30, (1 << 30) + 1, (1 << 31) - 1, (1 << 31) - 2, 1518500250]
EDGE_SHIFTS = [-31, -30, -16, -8, -1, 0, 1, 2, 8, 30]


def _requantize_cases(n_random: int, seed: int = 20261129):
    rng = np.random.default_rng(seed)
    cases = [(v, m, s) for v in EDGE_VALUES for m in EDGE_MULTS for s in EDGE_SHIFTS]
    # Accumulator-sized values (what conv/FC produce), full-range values, and exact midpoints.
    vals = np.concatenate(
        [
            rng.integers(-(2**20), 2**20, n_random // 2),
            rng.integers(-(2**31), 2**31, n_random // 2),
        ]
    )
    mults = rng.integers(1 << 30, 1 << 31, n_random)
    shifts = rng.integers(-31, 31, n_random)
    cases += list(zip(vals.tolist(), mults.tolist(), shifts.tolist(), strict=True))
    return cases


def test_requantize_matches_oracle_on_100k_values():
    cases = _requantize_cases(100_000)
    assert len(cases) >= 100_000
    mismatches = [
        (v, m, s, fp.requantize(v, m, s), oracle_requantize(v, m, s))
        for v, m, s in cases
        if fp.requantize(v, m, s) != oracle_requantize(v, m, s)
    ]
    assert mismatches[:5] == []


def test_requantize_midpoints_round_away_from_zero():
    # multiplier 2^30 is 0.5 in Q0.31; shift -1 halves again: v / 4. For even v the first
    # (high-multiply) step is exact, so only the final divide rounds: half away from zero.
    for v, expected in [(2, 1), (-2, -1), (6, 2), (-6, -2), (4, 1), (-4, -1), (0, 0)]:
        assert fp.requantize(v, 1 << 30, -1) == expected, v


def test_double_rounding_differs_from_single_rounding():
    # v = 1: 1·0.5 = 0.5 rounds up to 1 in the high multiply, then 1/2 = 0.5 rounds away to 1,
    # although 1/4 = 0.25 is nearer 0 — the single-rounding build gives 0.
    assert fp.requantize(1, 1 << 30, -1) == 1
    assert fp.requantize_single_rounding(1, 1 << 30, -1) == 0
    # v = -3: -1.5 rounds half up to -1, then -0.5 rounds away to -1; single rounding: -0.75 → -1.
    assert fp.requantize(-3, 1 << 30, -1) == -1


@given(I32, st.integers(-(2**31), 2**31 - 1), st.integers(-31, 30))
def test_requantize_single_rounding_matches_oracle(val, mult, shift):
    # The single-rounding build narrows (val·mult) >> (30 - shift) to int32; stay where that is exact.
    assume(abs(val * mult) >> (30 - shift) < 2**31)
    assert fp.requantize_single_rounding(val, mult, shift) == oracle_requantize_single(val, mult, shift)


@given(I32, I32)
def test_doubling_high_mult_matches_vqrdmulh(a, b):
    assert fp.doubling_high_mult(a, b) == oracle_high_mult(a, b)


def test_doubling_high_mult_saturates_only_at_min_times_min():
    assert fp.doubling_high_mult(-(2**31), -(2**31)) == 2**31 - 1
    assert fp.doubling_high_mult(-(2**31), 2**31 - 1) == -(2**31) + 1
    # The non-saturating form wraps there, as CMSIS-NN documents.
    assert fp.doubling_high_mult_no_sat(-(2**31), -(2**31)) == -(2**31)


@given(I32, I32)
def test_doubling_high_mult_no_sat_equals_saturating_off_the_overflow(a, b):
    if not (a == b == -(2**31)):
        assert fp.doubling_high_mult_no_sat(a, b) == fp.doubling_high_mult(a, b)


@given(I32, st.integers(0, 31))
def test_divide_by_power_of_two(x, e):
    assert fp.divide_by_power_of_two(x, e) == oracle_divide_pow2(x, e)


@given(I32, st.integers(0, 30))
def test_mult_by_power_of_two_saturates(x, e):
    exact = x * 2**e
    assert fp.mult_by_power_of_two(x, e) == max(-(2**31), min(2**31 - 1, exact))


@pytest.mark.parametrize(
    ("scale", "expected"),
    [
        (0.5, (1 << 30, 0)),
        (1.0, (1 << 30, 1)),
        (0.25, (1 << 30, -1)),
        (0.0, (0, 0)),
        (2.0**-40, (0, 0)),  # below 2^-32: every result would be zero → (0, 0)
        (2.0**40, (2**31 - 1, 30)),  # saturates to the largest left shift
        (-0.5, (-(1 << 30), 0)),
        (1.0 - 2.0**-33, (1 << 30, 1)),  # mantissa rounds up to 2^31 → renormalised
    ],
)
def test_quantize_multiplier_edges(scale, expected):
    assert fp.quantize_multiplier(scale) == expected


@given(st.floats(2.0**-31, 2.0**30, allow_nan=False, allow_infinity=False))
def test_quantize_multiplier_reconstructs_the_scale(scale):
    q, e = fp.quantize_multiplier(scale)
    # a normalised Q0.31 mantissa: in [2^30, 2^31)
    assert (1 << 30) <= q < (1 << 31)
    assert abs(q * 2.0 ** (e - 31) - scale) <= scale * 2.0**-30


def test_quantize_multiplier_rejects_non_finite():
    with pytest.raises(ValueError, match="finite"):
        fp.quantize_multiplier(float("nan"))


def test_exp_on_negative_values_tracks_exp():
    # Input Q5.26 (x = val / 2^26, x <= 0), output Q0.31.
    for x in [0.0, -1 / 64, -0.25, -0.5, -1.0, -2.0, -4.0, -8.0, -16.0, -31.9]:
        val = round(x * 2**26)
        got = fp.exp_on_negative_values(val) / 2**31
        assert abs(got - math.exp(val / 2**26)) < 2e-8 + 1e-6 * math.exp(x), x


def test_one_over_one_plus_x_tracks_reciprocal():
    # Input Q0.31 x in [0, 1), output Q1.30 (1 / (1 + x)); x = 0 saturates to INT32_MAX.
    assert fp.one_over_one_plus_x_for_x_in_0_1(0) == 2**31 - 1
    for x in [0.001, 0.25, 0.5, 0.75, 0.999]:
        got = fp.one_over_one_plus_x_for_x_in_0_1(round(x * 2**31)) / 2**31
        assert abs(got - 1 / (1 + x)) < 1e-8, x


def test_elementwise_add_params_follow_tflm_prepare():
    p = fp.elementwise_add_params(0.5, 0.25, 1.0)
    # twice_max = 1.0: input_1 scale 0.5 → (2^30, 0); input_2 0.25 → (2^30, -1)
    assert (p["input_1_mult"], p["input_1_shift"]) == (1 << 30, 0)
    assert (p["input_2_mult"], p["input_2_shift"]) == (1 << 30, -1)
    # out = 1 / (2^20 · 1.0) = 2^-20 → (2^30, -19)
    assert (p["out_mult"], p["out_shift"]) == (1 << 30, -19)
    assert p["left_shift"] == 20


def test_requantized_add_worked_example():
    # x1 = 10 (zp 0, scale 0.5), x2 = 20 (zp 0, scale 0.25), out scale 1.0, zp 0:
    # real sum = 10·0.5 + 20·0.25 = 10 → 10.
    p = fp.elementwise_add_params(0.5, 0.25, 1.0)
    got = fp.requantized_add(
        10,
        20,
        0,
        p["input_1_mult"],
        p["input_1_shift"],
        0,
        p["input_2_mult"],
        p["input_2_shift"],
        p["left_shift"],
        0,
        p["out_mult"],
        p["out_shift"],
        -128,
        127,
    )
    assert got == 10


def test_requantized_mul_worked_example():
    # (3 + 1) · (5 - 1) = 16; times 0.5 (2^30, 0) = 8; + out_offset 2 = 10.
    assert fp.requantized_mul(3, 5, 1, -1, 2, 1 << 30, 0, -128, 127) == 10
    # clamps
    assert fp.requantized_mul(127, 127, 1, 1, 0, (1 << 31) - 1, 0, -128, 127) == 127

"""TFLM's quantization helpers and gemmlowp's fixed-point math, on Python ints and int64 arrays.

Sources (TFLM 90b983c2 and the gemmlowp it downloads):

* ``tensorflow/lite/kernels/internal/quantization_util.cc``: ``QuantizeMultiplier``,
  ``CalculateInputRadius`` (the build has neither ``TFLITE_EMULATE_FLOAT`` nor
  ``TFLITE_SINGLE_ROUNDING``: frexp in double, double-rounding requantization);
* ``tensorflow/lite/kernels/internal/common.{h,cc}``: ``MultiplyByQuantizedMultiplier`` (int32
  overload), ``DownScaleInt32ToInt16Multiplier``;
* ``fixedpoint/fixedpoint.h`` (gemmlowp): ``SaturatingRoundingDoublingHighMul``,
  ``RoundingDivideByPOT``, ``SaturatingRoundingMultiplyByPOT``, ``RoundingHalfSum``,
  ``exp_on_negative_values``, ``one_over_one_plus_x_for_x_in_0_1``,
  ``one_minus_x_over_one_plus_x_for_x_in_0_1``, ``logistic``, ``tanh``.

Integer model: C's int32 ``+``/``-``/``<<`` on values that overflow wrap (two's complement, what
both x86-64 and Cortex-M do); `wrap32` applies it where the C code can overflow. A
``FixedPoint<int32_t, k>`` is its raw int32; ``k`` is passed explicitly where it matters.
"""

from __future__ import annotations

import math

import numpy as np

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def wrap32(x: int) -> int:
    """Two's-complement narrowing to int32."""
    return ((int(x) + 0x80000000) & 0xFFFFFFFF) - 0x80000000


def wrap16(x: int) -> int:
    """Two's-complement narrowing to int16 (a C ``int16_t`` assignment of an int)."""
    return ((int(x) + 0x8000) & 0xFFFF) - 0x8000


def _cdiv(a: int, b: int) -> int:
    """C's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


# --- Prepare-time parameters ------------------------------------------------------------------------


def tflite_round(x: float) -> float:
    """``TfLiteRound`` (``std::round``): half away from zero, on a double (infinities and NaN
    unchanged)."""
    if not math.isfinite(x):
        return x
    return math.copysign(math.floor(abs(x) + 0.5), x)


def quantize_multiplier(real: float) -> tuple[int, int]:
    """``QuantizeMultiplier(double)``: ``(q, e) = frexp(real)``, ``q_fixed = round(q * 2^31)``; a
    ``q_fixed`` of 2^31 halves and bumps the shift; a shift below -31 flushes to ``(0, 0)``. No
    saturation above 30 (that is the single-rounding build only). Positive shift = left.
    Raises ValueError for an infinite or NaN ``real`` (``frexp``'s exponent is then unspecified)."""
    if not math.isfinite(real):
        raise ValueError(f"real multiplier {real} is not finite (a scale quotient overflowed)")
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    q_fixed = int(tflite_round(q * 2.0**31))
    if q_fixed == 2**31:
        q_fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return q_fixed, shift


def frexp_multiplier(real: float) -> tuple[int, int]:
    """The logistic/tanh Prepare's own split: ``q = frexp(real, &shift)``,
    ``(int32_t)TfLiteRound(q * 2^31)`` with no 2^31 fix-up (a float32 scale's mantissa never
    rounds up to 1)."""
    q, shift = math.frexp(real)
    return int(tflite_round(q * 2.0**31)), shift


def calculate_input_radius(
    input_integer_bits: int, input_left_shift: int, total_signed_bits: int = 31
) -> int:
    """``CalculateInputRadius``: ``floor((2^ib - 1) * 2^(31 - ib) / 2^shift)`` in double."""
    value = 1.0 * ((1 << input_integer_bits) - 1) * (1 << (total_signed_bits - input_integer_bits))
    return math.floor(value / (1 << input_left_shift))


def downscale_int32_to_int16_multiplier(m: int) -> int:
    """``DownScaleInt32ToInt16Multiplier``: ``(m + 2^15) >> 16``, 32767 near the top."""
    if m >= INT32_MAX - (1 << 15):
        return 32767
    return (m + (1 << 15)) >> 16


# --- gemmlowp scalar primitives (int32) ---------------------------------------------------------------


def srdhm(a: int, b: int) -> int:
    """``SaturatingRoundingDoublingHighMul<int32_t>``: ``(a*b + nudge) / 2^31`` (C division), the
    nudge ``2^30`` or ``1 - 2^30`` by the product's sign; ``INT32_MIN^2`` saturates."""
    if a == b == INT32_MIN:
        return INT32_MAX
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    return wrap32(_cdiv(ab + nudge, 1 << 31))


def rdbpot(x: int, exponent: int) -> int:
    """``RoundingDivideByPOT<int32_t>``: round to nearest, ties away from zero; exponent in [0, 31]."""
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def srmbpot(x: int, exponent: int) -> int:
    """``SaturatingRoundingMultiplyByPOT<exponent>`` on int32: a saturating left shift or `rdbpot`."""
    if exponent == 0:
        return x
    if exponent < 0:
        return rdbpot(x, -exponent)
    threshold = (1 << (31 - exponent)) - 1
    if x > threshold:
        return INT32_MAX
    if x < -threshold:
        return INT32_MIN
    return wrap32(x << exponent)


def multiply_by_quantized_multiplier(x: int, multiplier: int, shift: int) -> int:
    """``MultiplyByQuantizedMultiplier(int32_t, int32_t, int)``, double rounding:
    ``RoundingDivideByPOT(SRDHM(x * (1 << left), m), right)``; ``x * (1 << left)`` wraps."""
    left = shift if shift > 0 else 0
    right = -shift if shift < 0 else 0
    return rdbpot(srdhm(wrap32(x * (1 << left)), multiplier), right)


def multiply_by_quantized_multiplier_array(x: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    """`multiply_by_quantized_multiplier` on an int64 array of int32 values, elementwise, exactly.

    The doubling high multiply's truncating division is done on the magnitude; ``multiplier`` is
    never INT32_MIN here (TFLM's multipliers are in [0, 2^31)), so nothing saturates."""
    assert 0 <= multiplier <= INT32_MAX
    left = shift if shift > 0 else 0
    right = -shift if shift < 0 else 0
    v = np.asarray(x, np.int64) << left
    v = ((v + 0x80000000) & 0xFFFFFFFF) - 0x80000000  # int32 wrap of x * (1 << left)
    ab = v * multiplier
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    total = ab + nudge
    high = np.where(total >= 0, total >> 31, -((-total) >> 31))
    mask = (1 << right) - 1
    remainder = high & mask
    threshold = (mask >> 1) + (high < 0)
    return (high >> right) + (remainder > threshold)


# --- gemmlowp fixed-point functions (FixedPoint<int32_t, k> as raw ints) -----------------------------

_ONE_Q0 = INT32_MAX  # FixedPoint<int32, 0>::One(): saturated


def _one(integer_bits: int) -> int:
    """``FixedPoint<int32_t, k>::One()``: ``2^(31-k)``, or INT32_MAX for k = 0."""
    return INT32_MAX if integer_bits == 0 else 1 << (31 - integer_bits)


def rounding_half_sum(a: int, b: int) -> int:
    """``RoundingHalfSum<int32_t>``: ``(a + b + sign) / 2`` in int64, C division."""
    total = a + b
    return wrap32(_cdiv(total + (1 if total >= 0 else -1), 2))


def _exp_on_interval_between_negative_one_quarter_and_0_excl(a: int) -> int:
    """``exp_on_interval_between_negative_one_quarter_and_0_excl`` (Q0.31 in and out)."""
    constant_term = 1895147668  # exp(-1/8)
    constant_1_over_3 = 715827883
    x = wrap32(a + (1 << 28))  # a + 1/8
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    x4_over_4 = srmbpot(x4, -2)
    inner = srmbpot(wrap32(srdhm(wrap32(x4_over_4 + x3), constant_1_over_3) + x2), -1)
    return wrap32(constant_term + srdhm(constant_term, wrap32(x + inner)))


_EXP_BARREL = (
    (-2, 1672461947),
    (-1, 1302514674),
    (0, 790015084),
    (1, 290630308),
    (2, 39332535),
    (3, 720401),
    (4, 242),
)


def exp_on_negative_values(a: int, integer_bits: int) -> int:
    """``exp_on_negative_values<int32_t, k>``: ``exp(a)`` for ``a <= 0`` in Qk, result in Q0.31."""
    fractional_bits = 31 - integer_bits
    one_quarter = 1 << (fractional_bits - 2)
    mask = one_quarter - 1
    a_mod_quarter_minus_one_quarter = wrap32((a & mask) - one_quarter)
    # Rescale<0> from Qk: a saturating multiply by 2^k
    result = _exp_on_interval_between_negative_one_quarter_and_0_excl(
        srmbpot(a_mod_quarter_minus_one_quarter, integer_bits)
    )
    remainder = wrap32(a_mod_quarter_minus_one_quarter - a)
    for exponent, multiplier in _EXP_BARREL:
        if integer_bits > exponent:
            if remainder & (1 << (fractional_bits + exponent)):
                result = srdhm(result, multiplier)
    if integer_bits > 5:
        clamp_b = 36 - integer_bits
        if a < -(1 << clamp_b):
            result = 0
    if a == 0:
        result = _ONE_Q0
    return result


def _newton_reciprocal_half(half_denominator: int) -> int:
    """The three Newton-Raphson steps both ``one_*_over_one_plus_x_for_x_in_0_1`` share (Q2.29)."""
    x = wrap32(1515870810 + srdhm(half_denominator, -1010580540))  # 48/17 - 32/17 * d
    one_q2 = _one(2)
    for _ in range(3):
        half_denominator_times_x = srdhm(half_denominator, x)  # Q0 * Q2 -> Q2
        one_minus = wrap32(one_q2 - half_denominator_times_x)
        x = wrap32(x + srmbpot(srdhm(x, one_minus), 2))  # Rescale<2>(Q4) = *2^2 saturating
    return x


def one_over_one_plus_x_for_x_in_0_1(a: int) -> int:
    """``one_over_one_plus_x_for_x_in_0_1``: ``1 / (1 + a)``, Q0.31 in and out."""
    x = _newton_reciprocal_half(rounding_half_sum(a, _ONE_Q0))
    # Rescale<0>(ExactMulByPot<-1>(x)): Q1 raw x times 2^1, saturating
    return srmbpot(x, 1)


def one_minus_x_over_one_plus_x_for_x_in_0_1(a: int) -> int:
    """``one_minus_x_over_one_plus_x_for_x_in_0_1``: ``(1 - a) / (1 + a)``, Q0.31 in and out."""
    x = _newton_reciprocal_half(rounding_half_sum(a, _ONE_Q0))
    return srmbpot(wrap32(x - _one(2)), 2)  # Rescale<0> from Q2


def logistic(a: int, integer_bits: int) -> int:
    """``gemmlowp::logistic`` of a Qk raw value, result in Q0.31."""
    if a == 0:
        return 1 << 30
    abs_input = a if a > 0 else wrap32(-a)
    positive = one_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(wrap32(-abs_input), integer_bits))
    if a > 0:
        return positive
    return wrap32(_ONE_Q0 - positive)


def tanh(a: int, integer_bits: int) -> int:
    """``gemmlowp::tanh`` of a Qk raw value, result in Q0.31."""
    if a == 0:
        return 0
    n = a if a < 0 else wrap32(-a)
    # neg_tanh_on_negative_values: exp of ExactMulByPot<1>(n), i.e. the same raw in Q(k+1)
    t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(n, integer_bits + 1))
    return wrap32(-t) if a < 0 else t


# --- int16 helpers (hard_swish) -------------------------------------------------------------------------


def srdhm16(a: int, b: int) -> int:
    """``SaturatingRoundingDoublingHighMul<int16_t>``."""
    if a == b == -32768:
        return 32767
    ab = a * b
    nudge = (1 << 14) if ab >= 0 else 1 - (1 << 14)
    return wrap16(_cdiv(ab + nudge, 1 << 15))


def saturating_doubling_high_mul16(a: int, b: int) -> int:
    """``reference_ops::SaturatingDoublingHighMul`` (int16, truncating: SQDMULH)."""
    if a == b == -32768:
        return 32767
    return wrap16(_cdiv(a * b, 1 << 15))


def rdbpot16(x: int, exponent: int) -> int:
    """``RoundingDivideByPOT<int16_t>`` with exponent in [0, 31], as the C++ evaluates it: the mask
    ``(1ll << exponent) - 1`` is narrowed to int16 (all ones from 16 up), the shift acts on the
    promoted int. So for exponent >= 16 the result is 1 for ``x >= 0`` and -1 below."""
    mask = wrap16((1 << exponent) - 1)
    remainder = wrap16(x & mask)
    threshold = wrap16((mask >> 1) + (1 if x < 0 else 0))
    return wrap16((x >> exponent) + (1 if remainder > threshold else 0))


def saturating_left_shift16(value: int, amount: int) -> int:
    """``reference_ops::SaturatingLeftShift`` (hard_swish.h): ``value * (1 << amount)`` clamped to int16."""
    return max(-32768, min(32767, value * (1 << amount)))

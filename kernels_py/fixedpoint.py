"""CMSIS-NN's fixed-point helpers, transliterated with explicit int32 wrap and saturation.

Each function names the C helper it mirrors (``Include/arm_nnsupportfunctions.h`` unless
said otherwise) and its rounding. They are ``@jit`` so the fast paths can inline them, and
remain callable from plain Python (the reference kernels call them with Python ints).

Integer model: every intermediate is computed in 64-bit (numba int64 / Python int) and
narrowed to int32 exactly where the C code narrows, with two's-complement wrap-around
(:func:`wrap_int32`) where C would wrap and saturation (:func:`saturate_int32`) where the
C code or the instruction it stands for (SSAT, QADD, VQRDMULH) saturates.
"""

from __future__ import annotations

import math

from kernels_py._jit import jit

Q31_MIN = -(2**31)
Q31_MAX = 2**31 - 1

#: CMSIS-NN's elementwise add pre-shifts both inputs left by 20 (TFLM ``left_shift = 20``).
ADD_LEFT_SHIFT = 20


@jit
def wrap_int32(x):
    """Two's-complement narrowing to int32 (what a C ``(int32_t)`` cast of a wider value does)."""
    x = int(x)  # numpy int32 scalars would overflow in plain-Python (NUMBA_DISABLE_JIT) mode
    return ((x + 0x80000000) & 0xFFFFFFFF) - 0x80000000


@jit
def saturate_int32(x):
    """Clamp to [INT32_MIN, INT32_MAX] (``__SSAT(x, 32)``, ``__QADD``)."""
    if x > 0x7FFFFFFF:
        return 0x7FFFFFFF
    if x < -0x80000000:
        return -0x80000000
    return x


@jit
def clamp(x, lo, hi):
    """``CLAMP(x, hi, lo)``: ``MAX(MIN(x, hi), lo)``."""
    return max(min(x, hi), lo)


@jit
def doubling_high_mult(m1, m2):
    """``arm_nn_doubling_high_mult`` (``MUL_SAT``): saturating rounding doubling high multiply.

    Matches VQRDMULH: ``(m1 * m2 + nudge) / 2^31`` with ``nudge = 2^30``, or ``1 - 2^30`` when
    exactly one operand is negative, and a division that truncates toward zero. Together
    that is round to nearest with ties toward +inf (-1.5 → -1, 1.5 → 2). The single
    overflow, ``INT32_MIN * INT32_MIN``, saturates to ``INT32_MAX``.
    """
    m1, m2 = int(m1), int(m2)
    if m1 == -0x80000000 and m2 == -0x80000000:
        return 0x7FFFFFFF
    nudge = 1 << 30
    if (m1 < 0) != (m2 < 0):
        nudge = 1 - nudge
    total = nudge + m1 * m2
    # C's ``/`` truncates toward zero; Python's ``>>`` floors, so divide the magnitude.
    if total >= 0:
        return total >> 31
    return -((-total) >> 31)


@jit
def doubling_high_mult_no_sat(m1, m2):
    """``arm_nn_doubling_high_mult_no_sat``: ``(m1 * m2 + 2^30) >> 31``, narrowed to int32.

    The rounding constant is always ``+2^30`` and the shift floors (arithmetic shift of the
    int64 sum), so negative midpoints round toward +inf. ``INT32_MIN * INT32_MIN`` wraps
    (CMSIS-NN documents it as unhandled); requantization never meets it because
    multipliers are positive.
    """
    return wrap_int32(((1 << 30) + int(m1) * int(m2)) >> 31)


@jit
def divide_by_power_of_two(dividend, exponent):
    """``arm_nn_divide_by_power_of_two`` (``DIV_POW2``): rounding arithmetic right shift.

    ``exponent`` in [0, 31]. The remainder (low ``exponent`` bits, two's complement) is
    compared with ``mask >> 1``, plus one when the floored quotient is negative: the
    midpoint rounds away from zero.
    """
    dividend, exponent = int(dividend), int(exponent)
    remainder_mask = (1 << exponent) - 1
    remainder = remainder_mask & dividend
    result = dividend >> exponent
    threshold = remainder_mask >> 1
    if result < 0:
        threshold += 1
    if remainder > threshold:
        result += 1
    return result


@jit
def requantize(val, multiplier, shift):
    """``arm_nn_requantize``, CMSIS-NN's default (double rounding) build.

    ``DIV_POW2(doubling_high_mult_no_sat(val << max(shift, 0), multiplier), max(-shift, 0))``.
    The left shift is C's ``val * (1 << LEFT_SHIFT(shift))`` on int32 and wraps like it.
    Equals TFLM's ``MultiplyByQuantizedMultiplier`` (``TFLITE_SINGLE_ROUNDING=0``).
    """
    val, multiplier, shift = int(val), int(multiplier), int(shift)
    left = shift if shift > 0 else 0
    right = -shift if shift < 0 else 0
    return divide_by_power_of_two(doubling_high_mult_no_sat(wrap_int32(val << left), multiplier), right)


@jit
def requantize_single_rounding(val, multiplier, shift):
    """``arm_nn_requantize`` built with ``CMSIS_NN_USE_SINGLE_ROUNDING`` (an explicit option).

    ``r = (val * multiplier) >> (30 - shift)`` narrowed to int32, then ``(r + 1) >> 1``:
    one rounding, half toward +inf. Supports shift in [-31, 30]. LiteRT's optimized kernels
    use this form; CMSIS-NN's default build and TFLM's reference kernels do not.
    """
    val, multiplier, shift = int(val), int(multiplier), int(shift)
    total_shift = 31 - shift
    result = wrap_int32((val * multiplier) >> (total_shift - 1))
    return (result + 1) >> 1


@jit
def mult_by_power_of_two(val, exp):
    """``arm_nn_mult_by_power_of_two`` (``MUL_POW2``): saturating left shift, ``exp`` in [0, 30]."""
    val, exp = int(val), int(exp)
    thresh = (1 << (31 - exp)) - 1
    if val > thresh:
        return 0x7FFFFFFF
    if val < -thresh:
        return -0x80000000
    return wrap_int32(val << exp)


@jit
def _select_if_bit(remainder, bit, result, factor):
    if remainder & (1 << bit):
        return doubling_high_mult(result, factor)
    return result


@jit
def exp_on_negative_values(val):
    """``arm_nn_exp_on_negative_values``: ``exp(x)`` for Q5.26 ``x <= 0``, result in Q0.31.

    gemmlowp's ``exp_on_negative_values`` with 5 integer bits: a 4th-order Taylor expansion
    on [-1/4, 0) then one multiplication per set bit of the remainder by the constants
    ``exp(-2^k / 4)`` in Q0.31. ``exp(0)`` is ``INT32_MAX``. All arithmetic on int32 with
    C's wrap for ``+``/``-``/``<<`` and ``MUL_SAT`` for the products.
    """
    shift = 24
    val_mod_minus_quarter = wrap_int32((val & ((1 << shift) - 1)) - (1 << shift))
    remainder = wrap_int32(val_mod_minus_quarter - val)
    x = wrap_int32(wrap_int32(val_mod_minus_quarter << 5) + (1 << 28))
    x2 = doubling_high_mult(x, x)
    inner = wrap_int32(divide_by_power_of_two(doubling_high_mult(x2, x2), 2) + doubling_high_mult(x2, x))
    inner = wrap_int32(doubling_high_mult(inner, 715827883) + x2)
    inner = wrap_int32(x + divide_by_power_of_two(inner, 1))
    result = wrap_int32(1895147668 + doubling_high_mult(1895147668, inner))
    result = _select_if_bit(remainder, 24, result, 1672461947)
    result = _select_if_bit(remainder, 25, result, 1302514674)
    result = _select_if_bit(remainder, 26, result, 790015084)
    result = _select_if_bit(remainder, 27, result, 290630308)
    result = _select_if_bit(remainder, 28, result, 39332535)
    result = _select_if_bit(remainder, 29, result, 720401)
    result = _select_if_bit(remainder, 30, result, 242)
    if val == 0:
        return 0x7FFFFFFF
    return result


@jit
def one_over_one_plus_x_for_x_in_0_1(val):
    """``arm_nn_one_over_one_plus_x_for_x_in_0_1``: ``1 / (1 + x)`` for Q0.31 ``x`` in [0, 1).

    Newton-Raphson, three iterations, from gemmlowp. ``half_denominator`` is
    ``(val + INT32_MAX) / 2`` rounded half away from zero (C division truncates, hence the
    ``±1`` before it). Result in Q2.29 scaled by ``MUL_POW2(x, 1)``, i.e. Q1.30.
    """
    total = val + 0x7FFFFFFF
    if total >= 0:
        half_denominator = (total + 1) // 2
    else:
        half_denominator = -((-(total - 1)) // 2)
    half_denominator = wrap_int32(half_denominator)
    x = wrap_int32(1515870810 + doubling_high_mult(half_denominator, -1010580540))
    shift = 1 << 29
    for _ in range(3):
        step = wrap_int32(shift - doubling_high_mult(half_denominator, x))
        x = wrap_int32(x + mult_by_power_of_two(doubling_high_mult(x, step), 2))
    return mult_by_power_of_two(x, 1)


@jit
def requantized_add(
    in1,
    in2,
    input_1_offset,
    input_1_mult,
    input_1_shift,
    input_2_offset,
    input_2_mult,
    input_2_shift,
    left_shift,
    out_offset,
    out_mult,
    out_shift,
    out_min,
    out_max,
):
    """One element of ``arm_elementwise_add_s8`` (``Source/BasicMathFunctions``).

    Each input ``(x + offset) << left_shift`` is requantized with its own multiplier/shift,
    the two are summed (int32, cannot overflow: each is < 2^28 in magnitude after the
    scaling TFLM prepares), requantized to the output scale, offset and clamped.
    Subtraction is the same call with ``input_2_mult`` negated.
    """
    a = requantize(wrap_int32((in1 + input_1_offset) << left_shift), input_1_mult, input_1_shift)
    b = requantize(wrap_int32((in2 + input_2_offset) << left_shift), input_2_mult, input_2_shift)
    # C adds the offset in int32 (``sum += out_offset``): it wraps, it does not saturate.
    s = wrap_int32(requantize(wrap_int32(a + b), out_mult, out_shift) + out_offset)
    return clamp(s, out_min, out_max)


@jit
def requantized_mul(
    in1, in2, input_1_offset, input_2_offset, out_offset, out_mult, out_shift, out_min, out_max
):
    """One element of ``arm_elementwise_mul_s8``: ``(x1 + o1) * (x2 + o2)`` requantized, offset, clamped.

    The product of two values in [-255, 255] fits int32 comfortably.
    """
    product = (in1 + input_1_offset) * (in2 + input_2_offset)
    s = wrap_int32(requantize(product, out_mult, out_shift) + out_offset)
    return clamp(s, out_min, out_max)


def quantize_multiplier(real_scale: float) -> tuple[int, int]:
    """TFLM's ``QuantizeMultiplier``: a real scale as a Q0.31 multiplier and a power-of-two shift.

    ``(m, e) = frexp(scale)``; ``q = round_half_away(m * 2^31)``; ``q == 2^31`` becomes
    ``(2^30, e + 1)``. Shifts below -31 flush to ``(0, 0)`` (every result would be zero);
    shifts above 30 saturate to ``(INT32_MAX, 30)``, the most CMSIS-NN's requantize takes.
    Positive shift means left. Negative scales keep their sign in the multiplier (elementwise
    sub negates ``input_2_mult`` this way).
    """
    if not math.isfinite(real_scale):
        raise ValueError(f"quantize_multiplier: scale must be finite, got {real_scale}")
    if real_scale == 0.0:
        return 0, 0
    mantissa, exponent = math.frexp(real_scale)
    q = int(math.copysign(math.floor(abs(mantissa) * (1 << 31) + 0.5), mantissa))
    if abs(q) == (1 << 31):
        q //= 2
        exponent += 1
    if exponent < -31:
        return 0, 0
    if exponent > 30:
        return (Q31_MAX if q > 0 else -Q31_MAX), 30
    return q, exponent


def quantize_multiplier_smaller_than_one(real_scale: float) -> tuple[int, int]:
    """TFLM's ``QuantizeMultiplierSmallerThanOneExp`` check around :func:`quantize_multiplier`."""
    if not 0.0 < real_scale < 1.0:
        raise ValueError(f"scale must be in (0, 1), got {real_scale}")
    return quantize_multiplier(real_scale)


def elementwise_add_params(
    input_1_scale: float, input_2_scale: float, output_scale: float, left_shift: int = ADD_LEFT_SHIFT
) -> dict[str, int]:
    """TFLM's ``PrepareGeneralSubOrAdd``: the multipliers/shifts of ``arm_elementwise_add_s8``.

    ``twice_max = 2 * max(s1, s2)``; ``input_k_mult = s_k / twice_max``;
    ``out_mult = twice_max / ((1 << left_shift) * s_out)``.
    """
    twice_max = 2.0 * max(input_1_scale, input_2_scale)
    m1, s1 = quantize_multiplier(input_1_scale / twice_max)
    m2, s2 = quantize_multiplier(input_2_scale / twice_max)
    mo, so = quantize_multiplier(twice_max / ((1 << left_shift) * output_scale))
    return {
        "input_1_mult": m1,
        "input_1_shift": s1,
        "input_2_mult": m2,
        "input_2_shift": s2,
        "out_mult": mo,
        "out_shift": so,
        "left_shift": left_shift,
    }

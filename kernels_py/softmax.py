"""int8 softmax: CMSIS-NN's ``arm_softmax_s8`` and the parameters TFLM and ExecuTorch prepare for it.

The kernel works row by row on the last axis (output scale 1/256, zero point -128):

1. ``max`` of the row; ``diff = x - max`` in [-255, 0].
2. For ``diff >= diff_min``: ``d = MUL_SAT(diff * (1 << shift), mult)``, a Q5.26 value in
   [-32, 0]; ``e = EXP_ON_NEG(d)`` in Q0.31; ``sum += DIV_POW2(e, 12)`` (Q12.19, ``ACCUM_BITS``).
3. ``headroom = CLZ(sum)``; ``shifted_scale = ONE_OVER1((sum << headroom) - 2^31)`` (1/sum
   normalised to [0.5, 1], Q0.31); ``bits_over_unit = 12 - headroom + 23``.
4. ``out = CLAMP(DIV_POW2(MUL_SAT(shifted_scale, e), bits_over_unit) - 128, -128, 127)``;
   ``diff < diff_min`` gives -128.

The row sum must stay below 2^28 (a sum of exponentials below 512): from there
``bits_over_unit`` exceeds 31, CMSIS-NN's ``DIV_POW2`` shifts by 32 or more (undefined in C,
and its scalar and MVE paths then disagree) and TFLM's reference aborts (``TFLITE_CHECK``).
Both implementations raise :class:`KernelArgumentError` for such a row.
"""

from __future__ import annotations

import math

import numpy as np

from kernels_py._jit import jit
from kernels_py.errors import KernelArgumentError
from kernels_py.fixedpoint import (
    divide_by_power_of_two,
    doubling_high_mult,
    exp_on_negative_values,
    one_over_one_plus_x_for_x_in_0_1,
    wrap_int32,
)
from kernels_py.types import INT8_MAX, INT8_MIN, INT32_MAX, INT32_MIN, check_int8

#: ``ACCUM_BITS``: integer bits of the Q12.19 sum of exponentials.
ACCUM_BITS = 12
#: TFLM's ``kScaledDiffIntegerBits``: the scaled difference is Q5.26.
SCALED_DIFF_INTEGER_BITS = 5
#: Largest row sum (Q12.19) for which ``bits_over_unit = 35 - CLZ(sum)`` is at most 31.
SUM_LIMIT = 1 << 28
#: Output quantization softmax_s8 implies.
OUTPUT_SCALE = 1.0 / 256.0
OUTPUT_ZERO_POINT = -128

_FUNCTION = "softmax_s8"


def _check(input: np.ndarray, mult: int, shift: int, diff_min: int) -> np.ndarray:
    data = check_int8(_FUNCTION, "input", input)
    # No rows (num_rows 0) is a call CMSIS-NN accepts: it computes nothing. A row is never empty.
    if data.ndim < 1 or data.shape[-1] == 0 or (data.size == 0 and data.ndim < 2):
        raise KernelArgumentError(_FUNCTION, "input", "at least 1-D with rows of >= 1", f"shape {data.shape}")
    for name, value in (("mult", mult), ("shift", shift), ("diff_min", diff_min)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise KernelArgumentError(_FUNCTION, name, "an integer", type(value).__name__)
        if not INT32_MIN <= value <= INT32_MAX:
            raise KernelArgumentError(_FUNCTION, name, "an int32", value)
    if not 0 <= shift <= 31:
        # CMSIS-NN documents shift in [0, 31]; it computes 1 << shift.
        raise KernelArgumentError(_FUNCTION, "shift", "in [0, 31]", shift)
    return data.reshape(-1, data.shape[-1])


def _overflow(row: int) -> KernelArgumentError:
    return KernelArgumentError(
        _FUNCTION,
        "input",
        "rows whose sum of exponentials stays below 2^28 in Q12.19 (bits_over_unit <= 31)",
        f"row {row} reaching it (more than 511 elements near the row maximum)",
    )


def _clz32(value: int) -> int:
    return 32 - value.bit_length()


def softmax_s8_reference(
    input: np.ndarray, mult: int, shift: int, diff_min: int, counts: dict[str, int] | None = None
) -> np.ndarray:
    """``arm_nn_softmax_common_s8`` (s8 output), one row at a time, in Python ints.

    ``counts``, when given, gets ``exp_elements``: the elements whose exponential the loops
    computed (``diff >= diff_min``; CMSIS-NN computes it once in the sum pass and again in the
    output pass, and writes -128 for the others), and ``exp_zero``: those among them whose scaled
    input ``MUL_SAT(diff * (1 << shift), mult)`` is 0 (the row maxima, and the diffs whose product
    wraps to 0), where the compiled ``EXP_ON_NEG`` returns early; the oracle of
    :func:`softmax_s8_exp_counts`.
    """
    rows = _check(input, mult, shift, diff_min)
    computed = zero = 0
    mask = wrap_int32(1 << int(shift))
    out = np.empty(rows.shape, np.int8)
    for r in range(rows.shape[0]):
        row = [int(v) for v in rows[r]]
        max_in_row = max(row)
        total = 0
        for value in row:
            diff = value - max_in_row
            if diff >= diff_min:
                computed += 1
                scaled = doubling_high_mult(wrap_int32(diff * mask), int(mult))
                zero += scaled == 0
                total += divide_by_power_of_two(exp_on_negative_values(scaled), ACCUM_BITS)
        if total >= SUM_LIMIT:
            raise _overflow(r)
        headroom = _clz32(total)
        normalised = total << headroom if total > 0 else 0
        shifted_scale = one_over_one_plus_x_for_x_in_0_1(wrap_int32(normalised - (1 << 31)))
        bits_over_unit = ACCUM_BITS - headroom + 23
        for c, value in enumerate(row):
            diff = value - max_in_row
            if diff >= diff_min:
                scaled = doubling_high_mult(wrap_int32(diff * mask), int(mult))
                prob = doubling_high_mult(shifted_scale, exp_on_negative_values(scaled))
                result = divide_by_power_of_two(prob, bits_over_unit) + INT8_MIN
                out[r, c] = min(max(result, INT8_MIN), INT8_MAX)
            else:
                out[r, c] = INT8_MIN
    if counts is not None:
        counts["exp_elements"], counts["exp_zero"] = computed, zero
    return out.reshape(input.shape)


@jit
def _softmax_s8_kernel(rows, mult, shift, diff_min, out):
    """Returns -1, or the index of the first row whose sum reaches SUM_LIMIT (out is partial).

    Each exponential is computed once and kept for the output pass (CMSIS-NN recomputes it; the
    value is the same).
    """
    mask = wrap_int32(np.int64(1) << shift)
    num_rows, row_size = rows.shape
    exps = np.empty(row_size, np.int64)
    for r in range(num_rows):
        max_in_row = np.int64(rows[r, 0])
        for c in range(1, row_size):
            if rows[r, c] > max_in_row:
                max_in_row = np.int64(rows[r, c])
        total = np.int64(0)
        for c in range(row_size):
            diff = np.int64(rows[r, c]) - max_in_row
            if diff >= diff_min:
                exps[c] = exp_on_negative_values(doubling_high_mult(wrap_int32(diff * mask), mult))
                total += divide_by_power_of_two(exps[c], ACCUM_BITS)
            else:
                exps[c] = -1
        if total >= SUM_LIMIT:
            return r
        headroom = 32
        while headroom > 0 and total >= (np.int64(1) << (32 - headroom)):
            headroom -= 1
        normalised = total << headroom if total > 0 else np.int64(0)
        shifted_scale = one_over_one_plus_x_for_x_in_0_1(wrap_int32(normalised - (np.int64(1) << 31)))
        bits_over_unit = ACCUM_BITS - headroom + 23
        for c in range(row_size):
            if exps[c] >= 0:
                prob = doubling_high_mult(shifted_scale, exps[c])
                result = divide_by_power_of_two(prob, bits_over_unit) + INT8_MIN
                if result < INT8_MIN:
                    result = INT8_MIN
                elif result > INT8_MAX:
                    result = INT8_MAX
                out[r, c] = result
            else:
                out[r, c] = INT8_MIN
    return -1


def softmax_s8(input: np.ndarray, mult: int, shift: int, diff_min: int) -> np.ndarray:
    """``arm_softmax_s8`` (``Source/SoftmaxFunctions/arm_softmax_s8.c``, whose scalar/DSP build calls
    ``arm_nn_softmax_common_s8`` in ``Source/NNSupportFunctions/arm_nn_softmax_common_s8.c``).

    ``input`` is any int8 array whose last axis is the row (``[num_rows, row_size]`` in C);
    ``mult``/``shift``/``diff_min`` as :func:`softmax_params` makes them (shift in [0, 31], a left
    shift). Output scale 1/256, zero point -128. Rounding: ``MUL_SAT`` (saturating rounding
    doubling high multiply: nearest, ties toward +inf, as VQRDMULH) for the input rescale, inside
    the exponent and for the final product; ``DIV_POW2`` (nearest, ties away from zero) for the
    Q12.19 accumulation and the final ``bits_over_unit`` shift; ``diff * (1 << shift)`` wraps like
    the int32 multiply C compiles it to.
    Bit-exact with TFLM's reference ``Softmax`` (``reference/softmax.h``) on every row it accepts.
    """
    rows = _check(input, mult, shift, diff_min)
    out = np.empty(rows.shape, np.int8)
    bad_row = _softmax_s8_kernel(rows, int(mult), int(shift), int(diff_min), out)
    if bad_row >= 0:
        raise _overflow(bad_row)
    return out.reshape(input.shape)


@jit
def _exp_counts_kernel(rows, mult, shift, diff_min):
    """Elements with ``x - max(row) >= diff_min`` (the test of the kernel's sum and output passes),
    and those of them whose scaled input is 0."""
    mask = wrap_int32(np.int64(1) << shift)
    num_rows, row_size = rows.shape
    computed = 0
    zero = 0
    for r in range(num_rows):
        max_in_row = rows[r, 0]
        for c in range(1, row_size):
            if rows[r, c] > max_in_row:
                max_in_row = rows[r, c]
        for c in range(row_size):
            diff = np.int64(rows[r, c]) - np.int64(max_in_row)
            if diff >= diff_min:
                computed += 1
                if doubling_high_mult(wrap_int32(diff * mask), mult) == 0:
                    zero += 1
    return computed, zero


def softmax_s8_exp_counts(input: np.ndarray, mult: int, shift: int, diff_min: int) -> tuple[int, int]:
    """The work :func:`softmax_s8` does that depends on the values: ``(exp_elements, exp_zero)``.

    ``exp_elements``: how many elements get an exponential (``diff = x - max(row) >= diff_min``).
    ``arm_nn_softmax_common_s8`` computes ``EXP_ON_NEG`` for exactly these, twice each (the sum pass
    and the output pass); every other element costs a compare and a store of -128. A row with a
    wide input range relative to ``diff_min`` skips most of its exponentials, so the call's cycles
    follow this count, not the shape (isa_models.cortex_m.softmax prices it). ``exp_zero``: those
    whose scaled input ``MUL_SAT(diff * (1 << shift), mult)`` is 0 (the row maxima, and with a large
    ``shift`` every diff whose product wraps to 0): ``EXP_ON_NEG(0)`` is ``NN_Q31_MAX``, and GCC's
    build returns it before the polynomial (~90 cycles less on the M4 and M55, measured).

    A counting entry beside the kernel rather than an output of it: the plain run pays nothing.
    Arguments as :func:`softmax_s8` takes them; an empty input counts (0, 0).
    """
    data = check_int8(_FUNCTION, "input", input)
    if data.ndim < 1 or data.size == 0:
        return 0, 0
    for name, value in (("mult", mult), ("shift", shift), ("diff_min", diff_min)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise KernelArgumentError(_FUNCTION, name, "an integer", type(value).__name__)
    if not 0 <= shift <= 31:
        raise KernelArgumentError(_FUNCTION, "shift", "in [0, 31]", shift)
    computed, zero = _exp_counts_kernel(
        data.reshape(-1, data.shape[-1]), np.int64(mult), np.int64(shift), np.int64(diff_min)
    )
    return int(computed), int(zero)


def _tflm_quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLM ``QuantizeMultiplier`` (default build, ``TFLITE_SINGLE_ROUNDING`` off).

    ``TfLiteRound`` rounds half away from zero; a shift above 30 is *not* saturated in this
    build, so the softmax cap ``2^31 - 1`` yields ``(2^31 - 1, 31)``.
    """
    mantissa, shift = math.frexp(real)
    q = math.floor(mantissa * (1 << 31) + 0.5)
    if q == 1 << 31:
        q //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return q, shift


def _input_radius(shift: int) -> int:
    """TFLM ``CalculateInputRadius(5, shift, 31)``: ``floor(31 * 2^26 / 2^shift)``."""
    return math.floor(
        ((1 << SCALED_DIFF_INTEGER_BITS) - 1) * math.ldexp(1.0, 31 - SCALED_DIFF_INTEGER_BITS - shift)
    )


def softmax_params(beta: float, input_scale: float) -> tuple[int, int, int]:
    """``(mult, shift, diff_min)`` as TFLM's ``CalculateSoftmaxParams`` prepares them for int8.

    ``beta`` and ``input_scale`` are float32 in a TFLite model (``TfLiteSoftmaxParams.beta``,
    ``params.scale``), so both are rounded to float32 first, then, in float64
    (``PreprocessSoftmaxScaling`` with ``kScaledDiffIntegerBits = 5``):
    ``real = min(beta * input_scale * 2^26, 2^31 - 1)``; ``QuantizeMultiplierGreaterThanOne(real)``
    (requires ``real > 1``, raises ``ValueError`` otherwise, where TFLM aborts);
    ``diff_min = -CalculateInputRadius(5, shift) = -floor(31 * 2^26 / 2^shift)``.
    """
    beta32 = float(np.float32(beta))
    scale32 = float(np.float32(input_scale))
    real = min(beta32 * scale32 * (1 << (31 - SCALED_DIFF_INTEGER_BITS)), (1 << 31) - 1.0)
    if not real > 1.0:
        raise ValueError(
            f"softmax_params: beta * input_scale * 2^26 must exceed 1 (TFLM's "
            f"QuantizeMultiplierGreaterThanOne), got {real!r} for beta={beta!r}, input_scale={input_scale!r}"
        )
    mult, shift = _tflm_quantize_multiplier(real)
    return mult, shift, -_input_radius(shift)


def softmax_params_executorch(input_scale: float) -> tuple[int, int, int]:
    """``(mult, shift, diff_min)`` as ExecuTorch's cortex_m lowering computes them.

    ``QuantizedOpFusionPass._compute_softmax_params`` (``backends/cortex_m/passes/
    quantized_op_fusion_pass.py``): beta is 1 (aten softmax has none), ``input_scale`` is used in
    float64 as given, ``real = min(input_scale * 2^26, 2^31 - 1)``, then ``quantize_multiplier_aot``
    (``passes_utils.py``): Python ``round`` (half to even) of ``mantissa * 2^31``, no flush of tiny
    shifts, no ``real > 1`` check, so ``input_scale < 2^-27`` gives a negative shift, which
    :func:`softmax_s8` (like CMSIS-NN's ``1 << shift``) does not accept.
    """
    real = min(float(input_scale) * (1 << (31 - SCALED_DIFF_INTEGER_BITS)), float((1 << 31) - 1))
    if real == 0.0:
        mult, shift = 0, 0
    else:
        mantissa, shift = math.frexp(real)
        mult = round(mantissa * (1 << 31))
        if mult == 1 << 31:
            mult //= 2
            shift += 1
        mult = max(INT32_MIN, min(INT32_MAX, mult))
    return int(mult), int(shift), -_input_radius(shift)

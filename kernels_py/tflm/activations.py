"""RELU, RELU6, LOGISTIC, TANH and HARD_SWISH, int8, as TFLM's reference kernels compute them.

Every one maps each input byte to one output byte, so Prepare builds the 256-entry table with
the scalar transliteration of the Eval loop body below and Eval is `quantize.lookup`.

* RELU: ``CalculateReluOpData<int8_t>`` (``micro/kernels/activations_common.cc``; the
  multiplier from the *float* quotient ``in_scale / out_scale``) and ``ReluQuantized``
  (``micro/kernels/activations.h``): requantize, then clamp to ``[max(-128, out_zp), 127]``.
* RELU6: ``Relu6Prepare`` / ``Relu6Quantized``: a clamp of the *input* bytes to
  ``[in_zp, FloatToQuantizedType(6.0f, in_scale, in_zp)]`` (Cortex-M's saturating float -> int32
  conversion for tiny scales, see `relu6_bounds`). TFLM does not requantize: the
  output's scale and zero point are ignored (the bytes keep the input's quantization).
* LOGISTIC: ``CalculateArithmeticOpDataLogistic`` (``micro/kernels/logistic_common.cc``) and
  ``reference_integer_ops::Logistic`` (``reference/integer_ops/logistic.h``): gemmlowp's
  fixed-point logistic on Q4.27, output as if scale 1/256, zero point -128 (Prepare requires the
  zero point; the output scale is never read).
* TANH: ``CalculateArithmeticOpData`` (``micro/kernels/tanh.cc``) and
  ``reference_integer_ops::Tanh`` (``reference/integer_ops/tanh.h``): gemmlowp's tanh on Q4.27,
  output as if scale 1/128, zero point 0 (neither is read).
* HARD_SWISH: ``HardSwishPrepare`` (``micro/kernels/hard_swish_common.cc``, float32 arithmetic
  for the scales) and ``reference_ops::HardSwish<int8_t>`` (``reference/hard_swish.h``), int16
  fixed point throughout.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernels_py.tflm import fixedpoint as fp

INT8_MIN, INT8_MAX = -128, 127


def _table(fn) -> np.ndarray:
    return np.array([fn(q) for q in range(-128, 128)], np.int8)


# --- RELU / RELU6 ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReluParams:
    """``ReluOpData.params`` for int8."""

    input_offset: int
    output_offset: int
    output_multiplier: int
    output_shift: int
    activation_min: int
    activation_max: int


def relu_params(
    input_scale: float, input_zero_point: int, output_scale: float, output_zero_point: int
) -> ReluParams:
    """``CalculateReluOpData<int8_t>``: ``QuantizeMultiplier((double)(in_scale / out_scale))`` with
    a float32 quotient; ``act_min = max(-128, out_zp + (int)roundf(0.0f / out_scale))``."""
    with np.errstate(over="ignore"):  # an overflow is inf, as in C; QuantizeMultiplier refuses it
        real = float(np.float32(input_scale) / np.float32(output_scale))
    m, s = fp.quantize_multiplier(real)
    return ReluParams(input_zero_point, output_zero_point, m, s, max(INT8_MIN, output_zero_point), INT8_MAX)


def relu_value(q: int, p: ReluParams) -> int:
    """One element of ``ReluQuantized<int8_t>``."""
    v = p.output_offset + fp.multiply_by_quantized_multiplier(
        q - p.input_offset, p.output_multiplier, p.output_shift
    )
    return min(p.activation_max, max(p.activation_min, fp.wrap32(v)))


def relu_table(p: ReluParams) -> np.ndarray:
    return _table(lambda q: relu_value(q, p))


def float_to_quantized_int32(value: float, scale: float, zero_point: int) -> float:
    """``round(value / scale) + zero_point`` of ``FloatToQuantizedType`` (micro_utils.h) before its
    int32 conversion: a float32 quotient rounded half away from zero, in double."""
    with np.errstate(over="ignore"):
        quotient = float(np.float32(value) / np.float32(scale))
    return fp.tflite_round(quotient) + zero_point


def relu6_bounds(input_scale: float, input_zero_point: int) -> tuple[int, int]:
    """``Relu6Prepare`` for int8: ``(zero, six)`` = ``(in_zp, FloatToQuantizedType<int8_t>(6.0f,
    in_scale, in_zp))``, i.e. ``round(6 / scale) + zp`` converted to int32 and clamped to int8.

    For a scale below about 2.8e-9 the value is beyond int32: the conversion is undefined in
    C++; Cortex-M's saturating conversion (VCVT, libgcc's ``__aeabi_d2iz``) then clamps to 127,
    which is what this returns (measured: benchmarks/tflm_reference_device.py), while the x86-64
    wheel's ``cvttsd2si`` gives INT32_MIN and so -128."""
    six = float_to_quantized_int32(6.0, input_scale, input_zero_point)
    return input_zero_point, int(max(INT8_MIN, min(INT8_MAX, six)))


def relu6_value(q: int, zero: int, six: int) -> int:
    """One element of ``Relu6Quantized<int8_t>``: ``q > six ? six : q < zero ? zero : q``
    (the bounds are int8 values compared as int8)."""
    return six if q > six else zero if q < zero else q


def relu6_table(zero: int, six: int) -> np.ndarray:
    return _table(lambda q: relu6_value(q, zero, six))


# --- LOGISTIC / TANH -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SigmoidParams:
    """``OpDataLogistic`` / tanh's ``OpData`` for int8."""

    input_zero_point: int
    input_range_radius: int
    input_multiplier: int
    input_left_shift: int


_INPUT_INTEGER_BITS = 4


def sigmoid_params(input_scale: float, input_zero_point: int) -> SigmoidParams:
    """Logistic's and tanh's Prepare for int8 (the same arithmetic): ``frexp(in_scale * 2^27)``,
    the multiplier ``(int32_t)TfLiteRound(q * 2^31)`` and ``CalculateInputRadius(4, shift, 31)``.

    Raises ValueError for a left shift outside [0, 62]: ``CalculateInputRadius`` computes
    ``1LL << shift`` (undefined for a negative or too large count), i.e. an input scale below
    2^-28 or of 2^35 or more."""
    real = float(np.float32(input_scale)) * float(1 << (31 - _INPUT_INTEGER_BITS))
    multiplier, shift = fp.frexp_multiplier(real)
    if not 0 <= shift <= 62:
        raise ValueError(
            f"input scale {input_scale} gives input_left_shift {shift}; TFLM's CalculateInputRadius "
            "shifts 1LL by it (undefined outside [0, 62])"
        )
    radius = fp.calculate_input_radius(_INPUT_INTEGER_BITS, shift, 31)
    return SigmoidParams(input_zero_point, radius, multiplier, shift)


def logistic_value(q: int, p: SigmoidParams) -> int:
    """One element of ``reference_integer_ops::Logistic`` (int8)."""
    x = q - p.input_zero_point
    if x <= -p.input_range_radius:
        return INT8_MIN
    if x >= p.input_range_radius:
        return INT8_MAX
    x_q4 = fp.multiply_by_quantized_multiplier(x, p.input_multiplier, p.input_left_shift)
    out_q0 = fp.logistic(x_q4, _INPUT_INTEGER_BITS)
    out = fp.rdbpot(out_q0, 31 - 8) - 128
    return max(INT8_MIN, min(INT8_MAX, out))


def tanh_value(q: int, p: SigmoidParams) -> int:
    """One element of ``reference_integer_ops::Tanh`` (int8)."""
    x = q - p.input_zero_point
    if x <= -p.input_range_radius:
        return INT8_MIN
    if x >= p.input_range_radius:
        return INT8_MAX
    x_q4 = fp.multiply_by_quantized_multiplier(x, p.input_multiplier, p.input_left_shift)
    out_q0 = fp.tanh(x_q4, _INPUT_INTEGER_BITS)
    out = fp.rdbpot(out_q0, 31 - 7)
    return max(INT8_MIN, min(INT8_MAX, out))


def logistic_table(p: SigmoidParams) -> np.ndarray:
    return _table(lambda q: logistic_value(q, p))


def tanh_table(p: SigmoidParams) -> np.ndarray:
    return _table(lambda q: tanh_value(q, p))


# --- HARD_SWISH ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HardSwishParams:
    """``HardSwishParams`` (kernels/internal/types.h): int16 zero points and multipliers."""

    input_zero_point: int
    output_zero_point: int
    reluish_multiplier_fixedpoint_int16: int
    reluish_multiplier_exponent: int
    output_multiplier_fixedpoint_int16: int
    output_multiplier_exponent: int


def hard_swish_params(
    input_scale: float, input_zero_point: int, output_scale: float, output_zero_point: int
) -> HardSwishParams:
    """``HardSwishPrepare`` for int8. The scales are combined in float32
    (``hires = (1.0f / 128.0f) * in_scale``, ``hires / out_scale``, ``hires / (3.0f / 32768.0f)``),
    then widened to double for ``QuantizeMultiplier``.

    Raises ValueError where TFLM's Prepare fails (``output_multiplier_exponent > 0``) or its
    arithmetic is undefined (a reluish left shift of 32 or more: ``1 << amount``)."""
    f32 = np.float32
    with np.errstate(over="ignore", under="ignore"):
        hires = f32(1.0 / 128.0) * f32(input_scale)
        output_real, reluish_real = float(hires / f32(output_scale)), float(hires / f32(3.0 / 32768.0))
    om, oe = fp.quantize_multiplier(output_real)
    if oe > 0:
        raise ValueError(
            f"output_multiplier_exponent {oe} > 0 (input scale / 128 over the output scale is 1 or more): "
            "TFLM's HardSwishPrepare fails"
        )
    rm, re = fp.quantize_multiplier(reluish_real)
    if re > 31:
        raise ValueError(f"reluish_multiplier_exponent {re} > 31: TFLM's 1 << (exponent - 1) is undefined")
    return HardSwishParams(
        fp.wrap16(input_zero_point),
        fp.wrap16(output_zero_point),
        fp.downscale_int32_to_int16_multiplier(rm),
        re,
        fp.downscale_int32_to_int16_multiplier(om),
        oe,
    )


def hard_swish_value(q: int, p: HardSwishParams) -> int:
    """One element of ``reference_ops::HardSwish<int8_t>``, every intermediate an int16."""
    input_value = fp.wrap16(q - p.input_zero_point)
    hires = fp.wrap16(input_value * (1 << 7))
    preshift_output = fp.srdhm16(hires, p.output_multiplier_fixedpoint_int16)
    reluish = hires
    if p.reluish_multiplier_exponent > 0:
        reluish = fp.saturating_left_shift16(reluish, p.reluish_multiplier_exponent - 1)
    reluish = fp.srdhm16(reluish, p.reluish_multiplier_fixedpoint_int16)
    if p.reluish_multiplier_exponent > 0:
        reluish = fp.saturating_left_shift16(reluish, 1)
    if p.reluish_multiplier_exponent < 0:
        reluish = fp.rdbpot16(reluish, -p.reluish_multiplier_exponent)
    reluish = fp.wrap16((reluish + (1 << 15)) >> 1)
    preshift = fp.saturating_doubling_high_mul16(reluish, preshift_output)
    out = fp.rdbpot16(preshift, -p.output_multiplier_exponent)
    out = fp.wrap16(out + p.output_zero_point)
    return max(INT8_MIN, min(INT8_MAX, out))


def hard_swish_table(p: HardSwishParams) -> np.ndarray:
    return _table(lambda q: hard_swish_value(q, p))

"""QUANTIZE and DEQUANTIZE as TFLM runs them (int8 and float32 only).

* ``tensorflow/lite/micro/kernels/quantize_common.cc``: ``PrepareQuantizeReference`` (the
  int8 -> int8 multiplier from ``(double)in_scale / (double)out_scale``) and
  ``EvalQuantizeReference``, which calls
  ``reference_ops::AffineQuantize`` (``kernels/internal/reference/quantize.h``) for float32 ->
  int8 and ``reference_ops::Requantize`` (``reference/requantize.h``) for int8 -> int8;
* ``tensorflow/lite/micro/kernels/dequantize{,_common}.cc``: ``reference_ops::Dequantize``
  (``reference/dequantize.h``).

AffineQuantize computes ``(int32_t)roundf(x / (float)scale) + zero_point`` and clamps. The
float -> int32 conversion of a value outside int32 (or NaN) is undefined in C++; Cortex-M's
``VCVT.S32.F32`` (and libgcc's ``__aeabi_f2iz`` on cores without an FPU) saturate and send NaN
to 0, which is what `quantize_float` computes — measured equal on cortex-m3, cortex-m4 (soft and
hard float) and cortex-m55 under QEMU, infinities, NaN and values beyond 2^31 included
(benchmarks/tflm_reference_device.py). The x86-64 ``cvttss2si`` of the tflite-micro wheel gives
INT32_MIN instead: the two TFLM builds differ there, only for ``|x / scale| >= 2^31`` or NaN.
The zero-point add is an int32 add and wraps.
"""

from __future__ import annotations

import numpy as np

from kernels_py.tflm.fixedpoint import multiply_by_quantized_multiplier, quantize_multiplier

INT8_MIN, INT8_MAX = -128, 127


def requantize_params(input_scale: float, output_scale: float) -> tuple[int, int]:
    """``PrepareQuantizeReference``: ``QuantizeMultiplier((double)in_scale / (double)out_scale)``."""
    return quantize_multiplier(float(np.float32(input_scale)) / float(np.float32(output_scale)))


def requantize_value(
    q: int, multiplier: int, shift: int, input_zero_point: int, output_zero_point: int
) -> int:
    """One element of ``reference_ops::Requantize<int8_t, int8_t>``. (Its ``x ^ 0x80`` fast path is
    for int8 <-> uint8 only.)"""
    out = multiply_by_quantized_multiplier(q - input_zero_point, multiplier, shift) + output_zero_point
    return max(INT8_MIN, min(INT8_MAX, out))


def requantize_table(
    multiplier: int, shift: int, input_zero_point: int, output_zero_point: int
) -> np.ndarray:
    """The int8 -> int8 requantization of every input byte: ``table[q + 128]``."""
    return np.array(
        [
            requantize_value(q, multiplier, shift, input_zero_point, output_zero_point)
            for q in range(-128, 128)
        ],
        np.int8,
    )


def lookup(table: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``table[q + 128]`` for an int8 array (an elementwise int8 -> int8 kernel's Eval)."""
    return table[q.astype(np.int16) + 128]


def _float_to_int32_arm(r: np.ndarray) -> np.ndarray:
    """``(int32_t)`` of integral float64 values as ``VCVT.S32.F32`` does: saturate, NaN -> 0."""
    r = np.where(np.isnan(r), 0.0, r)
    return np.clip(r, -(2.0**31), 2.0**31 - 1).astype(np.int64)


def quantize_float(x: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """``reference_ops::AffineQuantize<float, int8_t>``: ``roundf(x / (float)scale)``, to int32,
    ``+ zero_point`` (int32, wraps), clamped to [-128, 127].

    ``x / scale`` is one IEEE float32 division; ``roundf`` is ``copysign(floor(|v| + 0.5), v)``,
    exact in float64 for every float32 ``v``."""
    x = np.asarray(x, np.float32)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        v = (x / np.float32(scale)).astype(np.float64)
        r = np.copysign(np.floor(np.abs(v) + 0.5), v)
    unclamped = _float_to_int32_arm(r) + zero_point
    unclamped = ((unclamped + 0x80000000) & 0xFFFFFFFF) - 0x80000000
    return np.clip(unclamped, INT8_MIN, INT8_MAX).astype(np.int8)


def dequantize(q: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """``reference_ops::Dequantize<int8_t, float>``: ``(float)((double)scale * (q - zero_point))``.

    The double product of a float32 and a 9-bit integer is exact, so this is the correctly
    rounded float32 product."""
    diff = np.asarray(q, np.int64) - zero_point
    with np.errstate(over="ignore"):
        return (float(np.float32(scale)) * diff.astype(np.float64)).astype(np.float32)

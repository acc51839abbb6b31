"""TFLM's Prepare-time arithmetic, exactly (``QuantizeMultiplier`` and ``TfLiteRound`` are
kernels_py.tflm.fixedpoint's, re-exported here): what a kernel computes once from a model's float32
scales and its options before the first Invoke (TFLM @ 90b983c2).

Every function names the TFLM function it mirrors. The precision of each step matters: TFLite
stores scales as float32, and TFLM mixes float32 and double on purpose (a per-channel conv
multiplier is formed in double from float32 factors, a per-tensor fully-connected one from a
float32 product), so the arguments here are float32 values (Python floats holding them) and
the code rounds to float32 exactly where the C++ does (`_f32`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernels_py.tflm.fixedpoint import quantize_multiplier, tflite_round
from refsim.errors import UnsupportedError
from refsim.tflite.schema import ActivationFunctionType, Padding

INT8_MIN, INT8_MAX = -128, 127


def _f32(x: float) -> float:
    return float(np.float32(x))


def quantize(scale: float, zero_point: int, value: float) -> int:
    """``Quantize`` in kernel_util.cc: ``zero_point + (int)TfLiteRound(f / scale)``, the
    division in float32."""
    q = tflite_round(_f32(np.float32(value) / np.float32(scale)))
    return zero_point + int(q)


def activation_range(
    activation: ActivationFunctionType,
    scale: float,
    zero_point: int,
    qmin: int = INT8_MIN,
    qmax: int = INT8_MAX,
) -> tuple[int, int]:
    """``CalculateActivationRangeQuantized`` (kernel_util.cc): the fused activation as an
    output range, each bound quantized with the output's float32 scale."""
    A = ActivationFunctionType
    if activation == A.NONE:
        return qmin, qmax
    if activation == A.RELU:
        return max(qmin, quantize(scale, zero_point, 0.0)), qmax
    if activation == A.RELU6:
        return max(qmin, quantize(scale, zero_point, 0.0)), min(qmax, quantize(scale, zero_point, 6.0))
    if activation == A.RELU_N1_TO_1:
        return max(qmin, quantize(scale, zero_point, -1.0)), min(qmax, quantize(scale, zero_point, 1.0))
    raise UnsupportedError(f"fused activation {activation.name} on a quantized output (TFLM refuses it)")


@dataclass(frozen=True)
class WindowPadding:
    """``TfLitePaddingValues``: the top/left padding CMSIS-NN receives, plus the extra
    bottom/right row or column (``*_offset``) when the total padding is odd."""

    height: int
    width: int
    height_offset: int
    width_offset: int
    out_height: int
    out_width: int


def out_size(padding: Padding, image: int, kernel: int, stride: int, dilation: int = 1) -> int:
    """``ComputeOutSize`` (kernels/padding.h); 0 where TFLM's checks fail."""
    if image < 0 or kernel <= 0 or stride <= 0 or dilation <= 0:
        return 0
    effective = (kernel - 1) * dilation + 1
    if padding == Padding.SAME:
        value = (image + stride - 1) // stride
    elif padding == Padding.VALID:
        value = (image + stride - effective) // stride
    else:
        return 0
    return max(value, 0)


def _padding_with_offset(stride: int, dilation: int, image: int, kernel: int, out: int) -> tuple[int, int]:
    effective = (kernel - 1) * dilation + 1
    total = max((out - 1) * stride + effective - image, 0)
    return total // 2, total % 2


def window_padding(
    padding: Padding,
    stride_hw: tuple[int, int],
    dilation_hw: tuple[int, int],
    image_hw: tuple[int, int],
    kernel_hw: tuple[int, int],
) -> WindowPadding:
    """``ComputePaddingHeightWidth`` (kernels/padding.h): output extent and padding of a
    windowed op (conv, depthwise, pooling) as TFLM's Prepare computes them."""
    oh = out_size(padding, image_hw[0], kernel_hw[0], stride_hw[0], dilation_hw[0])
    ow = out_size(padding, image_hw[1], kernel_hw[1], stride_hw[1], dilation_hw[1])
    ph, oph = _padding_with_offset(stride_hw[0], dilation_hw[0], image_hw[0], kernel_hw[0], oh)
    pw, opw = _padding_with_offset(stride_hw[1], dilation_hw[1], image_hw[1], kernel_hw[1], ow)
    return WindowPadding(ph, pw, oph, opw, oh, ow)


def per_channel_multipliers(
    input_scale: float, filter_scales: tuple[float, ...], output_scale: float, channels: int
) -> tuple[np.ndarray, np.ndarray]:
    """``PopulateConvolutionQuantizationParams`` (kernel_util.cc), also the per-channel branch
    of ``CalculateOpDataFullyConnected``: per output channel, in double,
    ``input_scale * filter_scale / output_scale`` (each factor a float32), then
    `quantize_multiplier` (kernels_py.tflm.fixedpoint). A single filter scale is broadcast over
    the channels.

    Vectorized, element by element the same IEEE double operations as the C++ (float32 to
    double is exact; one multiply and one divide, each correctly rounded; ``frexp`` and the
    power-of-two scaling are exact), so a model with many channels lowers quickly."""
    scales = np.asarray(filter_scales, np.float32).astype(np.float64)
    scales = np.broadcast_to(scales if scales.size > 1 else scales[:1], (channels,))
    real = np.float64(np.float32(input_scale)) * scales / np.float64(np.float32(output_scale))
    mantissa, shift = np.frexp(real)
    q = np.copysign(np.floor(np.abs(mantissa) * float(1 << 31) + 0.5), mantissa).astype(np.int64)
    carry = q == (1 << 31)
    q = np.where(carry, q // 2, q)
    shift = np.where(carry, shift + 1, shift)
    flush = (shift < -31) | (real == 0)
    q = np.where(flush, 0, q)
    shift = np.where(flush, 0, shift)
    return q.astype(np.int32), shift.astype(np.int32)


def per_tensor_multiplier(input_scale: float, filter_scale: float, output_scale: float) -> tuple[int, int]:
    """``GetQuantizedConvolutionMultipler`` (kernel_util.cc, the 5-argument overload the
    fully-connected kernel calls): ``input_scale * filter_scale`` multiplied in **float32**,
    then divided by the output scale in double; then `quantize_multiplier`."""
    product = _f32(np.float32(input_scale) * np.float32(filter_scale))
    return quantize_multiplier(product / _f32(output_scale))


def bias_scale_matches(
    input_scale: float, filter_scale: float, bias_scale: float, output_scale: float
) -> bool:
    """The check of ``GetQuantizedConvolutionMultipler`` when a bias is present:
    ``|input_scale * filter_scale - bias_scale| / output_scale <= 0.02`` (in double); TFLM's
    Prepare fails otherwise."""
    product = _f32(input_scale) * _f32(filter_scale)
    return abs(product - _f32(bias_scale)) / _f32(output_scale) <= 0.02

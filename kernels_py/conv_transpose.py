"""Transpose convolution: ``arm_transpose_conv_s8`` and ``arm_transpose_conv_wrapper_s8``.

Sources (CMSIS-NN v7 era, ``Source/ConvolutionFunctions/``): ``arm_transpose_conv_s8.c`` (V.2.0.0),
``arm_transpose_conv_wrapper_s8.c``, ``arm_transpose_conv_get_buffer_sizes_s8.c``; TFLM
``reference/integer_ops/transpose_conv.h``. The C twin is kernels_c/src/conv_s8_transpose.c.

Numerics are kernels_py.conv's (see its docstring): ``acc = bias + Σ (x + input_offset) · w`` over the
taps that land inside the output, wrapped to int32, requantized per output channel with double rounding,
``+ output_offset``, clamped. The wrapper's reverse-conv route (strides at most 2, more than
``REVERSE_TCOL_EFFICIENT_THRESHOLD`` input channels) is arm_convolve_s8 on the zero-upscaled input with
the filter reversed, which computes the same sum; its scratch size is kernels_py.conv's
``convolve_s8_get_buffer_size`` on that input. Argument checks shared with the convolutions
(``_check_common``, ``_check_output_hw``, ``_check_isa``) stay in kernels_py.conv.
"""

from __future__ import annotations

import numpy as np

from kernels_py._jit import jit
from kernels_py.conv import _check_common, _check_isa, _check_output_hw, convolve_s8_get_buffer_size
from kernels_py.errors import KernelArgumentError
from kernels_py.fixedpoint import clamp, requantize, wrap_int32
from kernels_py.types import Dims, PerChannelQuantParams, TransposeConvParams

#: ``REVERSE_TCOL_EFFICIENT_THRESHOLD``: arm_transpose_conv_wrapper_s8 takes the reverse-conv route above it.
REVERSE_TCOL_EFFICIENT_THRESHOLD = 16


# --- routing and buffer sizes, shared with the cost model and the C harness ----------------------------


def is_transpose_conv_reverse_conv_s8(transpose_conv_params: TransposeConvParams, input_dims: Dims) -> bool:
    """arm_transpose_conv_wrapper_s8 runs arm_convolve_s8 on the zero-upscaled input with the filter
    reversed: strides at most 2 and more than 16 input channels."""
    s = transpose_conv_params.stride
    return s.w <= 2 and s.h <= 2 and input_dims.c > REVERSE_TCOL_EFFICIENT_THRESHOLD


def select_transpose_conv_kernel(transpose_conv_params: TransposeConvParams, input_dims: Dims) -> str:
    """The CMSIS-NN function arm_transpose_conv_wrapper_s8 ends up in."""
    if is_transpose_conv_reverse_conv_s8(transpose_conv_params, input_dims):
        return "arm_convolve_s8"
    return "arm_transpose_conv_s8"


def transpose_conv_s8_get_buffer_size(
    transpose_conv_params: TransposeConvParams,
    input_dims: Dims,
    filter_dims: Dims,
    output_dims: Dims,
    isa: str,
) -> int:
    """``arm_transpose_conv_s8_get_buffer_size`` (ctx), bytes: arm_convolve_s8's size on the upscaled input
    for the reverse-conv route, else the int32 rolling row buffer. The C sizes the buffer width with
    ``MAX(filter w, stride.h)`` where the kernel uses ``stride.w`` (mirrored)."""
    _check_isa(isa)
    p = transpose_conv_params
    if is_transpose_conv_reverse_conv_s8(p, input_dims):
        upscaled = Dims(input_dims.n, input_dims.h * p.stride.h, input_dims.w * p.stride.w, input_dims.c)
        return convolve_s8_get_buffer_size(upscaled, filter_dims, isa)
    buf_x = ((input_dims.w - 1) * p.stride.w + max(filter_dims.w, p.stride.h)) * output_dims.c
    return buf_x * max(filter_dims.h, p.stride.h) * 4


def transpose_conv_s8_get_reverse_conv_buffer_size(
    transpose_conv_params: TransposeConvParams, input_dims: Dims, filter_dims: Dims
) -> int:
    """``arm_transpose_conv_s8_get_reverse_conv_buffer_size``: room for the reversed filter, or 0."""
    if is_transpose_conv_reverse_conv_s8(transpose_conv_params, input_dims):
        return input_dims.c * filter_dims.w * filter_dims.h * filter_dims.n
    return 0


# --- transpose convolution ----------------------------------------------------------------------------


def _check_transpose(function, input, filter, bias, params, quant_params, output_hw):
    input, filter, bias = _check_common(function, input, filter, bias, params, quant_params)
    _, in_h, in_w, in_c = input.shape
    _, k_h, k_w, filter_c = filter.shape
    if filter_c != in_c:
        raise KernelArgumentError(function, "filter", f"[C_OUT, KH, KW, C_IN={in_c}]", filter.shape)
    if (params.dilation.h, params.dilation.w) != (1, 1):
        raise KernelArgumentError(function, "dilation", "(1, 1) (no dilated transpose conv)", params.dilation)
    if params.padding_offsets.h < 0 or params.padding_offsets.w < 0:
        raise KernelArgumentError(function, "padding_offsets", "h, w >= 0", params.padding_offsets)
    out_h, out_w = _check_output_hw(function, output_hw)
    p = params
    for axis, size, k, s, pad, out in (
        ("h", in_h, k_h, p.stride.h, p.padding.h, out_h),
        ("w", in_w, k_w, p.stride.w, p.padding.w, out_w),
    ):
        if pad > k - 1:
            raise KernelArgumentError(function, f"padding.{axis}", f"at most kernel - 1 = {k - 1}", pad)
        reach = (size - 1) * s + max(k, s) - pad  # the C row buffer's width, and TFLite's largest output
        if out > reach:
            expected = f"at most (in - 1)·stride + max(kernel, stride) - padding = {reach} in {axis}"
            raise KernelArgumentError(function, "output_hw", expected, output_hw)
    return input, filter, bias, (out_h, out_w)


def transpose_conv_s8_reference(
    input: np.ndarray,
    filter: np.ndarray,
    bias: np.ndarray | None,
    transpose_conv_params: TransposeConvParams,
    quant_params: PerChannelQuantParams,
    output_hw: tuple[int, int],
) -> np.ndarray:
    """``arm_transpose_conv_s8`` (``Source/ConvolutionFunctions/arm_transpose_conv_s8.c``) written as TFLM's
    ``reference_integer_ops::TransposeConv``: every input pixel scatters ``(x + input_offset)·w`` into an
    integer scratch at ``in·stride - padding + k``, bias is added and each output is requantized once
    (double rounding). ``filter`` is [C_OUT,KH,KW,C_IN]; ``padding`` is top/left, bottom/right implied by
    ``output_hw``; ``padding_offsets`` does not enter the arithmetic.
    """
    input, filter, bias, (out_h, out_w) = _check_transpose(
        "arm_transpose_conv_s8", input, filter, bias, transpose_conv_params, quant_params, output_hw
    )
    n_batch, in_h, in_w, in_c = input.shape
    out_c, k_h, k_w, _ = filter.shape
    x, w, b = input.tolist(), filter.tolist(), bias.tolist()
    mult, shift = quant_params.multiplier.tolist(), quant_params.shift.tolist()
    p = transpose_conv_params
    output = np.empty((n_batch, out_h, out_w, out_c), np.int8)
    for batch in range(n_batch):
        scratch = [[[0] * out_c for _ in range(out_w)] for _ in range(out_h)]
        for in_y in range(in_h):
            for in_x in range(in_w):
                for in_channel in range(in_c):
                    value = x[batch][in_y][in_x][in_channel] + p.input_offset
                    for filter_y in range(k_h):
                        out_y = in_y * p.stride.h - p.padding.h + filter_y
                        for filter_x in range(k_w):
                            out_x = in_x * p.stride.w - p.padding.w + filter_x
                            if 0 <= out_y < out_h and 0 <= out_x < out_w:
                                for out_channel in range(out_c):
                                    taps = w[out_channel][filter_y][filter_x]
                                    scratch[out_y][out_x][out_channel] += value * taps[in_channel]
        for out_y in range(out_h):
            for out_x in range(out_w):
                for out_channel in range(out_c):
                    acc = wrap_int32(scratch[out_y][out_x][out_channel] + b[out_channel])
                    acc = wrap_int32(requantize(acc, mult[out_channel], shift[out_channel]) + p.output_offset)
                    output[batch, out_y, out_x, out_channel] = clamp(acc, p.activation.min, p.activation.max)
    return output


@jit
def _transpose_conv_kernel(input, filter, bias, multiplier, shift, input_offset, output_offset,
                           stride_h, stride_w, pad_h, pad_w, act_min, act_max, out_h, out_w):  # fmt: skip
    # Scatter each input pixel into an exact int64 scratch; input channels are the contiguous inner loop.
    n_batch, in_h, in_w, in_c = input.shape
    out_c, k_h, k_w, _ = filter.shape
    output = np.empty((n_batch, out_h, out_w, out_c), np.int8)
    scratch = np.empty((out_h, out_w, out_c), np.int64)
    col = np.empty(in_c, np.int64)
    for b in range(n_batch):
        scratch[:] = 0
        for iy in range(in_h):
            for ix in range(in_w):
                for c in range(in_c):
                    col[c] = np.int64(input[b, iy, ix, c]) + input_offset
                for ky in range(k_h):
                    oy = iy * stride_h - pad_h + ky
                    if oy < 0 or oy >= out_h:
                        continue
                    for kx in range(k_w):
                        ox = ix * stride_w - pad_w + kx
                        if ox < 0 or ox >= out_w:
                            continue
                        for o in range(out_c):
                            acc = 0
                            for c in range(in_c):
                                acc += col[c] * np.int64(filter[o, ky, kx, c])
                            scratch[oy, ox, o] += acc
        for oy in range(out_h):
            for ox in range(out_w):
                for o in range(out_c):
                    acc = wrap_int32(scratch[oy, ox, o] + bias[o])
                    acc = wrap_int32(
                        requantize(acc, np.int64(multiplier[o]), np.int64(shift[o])) + output_offset
                    )
                    output[b, oy, ox, o] = clamp(acc, act_min, act_max)
    return output


def transpose_conv_s8(
    input: np.ndarray,
    filter: np.ndarray,
    bias: np.ndarray | None,
    transpose_conv_params: TransposeConvParams,
    quant_params: PerChannelQuantParams,
    output_hw: tuple[int, int],
) -> np.ndarray:
    """``arm_transpose_conv_s8`` (``Source/ConvolutionFunctions/arm_transpose_conv_s8.c``): validated, then
    the jit fast path. Same arguments, checks and result as :func:`transpose_conv_s8_reference`.

    Rejected although CMSIS-NN returns success: dilation other than 1 (ignored by the C), padding above
    ``kernel - 1`` (the reverse-conv route's conv padding ``kernel - 1 - padding`` would go negative), and
    outputs past ``(in - 1)·stride + max(kernel, stride) - padding`` (outside the C row buffer).
    """
    return _transpose_conv(
        "arm_transpose_conv_s8", input, filter, bias, transpose_conv_params, quant_params, output_hw
    )


def _transpose_conv(function, input, filter, bias, transpose_conv_params, quant_params, output_hw):
    args = _check_transpose(function, input, filter, bias, transpose_conv_params, quant_params, output_hw)
    input, filter, bias, (out_h, out_w) = args
    p = transpose_conv_params
    return _transpose_conv_kernel(
        input, filter, bias, quant_params.multiplier, quant_params.shift, p.input_offset, p.output_offset,
        p.stride.h, p.stride.w, p.padding.h, p.padding.w, p.activation.min, p.activation.max, out_h, out_w,
    )  # fmt: skip


def transpose_conv_wrapper_s8(
    input: np.ndarray,
    filter: np.ndarray,
    bias: np.ndarray | None,
    transpose_conv_params: TransposeConvParams,
    quant_params: PerChannelQuantParams,
    output_hw: tuple[int, int],
) -> np.ndarray:
    """``arm_transpose_conv_wrapper_s8`` (``Source/ConvolutionFunctions/arm_transpose_conv_wrapper_s8.c``).

    Both routes (:func:`select_transpose_conv_kernel`) compute the same sum: with conv padding
    ``k - 1 - padding`` the reversed filter applies tap ``j`` to upscaled row ``out + padding - j``, which
    holds input row ``(out + padding - j) / stride`` when the division is exact and a neutral
    ``-input_offset`` otherwise.
    """
    return _transpose_conv(
        "arm_transpose_conv_wrapper_s8", input, filter, bias, transpose_conv_params, quant_params, output_hw
    )

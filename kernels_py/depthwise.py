"""Depthwise convolution, s8: CMSIS-NN's ``arm_depthwise_conv_*_s8`` family.

Semantics (every CMSIS-NN path and TFLM's ``reference_integer_ops::DepthwiseConvPerChannel``)::

    acc[oc] = bias[oc] + Σ_{ky,kx inside the input} (input[iy, ix, ic] + input_offset) * filter[ky, kx, oc]
    out[oc] = clamp(requantize(acc[oc], multiplier[oc], shift[oc]) + output_offset, activation)

with ``oc = ic * ch_mult + m``, ``iy = oy * stride.h - padding.h + ky * dilation.h`` (same for x).
Padded taps are skipped, which equals padding the *offset* input with zeros (CMSIS-NN's im2col
paths fill the pad with ``-input_offset`` or with zero after the offset). The int32 accumulator
wraps modulo 2^32 like the Arm code (SMLAD/MLA wrap); the sum is order independent under wrap,
so starting from the bias (CMSIS-NN) or adding it last (TFLM) gives the same bits. Requantization
is :func:`kernels_py.fixedpoint.requantize` (double rounding, CMSIS-NN's default build).

Every CMSIS-NN depthwise path computes these same integers; they differ only in which shapes
they accept. :func:`select_depthwise_kernel` mirrors ``arm_depthwise_conv_wrapper_s8``'s routing
(``Source/ConvolutionFunctions/arm_depthwise_conv_wrapper_s8.c`` V.2.2.0) and the
``*_get_buffer_size`` functions mirror ``arm_depthwise_conv_get_buffer_sizes_s8.c``.
"""

from __future__ import annotations

import numpy as np

from kernels_py._jit import jit
from kernels_py.conv import convolve_wrapper_s8_get_buffer_size
from kernels_py.errors import KernelArgumentError
from kernels_py.fixedpoint import requantize, wrap_int32
from kernels_py.gemm import lane_table, requantize_table, shift_lanes
from kernels_py.types import (
    ConvParams,
    Dims,
    DwConvParams,
    PerChannelQuantParams,
    check_int8,
    check_int32,
    check_offset,
)

ISAS = ("scalar", "dsp", "mve")

#: ``CH_IN_BLOCK_MVE`` (``arm_nnsupportfunctions.h``): channels per block of the MVE ``_opt`` kernel.
CH_IN_BLOCK_MVE = 124
#: ``CONVERT_DW_CONV_WITH_ONE_INPUT_CH_AND_OUTPUT_CH_ABOVE_THRESHOLD``: compiler dependent,
#: 1 with GCC (our harness), 8 with Arm Compiler 6.
DW_TO_CONV_THRESHOLD_GCC = 1
DW_TO_CONV_THRESHOLD_ARMCLANG = 8

ARM_DEPTHWISE_CONV_S8 = "arm_depthwise_conv_s8"
ARM_DEPTHWISE_CONV_S8_OPT = "arm_depthwise_conv_s8_opt"
ARM_DEPTHWISE_CONV_3X3_S8 = "arm_depthwise_conv_3x3_s8"
ARM_DEPTHWISE_CONV_WRAPPER_S8 = "arm_depthwise_conv_wrapper_s8"
#: The MVE wrapper's ``input_dims->c == 1`` route: ``arm_depthwise_conv_to_conv_s8`` transposes the
#: filter to OHWI in the scratch buffer and calls this.
ARM_CONVOLVE_WRAPPER_S8 = "arm_convolve_wrapper_s8"

_U16_MAX = 0xFFFF
_I16_MAX = 0x7FFF


# --- validation ---------------------------------------------------------------------------


def _prepare(function, input, filter, bias, dw_conv_params, quant_params, output_hw):
    """Check every argument the way CMSIS-NN's callers must; return the normalised operands."""
    p = dw_conv_params
    input = check_int8(function, "input", input, ndim=4)
    filter = check_int8(function, "filter", filter, ndim=4)
    n, in_h, in_w, in_c = input.shape
    _, k_h, k_w, out_c = filter.shape
    if min(n, in_h, in_w, in_c) < 1:
        raise KernelArgumentError(function, "input", "a non-empty [N, H, W, C_IN] array", input.shape)
    if filter.shape[0] != 1 or min(k_h, k_w) < 1:
        raise KernelArgumentError(function, "filter", "shape [1, KH, KW, C_OUT]", filter.shape)
    if p.ch_mult < 1:
        raise KernelArgumentError(function, "dw_conv_params.ch_mult", ">= 1", p.ch_mult)
    if out_c != in_c * p.ch_mult:
        raise KernelArgumentError(
            function, "filter", f"C_OUT = C_IN * ch_mult = {in_c * p.ch_mult}", f"C_OUT {out_c}"
        )
    bias = np.zeros(out_c, np.int32) if bias is None else check_int32(function, "bias", bias, (out_c,))
    quant_params.check(function, out_c)
    check_offset(function, "dw_conv_params.input_offset", p.input_offset, -127, 128)
    check_offset(function, "dw_conv_params.output_offset", p.output_offset, -128, 127)
    p.activation.check(function)
    for name, tile, low in (("stride", p.stride, 1), ("padding", p.padding, 0), ("dilation", p.dilation, 1)):
        if tile.h < low or tile.w < low:
            raise KernelArgumentError(function, f"dw_conv_params.{name}", f"h, w >= {low}", (tile.h, tile.w))
    if output_hw is None:
        output_hw = (
            (in_h + 2 * p.padding.h - p.dilation.h * (k_h - 1) - 1) // p.stride.h + 1,
            (in_w + 2 * p.padding.w - p.dilation.w * (k_w - 1) - 1) // p.stride.w + 1,
        )
    if len(output_hw) != 2:
        raise KernelArgumentError(function, "output_hw", "an (h, w) pair", output_hw)
    out_h, out_w = (int(v) for v in output_hw)
    if out_h < 1 or out_w < 1:
        raise KernelArgumentError(
            function, "output_hw", "positive (is the input smaller than the filter?)", output_hw
        )
    # The generic C kernel takes uint16 sizes and keeps the window origin in an int16.
    sizes = (n, in_h, in_w, in_c, out_c, k_h, k_w, out_h, out_w, p.ch_mult, *_tiles(p))
    origins = ((out_h - 1) * p.stride.h, (out_w - 1) * p.stride.w, p.padding.h, p.padding.w)
    if max(sizes) > _U16_MAX or max(origins) > _I16_MAX:
        raise KernelArgumentError(function, "dims", "within CMSIS-NN's uint16/int16 index range", sizes)
    return input, filter, bias, out_h, out_w


def _tiles(p: DwConvParams) -> tuple[int, ...]:
    return (p.stride.h, p.stride.w, p.padding.h, p.padding.w, p.dilation.h, p.dilation.w)


def _dims(input: np.ndarray, filter: np.ndarray, out_h: int, out_w: int) -> tuple[Dims, Dims, Dims]:
    n, in_h, in_w, in_c = input.shape
    _, k_h, k_w, out_c = filter.shape
    return Dims(n, in_h, in_w, in_c), Dims(1, k_h, k_w, out_c), Dims(n, out_h, out_w, out_c)


def _check_ch_mult_1_kernel(function, p, input_dims, output_dims):
    """What ``arm_depthwise_conv_s8_opt`` / ``_3x3_s8`` assume: they read neither batch nor dilation."""
    if input_dims.c != output_dims.c:
        raise KernelArgumentError(function, "output_dims.c", "== input_dims.c (ch_mult 1)", output_dims.c)
    if input_dims.n != 1:
        raise KernelArgumentError(
            function, "input_dims.n", "1 (the C function reads one image)", input_dims.n
        )
    if p.dilation.h != 1 or p.dilation.w != 1:
        found = (p.dilation.h, p.dilation.w)
        raise KernelArgumentError(function, "dw_conv_params.dilation", "1 (the C function ignores it)", found)


def _check_rows_overlap(function, p, input_dims, filter_dims, output_dims):
    """The DSP ``_opt`` im2col zero-fills ``kernel_y - ker_y_end`` rows: a window lying wholly above
    or below the input makes that more rows than the buffer holds."""
    last = (output_dims.h - 1) * p.stride.h - p.padding.h
    if p.padding.h > filter_dims.h or last > input_dims.h:
        raise KernelArgumentError(
            function, "output_dims.h", "windows that do not lie wholly outside the input rows", output_dims.h
        )


def _check_3x3_columns(function, p, input_dims, output_dims):
    """``arm_depthwise_conv_3x3_s8`` always reads the middle column of the window."""
    last = (output_dims.w - 1) * p.stride.w - p.padding.w
    if last + 1 >= input_dims.w:
        raise KernelArgumentError(
            function, "output_dims.w", "windows whose middle column lies inside the input", output_dims.w
        )


# --- reference ----------------------------------------------------------------------------


def depthwise_conv_s8_reference(
    input: np.ndarray,
    filter: np.ndarray,
    bias: np.ndarray | None,
    dw_conv_params: DwConvParams,
    quant_params: PerChannelQuantParams,
    output_hw: tuple[int, int] | None = None,
) -> np.ndarray:
    """Readable definition of :func:`depthwise_conv_s8` (TFLM's ``DepthwiseConvPerChannel`` loops)."""
    function = ARM_DEPTHWISE_CONV_S8
    args = _prepare(function, input, filter, bias, dw_conv_params, quant_params, output_hw)
    input, filter, bias, out_h, out_w = args
    p = dw_conv_params
    batches, in_h, in_w, in_c = input.shape
    _, k_h, k_w, out_c = filter.shape
    output = np.empty((batches, out_h, out_w, out_c), np.int8)
    for b in range(batches):
        for out_y in range(out_h):
            for out_x in range(out_w):
                for in_ch in range(in_c):
                    for m in range(p.ch_mult):
                        oc = in_ch * p.ch_mult + m
                        acc = 0
                        for fy in range(k_h):
                            for fx in range(k_w):
                                iy = out_y * p.stride.h - p.padding.h + p.dilation.h * fy
                                ix = out_x * p.stride.w - p.padding.w + p.dilation.w * fx
                                if 0 <= iy < in_h and 0 <= ix < in_w:
                                    x = int(input[b, iy, ix, in_ch]) + p.input_offset
                                    acc += int(filter[0, fy, fx, oc]) * x
                        # Bias last, as TFLM; the Arm code starts from it. Equal modulo 2^32.
                        acc = wrap_int32(acc + int(bias[oc]))
                        acc = requantize(acc, int(quant_params.multiplier[oc]), int(quant_params.shift[oc]))
                        acc = wrap_int32(acc + p.output_offset)
                        acc = min(max(acc, p.activation.min), p.activation.max)
                        output[b, out_y, out_x, oc] = acc
    return output


# --- fast path ----------------------------------------------------------------------------


@jit
def _depthwise_conv_kernel(
    input, filter, bias, multiplier, shift, input_offset, output_offset, ch_mult,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, act_min, act_max, out_h, out_w, output,
):  # fmt: skip
    """The depthwise convolution into ``output`` (int8 [N, out_h, out_w, C_OUT], C-contiguous: a
    prepared call's arena view; None: a new array), returned."""
    batches, in_h, in_w, in_c = input.shape
    k_h = filter.shape[1]
    k_w = filter.shape[2]
    out_c = filter.shape[3]
    if output is None:
        output = np.empty((batches, out_h, out_w, out_c), np.int8)
    # int32 storage: each `+=` truncates to 32 bits, i.e. wraps exactly as the Arm accumulators.
    acc = np.empty(out_c, np.int32)
    # arm_nn_requantize per channel in int32 lanes (kernels_py.gemm; the bias is already in acc).
    lanes = shift_lanes(multiplier, shift)
    mult, left, right, mask, half = lanes[1], lanes[2], lanes[3], lanes[4], lanes[5]
    # ch_mult > 1: repeat each offset input channel ch_mult times (x + offset fits int16), so the
    # tap loop below runs over contiguous output channels for every multiplier.
    repeated = np.empty((batches, in_h, in_w, out_c if ch_mult > 1 else 0), np.int16)
    if ch_mult > 1:
        for b in range(batches):
            for y in range(in_h):
                for x in range(in_w):
                    for ic in range(in_c):
                        v = np.int16(np.int16(input[b, y, x, ic]) + input_offset)
                        for m in range(ch_mult):
                            repeated[b, y, x, ic * ch_mult + m] = v
    offset = np.int32(input_offset)  # int32 constants: int32 lanes (as int64 they halve the vector width)
    out_offset, low, high = np.int32(output_offset), np.int32(act_min), np.int32(act_max)
    for b in range(batches):
        for oy in range(out_h):
            base_y = oy * stride_h - pad_h
            ky_start = max(0, (dil_h - 1 - base_y) // dil_h)
            ky_end = min(k_h, (in_h - base_y + dil_h - 1) // dil_h)
            for ox in range(out_w):
                base_x = ox * stride_w - pad_w
                kx_start = max(0, (dil_w - 1 - base_x) // dil_w)
                kx_end = min(k_w, (in_w - base_x + dil_w - 1) // dil_w)
                for c in range(out_c):
                    acc[c] = bias[c]
                for ky in range(ky_start, ky_end):
                    iy = base_y + dil_h * ky
                    for kx in range(kx_start, kx_end):
                        ix = base_x + dil_w * kx
                        taps = filter[0, ky, kx]
                        if ch_mult == 1:
                            row = input[b, iy, ix]
                            for c in range(out_c):  # int32 ufuncs: 32-bit lanes (a + b of int32 is int64)
                                x = np.add(np.int32(row[c]), offset)
                                acc[c] = np.add(acc[c], np.multiply(x, np.int32(taps[c])))
                        else:
                            shifted = repeated[b, iy, ix]
                            for c in range(out_c):
                                product = np.multiply(np.int32(shifted[c]), np.int32(taps[c]))
                                acc[c] = np.add(acc[c], product)
                dst = output[b, oy, ox]
                for c in range(out_c):  # gemm._requantize_rows' int32-lane steps (bias already in acc)
                    v = np.left_shift(acc[c], left[c])
                    h = np.int32((np.int64(v) * np.int64(mult[c]) + (np.int64(1) << 30)) >> 31)
                    r = np.right_shift(h, right[c])
                    threshold = np.subtract(half[c], np.right_shift(h, np.int32(31)))
                    r = np.add(r, np.int32(np.greater(np.bitwise_and(h, mask[c]), threshold)))
                    dst[c] = np.minimum(np.maximum(np.add(r, out_offset), low), high)
    return output


def depthwise_row_operands(filter, bias, multiplier, shift, out_w: int) -> tuple[np.ndarray, np.ndarray]:
    """What `_depthwise_rows_kernel` reads, computed once per layer: each tap's weights repeated for
    every pixel of an output row (int32 [KH, KW, out_w·C]) and gemm's requantization table likewise."""
    _, k_h, k_w, out_c = filter.shape
    taps = np.tile(np.asarray(filter, np.int16).reshape(k_h, k_w, 1, out_c), (1, 1, out_w, 1))
    table = np.tile(requantize_table(bias, multiplier, shift), (1, out_w))
    return np.ascontiguousarray(taps.reshape(k_h, k_w, out_w * out_c)), np.ascontiguousarray(table)


def rows_kernel_pays(channels: int, out_w: int) -> bool:
    """Whether `_depthwise_rows_kernel` beats the per-pixel kernel (ch_mult 1). Measured on a Zen 5 core
    (min of 25 calls of 64 samples, 3x3 taps): 10x at 48x48x8, 2x at 48x48x16 stride 2, 3.4x at
    24x24x32, 1.7x at 24x24x32 stride 2, 2x at 12x12x64, 1.7x at 6x6x128, 1.9x at KWS's 25x5x64, 1.4x
    at 12x12x64 and 6x6x128 stride 2 (rows of 6 and 3 pixels); 0.84x at 3x3x256."""
    return out_w * channels >= 64 and (out_w >= 4 or channels <= 128)


@jit
def _depthwise_rows_kernel(
    input, row_taps, table, input_offset, output_offset,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, act_min, act_max, out_h, out_w, output,
):  # fmt: skip
    """`_depthwise_conv_kernel` for ``ch_mult`` 1, a whole output row at a time (into ``output`` likewise).

    The padded input row is held as ``stride_w`` phases, phase p holding padded pixels p, p + stride_w,
    ... (one phase when stride_w is 1). The inputs that tap (ky, kx) reads for every pixel and channel
    of an output row are then one contiguous run of one phase (padded column ox·stride_w + kx·dil_w
    is pixel ox + (kx·dil_w) // stride_w of phase (kx·dil_w) % stride_w), and the tap's weights repeat
    every C channels (`depthwise_row_operands`): each tap is one long int32 multiply-add over out_w·C
    lanes instead of out_w short ones. The same products and the same wrapping int32 sum (order does
    not matter modulo 2^32), zero at padding taps as the skipped taps of the reference; requantization
    is gemm's int32-lane steps, with int32 constants (as int64 they halve the vector width).

    The image and the weights are int16 and each product is taken in int16 (32 lanes a vector, half
    the bytes to read), which is exact: ``x + input_offset`` is in [-255, 255] (the offset's
    documented range [-127, 128] is checked at load) and a weight in [-128, 127], so a product is at
    most 255·128 = 32,640 < 2^15 in magnitude; the products are widened to int32 before any sum."""
    batches, in_h, in_w, c = input.shape
    k_h, k_w, length = row_taps.shape
    height = max(in_h + pad_h, (out_h - 1) * stride_h + (k_h - 1) * dil_h + 1)
    width = max(in_w + pad_w, (out_w - 1) * stride_w + (k_w - 1) * dil_w + 1)
    phase_w = -(-width // stride_w)
    # one sample: x + offset inside, 0 in the border (never written, so it stays 0)
    image = np.zeros((stride_w, height, phase_w * c), np.int16)
    if output is None:
        output = np.empty((batches, out_h, out_w, c), np.int8)
    sums = np.empty(length, np.int32)
    lanes = lane_table(table)
    bias, mult, left, right, mask, half = lanes[0], lanes[1], lanes[2], lanes[3], lanes[4], lanes[5]
    offset, out_offset = np.int16(input_offset), np.int32(output_offset)
    low, high = np.int32(act_min), np.int32(act_max)
    for b in range(batches):
        for y in range(in_h):
            src = input[b, y].reshape(-1)
            if stride_w == 1:  # the whole input row is one run of the one phase
                dst = image[0, pad_h + y, pad_w * c : (pad_w + in_w) * c]
                for j in range(in_w * c):
                    dst[j] = np.add(np.int16(src[j]), offset)
            else:
                for x in range(in_w):
                    column = pad_w + x
                    i = column // stride_w
                    dst = image[column % stride_w, pad_h + y, i * c : (i + 1) * c]
                    pixel = src[x * c : (x + 1) * c]
                    for j in range(c):
                        dst[j] = np.add(np.int16(pixel[j]), offset)
        for oy in range(out_h):
            if k_h == 3 and k_w == 3:  # the common 3x3: all nine taps in one pass, `sums` stored once
                y0, y1, y2 = oy * stride_h, oy * stride_h + dil_h, oy * stride_h + 2 * dil_h
                q0, q1, q2 = 0, dil_w % stride_w, (2 * dil_w) % stride_w
                a0, a1, a2 = 0, dil_w // stride_w * c, 2 * dil_w // stride_w * c
                r00, r01, r02 = (
                    image[q0, y0, a0 : a0 + length],
                    image[q1, y0, a1 : a1 + length],
                    image[q2, y0, a2 : a2 + length],
                )
                r10, r11, r12 = (
                    image[q0, y1, a0 : a0 + length],
                    image[q1, y1, a1 : a1 + length],
                    image[q2, y1, a2 : a2 + length],
                )
                r20, r21, r22 = (
                    image[q0, y2, a0 : a0 + length],
                    image[q1, y2, a1 : a1 + length],
                    image[q2, y2, a2 : a2 + length],
                )
                t00, t01, t02 = row_taps[0, 0], row_taps[0, 1], row_taps[0, 2]
                t10, t11, t12 = row_taps[1, 0], row_taps[1, 1], row_taps[1, 2]
                t20, t21, t22 = row_taps[2, 0], row_taps[2, 1], row_taps[2, 2]
                for j in range(length):  # int16 products (exact), int32 sums (wrapping as the Arm's)
                    top = np.add(
                        np.add(np.int32(np.multiply(r00[j], t00[j])), np.int32(np.multiply(r01[j], t01[j]))),
                        np.int32(np.multiply(r02[j], t02[j])),
                    )
                    mid = np.add(
                        np.add(np.int32(np.multiply(r10[j], t10[j])), np.int32(np.multiply(r11[j], t11[j]))),
                        np.int32(np.multiply(r12[j], t12[j])),
                    )
                    low3 = np.add(
                        np.add(np.int32(np.multiply(r20[j], t20[j])), np.int32(np.multiply(r21[j], t21[j]))),
                        np.int32(np.multiply(r22[j], t22[j])),
                    )
                    sums[j] = np.add(np.add(top, mid), low3)
                k_rows = 0  # nothing left for the per-tap passes below
            else:
                sums[:] = 0
                k_rows = k_h
            for ky in range(k_rows):
                y = oy * stride_h + ky * dil_h
                for kx in range(k_w):  # one tap a pass (the 3x3 branch above serves the common filter)
                    s0 = kx * dil_w
                    run0 = image[s0 % stride_w, y, s0 // stride_w * c : s0 // stride_w * c + length]
                    t0 = row_taps[ky, kx]
                    for j in range(length):  # int16 products (exact), int32 sums (wrapping as the Arm's)
                        sums[j] = np.add(sums[j], np.int32(np.multiply(run0[j], t0[j])))
            out = output[b, oy].reshape(-1)
            for j in range(length):  # gemm._requantize_rows' int32-lane steps
                v = np.left_shift(np.add(sums[j], bias[j]), left[j])
                h = np.int32((np.int64(v) * np.int64(mult[j]) + (np.int64(1) << 30)) >> 31)
                r = np.right_shift(h, right[j])
                threshold = np.subtract(half[j], np.right_shift(h, np.int32(31)))
                r = np.add(r, np.int32(np.greater(np.bitwise_and(h, mask[j]), threshold)))
                out[j] = np.minimum(np.maximum(np.add(r, out_offset), low), high)
    return output


def _run(input, filter, bias, p: DwConvParams, quant_params, out_h, out_w) -> np.ndarray:
    return _depthwise_conv_kernel(
        input, filter, bias, quant_params.multiplier, quant_params.shift,
        p.input_offset, p.output_offset, p.ch_mult,
        p.stride.h, p.stride.w, p.padding.h, p.padding.w, p.dilation.h, p.dilation.w,
        p.activation.min, p.activation.max, out_h, out_w,
        np.empty((input.shape[0], out_h, out_w, filter.shape[3]), np.int8),
    )  # fmt: skip


# --- public kernels -----------------------------------------------------------------------


def depthwise_conv_s8(
    input: np.ndarray,
    filter: np.ndarray,
    bias: np.ndarray | None,
    dw_conv_params: DwConvParams,
    quant_params: PerChannelQuantParams,
    output_hw: tuple[int, int] | None = None,
) -> np.ndarray:
    """``arm_depthwise_conv_s8`` (``Source/ConvolutionFunctions/arm_depthwise_conv_s8.c``).

    input [N, H, W, C_IN]; filter [1, KH, KW, C_OUT], C_OUT = C_IN * ch_mult; bias [C_OUT] or None.
    Any batch, ch_mult, stride, padding (top/left) and dilation. ``output_hw=None`` means
    ``(in + 2 * pad - dilation * (k - 1) - 1) // stride + 1``. Rounding: int32 wrap-around sum,
    then ``arm_nn_requantize`` (double rounding: round-half-up high multiply, then rounding right
    shift with ties away from zero), ``+ output_offset``, clamp. The C function never returns
    ``ARM_CMSIS_NN_ARG_ERROR``; shape mismatches raise :class:`KernelArgumentError` here.
    """
    input, filter, bias, out_h, out_w = _prepare(
        ARM_DEPTHWISE_CONV_S8, input, filter, bias, dw_conv_params, quant_params, output_hw
    )
    return _run(input, filter, bias, dw_conv_params, quant_params, out_h, out_w)


def depthwise_conv_s8_opt(
    input: np.ndarray,
    filter: np.ndarray,
    bias: np.ndarray | None,
    dw_conv_params: DwConvParams,
    quant_params: PerChannelQuantParams,
    output_hw: tuple[int, int] | None = None,
) -> np.ndarray:
    """``arm_depthwise_conv_s8_opt`` (``Source/ConvolutionFunctions/arm_depthwise_conv_s8_opt.c``).

    Same integers as :func:`depthwise_conv_s8` (the DSP path sums int16 im2col columns with SMLAD,
    the MVE path int32 lanes; both wrap). Accepts only C_IN == C_OUT (else ``ARG_ERROR``); it
    processes one image and ignores dilation, so batch 1 and dilation 1 are required here, and a
    window wholly above or below the input (which overruns the DSP scratch buffer) is rejected.
    """
    function = ARM_DEPTHWISE_CONV_S8_OPT
    args = _prepare(function, input, filter, bias, dw_conv_params, quant_params, output_hw)
    input, filter, bias, out_h, out_w = args
    input_dims, filter_dims, output_dims = _dims(input, filter, out_h, out_w)
    _check_ch_mult_1_kernel(function, dw_conv_params, input_dims, output_dims)
    _check_rows_overlap(function, dw_conv_params, input_dims, filter_dims, output_dims)
    return _run(input, filter, bias, dw_conv_params, quant_params, out_h, out_w)


def depthwise_conv_3x3_s8(
    input: np.ndarray,
    filter: np.ndarray,
    bias: np.ndarray | None,
    dw_conv_params: DwConvParams,
    quant_params: PerChannelQuantParams,
    output_hw: tuple[int, int] | None = None,
) -> np.ndarray:
    """``arm_depthwise_conv_3x3_s8`` (``Source/ConvolutionFunctions/arm_depthwise_conv_3x3_s8.c``).

    Same integers as :func:`depthwise_conv_s8`. ``ARG_ERROR`` (here :class:`KernelArgumentError`)
    unless C_IN == C_OUT, the filter is 3x3 and ``padding.w <= 1``. It processes one image, ignores
    dilation and always reads the window's middle column, so those are checked too.
    """
    function = ARM_DEPTHWISE_CONV_3X3_S8
    args = _prepare(function, input, filter, bias, dw_conv_params, quant_params, output_hw)
    input, filter, bias, out_h, out_w = args
    input_dims, filter_dims, output_dims = _dims(input, filter, out_h, out_w)
    _check_ch_mult_1_kernel(function, dw_conv_params, input_dims, output_dims)
    if filter_dims.h != 3 or filter_dims.w != 3:
        raise KernelArgumentError(function, "filter", "3x3", (filter_dims.h, filter_dims.w))
    if dw_conv_params.padding.w > 1:
        raise KernelArgumentError(function, "dw_conv_params.padding.w", "<= 1", dw_conv_params.padding.w)
    _check_3x3_columns(function, dw_conv_params, input_dims, output_dims)
    return _run(input, filter, bias, dw_conv_params, quant_params, out_h, out_w)


def depthwise_conv_wrapper_s8(
    input: np.ndarray,
    filter: np.ndarray,
    bias: np.ndarray | None,
    dw_conv_params: DwConvParams,
    quant_params: PerChannelQuantParams,
    output_hw: tuple[int, int] | None = None,
) -> np.ndarray:
    """``arm_depthwise_conv_wrapper_s8`` (``Source/ConvolutionFunctions/arm_depthwise_conv_wrapper_s8.c``).

    Routes (:func:`select_depthwise_kernel`) to kernels that all compute the integers of
    :func:`depthwise_conv_s8`, so the result does not depend on the ISA. Shapes for which some
    build's route would read or write outside its buffers (see :func:`depthwise_conv_3x3_s8` and
    :func:`depthwise_conv_s8_opt`) are rejected.
    """
    function = ARM_DEPTHWISE_CONV_WRAPPER_S8
    args = _prepare(function, input, filter, bias, dw_conv_params, quant_params, output_hw)
    input, filter, bias, out_h, out_w = args
    input_dims, filter_dims, output_dims = _dims(input, filter, out_h, out_w)
    dims = (input_dims, filter_dims, output_dims)
    if is_depthwise_conv_3x3_s8(dw_conv_params, *dims):
        _check_3x3_columns(function, dw_conv_params, input_dims, output_dims)
    elif is_depthwise_conv_s8_opt(dw_conv_params, *dims):
        _check_rows_overlap(function, dw_conv_params, *dims)
    return _run(input, filter, bias, dw_conv_params, quant_params, out_h, out_w)


# --- routing predicates (shared with the cost model and the C harness) ---------------------


def is_depthwise_conv_s8_opt(
    dw_conv_params: DwConvParams, input_dims: Dims, filter_dims: Dims, output_dims: Dims
) -> bool:
    """The wrapper's fast group: ``ch_mult == 1``, one image, no dilation.

    On scalar and DSP builds the group goes to ``arm_depthwise_conv_3x3_s8`` when
    :func:`is_depthwise_conv_3x3_s8` also holds, else to ``arm_depthwise_conv_s8_opt``; on MVE
    always to ``_opt`` (unless :func:`is_depthwise_conv_to_conv_s8` took it first).
    """
    p = dw_conv_params
    return p.ch_mult == 1 and input_dims.n == 1 and p.dilation.w == 1 and p.dilation.h == 1


def is_depthwise_conv_3x3_s8(
    dw_conv_params: DwConvParams, input_dims: Dims, filter_dims: Dims, output_dims: Dims
) -> bool:
    """Scalar/DSP wrapper route to ``arm_depthwise_conv_3x3_s8``: the fast group, a 3x3 filter,
    ``padding.h <= 1`` and ``padding.w <= 1``. MVE builds never take it."""
    p = dw_conv_params
    return (
        is_depthwise_conv_s8_opt(p, input_dims, filter_dims, output_dims)
        and filter_dims.w == 3
        and filter_dims.h == 3
        and p.padding.h <= 1
        and p.padding.w <= 1
    )


def is_depthwise_conv_to_conv_s8(
    dw_conv_params: DwConvParams,
    input_dims: Dims,
    filter_dims: Dims,
    output_dims: Dims,
    threshold: int = DW_TO_CONV_THRESHOLD_GCC,
) -> bool:
    """MVE-only wrapper route: one input channel and ``output_dims.c > threshold`` run as a
    regular convolution (``arm_depthwise_conv_to_conv_s8`` → ``arm_convolve_wrapper_s8``)."""
    return input_dims.c == 1 and output_dims.c > threshold


def _check_isa(function: str, isa: str) -> None:
    if isa not in ISAS:
        raise KernelArgumentError(function, "isa", f"one of {ISAS}", isa)


def select_depthwise_kernel(
    dw_conv_params: DwConvParams,
    input_dims: Dims,
    filter_dims: Dims,
    output_dims: Dims,
    isa: str,
    *,
    to_conv_threshold: int = DW_TO_CONV_THRESHOLD_GCC,
) -> str:
    """The CMSIS-NN function ``arm_depthwise_conv_wrapper_s8`` calls for these shapes on ``isa``."""
    _check_isa(ARM_DEPTHWISE_CONV_WRAPPER_S8, isa)
    args = (dw_conv_params, input_dims, filter_dims, output_dims)
    if isa == "mve" and is_depthwise_conv_to_conv_s8(*args, threshold=to_conv_threshold):
        return ARM_CONVOLVE_WRAPPER_S8
    if is_depthwise_conv_s8_opt(*args):
        if isa != "mve" and is_depthwise_conv_3x3_s8(*args):
            return ARM_DEPTHWISE_CONV_3X3_S8
        return ARM_DEPTHWISE_CONV_S8_OPT
    return ARM_DEPTHWISE_CONV_S8


# --- scratch buffer sizes (host-side mirrors of arm_depthwise_conv_get_buffer_sizes_s8.c) ---


def depthwise_conv_s8_opt_get_buffer_size(input_dims: Dims, filter_dims: Dims, isa: str) -> int:
    """``arm_depthwise_conv_s8_opt_get_buffer_size{,_dsp,_mve}``: the im2col columns, in bytes.

    scalar 0; DSP ``C_IN * KW * KH`` int16; MVE four columns of ``CH_IN_BLOCK_MVE`` int8.
    """
    _check_isa(ARM_DEPTHWISE_CONV_S8_OPT, isa)
    if isa == "dsp":
        return input_dims.c * filter_dims.w * filter_dims.h * 2
    if isa == "mve":
        return 4 * CH_IN_BLOCK_MVE * filter_dims.w * filter_dims.h
    return 0


def depthwise_conv_wrapper_s8_get_buffer_size(
    dw_conv_params: DwConvParams,
    input_dims: Dims,
    filter_dims: Dims,
    output_dims: Dims,
    isa: str,
    *,
    to_conv_threshold: int = DW_TO_CONV_THRESHOLD_GCC,
) -> int:
    """``arm_depthwise_conv_wrapper_s8_get_buffer_size`` as compiled for ``isa``, in bytes.

    Like the C it tests ``input_dims.c == output_dims.c`` where the wrapper tests ``ch_mult == 1``.
    scalar: always 0. DSP (``_dsp``): 0 for the 3x3 route, else the ``_opt`` columns. MVE (the
    on-target dispatcher, not the host ``_mve`` variant that takes the larger of both routes):
    the to-conv route needs the conv wrapper's MVE buffer
    (:func:`kernels_py.conv.convolve_wrapper_s8_get_buffer_size`) plus the transposed filter
    (``KH * KW * C_OUT`` bytes); the fast group needs the ``_opt`` columns.
    """
    _check_isa(ARM_DEPTHWISE_CONV_WRAPPER_S8, isa)
    p = dw_conv_params
    dims = (input_dims, filter_dims, output_dims)
    if isa == "mve" and is_depthwise_conv_to_conv_s8(p, *dims, threshold=to_conv_threshold):
        conv_params = ConvParams(stride=p.stride, padding=p.padding, dilation=p.dilation)
        conv_filter = Dims(filter_dims.c, filter_dims.h, filter_dims.w, filter_dims.n)
        conv_size = convolve_wrapper_s8_get_buffer_size(
            conv_params, input_dims, conv_filter, output_dims, "mve"
        )
        transposed = filter_dims.n * filter_dims.h * filter_dims.w * filter_dims.c
        return conv_size + transposed
    no_dilation = p.dilation.w == 1 and p.dilation.h == 1
    if not (input_dims.c == output_dims.c and input_dims.n == 1 and no_dilation):
        return 0
    if isa != "mve" and filter_dims.w == 3 and filter_dims.h == 3 and p.padding.h <= 1 and p.padding.w <= 1:
        return 0
    return depthwise_conv_s8_opt_get_buffer_size(input_dims, filter_dims, isa)

"""Convolution family: ``arm_convolve_s8`` and its wrapper (transpose convolution: kernels_py.conv_transpose).

Sources (CMSIS-NN v7 era, ``Source/ConvolutionFunctions/``): ``arm_convolve_s8.c`` (V.4.0.0, grouped
conv), ``arm_convolve_wrapper_s8.c``, ``arm_convolve_1x1_s8_fast.c``, ``arm_convolve_1x1_s8.c``,
``arm_convolve_1_x_n_s8.c``, ``arm_convolve_get_buffer_sizes_s8.c`` (V.2.2.1); TFLM
``reference/integer_ops/conv.h``.

Numerics, common to every kernel here and in kernels_py.conv_transpose: ``acc = bias + Σ (x +
input_offset) · w`` over the taps that fall inside the input (padding taps contribute nothing, not even
the offset), narrowed to int32 with two's-complement wrap as the Cortex-M adds (MLA, SMLAD, VMLADAVA)
do; then :func:`~kernels_py.fixedpoint.requantize` per output channel (double rounding: round half up in the
doubling high multiply, then round half away from zero in the right shift), ``+ output_offset``, clamp to
the activation range. The sum is exact in int64 and wrapped once; C's int32 partial sums wrap at every step,
which is the same value modulo 2^32. Without bias the sum cannot overflow int32 while
``KH·KW·C_IN/groups ≤ 65,793`` (each product is at most 255·128 in magnitude).

CMSIS-NN fills padded im2col taps with ``(int8_t)-input_offset`` so that adding the offset back gives 0;
that only holds for ``input_offset`` in its documented range [-127, 128], which is therefore enforced.
"""

from __future__ import annotations

import numpy as np

from kernels_py import gemm
from kernels_py._jit import jit
from kernels_py.errors import KernelArgumentError
from kernels_py.fixedpoint import clamp, requantize, wrap_int32
from kernels_py.types import (
    INT8_MAX,
    INT8_MIN,
    ConvParams,
    Dims,
    PerChannelQuantParams,
    Tile,
    check_int8,
    check_int32,
    check_offset,
)

ISAS = ("scalar", "dsp", "mve")


# --- shapes and routing, shared with the cost model and the C harness -------------------------------


def conv_output_size(size: int, kernel: int, stride: int, padding: int, dilation: int = 1) -> int:
    """Output extent with ``padding`` on both sides: ``(size + 2·pad - dilation·(k-1) - 1) // stride + 1``."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def convolve_s8_dims(
    input: np.ndarray, filter: np.ndarray, conv_params: ConvParams, output_hw: tuple[int, int] | None = None
) -> tuple[Dims, Dims, Dims]:
    """``(input_dims, filter_dims, output_dims)`` as CMSIS-NN receives them for these arrays."""
    n, h, w, _ = input.shape
    out_c, kh, kw, _ = filter.shape
    if output_hw is None:
        output_hw = (
            conv_output_size(h, kh, conv_params.stride.h, conv_params.padding.h, conv_params.dilation.h),
            conv_output_size(w, kw, conv_params.stride.w, conv_params.padding.w, conv_params.dilation.w),
        )
    return Dims.of(input.shape), Dims.of(filter.shape), Dims(n, output_hw[0], output_hw[1], out_c)


def _is_1x1_shape(p: ConvParams, filter_dims: Dims) -> bool:
    return p.padding == Tile(0, 0) and p.dilation == Tile(1, 1) and (filter_dims.h, filter_dims.w) == (1, 1)


def _is_1x1_branch(p: ConvParams, input_dims: Dims, filter_dims: Dims) -> bool:
    return _is_1x1_shape(p, filter_dims) and input_dims.c == filter_dims.c


def _is_1_x_n_shape(p: ConvParams, input_dims: Dims, filter_dims: Dims) -> bool:
    return (
        input_dims.h == 1
        and p.dilation.w == 1
        and filter_dims.h == 1
        and (p.stride.w * input_dims.c) % 4 == 0
    )


def is_convolve_1x1_s8_fast(
    conv_params: ConvParams, input_dims: Dims, filter_dims: Dims, output_dims: Dims
) -> bool:
    """arm_convolve_wrapper_s8 calls arm_convolve_1x1_s8_fast: 1x1 filter, no padding, unit stride and
    dilation, not grouped."""
    return _is_1x1_branch(conv_params, input_dims, filter_dims) and conv_params.stride == Tile(1, 1)


def is_convolve_1x1_s8(
    conv_params: ConvParams, input_dims: Dims, filter_dims: Dims, output_dims: Dims
) -> bool:
    """arm_convolve_wrapper_s8 calls arm_convolve_1x1_s8: as the fast 1x1 case but with a non-unit stride."""
    return _is_1x1_branch(conv_params, input_dims, filter_dims) and conv_params.stride != Tile(1, 1)


def is_convolve_1_x_n_s8(
    conv_params: ConvParams, input_dims: Dims, filter_dims: Dims, output_dims: Dims
) -> bool:
    """arm_convolve_wrapper_s8 calls arm_convolve_1_x_n_s8: input height 1, filter height 1, unit
    horizontal dilation, ``stride.w · C_IN`` a multiple of 4, not grouped (and not a 1x1 case)."""
    p, i, f = conv_params, input_dims, filter_dims
    return i.c == f.c and not _is_1x1_shape(p, f) and _is_1_x_n_shape(p, i, f)


def select_convolve_kernel(
    conv_params: ConvParams, input_dims: Dims, filter_dims: Dims, output_dims: Dims
) -> str:
    """The CMSIS-NN function arm_convolve_wrapper_s8 dispatches to for these shapes."""
    for name, predicate in (
        ("arm_convolve_1x1_s8_fast", is_convolve_1x1_s8_fast),
        ("arm_convolve_1x1_s8", is_convolve_1x1_s8),
        ("arm_convolve_1_x_n_s8", is_convolve_1_x_n_s8),
    ):
        if predicate(conv_params, input_dims, filter_dims, output_dims):
            return name
    return "arm_convolve_s8"


def _c_div(a: int, b: int) -> int:
    """C's ``/`` on int: truncation toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _check_isa(isa: str) -> None:
    if isa not in ISAS:
        raise KernelArgumentError("get_buffer_size", "isa", f"one of {ISAS}", isa)


def convolve_s8_get_buffer_size(input_dims: Dims, filter_dims: Dims, isa: str) -> int:
    """``arm_convolve_s8_get_buffer_size`` (``_mve`` for isa "mve"), bytes. ``C_IN`` is the input's, so a
    grouped conv gets the ungrouped size."""
    _check_isa(isa)
    rhs_cols = input_dims.c * filter_dims.w * filter_dims.h
    if isa == "mve":
        return 4 * ((rhs_cols + 15) // 16) * 16  # four im2col columns, padded to whole 16-byte Q registers
    aligned = rhs_cols + (4 - rhs_cols % 4) % 4
    return 2 * aligned * 2  # two int16 im2col columns


def convolve_1_x_n_s8_get_buffer_size(
    conv_params: ConvParams, input_dims: Dims, filter_dims: Dims, output_dims: Dims, isa: str
) -> int:
    """``arm_convolve_1_x_n_s8_get_buffer_size``: arm_convolve_s8's size except on MVE, where only the
    padded edge columns are staged."""
    _check_isa(isa)
    if isa != "mve":
        return convolve_s8_get_buffer_size(input_dims, filter_dims, isa)
    pad_x, stride_x, kernel_x, c = conv_params.padding.w, conv_params.stride.w, filter_dims.w, input_dims.c
    total_pad = (output_dims.w - 1) * stride_x + kernel_x - input_dims.w
    asym_pad = total_pad - 2 * _c_div(total_pad, 2)  # C's %, negative for a negative total
    right_num = max(1, _c_div(pad_x + asym_pad + stride_x - 1, stride_x)) if pad_x + asym_pad != 0 else 0
    left_num = max(1, _c_div(pad_x + stride_x - 1, stride_x)) if pad_x != 0 else 0
    no_pad_num = max(output_dims.w - (right_num + left_num), 0)
    if right_num + no_pad_num + left_num != output_dims.w:
        return convolve_s8_get_buffer_size(input_dims, filter_dims, isa)
    pad_left = pad_x * c
    pad_right = right_num * c if asym_pad else pad_left
    return max(kernel_x * c + pad_left, (kernel_x - 1) * c + pad_right)


def convolve_1x1_s8_fast_get_buffer_size(input_dims: Dims, isa: str, *, armclang: bool = False) -> int:
    """``arm_convolve_1x1_s8_fast_get_buffer_size``: ``2·C_IN`` int16 on DSP with Arm Compiler 6, else 0."""
    _check_isa(isa)
    return 2 * input_dims.c * 2 if (isa == "dsp" and armclang) else 0


def convolve_wrapper_s8_get_buffer_size(
    conv_params: ConvParams,
    input_dims: Dims,
    filter_dims: Dims,
    output_dims: Dims,
    isa: str,
    *,
    armclang: bool = False,
) -> int:
    """``arm_convolve_wrapper_s8_get_buffer_size`` (``_dsp``/``_mve``), bytes, routed as the C does.

    The C size routing omits the wrapper's ``C_IN == filter C`` test: a grouped 1x1 conv gets 0 bytes
    although the wrapper sends it to arm_convolve_s8, which needs a buffer (mirrored, not corrected).
    """
    _check_isa(isa)
    if _is_1x1_shape(conv_params, filter_dims):
        if conv_params.stride == Tile(1, 1):
            return convolve_1x1_s8_fast_get_buffer_size(input_dims, isa, armclang=armclang)
        return 0
    if _is_1_x_n_shape(conv_params, input_dims, filter_dims):
        return convolve_1_x_n_s8_get_buffer_size(conv_params, input_dims, filter_dims, output_dims, isa)
    return convolve_s8_get_buffer_size(input_dims, filter_dims, isa)


# --- argument checks ----------------------------------------------------------------------------------


def _check_common(function, input, filter, bias, params, quant_params):
    input = check_int8(function, "input", input, 4)
    filter = check_int8(function, "filter", filter, 4)
    out_c = filter.shape[0]
    if min(input.shape) < 1 or min(filter.shape) < 1:
        raise KernelArgumentError(function, "input/filter", "non-empty", (input.shape, filter.shape))
    bias = np.zeros(out_c, np.int32) if bias is None else check_int32(function, "bias", bias, (out_c,))
    quant_params.check(function, out_c)
    check_offset(function, "input_offset", params.input_offset, -127, 128)
    check_offset(function, "output_offset", params.output_offset, INT8_MIN, INT8_MAX)
    params.activation.check(function)
    for name in ("stride", "dilation"):
        tile = getattr(params, name)
        if tile.h < 1 or tile.w < 1:
            raise KernelArgumentError(function, name, "h, w >= 1", (tile.h, tile.w))
    if params.padding.h < 0 or params.padding.w < 0:
        raise KernelArgumentError(function, "padding", "h, w >= 0", (params.padding.h, params.padding.w))
    return input, filter, bias


def _check_output_hw(function, output_hw):
    if len(output_hw) != 2 or min(output_hw) < 1:
        raise KernelArgumentError(function, "output_hw", "two extents >= 1", output_hw)
    return int(output_hw[0]), int(output_hw[1])


def _check_conv(function, input, filter, bias, conv_params, quant_params, output_hw):
    input, filter, bias = _check_common(function, input, filter, bias, conv_params, quant_params)
    in_c, (out_c, _, _, filter_c) = input.shape[3], filter.shape
    if in_c % filter_c != 0:
        raise KernelArgumentError(function, "filter", f"C_IN/groups dividing input C_IN={in_c}", filter_c)
    if out_c % (in_c // filter_c) != 0:
        raise KernelArgumentError(function, "filter", f"C_OUT a multiple of groups={in_c // filter_c}", out_c)
    _, _, output_dims = convolve_s8_dims(input, filter, conv_params, output_hw)
    out_hw = _check_output_hw(function, (output_dims.h, output_dims.w))
    return input, filter, bias, out_hw


def check_convolve_kernel_arguments(
    function: str, conv_params: ConvParams, input_dims: Dims, filter_dims: Dims, output_dims: Dims
) -> None:
    """Raise for shapes ``function`` (a kernel arm_convolve_wrapper_s8 may pick) rejects or mis-computes.

    arm_convolve_1x1_s8_fast: ARG_ERROR unless padding 0 and stride 1; it reads N·H·W input pixels, so
    the output must match the input. arm_convolve_1x1_s8: ARG_ERROR unless padding 0; each output row is
    read at ``stride.w`` from one input row, so the output may not reach past the input.
    arm_convolve_1_x_n_s8: ARG_ERROR unless input height 1, dilation.w 1 and ``stride.w·C_IN % 4 == 0``;
    its MVE path assumes filter height 1. None of the three knows groups.
    """
    p, i, f, o = conv_params, input_dims, filter_dims, output_dims
    if function == "arm_convolve_s8":
        return
    if function not in ("arm_convolve_1x1_s8_fast", "arm_convolve_1x1_s8", "arm_convolve_1_x_n_s8"):
        raise KernelArgumentError(
            "check_convolve_kernel_arguments", "function", "a convolution kernel", function
        )

    def require(ok: bool, argument: str, expected: str, found: object) -> None:
        if not ok:
            raise KernelArgumentError(function, argument, expected, found)

    require(f.c == i.c, "filter_dims.c", f"the input C_IN={i.c} (not grouped)", f.c)
    if function == "arm_convolve_1_x_n_s8":
        require(i.h == 1, "input_dims.h", "1", i.h)
        require(f.h == 1, "filter_dims.h", "1", f.h)
        require(p.dilation.w == 1, "dilation.w", "1", p.dilation.w)
        expected = f"such that stride.w * C_IN={i.c} is a multiple of 4"
        require((p.stride.w * i.c) % 4 == 0, "stride.w", expected, p.stride.w)
        return
    require((f.h, f.w) == (1, 1), "filter_dims", "1x1", (f.h, f.w))
    require((p.padding.h, p.padding.w) == (0, 0), "padding", "(0, 0)", (p.padding.h, p.padding.w))
    if function == "arm_convolve_1x1_s8_fast":
        require((p.stride.h, p.stride.w) == (1, 1), "stride", "(1, 1)", (p.stride.h, p.stride.w))
        require((o.h, o.w) == (i.h, i.w), "output_hw", f"the input's {(i.h, i.w)}", (o.h, o.w))
    else:
        limit = ((i.h - 1) // p.stride.h + 1, (i.w - 1) // p.stride.w + 1)
        require(o.h <= limit[0] and o.w <= limit[1], "output_hw", f"at most {limit}", (o.h, o.w))


# --- convolution --------------------------------------------------------------------------------------


def convolve_s8_reference(
    input: np.ndarray,
    filter: np.ndarray,
    bias: np.ndarray | None,
    conv_params: ConvParams,
    quant_params: PerChannelQuantParams,
    output_hw: tuple[int, int] | None = None,
) -> np.ndarray:
    """``arm_convolve_s8`` (``Source/ConvolutionFunctions/arm_convolve_s8.c``), written as TFLM's
    ``reference_integer_ops::ConvPerChannel``: the readable definition. Grouped when ``filter`` has fewer
    channels than ``input`` (group ``g`` reads input channels ``g·C_IN/groups ...``, writes output
    channels ``g·C_OUT/groups ...``). Rounding: :func:`~kernels_py.fixedpoint.requantize` (double rounding).
    """
    input, filter, bias, (out_h, out_w) = _check_conv(
        "arm_convolve_s8", input, filter, bias, conv_params, quant_params, output_hw
    )
    n_batch, in_h, in_w, in_c = input.shape
    out_c, k_h, k_w, filter_c = filter.shape
    per_group = out_c // (in_c // filter_c)
    x, w, b = input.tolist(), filter.tolist(), bias.tolist()
    mult, shift = quant_params.multiplier.tolist(), quant_params.shift.tolist()
    p = conv_params
    output = np.empty((n_batch, out_h, out_w, out_c), np.int8)
    for batch in range(n_batch):
        for out_y in range(out_h):
            in_y_origin = out_y * p.stride.h - p.padding.h
            for out_x in range(out_w):
                in_x_origin = out_x * p.stride.w - p.padding.w
                for out_channel in range(out_c):
                    group = out_channel // per_group
                    acc = 0
                    for filter_y in range(k_h):
                        in_y = in_y_origin + p.dilation.h * filter_y
                        for filter_x in range(k_w):
                            in_x = in_x_origin + p.dilation.w * filter_x
                            if not (0 <= in_y < in_h and 0 <= in_x < in_w):
                                continue  # padding: no term at all, the offset included
                            pixel = x[batch][in_y][in_x]
                            taps = w[out_channel][filter_y][filter_x]
                            for in_channel in range(filter_c):
                                acc += taps[in_channel] * (
                                    pixel[group * filter_c + in_channel] + p.input_offset
                                )
                    acc = wrap_int32(acc + b[out_channel])
                    acc = wrap_int32(requantize(acc, mult[out_channel], shift[out_channel]) + p.output_offset)
                    output[batch, out_y, out_x, out_channel] = clamp(acc, p.activation.min, p.activation.max)
    return output


@jit
def _convolve_kernel(input, filter2d, bias, multiplier, shift, input_offset, output_offset,
                     stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, act_min, act_max,
                     k_h, k_w, out_h, out_w):  # fmt: skip
    # im2col one output pixel and group at a time into int16 (x + offset is in [-255, 255]; padding is 0),
    # then contiguous dot products against the [C_OUT, KH·KW·C_IN/groups] filter.
    n_batch, in_h, in_w, in_c = input.shape
    out_c, k_len = filter2d.shape
    filter_c = k_len // (k_h * k_w)
    groups = in_c // filter_c
    per_group = out_c // groups
    output = np.empty((n_batch, out_h, out_w, out_c), np.int8)
    col = np.empty(k_len, np.int16)
    for b in range(n_batch):
        for oy in range(out_h):
            y0 = oy * stride_h - pad_h
            for ox in range(out_w):
                x0 = ox * stride_w - pad_w
                for g in range(groups):
                    k = 0
                    for ky in range(k_h):
                        iy = y0 + ky * dil_h
                        for kx in range(k_w):
                            ix = x0 + kx * dil_w
                            if iy >= 0 and iy < in_h and ix >= 0 and ix < in_w:
                                for c in range(filter_c):
                                    col[k + c] = np.int64(input[b, iy, ix, g * filter_c + c]) + input_offset
                            else:
                                col[k : k + filter_c] = 0
                            k += filter_c
                    for o in range(g * per_group, (g + 1) * per_group):
                        acc = 0
                        for i in range(k_len):
                            acc += np.int64(col[i]) * np.int64(filter2d[o, i])
                        acc = wrap_int32(acc + bias[o])
                        acc = wrap_int32(
                            requantize(acc, np.int64(multiplier[o]), np.int64(shift[o])) + output_offset
                        )
                        output[b, oy, ox, o] = clamp(acc, act_min, act_max)
    return output


def _run_convolve(input, filter, bias, conv_params, quant_params, out_hw):
    p = conv_params
    if filter.shape[3] == input.shape[3]:  # groups = 1: the exact float32-BLAS GEMM (kernels_py.gemm)
        return gemm.convolve_gemm(
            input, gemm.conv_filter_matrix(filter), gemm.requantize_table(bias, quant_params.multiplier, quant_params.shift),
            p.input_offset, p.output_offset, p.stride.h, p.stride.w, p.padding.h, p.padding.w,
            p.dilation.h, p.dilation.w, p.activation.min, p.activation.max, filter.shape[1], filter.shape[2],
            out_hw[0], out_hw[1],
        )  # fmt: skip
    return _convolve_kernel(
        input, filter.reshape(filter.shape[0], -1).astype(np.int16), bias, quant_params.multiplier,
        quant_params.shift, p.input_offset, p.output_offset, p.stride.h, p.stride.w, p.padding.h, p.padding.w,
        p.dilation.h, p.dilation.w, p.activation.min, p.activation.max, filter.shape[1], filter.shape[2],
        out_hw[0], out_hw[1],
    )  # fmt: skip


def convolve_s8(
    input: np.ndarray,
    filter: np.ndarray,
    bias: np.ndarray | None,
    conv_params: ConvParams,
    quant_params: PerChannelQuantParams,
    output_hw: tuple[int, int] | None = None,
) -> np.ndarray:
    """``arm_convolve_s8`` (``Source/ConvolutionFunctions/arm_convolve_s8.c``): validated, then the jit
    fast path. Same arguments, checks and result as :func:`convolve_s8_reference`; double rounding.

    ``input`` [N,H,W,C_IN] int8, ``filter`` [C_OUT,KH,KW,C_IN/groups] int8 (OHWI), ``bias`` [C_OUT] int32 or
    None (CMSIS-NN's NULL bias). ``output_hw=None``: :func:`conv_output_size` per dimension; otherwise the
    given size, bottom/right padding being whatever it implies (TFLM SAME padding with an odd total).
    """
    args = _check_conv("arm_convolve_s8", input, filter, bias, conv_params, quant_params, output_hw)
    input, filter, bias, out_hw = args
    return _run_convolve(input, filter, bias, conv_params, quant_params, out_hw)


def convolve_wrapper_s8(
    input: np.ndarray,
    filter: np.ndarray,
    bias: np.ndarray | None,
    conv_params: ConvParams,
    quant_params: PerChannelQuantParams,
    output_hw: tuple[int, int] | None = None,
) -> np.ndarray:
    """``arm_convolve_wrapper_s8`` (``Source/ConvolutionFunctions/arm_convolve_wrapper_s8.c``).

    Routes with :func:`select_convolve_kernel` and rejects the shapes the chosen kernel cannot compute
    (:func:`check_convolve_kernel_arguments`). Every route computes :func:`convolve_s8`'s numbers:
    arm_nn_mat_mult_nt_t_s8 folds ``input_offset·Σw`` into the sum, which is equal modulo 2^32.
    """
    args = _check_conv("arm_convolve_wrapper_s8", input, filter, bias, conv_params, quant_params, output_hw)
    input, filter, bias, out_hw = args
    dims = convolve_s8_dims(input, filter, conv_params, out_hw)
    check_convolve_kernel_arguments(select_convolve_kernel(conv_params, *dims), conv_params, *dims)
    return _run_convolve(input, filter, bias, conv_params, quant_params, out_hw)

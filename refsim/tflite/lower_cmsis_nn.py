"""Lowerings of the int8 builtins TFLM's cmsis_nn kernels compute with CMSIS-NN (and RESHAPE).

Each lowering does what the TFLM kernel's Prepare does (refsim/tflite/quantization.py: the
multipliers, shifts, activation range and padding from the model's float32 scales and options)
and calls the operator that runs the kernel's Eval (refsim/ops/tflm_cmsis_nn.py; SOFTMAX and
TRANSPOSE reuse the cortex_m operators of the same CMSIS-NN call, RESHAPE ExecuTorch's
``view_copy``: TFLM copies the bytes when input and output are different tensors). What a TFLM
Prepare refuses, or what refsim does not compute (int16 activations, int4 weights), is refused
with the operator's name and index.
"""

from __future__ import annotations

import numpy as np

from kernels_py.fixedpoint import ADD_LEFT_SHIFT
from kernels_py.softmax import softmax_params
from refsim.tflite import quantization as q
from refsim.tflite.lower import Call, Const, LowerContext, lowering
from refsim.tflite.schema import BuiltinOperator as B
from refsim.tflite.schema import TensorType as T

INT8 = T.INT8


def _activation(cx: LowerContext, out: int) -> tuple[int, int]:
    act = cx.options.get("fused_activation_function")
    try:
        return q.activation_range(act, cx.scale(out), cx.zero_point(out)) if act is not None else (-128, 127)
    except Exception as exc:
        raise cx.error(str(exc)) from None


def _int8_io(cx: LowerContext, *tensors: int) -> None:
    for i in tensors:
        cx.expect_type(i, INT8)


def _weights(cx: LowerContext, w: int, channels: int, axis: int) -> q.Quantization:
    """The filter's quantization, checked as PopulateConvolutionQuantizationParams does."""
    cx.expect_type(w, INT8)  # int4 (TensorType.INT4) weights are refused here, not unpacked
    quant = cx.quantization(w)
    if len(quant.scale) > 1:
        cx.require(
            len(quant.scale) == channels, f"filter has {len(quant.scale)} scales for {channels} channels"
        )
        cx.require(
            quant.quantized_dimension == axis, f"filter is quantized along dim {quant.quantized_dimension}"
        )
    if any(z != 0 for z in quant.zero_point):
        raise cx.error("the filter's zero point must be 0 (TFLM's int8 kernels take symmetric weights)")
    return quant


def _bias(cx: LowerContext, k: int, channels: int) -> int | None:
    b = cx.input(k, optional=True)
    if b is None:
        return None
    cx.expect_type(b, T.INT32)  # int64 bias (int16 activations) is not run
    cx.require(
        cx.tensor(b).numel == channels, f"bias has {cx.tensor(b).numel} values for {channels} channels"
    )
    return b


def _window(
    cx: LowerContext, x: int, kernel_hw: tuple[int, int], dilation_hw: tuple[int, int]
) -> q.WindowPadding:
    o = cx.options
    _, h, w, _ = cx.shape(x)
    padding = q.window_padding(o["padding"], (o["stride_h"], o["stride_w"]), dilation_hw, (h, w), kernel_hw)
    cx.require(padding.out_height > 0 and padding.out_width > 0, "the window does not fit the input")
    return padding


def _conv_like(cx: LowerContext, depthwise: bool) -> Call:
    x, w, y = cx.input(0), cx.input(1), cx.output(0)
    _int8_io(cx, x, y)
    cx.expect_rank(x, 4)
    cx.expect_rank(y, 4)
    cx.expect_rank(w, 4)
    channels = cx.shape(y)[3]
    quant = _weights(cx, w, channels, 3 if depthwise else 0)
    if depthwise and len(cx.op.inputs) == 3 and cx.op.inputs[2] == -1:
        raise cx.error(
            "the bias input is listed but absent (-1): TFLM's Prepare (depthwise_conv_common.cc, "
            "CalculateOpDataDepthwiseConv) takes three inputs as a bias and dereferences the null tensor, "
            "so TFLM crashes on this model; give a zero bias or two inputs"
        )
    bias = _bias(cx, 2, channels)
    o = cx.options
    dilation = (o["dilation_h_factor"], o["dilation_w_factor"])
    pad = _window(cx, x, cx.shape(w)[1:3], dilation)
    expected = [cx.shape(x)[0], pad.out_height, pad.out_width, channels]
    cx.require(list(cx.shape(y)) == expected, f"output shape {list(cx.shape(y))}, TFLM computes {expected}")
    mult, shift = q.per_channel_multipliers(cx.scale(x), quant.scale, cx.scale(y), channels)
    lo, hi = _activation(cx, y)
    args = {
        "input": x,
        "weight": w,
        "bias": bias,
        "stride": [o["stride_h"], o["stride_w"]],
        "padding": [pad.height, pad.width],
        "padding_offsets": [pad.height_offset, pad.width_offset],
        "dilation": list(dilation),
        "input_offset": -cx.zero_point(x),
        "output_offset": cx.zero_point(y),
        "requantize_multipliers": Const(mult),
        "requantize_shifts": Const(shift),
        "activation_min": lo,
        "activation_max": hi,
        "out": y,
    }
    if depthwise:
        multiplier = o["depth_multiplier"]
        cx.require(
            channels == cx.shape(x)[3] * multiplier,
            f"depth_multiplier {multiplier} with {cx.shape(x)[3]} input and {channels} output channels",
        )
        return Call("tflm::depthwise_conv_2d", depth_multiplier=multiplier, **args)
    return Call("tflm::conv_2d", **args)


@lowering(B.CONV_2D, INT8)
def _conv_2d(cx: LowerContext) -> Call:
    return _conv_like(cx, depthwise=False)


@lowering(B.DEPTHWISE_CONV_2D, INT8)
def _depthwise_conv_2d(cx: LowerContext) -> Call:
    return _conv_like(cx, depthwise=True)


@lowering(B.FULLY_CONNECTED, INT8)
def _fully_connected(cx: LowerContext) -> Call:
    x, w, y = cx.input(0), cx.input(1), cx.output(0)
    _int8_io(cx, x, y)
    cx.require(cx.options.get("weights_format", 0) == 0, "shuffled weights are not supported")
    cx.expect_rank(w, 2)
    channels = cx.shape(w)[0]
    quant = _weights(cx, w, channels, 0)
    bias = _bias(cx, 2, channels)
    if len(quant.scale) > 1:
        mult, shift = q.per_channel_multipliers(cx.scale(x), quant.scale, cx.scale(y), channels)
    else:
        if bias is not None:
            ok = q.bias_scale_matches(cx.scale(x), quant.scale[0], cx.scale(bias), cx.scale(y))
            cx.require(ok, "bias scale differs from input scale × filter scale by more than TFLM allows")
        m1, s1 = q.per_tensor_multiplier(cx.scale(x), quant.scale[0], cx.scale(y))
        mult, shift = np.array([m1], np.int32), np.array([s1], np.int32)
    lo, hi = _activation(cx, y)
    return Call(
        "tflm::fully_connected",
        input=x,
        weight=w,
        bias=bias,
        input_offset=-cx.zero_point(x),
        filter_offset=0,
        output_offset=cx.zero_point(y),
        requantize_multipliers=Const(mult),
        requantize_shifts=Const(shift),
        activation_min=lo,
        activation_max=hi,
        out=y,
    )


def _pool(cx: LowerContext, op: str) -> Call:
    x, y = cx.input(0), cx.output(0)
    _int8_io(cx, x, y)
    cx.expect_rank(x, 4)
    o = cx.options
    window = (o["filter_height"], o["filter_width"])
    pad = _window(cx, x, window, (1, 1))
    n, _, _, c = cx.shape(x)
    expected = [n, pad.out_height, pad.out_width, c]
    cx.require(list(cx.shape(y)) == expected, f"output shape {list(cx.shape(y))}, TFLM computes {expected}")
    cx.require(
        cx.scale(x) == cx.scale(y) and cx.zero_point(x) == cx.zero_point(y),
        "input and output quantization differ (TFLM's int8 pooling requires them equal)",
    )
    lo, hi = _activation(cx, y)
    return Call(
        op,
        input=x,
        kernel_size=list(window),
        stride=[o["stride_h"], o["stride_w"]],
        padding=[pad.height, pad.width],
        padding_offsets=[pad.height_offset, pad.width_offset],
        activation_min=lo,
        activation_max=hi,
        out=y,
    )


@lowering(B.AVERAGE_POOL_2D, INT8)
def _average_pool_2d(cx: LowerContext) -> Call:
    return _pool(cx, "tflm::average_pool_2d")


@lowering(B.MAX_POOL_2D, INT8)
def _max_pool_2d(cx: LowerContext) -> Call:
    return _pool(cx, "tflm::max_pool_2d")


def _small_exp(cx: LowerContext, real: float, what: str) -> tuple[int, int]:
    """``QuantizeMultiplierSmallerThanOneExp``: TFLM aborts unless 0 < real < 1."""
    cx.require(0.0 < real < 1.0, f"{what} multiplier {real!r} is outside (0, 1) (TFLM's Prepare aborts)")
    return q.quantize_multiplier(real)


@lowering(B.ADD, INT8)
def _add(cx: LowerContext) -> Call:
    a, b, y = cx.input(0), cx.input(1), cx.output(0)
    _int8_io(cx, a, b, y)
    sa, sb, sy = (q._f32(cx.scale(i)) for i in (a, b, y))
    twice_max = 2.0 * max(sa, sb)  # std::max of the float32 scales, then double
    m1, s1 = _small_exp(cx, sa / twice_max, "input1")
    m2, s2 = _small_exp(cx, sb / twice_max, "input2")
    mo, so = _small_exp(cx, twice_max / ((1 << ADD_LEFT_SHIFT) * sy), "output")
    lo, hi = _activation(cx, y)
    return Call(
        "tflm::add",
        input1=a,
        input2=b,
        input1_offset=-cx.zero_point(a),
        input1_multiplier=m1,
        input1_shift=s1,
        input2_offset=-cx.zero_point(b),
        input2_multiplier=m2,
        input2_shift=s2,
        left_shift=ADD_LEFT_SHIFT,
        output_offset=cx.zero_point(y),
        output_multiplier=mo,
        output_shift=so,
        activation_min=lo,
        activation_max=hi,
        out=y,
    )


@lowering(B.MUL, INT8)
def _mul(cx: LowerContext) -> Call:
    a, b, y = cx.input(0), cx.input(1), cx.output(0)
    _int8_io(cx, a, b, y)
    real = q._f32(cx.scale(a)) * q._f32(cx.scale(b)) / q._f32(cx.scale(y))
    mult, shift = q.quantize_multiplier(real)
    lo, hi = _activation(cx, y)
    return Call(
        "tflm::mul",
        input1=a,
        input2=b,
        input1_offset=-cx.zero_point(a),
        input2_offset=-cx.zero_point(b),
        output_offset=cx.zero_point(y),
        output_multiplier=mult,
        output_shift=shift,
        activation_min=lo,
        activation_max=hi,
        out=y,
    )


@lowering(B.SOFTMAX, INT8)
def _softmax(cx: LowerContext) -> Call:
    x, y = cx.input(0), cx.output(0)
    _int8_io(cx, x, y)  # int8 -> int16 (arm_softmax_s8_s16) is not run
    cx.require(
        cx.zero_point(y) == -128 and cx.scale(y) == 1.0 / 256,
        "int8 output must have zero point -128 and scale 1/256 (TFLM's softmax Prepare)",
    )
    try:
        mult, shift, diff_min = softmax_params(cx.options["beta"], cx.scale(x))
    except ValueError as exc:
        raise cx.error(str(exc)) from None
    return Call(
        "cortex_m::softmax.out",
        input=x,
        dim=-1,
        input_zero_point=cx.zero_point(x),
        output_zero_point=cx.zero_point(y),
        input_multiplier=mult,
        input_shift=shift,
        diff_min=diff_min,
        out=y,
    )


def _pad_call(cx: LowerContext) -> Call:
    x, paddings, y = cx.input(0), cx.input(1), cx.output(0)
    _int8_io(cx, x, y)
    rank = len(cx.shape(x))
    cx.require(1 <= rank <= 4, f"input of rank {rank} (arm_pad_s8 takes up to 4-D)")
    table = cx.constant(paddings).astype(np.int64).reshape(-1)
    cx.require(table.size == 2 * rank, f"paddings has {table.size} values for a {rank}-D input")
    cx.require(bool((table >= 0).all()), "negative paddings")
    pre = [0] * (4 - rank) + [int(v) for v in table[0::2]]
    post = [0] * (4 - rank) + [int(v) for v in table[1::2]]
    constant = cx.input(2, optional=True)
    if constant is None:
        value = cx.zero_point(y)
    else:
        cx.expect_type(constant, INT8)
        value = int(cx.constant(constant).reshape(-1)[0])
    cx.require(
        cx.scale(x) == cx.scale(y) and cx.zero_point(x) == cx.zero_point(y),
        "input and output quantization differ (TFLM's int8 pad copies bytes)",
    )
    return Call("tflm::pad", input=x, pre_pad=pre, post_pad=post, pad_value=value, out=y)


@lowering(B.PAD, INT8)
def _pad(cx: LowerContext) -> Call:
    return _pad_call(cx)


@lowering(B.PADV2, INT8)
def _padv2(cx: LowerContext) -> Call:
    return _pad_call(cx)


@lowering(B.TRANSPOSE, INT8)
def _transpose(cx: LowerContext) -> Call:
    x, perm, y = cx.input(0), cx.input(1), cx.output(0)
    _int8_io(cx, x, y)
    order = [int(v) for v in cx.constant(perm).reshape(-1)]
    cx.require(len(order) <= 4, f"a {len(order)}-D permutation (TFLM's int8 transpose takes up to 4)")
    return Call("cortex_m::transpose.out", input=x, perm=order, out=y)


@lowering(B.RESHAPE)
def _reshape(cx: LowerContext) -> Call:
    x, y = cx.input(0), cx.output(0)
    cx.require(cx.tensor(x).numel == cx.tensor(y).numel, "input and output sizes differ")
    cx.require(cx.type(x) == cx.type(y), "input and output types differ")
    return Call("aten::view_copy.out", self=x, size=list(cx.shape(y)), out=y)

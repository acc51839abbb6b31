"""Lowerings of the float32 builtins: TFLM's float kernels (refsim/ops/tflm_float.py).

TFLM's cmsis_nn kernels call CMSIS-NN for integer tensors only; a float32 operator runs TFLM's
float reference kernel (kernels_py/tflm_float/). Each lowering does what the kernel's Prepare
does for float - the padding ``ComputePaddingHeightWidth`` computes, the fused activation as
``CalculateActivationRange`` gives it (+-FLT_MAX for none), constant index tensors read once -
and refuses, naming the operator and its index, what TFLM's Prepare refuses or what refsim does
not compute as stated: a non-float32 filter (TFLM: "Hybrid models are not supported"), a fused
TANH or SIGN_BIT (``CalculateActivationRange`` would silently drop it), shuffled weights,
non-constant paddings/permutations/axes/slice bounds, ellipsis or new-axis masks.
"""

from __future__ import annotations

import math

import numpy as np

from kernels_py.tflm_float._common import ACTIVATION_RANGES
from kernels_py.tflm_float.movement import strided_slice_bounds
from refsim.tflite import quantization as q
from refsim.tflite.lower import Call, LowerContext, lowering
from refsim.tflite.schema import ActivationFunctionType
from refsim.tflite.schema import BuiltinOperator as B
from refsim.tflite.schema import TensorType as T

F32 = T.FLOAT32


def _activation(cx: LowerContext) -> dict[str, float]:
    act = cx.options.get("fused_activation_function", ActivationFunctionType.NONE)
    if int(act) not in ACTIVATION_RANGES:
        raise cx.error(
            f"fused activation {ActivationFunctionType(act).name} on float32 (TFLM's CalculateActivationRange ignores it)"
        )
    lo, hi = ACTIVATION_RANGES[int(act)]
    return {"activation_min": lo, "activation_max": hi}


def _float_io(cx: LowerContext, *tensors: int) -> None:
    for i in tensors:
        cx.expect_type(i, F32)


def _bias(cx: LowerContext, k: int, channels: int) -> int | None:
    b = cx.input(k, optional=True)
    if b is None:
        return None
    cx.expect_type(b, F32)
    cx.require(
        cx.tensor(b).numel == channels, f"bias has {cx.tensor(b).numel} values for {channels} channels"
    )
    return b


def _window(
    cx: LowerContext, x: int, y: int, kernel_hw: tuple[int, int], dilation_hw: tuple[int, int]
) -> dict:
    """Stride, padding and padding offsets as TFLM's Prepare computes them; the output's
    height and width must be those TFLM computes (the converter writes them)."""
    o = cx.options
    cx.expect_rank(x, 4)
    cx.expect_rank(y, 4)
    _, h, w, _ = cx.shape(x)
    stride = (o["stride_h"], o["stride_w"])
    pad = q.window_padding(o["padding"], stride, dilation_hw, (h, w), kernel_hw)
    cx.require(pad.out_height > 0 and pad.out_width > 0, "the window does not fit the input")
    found = tuple(cx.shape(y)[1:3])
    cx.require(
        found == (pad.out_height, pad.out_width),
        f"output height x width {list(found)}, TFLM computes {[pad.out_height, pad.out_width]}",
    )
    return {
        "stride": list(stride),
        "padding": [pad.height, pad.width],
        "padding_offsets": [pad.height_offset, pad.width_offset],
    }


def _conv_like(cx: LowerContext, depthwise: bool) -> Call:
    x, w, y = cx.input(0), cx.input(1), cx.output(0)
    _float_io(cx, x, y)
    if cx.type(w) != F32:
        raise cx.error(
            f"filter is {cx.type(w).name.lower()} on a float32 input (TFLM: hybrid models are not supported)"
        )
    cx.expect_rank(w, 4)
    cx.expect_rank(x, 4)
    cx.expect_rank(y, 4)
    o = cx.options
    dilation = (o["dilation_h_factor"], o["dilation_w_factor"])
    _, kh, kw, _ = cx.shape(w)
    channels = cx.shape(w)[3] if depthwise else cx.shape(w)[0]
    cx.require(cx.shape(y)[0] == cx.shape(x)[0], "input and output batches differ")
    cx.require(cx.shape(y)[3] == channels, f"output has {cx.shape(y)[3]} channels, the filter {channels}")
    args = {
        "input": x,
        "filter": w,
        "bias": _bias(cx, 2, channels),
        **_window(cx, x, y, (kh, kw), dilation),
        "dilation": list(dilation),
        **_activation(cx),
        "out": y,
    }
    if depthwise:
        multiplier = o["depth_multiplier"]
        cx.require(
            cx.shape(w)[0] == 1 and channels == cx.shape(x)[3] * multiplier,
            f"depth_multiplier {multiplier} with {cx.shape(x)[3]} input and {channels} output channels",
        )
        return Call("tflm::depthwise_conv_2d_f32", depth_multiplier=multiplier, **args)
    cin, fin = cx.shape(x)[3], cx.shape(w)[3]
    cx.require(
        fin > 0 and cin % fin == 0 and channels % (cin // fin) == 0,
        f"filter input depth {fin} does not group {cin} input channels into {channels} outputs",
    )
    return Call("tflm::conv_2d_f32", **args)


@lowering(B.CONV_2D, F32)
def _conv_2d(cx: LowerContext) -> Call:
    return _conv_like(cx, depthwise=False)


@lowering(B.DEPTHWISE_CONV_2D, F32)
def _depthwise_conv_2d(cx: LowerContext) -> Call:
    return _conv_like(cx, depthwise=True)


@lowering(B.FULLY_CONNECTED, F32)
def _fully_connected(cx: LowerContext) -> Call:
    x, w, y = cx.input(0), cx.input(1), cx.output(0)
    _float_io(cx, x, y)
    if cx.type(w) != F32:
        raise cx.error(
            f"filter is {cx.type(w).name.lower()} on a float32 input (TFLM: hybrid models are not supported)"
        )
    cx.require(cx.options.get("weights_format", 0) == 0, "shuffled weights are not supported")
    cx.expect_rank(w, 2)
    out_depth, accum = cx.shape(w)
    shape = cx.shape(y)
    cx.require(
        len(shape) >= 1 and shape[-1] == out_depth, f"output {list(shape)} does not end in {out_depth}"
    )
    batches = math.prod(shape) // out_depth if out_depth else 0
    cx.require(
        cx.tensor(x).numel == batches * accum,
        f"input has {cx.tensor(x).numel} values, TFLM reads {batches} x {accum}",
    )
    return Call(
        "tflm::fully_connected_f32", input=x, filter=w, bias=_bias(cx, 2, out_depth), **_activation(cx), out=y
    )


def _pool(cx: LowerContext, op: str) -> Call:
    x, y = cx.input(0), cx.output(0)
    _float_io(cx, x, y)
    o = cx.options
    window = (o["filter_height"], o["filter_width"])
    args = _window(cx, x, y, window, (1, 1))
    cx.require(
        cx.shape(y)[0] == cx.shape(x)[0] and cx.shape(y)[3] == cx.shape(x)[3], "batch or channels change"
    )
    return Call(op, input=x, filter=list(window), **args, **_activation(cx), out=y)


@lowering(B.AVERAGE_POOL_2D, F32)
def _average_pool_2d(cx: LowerContext) -> Call:
    return _pool(cx, "tflm::average_pool_2d_f32")


@lowering(B.MAX_POOL_2D, F32)
def _max_pool_2d(cx: LowerContext) -> Call:
    return _pool(cx, "tflm::max_pool_2d_f32")


def _binary(cx: LowerContext, op: str) -> Call:
    a, b, y = cx.input(0), cx.input(1), cx.output(0)
    _float_io(cx, a, b, y)
    try:
        shape = tuple(np.broadcast_shapes(cx.shape(a), cx.shape(b)))
    except ValueError:
        raise cx.error(f"shapes {list(cx.shape(a))} and {list(cx.shape(b))} do not broadcast") from None
    cx.require(
        shape == tuple(cx.shape(y)), f"output {list(cx.shape(y))}, the broadcast shape is {list(shape)}"
    )
    cx.require(len(shape) <= 6, "more than 6 dimensions (TFLM broadcasts up to 6)")
    return Call(op, input1=a, input2=b, **_activation(cx), out=y)


@lowering(B.ADD, F32)
def _add(cx: LowerContext) -> Call:
    return _binary(cx, "tflm::add_f32")


@lowering(B.MUL, F32)
def _mul(cx: LowerContext) -> Call:
    return _binary(cx, "tflm::mul_f32")


def _unary(cx: LowerContext, op: str) -> Call:
    x, y = cx.input(0), cx.output(0)
    _float_io(cx, x, y)
    cx.require(
        cx.shape(x) == cx.shape(y), f"output {list(cx.shape(y))} differs from input {list(cx.shape(x))}"
    )
    return Call(op, input=x, out=y)


for _code, _op in (
    (B.RELU, "tflm::relu_f32"),
    (B.RELU6, "tflm::relu6_f32"),
    (B.LOGISTIC, "tflm::logistic_f32"),
    (B.TANH, "tflm::tanh_f32"),
    (B.HARD_SWISH, "tflm::hard_swish_f32"),
):
    lowering(_code, F32)(lambda cx, _op=_op: _unary(cx, _op))


@lowering(B.SOFTMAX, F32)
def _softmax(cx: LowerContext) -> Call:
    x, y = cx.input(0), cx.output(0)
    _float_io(cx, x, y)
    cx.require(
        cx.shape(x) == cx.shape(y), f"output {list(cx.shape(y))} differs from input {list(cx.shape(x))}"
    )
    cx.require(len(cx.shape(x)) >= 1 and cx.tensor(x).numel > 0, "an empty or scalar input")
    return Call("tflm::softmax_f32", input=x, beta=cx.options["beta"], out=y)


def _int_constant(cx: LowerContext, k: int, what: str) -> np.ndarray:
    i = cx.input(k)
    cx.require(cx.type(i) == T.INT32, f"{what} tensor {i} is {cx.type(i).name.lower()}; TFLM reads int32")
    cx.require(cx.is_constant(i), f"non-constant {what} tensor {i} (TFLM requires a constant)")
    return np.asarray(cx.constant(i)).reshape(-1)


@lowering(B.PAD, F32)
def _pad(cx: LowerContext) -> Call:
    x, y = cx.input(0), cx.output(0)
    _float_io(cx, x, y)
    cx.require(len(cx.shape(x)) <= 5, "more than 5 dimensions")
    paddings = _int_constant(cx, 1, "paddings")
    rank = len(cx.shape(y))
    cx.require(paddings.size == 2 * rank, f"{paddings.size} paddings for a rank-{rank} output")
    cx.require(len(cx.shape(x)) == rank, "input and output ranks differ")
    cx.require(bool((paddings >= 0).all()), f"negative paddings {paddings.tolist()}")
    expected = [d + int(paddings[2 * i]) + int(paddings[2 * i + 1]) for i, d in enumerate(cx.shape(x))]
    cx.require(list(cx.shape(y)) == expected, f"output {list(cx.shape(y))}, the paddings give {expected}")
    value = cx.input(2, optional=True)
    if value is not None:
        cx.expect_type(value, F32)
        cx.require(cx.tensor(value).numel == 1, "constant_values must hold one element")
    return Call("tflm::pad_f32", input=x, paddings=[int(p) for p in paddings], constant_values=value, out=y)


@lowering(B.TRANSPOSE, F32)
def _transpose(cx: LowerContext) -> Call:
    x, y = cx.input(0), cx.output(0)
    _float_io(cx, x, y)
    perm = [int(p) for p in _int_constant(cx, 1, "perm")]
    rank = len(cx.shape(x))
    cx.require(rank <= 5, "more than 5 dimensions")
    cx.require(sorted(perm) == list(range(rank)), f"perm {perm} is not a permutation of {rank} dimensions")
    expected = [cx.shape(x)[p] for p in perm]
    cx.require(list(cx.shape(y)) == expected, f"output {list(cx.shape(y))}, the permutation gives {expected}")
    return Call("tflm::transpose_f32", input=x, perm=perm, out=y)


@lowering(B.CONCATENATION, F32)
def _concatenation(cx: LowerContext) -> Call:
    y = cx.output(0)
    inputs = [cx.input(k) for k in range(len(cx.op.inputs))]
    _float_io(cx, *inputs, y)
    cx.require(len(inputs) <= 10, f"{len(inputs)} inputs (TFLM takes at most 10)")
    cx.require(
        cx.options.get("fused_activation_function", 0) == ActivationFunctionType.NONE,
        "a fused activation (TFLM's concatenation requires none)",
    )
    rank = len(cx.shape(y))
    cx.require(rank <= 6, "more than 6 dimensions")
    axis = cx.options["axis"]
    axis = axis + rank if axis < 0 else axis
    cx.require(0 <= axis < rank, f"axis {cx.options['axis']} out of range for rank {rank}")
    for i in inputs:
        s = cx.shape(i)
        cx.require(
            len(s) == rank and all(s[d] == cx.shape(y)[d] for d in range(rank) if d != axis),
            f"input {i} {list(s)} does not match the output {list(cx.shape(y))} off axis {axis}",
        )
    cx.require(
        sum(cx.shape(i)[axis] for i in inputs) == cx.shape(y)[axis], "inputs do not add up to the output"
    )
    return Call("tflm::concatenation_f32", inputs=inputs, axis=axis, out=y)


@lowering(B.MEAN, F32)
def _mean(cx: LowerContext) -> Call:
    x, y = cx.input(0), cx.output(0)
    _float_io(cx, x, y)
    axes = [int(a) for a in _int_constant(cx, 1, "axis")]
    rank = len(cx.shape(x))
    cx.require(len(axes) <= 4, f"{len(axes)} axes (TFLM's MeanParams holds 4)")
    resolved: list[int] = []
    for a in axes:  # reduce.h's ResolveAxis: negative from the end, duplicates dropped
        r = a + rank if a < 0 else a
        cx.require(0 <= r < rank, f"axis {a} out of range for rank {rank}")
        if r not in resolved:
            resolved.append(r)
    cx.require(cx.tensor(x).numel > 0, "an empty input")
    kept = [d for i, d in enumerate(cx.shape(x)) if i not in resolved]
    keep = [1 if i in resolved else d for i, d in enumerate(cx.shape(x))]
    expected = keep if cx.options.get("keep_dims") else kept
    cx.require(list(cx.shape(y)) == expected, f"output {list(cx.shape(y))}, expected {expected}")
    return Call("tflm::mean_f32", input=x, axis=resolved, out=y)


@lowering(B.STRIDED_SLICE, F32)
def _strided_slice(cx: LowerContext) -> Call:
    x, y = cx.input(0), cx.output(0)
    _float_io(cx, x, y)
    o = cx.options
    shape = cx.shape(x)
    cx.require(len(shape) <= 4, "more than 4 dimensions (TFLM's kMaxDim)")
    for mask in ("ellipsis_mask", "new_axis_mask"):
        cx.require(not o.get(mask), f"{mask} {o.get(mask)} (TFLM's kernel sets it to 0)")
    cx.require(not o.get("offset"), "offset=True (TFLM's kernel does not read it)")
    begin, end, strides = (
        [int(v) for v in _int_constant(cx, k, name)] for k, name in ((1, "begin"), (2, "end"), (3, "strides"))
    )
    cx.require(
        len(begin) == len(end) == len(strides) == len(shape), "begin/end/strides do not match the rank"
    )
    cx.require(0 not in strides, "a zero stride")
    masks = {k: o.get(k, 0) for k in ("begin_mask", "end_mask", "shrink_axis_mask")}
    expected = _prepare_output_shape(shape, begin, end, strides, **masks)
    cx.require(
        list(cx.shape(y)) == expected, f"output {list(cx.shape(y))}, TFLM's Prepare computes {expected}"
    )
    bounds = strided_slice_bounds(shape, tuple(begin), tuple(end), tuple(strides), **masks)
    # A shrunk axis must still yield its one element: with a negative stride TFLM's Eval loop
    # ``index > start + 1`` takes none, and the output would keep whatever the arena held.
    taken = [len(range(*b)) for b in bounds]
    kept = [n for k, n in enumerate(taken) if not masks["shrink_axis_mask"] & (1 << k)]
    cx.require(
        kept == expected and math.prod(taken) == math.prod(expected),
        f"TFLM's Eval would take {taken} elements per axis where its Prepare sized {expected}",
    )
    return Call("tflm::strided_slice_f32", input=x, begin=begin, end=end, strides=strides, **masks, out=y)


def _prepare_output_shape(shape, begin, end, strides, *, begin_mask, end_mask, shrink_axis_mask) -> list[int]:
    """``CheckOutputSize`` (micro/kernels/strided_slice_common.cc) with ``StartForAxis`` /
    ``StopForAxis`` (strided_slice_logic.h): what TFLM's Prepare requires of the output."""
    big, small = 2**31 - 1, -(2**31)
    out = []
    for axis, size in enumerate(shape):
        stride = strides[axis]
        if size == 0:
            start = stop = 0
        else:
            start = begin[axis]
            if begin_mask & (1 << axis):
                start = small if stride > 0 else big
            if start < 0:
                start += size
            start = min(max(start, 0), size) if stride > 0 else min(max(start, -1), size - 1)
            stop = end[axis]
            if end_mask & (1 << axis):
                stop = big if stride > 0 else small
            if stop < 0:
                stop += size
            stop = min(max(stop, 0), size) if stride > 0 else min(max(stop, -1), size - 1)
        if shrink_axis_mask & (1 << axis):
            continue
        n = math.ceil(np.float32(stop - start) / np.float32(stride))
        out.append(max(int(n), 0))
    return out

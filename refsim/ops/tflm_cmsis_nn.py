"""TFLM's cmsis_nn kernels (TFLM @ 90b983c2, ``tensorflow/lite/micro/kernels/cmsis_nn/*.cc``) for
int8, on kernels_py's CMSIS-NN kernels: the operators a lowered .tflite calls
(refsim/tflite/lower_cmsis_nn.py makes the calls, with TFLM's Prepare arithmetic already done).

| op | TFLM kernel | CMSIS-NN call |
|---|---|---|
| tflm::conv_2d | cmsis_nn/conv.cc | arm_convolve_wrapper_s8 |
| tflm::depthwise_conv_2d | cmsis_nn/depthwise_conv.cc | arm_depthwise_conv_wrapper_s8 |
| tflm::fully_connected | cmsis_nn/fully_connected.cc | arm_convolve_1x1_s8_fast (output rank > 2, depth % 4 == 0), else arm_fully_connected_s8 / _per_channel_s8 |
| tflm::average_pool_2d, tflm::max_pool_2d | cmsis_nn/pooling.cc | arm_avgpool_s8, arm_max_pool_s8 |
| tflm::add, tflm::mul | cmsis_nn/add.cc, mul.cc | arm_elementwise_add_s8 / _mul_s8; a broadcast goes to TFLM's reference ``BroadcastAdd4DSlow`` / ``BroadcastMul4DSlow``, whose per-element arithmetic is the same |

Every tensor is NHWC, contiguous, as TFLite lays it out. Padding is TFLM's
``ComputePaddingHeightWidth``: CMSIS-NN receives the top/left padding; the extra bottom/right
row or column of an odd total (``padding_offsets``) only shows in the output extent, which is
checked against it. SOFTMAX, PAD, TRANSPOSE and RESHAPE reuse the cortex_m/aten operators of the
same CMSIS-NN call (see the lowering).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kernels_py import conv as kconv
from kernels_py import depthwise as kdw
from kernels_py import elementwise, layout, pooling
from kernels_py import fully_connected as kfc
from kernels_py.fixedpoint import ADD_LEFT_SHIFT
from kernels_py.types import (
    INT8_MAX,
    INT8_MIN,
    ConvParams,
    Dims,
    DwConvParams,
    FcParams,
    PerTensorQuantParams,
    PoolParams,
    Tile,
)
from refsim.ops.cortex_m_calls import (
    _activation,
    _constant_int32,
    _contiguous,
    _dry_run,
    _execute,
    _int_in,
    _Plan,
    _tensor,
    _view,
    _watch,
)
from refsim.ops.cortex_m_conv import _conv_operands, _conv_plan, _conv_scratch_need, _ConvCall, _pair, _quant
from refsim.ops.registry import Args, register
from refsim.ops.work_params import dims as _dims
from refsim.ops.work_params import tiles as _tiles
from refsim.ops.work_params import weight_bytes as _weight_bytes
from refsim.pte.model import ScalarType

_CONV = (
    "tflm::{name}(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, int[] padding_offsets, "
    "int[] dilation, {extra}int input_offset, int output_offset, Tensor requantize_multipliers, "
    "Tensor requantize_shifts, int activation_min, int activation_max, *, Tensor(a!) out) -> Tensor(a!)"
)


def _nhwc(a: Args, name: str) -> tuple[int, int, int, int]:
    t = _tensor(a, name, (ScalarType.INT8,), 4)
    _contiguous(a, name, t)
    if min(t.sizes) < 1:
        raise a.error(name, "non-empty", f"sizes {list(t.sizes)}")
    n, h, w, c = t.sizes
    return n, h, w, c


def _window_extent(a: Args, image: tuple[int, int], kernel: tuple[int, int], dilation: tuple[int, int]):
    """The output extent TFLM computed: ``(in + 2·pad + offset - effective kernel) / stride + 1``."""
    (sh, sw), (ph, pw) = _pair(a, "stride", 1), _pair(a, "padding", 0)
    oh_, ow_ = _pair(a, "padding_offsets", 0)
    if oh_ > 1 or ow_ > 1:
        raise a.error("padding_offsets", "0 or 1 (the odd row/column of TFLM's SAME padding)", [oh_, ow_])
    return [
        kconv.conv_output_size(image[0] + oh_, kernel[0], sh, ph, dilation[0]),
        kconv.conv_output_size(image[1] + ow_, kernel[1], sw, pw, dilation[1]),
    ]


# --- conv_2d and depthwise_conv_2d -----------------------------------------------------------------


def _tflm_conv_call(a: Args, kind: str) -> _ConvCall:
    """The CMSIS-NN call TFLM's conv/depthwise Eval makes, read and checked from the arguments."""
    n, h, w, c = _nhwc(a, "input")
    on, oh, ow, oc = _nhwc(a, "out")
    weight = _tensor(a, "weight", (ScalarType.INT8,), 4)
    _contiguous(a, "weight", weight)
    wo, kh, kw, wc = weight.sizes
    if min(weight.sizes) < 1:
        raise a.error("weight", "non-empty", f"sizes {list(weight.sizes)}")
    stride_h, stride_w = _pair(a, "stride", 1)
    pad_h, pad_w = _pair(a, "padding", 0)
    dil_h, dil_w = _pair(a, "dilation", 1)
    common: dict[str, Any] = {
        "input_offset": _int_in(a, "input_offset", -127, 128),
        "output_offset": _int_in(a, "output_offset", INT8_MIN, INT8_MAX),
        "stride": Tile(stride_w, stride_h),
        "padding": Tile(pad_w, pad_h),
        "dilation": Tile(dil_w, dil_h),
        "activation": _activation(a),
    }
    if kind == "conv":
        if c % wc or oc % (c // wc) or wo != oc:
            expected = f"OHWI [C_OUT={oc}, KH, KW, C_IN/groups] with groups dividing C_IN={c} and C_OUT"
            raise a.error("weight", expected, f"sizes {list(weight.sizes)}")
        params: Any = ConvParams(**common)
        filter_dims = Dims(wo, kh, kw, wc)
    else:
        mult = _int_in(a, "depth_multiplier", 1, 1 << 16)
        if wo != 1 or wc != oc or oc != c * mult:
            expected = f"[1, KH, KW, C_OUT={oc}] with C_OUT = C_IN·depth_multiplier = {c * mult}"
            raise a.error("weight", expected, f"sizes {list(weight.sizes)}")
        params = DwConvParams(ch_mult=mult, **common)
        filter_dims = Dims(1, kh, kw, oc)
    expect = _window_extent(a, (h, w), (kh, kw), (dil_h, dil_w))
    if [on, oh, ow] != [n, *expect] or min(expect) < 1:
        raise a.error("out", f"NHWC extent {[n, *expect, oc]} (TFLM's output size)", f"{[on, oh, ow, oc]}")
    return _ConvCall(Dims(n, h, w, c), filter_dims, Dims(n, oh, ow, oc), params)


def _register_conv(kind: str, name: str, function: str, doc: str) -> None:
    extra = "int depth_multiplier, " if kind == "depthwise" else ""

    def prepare(a: Args) -> _Plan:
        call = _tflm_conv_call(a, kind)
        fn, operands = _conv_operands(a, kind, call, checked=False)
        return _conv_plan(a, fn, operands, _view(a.out, call.output_dims.shape))

    def run(a: Args) -> None:
        _execute(a, prepare)

    def kernel(a: Args, isa: str) -> str:
        c = _tflm_conv_call(a, kind)
        if kind == "conv":
            return kconv.select_convolve_kernel(c.params, c.input_dims, c.filter_dims, c.output_dims)
        return kdw.select_depthwise_kernel(c.params, c.input_dims, c.filter_dims, c.output_dims, isa)

    run.__doc__ = doc
    op = register(_CONV.format(name=name, extra=extra), kernel=kernel)(run)

    @op.validator
    def validate(a: Args) -> None:
        call = _tflm_conv_call(a, kind)
        fn, operands = _conv_operands(a, kind, call, checked=True)
        _dry_run(a, fn, np.zeros_like(operands[0]), *operands[1:])
        a.state = prepare(a)

    @op.mac_count
    def macs(a: Args) -> int:
        c = _tflm_conv_call(a, kind)
        f, o = c.filter_dims, c.output_dims
        return o.n * o.h * o.w * o.c * f.h * f.w * (f.c if kind == "conv" else 1)

    @op.scratch_bytes
    def scratch(a: Args, isa: str) -> int:
        return _conv_scratch_need(_tflm_conv_call(a, kind), kind)[isa][0]

    def cost(a: Args, tier: str) -> list:
        c = _tflm_conv_call(a, kind)
        p = {**_dims("input_dims", c.input_dims), **_dims("filter_dims", c.filter_dims)}
        p.update(_dims("output_dims", c.output_dims))
        p.update(_tiles(c.params))
        if kind == "depthwise":
            p["ch_mult"] = c.params.ch_mult
        return [KernelWork(function, p, weights_bytes=_weight_bytes(a, "weight", "bias"))]

    op.cost = cost


def KernelWork(*args, **kwargs):
    """isa_models' KernelWork, imported when a cost is asked for: a plain run never loads the
    cost model (tests/isa_models/test_import_cost.py)."""
    from isa_models.cortex_m.program import KernelWork as work

    return work(*args, **kwargs)


_register_conv(
    "conv",
    "conv_2d",
    "arm_convolve_wrapper_s8",
    "TFLM CONV_2D (int8): arm_convolve_wrapper_s8, per-channel requantization from TFLM's Prepare.",
)
_register_conv(
    "depthwise",
    "depthwise_conv_2d",
    "arm_depthwise_conv_wrapper_s8",
    "TFLM DEPTHWISE_CONV_2D (int8): arm_depthwise_conv_wrapper_s8, ch_mult = the options' depth_multiplier.",
)


# --- fully_connected ---------------------------------------------------------------------------------


def _fc_shape(a: Args) -> tuple[int, int, int]:
    """(batches, accum_depth, output_depth) as TFLM's fully_connected Prepare derives them."""
    x = _tensor(a, "input", (ScalarType.INT8,))
    w = _tensor(a, "weight", (ScalarType.INT8,), 2)
    out = _tensor(a, "out", (ScalarType.INT8,))
    for name, t in (("input", x), ("weight", w), ("out", out)):
        _contiguous(a, name, t)
    if len(out.sizes) < 1 or min(w.sizes) < 1:
        raise a.error("weight", "a non-empty [C_OUT, K] matrix", list(w.sizes))
    channels, depth = w.sizes
    if out.sizes[-1] != channels:
        raise a.error("out", f"last dim {channels} (the weight's C_OUT)", list(out.sizes))
    batches = out.meta.numel // channels
    if x.meta.numel != batches * depth:
        raise a.error(
            "input", f"{batches}·{depth} elements ({batches} rows of the weight's K)", list(x.sizes)
        )
    return batches, depth, channels


def _fc_function(a: Args) -> str:
    _, depth, _ = _fc_shape(a)
    if len(a.out.sizes) > 2 and depth % 4 == 0:
        return "arm_convolve_1x1_s8_fast"
    per_channel = a.requantize_multipliers.meta.numel > 1
    return "arm_fully_connected_per_channel_s8" if per_channel else "arm_fully_connected_s8"


def _fc_operands(a: Args, checked: bool):
    batches, depth, channels = _fc_shape(a)
    fc = FcParams(
        input_offset=_int_in(a, "input_offset", -127, 128),
        filter_offset=_int_in(a, "filter_offset", -127, 128),
        output_offset=_int_in(a, "output_offset", INT8_MIN, INT8_MAX),
        activation=_activation(a),
    )
    n_quant = a.requantize_multipliers.meta.numel
    if n_quant not in (1, channels):
        raise a.error("requantize_multipliers", f"1 or {channels} values", n_quant)
    if _fc_function(a) == "arm_convolve_1x1_s8_fast" and fc.filter_offset:
        raise a.error(
            "filter_offset", "0 (TFLM's 1x1-conv path passes no filter zero point)", fc.filter_offset
        )
    x = _view(a.input, (batches, depth))
    weight = np.array(a.weight.storage.reshape(channels, depth))
    bias = _constant_int32(a, "bias", channels)
    if n_quant == 1:
        mult = int(_constant_int32(a, "requantize_multipliers", 1)[0])
        shift = int(_constant_int32(a, "requantize_shifts", 1)[0])
        return kfc.fully_connected_s8, (x, weight, bias, fc, PerTensorQuantParams(mult, shift))
    quant = _quant(a, channels)
    return kfc.fully_connected_per_channel_s8, (x, weight, bias, fc, quant)


@register(
    "tflm::fully_connected(Tensor input, Tensor weight, Tensor? bias, int input_offset, int filter_offset, "
    "int output_offset, Tensor requantize_multipliers, Tensor requantize_shifts, int activation_min, "
    "int activation_max, *, Tensor(a!) out) -> Tensor(a!)",
    kernel=lambda a, isa: _fc_function(a),
)
def fully_connected(a: Args) -> None:
    """TFLM FULLY_CONNECTED (int8): arm_fully_connected_s8 (per tensor) or _per_channel_s8; as
    arm_convolve_1x1_s8_fast when the output has rank > 2 and the depth is a multiple of 4 (the
    same arithmetic)."""
    _execute(a, _fc_prepare)


def _fc_prepare(a: Args) -> _Plan:
    fn, operands = _fc_operands(a, checked=False)
    batches, _, channels = _fc_shape(a)
    watch = _watch(a, "input", "weight", "bias", "out")
    return _Plan(a, fn, operands, _view(a.out, (batches, channels)), watch)


@fully_connected.validator
def _validate_fc(a: Args) -> None:
    fn, operands = _fc_operands(a, checked=True)
    _dry_run(a, fn, np.zeros_like(operands[0]), *operands[1:])
    a.state = _fc_prepare(a)


@fully_connected.mac_count
def _fc_macs(a: Args) -> int:
    batches, depth, channels = _fc_shape(a)
    return batches * depth * channels


def _fc_cost(a: Args, tier: str) -> list:
    rows, depth, channels = _fc_shape(a)
    if _fc_function(a) == "arm_convolve_1x1_s8_fast":
        p = {
            **_dims("input_dims", Dims(rows, 1, 1, depth)),
            **_dims("filter_dims", Dims(channels, 1, 1, depth)),
        }
        p.update(_dims("output_dims", Dims(rows, 1, 1, channels)))
        p.update(
            {"stride.h": 1, "stride.w": 1, "padding.h": 0, "padding.w": 0, "dilation.h": 1, "dilation.w": 1}
        )
        return [KernelWork("arm_convolve_1x1_s8_fast", p, weights_bytes=_weight_bytes(a, "weight", "bias"))]
    p = {**_dims("input_dims", Dims(rows, 1, 1, depth)), **_dims("filter_dims", Dims(depth, 1, 1, channels))}
    p.update(_dims("output_dims", Dims(rows, 1, 1, channels)))
    return [KernelWork("arm_fully_connected_s8", p, weights_bytes=_weight_bytes(a, "weight", "bias"))]


fully_connected.cost = _fc_cost


# --- pooling ---------------------------------------------------------------------------------------

_POOL = (
    "tflm::{name}(Tensor input, int[] kernel_size, int[] stride, int[] padding, int[] padding_offsets, "
    "int activation_min, int activation_max, *, Tensor(a!) out) -> Tensor(a!)"
)


def _pool_call(a: Args) -> tuple[np.ndarray, PoolParams, tuple[int, int], tuple[int, int]]:
    n, h, w, c = _nhwc(a, "input")
    on, oh, ow, oc = _nhwc(a, "out")
    kh, kw = _pair(a, "kernel_size", 1)
    expect = _window_extent(a, (h, w), (kh, kw), (1, 1))
    if [on, oh, ow, oc] != [n, *expect, c] or min(expect) < 1:
        raise a.error("out", f"NHWC extent {[n, *expect, c]} (TFLM's output size)", list(a.out.sizes))
    (sh, sw), (ph, pw) = _pair(a, "stride", 1), _pair(a, "padding", 0)
    params = PoolParams(stride=Tile(sw, sh), padding=Tile(pw, ph), activation=_activation(a))
    return _view(a.input, (n, h, w, c)), params, (kh, kw), (oh, ow)


def _register_pool(name: str, kernel, function: str, doc: str) -> None:
    def prepare(a: Args) -> _Plan:
        x, params, window, out_hw = _pool_call(a)
        return _Plan(a, kernel, (x, params, window, out_hw), a.out.storage, _watch(a, "input", "out"))

    def run(a: Args) -> None:
        _execute(a, prepare)

    run.__doc__ = doc
    op = register(_POOL.format(name=name), kernel=function)(run)

    @op.validator
    def validate(a: Args) -> None:
        x, params, window, out_hw = _pool_call(a)
        _dry_run(a, kernel, np.zeros_like(x), params, window, out_hw)
        a.state = prepare(a)

    def cost(a: Args, tier: str) -> list:
        x, params, (kh, kw), (oh, ow) = _pool_call(a)
        n, h, w, c = x.shape
        p = {"filter_dims.h": kh, "filter_dims.w": kw, **_tiles(params)}
        p.update(_dims("input_dims", Dims(1, h, w, c)))
        p.update(_dims("output_dims", Dims(1, oh, ow, c)))
        return [KernelWork(function, p, repeat=n)]

    op.cost = cost


_register_pool(
    "average_pool_2d",
    pooling.avgpool_s8,
    pooling.ARM_AVGPOOL_S8,
    "TFLM AVERAGE_POOL_2D (int8): arm_avgpool_s8 (the divisor counts the taps inside the input).",
)
_register_pool(
    "max_pool_2d", pooling.max_pool_s8, pooling.ARM_MAX_POOL_S8, "TFLM MAX_POOL_2D (int8): arm_max_pool_s8."
)


# --- add and mul -----------------------------------------------------------------------------------


def _binary(a: Args) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    shapes = []
    for name in ("input1", "input2", "out"):
        t = _tensor(a, name, (ScalarType.INT8,))
        _contiguous(a, name, t)
        if len(t.sizes) > 4:
            raise a.error(name, "at most 4-D (TFLM's BroadcastAdd4DSlow/BroadcastMul4DSlow)", list(t.sizes))
        shapes.append(tuple(t.sizes))
    try:
        shape = np.broadcast_shapes(shapes[0], shapes[1])
    except ValueError:
        raise a.error(
            "input2", f"a shape broadcastable with input1 {list(shapes[0])}", list(shapes[1])
        ) from None
    if tuple(shape) != shapes[2]:
        raise a.error("out", f"the broadcast shape {list(shape)}", list(shapes[2]))
    return a.input1.logical, a.input2.logical, shapes[2]


def _binary_function(a: Args, function: str) -> str:
    """CMSIS-NN's call, or TFLM's reference broadcast loop when the input shapes differ."""
    return function if tuple(a.input1.sizes) == tuple(a.input2.sizes) else "tflm_reference_broadcast"


def _add_kwargs(a: Args) -> dict[str, int]:
    if a.left_shift != ADD_LEFT_SHIFT:
        raise a.error("left_shift", f"{ADD_LEFT_SHIFT} (TFLM's int8 add)", a.left_shift)
    return {
        "input_1_offset": a.input1_offset,
        "input_1_mult": a.input1_multiplier,
        "input_1_shift": a.input1_shift,
        "input_2_offset": a.input2_offset,
        "input_2_mult": a.input2_multiplier,
        "input_2_shift": a.input2_shift,
        "left_shift": a.left_shift,
        "out_offset": a.output_offset,
        "out_mult": a.output_multiplier,
        "out_shift": a.output_shift,
        "out_activation_min": a.activation_min,
        "out_activation_max": a.activation_max,
    }


def _mul_kwargs(a: Args) -> dict[str, int]:
    return {
        "input_1_offset": a.input1_offset,
        "input_2_offset": a.input2_offset,
        "out_offset": a.output_offset,
        "out_mult": a.output_multiplier,
        "out_shift": a.output_shift,
        "out_activation_min": a.activation_min,
        "out_activation_max": a.activation_max,
    }


def _register_binary(schema: str, kernel, kwargs, function: str, doc: str) -> None:
    def compute(a: Args, x: np.ndarray, y: np.ndarray) -> None:
        a.out.logical[...] = kernel(x, y, **kwargs(a))

    def run(a: Args) -> None:
        compute(a, a.input1.logical, a.input2.logical)

    run.__doc__ = doc
    op = register(schema, kernel=lambda a, isa: _binary_function(a, function))(run)

    @op.validator
    def validate(a: Args) -> None:
        x, y, _ = _binary(a)
        try:
            kernel(np.zeros_like(x), np.zeros_like(y), **kwargs(a))
        except Exception as exc:  # kernels_py's KernelArgumentError names the argument
            raise a.error("arguments", "what CMSIS-NN accepts", exc) from None

    def cost(a: Args, tier: str) -> list:
        return [KernelWork(_binary_function(a, function), {"block_size": int(a.out.meta.numel)})]

    op.cost = cost


_register_binary(
    "tflm::add(Tensor input1, Tensor input2, int input1_offset, int input1_multiplier, int input1_shift, "
    "int input2_offset, int input2_multiplier, int input2_shift, int left_shift, int output_offset, "
    "int output_multiplier, int output_shift, int activation_min, int activation_max, *, Tensor(a!) out) "
    "-> Tensor(a!)",
    elementwise.elementwise_add_s8,
    _add_kwargs,
    elementwise.ADD_S8,
    "TFLM ADD (int8): arm_elementwise_add_s8 (left shift 20); broadcasts by TFLM's BroadcastAdd4DSlow.",
)
_register_binary(
    "tflm::mul(Tensor input1, Tensor input2, int input1_offset, int input2_offset, int output_offset, "
    "int output_multiplier, int output_shift, int activation_min, int activation_max, *, Tensor(a!) out) "
    "-> Tensor(a!)",
    elementwise.elementwise_mul_s8,
    _mul_kwargs,
    elementwise.MUL_S8,
    "TFLM MUL (int8): arm_elementwise_mul_s8; broadcasts by TFLM's BroadcastMul4DSlow.",
)


# --- pad -------------------------------------------------------------------------------------------


@register(
    "tflm::pad(Tensor input, int[] pre_pad, int[] post_pad, int pad_value, *, Tensor(a!) out) -> Tensor(a!)",
    kernel="arm_pad_s8",
)
def pad(a: Args) -> None:
    """TFLM PAD/PADV2 (int8): arm_pad_s8, dims and pads right-aligned to NHWC (cmsis_nn/pad.cc)."""
    x = a.input.storage.reshape(_four(a.input.sizes))
    a.out.storage.reshape(-1)[...] = layout.pad_s8(
        x, Dims(*a.pre_pad), Dims(*a.post_pad), a.pad_value
    ).reshape(-1)


def _four(sizes) -> tuple[int, int, int, int]:
    s = (1,) * (4 - len(sizes)) + tuple(int(v) for v in sizes)
    return s[0], s[1], s[2], s[3]


@pad.validator
def _validate_pad(a: Args) -> None:
    for name in ("input", "out"):
        _contiguous(a, name, _tensor(a, name, (ScalarType.INT8,)))
    rank = len(a.input.sizes)
    if not 1 <= rank <= 4:
        raise a.error("input", "1- to 4-D", list(a.input.sizes))
    for name in ("pre_pad", "post_pad"):
        values = getattr(a, name)
        if len(values) != 4 or min(values) < 0 or any(values[: 4 - rank]):
            raise a.error(
                name, f"four non-negative values, right-aligned to the {rank}-D input", list(values)
            )
    _int_in(a, "pad_value", INT8_MIN, INT8_MAX)
    expected = [s + p + q for s, p, q in zip(_four(a.input.sizes), a.pre_pad, a.post_pad, strict=True)]
    if _four(a.out.sizes) != tuple(expected):
        raise a.error("out", f"the padded extent {expected[4 - rank :]}", list(a.out.sizes))


def _pad_cost(a: Args, tier: str) -> list:
    from isa_models.cortex_m import layout as layout_formulas

    params = layout_formulas.pad_params(_four(a.input.sizes), tuple(a.pre_pad), tuple(a.post_pad))
    return [KernelWork("arm_pad_s8", params)]


pad.cost = _pad_cost

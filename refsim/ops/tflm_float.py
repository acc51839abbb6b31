"""TFLM's float32 builtins as operators (``tflm::<builtin>_f32``), what a lowered .tflite calls.

Each op runs the kernel of kernels_py/tflm_float/ that mirrors TFLM's float reference kernel
(the module docstrings name the C++ they follow and the exactness they claim). The arguments
are what TFLM's Prepare hands its Eval: the padding ``ComputePaddingHeightWidth`` computes
(``padding`` = top/left, ``padding_offsets`` = the extra bottom/right, which only the output
size reflects) and the fused activation as the float range ``CalculateActivationRange`` gives
(``activation_min``/``activation_max``, +-FLT_MAX for none). refsim/tflite/lower_float.py turns
the builtins into these calls. Tensors are the .tflite's own, NHWC, in the default dim order.

Validators check what the C kernel assumes and does not check itself in a release build
(``TFLITE_DCHECK``s: matching batch and channel dims, bias length), so a call that would read
out of bounds on the device is refused at load instead.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from kernels_py.tflm_float import (
    activations,
    conv,
    elementwise,
    fully_connected,
    movement,
    pooling,
    reduce,
    softmax,
)
from refsim.ops.cortex_m_elementwise import raw
from refsim.ops.registry import Args, OpDef, register
from refsim.pte.model import ScalarType

FLOAT32 = ScalarType.FLOAT32


def _tflm(schema: str) -> Callable[[Callable[[Args], None]], OpDef]:
    """Register a TFLM float kernel (outside CMSIS-NN) running with IEEE semantics, no warnings."""

    def wrap(fn: Callable[[Args], None]) -> OpDef:
        @functools.wraps(fn)
        def run(a: Args) -> None:
            with np.errstate(all="ignore"):
                fn(a)

        return register(schema, portable_fallback=True)(run)

    return wrap


def _check_f32(a: Args, *names: str) -> None:
    for name in names:
        t = getattr(a, name)
        if t is not None and t.scalar_type != FLOAT32:
            raise a.error(name, "a float32 tensor", t.scalar_type.name.lower())


def _check_pair(a: Args, *names: str) -> None:
    for name in names:
        values = getattr(a, name)
        if len(values) != 2:
            raise a.error(name, "two values (height, width)", list(values))


def _check_activation(a: Args) -> None:
    if not a.activation_min <= a.activation_max:
        raise a.error("activation_min", f"<= activation_max {a.activation_max}", a.activation_min)


def _activation(a: Args) -> tuple[float, float]:
    return (a.activation_min, a.activation_max)


def _check_window(a: Args, kernel_hw: tuple[int, int], dilation: tuple[int, int]) -> None:
    """Strides and dilations positive, padding non-negative, a 4-D NHWC input and output."""
    _check_pair(a, "stride", "padding", "padding_offsets")
    if min(a.stride) < 1 or min(dilation) < 1:
        raise a.error("stride", "positive strides and dilations", [list(a.stride), list(dilation)])
    if min(a.padding) < 0 or min(a.padding_offsets) < 0 or max(a.padding_offsets) > 1:
        raise a.error(
            "padding", "non-negative, with offsets 0 or 1", [list(a.padding), list(a.padding_offsets)]
        )
    for name in ("input", "out"):
        if len(getattr(a, name).sizes) != 4:
            raise a.error(name, "4-D NHWC", list(getattr(a, name).sizes))
    if min(kernel_hw) < 1:
        raise a.error("filter", "a window of at least 1 x 1", list(kernel_hw))
    if a.input.sizes[0] != a.out.sizes[0]:
        raise a.error("out", f"batch {a.input.sizes[0]} like input", a.out.sizes[0])
    _check_activation(a)


def _check_bias(a: Args, channels: int) -> None:
    if a.bias is not None and math.prod(a.bias.sizes) != channels:
        raise a.error("bias", f"{channels} values (one per output channel)", list(a.bias.sizes))


def _bias(a: Args) -> np.ndarray | None:
    return None if a.bias is None else raw(a.bias)


# --- conv, depthwise, fully connected ------------------------------------------------------------


@_tflm(
    "tflm::conv_2d_f32(Tensor input, Tensor filter, Tensor? bias, int[] stride, int[] padding, "
    "int[] padding_offsets, int[] dilation, float activation_min, float activation_max, *, "
    "Tensor(a!) out) -> Tensor(a!)"
)
def conv_2d_f32(a: Args) -> None:
    """CONV_2D on float32: TFLM's ``reference_ops::Conv`` (float), grouped when the filter's
    input depth divides the input's."""
    raw(a.out)[...] = conv.conv_2d_f32(
        raw(a.input), raw(a.filter), _bias(a), tuple(a.out.sizes),
        stride=tuple(a.stride), padding=tuple(a.padding), dilation=tuple(a.dilation), activation=_activation(a),
    )  # fmt: skip


@conv_2d_f32.validator
def _validate_conv(a: Args) -> None:
    _check_f32(a, "input", "filter", "bias", "out")
    _check_pair(a, "dilation")
    w = a.filter.sizes
    if len(w) != 4:
        raise a.error("filter", "4-D [out_channels, kh, kw, in_channels / groups]", list(w))
    _check_window(a, (w[1], w[2]), tuple(a.dilation))
    cin = a.input.sizes[3]
    if w[3] < 1 or cin % w[3] or w[0] % (cin // w[3]):
        raise a.error(
            "filter", f"an input depth dividing {cin} and output channels divisible by the groups", list(w)
        )
    if a.out.sizes[3] != w[0]:
        raise a.error("out", f"{w[0]} channels like filter", a.out.sizes[3])
    _check_bias(a, w[0])


@conv_2d_f32.mac_count
def _conv_macs(a: Args) -> int:
    return math.prod(a.out.sizes) * math.prod(a.filter.sizes[1:])


@_tflm(
    "tflm::depthwise_conv_2d_f32(Tensor input, Tensor filter, Tensor? bias, int[] stride, int[] padding, "
    "int[] padding_offsets, int[] dilation, int depth_multiplier, float activation_min, "
    "float activation_max, *, Tensor(a!) out) -> Tensor(a!)"
)
def depthwise_conv_2d_f32(a: Args) -> None:
    """DEPTHWISE_CONV_2D on float32: TFLM's ``reference_ops::DepthwiseConv`` (float)."""
    raw(a.out)[...] = conv.depthwise_conv_2d_f32(
        raw(a.input), raw(a.filter), _bias(a), tuple(a.out.sizes), depth_multiplier=a.depth_multiplier,
        stride=tuple(a.stride), padding=tuple(a.padding), dilation=tuple(a.dilation), activation=_activation(a),
    )  # fmt: skip


@depthwise_conv_2d_f32.validator
def _validate_depthwise(a: Args) -> None:
    _check_f32(a, "input", "filter", "bias", "out")
    _check_pair(a, "dilation")
    w = a.filter.sizes
    if len(w) != 4 or w[0] != 1:
        raise a.error("filter", "4-D [1, kh, kw, channels]", list(w))
    _check_window(a, (w[1], w[2]), tuple(a.dilation))
    channels = a.input.sizes[3] * a.depth_multiplier
    if a.depth_multiplier < 1 or w[3] != channels or a.out.sizes[3] != channels:
        raise a.error(
            "depth_multiplier", f"input channels x multiplier = filter and output channels ({w[3]}, {a.out.sizes[3]})",
            a.depth_multiplier,
        )  # fmt: skip
    _check_bias(a, channels)


@depthwise_conv_2d_f32.mac_count
def _depthwise_macs(a: Args) -> int:
    return math.prod(a.out.sizes) * a.filter.sizes[1] * a.filter.sizes[2]


@_tflm(
    "tflm::fully_connected_f32(Tensor input, Tensor filter, Tensor? bias, float activation_min, "
    "float activation_max, *, Tensor(a!) out) -> Tensor(a!)"
)
def fully_connected_f32(a: Args) -> None:
    """FULLY_CONNECTED on float32: TFLM's ``reference_ops::FullyConnected`` (float); the input is
    read flat, ``batches`` = the output's size over its last dimension."""
    out = raw(a.out)
    batches = out.size // out.shape[-1]
    y = fully_connected.fully_connected_f32(
        raw(a.input), raw(a.filter), _bias(a), batches, activation=_activation(a)
    )
    out[...] = y.reshape(out.shape)


@fully_connected_f32.validator
def _validate_fully_connected(a: Args) -> None:
    _check_f32(a, "input", "filter", "bias", "out")
    w, o = a.filter.sizes, a.out.sizes
    if len(w) != 2:
        raise a.error("filter", "2-D [output_depth, accum_depth]", list(w))
    if len(o) < 1 or o[-1] != w[0]:
        raise a.error("out", f"last dimension {w[0]} (the filter's output depth)", list(o))
    batches = math.prod(o) // w[0] if w[0] else 0
    if math.prod(a.input.sizes) != batches * w[1]:
        raise a.error("input", f"{batches} x {w[1]} values (batches x accum_depth)", list(a.input.sizes))
    _check_bias(a, w[0])
    _check_activation(a)


@fully_connected_f32.mac_count
def _fully_connected_macs(a: Args) -> int:
    return math.prod(a.out.sizes) * a.filter.sizes[1]


# --- pooling ---------------------------------------------------------------------------------------

_POOL = (
    "tflm::{}(Tensor input, int[] filter, int[] stride, int[] padding, int[] padding_offsets, "
    "float activation_min, float activation_max, *, Tensor(a!) out) -> Tensor(a!)"
)


def _validate_pool(a: Args) -> None:
    _check_f32(a, "input", "out")
    _check_pair(a, "filter")
    _check_window(a, tuple(a.filter), (1, 1))
    if a.out.sizes[3] != a.input.sizes[3]:
        raise a.error("out", f"{a.input.sizes[3]} channels like input", a.out.sizes[3])
    # TFLM's AveragePool returns false mid-loop on a window with no tap; refuse such a call.
    for axis in (0, 1):
        size, out, f, s, p = (
            a.input.sizes[1 + axis],
            a.out.sizes[1 + axis],
            a.filter[axis],
            a.stride[axis],
            a.padding[axis],
        )
        for o in (0, out - 1):
            origin = o * s - p
            if min(f, size - origin) <= max(0, -origin):
                raise a.error(
                    "out",
                    f"windows that overlap the input (output {o} along axis {1 + axis} does not)",
                    list(a.out.sizes),
                )


def _pool_kwargs(a: Args) -> dict:
    return dict(
        filter_hw=tuple(a.filter), stride=tuple(a.stride), padding=tuple(a.padding), activation=_activation(a)
    )


@_tflm(_POOL.format("average_pool_2d_f32"))
def average_pool_2d_f32(a: Args) -> None:
    """AVERAGE_POOL_2D on float32: TFLM's ``reference_ops::AveragePool`` (float)."""
    raw(a.out)[...] = pooling.average_pool_2d_f32(raw(a.input), tuple(a.out.sizes), **_pool_kwargs(a))


@_tflm(_POOL.format("max_pool_2d_f32"))
def max_pool_2d_f32(a: Args) -> None:
    """MAX_POOL_2D on float32: TFLM's ``reference_ops::MaxPool`` (float)."""
    raw(a.out)[...] = pooling.max_pool_2d_f32(raw(a.input), tuple(a.out.sizes), **_pool_kwargs(a))


average_pool_2d_f32.validator(_validate_pool)
max_pool_2d_f32.validator(_validate_pool)


# --- elementwise -----------------------------------------------------------------------------------

_BINARY = (
    "tflm::{}(Tensor input1, Tensor input2, float activation_min, float activation_max, *, "
    "Tensor(a!) out) -> Tensor(a!)"
)


def _validate_binary(a: Args) -> None:
    _check_f32(a, "input1", "input2", "out")
    _check_activation(a)
    try:
        shape = tuple(np.broadcast_shapes(tuple(a.input1.sizes), tuple(a.input2.sizes)))
    except ValueError:
        raise a.error(
            "input2", f"broadcastable with input1 {list(a.input1.sizes)}", list(a.input2.sizes)
        ) from None
    if shape != tuple(a.out.sizes):
        raise a.error("out", f"the broadcast shape {list(shape)}", list(a.out.sizes))
    if len(shape) > 6:
        raise a.error("out", "at most 6 dimensions (BroadcastAdd6DSlow / BroadcastMul6DSlow)", list(shape))


@_tflm(_BINARY.format("add_f32"))
def add_f32(a: Args) -> None:
    """ADD on float32: ``clamp(a + b)``, broadcast (``reference_ops::Add``/``BroadcastAdd6DSlow``)."""
    raw(a.out)[...] = elementwise.add_f32(
        raw(a.input1), raw(a.input2), tuple(a.out.sizes), activation=_activation(a)
    )


@_tflm(_BINARY.format("mul_f32"))
def mul_f32(a: Args) -> None:
    """MUL on float32: ``clamp(a * b)``, broadcast (``reference_ops::Mul``/``BroadcastMul6DSlow``)."""
    raw(a.out)[...] = elementwise.mul_f32(
        raw(a.input1), raw(a.input2), tuple(a.out.sizes), activation=_activation(a)
    )


add_f32.validator(_validate_binary)
mul_f32.validator(_validate_binary)


# --- activations -----------------------------------------------------------------------------------

_UNARY = "tflm::{}(Tensor input, *, Tensor(a!) out) -> Tensor(a!)"


def _unary(name: str, fn: Callable[[np.ndarray], np.ndarray], doc: str) -> OpDef:
    def run(a: Args) -> None:
        raw(a.out)[...] = fn(raw(a.input))

    run.__doc__ = doc
    op = _tflm(_UNARY.format(name))(run)
    op.in_place_safe = True

    @op.validator
    def _(a: Args) -> None:
        _check_f32(a, "input", "out")
        if tuple(a.out.sizes) != tuple(a.input.sizes):
            raise a.error("out", f"sizes {list(a.input.sizes)} like input", list(a.out.sizes))

    return op


relu_f32 = _unary(
    "relu_f32", activations.relu_f32, "RELU on float32: ``x < 0 ? 0 : x`` (TFLM's ``ReluFloat``)."
)
relu6_f32 = _unary(
    "relu6_f32",
    activations.relu6_f32,
    "RELU6 on float32: ``x > 6 ? 6 : x < 0 ? 0 : x`` (TFLM's ``Relu6Float``).",
)
logistic_f32 = _unary(
    "logistic_f32",
    activations.logistic_f32,
    "LOGISTIC on float32: TFLM's ``reference_ops::Logistic`` (cut-offs, ``1 / (1 + expf(-x))``).",
)
tanh_f32 = _unary(
    "tanh_f32", activations.tanh_f32, "TANH on float32: ``tanhf`` (TFLM's ``reference_ops::Tanh``)."
)
hard_swish_f32 = _unary(
    "hard_swish_f32",
    activations.hard_swish_f32,
    "HARD_SWISH on float32: ``x * min(6, max(0, x + 3)) / 6`` (TFLM's ``reference_ops::HardSwish``).",
)


# --- softmax, mean -----------------------------------------------------------------------------------


@_tflm("tflm::softmax_f32(Tensor input, float beta, *, Tensor(a!) out) -> Tensor(a!)")
def softmax_f32(a: Args) -> None:
    """SOFTMAX on float32 over the last dimension: TFLM's ``reference_ops::Softmax`` (float)."""
    raw(a.out)[...] = softmax.softmax_f32(raw(a.input), beta=a.beta)


@softmax_f32.validator
def _validate_softmax(a: Args) -> None:
    _check_f32(a, "input", "out")
    if len(a.input.sizes) < 1 or math.prod(a.input.sizes) == 0:
        raise a.error("input", "a non-empty tensor of rank >= 1", list(a.input.sizes))
    if tuple(a.out.sizes) != tuple(a.input.sizes):
        raise a.error("out", f"sizes {list(a.input.sizes)} like input", list(a.out.sizes))


@_tflm("tflm::mean_f32(Tensor input, int[] axis, *, Tensor(a!) out) -> Tensor(a!)")
def mean_f32(a: Args) -> None:
    """MEAN on float32 over ``axis`` (resolved: non-negative, unique): a sum from ``0.f`` in
    row-major order of the reduced indices, then one division (TFLM's ``reference_ops::Mean``)."""
    raw(a.out)[...] = reduce.mean_f32(raw(a.input), tuple(a.axis)).reshape(a.out.sizes)


@mean_f32.validator
def _validate_mean(a: Args) -> None:
    _check_f32(a, "input", "out")
    rank = len(a.input.sizes)
    if len(set(a.axis)) != len(a.axis) or any(not 0 <= x < rank for x in a.axis):
        raise a.error("axis", f"distinct axes in [0, {rank})", list(a.axis))
    kept = math.prod(s for d, s in enumerate(a.input.sizes) if d not in a.axis)
    if math.prod(a.out.sizes) != kept:
        raise a.error("out", f"{kept} elements (the kept dimensions)", list(a.out.sizes))


# --- data movement -----------------------------------------------------------------------------------


@_tflm(
    "tflm::pad_f32(Tensor input, int[] paddings, Tensor? constant_values, *, Tensor(a!) out) -> Tensor(a!)"
)
def pad_f32(a: Args) -> None:
    """PAD/PADV2 on float32: ``paddings`` flat (before, after) per dimension; the pad value is
    ``constant_values``' one element, ``0.f`` without it (TFLM's ``reference_ops::Pad``)."""
    value = 0.0 if a.constant_values is None else raw(a.constant_values).reshape(-1)[0]
    raw(a.out)[...] = movement.pad_f32(raw(a.input), np.asarray(a.paddings), value)


@pad_f32.validator
def _validate_pad(a: Args) -> None:
    _check_f32(a, "input", "constant_values", "out")
    x = a.input.sizes
    p = list(a.paddings)
    if len(p) != 2 * len(x) or min(p, default=0) < 0:
        raise a.error("paddings", f"{len(x)} non-negative (before, after) pairs", p)
    expected = [d + p[2 * i] + p[2 * i + 1] for i, d in enumerate(x)]
    if list(a.out.sizes) != expected:
        raise a.error("out", f"sizes {expected}", list(a.out.sizes))
    if a.constant_values is not None and math.prod(a.constant_values.sizes) != 1:
        raise a.error("constant_values", "one element", list(a.constant_values.sizes))


@_tflm("tflm::transpose_f32(Tensor input, int[] perm, *, Tensor(a!) out) -> Tensor(a!)")
def transpose_f32(a: Args) -> None:
    """TRANSPOSE on float32: output dimension ``i`` is input dimension ``perm[i]``."""
    raw(a.out)[...] = movement.transpose_f32(raw(a.input), tuple(a.perm))


@transpose_f32.validator
def _validate_transpose(a: Args) -> None:
    _check_f32(a, "input", "out")
    x = a.input.sizes
    if sorted(a.perm) != list(range(len(x))):
        raise a.error("perm", f"a permutation of {list(range(len(x)))}", list(a.perm))
    expected = [x[p] for p in a.perm]
    if list(a.out.sizes) != expected:
        raise a.error("out", f"sizes {expected}", list(a.out.sizes))


@_tflm("tflm::concatenation_f32(Tensor[] inputs, int axis, *, Tensor(a!) out) -> Tensor(a!)")
def concatenation_f32(a: Args) -> None:
    """CONCATENATION on float32: the inputs joined along ``axis`` (non-negative), in order."""
    raw(a.out)[...] = movement.concatenation_f32([raw(t) for t in a.inputs], a.axis)


@concatenation_f32.validator
def _validate_concatenation(a: Args) -> None:
    _check_f32(a, "out")
    shapes = [tuple(t.sizes) for t in a.inputs]
    for k, t in enumerate(a.inputs):
        if t.scalar_type != FLOAT32:
            raise a.error(f"inputs[{k}]", "a float32 tensor", t.scalar_type.name.lower())
    rank = len(a.out.sizes)
    if not shapes or not 0 <= a.axis < rank:
        raise a.error("axis", f"in [0, {rank}) with at least one input", a.axis)
    for k, s in enumerate(shapes):
        if len(s) != rank or any(s[d] != a.out.sizes[d] for d in range(rank) if d != a.axis):
            raise a.error(f"inputs[{k}]", f"sizes {list(a.out.sizes)} except along axis {a.axis}", list(s))
    total = sum(s[a.axis] for s in shapes)
    if total != a.out.sizes[a.axis]:
        raise a.error("out", f"{total} along axis {a.axis}", list(a.out.sizes))


@_tflm(
    "tflm::strided_slice_f32(Tensor input, int[] begin, int[] end, int[] strides, int begin_mask, "
    "int end_mask, int shrink_axis_mask, *, Tensor(a!) out) -> Tensor(a!)"
)
def strided_slice_f32(a: Args) -> None:
    """STRIDED_SLICE on float32, with the start/stop of TFLM's ``StridedSliceStartForAxis`` /
    ``StridedSliceEndForAxis`` (ellipsis and new-axis masks are not part of TFLM's kernel)."""
    raw(a.out)[...] = movement.strided_slice_f32(raw(a.input), _slice_bounds(a), tuple(a.out.sizes))


def _slice_bounds(a: Args) -> list[tuple[int, int, int]]:
    return movement.strided_slice_bounds(
        tuple(a.input.sizes), tuple(a.begin), tuple(a.end), tuple(a.strides),
        begin_mask=a.begin_mask, end_mask=a.end_mask, shrink_axis_mask=a.shrink_axis_mask,
    )  # fmt: skip


@strided_slice_f32.validator
def _validate_strided_slice(a: Args) -> None:
    _check_f32(a, "input", "out")
    rank = len(a.input.sizes)
    for name in ("begin", "end", "strides"):
        if len(getattr(a, name)) != rank:
            raise a.error(name, f"{rank} values (one per input dimension)", list(getattr(a, name)))
    if 0 in a.strides:
        raise a.error("strides", "non-zero", list(a.strides))
    kept = [
        len(range(start, stop, stride))
        for axis, (start, stop, stride) in enumerate(_slice_bounds(a))
        if not a.shrink_axis_mask & (1 << axis)
    ]
    if list(a.out.sizes) != kept:
        raise a.error("out", f"sizes {kept}", list(a.out.sizes))


# --- cost: TFLM's float kernels are not calibrated yet --------------------------------------------


def _not_calibrated(a: Args, tier: str) -> list:
    """No estimate, with the reason: TFLM's float32 reference kernels have no measured cost
    (issue 15 item 5 measured TFLM's int8 path); the estimate's total says it is a lower bound."""
    from isa_models.cortex_m.program import NoEstimate  # the cost model only when a cost is asked for

    return [NoEstimate("TFLM's float32 reference kernels are not calibrated")]


def _attach_costs() -> None:
    from refsim.ops.registry import _REGISTRY

    for name, op in _REGISTRY.items():
        if name.startswith("tflm::") and name.endswith("_f32") and op.cost is None:
            op.cost = _not_calibrated


_attach_costs()

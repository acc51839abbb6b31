"""tflm:: ops: the builtins TFLM runs with its own reference kernels rather than CMSIS-NN.

Each op is one TFLite builtin as TFLM 90b983c2 runs it (``tensorflow/lite/micro/kernels/<op>.cc``
and the ``reference_ops`` template it calls; kernels_py/tflm cites each): the tensors, their
quantization as plain scalars (float32 scales, int32 zero points, as the .tflite holds them) and
the builtin options. The validator runs the kernel's Prepare once at load — the same parameter
arithmetic, in float or double as TFLM does it — and keeps the result in ``a.state`` (a
256-byte table for the element-wise int8 ops, the multiplier and shift for MEAN, the loops for
STRIDED_SLICE); ``run`` is then one numpy expression. What TFLM's Prepare refuses, and what its
arithmetic leaves undefined (a shift of 31 or more, a float outside int32 converted to int), is
an `OpError` at load naming the argument.

Where TFLM computes something other than the builtin's definition, refsim computes what TFLM
computes and records a `Divergence` (kind ``ignored_argument``): RELU6 never requantizes to the
output's scale and zero point; LOGISTIC and TANH write as if the output were 1/256, -128 and
1/128, 0; STRIDED_SLICE ignores ``ellipsis_mask``, ``new_axis_mask`` and ``offset``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from kernels_py.tflm import activations as act
from kernels_py.tflm import quantize as qz
from kernels_py.tflm import reduce as rd
from kernels_py.tflm import slicing as sl
from refsim.ops.cortex_m_elementwise import flat, require_dtype
from refsim.ops.divergence import Divergence
from refsim.ops.registry import Args, register
from refsim.pte.model import ScalarType

INT8_MIN, INT8_MAX = -128, 127
_Q = "float input_scale, int input_zero_point, float output_scale, int output_zero_point"


# --- argument checks -------------------------------------------------------------------------------


def _scale(a: Args, name: str) -> float:
    value = getattr(a, name)
    f32 = float(np.float32(value)) if math.isfinite(value) else value
    if not (math.isfinite(f32) and f32 > 0):
        raise a.error(name, "a finite float32 > 0", value)
    return f32


def _zero_point(a: Args, name: str) -> int:
    value = getattr(a, name)
    if not INT8_MIN <= value <= INT8_MAX:
        raise a.error(name, f"in [{INT8_MIN}, {INT8_MAX}] (an int8 zero point)", value)
    return int(value)


def _same_numel(a: Args, src: str = "input", dst: str = "out") -> None:
    x, y = getattr(a, src), getattr(a, dst)
    if x.meta.numel != y.meta.numel:
        raise a.error(dst, f"{x.meta.numel} elements like {src} (MatchingFlatSize)", f"sizes {list(y.sizes)}")


def _shift(a: Args, what: str, shift: int) -> None:
    """TFLM's ``MultiplyByQuantizedMultiplier`` computes ``x * (1 << shift)``: undefined from 31."""
    if shift > 30:
        raise a.error(
            what,
            "a real multiplier below 2^30 (TFLM's 1 << shift is undefined for shift >= 31)",
            f"shift {shift}",
        )


def _prepare(a: Args, fn: Callable, *args):
    """Run a kernels_py.tflm Prepare function; its ValueError becomes an `OpError`."""
    try:
        return fn(*args)
    except ValueError as exc:
        raise a.error("quantization", "what TFLM's Prepare accepts", exc) from None


def _ignored(a: Args, arguments: tuple[str, ...], reason: str) -> None:
    a.divergences.append(Divergence(a.op, a.instruction, "ignored_argument", arguments, reason))


def _run_table(a: Args) -> None:
    flat(a.out)[...] = qz.lookup(a.state, flat(a.input))


def _int8_pair(a: Args) -> tuple[float, int, float, int]:
    """int8 ``input``/``out`` of as many elements, and their quantization."""
    _same_numel(a)
    return _int8_quantization(a)


def _int8_quantization(a: Args) -> tuple[float, int, float, int]:
    require_dtype(a, ("input", "out"), (ScalarType.INT8,))
    return (
        _scale(a, "input_scale"),
        _zero_point(a, "input_zero_point"),
        _scale(a, "output_scale"),
        _zero_point(a, "output_zero_point"),
    )


# --- QUANTIZE / DEQUANTIZE ---------------------------------------------------------------------------


@register(f"tflm::quantize({'Tensor input, ' + _Q}, *, Tensor(a!) out) -> Tensor(a!)", in_place_safe=True)
def quantize(a: Args) -> None:
    """TFLM's reference QUANTIZE (``micro/kernels/quantize_common.cc``): float32 -> int8 by
    ``reference_ops::AffineQuantize`` (``roundf(x / scale) + zero_point``, clamped; the input
    quantization is unused), or int8 -> int8 by ``reference_ops::Requantize`` with the multiplier
    of ``(double)in_scale / (double)out_scale``."""
    if isinstance(a.state, np.ndarray):
        _run_table(a)
    else:
        scale, zero_point = a.state
        flat(a.out)[...] = qz.quantize_float(flat(a.input), scale, zero_point)


@quantize.validator
def _validate_quantize(a: Args) -> None:
    require_dtype(a, ("input",), (ScalarType.FLOAT32, ScalarType.INT8))
    require_dtype(a, ("out",), (ScalarType.INT8,))
    _same_numel(a)
    out_scale, out_zp = _scale(a, "output_scale"), _zero_point(a, "output_zero_point")
    if a.input.scalar_type == ScalarType.FLOAT32:
        a.state = (out_scale, out_zp)
        return
    in_scale, in_zp = _scale(a, "input_scale"), _zero_point(a, "input_zero_point")
    m, s = _prepare(a, qz.requantize_params, in_scale, out_scale)
    _shift(a, "input_scale/output_scale", s)
    a.state = qz.requantize_table(m, s, in_zp, out_zp)


@register(
    "tflm::dequantize(Tensor input, float input_scale, int input_zero_point, *, Tensor(a!) out) -> Tensor(a!)"
)
def dequantize(a: Args) -> None:
    """TFLM's reference DEQUANTIZE (``micro/kernels/dequantize.cc``, ``reference_ops::Dequantize``):
    ``(float)((double)scale * (q - zero_point))``, int8 -> float32."""
    scale, zero_point = a.state
    flat(a.out)[...] = qz.dequantize(flat(a.input), scale, zero_point)


@dequantize.validator
def _validate_dequantize(a: Args) -> None:
    require_dtype(a, ("input",), (ScalarType.INT8,))
    require_dtype(a, ("out",), (ScalarType.FLOAT32,))
    _same_numel(a)
    a.state = (_scale(a, "input_scale"), _zero_point(a, "input_zero_point"))


# --- activations --------------------------------------------------------------------------------------


@register(f"tflm::relu(Tensor input, {_Q}, *, Tensor(a!) out) -> Tensor(a!)", in_place_safe=True)
def relu(a: Args) -> None:
    """TFLM's reference RELU, int8 (``micro/kernels/activations.cc``, ``ReluQuantized``):
    requantize by ``(double)(float)(in_scale / out_scale)``, clamp to ``[max(-128, out_zp), 127]``."""
    _run_table(a)


@relu.validator
def _validate_relu(a: Args) -> None:
    p = _prepare(a, act.relu_params, *_int8_pair(a))
    _shift(a, "input_scale/output_scale", p.output_shift)
    a.state = act.relu_table(p)


@register(f"tflm::relu6(Tensor input, {_Q}, *, Tensor(a!) out) -> Tensor(a!)", in_place_safe=True)
def relu6(a: Args) -> None:
    """TFLM's reference RELU6, int8 (``micro/kernels/activations.cc``, ``Relu6Quantized``): the
    input bytes clamped to ``[in_zp, round(6 / in_scale) + in_zp]``; the output quantization is
    not applied."""
    _run_table(a)


@relu6.validator
def _validate_relu6(a: Args) -> None:
    in_scale, in_zp, out_scale, out_zp = _int8_pair(a)
    zero, six = act.relu6_bounds(in_scale, in_zp)
    if (in_scale, in_zp) != (out_scale, out_zp):
        _ignored(
            a,
            ("output_scale", "output_zero_point"),
            "TFLM's RELU6 clamps the input bytes and never requantizes to the output's quantization",
        )
    a.state = act.relu6_table(zero, six)


@register(f"tflm::logistic(Tensor input, {_Q}, *, Tensor(a!) out) -> Tensor(a!)", in_place_safe=True)
def logistic(a: Args) -> None:
    """TFLM's reference LOGISTIC, int8 (``micro/kernels/logistic.cc``,
    ``reference_integer_ops::Logistic``): gemmlowp's fixed-point logistic on Q4.27, written as
    scale 1/256, zero point -128 (Prepare requires that zero point)."""
    _run_table(a)


@logistic.validator
def _validate_logistic(a: Args) -> None:
    in_scale, in_zp, out_scale, out_zp = _int8_pair(a)
    if out_zp != INT8_MIN:
        raise a.error("output_zero_point", "-128 (TFLM's LOGISTIC Prepare requires it)", out_zp)
    if out_scale != 1 / 256:
        _ignored(a, ("output_scale",), "TFLM's LOGISTIC writes scale 1/256 whatever the output scale says")
    a.state = act.logistic_table(_prepare(a, act.sigmoid_params, in_scale, in_zp))


@register(f"tflm::tanh(Tensor input, {_Q}, *, Tensor(a!) out) -> Tensor(a!)", in_place_safe=True)
def tanh(a: Args) -> None:
    """TFLM's reference TANH, int8 (``micro/kernels/tanh.cc``, ``reference_integer_ops::Tanh``):
    gemmlowp's fixed-point tanh on Q4.27, written as scale 1/128, zero point 0."""
    _run_table(a)


@tanh.validator
def _validate_tanh(a: Args) -> None:
    in_scale, in_zp, out_scale, out_zp = _int8_pair(a)
    if (out_scale, out_zp) != (1 / 128, 0):
        _ignored(
            a,
            ("output_scale", "output_zero_point"),
            "TFLM's TANH writes scale 1/128, zero point 0 whatever the output quantization says",
        )
    a.state = act.tanh_table(_prepare(a, act.sigmoid_params, in_scale, in_zp))


@register(f"tflm::hard_swish(Tensor input, {_Q}, *, Tensor(a!) out) -> Tensor(a!)", in_place_safe=True)
def hard_swish(a: Args) -> None:
    """TFLM's reference HARD_SWISH, int8 (``micro/kernels/hard_swish.cc``,
    ``reference_ops::HardSwish<int8_t>``): int16 fixed point with the Prepare-time multipliers of
    ``in_scale / 128`` over the output scale and over 3/32768 (float32 arithmetic)."""
    _run_table(a)


@hard_swish.validator
def _validate_hard_swish(a: Args) -> None:
    a.state = act.hard_swish_table(_prepare(a, act.hard_swish_params, *_int8_pair(a)))


# --- MEAN ----------------------------------------------------------------------------------------------


@register(
    f"tflm::mean(Tensor input, int[] axis, bool keep_dims, {_Q}, *, Tensor(a!) out) -> Tensor(a!)",
)
def mean(a: Args) -> None:
    """TFLM's reference MEAN, int8 (``micro/kernels/reduce_common.cc``,
    ``reference_ops::QuantizedMeanOrSum``): an int32 sum over the axes, requantized by
    ``in_scale / out_scale`` with ``1/n`` folded into the multiplier."""
    axes, in_zp, out_zp, m, s = a.state
    flat(a.out)[...] = rd.mean_int8(a.input.storage.reshape(a.input.sizes), axes, in_zp, out_zp, m, s)


@mean.validator
def _validate_mean(a: Args) -> None:
    in_scale, in_zp, out_scale, out_zp = _int8_quantization(a)
    rank = len(a.input.sizes)
    try:
        axes = rd.resolve_axis(rank, tuple(a.axis))
    except ValueError as exc:
        raise a.error("axis", f"axes in [-{rank}, {rank})", exc) from None
    expected = rd.mean_shape(a.input.sizes, axes, bool(a.keep_dims))
    if int(np.prod(expected)) != a.out.meta.numel:
        raise a.error("out", f"{int(np.prod(expected))} elements (sizes {list(expected)})", list(a.out.sizes))
    m, s = _prepare(a, rd.mean_params, in_scale, out_scale)
    n = int(np.prod([a.input.sizes[d] for d in axes]))
    if a.input.meta.numel:
        _shift(a, "input_scale/output_scale", rd.mean_output_params(m, s, n)[1])
    a.state = (axes, in_zp, out_zp, m, s)


# --- STRIDED_SLICE / SQUEEZE / CONCATENATION -------------------------------------------------------------

_COPY_TYPES = (ScalarType.FLOAT32, ScalarType.INT8, ScalarType.INT16, ScalarType.INT32, ScalarType.BOOL)


@register(
    "tflm::strided_slice(Tensor input, int[] begin, int[] end, int[] strides, int begin_mask, int end_mask, "
    "int ellipsis_mask, int new_axis_mask, int shrink_axis_mask, bool offset, *, Tensor(a!) out) -> Tensor(a!)"
)
def strided_slice(a: Args) -> None:
    """TFLM's reference STRIDED_SLICE (``micro/kernels/strided_slice.cc``,
    ``reference_ops::StridedSlice``): five nested loops over the 5-D padded input, begin, end and
    strides constant; ``ellipsis_mask``, ``new_axis_mask`` and ``offset`` are ignored as TFLM
    ignores them."""
    flat(a.out)[...] = a.input.storage.reshape(a.input.sizes)[a.state].reshape(-1)


@strided_slice.validator
def _validate_strided_slice(a: Args) -> None:
    require_dtype(a, ("input",), _COPY_TYPES)
    if a.out.scalar_type != a.input.scalar_type:
        raise a.error("out", a.input.scalar_type.name.lower(), a.out.scalar_type.name.lower())
    shape = tuple(a.input.sizes)
    rank = len(shape)
    if not 1 <= rank <= 4:
        raise a.error("input", "1- to 4-D (TFLM: input dim should not exceed 4)", list(shape))
    for name in ("begin", "end", "strides"):
        if len(getattr(a, name)) != rank:
            raise a.error(name, f"{rank} values (one per input dim)", list(getattr(a, name)))
    p = sl.StridedSliceParams(
        tuple(a.begin), tuple(a.end), tuple(a.strides), a.begin_mask, a.end_mask, a.shrink_axis_mask
    )
    try:
        out_shape = sl.strided_slice_output_shape(p, shape)
    except ValueError as exc:
        raise a.error("strides", "non-zero", exc) from None
    if tuple(a.out.sizes) != out_shape:
        raise a.error("out", f"sizes {list(out_shape)} (TFLM's CheckOutputSize)", list(a.out.sizes))
    loops = sl.strided_slice_ranges(p, shape)[5 - rank :]
    written = math.prod(len(r) for r in loops)
    if written != a.out.meta.numel or written == 0:
        raise a.error(
            "begin/shrink_axis_mask",
            f"a slice TFLM writes whole ({a.out.meta.numel} output elements)",
            f"{written} written (a shrunk axis with a negative stride or a begin out of range writes nothing)",
        )
    ignored = [n for n in ("ellipsis_mask", "new_axis_mask", "offset") if getattr(a, n)]
    if ignored:
        _ignored(a, tuple(ignored), f"TFLM's STRIDED_SLICE ignores {', '.join(ignored)}")
    a.state = np.ix_(*[np.asarray(r, np.intp) for r in loops])


@register(
    "tflm::squeeze(Tensor input, int[] squeeze_dims, *, Tensor(a!) out) -> Tensor(a!)", in_place_safe=True
)
def squeeze(a: Args) -> None:
    """TFLM's SQUEEZE (``micro/kernels/squeeze.cc``): a ``memcpy`` of the input's bytes."""
    flat(a.out)[...] = flat(a.input)


@squeeze.validator
def _validate_squeeze(a: Args) -> None:
    if a.out.scalar_type != a.input.scalar_type:
        raise a.error("out", a.input.scalar_type.name.lower(), a.out.scalar_type.name.lower())
    try:
        expected = sl.squeeze_shape(a.input.sizes, tuple(a.squeeze_dims))
    except ValueError as exc:
        raise a.error("squeeze_dims", "dims of size 1 of the input", exc) from None
    if tuple(a.out.sizes) != expected:
        raise a.error("out", f"sizes {list(expected)}", list(a.out.sizes))


@register("tflm::concatenation(Tensor[] inputs, int axis, *, Tensor(a!) out) -> Tensor(a!)")
def concatenation(a: Args) -> None:
    """TFLM's reference CONCATENATION (``micro/kernels/concatenation.cc``,
    ``reference_ops::Concatenation``): each input's block per outer index, a byte copy (int8
    inputs share the output's quantization: Prepare requires it)."""
    parts = [t.storage.reshape(t.sizes) for t in a.inputs]
    a.out.storage.reshape(a.out.sizes)[...] = sl.concatenation(parts, a.state)


@concatenation.validator
def _validate_concatenation(a: Args) -> None:
    inputs = tuple(a.inputs)
    if not 1 <= len(inputs) <= 10:
        raise a.error("inputs", "1 to 10 tensors (TFLM's kMaxInputNum)", len(inputs))
    kind = a.out.scalar_type
    if kind not in (*_COPY_TYPES, ScalarType.INT64):
        raise a.error("out", "float32, int8, int16, int32, int64 or bool", kind.name.lower())
    rank = len(a.out.sizes)
    axis = a.axis + rank if a.axis < 0 else a.axis
    if not 0 <= axis < rank:
        raise a.error("axis", f"in [-{rank}, {rank})", a.axis)
    total = 0
    for k, t in enumerate(inputs):
        if t.scalar_type != kind:
            raise a.error(f"inputs[{k}]", kind.name.lower(), t.scalar_type.name.lower())
        if len(t.sizes) != rank or any(t.sizes[d] != a.out.sizes[d] for d in range(rank) if d != axis):
            raise a.error(
                f"inputs[{k}]", f"the output's sizes {list(a.out.sizes)} off axis {axis}", list(t.sizes)
            )
        total += t.sizes[axis]
    if total != a.out.sizes[axis]:
        raise a.error("out", f"size {total} on axis {axis} (the inputs' sum)", a.out.sizes[axis])
    a.state = axis


# --- cost hooks ---------------------------------------------------------------------------------------
# The byte moves are priced as copies; TFLM's integer and float reference loops have no
# calibration yet (measuring TFLM's reference kernels per core under QEMU is issue 15 item 5), so
# they say so rather than guess.


def _no_estimate(a: Args, tier: str) -> list:
    from isa_models.cortex_m.program import NoEstimate

    return [NoEstimate(f"{a.op}: TFLM's reference kernel is not calibrated yet (issue 15, item 5)")]


def _copy_cost(a: Args, tier: str) -> list:
    from isa_models.cortex_m.program import CopyWork

    return [CopyWork(int(a.out.meta.nbytes))]


def _concatenation_cost(a: Args, tier: str) -> list:
    from isa_models.cortex_m.program import CopyWork

    outer = math.prod(a.out.sizes[: a.state]) if a.state is not None else 1
    return [CopyWork(int(a.out.meta.nbytes), runs=max(1, outer * len(a.inputs)))]


def _strided_slice_cost(a: Args, tier: str) -> list:
    from isa_models.cortex_m.program import CopyWork

    numel = int(a.out.meta.numel)
    inner = len(a.state[-1].reshape(-1)) if a.state is not None and a.strides[-1] == 1 else 1
    return [CopyWork(int(a.out.meta.nbytes), runs=max(1, numel // max(inner, 1)))]


for _op in (quantize, dequantize, relu, relu6, logistic, tanh, hard_swish, mean):
    _op.cost = _no_estimate
squeeze.cost = _copy_cost
concatenation.cost = _concatenation_cost
strided_slice.cost = _strided_slice_cost

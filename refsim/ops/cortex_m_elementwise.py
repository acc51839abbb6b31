"""cortex_m elementwise ops: add (and sub), mul, div, maximum, minimum, the LUT activation.

Each op is what ExecuTorch 1.5.1's ``backends/cortex_m/ops/op_*.cpp`` does with the tensors
it is handed: it passes raw data pointers, and dims filled from the logical ``sizes``, to a
CMSIS-NN function (or, for div and the LUT, runs its own loop over ``numel`` bytes). The
golden result is that function applied to the bytes, which is the PyTorch op whenever the
tensors are laid out the way the kernel assumes.

Two rules for the validators (run once at load):

* What the device cannot run is an `OpError`: sizes the op does not imply (ExecuTorch's
  ``ET_CHECK``/``context.fail``), parameters outside CMSIS-NN's ranges, and shapes for which
  CMSIS-NN would read or write outside its buffers.
* A dim order the kernel ignores is emulated byte for byte, because that is what the device
  computes, and reported with a `LayoutWarning` saying how the result differs from the op.
  ExecuTorch 1.5.1 really emits such programs: ``cortex_m::maximum``/``minimum`` outputs are
  planned contiguous (their fake kernel returns ``torch.empty(broadcast_shape)``) while their
  channels-last inputs are combined byte by byte, so the output holds NHWC bytes under an NCHW
  dim order.

The layout helpers at the top are shared with ``cortex_m_misc`` and ``portable``: a tensor's
*effective order* is its dim order without the dims of size 1, so two tensors whose
effective orders agree keep the same elements at the same byte offsets.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np

from kernels_py import activation, elementwise
from kernels_py.elementwise import cmsis_minmax_broadcast_is_exact
from kernels_py.fixedpoint import ADD_LEFT_SHIFT
from refsim.ops.divergence import Divergence
from refsim.ops.registry import Args, register
from refsim.pte.model import ScalarType
from refsim.runtime.tensor import TensorRef

INT8_MIN, INT8_MAX = -128, 127
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
NHWC = (0, 2, 3, 1)

# --- layout helpers (shared with cortex_m_misc and portable) ---------------------------------


def effective_order(t: TensorRef, order: Sequence[int] | None = None) -> tuple[int, ...]:
    """``order`` (default: the tensor's dim order) without its dims of size 1."""
    return tuple(d for d in (t.dim_order if order is None else order) if t.sizes[d] != 1)


def laid_out_as(t: TensorRef, order: Sequence[int]) -> bool:
    """Whether ``t``'s bytes are in ``order`` (outermost first), ignoring dims of size 1."""
    return effective_order(t) == effective_order(t, order)


def is_contiguous(t: TensorRef) -> bool:
    """Memory order equals logical order (ignoring dims of size 1)."""
    return laid_out_as(t, range(len(t.sizes)))


def same_layout(*tensors: TensorRef) -> bool:
    """Same sizes and the same bytes for the same elements."""
    first = tensors[0]
    return all(t.sizes == first.sizes and effective_order(t) == effective_order(first) for t in tensors)


def flat(t: TensorRef) -> np.ndarray:
    """The tensor's bytes as a 1-D view in memory order (what a C loop over ``numel`` sees)."""
    return t.storage.reshape(-1)


def raw(t: TensorRef) -> np.ndarray:
    """The bytes read as if they were contiguous in the logical shape (a view).

    This is how a kernel that ignores dim order (CMSIS-NN dims filled from ``sizes``,
    ExecuTorch's ``getTrailingDims``/``memcpy`` kernels) sees a tensor.
    """
    return t.storage.reshape(t.sizes)


def dims4(sizes: Sequence[int]) -> tuple[int, int, int, int]:
    """The last four sizes right-aligned into ``{n, h, w, c}`` (as ExecuTorch fills cmsis_nn_dims)."""
    padded = (1, 1, 1, 1, *sizes)[-4:]
    return (int(padded[0]), int(padded[1]), int(padded[2]), int(padded[3]))


def require_dtype(a: Args, names: Sequence[str], dtypes: Sequence[ScalarType]) -> None:
    allowed = " or ".join(d.name.lower() for d in dtypes)
    for name in names:
        t = getattr(a, name)
        if t.scalar_type not in dtypes:
            raise a.error(name, allowed, t.scalar_type.name.lower())


def require_range(a: Args, name: str, low: int, high: int) -> int:
    value = getattr(a, name)
    if not low <= value <= high:
        raise a.error(name, f"in [{low}, {high}]", value)
    return int(value)


def require_activation(a: Args, lo_name: str, hi_name: str) -> None:
    lo, hi = getattr(a, lo_name), getattr(a, hi_name)
    if not INT8_MIN <= lo <= hi <= INT8_MAX:
        raise a.error(f"{lo_name}/{hi_name}", f"{INT8_MIN} <= min <= max <= {INT8_MAX}", (lo, hi))


def require_sizes(a: Args, name: str, expected: Sequence[int]) -> None:
    t = getattr(a, name)
    if tuple(t.sizes) != tuple(expected):
        raise a.error(name, f"sizes {list(expected)}", list(t.sizes))


class LayoutWarning(UserWarning):
    """A kernel reads or writes bytes in an order other than the tensors' dim orders say, so
    the device (and refsim, which computes what the device computes) differs from the op."""


def warn_layout(a: Args, names: Sequence[str], assumption: str) -> None:
    """Issue a `LayoutWarning` naming the op, the tensors and the kernel's assumption."""
    found = ", ".join(
        f"{n} {list(getattr(a, n).sizes)} dim_order {list(getattr(a, n).dim_order)}" for n in names
    )
    reason = f"the kernel assumes {assumption}, but {found}"
    a.divergences.append(Divergence(a.op, a.instruction, "layout", tuple(names), reason))
    warnings.warn(
        f"{a.op} (instruction {a.instruction}): {reason}; "
        "refsim computes what the device computes, which is not the operator's result",
        LayoutWarning,
        stacklevel=3,
    )


# --- binary ops: the operand layout ExecuTorch's add/mul loops imply -------------------------


def _is_channel_broadcast(x: TensorRef, y: TensorRef) -> bool:
    """``is_channel_broadcast`` of ``cortex_m_ops_common.h``: both 4-D, equal ``size(1)``, and
    one of them holds nothing but its channels."""
    if len(x.sizes) != 4 or len(y.sizes) != 4 or x.sizes[1] != y.sizes[1]:
        return False
    return x.meta.numel == x.sizes[1] or y.meta.numel == y.sizes[1]


def binary_operands(a: Args) -> tuple[np.ndarray, np.ndarray]:
    """``self`` and ``other`` as arrays that broadcast the way the device pairs their bytes.

    Same sizes: one block call over ``numel`` bytes. Channel broadcast (``quantized_add_out``/
    ``quantized_mul_out``): the operand with more elements is walked in blocks of C bytes
    against the C bytes of the channels-only operand (the kernel swaps operands and their
    parameters so that the big one comes first; the arithmetic stays ``self op other``); that
    is the broadcast when C is innermost in the big operand's memory. Raises `OpError`.
    """
    x, y, out = a.self, a.other, a.out
    if _is_channel_broadcast(x, y) and x.sizes != y.sizes:
        channels = x.sizes[1]
        big, small = (y, x) if x.meta.numel < y.meta.numel else (x, y)
        require_sizes(a, "out", big.sizes)
        rows = big.storage.reshape(-1, channels)
        vector = small.storage.reshape(channels)
        return (rows, vector) if big is x else (vector, rows)
    if not (x.sizes == y.sizes == out.sizes):
        raise a.error(
            "self/other/out",
            "equal sizes, or a 4-D channel broadcast (ExecuTorch's cortex_m kernel requires one)",
            (list(x.sizes), list(y.sizes), list(out.sizes)),
        )
    return flat(x), flat(y)


def warn_binary_layout(a: Args) -> None:
    """`LayoutWarning` when `binary_operands` pairs bytes that are not the op's elements."""
    x, y, out = a.self, a.other, a.out
    if _is_channel_broadcast(x, y) and x.sizes != y.sizes:
        big_name = "other" if x.meta.numel < y.meta.numel else "self"
        big = getattr(a, big_name)
        order = effective_order(big)
        if (x.sizes[1] > 1 and order and order[-1] != 1) or not same_layout(big, out):
            warn_layout(a, (big_name, "out"), "both channels-last (blocks of C bytes)")
    elif not same_layout(x, y, out):
        warn_layout(a, ("self", "other", "out"), "one layout for all three (byte-wise)")


def _validate_qparams(a: Args, zero_points: Sequence[str], mults: Sequence[str], shifts: Sequence[str]):
    for name in zero_points:
        require_range(a, name, INT8_MIN, INT8_MAX)  # CMSIS-NN offsets: -zp in [-127, 128]
    for name in mults:
        require_range(a, name, INT32_MIN + 1, INT32_MAX)
    for name in shifts:
        require_range(a, name, -31, 30)  # arm_nn_requantize: LEFT_SHIFT(31) overflows int32


# --- quantized_add -----------------------------------------------------------------------------


@register(
    "cortex_m::quantized_add.out(Tensor self, int self_zero_point, int self_multiplier, int self_shift, "
    "Tensor other, int other_zero_point, int other_multiplier, int other_shift, int output_zero_point, "
    "int output_multiplier, int output_shift, int activation_min, int activation_max, *, Tensor(a!) out) "
    "-> Tensor(a!)",
    kernel=elementwise.ADD_S8,
    in_place_safe=True,
)
def quantized_add(a: Args) -> None:
    """``arm_elementwise_add_s8`` with ``input_offset = -zero_point``, ``left_shift = 20``.

    Subtraction arrives as this op with ``other_multiplier`` negated (ExecuTorch's
    ``_get_add_replacement``). Equal sizes, or a channel broadcast of a channels-only operand.
    """
    x, y = binary_operands(a)
    out = flat(a.out)
    result = elementwise.elementwise_add_s8(
        x,
        y,
        input_1_offset=-a.self_zero_point,
        input_1_mult=a.self_multiplier,
        input_1_shift=a.self_shift,
        input_2_offset=-a.other_zero_point,
        input_2_mult=a.other_multiplier,
        input_2_shift=a.other_shift,
        left_shift=ADD_LEFT_SHIFT,
        out_offset=a.output_zero_point,
        out_mult=a.output_multiplier,
        out_shift=a.output_shift,
        out_activation_min=a.activation_min,
        out_activation_max=a.activation_max,
        out=out,
    )
    if not np.may_share_memory(result, out):  # else the table path wrote it in place
        out[...] = result.reshape(-1)


@quantized_add.validator
def _validate_add(a: Args) -> None:
    require_dtype(a, ("self", "other", "out"), (ScalarType.INT8,))
    _validate_qparams(
        a,
        ("self_zero_point", "other_zero_point", "output_zero_point"),
        ("self_multiplier", "other_multiplier", "output_multiplier"),
        ("self_shift", "other_shift", "output_shift"),
    )
    require_activation(a, "activation_min", "activation_max")
    binary_operands(a)
    warn_binary_layout(a)


# --- quantized_mul -----------------------------------------------------------------------------


@register(
    "cortex_m::quantized_mul.out(Tensor self, int self_zero_point, Tensor other, int other_zero_point, "
    "int output_zero_point, int output_multiplier, int output_shift, *, Tensor(a!) out) -> Tensor(a!)",
    kernel=elementwise.MUL_S8,
    in_place_safe=True,
)
def quantized_mul(a: Args) -> None:
    """``arm_elementwise_mul_s8``: ``(x - zp1) * (y - zp2)`` requantized once, activation
    [-128, 127] (ExecuTorch 1.5.1's kernel passes no activation range)."""
    x, y = binary_operands(a)
    result = elementwise.elementwise_mul_s8(
        x,
        y,
        input_1_offset=-a.self_zero_point,
        input_2_offset=-a.other_zero_point,
        out_offset=a.output_zero_point,
        out_mult=a.output_multiplier,
        out_shift=a.output_shift,
        out_activation_min=INT8_MIN,
        out_activation_max=INT8_MAX,
    )
    flat(a.out)[...] = result.reshape(-1)


@quantized_mul.validator
def _validate_mul(a: Args) -> None:
    require_dtype(a, ("self", "other", "out"), (ScalarType.INT8,))
    _validate_qparams(
        a,
        ("self_zero_point", "other_zero_point", "output_zero_point"),
        ("output_multiplier",),
        ("output_shift",),
    )
    binary_operands(a)


# --- quantized_div: ExecuTorch's own float loop (CMSIS-NN has no division) --------------------

_DIV_DTYPES = {ScalarType.INT8: np.int8, ScalarType.INT16: np.int16}


def _round_half_away(value: np.ndarray) -> np.ndarray:
    """C ``std::round`` of float32 values, exactly: ``|v| + 0.5`` is exact in float64 for
    ``|v| < 2^52``, so the floor gives roundf's result (ties away from zero)."""
    wide = value.astype(np.float64)
    return np.where(wide >= 0, np.floor(wide + 0.5), -np.floor(0.5 - wide))


def quantized_div_reference(
    input_1: np.ndarray,
    input_2: np.ndarray,
    *,
    input_1_zero_point: int,
    input_2_zero_point: int,
    output_zero_point: int,
    output_scale: float,
) -> np.ndarray:
    """Plain-loop definition of cortex_m ``quantized_div_out`` (``op_quantized_div.cpp``).

    Per element, in the kernel's types: ``n = (int32)x1 - zp1``, ``d = (int32)x2 - zp2``;
    ``q = d != 0 ? (float)n / (float)d : 0.0f`` (a float32 division); ``r =
    (int32)std::round(q * (float)output_scale) + output_zero_point`` (float32 product, round
    half away from zero); clamped to the dtype's range. Division by a zero-valued operand gives
    the output zero point.
    """
    dtype = input_1.dtype
    info = np.iinfo(dtype)
    scale = np.float32(output_scale)
    out = np.empty(input_1.shape, dtype)
    for index in np.ndindex(*input_1.shape):
        numerator = int(input_1[index]) - input_1_zero_point
        denominator = int(input_2[index]) - input_2_zero_point
        quotient = np.float32(numerator) / np.float32(denominator) if denominator else np.float32(0.0)
        product = float(np.float32(quotient * scale))
        rounded = int(math.copysign(math.floor(abs(product) + 0.5), product))
        out[index] = min(max(rounded + output_zero_point, int(info.min)), int(info.max))
    return out


def quantized_div(
    input_1: np.ndarray,
    input_2: np.ndarray,
    *,
    input_1_zero_point: int,
    input_2_zero_point: int,
    output_zero_point: int,
    output_scale: float,
) -> np.ndarray:
    """Vectorised :func:`quantized_div_reference` (same arguments, same results)."""
    dtype = input_1.dtype
    info = np.iinfo(dtype)
    numerator = (input_1.astype(np.int32) - np.int32(input_1_zero_point)).astype(np.float32)
    denominator = (input_2.astype(np.int32) - np.int32(input_2_zero_point)).astype(np.float32)
    nonzero = denominator != 0
    with np.errstate(divide="ignore", invalid="ignore"):
        quotient = np.where(nonzero, numerator / np.where(nonzero, denominator, np.float32(1)), np.float32(0))
    product = (quotient.astype(np.float32) * np.float32(output_scale)).astype(np.float32)
    rounded = _round_half_away(product).astype(np.int64) + output_zero_point
    return np.clip(rounded, info.min, info.max).astype(dtype)


@register(
    "cortex_m::quantized_div.out(Tensor self, int self_zero_point, Tensor other, int other_zero_point, "
    "int output_zero_point, float output_scale, *, Tensor(a!) out) -> Tensor(a!)",
    in_place_safe=True,
)
def quantized_div_op(a: Args) -> None:
    """ExecuTorch's float32 division loop (not a CMSIS-NN function); see
    :func:`quantized_div_reference` for the rounding."""
    result = quantized_div(
        flat(a.self),
        flat(a.other),
        input_1_zero_point=a.self_zero_point,
        input_2_zero_point=a.other_zero_point,
        output_zero_point=a.output_zero_point,
        output_scale=a.output_scale,
    )
    flat(a.out)[...] = result


@quantized_div_op.validator
def _validate_div(a: Args) -> None:
    dtype = a.out.scalar_type
    if dtype not in _DIV_DTYPES:
        raise a.error("out", "int8 or int16", dtype.name.lower())
    require_dtype(a, ("self", "other"), (dtype,))
    info = np.iinfo(_DIV_DTYPES[dtype])
    for name in ("self_zero_point", "other_zero_point", "output_zero_point"):
        require_range(a, name, int(info.min), int(info.max))
    if not (a.self.sizes == a.other.sizes == a.out.sizes):
        raise a.error(
            "self/other/out",
            "equal sizes (ExecuTorch's quantized_div does not broadcast)",
            (list(a.self.sizes), list(a.other.sizes), list(a.out.sizes)),
        )
    if not same_layout(a.self, a.other, a.out):
        warn_layout(a, ("self", "other", "out"), "one layout for all three (element-wise loop)")
    scale = float(np.float32(a.output_scale))
    # |n / d| <= |n| <= 2 * |dtype.min|; past 2^31 the C (int32_t) conversion is undefined.
    largest = 2.0 * -float(info.min) * abs(scale)
    if not math.isfinite(scale) or largest + abs(a.output_zero_point) >= 2.0**31:
        raise a.error("output_scale", "finite and small enough that every result fits int32", a.output_scale)


# --- maximum / minimum -------------------------------------------------------------------------


def _extremum_operands(a: Args) -> tuple[np.ndarray, np.ndarray]:
    """``self`` and ``other`` as the 4-D arrays ``arm_maximum_s8``/``arm_minimum_s8`` walk."""
    x, y = a.self, a.other
    return raw(x).reshape(dims4(x.sizes)), raw(y).reshape(dims4(y.sizes))


def _validate_extremum(a: Args) -> None:
    x, y, out = a.self, a.other, a.out
    if out.scalar_type is ScalarType.INT32 or x.scalar_type is ScalarType.INT32:
        raise a.error(
            "self/other/out",
            "int8 (ExecuTorch 1.5.1's cortex_m kernel calls arm_*_s8 and ET_CHECKs int8, "
            "although its lowering also accepts int32 for minimum)",
            x.scalar_type.name.lower(),
        )
    require_dtype(a, ("self", "other", "out"), (ScalarType.INT8,))
    try:
        expected = np.broadcast_shapes(tuple(x.sizes), tuple(y.sizes))
    except ValueError:
        raise a.error("other", f"broadcastable with self {list(x.sizes)}", list(y.sizes)) from None
    require_sizes(a, "out", expected)
    for name in ("self", "other", "out"):
        sizes = getattr(a, name).sizes
        if math.prod(sizes[:-4]) != 1:
            raise a.error(
                name, "at most 4-D (the kernel fills cmsis_nn_dims from the last four sizes)", list(sizes)
            )
    if not cmsis_minmax_broadcast_is_exact(dims4(x.sizes), dims4(y.sizes)):
        raise a.error(
            "self/other",
            "a shape pair CMSIS-NN's broadcast walk handles (a one-element-per-row operand with "
            "H >= 2 against W >= 2 reads the wrong elements in arm_maximum_s8/arm_minimum_s8)",
            (list(x.sizes), list(y.sizes)),
        )
    # Byte-wise is right when every operand with more than one element is laid out like out;
    # a real broadcast is right when all three are contiguous (dims are the logical sizes).
    bytewise = all(same_layout(t, out) for t in (x, y) if t.meta.numel > 1)
    if not bytewise and not all(is_contiguous(t) for t in (x, y, out)):
        warn_layout(a, ("self", "other", "out"), "contiguous tensors, or one layout for all (byte-wise)")


@register(
    "cortex_m::maximum.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
    kernel=elementwise.MAXIMUM_S8,
    in_place_safe=True,
)
def maximum(a: Args) -> None:
    """``arm_maximum_s8`` with dims from the logical sizes (numpy broadcasting, no rounding)."""
    flat(a.out)[...] = elementwise.maximum_s8(*_extremum_operands(a)).reshape(-1)


@register(
    "cortex_m::minimum.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
    kernel=elementwise.MINIMUM_S8,
    in_place_safe=True,
)
def minimum(a: Args) -> None:
    """``arm_minimum_s8`` with dims from the logical sizes (numpy broadcasting, no rounding)."""
    flat(a.out)[...] = elementwise.minimum_s8(*_extremum_operands(a)).reshape(-1)


maximum.validator(_validate_extremum)
minimum.validator(_validate_extremum)


# --- quantized_activation (256-entry LUT) ------------------------------------------------------


@register(
    "cortex_m::quantized_activation.out(Tensor input, Tensor lut, *, Tensor(a!) out) -> Tensor(a!)",
    in_place_safe=True,
)
def quantized_activation(a: Args) -> None:
    """ExecuTorch's own table lookup ``out[i] = lut[(uint8_t)(in[i] + 128)]`` over ``numel``
    bytes (sigmoid, tanh, silu, gelu, log*, sqrt, rsqrt: the table holds the numerics)."""
    flat(a.out)[...] = activation.lut_s8(flat(a.input), flat(a.lut))


@quantized_activation.validator
def _validate_activation(a: Args) -> None:
    require_dtype(a, ("input", "lut", "out"), (ScalarType.INT8,))
    if a.lut.meta.numel != activation.LUT_SIZE:
        raise a.error("lut", f"{activation.LUT_SIZE} entries", a.lut.meta.numel)
    if a.input.meta.numel != a.out.meta.numel:
        raise a.error("out", f"{a.input.meta.numel} elements like input", a.out.meta.numel)
    if a.input.sizes == a.out.sizes and not same_layout(a.input, a.out):
        warn_layout(a, ("input", "out"), "one layout for both (byte-wise)")

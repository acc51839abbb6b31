"""cortex_m pooling, softmax, pad, transpose and the int8 quantize/dequantize pair.

As in ``cortex_m_elementwise`` (see its docstring for the two validator rules), each op is the
CMSIS-NN call ExecuTorch 1.5.1's ``backends/cortex_m/ops/op_*.cpp`` makes, with the dims that
file fills in, applied to the tensors' bytes. Pooling reads NHWC bytes: the legacy ops take
logical NCHW tensors whose dim order is channels-last (``prepare_cmsis_pool2d_config`` refuses
others), the ``_nhwc`` ops take logical NHWC tensors in contiguous order; both run
``arm_*pool_s8`` on the same bytes.
"""

from __future__ import annotations

import numpy as np

from kernels_py import layout, pooling, quantize, softmax
from kernels_py.errors import KernelArgumentError
from kernels_py.types import Activation, Dims, PoolParams, Tile
from refsim.ops import cortex_m_calls
from refsim.ops.cortex_m_calls import _dry_run, _execute, _Plan, _watch
from refsim.ops.cortex_m_elementwise import (
    INT8_MAX,
    INT8_MIN,
    INT32_MAX,
    INT32_MIN,
    NHWC,
    flat,
    is_contiguous,
    laid_out_as,
    raw,
    require_activation,
    require_dtype,
    require_range,
    require_sizes,
    same_layout,
    warn_layout,
)
from refsim.ops.registry import Args, OpError, alias, register
from refsim.pte.model import ScalarType
from refsim.runtime.tensor import TensorRef

# --- pooling -----------------------------------------------------------------------------------

_AVG_SCHEMA = (
    "cortex_m::{name}.out(Tensor input, int[] kernel_size, int[] stride, int[] padding, bool ceil_mode, "
    "int zero_point, int multiplier, int shift, Tensor scratch, *, Tensor(a!) out) -> Tensor(a!)"
)
_MAX_SCHEMA = (
    "cortex_m::{name}.out(Tensor input, int[] kernel_size, int[] stride, int[] padding, int[] dilation, "
    "bool ceil_mode, int input_zero_point, int output_zero_point, int activation_min, int activation_max, "
    "*, Tensor(a!) out) -> Tensor(a!)"
)


def _nhwc_view(a: Args, t: TensorRef) -> np.ndarray:
    """The tensor's bytes as the [N, H, W, C] array CMSIS-NN reads (dims from the logical sizes:
    NCHW for the legacy ops, NHWC for the ``_nhwc`` ops)."""
    return flat(t).reshape(_nhwc_sizes(a, t))


def _nhwc_sizes(a: Args, t: TensorRef) -> tuple[int, int, int, int]:
    n, h, w, c = (t.sizes[d] for d in ((0, 1, 2, 3) if a.op.endswith("_nhwc.out") else NHWC))
    return n, h, w, c


def pooling_output_size(size: int, kernel: int, stride: int, padding: int, ceil_mode: bool) -> int:
    """``pooling_output_size`` of ``op_quantized_avg_pool2d.cpp`` (PyTorch's rule; C division)."""
    numerator = size + 2 * padding - kernel
    output = int(numerator / stride) + 1  # C's truncating division
    if ceil_mode and numerator % stride != 0:
        output += 1
    if ceil_mode and (output - 1) * stride >= size + padding:
        output -= 1
    return output


def _validate_pool(a: Args, ceil_mode: bool) -> None:
    """``prepare_cmsis_pool2d_config`` plus what ``arm_*pool_s8`` needs to write every output."""
    require_dtype(a, ("input", "out"), (ScalarType.INT8,))
    for name in ("input", "out"):
        if len(getattr(a, name).sizes) != 4:
            raise a.error(name, "4-D", list(getattr(a, name).sizes))
    nhwc = a.op.endswith("_nhwc.out")
    if not nhwc:
        for name in ("input", "out"):
            if not _is_channels_last_tensor(getattr(a, name)):
                t = getattr(a, name)
                expected = "channels-last (prepare_cmsis_pool2d_config fails otherwise)"
                raise a.error(name, expected, f"sizes {list(t.sizes)} dim_order {list(t.dim_order)}")
    for name in ("kernel_size", "stride", "padding"):
        if len(getattr(a, name)) != 2:
            raise a.error(name, "two values (h, w)", list(getattr(a, name)))
    (kh, kw), (sh, sw), (ph, pw) = a.kernel_size, a.stride, a.padding
    if min(kh, kw, sh, sw) < 1 or min(ph, pw) < 0:
        raise a.error(
            "kernel_size/stride/padding", "positive, positive, non-negative", (kh, kw, sh, sw, ph, pw)
        )
    n, in_h, in_w, c = _nhwc_sizes(a, a.input)
    out_n, out_h, out_w, out_c = _nhwc_sizes(a, a.out)
    if (n, c) != (out_n, out_c):
        raise a.error("out", f"batch {n} and channels {c} like input", (out_n, out_c))
    expected = (
        pooling_output_size(in_h, kh, sh, ph, ceil_mode),
        pooling_output_size(in_w, kw, sw, pw, ceil_mode),
    )
    if (out_h, out_w) != expected or min(expected) < 1:
        raise a.error("out", f"output height, width {expected}", (out_h, out_w))
    for axis, k, p, s, size, out in (("h", kh, ph, sh, in_h, out_h), ("w", kw, pw, sw, in_w, out_w)):
        if p >= k or (out - 1) * s - p >= size:
            raise a.error(
                f"padding[{axis}]",
                "such that every window overlaps the input (arm_avgpool_s8 returns ARG_ERROR, "
                "arm_max_pool_s8 leaves output unwritten otherwise)",
                {"padding": p, "kernel": k, "input": size},
            )
    wanted = (0, 1, 2, 3) if nhwc else NHWC
    if not all(laid_out_as(getattr(a, n), wanted) for n in ("input", "out")):
        warn_layout(a, ("input", "out"), "NHWC bytes")


def _pool_params(a: Args, activation_min: int, activation_max: int) -> PoolParams:
    (sh, sw), (ph, pw) = a.stride, a.padding
    return PoolParams(
        stride=Tile(w=sw, h=sh),
        padding=Tile(w=pw, h=ph),
        activation=Activation(activation_min, activation_max),
    )


def _pool_taps(a: Args) -> int:
    """Window taps summed or compared: out elements x kernel area (the cost model's 'macs')."""
    return int(a.out.meta.numel * a.kernel_size[0] * a.kernel_size[1])


@register(_AVG_SCHEMA.format(name="quantized_avg_pool2d"), kernel=pooling.ARM_AVGPOOL_S8)
def quantized_avg_pool2d(a: Args) -> None:
    """``arm_avgpool_s8``: sum of the taps inside the input divided by their count, ties away
    from zero; activation [-128, 127]. ``zero_point``/``multiplier``/``shift`` are carried but
    unused by the kernel (input and output share their quantization); ``count_include_pad``
    arrives as a separate ``cortex_m::pad`` with the zero point, so ``padding`` here is never
    counted. ``ceil_mode`` only changes the output size (the extra windows are partial)."""
    _execute(a, _avg_pool_prepare)


def _avg_pool_prepare(a: Args) -> _Plan:
    """The call, prepared once (views, parameters): `pooling._avgpool_kernel` with the arguments the
    public ``avgpool_s8`` would check and pass on every call (the validator ran it once at load)."""
    x, out = _nhwc_view(a, a.input), _nhwc_view(a, a.out)
    p = _pool_params(a, INT8_MIN, INT8_MAX)
    if cortex_m_calls.CHECKED:
        operands: tuple = (x, p, tuple(a.kernel_size), out.shape[1:3])
        return _Plan(a, pooling.avgpool_s8, operands, out, _watch(a, "input", "out"))
    k_h, k_w = a.kernel_size
    operands = (
        x,
        k_h,
        k_w,
        p.stride.h,
        p.stride.w,
        p.padding.h,
        p.padding.w,
        INT8_MIN,
        INT8_MAX,
        *out.shape[1:3],
    )
    return _Plan(a, pooling._avgpool_kernel, operands, out, _watch(a, "input", "out"))


@quantized_avg_pool2d.validator
def _validate_avg_pool(a: Args) -> None:
    _validate_pool(a, bool(a.ceil_mode))
    x, out = _nhwc_view(a, a.input), _nhwc_view(a, a.out)
    params = _pool_params(a, INT8_MIN, INT8_MAX)
    _dry_run(a, pooling.avgpool_s8, np.zeros_like(x), params, tuple(a.kernel_size), out.shape[1:3])
    a.state = _avg_pool_prepare(a)
    if a.kernel_size[0] * a.kernel_size[1] > 1 << 24:
        raise a.error(
            "kernel_size", "at most 2^24 taps (the int32 sum must not overflow)", list(a.kernel_size)
        )


@quantized_avg_pool2d.scratch_bytes
def _avg_pool_scratch(a: Args, isa: str) -> int:
    _, _, out_w, _ = _nhwc_sizes(a, a.out)
    return pooling.avgpool_s8_get_buffer_size(out_w, _nhwc_sizes(a, a.input)[3], isa)


quantized_avg_pool2d.mac_count(_pool_taps)
alias(
    "cortex_m::quantized_avg_pool2d_nhwc.out",
    quantized_avg_pool2d,
    _AVG_SCHEMA.format(name="quantized_avg_pool2d_nhwc"),
)


@register(_MAX_SCHEMA.format(name="quantized_max_pool2d"), kernel=pooling.ARM_MAX_POOL_S8)
def quantized_max_pool2d(a: Args) -> None:
    """``arm_max_pool_s8``: the largest tap inside the input, clamped to the activation range."""
    out_view = _nhwc_view(a, a.out)
    out_view[...] = pooling.max_pool_s8(
        _nhwc_view(a, a.input),
        _pool_params(a, a.activation_min, a.activation_max),
        tuple(a.kernel_size),
        output_hw=out_view.shape[1:3],
    )


@quantized_max_pool2d.validator
def _validate_max_pool(a: Args) -> None:
    if a.ceil_mode:
        raise a.error("ceil_mode", "False (ExecuTorch's quantized_max_pool2d rejects ceil_mode)", True)
    if len(a.dilation) != 2 or tuple(a.dilation) != (1, 1):
        raise a.error("dilation", "[1, 1] (arm_max_pool_s8 has no dilation)", list(a.dilation))
    _validate_pool(a, False)
    require_range(a, "input_zero_point", INT8_MIN, INT8_MAX)
    require_range(a, "output_zero_point", INT8_MIN, INT8_MAX)
    if a.input_zero_point != a.output_zero_point:
        raise a.error(
            "output_zero_point", f"equal to input_zero_point {a.input_zero_point}", a.output_zero_point
        )
    require_activation(a, "activation_min", "activation_max")


quantized_max_pool2d.mac_count(_pool_taps)
alias(
    "cortex_m::quantized_max_pool2d_nhwc.out",
    quantized_max_pool2d,
    _MAX_SCHEMA.format(name="quantized_max_pool2d_nhwc"),
)


# --- softmax -----------------------------------------------------------------------------------


@register(
    "cortex_m::softmax.out(Tensor input, int dim, int input_zero_point, int output_zero_point, "
    "int input_multiplier, int input_shift, int diff_min, *, Tensor(a!) out) -> Tensor(a!)",
    kernel="arm_softmax_s8",
)
def softmax_op(a: Args) -> None:
    """``arm_softmax_s8`` over rows of ``size(dim)`` consecutive bytes (``dim`` is the last
    dim); output scale 1/256, zero point -128. ``input_zero_point`` cancels in ``x - max``."""
    row = a.input.sizes[-1]
    try:
        result = softmax.softmax_s8(
            flat(a.input).reshape(-1, row), a.input_multiplier, a.input_shift, a.diff_min
        )
    except KernelArgumentError as exc:  # a row whose sum of exponentials overflows Q12.19
        raise OpError(f"{a.op} (instruction {a.instruction}): {exc}") from exc
    flat(a.out)[...] = result.reshape(-1)


@softmax_op.validator
def _validate_softmax(a: Args) -> None:
    require_dtype(a, ("input", "out"), (ScalarType.INT8,))
    rank = len(a.input.sizes)
    if rank < 1 or a.input.meta.numel == 0:
        raise a.error("input", "at least 1-D and non-empty", list(a.input.sizes))
    if not -rank <= a.dim < rank or a.dim % rank != rank - 1:
        raise a.error("dim", f"the last dim ({rank - 1} or -1; op_softmax.cpp supports no other)", a.dim)
    require_sizes(a, "out", a.input.sizes)
    order = tuple(d for d in a.input.dim_order if a.input.sizes[d] != 1)
    if not same_layout(a.input, a.out) or (order and a.input.sizes[-1] != 1 and order[-1] != rank - 1):
        warn_layout(a, ("input", "out"), "rows of size(dim) consecutive bytes in both")
    if a.output_zero_point != softmax.OUTPUT_ZERO_POINT:
        raise a.error(
            "output_zero_point",
            f"{softmax.OUTPUT_ZERO_POINT} (CMSIS-NN's softmax output)",
            a.output_zero_point,
        )
    require_range(a, "input_multiplier", INT32_MIN, INT32_MAX)
    require_range(a, "input_shift", 0, 31)  # arm_softmax_s8 computes 1 << shift
    require_range(a, "diff_min", INT32_MIN, INT32_MAX)


# --- pad ---------------------------------------------------------------------------------------


def _is_channels_last_tensor(t: TensorRef) -> bool:
    """``is_channels_last_tensor`` of ``cortex_m_ops_common.h`` (ambiguous shapes count as such)."""
    if len(t.sizes) != 4:
        return False
    return t.sizes[1] == 1 or (t.sizes[2] == 1 and t.sizes[3] == 1) or tuple(t.dim_order) == NHWC


def _pad_order(t: TensorRef) -> tuple[int, ...]:
    """The logical dims in the physical order ``pad_out`` gives CMSIS-NN (NHWC for a
    channels-last 4-D input, else logical), matching the AOT pass's ``to_physical_order``."""
    return NHWC if _is_channels_last_tensor(t) else tuple(range(len(t.sizes)))


@register(
    "cortex_m::pad.out(Tensor input, int[] pre_pad, int[] post_pad, int pad_value, *, Tensor(a!) out) "
    "-> Tensor(a!)",
    kernel="arm_pad_s8",
)
def pad(a: Args) -> None:
    """``arm_pad_s8`` with dims and pads in physical order (right-aligned to NHWC)."""
    _execute(a, _pad_prepare)


def _pad_prepare(a: Args) -> _Plan:
    """The call, prepared once: `layout._pad_s8_kernel` writing the out tensor's bytes in place, with the
    arguments the public ``pad_s8`` checks (the validator ran it once at load)."""
    dims = Dims.of(tuple(a.input.sizes[d] for d in _pad_order(a.input))).shape
    data = flat(a.input).reshape(dims)
    padded = tuple(d + pre + post for d, pre, post in zip(dims, a.pre_pad, a.post_pad, strict=True))
    out = flat(a.out).reshape(padded)
    watch = _watch(a, "input", "out")
    if cortex_m_calls.CHECKED:
        return _Plan(a, layout.pad_s8, (data, Dims(*a.pre_pad), Dims(*a.post_pad), a.pad_value), out, watch)
    operands = (data, *(int(v) for v in a.pre_pad), int(a.pad_value), out)
    return _Plan(a, layout._pad_s8_kernel, operands, None, watch)


@pad.validator
def _validate_pad(a: Args) -> None:
    require_dtype(a, ("input", "out"), (ScalarType.INT8,))
    rank = len(a.input.sizes)
    if not 1 <= rank <= 4:
        raise a.error("input", "1- to 4-D", list(a.input.sizes))
    for name in ("pre_pad", "post_pad"):
        values = getattr(a, name)
        if len(values) != 4 or min(values) < 0:
            raise a.error(name, "four non-negative values (physical NHWC order)", list(values))
        if any(values[: 4 - rank]):
            raise a.error(name, f"zero on the axes a {rank}-D input lacks", list(values))
    require_range(a, "pad_value", INT8_MIN, INT8_MAX)
    order = _pad_order(a.input)
    offset = 4 - rank
    expected = list(a.input.sizes)
    for k, d in enumerate(order):
        expected[d] += a.pre_pad[offset + k] + a.post_pad[offset + k]
    require_sizes(a, "out", expected)
    if not all(laid_out_as(getattr(a, n), order) for n in ("input", "out")):
        warn_layout(a, ("input", "out"), f"bytes in the order {list(order)} of the logical dims")
    dims = Dims.of(tuple(a.input.sizes[d] for d in order)).shape
    _dry_run(a, layout.pad_s8, np.zeros(dims, np.int8), Dims(*a.pre_pad), Dims(*a.post_pad), a.pad_value)
    a.state = _pad_prepare(a)


# --- transpose ---------------------------------------------------------------------------------


@register(
    "cortex_m::transpose.out(Tensor input, int[] perm, *, Tensor(a!) out) -> Tensor(a!)",
    kernel="arm_transpose_s8",
)
def transpose(a: Args) -> None:
    """``arm_transpose_s8`` with dims from the logical sizes (left-aligned)."""
    flat(a.out)[...] = layout.transpose_s8(raw(a.input), tuple(a.perm)).reshape(-1)


@transpose.validator
def _validate_transpose(a: Args) -> None:
    require_dtype(a, ("input", "out"), (ScalarType.INT8,))
    sizes = a.input.sizes
    rank = len(sizes)
    if not 1 <= rank <= 4:
        raise a.error("input", "1- to 4-D", list(sizes))
    perm = tuple(a.perm)
    if sorted(perm) != list(range(rank)):
        raise a.error("perm", f"a permutation of 0..{rank - 1}", list(perm))
    require_sizes(a, "out", [sizes[p] for p in perm])
    if rank == 2 and perm == (0, 1) and min(sizes) > 1:
        raise a.error(
            "perm", "not the 2-D identity (arm_transpose_s8's 2-D path always transposes)", list(perm)
        )
    if not (is_contiguous(a.input) and is_contiguous(a.out)):
        warn_layout(a, ("input", "out"), "contiguous tensors (dims are the logical sizes)")


# --- quantize / dequantize (int8 <-> float32) --------------------------------------------------

_QDQ_SCHEMA = (
    "cortex_m::{name}.out(Tensor input, float scale, int zero_point, int quant_min, int quant_max, "
    "ScalarType dtype, *, Tensor(a!) out) -> Tensor(a!)"
)


def _probe(a: Args, kernel, sample: np.ndarray) -> None:
    """Run the kernel on one element to apply its own argument checks at load."""
    try:
        kernel(sample, a.scale, a.zero_point, a.quant_min, a.quant_max)
    except KernelArgumentError as exc:
        raise a.error(exc.argument, exc.expected, exc.found) from None


def _validate_qdq(a: Args, source: ScalarType, target: ScalarType) -> None:
    require_dtype(a, ("input",), (source,))
    require_dtype(a, ("out",), (target,))
    if a.dtype != ScalarType.INT8:
        raise a.error("dtype", "int8 (ScalarType 1)", a.dtype)
    require_sizes(a, "out", a.input.sizes)
    if not same_layout(a.input, a.out):
        warn_layout(a, ("input", "out"), "one layout for both (element-wise loop)")


@register(_QDQ_SCHEMA.format(name="quantize_per_tensor"))
def cortex_m_quantize_per_tensor(a: Args) -> None:
    """cortex_m ``quantize_per_tensor_out``: float32 product with ``1.0f / scale``, round half
    to even, saturating conversion, int32 zero-point add, clamp (see kernels_py.quantize)."""
    flat(a.out)[...] = quantize.cortex_m_quantize_per_tensor(
        flat(a.input), a.scale, a.zero_point, a.quant_min, a.quant_max
    )


@cortex_m_quantize_per_tensor.validator
def _validate_quantize(a: Args) -> None:
    _validate_qdq(a, ScalarType.FLOAT32, ScalarType.INT8)
    _probe(a, quantize.cortex_m_quantize_per_tensor, np.zeros(1, np.float32))


@register(_QDQ_SCHEMA.format(name="dequantize_per_tensor"))
def cortex_m_dequantize_per_tensor(a: Args) -> None:
    """cortex_m ``dequantize_per_tensor_out``: ``(float)(q - zero_point) * (float)scale``."""
    flat(a.out)[...] = quantize.cortex_m_dequantize_per_tensor(
        flat(a.input), a.scale, a.zero_point, a.quant_min, a.quant_max
    )


@cortex_m_dequantize_per_tensor.validator
def _validate_dequantize(a: Args) -> None:
    _validate_qdq(a, ScalarType.INT8, ScalarType.FLOAT32)
    _probe(a, quantize.cortex_m_dequantize_per_tensor, np.zeros(1, np.int8))

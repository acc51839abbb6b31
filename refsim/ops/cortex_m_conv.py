"""cortex_m convolutions (ExecuTorch 1.5.1) on kernels_py's CMSIS-NN kernels: conv2d, depthwise, transpose.

How each op reaches CMSIS-NN, as ExecuTorch's ``backends/cortex_m/ops/op_quantized_*.cpp`` calls it:

| op | CMSIS-NN call | tensors as the C++ reads them |
|---|---|---|
| quantized_conv2d | arm_convolve_wrapper_s8 | input/out sizes NCHW over NHWC bytes; weight OHWI [C_OUT, KH, KW, C_IN/groups] |
| quantized_depthwise_conv2d | arm_depthwise_conv_wrapper_s8 | weight [1, KH, KW, C_OUT]; batch 1; ``depth_multiplier`` = ch_mult |
| quantized_transpose_conv2d | arm_transpose_conv_wrapper_s8 | weight OHWI [C_OUT, KH, KW, C_IN]; ``padding_offsets`` = output_padding (0) |

The ``_nhwc`` variants (explicit-layout pipeline) take NHWC-*shaped* tensors with contiguous dim_order;
the legacy ops take NCHW-shaped tensors whose dim_order is channels-last (or whose bytes are NHWC anyway:
one channel, or 1x1 spatial extent, exactly the cases ExecuTorch's ``is_channels_last_tensor`` lets
through). Either way the kernel reads NHWC bytes; refsim hands kernels_py a reshaped view of them.

Quirks carried over from ExecuTorch: ``input_offset = -input_zero_point`` and ``output_offset =
output_zero_point``; grouped convs get a zero bias tensor from the exporter rather than None. Scratch
tensors (uint8, memory planned) are CMSIS-NN's ``ctx.buf`` sized by the ``*_get_buffer_size`` of the
exporting target; refsim's kernels need none, so they only get checked.

The three ops share one geometry reader (`_conv_call`, also what refsim/ops/cost.py prices) and are
validated and prepared as `cortex_m_calls` describes. quantized_linear and quantized_batch_matmul are
in `cortex_m_fully_connected`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernels_py import conv as kconv
from kernels_py import conv_transpose as ktconv
from kernels_py import depthwise as kdw
from kernels_py import gemm
from kernels_py.types import (
    INT8_MAX,
    INT8_MIN,
    ConvParams,
    Dims,
    DwConvParams,
    PerChannelQuantParams,
    Tile,
    TransposeConvParams,
)
from refsim.ops import cortex_m_calls
from refsim.ops.cortex_m_calls import (
    _activation,
    _check_multipliers,
    _check_shifts,
    _constant_int32,
    _contiguous,
    _dry_run,
    _execute,
    _int_in,
    _Plan,
    _scratch,
    _tensor,
    _view,
    _watch,
)
from refsim.ops.registry import Args, alias, register
from refsim.pte.model import ScalarType

ISAS = ("scalar", "dsp", "mve")

CONV2D = (
    "cortex_m::quantized_conv2d.out(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, "
    "int[] dilation, int input_offset, int output_offset, Tensor requantize_multipliers, Tensor "
    "requantize_shifts, int activation_min, int activation_max, Tensor scratch, *, Tensor(a!) out) -> Tensor(a!)"
)
DEPTHWISE = (
    "cortex_m::quantized_depthwise_conv2d.out(Tensor input, Tensor weight, Tensor? bias, int[] stride, "
    "int[] padding, int[] dilation, int depth_multiplier, int input_offset, int output_offset, Tensor "
    "requantize_multipliers, Tensor requantize_shifts, int activation_min, int activation_max, Tensor "
    "scratch, *, Tensor(a!) out) -> Tensor(a!)"
)
TRANSPOSE = (
    "cortex_m::quantized_transpose_conv2d.out(Tensor input, Tensor weight, Tensor? bias, int[] stride, "
    "int[] padding, int[] output_padding, int[] dilation, int input_offset, int output_offset, Tensor "
    "requantize_multipliers, Tensor requantize_shifts, int activation_min, int activation_max, Tensor "
    "scratch, Tensor output_scratch, *, Tensor(a!) out) -> Tensor(a!)"
)


def _nhwc_schema(schema: str) -> str:
    name, rest = schema.split(".out(", 1)
    return f"{name}_nhwc.out({rest}"


def _activation_dims(a: Args, name: str, explicit: bool) -> tuple[int, int, int, int]:
    """(N, H, W, C) of a 4-D int8 activation tensor whose bytes the kernel reads as NHWC."""
    t = _tensor(a, name, (ScalarType.INT8,), 4)
    if explicit:
        _contiguous(a, name, t)  # the _nhwc ops: NHWC sizes, contiguous dim_order (is_contiguous_dim_order)
        n, h, w, c = t.sizes
    else:
        n, c, h, w = t.sizes
        if not t.logical.transpose(0, 2, 3, 1).flags.c_contiguous:
            expected = "channels-last (dim_order [0, 2, 3, 1]: NCHW sizes over NHWC bytes)"
            raise a.error(name, expected, f"dim_order {list(t.dim_order)} with sizes {list(t.sizes)}")
    if min(n, h, w, c) < 1:
        raise a.error(name, "non-empty", f"sizes {list(t.sizes)}")
    return n, h, w, c


def _pair(a: Args, name: str, low: int) -> tuple[int, int]:
    value = getattr(a, name)
    if len(value) != 2 or min(value) < low:
        raise a.error(name, f"two values >= {low} ([h, w])", list(value))
    return int(value[0]), int(value[1])


def _quant(a: Args, channels: int) -> PerChannelQuantParams:
    multipliers = _constant_int32(a, "requantize_multipliers", channels)
    shifts = _constant_int32(a, "requantize_shifts", channels)
    if multipliers is None or shifts is None:  # the schema makes them non-optional
        raise a.error("requantize_multipliers", "tensors", None)
    _check_multipliers(a, "requantize_multipliers", multipliers)
    _check_shifts(a, "requantize_shifts", shifts)
    return PerChannelQuantParams(multipliers, shifts)


# --- the conv family: one geometry record per call -----------------------------------------------------


@dataclass(frozen=True)
class _ConvCall:
    """A conv-family call as CMSIS-NN receives it (dims and params named as in the C structs)."""

    input_dims: Dims
    filter_dims: Dims
    output_dims: Dims
    params: ConvParams | DwConvParams | TransposeConvParams

    @property
    def output_hw(self) -> tuple[int, int]:
        return self.output_dims.h, self.output_dims.w


def _conv_call(a: Args, kind: str) -> _ConvCall:
    """Read (and check) the geometry of a conv2d / depthwise / transpose call from its arguments."""
    explicit = "_nhwc." in a.op
    n, h, w, c = _activation_dims(a, "input", explicit)
    on, oh, ow, oc = _activation_dims(a, "out", explicit)
    weight = _tensor(a, "weight", (ScalarType.INT8,), 4)
    _contiguous(a, "weight", weight)
    stride_h, stride_w = _pair(a, "stride", 1)
    pad_h, pad_w = _pair(a, "padding", 0)
    dil_h, dil_w = _pair(a, "dilation", 1)
    common = {
        "input_offset": _int_in(a, "input_offset", -127, 128),
        "output_offset": _int_in(a, "output_offset", INT8_MIN, INT8_MAX),
        "stride": Tile(stride_w, stride_h),
        "padding": Tile(pad_w, pad_h),
        "dilation": Tile(dil_w, dil_h),
        "activation": _activation(a),
    }
    wo, kh, kw, wc = weight.sizes
    if min(weight.sizes) < 1:
        raise a.error("weight", "non-empty", f"sizes {list(weight.sizes)}")
    expect = [
        kconv.conv_output_size(h, kh, stride_h, pad_h, dil_h),
        kconv.conv_output_size(w, kw, stride_w, pad_w, dil_w),
    ]
    if kind == "conv":
        if c % wc or oc % (c // wc) or wo != oc:
            expected = f"OHWI [C_OUT={oc}, KH, KW, C_IN/groups] with groups dividing C_IN={c} and C_OUT"
            raise a.error("weight", expected, f"sizes {list(weight.sizes)}")
        params: Any = ConvParams(**common)
        filter_dims = Dims(wo, kh, kw, wc)
    elif kind == "depthwise":
        mult = _int_in(a, "depth_multiplier", 1, 1 << 16)
        if wo != 1 or wc != oc or oc != c * mult:
            expected = f"[1, KH, KW, C_OUT={oc}] with C_OUT = C_IN·depth_multiplier = {c * mult}"
            raise a.error("weight", expected, f"sizes {list(weight.sizes)}")
        if n != 1:
            raise a.error(
                "input", "a single image (ExecuTorch's depthwise kernel checks batch 1)", f"batch {n}"
            )
        params = DwConvParams(ch_mult=mult, **common)
        filter_dims = Dims(1, kh, kw, oc)
    else:
        if wo != oc or wc != c:
            expected = f"OHWI [C_OUT={oc}, KH, KW, C_IN={c}] (no groups)"
            raise a.error("weight", expected, f"sizes {list(weight.sizes)}")
        if (dil_h, dil_w) != (1, 1):
            raise a.error("dilation", "[1, 1] (CMSIS-NN's transpose conv ignores dilation)", [dil_h, dil_w])
        # ExecuTorch passes output_padding as CMSIS-NN's padding_offsets, which means TFLite's extra
        # bottom/right padding there; its quantizer keeps transpose convs with output_padding in float.
        if _pair(a, "output_padding", 0) != (0, 0):
            expected = "[0, 0] (CMSIS-NN's padding_offsets is not PyTorch's output_padding)"
            raise a.error("output_padding", expected, list(a.output_padding))
        params = TransposeConvParams(**common)
        filter_dims = Dims(wo, kh, kw, wc)
        expect = [(h - 1) * stride_h - 2 * pad_h + kh, (w - 1) * stride_w - 2 * pad_w + kw]
    if [on, oh, ow] != [n, *expect] or min(expect) < 1:
        raise a.error(
            "out", f"NHWC extent {[n, *expect, oc]} (what the kernel writes)", f"{[on, oh, ow, oc]}"
        )
    return _ConvCall(Dims(n, h, w, c), filter_dims, Dims(n, oh, ow, oc), params)


def _conv_scratch_need(call: _ConvCall, kind: str) -> dict[str, tuple[int, int]]:
    """Per tier: (ctx bytes, output_ctx bytes) as CMSIS-NN's get_buffer_size functions compute them."""
    i, f, o, p = call.input_dims, call.filter_dims, call.output_dims, call.params
    need = {}
    for isa in ISAS:
        if kind == "conv":
            need[isa] = (kconv.convolve_wrapper_s8_get_buffer_size(p, i, f, o, isa), 0)
        elif kind == "depthwise":
            need[isa] = (kdw.depthwise_conv_wrapper_s8_get_buffer_size(p, i, f, o, isa), 0)
        else:
            need[isa] = (
                ktconv.transpose_conv_s8_get_buffer_size(p, i, f, o, isa),
                ktconv.transpose_conv_s8_get_reverse_conv_buffer_size(p, i, f),
            )
    return need


def _conv_operands(a: Args, kind: str, call: _ConvCall, checked: bool):
    """(fn, operands) for a conv-family call: the public wrapper's arguments, or the jit kernel's."""
    i, f, p = call.input_dims, call.filter_dims, call.params
    x = _view(a.input, i.shape)
    weight = a.weight.storage.reshape(f.shape)
    if a.weight.meta.is_constant:
        weight = np.array(weight)  # private and writable: one numba specialization for every path
    quant = _quant(a, call.output_dims.c)
    bias = _constant_int32(a, "bias", call.output_dims.c)
    if checked or not a.weight.meta.is_constant:
        wrapper = {
            "conv": kconv.convolve_wrapper_s8,
            "depthwise": kdw.depthwise_conv_wrapper_s8,
            "transpose": ktconv.transpose_conv_wrapper_s8,
        }[kind]
        return wrapper, (x, weight, bias, p, quant, call.output_hw)
    if bias is None:
        bias = np.zeros(call.output_dims.c, np.int32)
    s, pad, act = p.stride, p.padding, p.activation
    head = (quant.multiplier, quant.shift, p.input_offset, p.output_offset)
    if (kind == "conv" and f.c == i.c) or (kind == "depthwise" and i.c == 1):
        # The exact float32-BLAS GEMM (kernels_py.gemm). A depthwise conv of one input channel is the
        # conv whose OHWI filter is its [1, KH, KW, C_OUT] weight transposed: the same sums, term for term.
        gemm.single_threaded_blas()
        table = gemm.requantize_table(bias, quant.multiplier, quant.shift)
        ohwi = weight if kind == "conv" else weight.transpose(3, 1, 2, 0)
        tail = (s.h, s.w, pad.h, pad.w, p.dilation.h, p.dilation.w, act.min, act.max, f.h, f.w, *call.output_hw)  # fmt: skip
        return gemm.convolve_gemm, (x, gemm.conv_filter_matrix(ohwi), table, *head[2:], *tail)
    if kind == "conv":
        filter2d = weight.reshape(f.n, -1).astype(np.int16)
        tail = (s.h, s.w, pad.h, pad.w, p.dilation.h, p.dilation.w, act.min, act.max, f.h, f.w, *call.output_hw)  # fmt: skip
        return kconv._convolve_kernel, (x, filter2d, bias, *head, *tail)
    if kind == "depthwise" and p.ch_mult == 1 and kdw.rows_kernel_pays(call.output_dims.c, call.output_hw[1]):
        taps, table = kdw.depthwise_row_operands(
            weight, bias, quant.multiplier, quant.shift, call.output_hw[1]
        )
        tail = (s.h, s.w, pad.h, pad.w, p.dilation.h, p.dilation.w, act.min, act.max, *call.output_hw)
        return kdw._depthwise_rows_kernel, (x, taps, table, p.input_offset, p.output_offset, *tail)
    if kind == "depthwise":
        tail = (p.ch_mult, s.h, s.w, pad.h, pad.w, p.dilation.h, p.dilation.w, act.min, act.max, *call.output_hw)  # fmt: skip
        return kdw._depthwise_conv_kernel, (x, weight, bias, *head, *tail)
    tail = (s.h, s.w, pad.h, pad.w, act.min, act.max, *call.output_hw)
    return ktconv._transpose_conv_kernel, (x, weight, bias, *head, *tail)


def _conv_plan(a: Args, fn: Callable, operands: tuple, dst: np.ndarray) -> _Plan:
    """The prepared call. The GEMM route and the depthwise kernels take their output array as their
    last operand and write into the arena view ``dst`` itself (the planner never lets a call's
    output overlap its live input): no copy out of a fresh array per call. (A view that is not
    C-contiguous, which the arena's NHWC tensors never are, gets a fresh array, copied there.)
    The other kernels return a new array, copied there."""
    watch = _watch(a, "input", "weight", "bias", "requantize_multipliers", "requantize_shifts", "out")
    if fn in _WRITE_INTO:
        if dst.flags.c_contiguous:
            return _Plan(a, fn, (*operands, dst), None, watch)
        return _Plan(a, fn, (*operands, None), dst, watch)
    return _Plan(a, fn, operands, dst, watch)


#: The kernels whose last operand is their output array (see `_conv_plan`).
_WRITE_INTO = (gemm.convolve_gemm, kdw._depthwise_rows_kernel, kdw._depthwise_conv_kernel)


def _conv_prepare(kind: str) -> Callable[[Args], _Plan]:
    def prepare(a: Args) -> _Plan:
        call = _conv_call(a, kind)
        fn, operands = _conv_operands(a, kind, call, cortex_m_calls.CHECKED)
        return _conv_plan(a, fn, operands, _view(a.out, call.output_dims.shape))

    return prepare


def _conv_validator(kind: str) -> Callable[[Args], None]:
    def validate(a: Args) -> None:
        call = _conv_call(a, kind)
        need = _conv_scratch_need(call, kind)
        _scratch(a, "scratch", {isa: n[0] for isa, n in need.items()})
        if kind == "transpose":
            _scratch(a, "output_scratch", {isa: n[1] for isa, n in need.items()})
        fn, operands = _conv_operands(a, kind, call, checked=True)
        result = _dry_run(a, fn, np.zeros_like(operands[0]), *operands[1:])
        if result.shape != call.output_dims.shape:  # _conv_call already checked the extent
            raise AssertionError(f"{a.op}: kernel produced {result.shape}, expected {call.output_dims.shape}")
        a.state = _conv_prepare(kind)(a)

    return validate


def _conv_kernel(kind: str) -> Callable[[Args, str], str]:
    def kernel(a: Args, isa: str) -> str:
        c = _conv_call(a, kind)
        if kind == "conv":
            return kconv.select_convolve_kernel(c.params, c.input_dims, c.filter_dims, c.output_dims)
        if kind == "depthwise":
            return kdw.select_depthwise_kernel(c.params, c.input_dims, c.filter_dims, c.output_dims, isa)
        return ktconv.select_transpose_conv_kernel(c.params, c.input_dims)

    return kernel


def _conv_macs(kind: str) -> Callable[[Args], int]:
    def macs(a: Args) -> int:
        c = _conv_call(a, kind)
        i, f, o = c.input_dims, c.filter_dims, c.output_dims
        if kind == "transpose":  # every input pixel times every filter tap, scattered into the output
            return i.n * i.h * i.w * i.c * f.h * f.w * o.c
        per_output = f.h * f.w * (f.c if kind == "conv" else 1)
        return o.n * o.h * o.w * o.c * per_output

    return macs


def _conv_scratch(kind: str) -> Callable[[Args, str], int]:
    def scratch(a: Args, isa: str) -> int:
        return sum(_conv_scratch_need(_conv_call(a, kind), kind)[isa])

    return scratch


def _register_conv(kind: str, schema: str, doc: str) -> None:
    prepare = _conv_prepare(kind)

    def run(a: Args) -> None:
        _execute(a, prepare)

    run.__doc__ = doc
    op = register(schema, kernel=_conv_kernel(kind))(run)
    op.validator(_conv_validator(kind))
    op.mac_count(_conv_macs(kind))
    op.scratch_bytes(_conv_scratch(kind))
    alias(op.name.replace(".out", "_nhwc.out"), op, _nhwc_schema(schema))


_register_conv(
    "conv",
    CONV2D,
    "arm_convolve_wrapper_s8: int8 conv (grouped too), OHWI weight, per-channel requantize (double rounding).",
)
_register_conv(
    "depthwise",
    DEPTHWISE,
    "arm_depthwise_conv_wrapper_s8: int8 depthwise conv, weight [1, KH, KW, C_IN·depth_multiplier], batch 1.",
)
_register_conv(
    "transpose",
    TRANSPOSE,
    "arm_transpose_conv_wrapper_s8: int8 transposed conv, OHWI weight, output (in - 1)·stride - 2·padding + kernel.",
)

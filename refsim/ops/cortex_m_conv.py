"""cortex_m convolutions, linear and batch matmul (ExecuTorch 1.5.1) on kernels_py's CMSIS-NN kernels.

How each op reaches CMSIS-NN, as ExecuTorch's ``backends/cortex_m/ops/op_quantized_*.cpp`` calls it:

| op | CMSIS-NN call | tensors as the C++ reads them |
|---|---|---|
| quantized_conv2d | arm_convolve_wrapper_s8 | input/out sizes NCHW over NHWC bytes; weight OHWI [C_OUT, KH, KW, C_IN/groups] |
| quantized_depthwise_conv2d | arm_depthwise_conv_wrapper_s8 | weight [1, KH, KW, C_OUT]; batch 1; ``depth_multiplier`` = ch_mult |
| quantized_transpose_conv2d | arm_transpose_conv_wrapper_s8 | weight OHWI [C_OUT, KH, KW, C_IN]; ``padding_offsets`` = output_padding (0) |
| quantized_linear | arm_fully_connected_s8 (per tensor) | input [..., K] row major; ``kernel_sum`` is ``ctx.buf`` |
| quantized_batch_matmul | arm_batch_matmul_s8 | lhs [B, M, K], rhs_transposed [B, N, K] (``out = lhs @ rhs^T``) |

The ``_nhwc`` variants (explicit-layout pipeline) take NHWC-*shaped* tensors with contiguous dim_order;
the legacy ops take NCHW-shaped tensors whose dim_order is channels-last (or whose bytes are NHWC anyway:
one channel, or 1x1 spatial extent, exactly the cases ExecuTorch's ``is_channels_last_tensor`` lets
through). Either way the kernel reads NHWC bytes; refsim hands kernels_py a reshaped view of them.

Quirks carried over from ExecuTorch: ``input_offset = -input_zero_point`` and ``output_offset =
output_zero_point``; batch matmul's ``lhs_zero_point``/``rhs_zero_point`` arguments also hold the
*negated* zero points (offsets) despite their names; quantized_linear lists ``activation_max`` before
``activation_min``, carries its multiplier/shift as one-element int lists (the C++ reads element 0:
per-tensor only) and, when exported for MVE, no bias but a constant ``kernel_sum = bias -
input_zp·Σw`` that CMSIS-NN's MVE path reads from ``ctx.buf`` (the DSP/scalar paths read the bias and
ignore ``ctx.buf``, so such a program computes something else on those cores, as a bias-only program
fails on MVE: refsim computes the form the program carries, i.e. what its exporting target computes);
batch matmul clamps to the full int8 range (it has no activation arguments); grouped convs get a zero
bias tensor from the exporter rather than None. Scratch tensors (uint8, memory planned) are CMSIS-NN's ``ctx.buf`` sized by the
``*_get_buffer_size`` of the exporting target; refsim's kernels need none, so they only get checked.

Validators check everything once at load (shapes, dtypes, layouts, ranges) and finish with a dry run of
the kernels_py public wrapper on a zero input, so any argument kernels_py would reject fails at load
as an `OpError`. They also prepare each call (a `_Plan`: NHWC views of the arena, constants copied once,
the kernel's positional operands) in a module cache keyed by the Args object (``Args`` has slots, so
nothing can be stored on it). ``run`` then calls kernels_py's private jit fast path with the prepared
operands: the public wrappers re-validate every call (10-20 µs per op measured, against 1-2 µs for a
prepared call). Set ``CHECKED = True`` to route every call through the public wrappers instead (tests
compare both).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernels_py import conv as kconv
from kernels_py import depthwise as kdw
from kernels_py import fully_connected as kfc
from kernels_py.errors import KernelArgumentError
from kernels_py.types import (
    INT8_MAX,
    INT8_MIN,
    INT32_MAX,
    INT32_MIN,
    Activation,
    BmmParams,
    ConvParams,
    Dims,
    DwConvParams,
    FcParams,
    PerChannelQuantParams,
    PerTensorQuantParams,
    Tile,
    TransposeConvParams,
)
from refsim.ops.divergence import Divergence
from refsim.ops.registry import Args, alias, register
from refsim.pte.model import ScalarType
from refsim.runtime.tensor import TensorRef

ISAS = ("scalar", "dsp", "mve")

#: Route every call through kernels_py's validating public wrappers (slower; for tests).
CHECKED = False

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
LINEAR = (
    "cortex_m::quantized_linear.out(Tensor input, Tensor weights, Tensor? bias, Tensor? kernel_sum, int "
    "input_offset, int filter_offset, int output_offset, int[] requantize_multipliers, int[] "
    "requantize_shifts, int activation_max, int activation_min, *, Tensor(a!) out) -> Tensor(a!)"
)
BATCH_MATMUL = (
    "cortex_m::quantized_batch_matmul.out(Tensor lhs, int lhs_zero_point, Tensor rhs_transposed, int "
    "rhs_zero_point, int output_zero_point, int output_multiplier, int output_shift, Tensor scratch, *, "
    "Tensor(a!) out) -> Tensor(a!)"
)


def _nhwc_schema(schema: str) -> str:
    name, rest = schema.split(".out(", 1)
    return f"{name}_nhwc.out({rest}"


# --- argument checks (each raises a.error naming the argument) --------------------------------------


def _tensor(a: Args, name: str, dtypes: tuple[ScalarType, ...], rank: int | None = None) -> TensorRef:
    t = getattr(a, name)
    if t.scalar_type not in dtypes:
        raise a.error(name, " or ".join(d.name.lower() for d in dtypes), t.scalar_type.name.lower())
    if rank is not None and len(t.sizes) != rank:
        raise a.error(name, f"a {rank}-D tensor", f"sizes {list(t.sizes)}")
    return t


def _contiguous(a: Args, name: str, t: TensorRef) -> None:
    if tuple(t.dim_order) != tuple(range(len(t.sizes))):
        raise a.error(
            name,
            "contiguous (dim_order [0, 1, ...]; the kernel reads its bytes row major)",
            list(t.dim_order),
        )


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


def _int_in(a: Args, name: str, low: int, high: int) -> int:
    value = getattr(a, name)
    if not low <= value <= high:
        raise a.error(name, f"in [{low}, {high}]", value)
    return int(value)


def _activation(a: Args) -> Activation:
    low = _int_in(a, "activation_min", INT8_MIN, INT8_MAX)
    high = _int_in(a, "activation_max", INT8_MIN, INT8_MAX)
    if low > high:
        raise a.error("activation_min", f"<= activation_max ({high})", low)
    return Activation(low, high)


def _constant_int32(a: Args, name: str, length: int, *, any_shape: bool = False) -> np.ndarray | None:
    """An int32 per-channel tensor (or None) of ``length`` values (shape ``(length,)``, or any shape with
    that many elements), flat; a constant is copied once into a private contiguous array."""
    t = getattr(a, name)
    if t is None:
        return None
    _tensor(a, name, (ScalarType.INT32,))
    count_ok = int(np.prod(t.sizes)) == length if any_shape else tuple(t.sizes) == (length,)
    if not count_ok:
        raise a.error(name, f"{length} int32 values (one per output channel)", f"sizes {list(t.sizes)}")
    flat = t.storage.reshape(-1)
    return np.array(flat, np.int32) if t.meta.is_constant else flat


def _check_multipliers(a: Args, name: str, values: np.ndarray | tuple[int, ...]) -> None:
    """Q0.31 multipliers (INT32_MIN is the one value CMSIS-NN's doubling multiply cannot take)."""
    arr = np.asarray(values, np.int64)
    if arr.size and (arr.min() <= INT32_MIN or arr.max() > INT32_MAX):
        raise a.error(name, f"in [{INT32_MIN + 1}, {INT32_MAX}]", (int(arr.min()), int(arr.max())))


def _check_shifts(a: Args, name: str, values: np.ndarray | tuple[int, ...]) -> None:
    arr = np.asarray(values, np.int64)
    if arr.size and (arr.min() < -31 or arr.max() > 30):
        raise a.error(name, "in [-31, 30] (arm_nn_requantize)", (int(arr.min()), int(arr.max())))


def _quant(a: Args, channels: int) -> PerChannelQuantParams:
    multipliers = _constant_int32(a, "requantize_multipliers", channels)
    shifts = _constant_int32(a, "requantize_shifts", channels)
    if multipliers is None or shifts is None:  # the schema makes them non-optional
        raise a.error("requantize_multipliers", "tensors", None)
    _check_multipliers(a, "requantize_multipliers", multipliers)
    _check_shifts(a, "requantize_shifts", shifts)
    return PerChannelQuantParams(multipliers, shifts)


def _scratch(a: Args, name: str, need: dict[str, int]) -> None:
    """The tensor CMSIS-NN gets as ``ctx.buf``. Its size was chosen for the exporting target, which the
    program does not record, so it must be at least what the least demanding tier needs; `scratch_bytes`
    reports the need per tier."""
    t = _tensor(a, name, (ScalarType.UINT8, ScalarType.INT8), 1)
    if t.storage.nbytes < min(need.values()):
        tiers = ", ".join(f"{isa} {n}" for isa, n in need.items())
        raise a.error(
            name,
            f"at least the CMSIS-NN buffer size of some tier ({tiers} bytes)",
            f"{t.storage.nbytes} bytes",
        )


def _dry_run(a: Args, fn: Callable[..., np.ndarray], *operands: Any) -> np.ndarray:
    """Run the validating public wrapper once (on a zero input) so that load rejects whatever it would."""
    try:
        return fn(*operands)
    except KernelArgumentError as e:
        raise a.error(f"{e.argument} (for {e.function})", e.expected, e.found) from None


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
                kconv.transpose_conv_s8_get_buffer_size(p, i, f, o, isa),
                kconv.transpose_conv_s8_get_reverse_conv_buffer_size(p, i, f),
            )
    return need


# --- prepared calls -------------------------------------------------------------------------------------


class _Plan:
    """One call, prepared: ``fn(*operands)`` computes the output, copied into ``dst`` (unless ``dst`` is
    None: the kernel writes in place). ``watch`` are the tensor arguments whose arena views the operands
    hold; a MoveCall that rebinds one makes the plan stale."""

    __slots__ = ("args", "dst", "fn", "operands", "watch")

    def __init__(self, args, fn, operands, dst, watch):
        self.args, self.fn, self.operands, self.dst, self.watch = args, fn, operands, dst, watch

    def fresh(self, a: Args) -> bool:
        return self.args is a and all(getattr(a, name) is ref for name, ref in self.watch)


def _execute(a: Args, prepare: Callable[[Args], _Plan]) -> None:
    plan = a.state
    if plan is None or not plan.fresh(a):
        plan = a.state = prepare(a)
    if plan.dst is None:
        plan.fn(*plan.operands)
    else:
        plan.dst[...] = plan.fn(*plan.operands)


def _view(t: TensorRef, shape: tuple[int, ...]) -> np.ndarray:
    """``t``'s bytes reshaped without copying (so writes land in the arena)."""
    view = t.storage.view()
    view.shape = shape  # raises rather than copy
    return view


def _watch(a: Args, *names: str) -> tuple[tuple[str, TensorRef], ...]:
    """The non-constant tensor arguments among ``names`` (a MoveCall only ever targets those)."""
    refs = ((n, getattr(a, n)) for n in names)
    return tuple((n, t) for n, t in refs if isinstance(t, TensorRef) and not t.meta.is_constant)


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
            "transpose": kconv.transpose_conv_wrapper_s8,
        }[kind]
        return wrapper, (x, weight, bias, p, quant, call.output_hw)
    if bias is None:
        bias = np.zeros(call.output_dims.c, np.int32)
    s, pad, act = p.stride, p.padding, p.activation
    head = (quant.multiplier, quant.shift, p.input_offset, p.output_offset)
    if kind == "conv":
        filter2d = weight.reshape(f.n, -1).astype(np.int16)
        tail = (s.h, s.w, pad.h, pad.w, p.dilation.h, p.dilation.w, act.min, act.max, f.h, f.w, *call.output_hw)  # fmt: skip
        return kconv._convolve_kernel, (x, filter2d, bias, *head, *tail)
    if kind == "depthwise":
        tail = (p.ch_mult, s.h, s.w, pad.h, pad.w, p.dilation.h, p.dilation.w, act.min, act.max, *call.output_hw)  # fmt: skip
        return kdw._depthwise_conv_kernel, (x, weight, bias, *head, *tail)
    tail = (s.h, s.w, pad.h, pad.w, act.min, act.max, *call.output_hw)
    return kconv._transpose_conv_kernel, (x, weight, bias, *head, *tail)


def _conv_prepare(kind: str) -> Callable[[Args], _Plan]:
    def prepare(a: Args) -> _Plan:
        call = _conv_call(a, kind)
        fn, operands = _conv_operands(a, kind, call, CHECKED)
        dst = _view(a.out, call.output_dims.shape)
        watch = _watch(a, "input", "weight", "bias", "requantize_multipliers", "requantize_shifts", "out")
        return _Plan(a, fn, operands, dst, watch)

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
        return kconv.select_transpose_conv_kernel(c.params, c.input_dims)

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


# --- quantized_linear -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _LinearCall:
    rows: int
    depth: int
    channels: int
    params: FcParams
    quant: PerTensorQuantParams


def _linear_call(a: Args) -> _LinearCall:
    x = _tensor(a, "input", (ScalarType.INT8,))
    out = _tensor(a, "out", (ScalarType.INT8,), len(x.sizes))
    w = _tensor(a, "weights", (ScalarType.INT8,), 2)
    for name, t in (("input", x), ("out", out), ("weights", w)):
        if len(t.sizes) < 1 or not t.logical.flags.c_contiguous:
            raise a.error(
                name,
                "row-major bytes (the kernel reads [rows, K] from memory)",
                f"dim_order {list(t.dim_order)}",
            )
    channels, depth = w.sizes
    if not x.sizes or x.sizes[-1] != depth or min(x.sizes) < 1 or channels < 1:
        raise a.error("input", f"[..., K={depth}] (K from weights [C_OUT, K])", f"sizes {list(x.sizes)}")
    if tuple(out.sizes) != (*x.sizes[:-1], channels):
        raise a.error("out", f"sizes {[*x.sizes[:-1], channels]}", f"{list(out.sizes)}")
    multipliers, shifts = a.requantize_multipliers, a.requantize_shifts
    for name, values in (("requantize_multipliers", multipliers), ("requantize_shifts", shifts)):
        if not values or len(set(values)) != 1:
            expected = "one value (ExecuTorch's kernel is per tensor: it reads element 0 only)"
            raise a.error(name, expected, list(values))
    _check_multipliers(a, "requantize_multipliers", multipliers)
    _check_shifts(a, "requantize_shifts", shifts)
    activation = _activation(a)
    params = FcParams(
        _int_in(a, "input_offset", -127, 128),
        _int_in(a, "filter_offset", -127, 128),
        _int_in(a, "output_offset", INT8_MIN, INT8_MAX),
        activation,
    )
    rows = int(np.prod(x.sizes[:-1], dtype=np.int64))
    return _LinearCall(
        rows, depth, channels, params, PerTensorQuantParams(int(multipliers[0]), int(shifts[0]))
    )


def _linear_operands(a: Args, call: _LinearCall, checked: bool):
    x = _view(a.input, (call.rows, call.depth))
    w = a.weights.storage.reshape(call.channels, call.depth)
    bias = _constant_int32(a, "bias", call.channels)
    kernel_sum = _constant_int32(a, "kernel_sum", call.channels, any_shape=True)
    if bias is not None and kernel_sum is not None:
        raise a.error(
            "bias",
            "None when kernel_sum is given (CMSIS-NN's MVE path reads only kernel_sum, DSP/scalar only bias)",
            "a tensor",
        )
    w = np.array(w) if a.weights.meta.is_constant else w
    p, q = call.params, call.quant
    if checked:
        if kernel_sum is not None:
            return kfc.fully_connected_s8_kernel_sum, (x, w, kernel_sum, p, q)
        return kfc.fully_connected_s8, (x, w, bias, p, q)
    mult, shift = np.full(call.channels, q.multiplier, np.int32), np.full(call.channels, q.shift, np.int32)
    act = p.activation
    if kernel_sum is not None:
        operands = (x, w, kernel_sum, p.filter_offset, p.output_offset, mult, shift, act.min, act.max)
        return kfc._kernel_sum_fc_kernel, operands
    if bias is None:
        bias = np.zeros(call.channels, np.int32)
    operands = (x, w, bias, p.input_offset, p.filter_offset, p.output_offset, mult, shift, act.min, act.max)
    return kfc._fully_connected_kernel, operands


def _linear_prepare(a: Args) -> _Plan:
    call = _linear_call(a)
    fn, operands = _linear_operands(a, call, CHECKED)
    dst = _view(a.out, (call.rows, call.channels))
    return _Plan(a, fn, operands, dst, _watch(a, "input", "weights", "bias", "kernel_sum", "out"))


@register(LINEAR, kernel="arm_fully_connected_s8")
def quantized_linear(a: Args) -> None:
    """arm_fully_connected_s8, per tensor, over [rows, K] (every leading dim is a row). With ``kernel_sum``
    (MVE export) the MVE form ``kernel_sum + Σx·w + filter_offset·Σx``, else the bias form."""
    _execute(a, _linear_prepare)


@quantized_linear.validator
def _validate_linear(a: Args) -> None:
    call = _linear_call(a)
    fn, operands = _linear_operands(a, call, checked=True)
    _dry_run(a, fn, np.zeros_like(operands[0]), *operands[1:])
    a.state = _linear_prepare(a)


@quantized_linear.mac_count
def _linear_macs(a: Args) -> int:
    call = _linear_call(a)
    return call.rows * call.depth * call.channels


@quantized_linear.scratch_bytes
def _linear_scratch(a: Args, isa: str) -> int:
    return 0  # the MVE kernel sums are a constant tensor (kernel_sum), not scratch


def _linear_divergences(a: Args, isa: str) -> list[Divergence]:
    """arm_fully_connected_s8 reads ``ctx.buf`` (the kernel sums) on MVE only, the bias on
    scalar/DSP only (CMSIS-NN Source/FullyConnectedFunctions/arm_fully_connected_s8.c)."""
    if a.kernel_sum is not None and isa != "mve":
        reason = (
            f"kernel_sum (an MVE export's bias - input_zp·Σw) is CMSIS-NN's ctx.buf, which the {isa} "
            "arm_fully_connected_s8 ignores; with no bias tensor that build leaves the bias out "
            "(refsim computes the MVE form the program carries)"
        )
        return [Divergence(a.op, a.instruction, "ignored_argument", ("kernel_sum", "bias"), reason)]
    if a.kernel_sum is None and isa == "mve":
        reason = (
            "no kernel_sum: CMSIS-NN's MVE arm_fully_connected_s8 returns ARM_CMSIS_NN_ARG_ERROR "
            "when ctx.buf is NULL (refsim computes the bias form the program carries)"
        )
        return [Divergence(a.op, a.instruction, "device_error", ("kernel_sum",), reason)]
    return []


quantized_linear.divergences = _linear_divergences


# --- quantized_batch_matmul --------------------------------------------------------------------------


def _bmm_call(a: Args) -> tuple[tuple[int, int, int, int], BmmParams, PerTensorQuantParams]:
    lhs = _tensor(a, "lhs", (ScalarType.INT8,), 3)
    rhs = _tensor(a, "rhs_transposed", (ScalarType.INT8,), 3)
    out = _tensor(a, "out", (ScalarType.INT8,), 3)
    for name, t in (("lhs", lhs), ("rhs_transposed", rhs), ("out", out)):
        _contiguous(a, name, t)
    batch, rows, depth = lhs.sizes
    if rhs.sizes[0] != batch or rhs.sizes[2] != depth or min(batch, rows, depth, rhs.sizes[1]) < 1:
        raise a.error(
            "rhs_transposed",
            f"[B={batch}, N, K={depth}] (rhs already transposed)",
            f"sizes {list(rhs.sizes)}",
        )
    cols = rhs.sizes[1]
    if tuple(out.sizes) != (batch, rows, cols):
        raise a.error("out", f"sizes {[batch, rows, cols]}", f"{list(out.sizes)}")
    _check_multipliers(a, "output_multiplier", (a.output_multiplier,))
    _check_shifts(a, "output_shift", (a.output_shift,))
    fc = FcParams(
        _int_in(a, "lhs_zero_point", -127, 128),  # holds -zero_point: an offset
        _int_in(a, "rhs_zero_point", -127, 128),
        _int_in(a, "output_zero_point", INT8_MIN, INT8_MAX),
    )
    return (
        (batch, rows, cols, depth),
        BmmParams(fc_params=fc),
        PerTensorQuantParams(int(a.output_multiplier), int(a.output_shift)),
    )


def _bmm_need(cols: int) -> dict[str, int]:
    """arm_fully_connected_s8_get_buffer_size(out_dims): the MVE kernel sums of one rhs matrix."""
    return {"scalar": 0, "dsp": 0, "mve": 4 * cols}


def _bmm_prepare(a: Args) -> _Plan:
    (batch, rows, cols, depth), bmm, q = _bmm_call(a)
    watch = _watch(a, "lhs", "rhs_transposed", "out")
    if CHECKED:
        lhs, rhs = _view(a.lhs, (batch, rows, depth)), _view(a.rhs_transposed, (batch, cols, depth))
        return _Plan(a, kfc.batch_matmul_s8, (lhs, rhs, bmm, q), _view(a.out, (batch, rows, cols)), watch)
    lhs, rhs = _view(a.lhs, (1, batch, rows, depth)), _view(a.rhs_transposed, (1, batch, cols, depth))
    fc = bmm.fc_params
    operands = (lhs, rhs, fc.input_offset, fc.filter_offset, fc.output_offset, q.multiplier, q.shift)
    operands += (INT8_MIN, INT8_MAX, _view(a.out, (1, batch, rows, cols)))
    return _Plan(a, kfc._batch_matmul_kernel, operands, None, watch)


@register(BATCH_MATMUL, kernel="arm_batch_matmul_s8")
def quantized_batch_matmul(a: Args) -> None:
    """arm_batch_matmul_s8: ``out[b] = requantize((lhs[b] + lhs_offset) @ (rhs_transposed[b] + rhs_offset)^T)``,
    per tensor, full int8 clamp."""
    _execute(a, _bmm_prepare)


@quantized_batch_matmul.validator
def _validate_bmm(a: Args) -> None:
    (batch, rows, cols, depth), bmm, q = _bmm_call(a)
    _scratch(a, "scratch", _bmm_need(cols))
    lhs = np.zeros((batch, rows, depth), np.int8)
    _dry_run(a, kfc.batch_matmul_s8, lhs, np.array(a.rhs_transposed.storage), bmm, q)
    a.state = _bmm_prepare(a)


@quantized_batch_matmul.mac_count
def _bmm_macs(a: Args) -> int:
    (batch, rows, cols, depth), _, _ = _bmm_call(a)
    return batch * rows * cols * depth


@quantized_batch_matmul.scratch_bytes
def _bmm_scratch(a: Args, isa: str) -> int:
    return _bmm_need(_bmm_call(a)[0][2])[isa]

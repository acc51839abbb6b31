"""What each TFLM kernel allocates, replayed call by call from its Init and Prepare.

One entry per builtin operator and kernel set: ``cmsis_nn`` (TFLM built with
``OPTIMIZED_KERNEL_DIR=cmsis_nn`` for a Cortex-M core: kernels/cmsis_nn/*.cc where they exist, the
reference kernels elsewhere) and ``reference`` (kernels/*.cc, what the ``tflite-micro`` wheel links).
Each names

- the builtin params struct its flatbuffer parser allocates (core/api/flatbuffer_conversions.cc,
  ``SafeBuiltinDataAllocator::Allocate<T>``: ``sizeof(T)``, ``alignof(T)``),
- the struct its ``Init`` hands to ``AllocatePersistentBuffer`` (16-byte aligned),
- its ``Prepare`` as the ordered calls it makes: temp TfLiteTensors (``AllocateTempInputTensor`` /
  ``AllocateTempOutputTensor``; freed only at the end of the node, so they add up), persistent
  per-channel arrays, scratch requests with CMSIS-NN's ``*_get_buffer_size`` for the core's tier.

Sources are tensorflow/tflite-micro @ 90b983c2 and ARM-software/CMSIS-NN @ 4ab83cc3 (the commit that
TFLM pins; its get_buffer_size files are identical to HEAD's, which kernels_py ports). An operator or a
tensor type not modelled here is a RefsimError naming it, never a guess.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from kernels_py.conv import convolve_s8_get_buffer_size, convolve_wrapper_s8_get_buffer_size
from kernels_py.depthwise import depthwise_conv_wrapper_s8_get_buffer_size
from kernels_py.pooling import avgpool_s8_get_buffer_size
from kernels_py.types import ConvParams, Dims, DwConvParams, Tile
from refsim.errors import RefsimError
from refsim.tflite.model import Operator, Tensor
from refsim.tflite.schema import Padding, TensorType

KERNEL_SETS = ("cmsis_nn", "reference")

_CONV = "kernels/conv_common.cc"
_DW = "kernels/depthwise_conv_common.cc"


class UnsupportedKernel(RefsimError):
    """TFLM's allocations for this operator (or its tensor types) are not modelled."""


class PrepareContext(Protocol):
    """The MicroContext calls a Prepare makes (implemented by arena.Replay)."""

    def temp_tensor(self, index: int | None, source: str) -> Tensor | None: ...
    def persistent(self, nbytes: int, what: str, source: str) -> None: ...
    def scratch(self, nbytes: int, what: str, source: str) -> None: ...
    def is_constant(self, index: int) -> bool: ...


@dataclass(frozen=True)
class KernelConfig:
    kernel_set: str  # "cmsis_nn" | "reference"
    isa: str = "scalar"  # CMSIS-NN tier the core compiles: scalar | dsp | mve
    optimized_for_speed: bool = True  # TFLM Makefile default OPTIMIZE_KERNELS_FOR=KERNELS_OPTIMIZED_FOR_SPEED


@dataclass(frozen=True)
class Kernel:
    params: str | None  # builtin params struct (sizes key) or None
    op_data: str | None  # Init's struct (sizes key) or None (no Init)
    op_data_source: str
    prepare: Callable[[PrepareContext, Operator, tuple[Tensor, ...], dict, KernelConfig], None]


def _input(op: Operator, i: int) -> int | None:
    """micro_context.cc GetTensorIndex: None for an index past the list or an optional -1."""
    return op.inputs[i] if i < len(op.inputs) and op.inputs[i] >= 0 else None


def _output(op: Operator, i: int) -> int | None:
    return op.outputs[i] if i < len(op.outputs) and op.outputs[i] >= 0 else None


def _need(t: Tensor | None, what: str) -> Tensor:
    if t is None:
        raise UnsupportedKernel(f"TFLM arena: the operator has no {what} tensor")
    return t


def _int8_or_float(op_name: str, t: Tensor) -> None:
    if t.type not in (TensorType.INT8, TensorType.FLOAT32):
        raise UnsupportedKernel(
            f"TFLM arena: {op_name} with {t.type.name} tensors is not modelled (int8 and float32 are)"
        )


def _padding(options: dict, in_h: int, in_w: int, f_h: int, f_w: int) -> Tile:
    """kernels/padding.h ComputePaddingHeightWidth: the output size TFLite computes, then half the
    total padding (rounded down)."""
    same = Padding(options["padding"]) == Padding.SAME  # an int from an in-memory ModelBuilder model

    def one(stride: int, dilation: int, size: int, fsize: int) -> int:
        eff = (fsize - 1) * dilation + 1
        out = (size + stride - 1) // stride if same else (size - eff + stride) // stride
        return max(((out - 1) * stride + eff - size), 0) // 2

    return Tile(
        h=one(options["stride_h"], options["dilation_h_factor"], in_h, f_h),
        w=one(options["stride_w"], options["dilation_w_factor"], in_w, f_w),
    )


def _nhwc(t: Tensor) -> Dims:
    if len(t.shape) != 4:
        raise UnsupportedKernel(f"TFLM arena: expected a 4-D tensor, found shape {t.shape}")
    return Dims(*t.shape)


# --- CONV_2D -------------------------------------------------------------------------------------


def _calculate_op_data_conv(ctx: PrepareContext, op: Operator, source: str) -> None:
    for index in (_input(op, 0), _input(op, 1), _input(op, 2), _output(op, 0)):
        ctx.temp_tensor(index, f"{source}:CalculateOpData (input, filter, bias, output)")


def _conv_cmsis(ctx, op, tensors, options, cfg) -> None:
    src = "kernels/cmsis_nn/conv.cc:Prepare"
    x = _need(ctx.temp_tensor(_input(op, 0), src), "input")
    w = _need(ctx.temp_tensor(_input(op, 1), src), "filter")
    y = _need(ctx.temp_tensor(_output(op, 0), src), "output")
    # TFLM asks AllocateTempOutputTensor for the bias (kConvBiasTensor = 2 of a 1-output list): none.
    ctx.temp_tensor(_output(op, 2), src)
    _int8_or_float("CONV_2D", x)
    if x.type == TensorType.INT8:
        for what in ("per_channel_output_multiplier", "per_channel_output_shift"):
            ctx.persistent(4 * w.shape[0], what, src)
    _calculate_op_data_conv(ctx, op, _CONV)
    if x.type == TensorType.INT8:
        if w.type != TensorType.INT8:
            raise UnsupportedKernel(f"TFLM arena: CONV_2D with {w.type.name} weights is not modelled")
        xd, wd, yd = _nhwc(x), _nhwc(w), _nhwc(y)
        filter_dims = Dims(1, wd.h, wd.w, wd.c)
        params = ConvParams(
            stride=Tile(h=options["stride_h"], w=options["stride_w"]),
            padding=_padding(options, xd.h, xd.w, wd.h, wd.w),
            dilation=Tile(h=options["dilation_h_factor"], w=options["dilation_w_factor"]),
        )
        if xd.c != wd.c:
            # Grouped: CMSIS-NN 4ab83cc3's arm_nn_is_convolve_1x1 / _1_x_n both test
            # input C == filter C, so the size routing falls to arm_convolve_s8_get_buffer_size.
            size = convolve_s8_get_buffer_size(xd, filter_dims, cfg.isa)
        else:
            size = convolve_wrapper_s8_get_buffer_size(params, xd, filter_dims, yd, cfg.isa)
        if size > 0:
            ctx.scratch(size, "arm_convolve_wrapper_s8_get_buffer_size", src)


def _conv_reference(ctx, op, tensors, options, cfg) -> None:
    src = f"{_CONV}:ConvPrepare"
    y = _need(ctx.temp_tensor(_output(op, 0), src), "output")
    x = _need(ctx.temp_tensor(_input(op, 0), src), "input")
    w = _need(ctx.temp_tensor(_input(op, 1), src), "filter")
    del y
    _int8_or_float("CONV_2D", x)
    if w.type == TensorType.INT4:
        raise UnsupportedKernel("TFLM arena: CONV_2D with INT4 weights is not modelled")
    for what in ("per_channel_output_multiplier", "per_channel_output_shift"):
        ctx.persistent(4 * w.shape[0], what, src)
    _calculate_op_data_conv(ctx, op, _CONV)


# --- DEPTHWISE_CONV_2D ---------------------------------------------------------------------------


def _dw_cmsis(ctx, op, tensors, options, cfg) -> None:
    src = "kernels/cmsis_nn/depthwise_conv.cc:Prepare"
    x = _need(ctx.temp_tensor(_input(op, 0), src), "input")
    w = _need(ctx.temp_tensor(_input(op, 1), src), "filter")
    y = _need(ctx.temp_tensor(_output(op, 0), src), "output")
    _int8_or_float("DEPTHWISE_CONV_2D", x)
    if x.type == TensorType.INT8:
        for what in ("per_channel_output_multiplier", "per_channel_output_shift"):
            ctx.persistent(4 * w.shape[3], what, src)
    _calculate_op_data_conv(ctx, op, _DW)
    if x.type == TensorType.INT8:
        if w.type != TensorType.INT8:
            raise UnsupportedKernel(
                f"TFLM arena: DEPTHWISE_CONV_2D with {w.type.name} weights is not modelled"
            )
        xd, wd, yd = _nhwc(x), _nhwc(w), _nhwc(y)
        padding = _padding(options, xd.h, xd.w, wd.h, wd.w)
        if cfg.isa == "mve" and xd.c == 1 and yd.c > 1:
            # TFLM leaves dw_conv_params.stride unset; the MVE to-conv size routing reads it.
            raise UnsupportedKernel(
                "TFLM arena: DEPTHWISE_CONV_2D with one input channel on MVE reads an uninitialised "
                "stride in TFLM's Prepare (kernels/cmsis_nn/depthwise_conv.cc); not predictable"
            )
        params = DwConvParams(
            stride=Tile(h=options["stride_h"], w=options["stride_w"]),
            padding=padding,
            dilation=Tile(h=options["dilation_h_factor"], w=options["dilation_w_factor"]),
        )
        size = depthwise_conv_wrapper_s8_get_buffer_size(
            params, Dims(xd.n, xd.h, xd.w, xd.c), Dims(1, wd.h, wd.w, yd.c), yd, cfg.isa
        )
        if size > 0:
            ctx.scratch(size, "arm_depthwise_conv_wrapper_s8_get_buffer_size", src)


def _dw_reference(ctx, op, tensors, options, cfg) -> None:
    src = f"{_DW}:DepthwiseConvPrepare"
    ctx.temp_tensor(_output(op, 0), src)
    x = _need(ctx.temp_tensor(_input(op, 0), src), "input")
    w = _need(ctx.temp_tensor(_input(op, 1), src), "filter")
    _int8_or_float("DEPTHWISE_CONV_2D", x)
    if w.type == TensorType.INT4:
        raise UnsupportedKernel("TFLM arena: DEPTHWISE_CONV_2D with INT4 weights is not modelled")
    for what in ("per_channel_output_multiplier", "per_channel_output_shift"):
        ctx.persistent(4 * w.shape[3], what, src)
    _calculate_op_data_conv(ctx, op, _DW)


# --- FULLY_CONNECTED -----------------------------------------------------------------------------


def _fc_temps(ctx, op, src) -> tuple[Tensor, Tensor, Tensor | None, Tensor]:
    x = _need(ctx.temp_tensor(_input(op, 0), src), "input")
    w = _need(ctx.temp_tensor(_input(op, 1), src), "filter")
    b = ctx.temp_tensor(_input(op, 2), src)
    y = _need(ctx.temp_tensor(_output(op, 0), src), "output")
    _int8_or_float("FULLY_CONNECTED", x)
    if w.type not in (TensorType.INT8, TensorType.FLOAT32):
        raise UnsupportedKernel(f"TFLM arena: FULLY_CONNECTED with {w.type.name} weights is not modelled")
    return x, w, b, y


def _fc_per_channel(ctx, x: Tensor, w: Tensor) -> bool:
    """fully_connected_common.cc CalculateOpDataFullyConnected: per-channel weights get two arrays."""
    q = w.quantization
    per_channel = x.type != TensorType.FLOAT32 and q is not None and len(q.scale) > 1
    if per_channel:
        src = "kernels/fully_connected_common.cc:CalculateOpDataFullyConnected"
        for what in ("per_channel_output_multiplier", "per_channel_output_shift"):
            ctx.persistent(4 * len(q.scale), what, src)
    return per_channel


def _fc_cmsis(ctx, op, tensors, options, cfg) -> None:
    src = "kernels/cmsis_nn/fully_connected.cc:Prepare"
    x, w, b, y = _fc_temps(ctx, op, src)
    per_channel = _fc_per_channel(ctx, x, w)
    if x.type != TensorType.INT8:
        return
    accum_depth, output_depth = w.shape[-1], y.shape[-1]
    if len(y.shape) > 2 and accum_depth % 4 == 0:
        if not per_channel:
            ctx.scratch(output_depth * 4 * 2, "per-tensor multipliers for the 1x1-conv route", src)
        return  # arm_convolve_1x1_s8_fast_get_buffer_size: 0 with GCC
    size = 4 * output_depth if cfg.isa == "mve" else 0  # arm_fully_connected_s8_get_buffer_size
    constant = _is_constant(ctx, _input(op, 1))
    bias_ok = b is None or _is_constant(ctx, _input(op, 2))
    if cfg.optimized_for_speed and size > 0 and constant and bias_ok:
        ctx.persistent(size, "kernel_sums (arm_vector_sum_s8, KERNELS_OPTIMIZED_FOR_SPEED)", src)
        size = 0
    if size > 0:
        ctx.scratch(size, "arm_fully_connected_s8_get_buffer_size", src)


def _is_constant(ctx, index: int | None) -> bool:
    return index is not None and ctx.is_constant(index)


def _fc_reference(ctx, op, tensors, options, cfg) -> None:
    x, w, _, _ = _fc_temps(ctx, op, "kernels/fully_connected.cc:FullyConnectedPrepare")
    _fc_per_channel(ctx, x, w)


# --- pooling, softmax, reshape, add --------------------------------------------------------------


def _pool_common(ctx, op) -> Tensor:
    src = "kernels/pooling_common.cc:PoolingPrepare"
    x = _need(ctx.temp_tensor(_input(op, 0), src), "input")
    ctx.temp_tensor(_output(op, 0), src)
    _int8_or_float("pooling", x)
    return x


def _avg_pool_cmsis(ctx, op, tensors, options, cfg) -> None:
    _pool_common(ctx, op)
    src = "kernels/cmsis_nn/pooling.cc:AveragePrepare"
    x = _need(ctx.temp_tensor(_input(op, 0), src), "input")
    y = _need(ctx.temp_tensor(_output(op, 0), src), "output")
    if x.type == TensorType.INT8:
        size = avgpool_s8_get_buffer_size(y.shape[2], y.shape[3], cfg.isa)
        if size > 0:
            ctx.scratch(size, "arm_avgpool_s8_get_buffer_size", src)


def _pool_only(ctx, op, tensors, options, cfg) -> None:
    _pool_common(ctx, op)


def _softmax(source: str):
    def prepare(ctx, op, tensors, options, cfg) -> None:
        x = _need(ctx.temp_tensor(_input(op, 0), source), "input")
        y = _need(ctx.temp_tensor(_output(op, 0), source), "output")
        if x.type == TensorType.INT16 or y.type != x.type:
            raise UnsupportedKernel(
                f"TFLM arena: SOFTMAX {x.type.name} -> {y.type.name} is not modelled (int8 and float32 are)"
            )
        _int8_or_float("SOFTMAX", x)

    return prepare


def _reshape(ctx, op, tensors, options, cfg) -> None:
    src = "kernels/reshape_common.cc:ReshapeOutput"
    ctx.temp_tensor(_input(op, 0), src)
    y = _need(ctx.temp_tensor(_output(op, 0), src), "output")
    if -1 in y.shape:
        raise UnsupportedKernel("TFLM arena: RESHAPE to a shape with -1 (writable dims copy) is not modelled")


def _add(source: str):
    def prepare(ctx, op, tensors, options, cfg) -> None:
        for index in (_input(op, 0), _input(op, 1), _output(op, 0)):
            t = _need(ctx.temp_tensor(index, source), "input/output")
            _int8_or_float("ADD", t)

    return prepare


def _temps(source: str, *order: str):
    """A Prepare that only takes temp tensors, in ``order``: ``"in<i>"``, ``"out<i>"``, or ``"in*"``
    (every input in turn); its types must be int8 or float32."""

    def prepare(ctx, op, tensors, options, cfg) -> None:
        for item in order:
            kinds = range(len(op.inputs)) if item == "in*" else [int(item[-1])]
            for i in kinds:
                index = _output(op, i) if item.startswith("out") else _input(op, i)
                t = ctx.temp_tensor(index, source)
                if t is not None and t.type not in (TensorType.INT8, TensorType.FLOAT32, TensorType.INT32):
                    raise UnsupportedKernel(
                        f"TFLM arena: {t.type.name} tensors are not modelled here ({source})"
                    )

    return prepare


def _mean(ctx, op, tensors, options, cfg) -> None:
    """reduce_common.cc PrepareMeanOrSumHelper, then PrepareSimple."""
    src = "kernels/reduce_common.cc:PrepareMeanOrSumHelper"
    x = _need(ctx.temp_tensor(_input(op, 0), src), "input")
    y = _need(ctx.temp_tensor(_output(op, 0), src), "output")
    axis = _need(ctx.temp_tensor(_input(op, 1), src), "axis")
    _int8_or_float("MEAN", x)
    count = 1
    for d in axis.shape:
        count *= d
    if x.type == TensorType.INT8:
        out = 1
        for d in y.shape:
            out *= d
        ctx.scratch(4 * out, "int32 accumulators (num_output_elements)", src)
    ctx.scratch(4 * len(x.shape), "input iterator (input dims)", src)
    ctx.scratch(4 * count, "resolved axes (num_axis)", src)
    simple = "kernels/reduce_common.cc:PrepareSimple"
    ctx.temp_tensor(_input(op, 0), simple)
    ctx.temp_tensor(_input(op, 1), simple)
    if x.type == TensorType.INT8:
        ctx.temp_tensor(_output(op, 0), simple)


#: Operators whose Init and Prepare are the same in both kernel sets (the cmsis_nn build's mul.cc,
#: pad.cc and transpose.cc register mul_common.cc's, pad_common.cc's and transpose_common.cc's).
_COMMON: dict[str, Kernel] = {
    "QUANTIZE": Kernel(None, "OpDataQuantizeReference", "kernels/quantize.cc:InitQuantizeReference",
                       _temps("kernels/quantize_common.cc:PrepareQuantizeReference", "in0", "out0")),
    "DEQUANTIZE": Kernel(None, "DequantizeOpData", "kernels/dequantize.cc:DequantizeInit",
                         _temps("kernels/dequantize_common.cc:DequantizePrepare", "in0", "out0")),
    "MUL": Kernel("TfLiteMulParams", "OpDataMul", "kernels/mul_common.cc:MulInit",
                  _temps("kernels/mul_common.cc:CalculateOpDataMul", "in0", "in1", "out0")),
    "PAD": Kernel(None, "pad_OpData", "kernels/pad_common.cc:PadInit",
                  _temps("kernels/pad_common.cc:PadPrepare", "in0", "in1", "in2", "out0")),
    "RELU": Kernel(None, "ReluOpData", "kernels/activations.cc:ReluInit",
                   _temps("kernels/activations_common.cc:ReluPrepare", "in0", "out0")),
    "RELU6": Kernel(None, "Relu6OpData", "kernels/activations.cc:Relu6Init",
                    _temps("kernels/activations_common.cc:Relu6Prepare", "in0")),
    "LOGISTIC": Kernel(None, "OpDataLogistic", "kernels/logistic.cc:LogisticInit",
                       _temps("kernels/logistic_common.cc:CalculateArithmeticOpDataLogistic", "in0", "out0")),
    "TANH": Kernel(None, "tanh_OpData", "kernels/tanh.cc:TanhInit",
                   _temps("kernels/tanh.cc:TanhPrepare, CalculateArithmeticOpData", "in0", "in0", "out0")),
    "HARD_SWISH": Kernel(None, "HardSwishParams", "kernels/hard_swish.cc:HardSwishInit",
                         _temps("kernels/hard_swish_common.cc:HardSwishPrepare", "in0", "out0")),
    "TRANSPOSE": Kernel(None, None, "kernels/transpose.cc (no Init)",
                        _temps("kernels/transpose.h:TransposeContext", "in0", "in1", "out0")),
    "CONCATENATION": Kernel("TfLiteConcatenationParams", "concatenation_OpData",
                            "kernels/concatenation.cc:ConcatenationInit",
                            _temps("kernels/concatenation.cc:ConcatenationPrepare", "in0", "out0", "in*")),
    "STRIDED_SLICE": Kernel("TfLiteStridedSliceParams", "StridedSliceParams",
                            "kernels/strided_slice_common.cc:StridedSliceInit",
                            _temps("kernels/strided_slice_common.cc:StridedSliceContext", "in0", "in1", "in2", "in3", "out0")),
    "MEAN": Kernel("TfLiteReducerParams", "OpDataReduce", "kernels/reduce.cc:InitReduce", _mean),
    "SQUEEZE": Kernel("TfLiteSqueezeParams", None, "kernels/squeeze.cc (no Init)",
                      _temps("kernels/squeeze.cc:SqueezeContext", "in0", "out0")),
}  # fmt: skip


KERNELS: dict[tuple[str, str], Kernel] = {
    ("CONV_2D", "cmsis_nn"): Kernel("TfLiteConvParams", "cmsis_nn_conv_OpData", "kernels/cmsis_nn/conv.cc:Init", _conv_cmsis),
    ("CONV_2D", "reference"): Kernel("TfLiteConvParams", "OpDataConv", f"{_CONV}:ConvInit", _conv_reference),
    ("DEPTHWISE_CONV_2D", "cmsis_nn"): Kernel(
        "TfLiteDepthwiseConvParams", "cmsis_nn_depthwise_conv_OpData", "kernels/cmsis_nn/depthwise_conv.cc:Init", _dw_cmsis
    ),
    ("DEPTHWISE_CONV_2D", "reference"): Kernel(
        "TfLiteDepthwiseConvParams", "OpDataConv", "kernels/depthwise_conv.cc:DepthwiseConvInit", _dw_reference
    ),
    ("FULLY_CONNECTED", "cmsis_nn"): Kernel(
        "TfLiteFullyConnectedParams", "cmsis_nn_fully_connected_OpData", "kernels/cmsis_nn/fully_connected.cc:Init", _fc_cmsis
    ),
    ("FULLY_CONNECTED", "reference"): Kernel(
        "TfLiteFullyConnectedParams", "OpDataFullyConnected", "kernels/fully_connected.cc:FullyConnectedInit", _fc_reference
    ),
    ("AVERAGE_POOL_2D", "cmsis_nn"): Kernel(
        "TfLitePoolParams", "cmsis_nn_pooling_OpData", "kernels/cmsis_nn/pooling.cc:Init", _avg_pool_cmsis
    ),
    ("MAX_POOL_2D", "cmsis_nn"): Kernel("TfLitePoolParams", "cmsis_nn_pooling_OpData", "kernels/cmsis_nn/pooling.cc:Init", _pool_only),
    ("AVERAGE_POOL_2D", "reference"): Kernel("TfLitePoolParams", "OpDataPooling", "kernels/pooling.cc:PoolInit", _pool_only),
    ("MAX_POOL_2D", "reference"): Kernel("TfLitePoolParams", "OpDataPooling", "kernels/pooling.cc:PoolInit", _pool_only),
    ("SOFTMAX", "cmsis_nn"): Kernel(
        "TfLiteSoftmaxParams", "cmsis_nn_softmax_OpData", "kernels/cmsis_nn/softmax.cc:Init", _softmax("kernels/cmsis_nn/softmax.cc:Prepare")
    ),
    ("SOFTMAX", "reference"): Kernel(
        "TfLiteSoftmaxParams", "SoftmaxParams", "kernels/softmax_common.cc:SoftmaxInit", _softmax("kernels/softmax_common.cc:SoftmaxPrepare")
    ),
    ("RESHAPE", "cmsis_nn"): Kernel("TfLiteReshapeParams", None, "kernels/reshape.cc (no Init)", _reshape),
    ("RESHAPE", "reference"): Kernel("TfLiteReshapeParams", None, "kernels/reshape.cc (no Init)", _reshape),
    ("ADD", "cmsis_nn"): Kernel("TfLiteAddParams", "cmsis_nn_add_OpData", "kernels/cmsis_nn/add.cc:InitAdd", _add("kernels/cmsis_nn/add.cc:PrepareAdd")),
    ("ADD", "reference"): Kernel("TfLiteAddParams", "OpDataAdd", "kernels/add.cc:AddInit", _add("kernels/add_common.cc:AddPrepare")),
}  # fmt: skip


KERNELS.update({(name, ks): k for name, k in _COMMON.items() for ks in KERNEL_SETS})


def kernel_for(op_name: str, index: int, cfg: KernelConfig) -> Kernel:
    try:
        return KERNELS[(op_name, cfg.kernel_set)]
    except KeyError:
        modelled = sorted({name for name, _ in KERNELS})
        raise UnsupportedKernel(
            f"TFLM arena: operator {index} ({op_name}) is not modelled for TFLM's {cfg.kernel_set} kernels "
            f"(modelled: {', '.join(modelled)})"
        ) from None

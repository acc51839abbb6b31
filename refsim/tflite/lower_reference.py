"""Lowerings of the builtins TFLM runs with its reference kernels (int8, and QUANTIZE/DEQUANTIZE
between int8 and float32) to the tflm:: ops of refsim/ops/tflm_reference.py.

Each lowering passes the tensors, their float32 scales and int32 zero points and the decoded
builtin options; the op's validator does TFLM's Prepare arithmetic. What is refused here, with
the operator named (`LowerContext.error`): another tensor type (int16 and uint8 activations,
int16/int32 QUANTIZE outputs, ...), per-channel activation quantization, and options or
tensors TFLM's Prepare itself refuses (a non-constant begin/end/strides, a fused activation on
CONCATENATION, int8 concatenation inputs quantized unlike the output). STRIDED_SLICE,
CONCATENATION and SQUEEZE move bytes and run on int8, int16, int32 and bool here (float32 is
the float lowerings'); SQUEEZE on any type refsim holds.
"""

from __future__ import annotations

import numpy as np

from refsim.tflite.lower import Call, LowerContext, lowering
from refsim.tflite.model import OPTIONAL_TENSOR
from refsim.tflite.schema import ActivationFunctionType, BuiltinOperator, TensorType

B = BuiltinOperator
INT8, FLOAT32, INT32 = TensorType.INT8, TensorType.FLOAT32, TensorType.INT32
_COPY_TYPES = (TensorType.INT8, TensorType.INT16, TensorType.INT32, TensorType.BOOL)


def _quant(cx: LowerContext, x: int, y: int) -> dict:
    return {
        "input_scale": cx.scale(x),
        "input_zero_point": cx.zero_point(x),
        "output_scale": cx.scale(y),
        "output_zero_point": cx.zero_point(y),
    }


def _one_in_one_out(cx: LowerContext) -> tuple[int, int]:
    cx.require(len(cx.op.inputs) == 1 and len(cx.op.outputs) == 1, "expected 1 input and 1 output")
    return cx.input(0), cx.output(0)


def _int8_unary(op: str):
    def lower(cx: LowerContext) -> Call:
        x, y = _one_in_one_out(cx)
        cx.expect_type(x, INT8)
        cx.expect_type(y, INT8)
        return Call(op, input=x, **_quant(cx, x, y), out=y)

    lower.__name__ = f"_{op.split('::')[1]}"
    return lower


for _code in (B.RELU, B.RELU6, B.LOGISTIC, B.TANH, B.HARD_SWISH):
    lowering(_code, INT8)(_int8_unary(f"tflm::{_code.name.lower()}"))


@lowering(B.QUANTIZE, FLOAT32)
def _quantize_float(cx: LowerContext) -> Call:
    x, y = _one_in_one_out(cx)
    cx.expect_type(y, INT8)
    return Call(
        "tflm::quantize",
        input=x,
        input_scale=1.0,  # unused: AffineQuantize reads the output's quantization only
        input_zero_point=0,
        output_scale=cx.scale(y),
        output_zero_point=cx.zero_point(y),
        out=y,
    )


@lowering(B.QUANTIZE, INT8)
def _requantize(cx: LowerContext) -> Call:
    x, y = _one_in_one_out(cx)
    cx.expect_type(y, INT8)
    return Call("tflm::quantize", input=x, **_quant(cx, x, y), out=y)


@lowering(B.DEQUANTIZE, INT8)
def _dequantize(cx: LowerContext) -> Call:
    x, y = _one_in_one_out(cx)
    cx.expect_type(y, FLOAT32)
    return Call(
        "tflm::dequantize", input=x, input_scale=cx.scale(x), input_zero_point=cx.zero_point(x), out=y
    )


def _int32_constant(cx: LowerContext, i: int, what: str) -> np.ndarray:
    if not cx.is_constant(i):
        raise cx.error(f"the {what} tensor {i} must be a constant (TFLM reads it at Prepare)")
    cx.expect_type(i, INT32)
    return np.asarray(cx.constant(i)).reshape(-1)


@lowering(B.MEAN, INT8)
def _mean(cx: LowerContext) -> Call:
    cx.require(len(cx.op.inputs) == 2 and len(cx.op.outputs) == 1, "expected 2 inputs and 1 output")
    x, axis, y = cx.input(0), cx.input(1), cx.output(0)
    cx.expect_type(y, INT8)
    axes = _int32_constant(cx, axis, "axis")
    return Call(
        "tflm::mean",
        input=x,
        axis=[int(a) for a in axes],
        keep_dims=bool(cx.options.get("keep_dims", False)),
        **_quant(cx, x, y),
        out=y,
    )


def _strided_slice(cx: LowerContext) -> Call:
    cx.require(len(cx.op.inputs) == 4 and len(cx.op.outputs) == 1, "expected 4 inputs and 1 output")
    x, y = cx.input(0), cx.output(0)
    cx.expect_type(y, cx.type(x))
    begin, end, strides = (
        _int32_constant(cx, cx.input(k), n) for k, n in ((1, "begin"), (2, "end"), (3, "strides"))
    )
    o = cx.options
    return Call(
        "tflm::strided_slice",
        input=x,
        begin=[int(v) for v in begin],
        end=[int(v) for v in end],
        strides=[int(v) for v in strides],
        begin_mask=int(o.get("begin_mask", 0)),
        end_mask=int(o.get("end_mask", 0)),
        ellipsis_mask=int(o.get("ellipsis_mask", 0)),
        new_axis_mask=int(o.get("new_axis_mask", 0)),
        shrink_axis_mask=int(o.get("shrink_axis_mask", 0)),
        offset=bool(o.get("offset", False)),
        out=y,
    )


def _concatenation(cx: LowerContext) -> Call:
    y = cx.output(0)
    inputs = [i for i in cx.op.inputs]
    cx.require(OPTIONAL_TENSOR not in inputs and inputs, "every input must be present")
    activation = cx.options.get("fused_activation_function", ActivationFunctionType.NONE)
    if activation != ActivationFunctionType.NONE:
        raise cx.error(f"fused activation {activation.name}: TFLM's CONCATENATION requires NONE")
    kind = cx.type(y)
    for i in inputs:
        cx.expect_type(i, kind)
        if kind == INT8:
            if (cx.scale(i), cx.zero_point(i)) != (cx.scale(y), cx.zero_point(y)):
                raise cx.error(
                    f"input tensor {i} is quantized ({cx.scale(i)}, {cx.zero_point(i)}) unlike the output "
                    f"({cx.scale(y)}, {cx.zero_point(y)}): TFLM's CONCATENATION Prepare refuses it"
                )
        elif kind == TensorType.INT16 and (cx.tensor(i).quantization and cx.zero_point(i) != 0):
            raise cx.error(f"int16 input tensor {i} has a nonzero zero point: TFLM's Prepare refuses it")
    return Call("tflm::concatenation", inputs=inputs, axis=int(cx.options.get("axis", 0)), out=y)


for _type in _COPY_TYPES:
    lowering(B.STRIDED_SLICE, _type)(_strided_slice)
    lowering(B.CONCATENATION, _type)(_concatenation)


@lowering(B.SQUEEZE)
def _squeeze(cx: LowerContext) -> Call:
    x, y = _one_in_one_out(cx)
    cx.expect_type(y, cx.type(x))
    dims = cx.options.get("squeeze_dims") or ()
    return Call("tflm::squeeze", input=x, squeeze_dims=[int(d) for d in dims], out=y)

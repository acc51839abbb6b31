"""Builtin options of the operators refsim decodes: which union member each builtin carries and
the fields of that table, in schema order (slot = position), with their schema defaults.

Source: the ``*Options`` tables of TFLite's schema.fbs (tflite-micro commit in schema.py). The
builtins are those issue 15 lists, the int8 set of TFLM's cmsis_nn kernels and of the MLPerf
Tiny reference models. Other builtins keep their options' union type number and are read, not
decoded. An options field typed by an enum is decoded to that enum, so an unknown value is an
error at load rather than a surprise at execution.
"""

from __future__ import annotations

from typing import NamedTuple

from refsim.tflite.schema import (
    ActivationFunctionType,
    BuiltinOperator,
    FullyConnectedOptionsWeightsFormat,
    Padding,
    TensorType,
)


class Field(NamedTuple):
    name: str
    #: _flatbuf scalar kind ("i8", "i32", "bool", "f32") or "[i32]" for a vector of int.
    kind: str
    default: object = 0
    enum: type | None = None


_ACT = Field("fused_activation_function", "i8", ActivationFunctionType.NONE, ActivationFunctionType)
_PAD = Field("padding", "i8", Padding.SAME, Padding)

#: Options table name -> its fields by slot.
TABLES: dict[str, tuple[Field, ...]] = {
    "Conv2DOptions": (
        _PAD,
        Field("stride_w", "i32"),
        Field("stride_h", "i32"),
        _ACT,
        Field("dilation_w_factor", "i32", 1),
        Field("dilation_h_factor", "i32", 1),
        Field("quantized_bias_type", "i8", TensorType.FLOAT32, TensorType),
    ),
    "DepthwiseConv2DOptions": (
        _PAD,
        Field("stride_w", "i32"),
        Field("stride_h", "i32"),
        Field("depth_multiplier", "i32"),
        _ACT,
        Field("dilation_w_factor", "i32", 1),
        Field("dilation_h_factor", "i32", 1),
    ),
    "Pool2DOptions": (
        _PAD,
        Field("stride_w", "i32"),
        Field("stride_h", "i32"),
        Field("filter_width", "i32"),
        Field("filter_height", "i32"),
        _ACT,
    ),
    "FullyConnectedOptions": (
        _ACT,
        Field(
            "weights_format",
            "i8",
            FullyConnectedOptionsWeightsFormat.DEFAULT,
            FullyConnectedOptionsWeightsFormat,
        ),
        Field("keep_num_dims", "bool", False),
        Field("asymmetric_quantize_inputs", "bool", False),
        Field("quantized_bias_type", "i8", TensorType.FLOAT32, TensorType),
    ),
    "SoftmaxOptions": (Field("beta", "f32", 0.0),),
    "ConcatenationOptions": (Field("axis", "i32"), _ACT),
    "AddOptions": (_ACT, Field("pot_scale_int16", "bool", True)),
    "MulOptions": (_ACT,),
    "PadOptions": (),
    "ReshapeOptions": (Field("new_shape", "[i32]", None),),
    "TransposeOptions": (),
    "ReducerOptions": (Field("keep_dims", "bool", False),),
    "SqueezeOptions": (Field("squeeze_dims", "[i32]", None),),
    "StridedSliceOptions": (
        Field("begin_mask", "i32"),
        Field("end_mask", "i32"),
        Field("ellipsis_mask", "i32"),
        Field("new_axis_mask", "i32"),
        Field("shrink_axis_mask", "i32"),
        Field("offset", "bool", False),
    ),
    "QuantizeOptions": (),
    "DequantizeOptions": (),
    "HardSwishOptions": (),
}

B = BuiltinOperator
#: The decoded builtins and the options table each carries (None: the op has no options).
OPTIONS_OF: dict[BuiltinOperator, str | None] = {
    B.CONV_2D: "Conv2DOptions",
    B.DEPTHWISE_CONV_2D: "DepthwiseConv2DOptions",
    B.FULLY_CONNECTED: "FullyConnectedOptions",
    B.AVERAGE_POOL_2D: "Pool2DOptions",
    B.MAX_POOL_2D: "Pool2DOptions",
    B.ADD: "AddOptions",
    B.MUL: "MulOptions",
    B.SOFTMAX: "SoftmaxOptions",
    B.RESHAPE: "ReshapeOptions",
    B.PAD: "PadOptions",
    B.TRANSPOSE: "TransposeOptions",
    B.CONCATENATION: "ConcatenationOptions",
    B.QUANTIZE: "QuantizeOptions",
    B.DEQUANTIZE: "DequantizeOptions",
    B.MEAN: "ReducerOptions",
    B.RELU: None,
    B.RELU6: None,
    B.LOGISTIC: None,
    B.TANH: None,
    B.HARD_SWISH: "HardSwishOptions",
    B.STRIDED_SLICE: "StridedSliceOptions",
    B.SQUEEZE: "SqueezeOptions",
}

#: Fields that must be at least 1 when present (a kernel divides or steps by them).
POSITIVE = frozenset(
    {"stride_w", "stride_h", "dilation_w_factor", "dilation_h_factor", "filter_width", "filter_height"}
)


def defaults(table: str) -> dict[str, object]:
    """The options a table holds when every field is absent."""
    return {f.name: f.default for f in TABLES[table]}

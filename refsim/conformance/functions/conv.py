"""Conformance adapters for CMSIS-NN's s8 convolution (:mod:`kernels_py.conv`) and transpose convolution
(:mod:`kernels_py.conv_transpose`).

Arrays and params follow ``docs/conformance.md`` (VECTORS.md): ``input`` NHWC, ``filter`` OHWI,
``bias``/``multiplier``/``shift`` per output channel, struct fields flattened with dots. ``bias_is_null``
is optional when reading (a NULL bias and a zero bias give the same numbers) and always written.
Generators draw small cases (at most ~50k MACs) leaning on the extremes: offsets at their ends,
multipliers near 2^30 and 2^31 - 1, shifts across [-31, 30], narrow activations, odd channel counts,
groups, padding, strides, dilation and batches; each specialised kernel only gets shapes it accepts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from kernels_py import conv, conv_transpose
from kernels_py.types import Activation, ConvParams, Dims, PerChannelQuantParams, Tile, TransposeConvParams
from refsim.conformance.registry import (
    Arrays,
    Params,
    VectorFunction,
    array,
    dims,
    param,
    put_dims,
    random_multiplier,
    register,
)
from refsim.errors import VectorError

FAMILY = "conv"
MAX_MACS = 50_000

ARRAYS = ("input", "filter", "bias", "multiplier", "shift")
_DIMS = tuple(
    f"{prefix}.{k}" for prefix in ("input_dims", "filter_dims", "output_dims", "bias_dims") for k in "nhwc"
)
CONV_PARAMS = (
    "input_offset", "output_offset", "stride.h", "stride.w", "padding.h", "padding.w",
    "dilation.h", "dilation.w", "activation.min", "activation.max", *_DIMS,
)  # fmt: skip
TRANSPOSE_CONV_PARAMS = (*CONV_PARAMS, "padding_offsets.h", "padding_offsets.w")


# --- reading a case -------------------------------------------------------------------------------------


def _tile(params: Mapping[str, Any], prefix: str) -> Tile:
    return Tile(w=param(params, f"{prefix}.w"), h=param(params, f"{prefix}.h"))


def _activation(params: Mapping[str, Any]) -> Activation:
    return Activation(param(params, "activation.min"), param(params, "activation.max"))


def _read_case(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any], function: str):
    x = array(arrays, "input", np.int8, function)
    f = array(arrays, "filter", np.int8, function)
    bias = array(arrays, "bias", np.int32, function)
    quant = PerChannelQuantParams(
        array(arrays, "multiplier", np.int32, function), array(arrays, "shift", np.int32, function)
    )
    out_n, out_h, out_w, out_c = dims(params, "output_dims")
    for key, declared, found in (
        ("input_dims", dims(params, "input_dims"), x.shape),
        ("filter_dims", dims(params, "filter_dims"), f.shape),
        ("output_dims", (out_n, out_c), (x.shape[0], f.shape[0])),
        ("bias_dims", dims(params, "bias_dims"), (1, 1, 1, bias.size)),
    ):
        if tuple(declared) != tuple(found):
            raise VectorError(f"{function}: params {key} {declared} do not match the arrays ({found})")
    if "bias_is_null" in params and param(params, "bias_is_null", bool):
        bias = None
    return x, f, bias, quant, (out_h, out_w)


def _conv_params(params: Mapping[str, Any]) -> ConvParams:
    return ConvParams(
        input_offset=param(params, "input_offset"),
        output_offset=param(params, "output_offset"),
        stride=_tile(params, "stride"),
        padding=_tile(params, "padding"),
        dilation=_tile(params, "dilation"),
        activation=_activation(params),
    )


def _transpose_conv_params(params: Mapping[str, Any]) -> TransposeConvParams:
    return TransposeConvParams(
        input_offset=param(params, "input_offset"),
        output_offset=param(params, "output_offset"),
        stride=_tile(params, "stride"),
        padding=_tile(params, "padding"),
        padding_offsets=_tile(params, "padding_offsets"),
        dilation=_tile(params, "dilation"),
        activation=_activation(params),
    )


def _conv_runner(function: str, kernel: Callable[..., np.ndarray], route: str | None):
    def run(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]) -> np.ndarray:
        x, f, bias, quant, out_hw = _read_case(arrays, params, function)
        conv_params = _conv_params(params)
        if route is not None:
            dims_ = conv.convolve_s8_dims(x, f, conv_params, out_hw)
            conv.check_convolve_kernel_arguments(route, conv_params, *dims_)
        return kernel(x, f, bias, conv_params, quant, out_hw)

    return run


def _transpose_runner(function: str, kernel: Callable[..., np.ndarray]):
    def run(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]) -> np.ndarray:
        x, f, bias, quant, out_hw = _read_case(arrays, params, function)
        return kernel(x, f, bias, _transpose_conv_params(params), quant, out_hw)

    return run


# --- drawing a case -------------------------------------------------------------------------------------


def _int8(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Uniform int8 with about one value in eight pinned to -128 or 127."""
    values = rng.integers(-128, 128, size=shape, dtype=np.int16)
    pinned = rng.random(shape) < 0.125
    values[pinned] = rng.choice(np.array([-128, 127], np.int16), size=int(pinned.sum()))
    return values.astype(np.int8)


def _quant(rng: np.random.Generator, channels: int, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Multipliers biased to 2^30 and 2^31 - 1; shifts that keep most outputs inside int8 for a sum of
    ``depth`` products, plus a few anywhere in [-31, 30]."""
    multiplier = random_multiplier(rng, channels)
    pick = rng.random(channels)
    multiplier[pick < 0.15] = 1 << 30
    multiplier[pick > 0.85] = (1 << 31) - 1
    typical = 6 - round(math.log2(12_000 * math.sqrt(depth)))
    shift = np.clip(typical + rng.integers(-1, 2, channels), -31, 30)
    wide = rng.random(channels) < 0.1
    shift[wide] = rng.integers(-31, 31, int(wide.sum()))
    return multiplier.astype(np.int32), shift.astype(np.int32)


def _common(rng: np.random.Generator, out_c: int, depth: int) -> tuple[Params, Arrays]:
    params: Params = {
        "input_offset": int(
            rng.choice([-127, 128, 0, int(rng.integers(-127, 129))], p=[0.15, 0.15, 0.1, 0.6])
        ),
        "output_offset": int(rng.choice([-128, 127, int(rng.integers(-128, 128))], p=[0.15, 0.1, 0.75])),
    }
    kind = rng.choice(["full", "relu", "narrow", "single"], p=[0.4, 0.3, 0.2, 0.1])
    lo = {"full": -128, "relu": params["output_offset"]}.get(kind, int(rng.integers(-128, 128)))
    hi = {"full": 127, "relu": 127, "single": lo}.get(kind, min(127, lo + int(rng.integers(0, 9))))
    params["activation.min"], params["activation.max"] = lo, hi
    bound = int(20_000 * math.sqrt(depth))  # about the spread of the sum itself
    bias = rng.integers(-bound, bound + 1, out_c, dtype=np.int64)
    if rng.random() < 0.05:  # int32 extremes: the accumulator wraps
        bias = rng.choice(np.array([-(1 << 31), (1 << 31) - 1]), out_c)
    params["bias_is_null"] = bool(rng.random() < 0.2)
    if params["bias_is_null"]:
        bias[:] = 0
    multiplier, shift = _quant(rng, out_c, depth)
    return params, {"bias": bias.astype(np.int32), "multiplier": multiplier, "shift": shift}


def _same(size: int, kernel_extent: int, stride: int) -> tuple[int, int]:
    """TFLM SAME: ``(output, top padding)``; an odd total pads one more at the bottom/right."""
    out = -(-size // stride)
    return out, max((out - 1) * stride + kernel_extent - size, 0) // 2


def _finish(function: str, rng, x_shape, f_shape, out_hw, stride, padding, dilation, extra=None):
    """A case from its geometry: random data and quantization, every required param, ``macs``."""
    out_c, k_h, k_w, filter_c = f_shape
    params, arrays = _common(rng, out_c, k_h * k_w * filter_c)
    arrays["input"], arrays["filter"] = _int8(rng, x_shape), _int8(rng, f_shape)
    params.update({"function": function, **(extra or {})})
    for name, tile in (("stride", stride), ("padding", padding), ("dilation", dilation)):
        params[f"{name}.h"], params[f"{name}.w"] = tile
    put_dims(params, "input_dims", x_shape)
    put_dims(params, "filter_dims", f_shape)
    put_dims(params, "output_dims", (x_shape[0], *out_hw, out_c))
    put_dims(params, "bias_dims", (out_c,))
    if function.startswith("arm_transpose_conv"):
        params["macs"] = int(np.prod(x_shape) * out_c * k_h * k_w)
    else:
        params["macs"] = int(x_shape[0] * out_hw[0] * out_hw[1] * out_c * k_h * k_w * filter_c)
    return arrays, params


def _draw_general(rng: np.random.Generator) -> dict[str, Any]:
    groups = int(rng.choice([1, 1, 1, 2, 3]))
    filter_c, per_group = int(rng.integers(1, 8)), int(rng.integers(1, 7))
    k = tuple(int(v) for v in rng.integers(1, 6, 2))
    stride = tuple(int(v) for v in rng.integers(1, 4, 2))
    dilation = tuple(int(v) for v in rng.integers(1, 4, 2)) if rng.random() < 0.25 else (1, 1)
    size = tuple(int(v) for v in rng.integers(1, 11, 2))
    mode = rng.choice(["valid", "same", "any"])
    out_hw, padding = [], []
    for s, k_, st, d in zip(size, k, stride, dilation, strict=True):
        extent = d * (k_ - 1) + 1
        if mode == "same":
            out, pad = _same(s, extent, st)
        else:
            pad = 0 if mode == "valid" else int(rng.integers(0, extent))
            out = conv.conv_output_size(s, k_, st, pad, d)
        out_hw.append(out)
        padding.append(pad)
    x_shape = (int(rng.integers(1, 4)), *size, groups * filter_c)
    return {"x_shape": x_shape, "f_shape": (groups * per_group, *k, filter_c), "out_hw": tuple(out_hw),
            "stride": stride, "padding": tuple(padding), "dilation": dilation}  # fmt: skip


def _draw_1x1(rng: np.random.Generator, fast: bool) -> dict[str, Any]:
    stride = (1, 1) if fast else tuple(int(v) for v in rng.choice([1, 2, 3], 2, p=[0.2, 0.5, 0.3]))
    if stride == (1, 1) and not fast:
        stride = (2, 1)
    size = tuple(int(v) for v in rng.integers(1, 9, 2))
    in_c, out_c = int(rng.integers(1, 33)), int(rng.integers(1, 17))
    out_hw = tuple((s - 1) // st + 1 for s, st in zip(size, stride, strict=True))
    return {"x_shape": (int(rng.integers(1, 4)), *size, in_c), "f_shape": (out_c, 1, 1, in_c),
            "out_hw": out_hw, "stride": stride, "padding": (0, 0), "dilation": (1, 1)}  # fmt: skip


def _draw_1_x_n(rng: np.random.Generator) -> dict[str, Any]:
    while True:
        stride_w = int(rng.integers(1, 4))
        in_c = 4 // math.gcd(stride_w, 4) * int(rng.integers(1, 5))  # stride.w * C_IN % 4 == 0
        in_w, k_w = (
            int(rng.integers(1, 17)),
            int(rng.choice([1, 2, 3, 4, 5, 6], p=[0.1, 0.2, 0.25, 0.2, 0.15, 0.1])),
        )
        if rng.random() < 0.5:
            out_w, pad = _same(in_w, k_w, stride_w)
        else:
            out_w, pad = conv.conv_output_size(in_w, k_w, stride_w, 0), 0
        total = (out_w - 1) * stride_w + k_w - in_w
        # arm_convolve_1_x_n_s8's MVE path fails (ARM_CMSIS_NN_FAILURE) unless 2·pad + C's total % 2 == total.
        if out_w >= 1 and 2 * pad + int(math.fmod(total, 2)) == total:
            break
    x_shape, f_shape = (int(rng.integers(1, 3)), 1, in_w, in_c), (int(rng.integers(1, 9)), 1, k_w, in_c)
    stride = (int(rng.integers(1, 3)), stride_w)
    geometry = {"out_hw": (1, out_w), "stride": stride, "padding": (0, pad), "dilation": (1, 1)}
    return {"x_shape": x_shape, "f_shape": f_shape, **geometry}


def _conv_generator(function: str, draw: Callable[[np.random.Generator], dict[str, Any]]):
    def generate(rng: np.random.Generator) -> tuple[Arrays, Params]:
        while True:
            g = draw(rng)
            out_c, k_h, k_w, filter_c = g["f_shape"]
            macs = g["x_shape"][0] * g["out_hw"][0] * g["out_hw"][1] * out_c * k_h * k_w * filter_c
            if min(g["out_hw"]) >= 1 and macs <= MAX_MACS:
                break
        conv_params = ConvParams(stride=Tile(*g["stride"][::-1]), padding=Tile(*g["padding"][::-1]),
                                 dilation=Tile(*g["dilation"][::-1]))  # fmt: skip
        dims_ = (Dims.of(g["x_shape"]), Dims.of(g["f_shape"]), Dims(g["x_shape"][0], *g["out_hw"], out_c))
        extra = {"category": conv.select_convolve_kernel(conv_params, *dims_)}
        return _finish(function, rng, g["x_shape"], g["f_shape"], g["out_hw"], g["stride"], g["padding"],
                       g["dilation"], extra)  # fmt: skip

    return generate


def _draw_wrapper(rng: np.random.Generator) -> dict[str, Any]:
    route = rng.choice(["1x1_fast", "1x1", "1_x_n", "general"], p=[0.2, 0.15, 0.2, 0.45])
    if route == "1_x_n":
        return _draw_1_x_n(rng)
    if route == "general":
        return _draw_general(rng)
    return _draw_1x1(rng, fast=route == "1x1_fast")


def _generate_transpose(function: str):
    def generate(rng: np.random.Generator) -> tuple[Arrays, Params]:
        while True:
            x_shape = (
                int(rng.integers(1, 3)),
                *(int(v) for v in rng.integers(1, 7, 2)),
                int(rng.integers(1, 25)),
            )
            out_c = int(rng.integers(1, 9))
            k = tuple(int(v) for v in rng.integers(1, 6, 2))
            stride = tuple(int(v) for v in rng.integers(1, 4, 2))
            if np.prod(x_shape) * out_c * k[0] * k[1] <= MAX_MACS:
                break
        same = rng.random() < 0.6
        out_hw, padding, offsets = [], [], []
        for size, k_, s in zip(x_shape[1:3], k, stride, strict=True):
            out = size * s if same else size * s + max(k_ - s, 0)  # TFLite's output sizes
            total = max((size - 1) * s + k_ - out, 0)
            out_hw.append(out)
            padding.append(total // 2)
            offsets.append(total // 2 + total % 2)  # TFLM: padding_offsets = padding + odd remainder
        tparams = TransposeConvParams(stride=Tile(*stride[::-1]))
        route = conv_transpose.select_transpose_conv_kernel(tparams, Dims.of(x_shape))
        extra = {
            "padding_offsets.h": offsets[0], "padding_offsets.w": offsets[1], "category": route,
            "padding_mode": "same" if same else "valid",
            "padding_h_not_multiple_of_stride_h": bool(padding[0] % stride[0]),
        }  # fmt: skip
        return _finish(function, rng, x_shape, (out_c, *k, x_shape[3]), tuple(out_hw), stride,
                       tuple(padding), (1, 1), extra)  # fmt: skip

    return generate


for _name, _kernel, _route, _draw in (
    ("arm_convolve_s8", conv.convolve_s8, None, _draw_general),
    ("arm_convolve_wrapper_s8", conv.convolve_wrapper_s8, None, _draw_wrapper),
    (
        "arm_convolve_1x1_s8_fast",
        conv.convolve_s8,
        "arm_convolve_1x1_s8_fast",
        lambda r: _draw_1x1(r, fast=True),
    ),
    ("arm_convolve_1x1_s8", conv.convolve_s8, "arm_convolve_1x1_s8", lambda r: _draw_1x1(r, fast=False)),
    ("arm_convolve_1_x_n_s8", conv.convolve_s8, "arm_convolve_1_x_n_s8", _draw_1_x_n),
):
    register(
        VectorFunction(
            name=_name, family=FAMILY, arrays=ARRAYS, params=CONV_PARAMS,
            run=_conv_runner(_name, _kernel, _route), generate=_conv_generator(_name, _draw),
        )
    )  # fmt: skip

for _name, _kernel in (
    ("arm_transpose_conv_s8", conv_transpose.transpose_conv_s8),
    ("arm_transpose_conv_wrapper_s8", conv_transpose.transpose_conv_wrapper_s8),
):
    register(
        VectorFunction(
            name=_name, family=FAMILY, arrays=ARRAYS, params=TRANSPOSE_CONV_PARAMS,
            run=_transpose_runner(_name, _kernel), generate=_generate_transpose(_name),
        )
    )  # fmt: skip

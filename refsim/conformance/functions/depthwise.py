"""Conformance adapters for :mod:`kernels_py.depthwise`.

``arm_depthwise_conv_s8``, ``arm_depthwise_conv_wrapper_s8``, ``arm_depthwise_conv_3x3_s8`` and
``arm_depthwise_conv_s8_opt`` share one case layout (docs/conformance.md): ``input`` [N,H,W,C_IN],
``filter`` [1,KH,KW,C_OUT], ``bias``/``multiplier``/``shift`` [C_OUT]; params are
``cmsis_nn_dw_conv_params`` fields plus the four dims structs. Each ``generate`` draws only
shapes its C function accepts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from kernels_py import depthwise as dw
from kernels_py.errors import KernelArgumentError
from kernels_py.types import Activation, Dims, DwConvParams, PerChannelQuantParams, Tile
from refsim.conformance.registry import (
    Arrays,
    Params,
    VectorFunction,
    array,
    dims,
    param,
    put_dims,
    random_activation,
    random_multiplier,
    register,
)
from refsim.errors import VectorError

FAMILY = "depthwise"
MAX_MACS = 50_000

ARRAYS = ("input", "filter", "bias", "multiplier", "shift")
PARAMS = (
    "input_offset",
    "output_offset",
    "ch_mult",
    "stride.h",
    "stride.w",
    "padding.h",
    "padding.w",
    "dilation.h",
    "dilation.w",
    "activation.min",
    "activation.max",
    *(
        f"{struct}.{k}"
        for struct in ("input_dims", "filter_dims", "output_dims", "bias_dims")
        for k in "nhwc"
    ),
)

Kernel = Callable[..., np.ndarray]


def _reshaped(arrays: Mapping[str, np.ndarray], key: str, dtype: type, function: str, shape) -> np.ndarray:
    arr = array(arrays, key, dtype, function)
    if arr.size != int(np.prod(shape)):
        raise VectorError(f"{function}: array {key!r} has {arr.size} elements, its dims say {tuple(shape)}")
    return arr.reshape(shape)


def _runner(
    function: str, kernel: Kernel
) -> Callable[[Mapping[str, np.ndarray], Mapping[str, Any]], np.ndarray]:
    def run(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]) -> np.ndarray:
        values = {key: param(params, key) for key in PARAMS}
        input_dims, filter_dims = dims(params, "input_dims"), dims(params, "filter_dims")
        output_dims, bias_dims = dims(params, "output_dims"), dims(params, "bias_dims")
        out_c = filter_dims[3]
        if output_dims[0] != input_dims[0] or output_dims[3] != out_c or bias_dims[3] != out_c:
            raise VectorError(
                f"{function}: dims disagree: input {input_dims}, filter {filter_dims}, "
                f"output {output_dims}, bias {bias_dims}"
            )
        input = _reshaped(arrays, "input", np.int8, function, input_dims)
        filter = _reshaped(arrays, "filter", np.int8, function, filter_dims)
        bias = _reshaped(arrays, "bias", np.int32, function, (out_c,))
        quant = PerChannelQuantParams(
            _reshaped(arrays, "multiplier", np.int32, function, (out_c,)),
            _reshaped(arrays, "shift", np.int32, function, (out_c,)),
        )
        dw_conv_params = DwConvParams(
            input_offset=values["input_offset"],
            output_offset=values["output_offset"],
            ch_mult=values["ch_mult"],
            stride=Tile(w=values["stride.w"], h=values["stride.h"]),
            padding=Tile(w=values["padding.w"], h=values["padding.h"]),
            dilation=Tile(w=values["dilation.w"], h=values["dilation.h"]),
            activation=Activation(values["activation.min"], values["activation.max"]),
        )
        bias_is_null = bool(params.get("bias_is_null", False))
        output_hw = (output_dims[1], output_dims[2])
        return kernel(input, filter, None if bias_is_null else bias, dw_conv_params, quant, output_hw)

    return run


# --- case generation ----------------------------------------------------------------------


def _axis(rng: np.random.Generator, k: int, dilation: int, stride: int, pad_mode: str, max_pad: int | None):
    """(input, padding, output) for one spatial axis, or None when the draw is unusable."""
    eff = dilation * (k - 1) + 1
    size = int(rng.integers(1, 13))
    if pad_mode == "valid":
        pad, out = 0, (size - eff) // stride + 1
    elif pad_mode == "same":  # TFLite SAME: output ceil(in / stride), the odd pad goes bottom/right
        out = -(-size // stride)
        pad = max((out - 1) * stride + eff - size, 0) // 2
    else:
        pad = int(rng.integers(0, eff))
        out = (size + 2 * pad - eff) // stride + 1
    if out < 1 or (max_pad is not None and pad > max_pad):
        return None
    return size, pad, out


def _geometry(rng, *, k=None, dilation=True, max_pad_w=None, ch_mult=None, batch=True, in_c=None):
    """Draw until a shape fits in MAX_MACS; returns a dict of the shape fields."""
    while True:
        pad_mode = str(rng.choice(["valid", "same", "explicit"]))
        kh, kw = k if k is not None else (int(rng.integers(1, 6)), int(rng.integers(1, 6)))
        dh, dw_ = (int(rng.integers(1, 4)), int(rng.integers(1, 4))) if dilation else (1, 1)
        sh, sw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        row = _axis(rng, kh, dh, sh, pad_mode, None)
        col = _axis(rng, kw, dw_, sw, pad_mode, max_pad_w)
        if row is None or col is None:
            continue
        c = int(rng.choice([1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17]))
        if rng.random() < 0.05:
            c = int(rng.integers(125, 131))  # crosses the MVE _opt kernel's 124-channel block
        c = c if in_c is None else in_c
        m = ch_mult if ch_mult is not None else int(rng.choice([1, 2, 3, 4, 8]))
        n = int(rng.integers(1, 4)) if batch else 1
        macs = n * row[2] * col[2] * c * m * kh * kw
        if macs <= MAX_MACS:
            return {
                "n": n, "in": (row[0], col[0]), "pad": (row[1], col[1]), "out": (row[2], col[2]),
                "k": (kh, kw), "stride": (sh, sw), "dilation": (dh, dw_), "c": c, "ch_mult": m,
                "macs": macs, "padding_mode": pad_mode,
            }  # fmt: skip


def _quant_extremes(rng: np.random.Generator, channels: int) -> tuple[np.ndarray, np.ndarray]:
    multiplier = random_multiplier(rng, channels)
    shift = rng.integers(-12, 1, channels).astype(np.int32)
    pick = rng.random(channels)
    multiplier[pick < 0.15] = 1 << 30
    multiplier[pick > 0.85] = (1 << 31) - 1
    wide = rng.random(channels) < 0.15
    shift[wide] = rng.integers(-31, 31, int(wide.sum()))
    return multiplier, shift


def _int8(rng: np.random.Generator, shape) -> np.ndarray:
    values = rng.integers(-128, 128, shape)
    edge = rng.random(shape)
    values[edge < 0.05] = -128
    values[edge > 0.95] = 127
    return values.astype(np.int8)


def _case(function: str, rng: np.random.Generator, g: dict) -> tuple[Arrays, Params]:
    n, (in_h, in_w), c, m = g["n"], g["in"], g["c"], g["ch_mult"]
    (kh, kw), (out_h, out_w) = g["k"], g["out"]
    out_c = c * m
    multiplier, shift = _quant_extremes(rng, out_c)
    bias_is_null = bool(rng.random() < 0.15)
    bias = (
        np.zeros(out_c, np.int32)
        if bias_is_null
        else rng.integers(-(1 << 20), 1 << 20, out_c).astype(np.int32)
    )
    arrays = {
        "input": _int8(rng, (n, in_h, in_w, c)),
        "filter": _int8(rng, (1, kh, kw, out_c)),
        "bias": bias,
        "multiplier": multiplier,
        "shift": shift,
    }
    act_min, act_max = random_activation(rng, (0.25, 0.25, 0.25, 0.25))
    params: Params = {
        "function": function,
        "input_offset": int(rng.choice([-127, 128, 0, int(rng.integers(-127, 129))])),
        "output_offset": int(rng.choice([-128, 127, 0, int(rng.integers(-128, 128))])),
        "ch_mult": m,
        "stride.h": g["stride"][0],
        "stride.w": g["stride"][1],
        "padding.h": g["pad"][0],
        "padding.w": g["pad"][1],
        "dilation.h": g["dilation"][0],
        "dilation.w": g["dilation"][1],
        "activation.min": act_min,
        "activation.max": act_max,
        "bias_is_null": bias_is_null,
        "macs": g["macs"],
        "padding_mode": g["padding_mode"],
    }
    put_dims(params, "input_dims", (n, in_h, in_w, c))
    put_dims(params, "filter_dims", (1, kh, kw, out_c))
    put_dims(params, "output_dims", (n, out_h, out_w, out_c))
    put_dims(params, "bias_dims", (1, 1, 1, out_c))
    return arrays, params


def _params_dims(params: Params) -> tuple[DwConvParams, Dims, Dims, Dims]:
    p = DwConvParams(
        ch_mult=params["ch_mult"],
        stride=Tile(params["stride.w"], params["stride.h"]),
        padding=Tile(params["padding.w"], params["padding.h"]),
        dilation=Tile(params["dilation.w"], params["dilation.h"]),
    )
    return p, *(Dims(*dims(params, s)) for s in ("input_dims", "filter_dims", "output_dims"))  # type: ignore[return-value]


def _accepted(run, arrays: Arrays, params: Params) -> bool:
    try:
        run(arrays, params)
    except KernelArgumentError:
        return False
    return True


def _generate_s8(rng: np.random.Generator) -> tuple[Arrays, Params]:
    return _case(dw.ARM_DEPTHWISE_CONV_S8, rng, _geometry(rng))


def _generate_3x3(rng: np.random.Generator) -> tuple[Arrays, Params]:
    while True:
        g = _geometry(rng, k=(3, 3), dilation=False, max_pad_w=1, ch_mult=1, batch=False)
        case = _case(dw.ARM_DEPTHWISE_CONV_3X3_S8, rng, g)
        if _accepted(_run_3x3, *case):
            return case


def _generate_opt(rng: np.random.Generator) -> tuple[Arrays, Params]:
    while True:
        g = _geometry(rng, dilation=False, ch_mult=1, batch=False)
        case = _case(dw.ARM_DEPTHWISE_CONV_S8_OPT, rng, g)
        if _accepted(_run_opt, *case):
            return case


def _generate_wrapper(rng: np.random.Generator) -> tuple[Arrays, Params]:
    """Spread the cases over every route of the wrapper (3x3, _opt, generic, MVE to-conv)."""
    route = rng.choice(["3x3", "opt", "generic", "one_in_ch"])
    while True:
        if route == "3x3":
            g = _geometry(rng, k=(3, 3), dilation=False, max_pad_w=1, ch_mult=1, batch=False)
        elif route == "opt":
            g = _geometry(rng, dilation=False, ch_mult=1, batch=False)
        elif route == "one_in_ch":
            g = _geometry(rng, in_c=1, ch_mult=int(rng.choice([2, 3, 8, 9, 16])))
        else:
            g = _geometry(rng)
        arrays, params = _case(dw.ARM_DEPTHWISE_CONV_WRAPPER_S8, rng, g)
        if _accepted(_run_wrapper, arrays, params):
            break
    p, input_dims, filter_dims, output_dims = _params_dims(params)
    for isa in dw.ISAS:
        params[f"route_{isa}"] = dw.select_depthwise_kernel(p, input_dims, filter_dims, output_dims, isa)
        params[f"buffer_size_{isa}"] = dw.depthwise_conv_wrapper_s8_get_buffer_size(
            p, input_dims, filter_dims, output_dims, isa
        )
    return arrays, params


_run_s8 = _runner(dw.ARM_DEPTHWISE_CONV_S8, dw.depthwise_conv_s8)
_run_wrapper = _runner(dw.ARM_DEPTHWISE_CONV_WRAPPER_S8, dw.depthwise_conv_wrapper_s8)
_run_3x3 = _runner(dw.ARM_DEPTHWISE_CONV_3X3_S8, dw.depthwise_conv_3x3_s8)
_run_opt = _runner(dw.ARM_DEPTHWISE_CONV_S8_OPT, dw.depthwise_conv_s8_opt)

for _name, _run, _generate in (
    (dw.ARM_DEPTHWISE_CONV_S8, _run_s8, _generate_s8),
    (dw.ARM_DEPTHWISE_CONV_WRAPPER_S8, _run_wrapper, _generate_wrapper),
    (dw.ARM_DEPTHWISE_CONV_3X3_S8, _run_3x3, _generate_3x3),
    (dw.ARM_DEPTHWISE_CONV_S8_OPT, _run_opt, _generate_opt),
):
    register(
        VectorFunction(name=_name, family=FAMILY, arrays=ARRAYS, params=PARAMS, run=_run, generate=_generate)
    )

"""Conformance adapters for :mod:`kernels_py.pooling`: ``arm_avgpool_s8`` and ``arm_max_pool_s8``.

One array, ``input`` [N,H,W,C]; params are ``cmsis_nn_pool_params`` fields, the window as
``filter_dims.h``/``filter_dims.w`` and the input and output dims. Both C functions pool every
image of ``input_dims.n`` (CMSIS-NN since v6.0.0; ``n < 1`` is its ARM_CMSIS_NN_ARG_ERROR), so cases
draw ``n`` in 1..3.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from kernels_py import pooling
from kernels_py.types import Activation, PoolParams, Tile
from refsim.conformance.registry import Arrays, Params, VectorFunction, array, dims, param, put_dims, register
from refsim.errors import VectorError

FAMILY = "pooling"
MAX_TAPS = 50_000

ARRAYS = ("input",)
PARAMS = (
    "stride.h",
    "stride.w",
    "padding.h",
    "padding.w",
    "activation.min",
    "activation.max",
    "filter_dims.h",
    "filter_dims.w",
    *(f"{struct}.{k}" for struct in ("input_dims", "output_dims") for k in "nhwc"),
)


def _runner(function: str, kernel: Callable[..., np.ndarray]):
    def run(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]) -> np.ndarray:
        values = {key: param(params, key) for key in PARAMS}
        input_dims, output_dims = dims(params, "input_dims"), dims(params, "output_dims")
        if output_dims[0] != input_dims[0] or output_dims[3] != input_dims[3]:
            raise VectorError(
                f"{function}: output dims {output_dims} do not match input dims {input_dims} in n, c"
            )
        input = array(arrays, "input", np.int8, function)
        if input.size != int(np.prod(input_dims)):
            raise VectorError(f"{function}: input has {input.size} elements, input_dims say {input_dims}")
        pool_params = PoolParams(
            stride=Tile(w=values["stride.w"], h=values["stride.h"]),
            padding=Tile(w=values["padding.w"], h=values["padding.h"]),
            activation=Activation(values["activation.min"], values["activation.max"]),
        )
        filter_hw = (values["filter_dims.h"], values["filter_dims.w"])
        return kernel(input.reshape(input_dims), pool_params, filter_hw, (output_dims[1], output_dims[2]))

    return run


def _axis(rng: np.random.Generator, k: int, stride: int, pad_mode: str):
    """(input, padding, output) for one axis with every window overlapping the input, or None."""
    size = int(rng.integers(1, 14))
    if pad_mode == "global":
        return k, 0, 1
    if pad_mode == "valid":
        pad, out = 0, (size - k) // stride + 1
    elif pad_mode == "same":  # TFLite SAME: output ceil(in / stride), the odd pad goes bottom/right
        out = -(-size // stride)
        pad = max((out - 1) * stride + k - size, 0) // 2
    else:  # explicit padding, with PyTorch's ceil_mode output size half the time
        pad = int(rng.integers(0, k))
        span = size + 2 * pad - k
        out = (-(-span // stride) if pad_mode == "ceil" else span // stride) + 1
    if out < 1 or pad >= k or (out - 1) * stride - pad >= size:
        return None
    return size, pad, out


def _generator(function: str):
    def generate(rng: np.random.Generator) -> tuple[Arrays, Params]:
        while True:
            pad_mode = str(rng.choice(["valid", "same", "explicit", "ceil", "global"]))
            kh, kw = int(rng.integers(1, 6)), int(rng.integers(1, 6))
            if pad_mode == "global":
                kh, kw = int(rng.integers(1, 26)), int(rng.integers(1, 11))
            sh, sw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
            row, col = _axis(rng, kh, sh, pad_mode), _axis(rng, kw, sw, pad_mode)
            if row is None or col is None:
                continue
            c = int(rng.choice([1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 33, 64]))
            n = int(rng.integers(1, 4))
            taps = n * row[2] * col[2] * c * kh * kw
            if taps <= MAX_TAPS:
                break
        values = rng.integers(-128, 128, (n, row[0], col[0], c))
        edge = rng.random(values.shape)
        values[edge < 0.1] = -128  # long runs of the extremes stress the sums and the rounding
        values[edge > 0.9] = 127
        kind = rng.choice(["full", "relu", "narrow", "single"])
        lo = int(rng.integers(-128, 1 if kind == "relu" else 128)) if kind != "full" else -128
        hi = (
            127
            if kind in ("full", "relu")
            else (lo if kind == "single" else min(127, lo + int(rng.integers(0, 9))))
        )
        params: Params = {
            "function": function,
            "stride.h": sh,
            "stride.w": sw,
            "padding.h": row[1],
            "padding.w": col[1],
            "activation.min": lo,
            "activation.max": hi,
            "filter_dims.n": 1,
            "filter_dims.h": kh,
            "filter_dims.w": kw,
            "filter_dims.c": 1,
            "macs": taps,
            "padding_mode": pad_mode,
        }
        put_dims(params, "input_dims", (n, row[0], col[0], c))
        put_dims(params, "output_dims", (n, row[2], col[2], c))
        for isa in pooling.ISAS:
            if function == pooling.ARM_AVGPOOL_S8:
                params[f"buffer_size_{isa}"] = pooling.avgpool_s8_get_buffer_size(col[2], c, isa)
        return {"input": values.astype(np.int8)}, params

    return generate


for _name, _kernel in (
    (pooling.ARM_AVGPOOL_S8, pooling.avgpool_s8),
    (pooling.ARM_MAX_POOL_S8, pooling.max_pool_s8),
):
    register(
        VectorFunction(
            name=_name,
            family=FAMILY,
            arrays=ARRAYS,
            params=PARAMS,
            run=_runner(_name, _kernel),
            generate=_generator(_name),
        )
    )

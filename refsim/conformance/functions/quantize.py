"""Conformance adapters for :mod:`kernels_py.quantize` (no CMSIS-NN counterparts; refsim names).

Per tensor, params ``scale`` (a JSON number, used as a float64 the way ExecuTorch passes it),
``zero_point``, ``quant_min``, ``quant_max``:

* ``refsim_quantize_per_tensor_s8``: ``input`` float32 -> int8, ExecuTorch portable
  ``quantized_decomposed::quantize_per_tensor``.
* ``refsim_dequantize_per_tensor_s8``: ``input`` int8 -> **float32** output, portable
  ``quantized_decomposed::dequantize_per_tensor``.
* ``refsim_cortex_m_quantize_per_tensor_s8`` / ``refsim_cortex_m_dequantize_per_tensor_s8``: the
  same signatures, cortex_m ``quantize_per_tensor`` / ``dequantize_per_tensor`` (scalar path).

Per channel, arrays ``scales`` float64 [C] and ``zero_points`` int32 [C] besides ``input``;
params ``axis``, ``quant_min``, ``quant_max``:

* ``refsim_quantize_per_channel_s8`` (float32 -> int8) and ``refsim_dequantize_per_channel_s8``
  (int8 -> float32).

Generated cases are finite (NaN/inf conversion is platform-specific, see the kernel docs) and
include exact half-way products and saturating values.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from kernels_py.quantize import (
    cortex_m_dequantize_per_tensor,
    cortex_m_quantize_per_tensor,
    dequantize_per_channel,
    dequantize_per_tensor,
    quantize_per_channel,
    quantize_per_tensor,
)
from refsim.conformance.registry import Arrays, Params, VectorFunction, array, param, register
from refsim.errors import VectorError

FAMILY = "quantize"
_PER_TENSOR = ("scale", "zero_point", "quant_min", "quant_max")
_PER_CHANNEL = ("axis", "quant_min", "quant_max")


def _float_param(params: Mapping[str, Any], key: str) -> float:
    """A required real-valued parameter (registry.param only types integers)."""
    if key not in params:
        raise VectorError(f"{params.get('function', '?')}: params lacks required key {key!r}")
    value = params[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise VectorError(f"{params.get('function', '?')}: params[{key!r}] must be a number, got {value!r}")
    return float(value)


def _per_tensor(params: Mapping[str, Any]) -> tuple[float, int, int, int]:
    return (
        _float_param(params, "scale"),
        param(params, "zero_point"),
        param(params, "quant_min"),
        param(params, "quant_max"),
    )


def _scale(rng: np.random.Generator) -> float:
    """Powers of two (exact reciprocals, so ties survive) or arbitrary float32 scales."""
    if rng.random() < 0.5:
        return math.ldexp(1.0, int(rng.integers(-10, 3)))
    return float(np.float32(2.0 ** rng.uniform(-10, 2)))


def _quant_range(rng: np.random.Generator) -> tuple[int, int]:
    return [(-128, 127), (-127, 127), (int(rng.integers(-128, 0)), int(rng.integers(0, 128)))][
        int(rng.integers(0, 3))
    ]


def _floats(rng: np.random.Generator, shape: tuple[int, ...], scale, zero_point) -> np.ndarray:
    """Values on the grid, exactly half-way between grid points (for power-of-two scales), and
    far outside the range; ``scale``/``zero_point`` broadcast against ``shape``."""
    k = rng.integers(-140, 141, size=shape)
    kind = rng.integers(0, 4, size=shape)
    steps = np.where(kind == 0, k - zero_point, k - zero_point + 0.5)
    steps = np.where(kind == 2, rng.normal(0, 64, size=shape), steps)
    steps = np.where(kind == 3, rng.choice([-1e4, 1e4], size=shape), steps)
    return (steps * scale).astype(np.float32)


def _generate_quantize(name: str):
    def generate(rng: np.random.Generator) -> tuple[Arrays, Params]:
        scale, zero_point = _scale(rng), int(rng.integers(-128, 128))
        quant_min, quant_max = _quant_range(rng)
        params = {"function": name, "scale": scale, "zero_point": zero_point}
        params.update(quant_min=quant_min, quant_max=quant_max)
        return {"input": _floats(rng, (int(rng.integers(1, 65)),), scale, zero_point)}, params

    return generate


def _generate_dequantize(name: str):
    def generate(rng: np.random.Generator) -> tuple[Arrays, Params]:
        quant_min, quant_max = _quant_range(rng)
        zero_point = int(rng.integers(quant_min, quant_max + 1))
        data = rng.integers(-128, 128, size=int(rng.integers(1, 65))).astype(np.int8)
        data[0], data[-1] = -128, 127
        params = {"function": name, "scale": _scale(rng), "zero_point": zero_point}
        params.update(quant_min=quant_min, quant_max=quant_max)
        return {"input": data}, params

    return generate


def _channel_arrays(arrays: Mapping[str, np.ndarray], name: str) -> tuple[np.ndarray, np.ndarray]:
    return array(arrays, "scales", np.float64, name), array(arrays, "zero_points", np.int32, name)


def _run_quantize_per_channel(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]) -> np.ndarray:
    name = "refsim_quantize_per_channel_s8"
    scales, zero_points = _channel_arrays(arrays, name)
    data = array(arrays, "input", np.float32, name)
    lo, hi = param(params, "quant_min"), param(params, "quant_max")
    return quantize_per_channel(data, scales, zero_points, param(params, "axis"), lo, hi, np.int8)


def _run_dequantize_per_channel(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]) -> np.ndarray:
    name = "refsim_dequantize_per_channel_s8"
    scales, zero_points = _channel_arrays(arrays, name)
    data = array(arrays, "input", np.int8, name)
    lo, hi = param(params, "quant_min"), param(params, "quant_max")
    return dequantize_per_channel(data, scales, zero_points, param(params, "axis"), lo, hi, np.float32)


def _generate_per_channel(name: str, quantize: bool):
    def generate(rng: np.random.Generator) -> tuple[Arrays, Params]:
        shape = tuple(int(v) for v in rng.integers(1, 5, size=int(rng.integers(1, 5))))
        axis = int(rng.integers(0, len(shape)))
        channels = shape[axis]
        quant_min, quant_max = _quant_range(rng)
        scales = np.array([_scale(rng) for _ in range(channels)], np.float64)
        zero_points = rng.integers(quant_min, quant_max + 1, size=channels).astype(np.int32)
        if quantize:
            along = (-1,) + (1,) * (len(shape) - axis - 1)
            data = _floats(rng, shape, scales.reshape(along), zero_points.reshape(along))
        else:
            data = rng.integers(-128, 128, size=shape).astype(np.int8)
        params = {"function": name, "axis": axis, "quant_min": quant_min, "quant_max": quant_max}
        return {"input": data, "scales": scales, "zero_points": zero_points}, params

    return generate


def _per_tensor_function(name: str, kernel, in_dtype, quantize: bool) -> VectorFunction:
    def run(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]) -> np.ndarray:
        return kernel(array(arrays, "input", in_dtype, name), *_per_tensor(params))

    generate = _generate_quantize(name) if quantize else _generate_dequantize(name)
    return VectorFunction(
        name=name, family=FAMILY, arrays=("input",), params=_PER_TENSOR, run=run, generate=generate
    )


register(_per_tensor_function("refsim_quantize_per_tensor_s8", quantize_per_tensor, np.float32, True))
register(_per_tensor_function("refsim_dequantize_per_tensor_s8", dequantize_per_tensor, np.int8, False))
register(
    _per_tensor_function(
        "refsim_cortex_m_quantize_per_tensor_s8", cortex_m_quantize_per_tensor, np.float32, True
    )
)
register(
    _per_tensor_function(
        "refsim_cortex_m_dequantize_per_tensor_s8", cortex_m_dequantize_per_tensor, np.int8, False
    )
)
register(
    VectorFunction(
        name="refsim_quantize_per_channel_s8",
        family=FAMILY,
        arrays=("input", "scales", "zero_points"),
        params=_PER_CHANNEL,
        run=_run_quantize_per_channel,
        generate=_generate_per_channel("refsim_quantize_per_channel_s8", True),
    )
)
register(
    VectorFunction(
        name="refsim_dequantize_per_channel_s8",
        family=FAMILY,
        arrays=("input", "scales", "zero_points"),
        params=_PER_CHANNEL,
        run=_run_dequantize_per_channel,
        generate=_generate_per_channel("refsim_dequantize_per_channel_s8", False),
    )
)

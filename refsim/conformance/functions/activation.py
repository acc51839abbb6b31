"""Conformance adapters for :mod:`kernels_py.activation`.

``arm_relu6_s8`` (CMSIS-NN) and ``refsim_lut_s8``: ExecuTorch's cortex_m ``quantized_activation``,
which has no CMSIS-NN counterpart (arrays ``input`` [size] and ``table`` [256], both int8; no
required scalar; informational ``activation``, ``input_scale``, ``input_zero_point``,
``output_scale``, ``output_zero_point`` when the table came from :func:`build_activation_lut`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from kernels_py.activation import ACTIVATION_FUNCTIONS, build_activation_lut, lut_s8, relu6_s8
from kernels_py.errors import KernelArgumentError
from refsim.conformance.registry import Arrays, Params, VectorFunction, array, param, register
from refsim.errors import VectorError

FAMILY = "activation"
#: arm_relu6_s8 takes ``uint16_t size``.
RELU6_MAX_SIZE = 0xFFFF
_EDGES = np.array([-128, -127, -1, 0, 1, 5, 6, 7, 126, 127], np.int8)


def _int8_vector(rng: np.random.Generator, size: int) -> np.ndarray:
    """Random int8 values, a third of them drawn from the edges."""
    values = rng.integers(-128, 128, size=size).astype(np.int8)
    edge = rng.random(size) < 1 / 3
    values[edge] = rng.choice(_EDGES, size=int(edge.sum()))
    return values


def _run_relu6(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]) -> np.ndarray:
    name = "arm_relu6_s8"
    data = array(arrays, "input", np.int8, name)
    size = param(params, "size")
    if not 0 <= size <= RELU6_MAX_SIZE:
        raise KernelArgumentError(name, "size", f"a uint16_t (0..{RELU6_MAX_SIZE})", size)
    if data.shape != (size,):
        raise VectorError(f"{name}: array 'input' must have shape ({size},) (params size), got {data.shape}")
    return relu6_s8(data)


def _generate_relu6(rng: np.random.Generator) -> tuple[Arrays, Params]:
    size = int(rng.integers(1, 65))
    return {"input": _int8_vector(rng, size)}, {"function": "arm_relu6_s8", "size": size}


def _run_lut(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]) -> np.ndarray:
    name = "refsim_lut_s8"
    return lut_s8(array(arrays, "input", np.int8, name), array(arrays, "table", np.int8, name))


def _generate_lut(rng: np.random.Generator) -> tuple[Arrays, Params]:
    size = int(rng.integers(1, 65))
    params: Params = {"function": "refsim_lut_s8"}
    if rng.random() < 0.25:
        table = rng.integers(-128, 128, size=256).astype(np.int8)
    else:
        activation = str(rng.choice(sorted(ACTIVATION_FUNCTIONS)))
        input_scale = float(np.float32(2.0 ** rng.uniform(-8, 0)))
        output_scale = float(np.float32(2.0 ** rng.uniform(-8, 0)))
        input_zero_point = int(rng.integers(-128, 128))
        output_zero_point = int(rng.integers(-128, 128))
        table = build_activation_lut(
            activation, input_scale, input_zero_point, output_scale, output_zero_point
        )
        params.update(
            activation=activation,
            input_scale=input_scale,
            input_zero_point=input_zero_point,
            output_scale=output_scale,
            output_zero_point=output_zero_point,
        )
    return {"input": _int8_vector(rng, size), "table": table}, params


register(
    VectorFunction(
        name="arm_relu6_s8",
        family=FAMILY,
        arrays=("input",),
        params=("size",),
        run=_run_relu6,
        generate=_generate_relu6,
    )
)
register(
    VectorFunction(
        name="refsim_lut_s8",
        family=FAMILY,
        arrays=("input", "table"),
        params=(),
        run=_run_lut,
        generate=_generate_lut,
    )
)

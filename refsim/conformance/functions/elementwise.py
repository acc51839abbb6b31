"""Conformance adapters for :mod:`kernels_py.elementwise`.

``arm_elementwise_add_s8`` and ``arm_elementwise_mul_s8`` are block functions: ``input_1``
and ``input_2`` are flat [block_size]. ``arm_maximum_s8``/``arm_minimum_s8`` take
``input_1`` [n1, h1, w1, c1] and ``input_2`` [n2, h2, w2, c2] with their dims structs and
broadcast. Add and mul cases use TFLM's parameter preparation from random scales most of
the time (``elementwise_add_params``; ``s1 * s2 / s_out`` for mul) and raw extremes the
rest, always where no int32 intermediate overflows (C's signed overflow is undefined).
Max/min cases never use the shapes CMSIS-NN's broadcast walk gets wrong
(:func:`kernels_py.elementwise.cmsis_minmax_broadcast_is_exact`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from kernels_py import elementwise as ew
from kernels_py.fixedpoint import elementwise_add_params, quantize_multiplier
from refsim.conformance.registry import (
    Arrays,
    Params,
    VectorFunction,
    array,
    dims,
    param,
    put_dims,
    random_activation,
    random_input_offset,
    random_multiplier,
    random_output_offset,
    register,
)
from refsim.errors import VectorError

FAMILY = "elementwise"
MAX_BLOCK = 512

ADD_PARAMS = (
    "input_1_offset",
    "input_1_mult",
    "input_1_shift",
    "input_2_offset",
    "input_2_mult",
    "input_2_shift",
    "left_shift",
    "out_offset",
    "out_mult",
    "out_shift",
    "out_activation_min",
    "out_activation_max",
    "block_size",
)
MUL_PARAMS = (
    "input_1_offset",
    "input_2_offset",
    "out_offset",
    "out_mult",
    "out_shift",
    "out_activation_min",
    "out_activation_max",
    "block_size",
)
MINMAX_PARAMS = tuple(f"{s}.{k}" for s in ("input_1_dims", "input_2_dims", "output_dims") for k in "nhwc")


def _block(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any], function: str):
    size = param(params, "block_size")
    a = array(arrays, "input_1", np.int8, function).reshape(-1)
    b = array(arrays, "input_2", np.int8, function).reshape(-1)
    if a.size != size or b.size != size:
        raise VectorError(
            f"{function}: block_size {size}, but input_1 has {a.size} and input_2 {b.size} elements"
        )
    return a, b


def _run_add(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]) -> np.ndarray:
    a, b = _block(arrays, params, ew.ADD_S8)
    kwargs = {k: param(params, k) for k in ADD_PARAMS if k != "block_size"}
    return ew.elementwise_add_s8(a, b, **kwargs)


def _run_mul(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]) -> np.ndarray:
    a, b = _block(arrays, params, ew.MUL_S8)
    kwargs = {k: param(params, k) for k in MUL_PARAMS if k != "block_size"}
    return ew.elementwise_mul_s8(a, b, **kwargs)


def _minmax_runner(function: str, kernel: Callable[[np.ndarray, np.ndarray], np.ndarray]):
    def run(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]) -> np.ndarray:
        d1, d2, out = (dims(params, s) for s in ("input_1_dims", "input_2_dims", "output_dims"))
        try:
            expected = np.broadcast_shapes(d1, d2)
        except ValueError:
            raise VectorError(
                f"{function}: input_1_dims {d1} and input_2_dims {d2} do not broadcast"
            ) from None
        if tuple(out) != expected:
            raise VectorError(f"{function}: output_dims {out}, but the inputs broadcast to {expected}")
        arrs = []
        for key, shape in (("input_1", d1), ("input_2", d2)):
            arr = array(arrays, key, np.int8, function)
            if arr.size != int(np.prod(shape)):
                raise VectorError(f"{function}: array {key!r} has {arr.size} elements, its dims say {shape}")
            arrs.append(arr.reshape(shape))
        return kernel(*arrs)

    return run


# --- case generation ----------------------------------------------------------------------


def _scale(rng: np.random.Generator) -> float:
    return float(2.0 ** rng.uniform(-10, 0))


def _block_inputs(rng: np.random.Generator) -> tuple[Arrays, int]:
    size = int(rng.choice([1, 3, 4, 5, 16, 17, 63, int(rng.integers(1, MAX_BLOCK, endpoint=True))]))
    arrays: Arrays = {
        "input_1": rng.integers(-128, 127, size, endpoint=True).astype(np.int8),
        "input_2": rng.integers(-128, 127, size, endpoint=True).astype(np.int8),
    }
    return arrays, size


def _add_case(rng: np.random.Generator) -> tuple[Arrays, Params]:
    arrays, size = _block_inputs(rng)
    if rng.random() < 0.7:
        s1, s2 = _scale(rng), _scale(rng)
        # An output scale near the inputs' (the sum spans about twice their range).
        q = elementwise_add_params(s1, s2, max(s1, s2) * float(2.0 ** rng.uniform(-1, 2)))
    else:
        # Raw extremes. Input shifts <= 0 and left_shift <= 20 keep each scaled input below
        # 2^28 in magnitude, so the int32 sum cannot overflow; the DSP path needs >= 16.
        q = {
            "input_1_mult": random_multiplier(rng),
            "input_1_shift": int(rng.integers(-31, 0, endpoint=True)),
            "input_2_mult": random_multiplier(rng),
            "input_2_shift": int(rng.integers(-31, 0, endpoint=True)),
            "out_mult": random_multiplier(rng),
            "out_shift": int(rng.integers(-31, 0, endpoint=True)),
            "left_shift": int(rng.integers(16, 20, endpoint=True)),
        }
    if rng.random() < 0.25:  # subtraction, as ExecuTorch lowers aten.sub
        q["input_2_mult"] = -q["input_2_mult"]
    act_min, act_max = random_activation(rng, (0.5, 0.2, 0.2, 0.1))
    params: Params = {
        "input_1_offset": random_input_offset(rng),
        "input_2_offset": random_input_offset(rng),
        "out_offset": random_output_offset(rng),
        **{k: int(v) for k, v in q.items()},
        "out_activation_min": act_min,
        "out_activation_max": act_max,
        "block_size": size,
        "macs": size,
    }
    return arrays, params


def _mul_case(rng: np.random.Generator) -> tuple[Arrays, Params]:
    arrays, size = _block_inputs(rng)
    if rng.random() < 0.7:
        # s1 * s2 / s_out: the product spans about 2^16 input steps, so a ratio in
        # [2^-10, 2^-4] maps it onto int8 with or without saturation.
        mult, shift = quantize_multiplier(float(2.0 ** -rng.uniform(4, 10)))
    else:
        # (x1 + o1) * (x2 + o2) is at most 65025 < 2^16, so a left shift up to 15 cannot overflow.
        mult, shift = random_multiplier(rng), int(rng.integers(-31, 15, endpoint=True))
    act_min, act_max = random_activation(rng, (0.5, 0.2, 0.2, 0.1))
    params: Params = {
        "input_1_offset": random_input_offset(rng),
        "input_2_offset": random_input_offset(rng),
        "out_offset": random_output_offset(rng),
        "out_mult": int(mult),
        "out_shift": int(shift),
        "out_activation_min": act_min,
        "out_activation_max": act_max,
        "block_size": size,
        "macs": size,
    }
    return arrays, params


def _minmax_shapes(rng: np.random.Generator) -> tuple[tuple[int, ...], tuple[int, ...]]:
    while True:
        full = tuple(int(v) for v in rng.integers(1, 6, 4, endpoint=True))
        kind = rng.choice(["same", "scalar", "channel", "general"])
        if kind == "same":
            other = full
        elif kind == "scalar":
            other = (1, 1, 1, 1)
        elif kind == "channel":
            other = (1, 1, 1, full[3])
        else:
            other = tuple(d if rng.random() < 0.5 else 1 for d in full)
        pair = (full, other) if rng.random() < 0.5 else (other, full)
        if kind == "general" and rng.random() < 0.5:
            # Broadcast in both directions: each side keeps some extents the other lacks.
            ones = rng.random(4) < 0.5
            pair = (tuple(1 if o else d for o, d in zip(ones, full, strict=True)),
                    tuple(d if o else 1 for o, d in zip(ones, full, strict=True)))  # fmt: skip
        if ew.cmsis_minmax_broadcast_is_exact(*pair):
            return pair


def _minmax_case(rng: np.random.Generator) -> tuple[Arrays, Params]:
    d1, d2 = _minmax_shapes(rng)
    arrays: Arrays = {
        "input_1": rng.integers(-128, 127, d1, endpoint=True).astype(np.int8),
        "input_2": rng.integers(-128, 127, d2, endpoint=True).astype(np.int8),
    }
    out = np.broadcast_shapes(d1, d2)
    params: Params = {"macs": int(np.prod(out))}
    put_dims(params, "input_1_dims", d1)
    put_dims(params, "input_2_dims", d2)
    put_dims(params, "output_dims", out)
    return arrays, params


register(
    VectorFunction(
        name=ew.ADD_S8,
        family=FAMILY,
        arrays=("input_1", "input_2"),
        params=ADD_PARAMS,
        run=_run_add,
        generate=_add_case,
    )
)
register(
    VectorFunction(
        name=ew.MUL_S8,
        family=FAMILY,
        arrays=("input_1", "input_2"),
        params=MUL_PARAMS,
        run=_run_mul,
        generate=_mul_case,
    )
)
register(
    VectorFunction(
        name=ew.MAXIMUM_S8,
        family=FAMILY,
        arrays=("input_1", "input_2"),
        params=MINMAX_PARAMS,
        run=_minmax_runner(ew.MAXIMUM_S8, ew.maximum_s8),
        generate=_minmax_case,
    )
)
register(
    VectorFunction(
        name=ew.MINIMUM_S8,
        family=FAMILY,
        arrays=("input_1", "input_2"),
        params=MINMAX_PARAMS,
        run=_minmax_runner(ew.MINIMUM_S8, ew.minimum_s8),
        generate=_minmax_case,
    )
)

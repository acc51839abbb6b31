"""Conformance adapters for :mod:`kernels_py.fully_connected`.

``arm_fully_connected_s8`` and ``arm_fully_connected_per_channel_s8``: ``input`` [N, K],
``filter`` [C_OUT, K], ``bias`` [C_OUT] (plus per-channel ``multiplier``/``shift``);
``arm_batch_matmul_s8``: ``input_lhs`` [N1, H1, LHS_ROWS, K], ``input_rhs`` [N2, H2,
RHS_ROWS, K]; ``arm_vector_sum_s8``: ``vector_data`` [rows, cols], ``bias_data`` [rows],
whose ``output`` is int32 (the kernel sums ``arm_fully_connected_s8`` reads from
``ctx->buf`` on MVE). The C functions take their sizes from the dims structs (batches
``input_dims.n``, depth ``filter_dims.n``, channels ``output_dims.c``), so ``run`` does too.

FC cases keep ``filter_offset`` at 0 as the vector contract says (``arm_fully_connected_s8``
V.5.2.0 and older ignore it); batch matmul cases draw a real rhs zero point, as TFLM passes.
Biases stay inside ``INT32_MAX - 65025 * K`` so no vector depends on C's signed overflow.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from kernels_py import fully_connected as fc
from kernels_py.types import Activation, BmmParams, FcParams, PerChannelQuantParams, PerTensorQuantParams
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

FAMILY = "fully_connected"
MAX_MACS = 50_000

_DIMS = tuple(f"{s}.{k}" for s in ("input_dims", "filter_dims", "output_dims") for k in "nhwc")
FC_PARAMS = ("input_offset", "filter_offset", "output_offset", "activation.min", "activation.max")
BMM_PARAMS = (
    "adj_x",
    "adj_y",
    *(f"fc_params.{k}" for k in FC_PARAMS),
    "multiplier",
    "shift",
    *(f"{s}.{k}" for s in ("input_lhs_dims", "input_rhs_dims", "output_dims") for k in "nhwc"),
)


def _reshaped(arrays: Mapping[str, np.ndarray], key: str, dtype: type, function: str, shape) -> np.ndarray:
    arr = array(arrays, key, dtype, function)
    if arr.size != int(np.prod(shape)):
        raise VectorError(f"{function}: array {key!r} has {arr.size} elements, its dims say {tuple(shape)}")
    return arr.reshape(shape)


def _fc_params(params: Mapping[str, Any], prefix: str = "") -> FcParams:
    v = {k: param(params, prefix + k) for k in FC_PARAMS}
    return FcParams(
        input_offset=v["input_offset"],
        filter_offset=v["filter_offset"],
        output_offset=v["output_offset"],
        activation=Activation(v["activation.min"], v["activation.max"]),
    )


def _fc_arrays(function: str, arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]):
    input_dims, filter_dims, output_dims = (
        dims(params, s) for s in ("input_dims", "filter_dims", "output_dims")
    )
    batches, depth, out_depth = input_dims[0], filter_dims[0], output_dims[3]
    if output_dims[0] != batches or filter_dims[3] != out_depth:
        raise VectorError(
            f"{function}: dims disagree: input {input_dims}, filter {filter_dims}, output {output_dims}"
        )
    input = _reshaped(arrays, "input", np.int8, function, (batches, depth))
    filter = _reshaped(arrays, "filter", np.int8, function, (out_depth, depth))
    bias = _reshaped(arrays, "bias", np.int32, function, (out_depth,))
    return input, filter, None if params.get("bias_is_null", False) else bias, out_depth


def _run_fc(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]) -> np.ndarray:
    input, filter, bias, _ = _fc_arrays(fc.FC_S8, arrays, params)
    quant = PerTensorQuantParams(param(params, "multiplier"), param(params, "shift"))
    return fc.fully_connected_s8(input, filter, bias, _fc_params(params), quant)


def _run_fc_per_channel(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]) -> np.ndarray:
    f = fc.FC_PER_CHANNEL_S8
    input, filter, bias, out_depth = _fc_arrays(f, arrays, params)
    quant = PerChannelQuantParams(
        _reshaped(arrays, "multiplier", np.int32, f, (out_depth,)),
        _reshaped(arrays, "shift", np.int32, f, (out_depth,)),
    )
    return fc.fully_connected_per_channel_s8(input, filter, bias, _fc_params(params), quant)


def _run_bmm(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]) -> np.ndarray:
    f = fc.BATCH_MATMUL_S8
    lhs_dims, rhs_dims, out_dims = (
        dims(params, s) for s in ("input_lhs_dims", "input_rhs_dims", "output_dims")
    )
    expected = (max(lhs_dims[0], rhs_dims[0]), max(lhs_dims[1], rhs_dims[1]), lhs_dims[2], rhs_dims[2])
    if tuple(out_dims) != expected:
        raise VectorError(f"{f}: output_dims {out_dims} disagree with lhs {lhs_dims} and rhs {rhs_dims}")
    bmm = BmmParams(
        param(params, "adj_x", bool), param(params, "adj_y", bool), _fc_params(params, "fc_params.")
    )
    quant = PerTensorQuantParams(param(params, "multiplier"), param(params, "shift"))
    lhs = _reshaped(arrays, "input_lhs", np.int8, f, lhs_dims)
    rhs = _reshaped(arrays, "input_rhs", np.int8, f, rhs_dims)
    return fc.batch_matmul_s8(lhs, rhs, bmm, quant)


def _run_vector_sum(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]) -> np.ndarray:
    f = fc.VECTOR_SUM_S8
    rows, cols = param(params, "vector_rows"), param(params, "vector_cols")
    data = _reshaped(arrays, "vector_data", np.int8, f, (rows, cols))
    bias = _reshaped(arrays, "bias_data", np.int32, f, (rows,))
    bias_arg = None if params.get("bias_is_null", False) else bias
    return fc.vector_sum_s8(data, param(params, "lhs_offset"), bias_arg, param(params, "rhs_offset"))


# --- case generation ----------------------------------------------------------------------


def _acc_rms(depth: int, input_offset: int, filter_offset: int = 0) -> float:
    """RMS of a depth-``depth`` accumulator over uniform int8 data (uniform int8 has RMS ~74)."""
    return float(np.sqrt(depth * (74.0**2 + input_offset**2) * (74.0**2 + filter_offset**2)))


def _shift(rng: np.random.Generator, acc_rms: float) -> int:
    """Mostly the shift that brings the accumulator to about +-50 (multipliers are in
    [0.5, 1) in Q0.31), sometimes anywhere in [-31, 30] for the rounding extremes."""
    if rng.random() < 0.2:
        return int(rng.integers(-31, 30, endpoint=True))
    centre = -int(np.round(np.log2(acc_rms / 50.0)))
    return int(np.clip(centre + rng.integers(-1, 1, endpoint=True), -31, 30))


def _bias(rng: np.random.Generator, size: int, depth: int, acc_rms: float) -> np.ndarray:
    """Biases of the accumulator's own size, or (rarely) the largest ones that cannot make
    the int32 accumulator overflow."""
    room = 2**31 - 1 - 65025 * depth
    if rng.random() < 0.15:
        return rng.choice([-room, room, 0], size=size).astype(np.int32)
    bound = int(min(acc_rms, room))
    return rng.integers(-bound, bound, size=size, endpoint=True).astype(np.int32)


def _fc_shape(rng: np.random.Generator) -> tuple[int, int, int]:
    batches = int(rng.choice([1, 1, 2, 3, 4]))
    depth = int(rng.choice([1, 3, 7, 16, 33, 64, 127, 250]))
    out_depth = int(rng.integers(1, 40, endpoint=True))
    while batches * depth * out_depth > MAX_MACS:
        out_depth = max(1, out_depth // 2)
        depth = max(1, depth // 2)
    return batches, depth, out_depth


def _fc_case(rng: np.random.Generator, per_channel: bool) -> tuple[Arrays, Params]:
    batches, depth, out_depth = _fc_shape(rng)
    input_offset = random_input_offset(rng)
    acc_rms = _acc_rms(depth, input_offset)
    bias_is_null = bool(rng.random() < 0.15)
    arrays: Arrays = {
        "input": rng.integers(-128, 127, (batches, depth), endpoint=True).astype(np.int8),
        "filter": rng.integers(-128, 127, (out_depth, depth), endpoint=True).astype(np.int8),
        "bias": np.zeros(out_depth, np.int32) if bias_is_null else _bias(rng, out_depth, depth, acc_rms),
    }
    act_min, act_max = random_activation(rng)
    params: Params = {
        "input_offset": input_offset,
        "filter_offset": 0,
        "output_offset": random_output_offset(rng),
        "activation.min": act_min,
        "activation.max": act_max,
        "bias_is_null": bias_is_null,
        "macs": batches * depth * out_depth,
    }
    if per_channel:
        arrays["multiplier"] = random_multiplier(rng, out_depth)
        arrays["shift"] = np.array([_shift(rng, acc_rms) for _ in range(out_depth)], np.int32)
    else:
        params["multiplier"] = random_multiplier(rng)
        params["shift"] = _shift(rng, acc_rms)
    put_dims(params, "input_dims", (batches, 1, 1, depth))
    put_dims(params, "filter_dims", (depth, 1, 1, out_depth))
    put_dims(params, "output_dims", (batches, 1, 1, out_depth))
    put_dims(params, "bias_dims", (1, 1, 1, out_depth))
    return arrays, params


def _bmm_case(rng: np.random.Generator) -> tuple[Arrays, Params]:
    while True:
        n1, n2 = (int(v) for v in rng.choice([(1, 1), (2, 2), (1, 3), (2, 1)]))
        h1, h2 = (int(v) for v in rng.choice([(1, 1), (3, 3), (2, 1), (1, 2)]))
        lhs_rows, rhs_rows = (int(v) for v in rng.integers(1, 9, 2, endpoint=True))
        depth = int(rng.choice([1, 5, 16, 31, 64]))
        macs = max(n1, n2) * max(h1, h2) * lhs_rows * rhs_rows * depth
        if macs <= MAX_MACS:
            break
    arrays: Arrays = {
        "input_lhs": rng.integers(-128, 127, (n1, h1, lhs_rows, depth), endpoint=True).astype(np.int8),
        "input_rhs": rng.integers(-128, 127, (n2, h2, rhs_rows, depth), endpoint=True).astype(np.int8),
    }
    act_min, act_max = random_activation(rng)
    input_offset, filter_offset = random_input_offset(rng), random_input_offset(rng)
    params: Params = {
        "adj_x": False,
        "adj_y": False,
        "fc_params.input_offset": input_offset,
        "fc_params.filter_offset": filter_offset,
        "fc_params.output_offset": random_output_offset(rng),
        "fc_params.activation.min": act_min,
        "fc_params.activation.max": act_max,
        "multiplier": random_multiplier(rng),
        "shift": _shift(rng, _acc_rms(depth, input_offset, filter_offset)),
        "macs": macs,
    }
    put_dims(params, "input_lhs_dims", (n1, h1, lhs_rows, depth))
    put_dims(params, "input_rhs_dims", (n2, h2, rhs_rows, depth))
    put_dims(params, "output_dims", (max(n1, n2), max(h1, h2), lhs_rows, rhs_rows))
    return arrays, params


def _vector_sum_case(rng: np.random.Generator) -> tuple[Arrays, Params]:
    rows = int(rng.integers(1, 40, endpoint=True))
    cols = int(rng.choice([1, 3, 15, 16, 17, 64, 255]))
    bias_is_null = bool(rng.random() < 0.2)
    arrays: Arrays = {
        "vector_data": rng.integers(-128, 127, (rows, cols), endpoint=True).astype(np.int8),
        "bias_data": np.zeros(rows, np.int32) if bias_is_null else _bias(rng, rows, cols, 2.0**24),
    }
    params: Params = {
        "vector_cols": cols,
        "vector_rows": rows,
        "lhs_offset": random_input_offset(rng),
        "rhs_offset": random_input_offset(rng),
        "bias_is_null": bias_is_null,
        "macs": rows * cols,
    }
    return arrays, params


register(
    VectorFunction(
        name=fc.FC_S8,
        family=FAMILY,
        arrays=("input", "filter", "bias"),
        params=(*FC_PARAMS, "multiplier", "shift", *_DIMS),
        run=_run_fc,
        generate=lambda rng: _fc_case(rng, per_channel=False),
    )
)
register(
    VectorFunction(
        name=fc.FC_PER_CHANNEL_S8,
        family=FAMILY,
        arrays=("input", "filter", "bias", "multiplier", "shift"),
        params=(*FC_PARAMS, *_DIMS),
        run=_run_fc_per_channel,
        generate=lambda rng: _fc_case(rng, per_channel=True),
    )
)
register(
    VectorFunction(
        name=fc.BATCH_MATMUL_S8,
        family=FAMILY,
        arrays=("input_lhs", "input_rhs"),
        params=BMM_PARAMS,
        run=_run_bmm,
        generate=_bmm_case,
    )
)
register(
    VectorFunction(
        name=fc.VECTOR_SUM_S8,
        family=FAMILY,
        arrays=("vector_data", "bias_data"),
        params=("vector_cols", "vector_rows", "lhs_offset", "rhs_offset"),
        run=_run_vector_sum,
        generate=_vector_sum_case,
    )
)

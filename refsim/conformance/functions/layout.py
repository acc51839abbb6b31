"""Conformance adapters for :mod:`kernels_py.layout`: ``arm_pad_s8`` and ``arm_transpose_s8``.

* ``arm_pad_s8``: ``input`` [n, h, w, c]; params ``input_size.*``, ``pre_pad.*``, ``post_pad.*``,
  ``pad_value``.
* ``arm_transpose_s8``: ``input`` in its natural 2-, 3- or 4-D shape; params ``num_dims``,
  ``permutations`` (list of ``num_dims`` ints), ``input_dims.*`` and ``output_dims.*``
  left-aligned as CMSIS-NN receives them (``[rows, cols]`` is ``{n: rows, h: cols, w: 1, c: 1}``);
  CMSIS-NN reads no entry past ``num_dims``, so cases fill them with 1 or, as CMSIS-NN's own unit
  tests do, 0, and the adapter ignores them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from kernels_py.layout import pad_s8, transpose_s8
from kernels_py.types import Dims
from refsim.conformance.registry import (
    Arrays,
    Params,
    VectorFunction,
    array,
    dims,
    param,
    put_dims,
    register,
)
from refsim.errors import VectorError

FAMILY = "layout"
PAD = "arm_pad_s8"
TRANSPOSE = "arm_transpose_s8"


def _int8_tensor(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    data = rng.integers(-128, 128, size=shape).astype(np.int8)
    data.reshape(-1)[:: max(1, data.size // 3)] = rng.choice(np.array([-128, 127, 0], np.int8))
    return data


# --- pad --------------------------------------------------------------------------------------


def _run_pad(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]) -> np.ndarray:
    data = array(arrays, "input", np.int8, PAD)
    input_size = dims(params, "input_size")
    if data.shape != input_size:
        raise VectorError(f"{PAD}: array 'input' must have shape {input_size} (input_size), got {data.shape}")
    pre, post = Dims(*dims(params, "pre_pad")), Dims(*dims(params, "post_pad"))
    return pad_s8(data, pre, post, param(params, "pad_value"))


def _generate_pad(rng: np.random.Generator) -> tuple[Arrays, Params]:
    shape = tuple(int(v) for v in rng.integers(1, 4, size=4))
    params: Params = {
        "function": PAD,
        "pad_value": int(rng.choice([-128, 127, 0, int(rng.integers(-128, 128))])),
    }
    put_dims(params, "input_size", shape)
    put_dims(params, "pre_pad", tuple(int(v) for v in rng.integers(0, 3, size=4)))
    put_dims(params, "post_pad", tuple(int(v) for v in rng.integers(0, 3, size=4)))
    return {"input": _int8_tensor(rng, shape)}, params


# --- transpose --------------------------------------------------------------------------------


def _left_aligned(params: Mapping[str, Any], prefix: str, num_dims: int) -> tuple[int, ...]:
    return dims(params, prefix)[:num_dims]


def _put_left_aligned(params: Params, prefix: str, shape: tuple[int, ...], unused: int = 1) -> None:
    for key, value in zip("nhwc", tuple(shape) + (unused,) * (4 - len(shape)), strict=True):
        params[f"{prefix}.{key}"] = int(value)


def _run_transpose(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]) -> np.ndarray:
    data = array(arrays, "input", np.int8, TRANSPOSE)
    num_dims = param(params, "num_dims")
    perm = param(params, "permutations", list)
    if data.ndim != num_dims or len(perm) != num_dims:
        raise VectorError(
            f"{TRANSPOSE}: num_dims {num_dims} must equal the input rank {data.ndim} "
            f"and len(permutations) {len(perm)}"
        )
    if _left_aligned(params, "input_dims", num_dims) != data.shape:
        raise VectorError(f"{TRANSPOSE}: input_dims must start with the input shape {data.shape}")
    out = transpose_s8(data, tuple(perm))
    if _left_aligned(params, "output_dims", num_dims) != out.shape:
        raise VectorError(f"{TRANSPOSE}: output_dims must start with the permuted shape {out.shape}")
    return out


def _generate_transpose(rng: np.random.Generator) -> tuple[Arrays, Params]:
    num_dims = int(rng.integers(1, 5))
    shape = tuple(int(v) for v in rng.integers(1, 5, size=num_dims))
    # CMSIS-NN's 2-D branch always transposes, so the 2-D identity is not a portable case.
    perm = [1, 0] if num_dims == 2 else [int(p) for p in rng.permutation(num_dims)]
    params: Params = {"function": TRANSPOSE, "num_dims": num_dims, "permutations": perm}
    unused = int(rng.choice([0, 1]))
    _put_left_aligned(params, "input_dims", shape, unused)
    _put_left_aligned(params, "output_dims", tuple(shape[p] for p in perm), unused)
    return {"input": _int8_tensor(rng, shape)}, params


def _dim_keys(*prefixes: str) -> tuple[str, ...]:
    return tuple(f"{prefix}.{k}" for prefix in prefixes for k in "nhwc")


register(
    VectorFunction(
        name=PAD,
        family=FAMILY,
        arrays=("input",),
        params=(*_dim_keys("input_size", "pre_pad", "post_pad"), "pad_value"),
        run=_run_pad,
        generate=_generate_pad,
    )
)
register(
    VectorFunction(
        name=TRANSPOSE,
        family=FAMILY,
        arrays=("input",),
        params=("num_dims", "permutations", *_dim_keys("input_dims", "output_dims")),
        run=_run_transpose,
        generate=_generate_transpose,
    )
)

"""Conformance adapter for :mod:`kernels_py.softmax`: ``arm_softmax_s8``.

``input`` [num_rows, row_size] int8; params ``num_rows``, ``row_size``, ``mult``, ``shift``,
``diff_min`` (output scale 1/256 and zero point -128 implied). Generated cases keep
``row_size <= 511`` so no row sum reaches 2^28 (see :mod:`kernels_py.softmax`); informational
``beta`` and ``input_scale`` when the parameters came from :func:`softmax_params`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from kernels_py.softmax import softmax_params, softmax_s8
from refsim.conformance.registry import (
    Arrays,
    Params,
    VectorFunction,
    array,
    param,
    random_multiplier,
    register,
)
from refsim.errors import VectorError

FAMILY = "softmax"
NAME = "arm_softmax_s8"


def _run(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]) -> np.ndarray:
    data = array(arrays, "input", np.int8, NAME)
    num_rows, row_size = param(params, "num_rows"), param(params, "row_size")
    if data.shape != (num_rows, row_size):
        raise VectorError(f"{NAME}: array 'input' must have shape ({num_rows}, {row_size}), got {data.shape}")
    return softmax_s8(data, param(params, "mult"), param(params, "shift"), param(params, "diff_min"))


def _rows(rng: np.random.Generator, num_rows: int, row_size: int) -> np.ndarray:
    rows = rng.integers(-128, 128, size=(num_rows, row_size)).astype(np.int8)
    for r in range(num_rows):
        kind = rng.integers(0, 4)
        if kind == 1:  # all equal: every element is the maximum
            rows[r] = rng.choice([-128, 0, 127, int(rng.integers(-128, 128))])
        elif kind == 2:  # two levels: the extremes of diff
            rows[r] = rng.choice(np.array([-128, 127], np.int8), size=row_size)
        elif kind == 3:  # a narrow band near the maximum
            top = int(rng.integers(-120, 128))
            rows[r] = np.clip(top - rng.integers(0, 8, size=row_size), -128, 127)
    return rows


def _generate(rng: np.random.Generator) -> tuple[Arrays, Params]:
    num_rows = int(rng.integers(1, 5))
    row_size = int(rng.choice([1, 2, 3, int(rng.integers(1, 41))]))
    params: Params = {"function": NAME, "num_rows": num_rows, "row_size": row_size}
    if rng.random() < 0.6:
        beta = float(rng.choice([1.0, float(np.float32(rng.uniform(0.1, 4.0)))]))
        # beta * scale from just above 2^-26 (the smallest TFLM accepts) to far above the cap.
        input_scale = float(np.float32(2.0 ** rng.uniform(-25.9, 7.0) / beta))
        mult, shift, diff_min = softmax_params(beta, input_scale)
        params.update(beta=beta, input_scale=input_scale)
    else:
        mult = random_multiplier(rng)
        shift = int(rng.choice([0, 1, 31, int(rng.integers(0, 32))]))
        radius = (31 << 26) >> shift
        diff_min = -int(rng.choice([radius, int(rng.integers(0, radius + 1)), 0]))
    params.update(mult=int(mult), shift=int(shift), diff_min=int(diff_min))
    return {"input": _rows(rng, num_rows, row_size)}, params


register(
    VectorFunction(
        name=NAME,
        family=FAMILY,
        arrays=("input",),
        params=("num_rows", "row_size", "mult", "shift", "diff_min"),
        run=_run,
        generate=_generate,
    )
)

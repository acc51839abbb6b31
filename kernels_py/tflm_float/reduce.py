"""MEAN in float32, as micro/kernels/reduce_common.cc (``EvalMeanHelper``) computes it.

Two TFLM paths, the same arithmetic: ``reference_ops::Mean(MeanParams, ...)`` (the 4-D,
axes {1, 2}, keep_dims special case: ``value = 0``, ``value += x`` over (h, w), then
``value / (input_width * input_height)``) and the generic ``reference_ops::Mean`` template
(tensorflow/lite/kernels/internal/reference/reduce.h: the output zeroed, then every input in
row-major order added to its output cell - so each cell sums its inputs in row-major order of
the reduced indices - then divided by ``static_cast<float>(num_elements_in_axis)``). Both start
from ``0.f`` and divide once in float, so one loop serves both.
"""

from __future__ import annotations

import math

import numpy as np

from kernels_py._jit import jit
from kernels_py.tflm_float._common import F32, as_f32


@jit
def _mean_rows(x, out, count):  # pragma: no cover - compiled
    for i in range(x.shape[0]):
        total = F32(0.0)
        for k in range(x.shape[1]):
            total += x[i, k]
        out[i] = total / count


def mean_f32(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """Mean over ``axes`` (already resolved: non-negative, unique); the output keeps the
    remaining dimensions in order (reshape it to the output tensor's shape)."""
    x = as_f32(x)
    reduced = sorted(set(axes))
    if any(not 0 <= a < x.ndim for a in reduced):
        raise ValueError(f"axes {axes} out of range for rank {x.ndim}")
    kept = [d for d in range(x.ndim) if d not in reduced]
    count = math.prod(x.shape[d] for d in reduced)
    rows = np.ascontiguousarray(np.transpose(x, kept + reduced)).reshape(-1, count)
    out = np.empty(rows.shape[0], F32)
    if count == 0:
        # TFLM leaves the zeroed output as is when no element is reduced.
        out[...] = F32(0.0)
    else:
        _mean_rows(rows, out, F32(count))
    return out.reshape([x.shape[d] for d in kept])

"""SOFTMAX in float32: ``reference_ops::Softmax`` (float template,
tensorflow/lite/kernels/internal/reference/softmax.h), called by micro/kernels/softmax.cc and by
the float branch of micro/kernels/cmsis_nn/softmax.cc.

Over the last dimension, per row: ``max = FLT_LOWEST``, ``max = std::max(max, x)``; then per
element ``e = expf((x - max) * beta)`` (``beta`` is the option's float32, stored as a double in
``SoftmaxParams`` and cast back to float), written to the output, ``sum += e`` from ``0.f``;
then each output divided by ``sum``.
"""

from __future__ import annotations

import math

import numpy as np

from kernels_py._jit import jit
from kernels_py.tflm_float._common import F32, FLOAT_LOWEST, as_f32


@jit
def _softmax(x, out, beta):  # pragma: no cover - compiled
    rows, depth = x.shape
    for i in range(rows):
        best = F32(FLOAT_LOWEST)
        for c in range(depth):
            v = x[i, c]
            if best < v:
                best = v
        total = F32(0.0)
        for c in range(depth):
            e = math.exp((x[i, c] - best) * beta)
            out[i, c] = e
            total += e
        for c in range(depth):
            out[i, c] = out[i, c] / total


def softmax_f32(x: np.ndarray, *, beta: float) -> np.ndarray:
    """Softmax over the last dimension of ``x`` (any rank >= 1)."""
    x = as_f32(x)
    if x.ndim == 0:
        raise ValueError("softmax needs at least one dimension")
    out = np.empty(x.shape, F32)
    depth = x.shape[-1]
    _softmax(x.reshape(-1, depth), out.reshape(-1, depth), F32(beta))
    return out

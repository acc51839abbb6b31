"""RELU, RELU6, LOGISTIC, TANH and HARD_SWISH in float32.

* RELU / RELU6: ``ReluFloat`` / ``Relu6Float`` (micro/kernels/activations_common.cc):
  ``x < 0 ? 0 : x`` and ``x > 6 ? 6 : x < 0 ? 0 : x`` (``-0.0`` and NaN pass through).
* LOGISTIC: ``reference_ops::Logistic`` (kernels/internal/reference/logistic.h), via
  micro/kernels/logistic.cc: ``1`` above 16.619047164916992188f, ``expf(x)`` below -9, else
  ``1.f / (1.f + expf(-x))``.
* TANH: ``reference_ops::Tanh`` (reference/tanh.h), via micro/kernels/tanh.cc: ``tanhf(x)``.
* HARD_SWISH: ``reference_ops::HardSwish<float>`` (reference/hard_swish.h), via
  micro/kernels/hard_swish.cc: ``x * min(6.f, max(0.f, x + 3)) / 6`` in float, left to right.

``math.exp``/``math.tanh`` on a float32 in numba call the C library's ``expf``/``tanhf``
(see the package docstring for what that means against the wheel and a device).
"""

from __future__ import annotations

import math

import numpy as np

from kernels_py._jit import jit
from kernels_py.tflm_float._common import F32, as_f32

#: reference/logistic.h's cut-offs.
LOGISTIC_UPPER = F32(16.619047164916992188)
LOGISTIC_LOWER = F32(-9.0)


@jit
def _relu(x, out):  # pragma: no cover - compiled
    zero = F32(0.0)
    for i in range(x.size):
        v = x[i]
        out[i] = zero if v < zero else v


@jit
def _relu6(x, out):  # pragma: no cover - compiled
    zero, six = F32(0.0), F32(6.0)
    for i in range(x.size):
        v = x[i]
        out[i] = six if v > six else (zero if v < zero else v)


@jit
def _logistic(x, out):  # pragma: no cover - compiled
    one = F32(1.0)
    for i in range(x.size):
        v = x[i]
        if v > LOGISTIC_UPPER:
            out[i] = one
        elif v < LOGISTIC_LOWER:
            out[i] = math.exp(v)
        else:
            out[i] = one / (one + math.exp(-v))


@jit
def _tanh(x, out):  # pragma: no cover - compiled
    for i in range(x.size):
        out[i] = math.tanh(x[i])


@jit
def _hard_swish(x, out):  # pragma: no cover - compiled
    zero, three, six = F32(0.0), F32(3.0), F32(6.0)
    for i in range(x.size):
        v = x[i]
        shifted = v + three
        lower = shifted if zero < shifted else zero  # std::max(0.f, x + 3)
        upper = lower if lower < six else six  # std::min(6.f, ...)
        out[i] = v * upper / six


@jit
def _expf(x, out):  # pragma: no cover - compiled
    for i in range(x.size):
        out[i] = math.exp(x[i])


def _unary(kernel, x: np.ndarray) -> np.ndarray:
    x = as_f32(x)
    out = np.empty(x.shape, F32)
    kernel(x.reshape(-1), out.reshape(-1))
    return out


def relu_f32(x: np.ndarray) -> np.ndarray:
    """``ReluFloat``."""
    return _unary(_relu, x)


def relu6_f32(x: np.ndarray) -> np.ndarray:
    """``Relu6Float``."""
    return _unary(_relu6, x)


def logistic_f32(x: np.ndarray) -> np.ndarray:
    """``reference_ops::Logistic`` (float)."""
    return _unary(_logistic, x)


def tanh_f32(x: np.ndarray) -> np.ndarray:
    """``reference_ops::Tanh`` (float): ``tanhf``."""
    return _unary(_tanh, x)


def hard_swish_f32(x: np.ndarray) -> np.ndarray:
    """``reference_ops::HardSwish<float>``."""
    return _unary(_hard_swish, x)


def expf(x: np.ndarray) -> np.ndarray:
    """The ``expf`` these kernels call (numba's ``math.exp`` on float32), for tests and docs."""
    return _unary(_expf, x)

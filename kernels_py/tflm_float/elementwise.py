"""ADD and MUL in float32: ``reference_ops::Add`` / ``BroadcastAdd6DSlow``
(tensorflow/lite/kernels/internal/reference/add.h) and ``reference_ops::Mul`` /
``BroadcastMul6DSlow`` (reference/mul.h), as micro/kernels/add.cc (``EvalAdd``) and
micro/kernels/mul_common.cc (``EvalMulFloatReference``) call them; cmsis_nn/add.cc and
cmsis_nn/mul.cc take the same float paths.

Each output is one IEEE operation on one pair of inputs, ``clamp(a + b)`` or ``clamp(a * b)``:
the broadcast loop (``BroadcastBinaryOpSimple``, reference/broadcast_loop.h) only decides
which pair, with numpy's rules (a dimension of 1 repeats), so no order can change a bit.
"""

from __future__ import annotations

import numpy as np

from kernels_py.tflm_float._common import F32, as_f32


def clamp_array(y: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """``ActivationFunctionWithMinMax`` over an array: ``x < lo ? lo : x``, then ``hi < x ? hi : x``."""
    lo32, hi32 = F32(lo), F32(hi)
    y = np.where(y < lo32, lo32, y)
    return np.where(hi32 < y, hi32, y).astype(F32, copy=False)


def _binary(op, a: np.ndarray, b: np.ndarray, out_shape: tuple[int, ...], activation) -> np.ndarray:
    a, b = as_f32(a), as_f32(b)
    if tuple(np.broadcast_shapes(a.shape, b.shape)) != tuple(out_shape):
        raise ValueError(f"shapes {a.shape} and {b.shape} do not broadcast to {tuple(out_shape)}")
    with np.errstate(all="ignore"):
        y = op(a, b, dtype=F32)
    return clamp_array(y, *activation).reshape(out_shape)


def add_f32(
    a: np.ndarray, b: np.ndarray, out_shape: tuple[int, ...], *, activation: tuple[float, float]
) -> np.ndarray:
    """``clamp(a + b)``, broadcast."""
    return _binary(np.add, a, b, out_shape, activation)


def mul_f32(
    a: np.ndarray, b: np.ndarray, out_shape: tuple[int, ...], *, activation: tuple[float, float]
) -> np.ndarray:
    """``clamp(a * b)``, broadcast."""
    return _binary(np.multiply, a, b, out_shape, activation)

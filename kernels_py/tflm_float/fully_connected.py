"""FULLY_CONNECTED in float32: ``reference_ops::FullyConnected`` (float overload,
tensorflow/lite/kernels/internal/reference/fully_connected.h), called by
micro/kernels/fully_connected.cc and the float branch of micro/kernels/cmsis_nn/fully_connected.cc.

``batches`` is the output's element count over its last dimension, ``accum_depth`` the filter's
last dimension; the input is read flat (``input[b * accum_depth + d]``), whatever its shape.
Per output: ``total = 0.f``, ``total += input * weight`` over ``d`` ascending, then
``clamp(total + bias)`` with ``bias = 0.f`` when absent. ``fused=True``: the accumulation as
``VFMA.F32`` (``fmaf``), what GCC makes of the loop on a core with an FPU.
"""

from __future__ import annotations

import numpy as np

from kernels_py._jit import jit
from kernels_py.tflm_float._common import F32, as_f32, clamp, fmaf


@jit
def _fully_connected(x, w, bias, out, lo, hi, fused):  # pragma: no cover - compiled
    batches, output_depth = out.shape
    accum_depth = w.shape[1]
    for b in range(batches):
        for oc in range(output_depth):
            total = F32(0.0)
            for d in range(accum_depth):
                if fused:
                    total = fmaf(x[b * accum_depth + d], w[oc, d], total)
                else:
                    total += x[b * accum_depth + d] * w[oc, d]
            out[b, oc] = clamp(total + bias[oc], lo, hi)


def fully_connected_f32(
    x: np.ndarray,
    w: np.ndarray,
    bias: np.ndarray | None,
    batches: int,
    *,
    activation: tuple[float, float],
    fused: bool = False,
) -> np.ndarray:
    """``[batches, output_depth]`` from the flat input and the ``[output_depth, accum_depth]``
    filter; ``fused``: each ``total += x * w`` one fused multiply-add (an FPU core's VFMA)."""
    x, w = as_f32(x).reshape(-1), as_f32(w)
    w = w.reshape(-1, w.shape[-1])
    output_depth, accum_depth = w.shape
    if x.size != batches * accum_depth:
        raise ValueError(f"input has {x.size} values, expected {batches} x {accum_depth}")
    b = np.zeros(output_depth, F32) if bias is None else as_f32(bias).reshape(-1)
    if b.size != output_depth:
        raise ValueError(f"bias has {b.size} values for {output_depth} outputs")
    out = np.empty((batches, output_depth), F32)
    _fully_connected(x, w, b, out, F32(activation[0]), F32(activation[1]), fused)
    return out

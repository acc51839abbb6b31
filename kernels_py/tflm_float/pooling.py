"""AVERAGE_POOL_2D and MAX_POOL_2D in float32: ``reference_ops::AveragePool`` and
``reference_ops::MaxPool`` (float overloads, tensorflow/lite/kernels/internal/reference/pooling.h),
called through ``AveragePoolingEvalFloat`` / ``MaxPoolingEvalFloat``
(micro/kernels/pooling_common.cc) by both micro/kernels/pooling.cc and cmsis_nn/pooling.cc.

The window is clipped to the image (``filter_x_start = max(0, -in_x_origin)`` ...), so padded
taps are not counted. Average: ``total = 0.f`` over (filter_y, filter_x), a float
``filter_count`` incremented per tap, one division ``total / filter_count``, then the clamp.
Max: ``max = FLT_LOWEST``, ``max = std::max(max, x)`` (``max < x ? x : max``: a NaN input is
skipped), then the clamp.
"""

from __future__ import annotations

import numpy as np

from kernels_py._jit import jit
from kernels_py.tflm_float._common import F32, FLOAT_LOWEST, as_f32, clamp


@jit
def _pool(x, out, is_average, fh, fw, sh, sw, ph, pw, lo, hi):  # pragma: no cover - compiled
    """Returns False where TFLM's AveragePool returns false (an empty window)."""
    batches, in_h, in_w, depth = x.shape
    _, out_h, out_w, _ = out.shape
    for b in range(batches):
        for oy in range(out_h):
            for ox in range(out_w):
                for c in range(depth):
                    in_x0 = ox * sw - pw
                    in_y0 = oy * sh - ph
                    fx0 = max(0, -in_x0)
                    fx1 = min(fw, in_w - in_x0)
                    fy0 = max(0, -in_y0)
                    fy1 = min(fh, in_h - in_y0)
                    if is_average:
                        total = F32(0.0)
                        count = F32(0.0)
                        for fy in range(fy0, fy1):
                            for fx in range(fx0, fx1):
                                total += x[b, in_y0 + fy, in_x0 + fx, c]
                                count += F32(1.0)
                        if count == 0:
                            return False
                        out[b, oy, ox, c] = clamp(total / count, lo, hi)
                    else:
                        best = F32(FLOAT_LOWEST)
                        for fy in range(fy0, fy1):
                            for fx in range(fx0, fx1):
                                v = x[b, in_y0 + fy, in_x0 + fx, c]
                                if best < v:
                                    best = v
                        out[b, oy, ox, c] = clamp(best, lo, hi)
    return True


def _run(x, out_shape, average, filter_hw, stride, padding, activation) -> np.ndarray:
    x = as_f32(x)
    if x.ndim != 4 or len(out_shape) != 4 or out_shape[0] != x.shape[0] or out_shape[3] != x.shape[3]:
        raise ValueError(
            f"pooling takes NHWC input and output of the same N and C, got {x.shape} -> {out_shape}"
        )
    out = np.empty(out_shape, F32)
    ok = _pool(x, out, average, *filter_hw, *stride, *padding, F32(activation[0]), F32(activation[1]))
    if not ok:
        raise ValueError("a pooling window lies entirely in the padding (TFLM's AveragePool returns false)")
    return out


def average_pool_2d_f32(
    x: np.ndarray,
    out_shape: tuple[int, int, int, int],
    *,
    filter_hw: tuple[int, int],
    stride: tuple[int, int],
    padding: tuple[int, int],
    activation: tuple[float, float],
) -> np.ndarray:
    """``reference_ops::AveragePool`` (float)."""
    return _run(x, out_shape, True, filter_hw, stride, padding, activation)


def max_pool_2d_f32(
    x: np.ndarray,
    out_shape: tuple[int, int, int, int],
    *,
    filter_hw: tuple[int, int],
    stride: tuple[int, int],
    padding: tuple[int, int],
    activation: tuple[float, float],
) -> np.ndarray:
    """``reference_ops::MaxPool`` (float)."""
    return _run(x, out_shape, False, filter_hw, stride, padding, activation)

"""PAD, TRANSPOSE, CONCATENATION and STRIDED_SLICE on float32 data: pure copies, so exact.

* PAD: ``reference_ops::Pad`` / ``PadImageStyle`` (reference/pad.h) via micro/kernels/pad.cc:
  every output element is the input element it maps to or ``pad_value`` (``0.f`` without a
  third input).
* TRANSPOSE: ``reference_ops::Transpose`` (reference/transpose.h) via
  micro/kernels/cmsis_nn/transpose.cc's float branch: ``out[i] = in[perm-mapped i]``.
* CONCATENATION: ``reference_ops::Concatenation`` (reference/concatenation.h).
* STRIDED_SLICE: ``reference_ops::StridedSlice`` (reference/strided_slice.h) with the
  start/stop of ``strided_slice::StridedSliceStartForAxis`` / ``StridedSliceEndForAxis``
  (kernels/internal/strided_slice_logic.h), the bounds TFLM's Eval uses.
"""

from __future__ import annotations

import numpy as np

from kernels_py.tflm_float._common import F32, as_f32


def pad_f32(x: np.ndarray, paddings: np.ndarray, pad_value: float = 0.0) -> np.ndarray:
    """``paddings`` is ``[rank, 2]`` (before, after), non-negative."""
    x = as_f32(x)
    p = np.asarray(paddings, np.int64).reshape(-1, 2)
    if p.shape[0] != x.ndim or (p < 0).any():
        raise ValueError(f"paddings {p.tolist()} do not fit rank {x.ndim} (non-negative pairs)")
    out = np.full([d + int(a) + int(b) for d, (a, b) in zip(x.shape, p, strict=True)], F32(pad_value), F32)
    out[tuple(slice(int(a), int(a) + d) for d, (a, _) in zip(x.shape, p, strict=True))] = x
    return out


def transpose_f32(x: np.ndarray, perm: tuple[int, ...]) -> np.ndarray:
    """``out`` dimension ``i`` is input dimension ``perm[i]``."""
    return np.ascontiguousarray(np.transpose(as_f32(x), perm))


def concatenation_f32(xs: list[np.ndarray], axis: int) -> np.ndarray:
    """Inputs joined along ``axis`` (non-negative), in order."""
    return np.concatenate([as_f32(x) for x in xs], axis=axis)


def _clamp(v: int, lo: int, hi: int) -> int:
    return lo if v < lo else hi if v > hi else v


def strided_slice_bounds(
    shape: tuple[int, ...],
    begin: tuple[int, ...],
    end: tuple[int, ...],
    strides: tuple[int, ...],
    *,
    begin_mask: int,
    end_mask: int,
    shrink_axis_mask: int,
    offset: bool = False,
) -> list[tuple[int, int, int]]:
    """Per axis ``(start, stop, stride)`` as ``StridedSliceStartForAxis`` /
    ``StridedSliceEndForAxis`` compute them (the loop runs ``start`` while ``index < stop``
    for a positive stride, ``index > stop`` for a negative one)."""
    bounds = []
    for axis, size in enumerate(shape):
        stride = strides[axis]
        start = begin[axis]
        if start < 0:
            start += size
        start = _clamp(start, 0, size) if stride > 0 else _clamp(start, -1, size - 1)
        if begin_mask & (1 << axis):
            start = 0 if stride > 0 else size - 1
        if shrink_axis_mask & (1 << axis):
            stop = start if start >= size else start + 1
        else:
            stop = end[axis] + (start if offset else 0)
            if stop < 0:
                stop += size
            stop = _clamp(stop, 0, size) if stride > 0 else _clamp(stop, -1, size - 1)
            if end_mask & (1 << axis):
                stop = size if stride > 0 else -1
        bounds.append((start, stop, stride))
    return bounds


def strided_slice_f32(
    x: np.ndarray, bounds: list[tuple[int, int, int]], out_shape: tuple[int, ...]
) -> np.ndarray:
    """The elements ``range(start, stop, stride)`` per axis, row-major, reshaped to ``out_shape``."""
    x = as_f32(x)
    index = np.ix_(*[np.arange(start, stop, stride, dtype=np.int64) for start, stop, stride in bounds])
    picked = x[index] if x.ndim else x
    if picked.size != int(np.prod(out_shape)):
        raise ValueError(
            f"strided slice selects {picked.size} elements, the output holds {int(np.prod(out_shape))}"
        )
    return np.ascontiguousarray(picked).reshape(out_shape)

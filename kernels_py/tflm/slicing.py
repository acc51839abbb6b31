"""STRIDED_SLICE, SQUEEZE and CONCATENATION as TFLM runs them: byte moves, any element type.

* STRIDED_SLICE: ``micro/kernels/strided_slice_common.cc`` (``BuildStridedSliceParams``,
  ``CheckOutputSize``) and ``reference_ops::StridedSlice`` (``reference/strided_slice.h``,
  helpers in ``kernels/internal/strided_slice_logic.h``). TFLM's ``BuildStridedSliceParams``
  copies begin, end, strides, ``begin_mask``, ``end_mask`` and ``shrink_axis_mask`` and sets
  ``ellipsis_mask = new_axis_mask = 0``; ``offset`` is left false (zero-initialised): TFLM
  ignores those three options. Eval pads to 5-D and walks
  ``for (i = start; stride > 0 ? i < stop : i > stop; i += stride)`` per axis, with
  ``StridedSliceStartForAxis``/``StridedSliceEndForAxis``; Prepare checks the output shape with
  the other pair, ``StartForAxis``/``StopForAxis``, and ``ceil((end - begin) / (float)stride)``.
* SQUEEZE: ``micro/kernels/squeeze.cc``: Prepare checks the squeezed dims, Eval is a ``memcpy``.
* CONCATENATION: ``micro/kernels/concatenation.cc`` (int8 inputs must share the output's scale
  and zero point, at most 10 inputs, no fused activation) and ``reference_ops::Concatenation``
  (``reference/concatenation.h``): per outer index, each input's block in turn (``memcpy``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

INT_MIN, INT_MAX = -(2**31), 2**31 - 1


def _clamp(v: int, lo: int, hi: int) -> int:
    return hi if hi < v else lo if v < lo else v


@dataclass(frozen=True)
class StridedSliceParams:
    """What TFLM's Prepare keeps (``tflite::StridedSliceParams``) for an input of rank <= 4."""

    begin: tuple[int, ...]
    end: tuple[int, ...]
    strides: tuple[int, ...]
    begin_mask: int
    end_mask: int
    shrink_axis_mask: int


def _start_for_axis(p: StridedSliceParams, shape: Sequence[int], axis: int) -> int:
    """``strided_slice::StartForAxis`` (Prepare's output-size check)."""
    size = shape[axis]
    if size == 0:
        return 0
    start = p.begin[axis]
    if p.begin_mask & (1 << axis):
        start = INT_MIN if p.strides[axis] > 0 else INT_MAX
    if start < 0:
        start += size
    return _clamp(start, 0, size) if p.strides[axis] > 0 else _clamp(start, -1, size - 1)


def _stop_for_axis(p: StridedSliceParams, shape: Sequence[int], axis: int, start: int) -> int:
    """``strided_slice::StopForAxis`` (Prepare's output-size check)."""
    size = shape[axis]
    if size == 0:
        return 0
    if p.shrink_axis_mask & (1 << axis):
        return start + 1
    stop = p.end[axis]
    if p.end_mask & (1 << axis):
        stop = INT_MAX if p.strides[axis] > 0 else INT_MIN
    if stop < 0:
        stop += size
    return _clamp(stop, 0, size) if p.strides[axis] > 0 else _clamp(stop, -1, size - 1)


def strided_slice_output_shape(p: StridedSliceParams, shape: Sequence[int]) -> tuple[int, ...]:
    """The shape ``CheckOutputSize`` requires of the output tensor (shrunk axes dropped).
    Raises ValueError for a zero stride (``TF_LITE_ENSURE_MSG``)."""
    out = []
    for axis in range(len(shape)):
        stride = p.strides[axis]
        if stride == 0:
            raise ValueError(f"stride of axis {axis} is 0")
        begin = _start_for_axis(p, shape, axis)
        end = _stop_for_axis(p, shape, axis, begin)
        shrink = bool(p.shrink_axis_mask & (1 << axis))
        if shrink:
            end = begin + 1
        # int32_t dim_shape = std::ceil((end - begin) / static_cast<float>(stride))
        dim = math.ceil(float(np.float32(end - begin) / np.float32(stride)))
        dim = max(dim, 0)
        if not shrink:
            out.append(dim)
    return tuple(out)


def _pad5(p: StridedSliceParams, shape: Sequence[int]):
    """``StridedSlicePadIndices(&params, 5)`` and ``RuntimeShape::ExtendedShape(5, shape)``."""
    pad = 5 - len(shape)
    begin = (0,) * pad + tuple(p.begin)
    end = (1,) * pad + tuple(p.end)
    strides = (1,) * pad + tuple(p.strides)
    low = (1 << pad) - 1
    padded = StridedSliceParams(
        begin,
        end,
        strides,
        (p.begin_mask << pad) | low,
        (p.end_mask << pad) | low,
        p.shrink_axis_mask << pad,
    )
    return padded, (1,) * pad + tuple(shape)


def strided_slice_ranges(p: StridedSliceParams, shape: Sequence[int]) -> list[range]:
    """The five loops of ``reference_ops::StridedSlice``: ``range(start, stop, stride)`` per axis of
    the 5-D padded input (``StridedSliceStartForAxis``/``StridedSliceEndForAxis``)."""
    q, shape5 = _pad5(p, shape)
    loops = []
    for axis in range(5):
        size, stride = shape5[axis], q.strides[axis]
        start = q.begin[axis]
        if start < 0:
            start += size
        start = _clamp(start, 0, size) if stride > 0 else _clamp(start, -1, size - 1)
        if q.begin_mask & (1 << axis):
            start = 0 if stride > 0 else size - 1
        if q.shrink_axis_mask & (1 << axis):
            stop = start if start >= size else start + 1
        else:
            stop = q.end[axis]  # offset is false in TFLM's params
            if stop < 0:
                stop += size
            stop = _clamp(stop, 0, size) if stride > 0 else _clamp(stop, -1, size - 1)
            if q.end_mask & (1 << axis):
                stop = size if stride > 0 else -1
        loops.append(range(start, stop, stride))
    return loops


def strided_slice(x: np.ndarray, p: StridedSliceParams) -> np.ndarray:
    """The elements ``reference_ops::StridedSlice`` writes, in order, as a flat array."""
    loops = strided_slice_ranges(p, x.shape)
    x5 = x.reshape((1,) * (5 - x.ndim) + x.shape)
    index = np.ix_(*[np.asarray(r, np.intp) for r in loops])
    return x5[index].reshape(-1)


def strided_slice_reference(x: np.ndarray, p: StridedSliceParams) -> np.ndarray:
    """`strided_slice` as five nested Python loops over flat offsets (the C++ loop nest)."""
    loops = strided_slice_ranges(p, x.shape)
    shape5 = (1,) * (5 - x.ndim) + x.shape
    flat = x.reshape(-1)
    out = []
    for i0 in loops[0]:
        for i1 in loops[1]:
            for i2 in loops[2]:
                for i3 in loops[3]:
                    for i4 in loops[4]:
                        offset = (((i0 * shape5[1] + i1) * shape5[2] + i2) * shape5[3] + i3) * shape5[4] + i4
                        out.append(flat[offset])
    return np.array(out, x.dtype)


def squeeze_shape(shape: Sequence[int], squeeze_dims: Sequence[int]) -> tuple[int, ...]:
    """The dims ``SqueezePrepare`` keeps. Raises ValueError where its ``TF_LITE_ENSURE`` fails (a
    squeeze dim out of range or not of size 1, or a rank over 8)."""
    rank = len(shape)
    if rank > 8:
        raise ValueError(f"rank {rank} > 8")
    squeeze = [False] * rank
    if not squeeze_dims:
        squeeze = [n == 1 for n in shape]
    for d in squeeze_dims:
        current = d + rank if d < 0 else d
        if not (0 <= current < rank and shape[current] == 1):
            raise ValueError(f"squeeze dim {d} is not a dim of size 1 of shape {list(shape)}")
        squeeze[current] = True
    return tuple(n for n, s in zip(shape, squeeze, strict=True) if not s)


def concatenation(inputs: Sequence[np.ndarray], axis: int) -> np.ndarray:
    """``reference_ops::Concatenation``: for each outer index, each input's ``dim(axis) * inner``
    block in turn. The same bytes as ``np.concatenate`` along ``axis``."""
    return np.concatenate(inputs, axis=axis)

"""MEAN, int8, as TFLM computes it.

``tensorflow/lite/micro/kernels/reduce_common.cc``: ``PrepareMeanOrSumHelper`` (the multiplier
from ``(double)in_scale / (double)out_scale``) and ``EvalMeanHelper``, whose int8 case is always
``EvalIntegerMean`` -> ``reference_ops::QuantizedMeanOrSumExtraArgs`` ->
``QuantizedMeanOrSum`` (``kernels/internal/reference/reduce.h``). At this commit TFLM has no
int8 special case for a 4-D mean over axes {1, 2} (the ``special_case_4d_axes_1_and_2`` branch
is float32 only) and no CMSIS-NN mean, so every int8 MEAN takes this path:

1. axes resolved (negative + rank, duplicates dropped: ``ResolveAxis``);
2. an int32 sum per output (wrapping: ``AddTensorValuesWithExpectedOverflow``);
3. ``n`` = product of the reduced dims; the multiplier absorbs ``1/n``:
   ``shift = min(floor(log2 n), 32, 31 + output_shift)``,
   ``multiplier = (int64(multiplier) << shift) / n`` (C division), ``output_shift -= shift``;
4. ``MultiplyByQuantizedMultiplier((int32)(sum - in_zp * n), multiplier, output_shift)
   + out_zp``, clamped to int8.

A reduced axis of size 0 (or any input dim 0) leaves every output 0 (``T()``), not the zero point.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kernels_py.tflm.fixedpoint import multiply_by_quantized_multiplier_array, quantize_multiplier

INT8_MIN, INT8_MAX = -128, 127


def mean_params(input_scale: float, output_scale: float) -> tuple[int, int]:
    """``PrepareMeanOrSumHelper``: ``QuantizeMultiplier((double)in_scale / (double)out_scale)``."""
    return quantize_multiplier(float(np.float32(input_scale)) / float(np.float32(output_scale)))


def resolve_axis(rank: int, axis: Sequence[int]) -> tuple[int, ...]:
    """``reference_ops::ResolveAxis``: negative axes + rank, duplicates dropped, first seen first.
    Raises ValueError for an axis outside [-rank, rank) (TFLM's Mean returns false)."""
    if rank == 0:
        return ()
    out: list[int] = []
    for a in axis:
        current = a + rank if a < 0 else a
        if not 0 <= current < rank:
            raise ValueError(f"axis {a} out of range for rank {rank}")
        if current not in out:
            out.append(current)
    return tuple(out)


def mean_output_params(multiplier: int, shift: int, num_elements_in_axis: int) -> tuple[int, int]:
    """``QuantizedMeanOrSum``'s fold of ``1/n`` into the multiplier (``compute_sum == false``)."""
    n = num_elements_in_axis
    s = n.bit_length() - 1  # 63 - CountLeadingZeros(n)
    s = min(s, 32)
    s = min(s, 31 + shift)
    return int((multiplier << s) // n), shift - s


def mean_shape(input_shape: Sequence[int], axes: Sequence[int], keep_dims: bool) -> tuple[int, ...]:
    """The output shape the converter gives a MEAN (TFLM reads it from the model, never computes it)."""
    if keep_dims:
        return tuple(1 if d in axes else n for d, n in enumerate(input_shape))
    return tuple(n for d, n in enumerate(input_shape) if d not in axes)


def mean_int8(
    x: np.ndarray,
    axes: Sequence[int],
    input_zero_point: int,
    output_zero_point: int,
    multiplier: int,
    shift: int,
) -> np.ndarray:
    """``QuantizedMeanOrSum<int8_t, int32_t>`` with resolved ``axes``: a flat int8 array of the
    outputs in the order of the kept dims (``keep_dims`` only changes the shape)."""
    kept = tuple(d for d in range(x.ndim) if d not in axes)
    num_outputs = int(np.prod([x.shape[d] for d in kept], dtype=np.int64))
    if x.size == 0:
        return np.zeros(num_outputs, np.int8)
    n = int(np.prod([x.shape[d] for d in axes], dtype=np.int64))
    sums = x.astype(np.int64).sum(axis=tuple(axes)) if axes else x.astype(np.int64)
    sums = ((sums.reshape(-1) + 0x80000000) & 0xFFFFFFFF) - 0x80000000  # int32 accumulator wraps
    m, s = mean_output_params(multiplier, shift, n)
    shifted = sums - input_zero_point * n
    shifted = ((shifted + 0x80000000) & 0xFFFFFFFF) - 0x80000000  # static_cast<int32_t>
    out = multiply_by_quantized_multiplier_array(shifted, m, s) + output_zero_point
    out = ((out + 0x80000000) & 0xFFFFFFFF) - 0x80000000
    return np.clip(out, INT8_MIN, INT8_MAX).astype(np.int8)


def mean_int8_reference(
    x: np.ndarray,
    axes: Sequence[int],
    input_zero_point: int,
    output_zero_point: int,
    multiplier: int,
    shift: int,
) -> np.ndarray:
    """The same as `mean_int8`, as TFLM's loops run it (``Reduce`` walking every input index with
    ``ReducedOutputOffset``), element by element in Python ints. Slow; for the tests."""
    from kernels_py.tflm.fixedpoint import multiply_by_quantized_multiplier, wrap32

    kept = [d for d in range(x.ndim) if d not in axes]
    out_dims = [x.shape[d] for d in kept]
    num_outputs = int(np.prod(out_dims, dtype=np.int64))
    if x.size == 0:
        return np.zeros(num_outputs, np.int8)
    temp = [0] * num_outputs
    for index in np.ndindex(*x.shape):
        offset = 0
        for d in kept:
            offset = offset * x.shape[d] + index[d]
        temp[offset] = wrap32(temp[offset] + int(x[index]))
    n = 1
    for d in axes:
        n *= x.shape[d]
    m, s = mean_output_params(multiplier, shift, n)
    result = []
    for total in temp:
        v = multiply_by_quantized_multiplier(wrap32(total - input_zero_point * n), m, s) + output_zero_point
        result.append(max(INT8_MIN, min(INT8_MAX, wrap32(v))))
    return np.array(result, np.int8)

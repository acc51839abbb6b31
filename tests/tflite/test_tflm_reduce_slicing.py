"""kernels_py.tflm.reduce (MEAN) and .slicing (STRIDED_SLICE, SQUEEZE, CONCATENATION) against the
tflite-micro wheel, and each fast kernel against its loop-by-loop reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, note
from hypothesis import strategies as st

from kernels_py.tflm import reduce as r
from kernels_py.tflm import slicing as sl
from refsim.tflite import schema as s
from tests.tflite.test_tflm_activations import scales, zero_points
from tests.tflite.tflm_wheel import Rejected, T, requires_wheel, run_single_op

B = s.BuiltinOperator
I8, I32 = s.TensorType.INT8, s.TensorType.INT32
shapes = st.lists(st.integers(1, 6), min_size=1, max_size=4).map(tuple)


def _int8(draw, shape):
    n = int(np.prod(shape))
    return np.array(draw(st.lists(st.integers(-128, 127), min_size=n, max_size=n)), np.int8).reshape(shape)


@requires_wheel
@given(st.data())
def test_mean(data):
    shape = data.draw(shapes | st.sampled_from([(1, 7, 7, 64), (1, 5, 5, 8), (2, 3, 4, 5)]))
    rank = len(shape)
    axis = data.draw(st.lists(st.integers(-rank, rank - 1), max_size=4))
    if data.draw(st.booleans()) and rank == 4:
        axis = data.draw(st.sampled_from([[1, 2], [2, 1], [-3, -2]]))
    keep = data.draw(st.booleans())
    in_q = (data.draw(scales(-20, 8)), data.draw(zero_points))
    out_q = (data.draw(scales(-20, 8)), data.draw(zero_points))
    axes = r.resolve_axis(rank, axis)
    m, sh = r.mean_params(in_q[0], out_q[0])
    n = int(np.prod([shape[d] for d in axes]))
    m2, sh2 = r.mean_output_params(m, sh, n)
    note(f"{shape} axis {axis} keep {keep} {in_q}->{out_q}: {m},{sh} -> {m2},{sh2}")
    assume(sh2 <= 30)  # the op refuses a left shift of 31 or more (undefined in TFLM)
    x = _int8(data.draw, shape)
    out_shape = r.mean_shape(shape, axes, keep)
    expected = run_single_op(
        B.MEAN,
        [T(shape, I8, *in_q), T((len(axis),), I32, data=np.array(axis, np.int32))],
        [T(out_shape, I8, *out_q)],
        [x],
        keep_dims=keep,
    )[0]
    got = r.mean_int8(x, axes, in_q[1], out_q[1], m, sh)
    np.testing.assert_array_equal(got, expected.reshape(-1))
    np.testing.assert_array_equal(r.mean_int8_reference(x, axes, in_q[1], out_q[1], m, sh), got)


def _slice_params(data, shape):
    """Mostly slices TFLM writes whole (end in the stride's direction, shrunk axes in range with a
    positive stride); one draw in five anything at all."""
    rank = len(shape)
    masks = st.integers(0, (1 << rank) - 1)
    strides = tuple(data.draw(st.sampled_from([-3, -2, -1, 1, 1, 2, 3])) for _ in shape)
    begin = tuple(data.draw(st.integers(-n - 1, n + 1)) for n in shape)
    if data.draw(st.integers(0, 4)) == 0:
        end = tuple(data.draw(st.integers(-n - 1, n + 1)) for n in shape)
        return sl.StridedSliceParams(
            begin, end, strides, data.draw(masks), data.draw(masks), data.draw(masks)
        )
    end = tuple(
        b + st_ * data.draw(st.integers(1, n + 1)) for b, st_, n in zip(begin, strides, shape, strict=True)
    )
    shrinkable = [d for d in range(rank) if strides[d] > 0 and -shape[d] <= begin[d] < shape[d]]
    shrink = sum(1 << d for d in shrinkable if data.draw(st.booleans()))
    return sl.StridedSliceParams(begin, end, strides, data.draw(masks), data.draw(masks), shrink)


@requires_wheel
@given(st.data())
def test_strided_slice(data):
    shape = data.draw(shapes)
    p = _slice_params(data, shape)
    x = _int8(data.draw, shape)
    out_shape = sl.strided_slice_output_shape(p, shape)
    got = sl.strided_slice(x, p)
    note(f"{shape} {p} -> {out_shape}, {got.size} elements written")
    np.testing.assert_array_equal(sl.strided_slice_reference(x, p), got)
    assume(got.size == int(np.prod(out_shape)))  # otherwise TFLM writes part of the output; refused
    c = [T((len(shape),), I32, data=np.array(v, np.int32)) for v in (p.begin, p.end, p.strides)]
    # an empty output: TFLM's allocator refuses some ("dynamic tensor") and accepts others; the op
    # refuses them all (nothing to compute)
    assume(got.size > 0)
    expected = run_single_op(
        B.STRIDED_SLICE,
        [T(shape, I8, 0.5, 0), *c],
        [T(out_shape, I8, 0.5, 0)],
        [x],
        begin_mask=p.begin_mask,
        end_mask=p.end_mask,
        shrink_axis_mask=p.shrink_axis_mask,
    )[0]
    np.testing.assert_array_equal(got, expected.reshape(-1))


def test_strided_slice_shrink_with_negative_stride_writes_nothing():
    p = sl.StridedSliceParams((1,), (0,), (-1,), 0, 0, 1)
    assert sl.strided_slice_output_shape(p, (4,)) == ()
    assert sl.strided_slice(np.arange(4, dtype=np.int8), p).size == 0


@requires_wheel
@given(st.data())
def test_squeeze_and_concatenation(data):
    shape = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=5).map(tuple))
    ones = [d for d, n in enumerate(shape) if n == 1]
    dims = (
        data.draw(st.lists(st.sampled_from(ones + [d - len(shape) for d in ones]), unique=True))
        if ones
        else []
    )
    out_shape = sl.squeeze_shape(shape, dims)
    x = _int8(data.draw, shape)
    expected = run_single_op(
        B.SQUEEZE, [T(shape, I8, 0.5, 1)], [T(out_shape, I8, 0.5, 1)], [x], squeeze_dims=dims
    )[0]
    np.testing.assert_array_equal(x.reshape(out_shape), expected)

    rank = len(shape)
    axis = data.draw(st.integers(-rank, rank - 1))
    k = data.draw(st.integers(1, 4))
    parts = []
    for _ in range(k):
        part = list(shape)
        part[axis] = data.draw(st.integers(1, 3))
        parts.append(_int8(data.draw, tuple(part)))
    cat = sl.concatenation(parts, axis)
    expected = run_single_op(
        B.CONCATENATION,
        [T(p.shape, I8, 0.25, -3) for p in parts],
        [T(cat.shape, I8, 0.25, -3)],
        parts,
        axis=axis,
    )[0]
    np.testing.assert_array_equal(cat, expected)


@requires_wheel
def test_concatenation_refuses_mixed_quantization():
    a = np.zeros((1, 2), np.int8)
    with pytest.raises(Rejected):
        run_single_op(
            B.CONCATENATION,
            [T((1, 2), I8, 0.5, 0), T((1, 2), I8, 0.25, 0)],
            [T((1, 4), I8, 0.5, 0)],
            [a, a],
            axis=1,
        )


def test_squeeze_shape_rules():
    assert sl.squeeze_shape((1, 3, 1), []) == (3,)
    assert sl.squeeze_shape((1, 3, 1), [-1]) == (1, 3)
    with pytest.raises(ValueError):
        sl.squeeze_shape((1, 3, 1), [1])

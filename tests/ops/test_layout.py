"""kernels_py.layout: pad_s8 and transpose_s8."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from kernels_py.errors import KernelArgumentError
from kernels_py.layout import pad_s8, pad_s8_reference, transpose_s8, transpose_s8_reference
from kernels_py.types import Dims
from refsim.conformance import registry
from refsim.errors import VectorError
from refsim.testing.strategies import INT8, int8_arrays

shapes = hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4)
pad_values = st.one_of(st.sampled_from([-128, 127, 0]), INT8)


@st.composite
def pad_cases(draw):
    x = draw(shapes.flatmap(int8_arrays))
    absent = 4 - x.ndim
    pads = []
    for _ in range(2):
        values = [0] * absent + [draw(st.integers(0, 3)) for _ in range(x.ndim)]
        pads.append(Dims(*values))
    return x, pads[0], pads[1], draw(pad_values)


@st.composite
def transpose_cases(draw):
    x = draw(shapes.flatmap(int8_arrays))
    return x, tuple(draw(st.permutations(range(x.ndim))))


# --- fast path == reference == numpy ----------------------------------------------------------


@given(pad_cases())
def test_pad_fast_equals_reference_and_numpy(case):
    x, pre, post, value = case
    out = pad_s8(x, pre, post, value)
    np.testing.assert_array_equal(out, pad_s8_reference(x, pre, post, value))
    widths = list(zip(pre.shape, post.shape, strict=True))[4 - x.ndim :]
    np.testing.assert_array_equal(out, np.pad(x, widths, constant_values=value))
    assert out.dtype == np.int8


@given(transpose_cases())
def test_transpose_fast_equals_reference_and_numpy(case):
    x, perm = case
    out = transpose_s8(x, perm)
    np.testing.assert_array_equal(out, transpose_s8_reference(x, perm))
    np.testing.assert_array_equal(out, np.transpose(x, perm))
    assert out.flags.c_contiguous and out.dtype == np.int8


# --- hand-worked cases ------------------------------------------------------------------------


def test_pad_by_hand():
    # A 2-D [w=2, c=2] input is {n=1, h=1, w=2, c=2}; one column of 9s before along w and one
    # element after along c: output [w=3, c=3].
    x = np.array([[1, 2], [3, 4]], np.int8)
    out = pad_s8(x, Dims(0, 0, 1, 0), Dims(0, 0, 0, 1), 9)
    np.testing.assert_array_equal(out, np.array([[9, 9, 9], [1, 2, 9], [3, 4, 9]], np.int8))
    # 4-D: a batch of pad_value before the single image.
    out = pad_s8(np.array([[[[5]]]], np.int8), Dims(1, 0, 0, 0), Dims(0, 1, 0, 0), -128)
    np.testing.assert_array_equal(out, np.array([[[[-128]], [[-128]]], [[[5]], [[-128]]]], np.int8))


def test_transpose_by_hand():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int8)
    np.testing.assert_array_equal(transpose_s8(x, (1, 0)), np.array([[1, 4], [2, 5], [3, 6]], np.int8))
    # The 2-D identity stays the identity here (CMSIS-NN's 2-D branch would transpose).
    np.testing.assert_array_equal(transpose_s8(x, (0, 1)), x)
    # 3-D (2, 1, 3) with perm (2, 0, 1): out[k, i, j] = x[i, j, k], shape (3, 2, 1).
    y = np.arange(6, dtype=np.int8).reshape(2, 1, 3)
    expected = np.array([[[0], [3]], [[1], [4]], [[2], [5]]], np.int8)
    np.testing.assert_array_equal(transpose_s8(y, (2, 0, 1)), expected)


# --- validation -------------------------------------------------------------------------------


def test_pad_validation():
    x = np.zeros((2, 2), np.int8)
    zero = Dims(0, 0, 0, 0)
    for kernel in (pad_s8, pad_s8_reference):
        with pytest.raises(KernelArgumentError, match="pre_pad"):
            kernel(x, Dims(0, 0, -1, 0), zero, 0)
        with pytest.raises(KernelArgumentError, match="post_pad"):
            kernel(x, zero, Dims(0, 1, 0, 0), 0)  # h is absent from a 2-D input
        with pytest.raises(KernelArgumentError, match="pad_value"):
            kernel(x, zero, zero, 128)
        with pytest.raises(KernelArgumentError, match="pre_pad"):
            kernel(x, (0, 0, 1, 0), zero, 0)
        with pytest.raises(KernelArgumentError, match="input"):
            kernel(np.zeros((1, 1, 1, 1, 1), np.int8), zero, zero, 0)
        with pytest.raises(KernelArgumentError, match="input"):
            kernel(x.astype(np.uint8), zero, zero, 0)


def test_transpose_validation():
    x = np.zeros((2, 3, 4), np.int8)
    for kernel in (transpose_s8, transpose_s8_reference):
        with pytest.raises(KernelArgumentError, match="permutation"):
            kernel(x, (0, 1))
        with pytest.raises(KernelArgumentError, match="permutation"):
            kernel(x, (0, 0, 1))
        with pytest.raises(KernelArgumentError, match="permutation"):
            kernel(x, (0, 1, 3))
        with pytest.raises(KernelArgumentError, match="input"):
            kernel(np.zeros((1,) * 5, np.int8), tuple(range(5)))


# --- conformance adapters ---------------------------------------------------------------------


def test_pad_adapter_generate_then_run_equals_the_kernel():
    function = registry.get("arm_pad_s8")
    rng = np.random.default_rng(3)
    for _ in range(20):
        arrays, params = function.generate(rng)
        assert set(function.params) <= set(params)
        pre = Dims(*(params[f"pre_pad.{k}"] for k in "nhwc"))
        post = Dims(*(params[f"post_pad.{k}"] for k in "nhwc"))
        expected = pad_s8(arrays["input"], pre, post, params["pad_value"])
        np.testing.assert_array_equal(function.run(arrays, params), expected)
    with pytest.raises(VectorError, match="input_size"):
        function.run(arrays, dict(params, **{"input_size.c": params["input_size.c"] + 1}))


def test_transpose_adapter_generate_then_run_equals_the_kernel():
    function = registry.get("arm_transpose_s8")
    rng = np.random.default_rng(4)
    seen_unused: set[int] = set()
    for _ in range(20):
        arrays, params = function.generate(rng)
        assert set(function.params) <= set(params)
        shape = arrays["input"].shape
        # Dims are left-aligned: the input shape first, then unused entries, all 1 or all 0.
        dims = tuple(params[f"input_dims.{k}"] for k in "nhwc")
        assert dims[: len(shape)] == shape and len(set(dims[len(shape) :])) <= 1
        assert set(dims[len(shape) :]) <= {0, 1}
        seen_unused.update(dims[len(shape) :])
        expected = transpose_s8(arrays["input"], tuple(params["permutations"]))
        np.testing.assert_array_equal(function.run(arrays, params), expected)
    assert seen_unused == {0, 1}  # both fills CMSIS-NN callers use
    with pytest.raises(VectorError, match="output_dims"):
        function.run(arrays, dict(params, **{"output_dims.n": params["output_dims.n"] + 1}))
    with pytest.raises(VectorError, match="num_dims"):
        function.run(arrays, dict(params, num_dims=params["num_dims"] + 1))

"""kernels_py.activation: relu6_s8, clamp_s8, lut_s8, build_activation_lut, clamp_bound."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from kernels_py.activation import (
    ACTIVATION_FUNCTIONS,
    build_activation_lut,
    clamp_bound,
    clamp_s8,
    clamp_s8_reference,
    lut_s8,
    lut_s8_reference,
    relu6_s8,
    relu6_s8_reference,
)
from kernels_py.errors import KernelArgumentError
from refsim.conformance import registry
from refsim.errors import VectorError
from refsim.testing.strategies import activations, int8_arrays

shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=6)
inputs = shapes.flatmap(int8_arrays)
tables = hnp.arrays(np.int8, (256,), elements=st.integers(-128, 127))
scales = st.one_of(
    st.sampled_from([1.0 / 256, 1.0 / 128, 0.5, 1.0, 2.0**-12, 8.0]),
    st.floats(2.0**-12, 8.0).map(lambda s: float(np.float32(s))),
)
zero_points = st.one_of(st.sampled_from([-128, 127, 0]), st.integers(-128, 127))


# --- fast path == reference -------------------------------------------------------------------


@given(inputs)
def test_relu6_fast_equals_reference(x):
    out = relu6_s8(x)
    np.testing.assert_array_equal(out, relu6_s8_reference(x))
    assert out.dtype == np.int8 and out.shape == x.shape


@given(inputs, activations())
def test_clamp_fast_equals_reference(x, act):
    np.testing.assert_array_equal(clamp_s8(x, act.min, act.max), clamp_s8_reference(x, act.min, act.max))


@given(inputs, tables)
def test_lut_fast_equals_reference(x, table):
    np.testing.assert_array_equal(lut_s8(x, table), lut_s8_reference(x, table))


@given(st.sampled_from(sorted(ACTIVATION_FUNCTIONS)), scales, zero_points, scales, zero_points)
def test_built_tables_are_int8_and_monotone_where_the_function_is(name, in_scale, in_zp, out_scale, out_zp):
    table = build_activation_lut(name, in_scale, in_zp, out_scale, out_zp)
    assert table.dtype == np.int8 and table.shape == (256,)
    if name in ("sigmoid", "tanh", "log", "log2", "log10", "log1p", "sqrt"):
        # Increasing functions give non-decreasing tables, NaN regions included (they copy the
        # nearest defined entry, which is the low edge of the domain).
        assert np.all(np.diff(table.astype(int)) >= 0)


# --- hand-worked cases ------------------------------------------------------------------------


def test_relu6_clamps_raw_values_to_0_6():
    x = np.array([-128, -1, 0, 1, 5, 6, 7, 127], np.int8)
    expected = np.array([0, 0, 0, 1, 5, 6, 6, 6], np.int8)
    np.testing.assert_array_equal(relu6_s8(x), expected)
    np.testing.assert_array_equal(relu6_s8_reference(x), expected)
    assert x[0] == -128  # out of place: the input is untouched


def test_clamp_keeps_the_range_inclusive():
    x = np.array([[-128, -6, -5, 0], [3, 4, 5, 127]], np.int8)
    expected = np.array([[-5, -5, -5, 0], [3, 4, 4, 4]], np.int8)
    np.testing.assert_array_equal(clamp_s8(x, -5, 4), expected)


def test_lut_is_indexed_by_input_plus_128():
    table = np.arange(256, dtype=np.int64).astype(np.uint8).view(np.int8)  # table[i] = (int8)i
    x = np.array([-128, -1, 0, 1, 127], np.int8)
    # index = x + 128 -> 0, 127, 128, 129, 255 -> as int8: 0, 127, -128, -127, -1.
    np.testing.assert_array_equal(lut_s8(x, table), np.array([0, 127, -128, -127, -1], np.int8))


def test_table_rounds_half_away_from_zero():
    # f(x) = x with input scale 1/2: entry q is q/2; .5 ties go away from zero (3, -3 for q=+-5),
    # where banker's rounding would give 2 and -2.
    table = build_activation_lut(lambda x: x, 0.5, 0, 1.0, 0)
    for q, expected in [(0, 0), (1, 1), (-1, -1), (3, 2), (-3, -2), (5, 3), (-5, -3), (127, 64), (-128, -64)]:
        assert table[q + 128] == expected


def test_sigmoid_table_centre_and_rails():
    # sigmoid(0) = 0.5 -> 0.5 * 256 - 128 = 0; q = 127 with input scale 1/8: sigmoid(15.875)
    # * 256 = 255.99997... - 128 -> 127.99997 -> 128 -> clamped to 127; q = -128: sigmoid(-16) * 256
    # = 2.9e-5 -> -128.
    table = build_activation_lut("sigmoid", 1.0 / 8, 0, 1.0 / 256, -128)
    assert table[128] == 0
    assert table[255] == 127
    assert table[0] == -128


def test_log_table_pole_and_undefined_entries():
    # log with input scale 1, zero point 0: q = 0 -> log(0) = -inf -> the -128 rail; q < 0 -> NaN,
    # copied from the nearest defined entry (q = 0, index 128); q = 1 -> log(1) = 0 -> output zp;
    # q = 3 -> log(3) / (1/16) = 17.58 -> 18 + 5 = 23.
    table = build_activation_lut("log", 1.0, 0, 1.0 / 16, 5)
    assert table[128] == -128
    assert np.all(table[:128] == -128)
    assert table[129] == 5
    assert table[131] == 23


def test_clamp_bound_rounds_in_float32_half_to_even():
    # 6.0 / 0.5 - 128 = -116 exactly.
    assert clamp_bound(6.0, 0.5, -128, -128, 127) == -116
    # 0.25 / 0.5 = 0.5 -> 0 (half to even), 0.75 / 0.5 = 1.5 -> 2.
    assert clamp_bound(0.25, 0.5, 0, -128, 127) == 0
    assert clamp_bound(0.75, 0.5, 0, -128, 127) == 2
    # 2.5 + 1e-9 is above the tie in float64 but rounds to 2.5 in float32, then to 2.
    assert clamp_bound(2.5 + 1e-9, 1.0, 0, -128, 127) == 2
    assert clamp_bound(1000.0, 1.0, 0, -128, 127) == 127


# --- validation -------------------------------------------------------------------------------


def test_validation_errors_name_the_argument():
    x = np.zeros(4, np.int8)
    with pytest.raises(KernelArgumentError, match="relu6_s8: input"):
        relu6_s8(x.astype(np.int16))
    with pytest.raises(KernelArgumentError, match="activation_min/activation_max"):
        clamp_s8(x, 5, 4)
    with pytest.raises(KernelArgumentError, match="activation_min/activation_max"):
        clamp_s8(x, -129, 4)
    with pytest.raises(KernelArgumentError, match="activation_max"):
        clamp_s8(x, 0, 4.0)
    with pytest.raises(KernelArgumentError, match="lut_s8: table"):
        lut_s8(x, np.zeros(255, np.int8))
    with pytest.raises(KernelArgumentError, match="lut_s8: table"):
        lut_s8_reference(x, np.zeros(256, np.uint8))
    with pytest.raises(KernelArgumentError, match="fn"):
        build_activation_lut("softplus", 1.0, 0, 1.0, 0)
    with pytest.raises(KernelArgumentError, match="output_scale"):
        build_activation_lut("tanh", 1.0, 0, 0.0, 0)
    with pytest.raises(KernelArgumentError, match="fn"):
        build_activation_lut(lambda x: math.nan, 1.0, 0, 1.0, 0)


# --- conformance adapters ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["arm_relu6_s8", "refsim_lut_s8"])
def test_adapter_generate_then_run_equals_the_kernel(name):
    function = registry.get(name)
    rng = np.random.default_rng(20240601)
    for _ in range(20):
        arrays, params = function.generate(rng)
        assert params["function"] == name and set(function.params) <= set(params)
        out = function.run(arrays, params)
        if name == "arm_relu6_s8":
            expected = relu6_s8(arrays["input"])
        else:
            expected = lut_s8(arrays["input"], arrays["table"])
        np.testing.assert_array_equal(out, expected)


def test_relu6_adapter_checks_size():
    function = registry.get("arm_relu6_s8")
    x = np.zeros(3, np.int8)
    with pytest.raises(VectorError, match="shape"):
        function.run({"input": x}, {"function": "arm_relu6_s8", "size": 4})
    with pytest.raises(KernelArgumentError, match="uint16_t"):
        function.run({"input": np.zeros(70000, np.int8)}, {"function": "arm_relu6_s8", "size": 70000})
    with pytest.raises(VectorError, match="size"):
        function.run({"input": x}, {"function": "arm_relu6_s8"})

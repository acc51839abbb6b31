"""kernels_py.softmax: arm_softmax_s8 and its TFLM / ExecuTorch parameters."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from kernels_py.errors import KernelArgumentError
from kernels_py.softmax import (
    _tflm_quantize_multiplier,
    softmax_params,
    softmax_params_executorch,
    softmax_s8,
    softmax_s8_reference,
)
from refsim.conformance import registry
from refsim.errors import VectorError
from refsim.testing.strategies import INT8, multipliers

# beta * input_scale as log2: from just above TFLM's floor (2^-26) to well past the 2^31 - 1 cap
# (2^5, where the real multiplier saturates).
log2_beta_scales = st.one_of(
    st.sampled_from([-25.99, -25.0, -8.0, -4.0, 0.0, 4.9, 5.0, 6.0, 12.0]), st.floats(-25.99, 12.0)
)
betas = st.one_of(st.just(1.0), st.floats(0.125, 8.0))


def _radius(shift: int) -> int:
    return (31 << 26) >> shift


@st.composite
def tflm_params(draw):
    beta = draw(betas)
    scale = 2.0 ** draw(log2_beta_scales) / beta
    return softmax_params(beta, scale)


@st.composite
def raw_params(draw):
    """Any legal (mult, shift, diff_min) with diff_min on or inside the radius, and its edges."""
    shift = draw(st.one_of(st.sampled_from([0, 1, 23, 30, 31]), st.integers(0, 31)))
    radius = _radius(shift)
    diff_min = -draw(
        st.one_of(st.sampled_from([radius, 0, min(radius, 255), min(radius, 256)]), st.integers(0, radius))
    )
    return draw(multipliers), shift, diff_min


@st.composite
def row_batches(draw):
    num_rows = draw(st.integers(1, 4))
    row_size = draw(st.one_of(st.just(1), st.integers(1, 24)))
    rows = draw(
        hnp.arrays(np.int8, (num_rows, row_size), elements=st.one_of(st.sampled_from([-128, 127, 0]), INT8))
    )
    kind = draw(st.sampled_from(["random", "equal", "band"]))
    if kind == "equal":
        rows[:] = rows[:, :1]
    elif kind == "band":
        rows = np.clip(rows.astype(np.int16) // 64 + 100, -128, 127).astype(np.int8)
    shape = draw(st.sampled_from(["2d", "3d", "1d"]))
    if shape == "3d":
        return rows.reshape(num_rows, 1, row_size)
    if shape == "1d":
        return rows[0]
    return rows


# --- fast path == reference -------------------------------------------------------------------


@given(row_batches(), st.one_of(tflm_params(), raw_params()))
def test_fast_equals_reference(x, params):
    out = softmax_s8(x, *params)
    np.testing.assert_array_equal(out, softmax_s8_reference(x, *params))
    assert out.dtype == np.int8 and out.shape == x.shape


@given(row_batches(), raw_params())
def test_diff_min_edge_is_inclusive(x, params):
    # An element exactly diff_min below the row max is computed, one more below is -128.
    mult, shift, _ = params
    rows = x.reshape(-1, x.shape[-1])
    diff = rows.astype(int) - rows.max(axis=1, keepdims=True)
    diff_min = int(diff.min())
    out = softmax_s8(x, mult, shift, diff_min).reshape(rows.shape)
    np.testing.assert_array_equal(out, softmax_s8_reference(x, mult, shift, diff_min).reshape(rows.shape))
    excluded = softmax_s8(x, mult, shift, diff_min + 1).reshape(rows.shape)
    assert np.all(excluded[diff == diff_min] == -128)


@given(st.integers(1, 511), INT8, st.one_of(tflm_params(), raw_params()))
def test_all_equal_rows_share_one_value(n, value, params):
    out = softmax_s8(np.full((1, n), value, np.int8), *params)
    assert len(set(out.reshape(-1).tolist())) == 1
    # Every element is the maximum (diff 0), so the value is 256/n - 128 within the LSB.
    assert abs(int(out[0, 0]) - min(127, round(256 / n) - 128)) <= 1


@given(row_batches(), betas, st.floats(-8.0, 4.0))
def test_close_to_float_softmax(x, beta, log2_beta_scale):
    # Sanity, not exactness: the fixed-point result tracks float softmax of the dequantized row
    # (scale 1/256, zero point -128) to within one LSB.
    scale = 2.0**log2_beta_scale / beta
    out = softmax_s8(x, *softmax_params(beta, scale)).astype(int)
    rows = x.reshape(-1, x.shape[-1]).astype(np.float64)
    z = (rows - rows.max(axis=1, keepdims=True)) * float(np.float32(beta)) * float(np.float32(scale))
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    expected = np.clip(np.round(p * 256) - 128, -128, 127).reshape(x.shape)
    assert np.abs(out - expected).max() <= 1


# --- hand-worked cases ------------------------------------------------------------------------


def test_equal_elements_split_the_unit():
    # n equal elements: each exp(0) contributes DIV_POW2(INT32_MAX, 12) = 2^19 to the Q12.19 sum.
    # n = 1: sum 2^19, headroom 12, 1/sum normalised is ONE_OVER1(0) ~ 1.0, bits_over_unit 23:
    #   ~2^31 / 2^23 = 256 -> 256 - 128 = 128 -> clamped to 127.
    # n = 2: sum 2^20 -> 1.0 / 2^24 * 2^31 = 128 -> 0.  n = 4: 64 - 128 = -64.
    # n = 3: sum = 3 * 2^19, headroom 11, (3 * 2^30 - 2^31) = 0.5 -> 1/1.5 = 0.6667 in Q0.31,
    #   times ~1.0, / 2^24 -> 85.33 -> 85 - 128 = -43.
    mult, shift, diff_min = softmax_params(1.0, 0.1)
    for n, expected in [(1, 127), (2, 0), (3, -43), (4, -64)]:
        out = softmax_s8(np.full((1, n), 7, np.int8), mult, shift, diff_min)
        np.testing.assert_array_equal(out, np.full((1, n), expected, np.int8))


def test_rows_are_independent_and_diff_min_cuts():
    # Row 0: [1, 2, 3] at beta * scale 0.1 gives p = 0.3006, 0.3322, 0.3672 -> 76.9, 85.0, 94.0
    # -> -51, -43, -34.
    mult, shift, _ = softmax_params(1.0, 0.1)
    x = np.array([[1, 2, 3], [100, 100, -128]], np.int8)
    # Row 1 with diff_min = -5: the -128 element (diff -228) is cut, the two maxima share 0.5.
    out = softmax_s8(x, mult, shift, -5)
    np.testing.assert_array_equal(out, np.array([[-51, -43, -34], [0, 0, -128]], np.int8))


def test_positive_diff_min_cuts_everything():
    # No element satisfies diff >= 1, the sum is 0 and every output is -128.
    np.testing.assert_array_equal(
        softmax_s8(np.array([[3, 3, -1]], np.int8), 1 << 30, 23, 1), [[-128, -128, -128]]
    )


def test_softmax_params_by_hand():
    # 1 * 1/16 * 2^26 = 2^22 = 0.5 * 2^23 -> (2^30, 23); diff_min = -floor(31 * 2^26 / 2^23) = -248.
    assert softmax_params(1.0, 1.0 / 16) == (1 << 30, 23, -248)
    # 1000 * 2^26 is capped at 2^31 - 1 = (1 - 2^-31) * 2^31 -> (2^31 - 1, 31) in TFLM's default
    # build (no saturation of shift 31); diff_min = -floor(31 * 2^26 / 2^31) = 0.
    assert softmax_params(1000.0, 1.0) == ((1 << 31) - 1, 31, 0)
    # beta is a float32 in TFLite: 0.1 becomes 0.100000001490116..., scale 2^-3:
    # 0.1000000015 * 2^23 = 838860.8125 = 0.8000000119 * 2^20 -> round(0.8000000119 * 2^31) =
    # 1717986944 (float64 0.1 would give 1717986918), shift 20, diff_min = -floor(31 * 2^6) = -1984.
    assert softmax_params(0.1, 0.125) == (1717986944, 20, -1984)
    with pytest.raises(ValueError, match="must exceed 1"):
        softmax_params(1.0, 2.0**-26)


def test_executorch_params_match_tflm_for_float32_scales_and_differ_at_ties():
    assert softmax_params_executorch(1.0 / 16) == softmax_params(1.0, 1.0 / 16)
    # real = 2 * (2^31 + 1) / 2^32 -> mantissa * 2^31 = 2^30 + 0.5 exactly: Python's round (half
    # to even) gives 2^30, TFLM's TfLiteRound (half away) 2^30 + 1.
    scale = (2**31 + 1) / 2**57
    assert softmax_params_executorch(scale)[:2] == (1 << 30, 1)
    assert _tflm_quantize_multiplier(scale * 2**26) == ((1 << 30) + 1, 1)
    # Below 2^-27 ExecuTorch produces a negative shift, which the kernel refuses, and a
    # diff_min of -floor(31 * 2^29) that does not even fit the int32 the op casts it to.
    mult, shift, diff_min = softmax_params_executorch(2.0**-30)
    assert (mult, shift, diff_min) == (1 << 30, -3, -31 * 2**29)
    with pytest.raises(KernelArgumentError, match="shift"):
        softmax_s8(np.zeros((1, 2), np.int8), mult, shift, -1)


@given(st.floats(-25.9, 5.0))
def test_executorch_params_equal_tflm_at_beta_1(log2_scale):
    scale = float(np.float32(2.0**log2_scale))
    assert softmax_params_executorch(scale) == softmax_params(1.0, scale)


# --- validation -------------------------------------------------------------------------------


def test_sums_reaching_2_to_28_are_rejected():
    # 512 elements at the maximum sum to 512 * 2^19 = 2^28: bits_over_unit would be 32.
    mult, shift, diff_min = softmax_params(1.0, 0.1)
    # 511 at the maximum still fit: 256 / 511 = 0.501 -> 1 - 128 = -127.
    ok = softmax_s8(np.zeros((1, 511), np.int8), mult, shift, diff_min)
    assert np.all(ok == -127)
    for kernel in (softmax_s8, softmax_s8_reference):
        with pytest.raises(KernelArgumentError, match="row 1"):
            kernel(
                np.stack([np.arange(512) % 256 - 128, np.zeros(512)]).astype(np.int8), mult, shift, diff_min
            )


def test_arguments_are_validated():
    x = np.zeros((2, 3), np.int8)
    for kernel in (softmax_s8, softmax_s8_reference):
        with pytest.raises(KernelArgumentError, match="input"):
            kernel(x.astype(np.int16), 1 << 30, 0, -1)
        with pytest.raises(KernelArgumentError, match="input"):
            kernel(np.zeros((2, 0), np.int8), 1 << 30, 0, -1)
        with pytest.raises(KernelArgumentError, match="shift"):
            kernel(x, 1 << 30, 32, -1)
        with pytest.raises(KernelArgumentError, match="mult"):
            kernel(x, 1 << 31, 0, -1)
        with pytest.raises(KernelArgumentError, match="diff_min"):
            kernel(x, 1 << 30, 0, 1.5)


# --- conformance adapter ----------------------------------------------------------------------


def test_adapter_generate_then_run_equals_the_kernel():
    function = registry.get("arm_softmax_s8")
    rng = np.random.default_rng(7)
    for _ in range(40):
        arrays, params = function.generate(rng)
        assert set(function.params) <= set(params) and params["function"] == "arm_softmax_s8"
        expected = softmax_s8(arrays["input"], params["mult"], params["shift"], params["diff_min"])
        np.testing.assert_array_equal(function.run(arrays, params), expected)
    bad = dict(params, row_size=params["row_size"] + 1)
    with pytest.raises(VectorError, match="shape"):
        function.run(arrays, bad)

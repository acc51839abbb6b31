"""kernels_py.tflm.quantize against the tflite-micro wheel: QUANTIZE (float32 -> int8, int8 -> int8)
and DEQUANTIZE (int8 -> float32), bit for bit (float32 outputs compared as their bits)."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given, note
from hypothesis import strategies as st

from kernels_py.tflm import fixedpoint as fp
from kernels_py.tflm import quantize as q
from refsim.tflite import schema as s
from tests.tflite.test_tflm_activations import ALL_BYTES, scales, zero_points
from tests.tflite.tflm_wheel import T, requires_wheel, run_single_op

B = s.BuiltinOperator
F32, I8 = s.TensorType.FLOAT32, s.TensorType.INT8


@requires_wheel
@given(st.data())
def test_requantize_int8(data):
    in_q = (data.draw(scales()), data.draw(zero_points))
    out_q = (data.draw(scales()), data.draw(zero_points))
    m, sh = q.requantize_params(in_q[0], out_q[0])
    note(f"{in_q} -> {out_q}: multiplier {m} shift {sh}")
    assume(sh <= 30)  # x * (1 << 31) is undefined; the op refuses it
    expected = run_single_op(B.QUANTIZE, [T((256,), I8, *in_q)], [T((256,), I8, *out_q)], [ALL_BYTES])[0]
    got = q.lookup(q.requantize_table(m, sh, in_q[1], out_q[1]), ALL_BYTES)
    np.testing.assert_array_equal(got, expected)


finite_floats = st.floats(-1e6, 1e6, width=32) | st.sampled_from(
    [0.0, -0.0, 0.5, -0.5, 1.5, -2.5, 127.5, -128.5]
)


@requires_wheel
@given(st.data())
def test_quantize_float(data):
    scale, zp = data.draw(scales(-20, 8)), data.draw(zero_points)
    n = data.draw(st.integers(1, 64))
    x = np.array(data.draw(st.lists(finite_floats, min_size=n, max_size=n)), np.float32)
    # exact midpoints of the quantization grid: roundf's ties go away from zero
    k = data.draw(st.integers(-200, 200))
    x[0] = np.float32((k + 0.5) * np.float64(np.float32(scale)))
    # TFLM's x86-64 build and Cortex-M differ outside int32 (see kernels_py.tflm.quantize)
    x = x[np.abs(x.astype(np.float64) / np.float32(scale)) < 2.0**31]
    assume(x.size > 0)
    expected = run_single_op(B.QUANTIZE, [T((x.size,), F32)], [T((x.size,), I8, scale, zp)], [x])[0]
    np.testing.assert_array_equal(q.quantize_float(x, scale, zp), expected)


@requires_wheel
@given(st.data())
def test_dequantize(data):
    scale, zp = data.draw(scales(-40, 40)), data.draw(zero_points)
    expected = run_single_op(B.DEQUANTIZE, [T((256,), I8, scale, zp)], [T((256,), F32)], [ALL_BYTES])[0]
    got = q.dequantize(ALL_BYTES, scale, zp)
    np.testing.assert_array_equal(got.view(np.int32), expected.view(np.int32))


# --- without the wheel ---------------------------------------------------------------------------------


def test_quantize_float_saturates_like_cortex_m():
    x = np.array([np.inf, -np.inf, np.nan, 3e9, -3e9], np.float32)
    # VCVT: +inf -> INT32_MAX, which plus a positive zero point wraps negative and clamps to -128
    np.testing.assert_array_equal(q.quantize_float(x, 1.0, 0), [127, -128, 0, 127, -128])
    np.testing.assert_array_equal(q.quantize_float(x, 1.0, 1), [-128, -128, 1, -128, -128])


def test_quantize_multiplier_matches_tflm_rules():
    assert fp.quantize_multiplier(0.0) == (0, 0)
    assert fp.quantize_multiplier(1.0) == (1 << 30, 1)
    assert fp.quantize_multiplier(2.0**-40) == (0, 0)  # shift below -31 flushes
    assert fp.quantize_multiplier(2.0**40) == (1 << 30, 41)  # no saturation (double rounding build)
    assert fp.quantize_multiplier(1 - 2.0**-40) == (1 << 30, 1)  # q rounds to 2^31


@given(
    st.lists(st.integers(-(2**31), 2**31 - 1), min_size=1, max_size=32),
    st.integers(0, 2**31 - 1),
    st.integers(-31, 30),
)
def test_vectorized_requantize_equals_the_scalar_transliteration(xs, multiplier, shift):
    got = fp.multiply_by_quantized_multiplier_array(np.array(xs, np.int64), multiplier, shift)
    assert got.tolist() == [fp.multiply_by_quantized_multiplier(x, multiplier, shift) for x in xs]


@given(st.integers(-(2**31), 2**31 - 1), st.integers(0, 2**31 - 1), st.integers(-31, 30))
def test_tflm_requantize_equals_cmsis_nn_requantize(x, multiplier, shift):
    """TFLM's MultiplyByQuantizedMultiplier (gemmlowp) and CMSIS-NN's arm_nn_requantize (kernels_py)
    round the same way (DESIGN.md, Numerics)."""
    from kernels_py.fixedpoint import requantize

    assert fp.multiply_by_quantized_multiplier(x, multiplier, shift) == requantize(x, multiplier, shift)


def test_non_finite_scale_quotients_are_refused_not_crashed():
    import math

    import pytest

    assert math.isinf(fp.tflite_round(math.inf))
    with pytest.raises(ValueError, match="not finite"):
        fp.quantize_multiplier(math.inf)
    # a float32 denormal output scale: QUANTIZE's double quotient is finite (a shift the op refuses) ...
    assert q.requantize_params(1.0, 1e-45)[1] > 30
    # ... but RELU's quotient is float32 and overflows
    from kernels_py.tflm import activations as act

    with pytest.raises(ValueError, match="not finite"):
        act.relu_params(1.0, 0, 1e-45, 0)

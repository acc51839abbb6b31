"""kernels_py.quantize: ExecuTorch's portable and cortex_m quantize / dequantize kernels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from kernels_py import quantize as q
from kernels_py.errors import KernelArgumentError
from refsim.conformance import registry
from refsim.errors import VectorError

shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=5)
# Powers of two keep x * inv_scale exact, so the drawn ties really are ties; the extremes make
# 1/(float)scale infinite or zero.
scales = st.one_of(
    st.integers(-12, 4).map(lambda e: 2.0**e),
    st.floats(1e-6, 1e3),
    st.sampled_from([0.1, 0.007, 1.0 / 3, 0.0, 1e-45, 1e39, -0.5]),
)
any_float32 = st.floats(width=32, allow_nan=True, allow_infinity=True)


@st.composite
def quant_ranges(draw, dtype=None):
    dtype = np.dtype(dtype or draw(st.sampled_from(q.QUANT_DTYPES)))
    info = np.iinfo(dtype)
    lo = draw(st.one_of(st.just(int(info.min)), st.integers(int(info.min), int(info.max))))
    hi = draw(st.one_of(st.just(int(info.max)), st.integers(lo, int(info.max))))
    zp = draw(st.integers(max(int(info.min), -(2**31)), min(int(info.max), 2**31 - 1)))
    return dtype, lo, hi, zp


@st.composite
def float_inputs(draw, scale, zero_point, dtype=np.float32):
    """Arbitrary floats mixed with grid points and exact half-way points of the given scale."""
    shape = draw(shapes)
    values = draw(hnp.arrays(dtype, shape, elements=st.floats(width=32, allow_nan=True, allow_infinity=True)))
    steps = draw(hnp.arrays(np.int64, shape, elements=st.integers(-300, 300)))
    kind = draw(hnp.arrays(np.int8, shape, elements=st.integers(0, 2)))
    with np.errstate(all="ignore"):
        grid = ((steps - zero_point) + np.where(kind == 1, 0.5, 0.0)) * scale
        return np.where(kind == 0, values, grid).astype(dtype)


@st.composite
def per_tensor_cases(draw, dtype=np.float32):
    out_dtype, lo, hi, zp = draw(quant_ranges())
    scale = draw(scales)
    return draw(float_inputs(scale, zp, dtype)), scale, zp, lo, hi, out_dtype


@st.composite
def per_channel_cases(draw, in_dtype=np.float32):
    out_dtype, lo, hi, _ = draw(quant_ranges())
    x = draw(hnp.arrays(in_dtype, hnp.array_shapes(min_dims=1, max_dims=4, max_side=4), elements=any_float32))
    axis = draw(st.integers(-x.ndim, x.ndim - 1))
    channels = x.shape[axis]
    scales_ = np.array(draw(st.lists(scales, min_size=channels, max_size=channels)))
    zps = np.array(draw(st.lists(st.integers(-128, 127), min_size=channels, max_size=channels)), np.int64)
    return x, scales_, zps, axis, lo, hi, out_dtype


int_arrays = st.sampled_from(q.QUANT_DTYPES).flatmap(
    lambda d: hnp.arrays(d, shapes, elements=st.integers(int(np.iinfo(d).min), int(np.iinfo(d).max)))
)
out_dtypes = st.sampled_from(q.FLOAT_DTYPES)


# --- fast path == reference -------------------------------------------------------------------


@given(st.one_of(per_tensor_cases(np.float32), per_tensor_cases(np.float64)))
def test_quantize_fast_equals_reference(case):
    out = q.quantize_per_tensor(*case)
    np.testing.assert_array_equal(out, q.quantize_per_tensor_reference(*case))
    assert out.dtype == case[-1] and out.shape == case[0].shape


@given(per_channel_cases())
def test_quantize_per_channel_fast_equals_reference(case):
    np.testing.assert_array_equal(q.quantize_per_channel(*case), q.quantize_per_channel_reference(*case))


@given(per_tensor_cases())
def test_per_channel_with_one_scale_equals_per_tensor(case):
    x, scale, zp, lo, hi, dtype = case
    x = x.reshape(-1)
    channels = np.full(x.shape, scale), np.full(x.shape, zp)
    np.testing.assert_array_equal(
        q.quantize_per_channel(x, *channels, 0, lo, hi, dtype), q.quantize_per_tensor(*case).reshape(-1)
    )


@given(int_arrays, scales, st.integers(-200, 200), out_dtypes)
def test_dequantize_fast_equals_reference(values, scale, zp, out_dtype):
    args = (values, scale, zp, -(2**40), 2**40, out_dtype)
    out = q.dequantize_per_tensor(*args)
    np.testing.assert_array_equal(out, q.dequantize_per_tensor_reference(*args))
    assert out.dtype == out_dtype


@given(per_channel_cases(), out_dtypes, st.sampled_from(q.QUANT_DTYPES))
def test_dequantize_per_channel_fast_equals_reference(case, out_dtype, in_dtype):
    x, scales_, zps, axis, _, _, _ = case
    ints = np.nan_to_num(x, nan=0, posinf=0, neginf=0).clip(0, 100).astype(in_dtype)
    args = (ints, scales_, zps, axis, -128, 127, out_dtype)
    np.testing.assert_array_equal(q.dequantize_per_channel(*args), q.dequantize_per_channel_reference(*args))


@given(per_tensor_cases())
def test_cortex_m_quantize_fast_equals_reference(case):
    x, scale, zp, _, _, _ = case
    args = (x.astype(np.float32), scale, max(-128, min(127, zp)), -128, 127)
    np.testing.assert_array_equal(
        q.cortex_m_quantize_per_tensor(*args), q.cortex_m_quantize_per_tensor_reference(*args)
    )


# --- the two families agree inside their common domain ----------------------------------------


@given(per_tensor_cases(), quant_ranges(np.int8))
def test_cortex_m_quantize_equals_portable_when_finite_and_in_range(case, qrange):
    x, scale, _, _, _, _ = case
    _, lo, hi, zp = qrange
    inv = q._inv_scale(scale)
    if not (np.isfinite(inv) and inv != 0):
        scale, inv = 1.0, np.float32(1.0)  # NaN products (0 * inf) are outside the common domain
    with np.errstate(all="ignore"):
        x = np.where(np.abs(x.astype(np.float32) * inv) < 2**31 - 256, x, 0).astype(np.float32)
    np.testing.assert_array_equal(
        q.cortex_m_quantize_per_tensor(x, scale, zp, lo, hi), q.quantize_per_tensor(x, scale, zp, lo, hi)
    )


@given(hnp.arrays(np.int8, shapes), scales, quant_ranges(np.int8))
def test_cortex_m_dequantize_equals_portable(values, scale, qrange):
    _, lo, hi, _ = qrange
    zp = (lo + hi) // 2
    np.testing.assert_array_equal(
        q.cortex_m_dequantize_per_tensor(values, scale, zp, lo, hi),
        q.dequantize_per_tensor(values, scale, zp, lo, hi),
    )


@given(hnp.arrays(np.int8, shapes), st.integers(-12, 4), st.integers(-128, 127))
def test_dequantize_then_quantize_round_trips_with_power_of_two_scales(values, exponent, zp):
    scale = 2.0**exponent
    floats = q.dequantize_per_tensor(values, scale, zp, -128, 127)
    np.testing.assert_array_equal(q.quantize_per_tensor(floats, scale, zp, -128, 127), values)


# --- hand-worked cases ------------------------------------------------------------------------


def test_ties_round_half_to_even():
    # scale 0.5 -> inv_scale 2.0; x * 2 = 2.5, 3.5, -2.5, -3.5, 0.5 -> 2, 4, -2, -4, 0; + zp 3.
    x = np.array([1.25, 1.75, -1.25, -1.75, 0.25], np.float32)
    for kernel in (q.quantize_per_tensor, q.cortex_m_quantize_per_tensor):
        np.testing.assert_array_equal(kernel(x, 0.5, 3, -128, 127), np.array([5, 7, 1, -1, 3], np.int8))


def test_product_is_rounded_to_float32_before_the_tie_break():
    # (float)0.05 = 0.0500000007450581; times inv_scale 10.0 the exact product is 0.50000000745,
    # which rounds to the float32 0.5, a tie -> 0 (a float64 product or the MVE FMA gives 1).
    # Likewise (float)0.03 * 50 = 1.49999997 -> float32 1.5 -> 2.
    assert q.quantize_per_tensor(np.array([0.05], np.float32), 0.1, 0, -128, 127)[0] == 0
    assert q.quantize_per_tensor(np.array([0.03], np.float32), 0.02, 0, -128, 127)[0] == 2


def test_inverse_scale_is_a_float32_division():
    # 1.0f / (float)0.007 = 142.85713 (float32), so -0.8785 * inv = -125.499985 -> -125. torch.ao's
    # Python reference multiplies by (float)(1.0 / 0.007) = 142.85715 -> -125.5 -> -126.
    assert q._inv_scale(0.007) == np.float32(142.85713)
    assert q.quantize_per_tensor(np.array([-0.8785], np.float32), 0.007, 0, -128, 127)[0] == -125


def test_zero_point_is_added_in_float32():
    # nearbyint(16777218 * 1) + (float)1 = 16777219 is not a float32: it rounds to 16777220.
    out = q.quantize_per_tensor(np.array([16777218.0], np.float32), 1.0, 1, -(2**31), 2**31 - 1, np.int32)
    assert out[0] == 16777220


def test_portable_nan_and_inf_go_to_quant_min():
    # x86-64 cvttss2si returns INT64_MIN for NaN, +-inf and |v| >= 2^63 -> clamped to quant_min.
    x = np.array([np.nan, np.inf, -np.inf, 1e30, 1e18, -1e18], np.float32)
    out = q.quantize_per_tensor(x, 1.0, 0, -100, 100)
    np.testing.assert_array_equal(out, np.array([-100, -100, -100, -100, 100, -100], np.int8))


def test_cortex_m_nan_inf_and_wrap():
    # VCVT: NaN -> 0, +inf -> INT32_MAX, -inf -> INT32_MIN; then zp + . wraps in int32.
    x = np.array([np.nan, np.inf, -np.inf, 3e9], np.float32)
    np.testing.assert_array_equal(q.cortex_m_quantize_per_tensor(x, 1.0, 0, -128, 127), [0, 127, -128, 127])
    # zp 5: NaN -> 5; INT32_MAX + 5 wraps to INT32_MIN + 4 -> -128 (also for the finite 3e9).
    np.testing.assert_array_equal(q.cortex_m_quantize_per_tensor(x, 1.0, 5, -128, 127), [5, -128, -128, -128])
    # zp -1: INT32_MIN - 1 wraps to INT32_MAX -> 127.
    assert q.cortex_m_quantize_per_tensor(np.array([-np.inf], np.float32), 1.0, -1, -128, 127)[0] == 127


def test_quant_min_above_quant_max_gives_quant_max():
    # ExecuTorch checks each bound against the dtype only; max(., 10) then min(., 5) is 5.
    assert q.quantize_per_tensor(np.array([0.0], np.float32), 1.0, 0, 10, 5)[0] == 5


def test_dequantize_by_hand():
    # (5 - 1) * (float)0.1: 4 * 13421773 * 2^-27 = 13421773 * 2^-25 = (float)0.4 exactly.
    out = q.dequantize_per_tensor(np.array([5, -128], np.int8), 0.1, 1, -128, 127)
    assert out[0] == np.float32(0.4) and out.dtype == np.float32
    assert out[1] == np.float32(-129) * np.float32(0.1)


def test_per_channel_int8_dequantize_multiplies_in_float64():
    # q - zp = 64 + 2^30 is a float32 tie that rounds to 2^30; times 1 + 2^-23 in float32 that is
    # 2^30 + 128. The per-channel int8 path keeps 2^30 + 64 exact in float64: (2^30 + 64)(1 + 2^-23)
    # = 2^30 + 192 + 2^-17, above the midpoint of [2^30 + 128, 2^30 + 256] -> 2^30 + 256.
    values, scale, zp, lo = np.array([64], np.int8), 1 + 2.0**-23, -(2**30), -(2**31)
    assert q.dequantize_per_tensor(values, scale, zp, lo, 127)[0] == 2.0**30 + 128
    assert q.dequantize_per_channel(values, [scale], [zp], 0, lo, 127)[0] == 2.0**30 + 256
    # Float64 output: a 2-D input takes the generic float32 product (2^30 + 128); a 1-D input casts
    # the difference to double first, so the product is exact: 2^30 + 192 + 2^-17.
    wide = q.dequantize_per_channel(values.reshape(1, 1), [scale], [zp], 0, lo, 127, np.float64)
    assert wide[0, 0] == 2.0**30 + 128
    one_d = q.dequantize_per_channel(values, [scale], [zp], 0, lo, 127, np.float64)
    assert one_d[0] == 2.0**30 + 192 + 2.0**-17


# --- validation -------------------------------------------------------------------------------


def test_validation():
    x = np.zeros(3, np.float32)
    ints = np.zeros(3, np.int8)
    with pytest.raises(KernelArgumentError, match="quant_min"):
        q.quantize_per_tensor(x, 1.0, 0, -129, 127)
    with pytest.raises(KernelArgumentError, match="quant_max"):
        q.quantize_per_tensor(x, 1.0, 0, 0, 128, np.int8)
    with pytest.raises(KernelArgumentError, match="dtype"):
        q.quantize_per_tensor(x, 1.0, 0, 0, 1, np.int64)
    with pytest.raises(KernelArgumentError, match="x"):
        q.quantize_per_tensor(ints, 1.0, 0, -128, 127)
    with pytest.raises(KernelArgumentError, match="zero_point"):
        q.quantize_per_tensor(x, 1.0, 2**31, -128, 127)
    with pytest.raises(KernelArgumentError, match="scales"):
        q.quantize_per_channel(x, [1.0, 2.0], [0, 0], 0, -128, 127)
    with pytest.raises(KernelArgumentError, match="axis"):
        q.quantize_per_channel(x, [1.0] * 3, [0] * 3, 1, -128, 127)
    with pytest.raises(KernelArgumentError, match="quant_min/quant_max"):
        q.dequantize_per_tensor(ints, 1.0, 0, 5, 4)
    with pytest.raises(KernelArgumentError, match="zero_points"):
        q.dequantize_per_channel(ints, [1.0] * 3, [0, 0, 200], 0, -128, 127)
    with pytest.raises(KernelArgumentError, match="zero_point"):
        q.cortex_m_dequantize_per_tensor(ints, 1.0, 20, -10, 10)
    with pytest.raises(KernelArgumentError, match="q"):
        q.cortex_m_dequantize_per_tensor(ints.astype(np.int16), 1.0, 0, -10, 10)
    with pytest.raises(KernelArgumentError, match="x"):
        q.cortex_m_quantize_per_tensor(x.astype(np.float64), 1.0, 0, -128, 127)


# --- conformance adapters ---------------------------------------------------------------------

_KERNELS = {
    "refsim_quantize_per_tensor_s8": q.quantize_per_tensor,
    "refsim_dequantize_per_tensor_s8": q.dequantize_per_tensor,
    "refsim_cortex_m_quantize_per_tensor_s8": q.cortex_m_quantize_per_tensor,
    "refsim_cortex_m_dequantize_per_tensor_s8": q.cortex_m_dequantize_per_tensor,
}


@pytest.mark.parametrize("name", sorted(_KERNELS))
def test_per_tensor_adapters(name):
    function = registry.get(name)
    rng = np.random.default_rng(11)
    for _ in range(20):
        arrays, params = function.generate(rng)
        assert set(function.params) <= set(params)
        args = (params["scale"], params["zero_point"], params["quant_min"], params["quant_max"])
        np.testing.assert_array_equal(function.run(arrays, params), _KERNELS[name](arrays["input"], *args))
    with pytest.raises(VectorError, match="scale"):
        function.run(arrays, dict(params, scale="0.5"))


@pytest.mark.parametrize("name", ["refsim_quantize_per_channel_s8", "refsim_dequantize_per_channel_s8"])
def test_per_channel_adapters(name):
    function = registry.get(name)
    kernel = q.quantize_per_channel if "dequantize" not in name else q.dequantize_per_channel
    rng = np.random.default_rng(12)
    for _ in range(20):
        arrays, params = function.generate(rng)
        args = (
            arrays["scales"],
            arrays["zero_points"],
            params["axis"],
            params["quant_min"],
            params["quant_max"],
        )
        np.testing.assert_array_equal(function.run(arrays, params), kernel(arrays["input"], *args))
    with pytest.raises(VectorError, match="zero_points"):
        function.run(dict(arrays, zero_points=arrays["zero_points"].astype(np.int64)), params)

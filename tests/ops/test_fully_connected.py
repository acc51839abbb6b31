"""kernels_py.fully_connected: reference == fast path, the kernel-sum identity, hand-worked
cases, argument checks and the conformance adapters."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernels_py import fully_connected as fc
from kernels_py.errors import KernelArgumentError
from kernels_py.types import (
    INT32_MAX,
    INT32_MIN,
    Activation,
    BmmParams,
    FcParams,
    PerChannelQuantParams,
    PerTensorQuantParams,
)
from refsim.conformance import registry
from refsim.errors import VectorError
from refsim.testing.strategies import (
    activations,
    input_offsets,
    int8_arrays,
    int32_arrays,
    multipliers,
    output_offsets,
    per_channel,
    shifts,
)

#: multiplier 2^30 (0.5) with shift 1 is the identity: (2v * 2^30 + 2^30) >> 31 = v for any int32 v
#: whose double fits int32, so results can be checked against plain integer matmul.
IDENTITY = PerTensorQuantParams(1 << 30, 1)


# --- strategies --------------------------------------------------------------------------


@st.composite
def fc_params(draw, filter_offsets=input_offsets) -> FcParams:
    return FcParams(draw(input_offsets), draw(filter_offsets), draw(output_offsets), draw(activations()))


@st.composite
def fc_cases(draw, max_batches=3, max_depth=24, max_out=8):
    n = draw(st.integers(1, max_batches))
    k = draw(st.integers(1, max_depth))
    c = draw(st.integers(1, max_out))
    x = draw(int8_arrays((n, k)))
    w = draw(int8_arrays((c, k)))
    # Full-range biases make the int32 accumulator wrap; both paths must wrap alike.
    bias = draw(st.one_of(st.none(), int32_arrays((c,)), int32_arrays((c,), INT32_MIN, INT32_MAX)))
    return x, w, bias


per_tensor = st.builds(PerTensorQuantParams, multipliers, shifts)


def _broadcast_pair(draw, lo: int = 1, hi: int = 3) -> tuple[int, int]:
    size = draw(st.integers(lo, hi))
    return draw(st.sampled_from([(size, size), (1, size), (size, 1)]))


@st.composite
def bmm_cases(draw):
    n1, n2 = _broadcast_pair(draw)
    h1, h2 = _broadcast_pair(draw)
    rows_l, rows_r, k = draw(st.integers(1, 4)), draw(st.integers(1, 4)), draw(st.integers(1, 12))
    lhs = draw(int8_arrays((n1, h1, rows_l, k)))
    rhs = draw(int8_arrays((n2, h2, rows_r, k)))
    # TFLM right-aligns 2-D and 3-D operands; drop leading unit dims sometimes.
    if n1 == 1 and draw(st.booleans()):
        lhs = lhs[0]
        if h1 == 1 and draw(st.booleans()):
            lhs = lhs[0]
    if n2 == 1 and draw(st.booleans()):
        rhs = rhs[0]
    return lhs, rhs


# --- reference == fast path --------------------------------------------------------------


@given(case=fc_cases(), params=fc_params(), quant=per_tensor)
def test_fully_connected_reference_matches_fast_path(case, params, quant):
    x, w, bias = case
    np.testing.assert_array_equal(
        fc.fully_connected_s8(x, w, bias, params, quant),
        fc.fully_connected_s8_reference(x, w, bias, params, quant),
    )


@given(case=fc_cases(), params=fc_params(), data=st.data())
def test_fully_connected_per_channel_reference_matches_fast_path(case, params, data):
    x, w, bias = case
    quant = PerChannelQuantParams(*data.draw(per_channel(w.shape[0])))
    np.testing.assert_array_equal(
        fc.fully_connected_per_channel_s8(x, w, bias, params, quant),
        fc.fully_connected_per_channel_s8_reference(x, w, bias, params, quant),
    )


@given(case=fc_cases(), input_offset=input_offsets, filter_offset=input_offsets)
def test_vector_sum_reference_matches_fast_path(case, input_offset, filter_offset):
    _, w, bias = case
    np.testing.assert_array_equal(
        fc.vector_sum_s8(w, input_offset, bias, filter_offset),
        fc.vector_sum_s8_reference(w, input_offset, bias, filter_offset),
    )


@given(case=bmm_cases(), params=fc_params(), quant=per_tensor, adj=st.tuples(st.booleans(), st.booleans()))
def test_batch_matmul_reference_matches_fast_path(case, params, quant, adj):
    lhs, rhs = case
    bmm = BmmParams(adj[0], adj[1], params)
    fast = fc.batch_matmul_s8(lhs, rhs, bmm, quant)
    np.testing.assert_array_equal(fast, fc.batch_matmul_s8_reference(lhs, rhs, bmm, quant))
    assert fast.ndim == max(lhs.ndim, rhs.ndim)


# --- the kernel-sum form -------------------------------------------------------------------


@given(case=fc_cases(), params=fc_params(), quant=per_tensor)
def test_kernel_sum_form_is_bit_identical_to_bias_form(case, params, quant):
    """MVE's kernel_sum[c] + sum x*w + filter_offset * sum x equals the bias form modulo 2^32,
    so the outputs agree even when full-range biases make either accumulator wrap."""
    x, w, bias = case
    kernel_sum = fc.vector_sum_s8(w, params.input_offset, bias, params.filter_offset)
    expected = fc.fully_connected_s8(x, w, bias, params, quant)
    np.testing.assert_array_equal(fc.fully_connected_s8_kernel_sum(x, w, kernel_sum, params, quant), expected)
    np.testing.assert_array_equal(
        fc.fully_connected_s8_kernel_sum_reference(x, w, kernel_sum, params, quant), expected
    )


def test_kernel_sum_matches_executorch_aot_formula():
    # ExecuTorch's cortex_m pass: kernel_sum = input_offset * sum_k (w + weight_offset) + bias,
    # summed in int32 (torch.sum(..., dtype=torch.int32)). Exact here: no wrap at this size.
    rng = np.random.default_rng(0)
    w = rng.integers(-128, 128, (7, 33)).astype(np.int8)
    bias = rng.integers(-1000, 1000, 7).astype(np.int32)
    expected = 128 * (w.astype(np.int64) - 3).sum(axis=1) + bias
    np.testing.assert_array_equal(fc.vector_sum_s8(w, 128, bias, -3), expected)


# --- hand-worked cases -----------------------------------------------------------------------


def test_hand_worked_fully_connected():
    # x + input_offset = [2, -1, 4]; acc0 = 2*4 - 1*5 + 4*(-6) + 10 = -11; acc1 = -2 + 0 + 8 - 3 = 3.
    # multiplier 0.5, shift 0: floor((v + 1) / 2) -> -5 and 2 (-5.5 rounds up); + output_offset 1.
    x = np.array([[1, -2, 3]], np.int8)
    w = np.array([[4, 5, -6], [-1, 0, 2]], np.int8)
    bias = np.array([10, -3], np.int32)
    params = FcParams(input_offset=1, output_offset=1)
    out = fc.fully_connected_s8(x, w, bias, params, PerTensorQuantParams(1 << 30, 0))
    np.testing.assert_array_equal(out, [[-4, 3]])


def test_double_rounding_rounds_a_quarter_up():
    # acc = 1 scaled by 0.5 * 2^-1 = 0.25. The first rounding (doubling high multiply) gives
    # (2^30 + 2^30) >> 31 = 1, the second 1/2 = 0.5, ties away from zero -> 1. A single
    # rounding of 0.25 would give 0: this is CMSIS-NN's default build, not LiteRT's.
    x, w = np.array([[0]], np.int8), np.array([[1]], np.int8)
    out = fc.fully_connected_s8(x, w, None, FcParams(input_offset=1), PerTensorQuantParams(1 << 30, -1))
    np.testing.assert_array_equal(out, [[1]])


def test_filter_offset_is_applied():
    # (1 + 0) * (3 + 2) + (2 + 0) * (-4 + 2) = 5 - 4 = 1; multiplier ~1.0 keeps it 1.
    x, w = np.array([[1, 2]], np.int8), np.array([[3, -4]], np.int8)
    out = fc.fully_connected_s8(x, w, None, FcParams(filter_offset=2), PerTensorQuantParams(INT32_MAX, 0))
    np.testing.assert_array_equal(out, [[1]])


def test_accumulator_wraps_like_int32():
    # bias INT32_MAX + 1 * 1 wraps to INT32_MIN; times 0.5 that is -2^30, clamped to -128.
    # Without the wrap the result would be +2^30 -> 127.
    x, w = np.array([[1]], np.int8), np.array([[1]], np.int8)
    bias = np.array([INT32_MAX], np.int32)
    quant = PerTensorQuantParams(1 << 30, 0)
    for out in (
        fc.fully_connected_s8(x, w, bias, FcParams(), quant),
        fc.fully_connected_s8_reference(x, w, bias, FcParams(), quant),
        fc.fully_connected_s8_kernel_sum(x, w, fc.vector_sum_s8(w, 0, bias), FcParams(), quant),
    ):
        np.testing.assert_array_equal(out, [[-128]])


def test_per_channel_uses_each_channels_scale():
    # acc = [8, 8, 8]; scales 0.5, 0.5 * 2^-2, ~1.0 * 2^1 -> 4, 1, 16.
    x, w = np.array([[2]], np.int8), np.array([[4], [4], [4]], np.int8)
    quant = PerChannelQuantParams(np.array([1 << 30, 1 << 30, INT32_MAX]), np.array([0, -2, 1]))
    out = fc.fully_connected_per_channel_s8(x, w, None, FcParams(), quant)
    np.testing.assert_array_equal(out, [[4, 1, 16]])


@settings(max_examples=20)
@given(case=fc_cases(max_depth=40, max_out=12), input_offset=input_offsets, filter_offset=input_offsets)
def test_identity_scale_equals_integer_matmul(case, input_offset, filter_offset):
    x, w, _ = case
    params = FcParams(input_offset, filter_offset, 0, Activation(-128, 127))
    exact = (x.astype(np.int64) + input_offset) @ (w.astype(np.int64) + filter_offset).T
    np.testing.assert_array_equal(
        fc.fully_connected_s8(x, w, None, params, IDENTITY), np.clip(exact, -128, 127)
    )


def test_hand_worked_batch_matmul_with_broadcast():
    # out = lhs @ rhs^T with the identity scale: [[1, 2, 3], [3, 4, 7]] for lhs [[1, 2], [3, 4]],
    # rhs rows [1, 0], [0, 1], [1, 1]. lhs [2, 1, ...] and rhs [1, 3, ...] broadcast to [2, 3].
    lhs_mat = np.array([[1, 2], [3, 4]], np.int8)
    rhs_mat = np.array([[1, 0], [0, 1], [1, 1]], np.int8)
    lhs = np.stack([lhs_mat, -lhs_mat])[:, None]  # [2, 1, 2, 2]
    rhs = np.stack([rhs_mat, 2 * rhs_mat, -rhs_mat])[None]  # [1, 3, 3, 2]
    out = fc.batch_matmul_s8(lhs, rhs, BmmParams(), IDENTITY)
    base = np.array([[1, 2, 3], [3, 4, 7]])
    assert out.shape == (2, 3, 2, 3)
    for b, sign_l in enumerate((1, -1)):
        for h, factor in enumerate((1, 2, -1)):
            np.testing.assert_array_equal(out[b, h], sign_l * factor * base)


def test_batch_matmul_offsets_and_2d_operands():
    # (lhs + 1) @ (rhs - 1)^T: lhs + 1 = [[1, 2]], rhs - 1 = [[-1, 2]] -> -1 + 4 = 3.
    out = fc.batch_matmul_s8(
        np.array([[0, 1]], np.int8),
        np.array([[0, 3]], np.int8),
        BmmParams(fc_params=FcParams(1, -1)),
        IDENTITY,
    )
    np.testing.assert_array_equal(out, [[3]])


# --- argument checks ---------------------------------------------------------------------------

X = np.zeros((2, 3), np.int8)
W = np.zeros((4, 3), np.int8)
Q = PerTensorQuantParams(1 << 30, 0)


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"input": X.astype(np.int16)}, "input"),
        ({"input": X[0]}, "input"),
        ({"filter": np.zeros((4, 5), np.int8)}, "filter"),
        ({"filter": np.zeros((0, 3), np.int8)}, "filter"),
        ({"bias": np.zeros(3, np.int32)}, "bias"),
        ({"bias": np.zeros(4, np.int64)}, "bias"),
        ({"fc_params": FcParams(input_offset=129)}, "fc_params.input_offset"),
        ({"fc_params": FcParams(filter_offset=-128)}, "fc_params.filter_offset"),
        ({"fc_params": FcParams(output_offset=128)}, "fc_params.output_offset"),
        ({"fc_params": FcParams(activation=Activation(5, 4))}, "activation"),
        ({"quant_params": PerTensorQuantParams(1 << 30, 31)}, "quant_params.shift"),
        ({"quant_params": PerTensorQuantParams(INT32_MIN, 0)}, "quant_params.multiplier"),
    ],
)
@pytest.mark.parametrize("kernel", [fc.fully_connected_s8, fc.fully_connected_s8_reference])
def test_fully_connected_rejects(kernel, kwargs, argument):
    args = {"input": X, "filter": W, "bias": None, "fc_params": FcParams(), "quant_params": Q, **kwargs}
    with pytest.raises(KernelArgumentError) as err:
        kernel(**args)
    assert err.value.function == fc.FC_S8
    assert err.value.argument == argument


def test_per_channel_rejects_wrong_quant_shape():
    quant = PerChannelQuantParams.per_tensor(1 << 30, 0, 3)
    for kernel in (fc.fully_connected_per_channel_s8, fc.fully_connected_per_channel_s8_reference):
        with pytest.raises(KernelArgumentError, match=r"quant_params\.multiplier"):
            kernel(X, W, None, FcParams(), quant)


def test_kernel_sum_and_vector_sum_reject_bad_shapes():
    with pytest.raises(KernelArgumentError, match="kernel_sum"):
        fc.fully_connected_s8_kernel_sum(X, W, np.zeros(3, np.int32), FcParams(), Q)
    with pytest.raises(KernelArgumentError, match="filter"):
        fc.vector_sum_s8(np.zeros(3, np.int8), 0, None)
    with pytest.raises(KernelArgumentError, match="input_offset"):
        fc.vector_sum_s8_reference(W, -128, None)


@pytest.mark.parametrize(
    ("lhs_shape", "rhs_shape", "argument"),
    [
        ((1, 1, 2, 3), (1, 1, 2, 4), "input_rhs"),
        ((2, 1, 2, 3), (3, 1, 2, 3), "input_rhs_dims.n"),
        ((1, 2, 2, 3), (1, 3, 2, 3), "input_rhs_dims.h"),
        ((3,), (2, 3), "input_lhs"),
        ((1, 1, 1, 2, 3), (2, 3), "input_lhs"),
    ],
)
@pytest.mark.parametrize("kernel", [fc.batch_matmul_s8, fc.batch_matmul_s8_reference])
def test_batch_matmul_rejects(kernel, lhs_shape, rhs_shape, argument):
    with pytest.raises(KernelArgumentError) as err:
        kernel(np.zeros(lhs_shape, np.int8), np.zeros(rhs_shape, np.int8), BmmParams(), Q)
    assert err.value.argument == argument


# --- conformance adapters ----------------------------------------------------------------------

ADAPTERS = [fc.FC_S8, fc.FC_PER_CHANNEL_S8, fc.BATCH_MATMUL_S8, fc.VECTOR_SUM_S8]


def _direct(name: str, arrays, params):
    """The kernel called straight from the generated arrays, without the adapter."""
    bias = None if params.get("bias_is_null") else arrays.get("bias")
    if name in (fc.FC_S8, fc.FC_PER_CHANNEL_S8):
        fcp = FcParams(
            params["input_offset"],
            params["filter_offset"],
            params["output_offset"],
            Activation(params["activation.min"], params["activation.max"]),
        )
        if name == fc.FC_S8:
            quant = PerTensorQuantParams(params["multiplier"], params["shift"])
            return fc.fully_connected_s8_reference(arrays["input"], arrays["filter"], bias, fcp, quant)
        quant = PerChannelQuantParams(arrays["multiplier"], arrays["shift"])
        return fc.fully_connected_per_channel_s8_reference(
            arrays["input"], arrays["filter"], bias, fcp, quant
        )
    if name == fc.BATCH_MATMUL_S8:
        p = {k.removeprefix("fc_params."): v for k, v in params.items()}
        fcp = FcParams(
            p["input_offset"],
            p["filter_offset"],
            p["output_offset"],
            Activation(p["activation.min"], p["activation.max"]),
        )
        quant = PerTensorQuantParams(params["multiplier"], params["shift"])
        return fc.batch_matmul_s8_reference(
            arrays["input_lhs"], arrays["input_rhs"], BmmParams(fc_params=fcp), quant
        )
    bias = None if params.get("bias_is_null") else arrays["bias_data"]
    return fc.vector_sum_s8_reference(arrays["vector_data"], params["lhs_offset"], bias, params["rhs_offset"])


@pytest.mark.parametrize("name", ADAPTERS)
def test_adapter_generate_then_run_equals_direct_call(name):
    function = registry.get(name)
    assert function.family == "fully_connected"
    for seed in range(6):
        arrays, params = function.generate(np.random.default_rng([17, seed]))
        params = dict(params, function=name)
        assert set(function.arrays) <= set(arrays)
        assert set(function.params) <= set(params)
        assert params["macs"] <= 50_000
        np.testing.assert_array_equal(function.run(arrays, params), _direct(name, arrays, params))


def test_adapter_fc_output_dtype_and_vector_sum_output_int32():
    for name, dtype in ((fc.FC_S8, np.int8), (fc.VECTOR_SUM_S8, np.int32)):
        function = registry.get(name)
        arrays, params = function.generate(np.random.default_rng(3))
        assert function.run(arrays, dict(params, function=name)).dtype == dtype


def test_adapter_reports_missing_key_and_wrong_dtype():
    function = registry.get(fc.FC_S8)
    arrays, params = function.generate(np.random.default_rng(1))
    params = dict(params, function=fc.FC_S8)
    with pytest.raises(VectorError, match="multiplier"):
        function.run(arrays, {k: v for k, v in params.items() if k != "multiplier"})
    with pytest.raises(VectorError, match="bias"):
        function.run(dict(arrays, bias=arrays["bias"].astype(np.int64)), params)
    with pytest.raises(VectorError, match="dims"):
        function.run(arrays, dict(params, **{"output_dims.n": params["output_dims.n"] + 1}))

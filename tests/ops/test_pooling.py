"""kernels_py.pooling: reference == fast path, hand-worked integers, validation, adapters."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from kernels_py import pooling
from kernels_py.errors import KernelArgumentError
from kernels_py.types import Activation, PoolParams, Tile
from refsim.conformance import registry
from refsim.errors import VectorError
from refsim.testing.strategies import activations, int8_arrays

PAIRS = {
    "avg": (pooling.avgpool_s8_reference, pooling.avgpool_s8),
    "max": (pooling.max_pool_s8_reference, pooling.max_pool_s8),
}
ALL_KERNELS = [k for pair in PAIRS.values() for k in pair]


@st.composite
def pool_cases(draw, max_window=4):
    """(input, pool_params, filter_hw, None) with every window overlapping the input."""
    k_h, k_w = draw(st.integers(1, max_window)), draw(st.integers(1, max_window))
    s_h, s_w = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    p_h, p_w = draw(st.integers(0, k_h - 1)), draw(st.integers(0, k_w - 1))
    # in >= k - 2 * pad keeps the output non-empty; in > pad keeps the last window on the input.
    in_h = draw(st.integers(max(1, k_h - 2 * p_h, p_h + 1), 7))
    in_w = draw(st.integers(max(1, k_w - 2 * p_w, p_w + 1), 7))
    shape = (draw(st.integers(1, 2)), in_h, in_w, draw(st.integers(1, 5)))
    params = PoolParams(stride=Tile(s_w, s_h), padding=Tile(p_w, p_h), activation=draw(activations()))
    return draw(int8_arrays(shape)), params, (k_h, k_w), None


def _accepted(kernel, case) -> bool:
    try:
        kernel(*case)
    except KernelArgumentError:
        return False
    return True


# --- reference == fast path ---------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(PAIRS))
@given(case=pool_cases())
def test_reference_equals_fast_path(kind, case):
    reference, fast = PAIRS[kind]
    if _accepted(reference, case):
        np.testing.assert_array_equal(reference(*case), fast(*case))
    else:
        with pytest.raises(KernelArgumentError):
            fast(*case)


@pytest.mark.parametrize("kind", sorted(PAIRS))
@given(case=pool_cases())
def test_batches_are_independent(kind, case):
    _, fast = PAIRS[kind]
    assume(_accepted(fast, case))
    input, *rest = case
    whole = fast(input, *rest)
    for b in range(input.shape[0]):
        np.testing.assert_array_equal(whole[b : b + 1], fast(input[b : b + 1], *rest))


@pytest.mark.parametrize("kind", sorted(PAIRS))
def test_kws_global_pool_reference_equals_fast_path(kind):
    # The KWS model's average pool: a 25x5 window over the whole 25x5x64 map.
    x = np.random.default_rng(11).integers(-128, 128, (1, 25, 5, 64), dtype=np.int8)
    reference, fast = PAIRS[kind]
    np.testing.assert_array_equal(reference(x, PoolParams(), (25, 5)), fast(x, PoolParams(), (25, 5)))


# --- hand-worked integers -----------------------------------------------------------------


@pytest.mark.parametrize("avgpool", [pooling.avgpool_s8_reference, pooling.avgpool_s8])
@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ((1, 2), 2),  # 3/2 = 1.5: ties away from zero -> 2
        ((-1, -2), -2),  # -1.5 -> -2 (C: (-3 - 1) / 2 truncates to -2)
        ((1, -2), -1),  # -0.5 -> -1
        ((2, -1), 1),  # 0.5 -> 1
        ((2, 3), 3),  # 2.5 -> 3; round-half-to-even (torch.round, nearbyint) would give 2
        ((1, 1, 2), 1),  # 4/3 = 1.33 -> 1: (4 + 1) / 3 truncates to 1
        ((1, 2, 2), 2),  # 5/3 = 1.67 -> 2
        ((-1, -2, -2), -2),  # -5/3 -> (-5 - 1) / 3 = -2
        ((-128, -128, -127), -128),  # -383/3 = -127.67 -> -128
        ((0, 0), 0),
    ],
)
def test_hand_worked_average_rounding(avgpool, values, expected):
    x = np.array(values, np.int8).reshape(1, 1, len(values), 1)
    assert avgpool(x, PoolParams(), (1, len(values))).item() == expected


@pytest.mark.parametrize("avgpool", [pooling.avgpool_s8_reference, pooling.avgpool_s8])
def test_hand_worked_average_excludes_padding(avgpool):
    # 3x3 input of 9s, 3x3 window, pad 1: every output averages only in-image taps, so all are 9.
    # PyTorch's avg_pool2d with count_include_pad=True would divide by 9 at the corners: 36/9 = 4.
    x = np.full((1, 3, 3, 1), 9, np.int8)
    out = avgpool(x, PoolParams(padding=Tile(1, 1)), (3, 3))
    np.testing.assert_array_equal(out, np.full((1, 3, 3, 1), 9, np.int8))


@pytest.mark.parametrize("avgpool", [pooling.avgpool_s8_reference, pooling.avgpool_s8])
def test_hand_worked_average_stride_and_clamp(avgpool):
    # Row [10, 20, 31, 40] with 2-wide windows, stride 2: (10+20)/2 = 15, (31+40)/2 = 35.5 -> 36,
    # then clamped to the activation range [0, 30].
    x = np.array([10, 20, 31, 40], np.int8).reshape(1, 1, 4, 1)
    params = PoolParams(stride=Tile(2, 1), activation=Activation(0, 30))
    np.testing.assert_array_equal(avgpool(x, params, (1, 2)).ravel(), [15, 30])


@pytest.mark.parametrize("max_pool", [pooling.max_pool_s8_reference, pooling.max_pool_s8])
def test_hand_worked_max_ignores_padding(max_pool):
    # All values negative with pad 1: padding is not a zero tap, so the corner max is -50, not 0.
    x = np.array([[-100, -50], [-70, -60]], np.int8).reshape(1, 2, 2, 1)
    out = max_pool(x, PoolParams(padding=Tile(1, 1)), (2, 2))
    # Output 3x3; windows start at -1, 0, 1 per axis and see rows/cols {0}, {0, 1}, {1}:
    # e.g. (0, 0) sees x[0, 0] only; (1, 1) all four; (2, 1) row 1 = max(-70, -60).
    np.testing.assert_array_equal(out[0, :, :, 0], [[-100, -50, -50], [-70, -50, -50], [-70, -60, -60]])


@pytest.mark.parametrize("max_pool", [pooling.max_pool_s8_reference, pooling.max_pool_s8])
def test_hand_worked_max_per_channel_and_clamp(max_pool):
    # Two channels pooled independently over a 1x3 row, then clamped to [-10, 100].
    x = np.array([[5, -128], [127, -20], [-3, -30]], np.int8).reshape(1, 1, 3, 2)
    out = max_pool(x, PoolParams(activation=Activation(-10, 100)), (1, 3))
    np.testing.assert_array_equal(out.ravel(), [100, -10])


# --- validation ---------------------------------------------------------------------------

X = np.zeros((1, 4, 4, 2), np.int8)
BAD = {
    "input not int8": (X.astype(np.int16), PoolParams(), (2, 2), None),
    "input 3-D": (X[0], PoolParams(), (2, 2), None),
    "window 0": (X, PoolParams(), (0, 2), None),
    "window not a pair": (X, PoolParams(), (2,), None),
    "stride 0": (X, PoolParams(stride=Tile(1, 0)), (2, 2), None),
    "negative padding": (X, PoolParams(padding=Tile(-1, 0)), (2, 2), None),
    "activation min > max": (X, PoolParams(activation=Activation(1, 0)), (2, 2), None),
    "activation beyond int8": (X, PoolParams(activation=Activation(-129, 0)), (2, 2), None),
    "window larger than input": (X, PoolParams(), (5, 2), None),
    "output_hw not positive": (X, PoolParams(), (2, 2), (0, 3)),
    # pad 2 >= window 2: the first window lies wholly in the padding (count 0).
    "window wholly in padding": (X, PoolParams(padding=Tile(2, 0)), (2, 2), None),
    # 4 output rows from a 4-row input with window 1, stride 2: the last window starts at row 6.
    "window past the input": (X, PoolParams(stride=Tile(1, 2)), (1, 1), (4, 4)),
}


@pytest.mark.parametrize("reason", sorted(BAD))
@pytest.mark.parametrize("kernel", ALL_KERNELS)
def test_bad_arguments_raise(kernel, reason):
    with pytest.raises(KernelArgumentError) as err:
        kernel(*BAD[reason])
    assert err.value.function in ("arm_avgpool_s8", "arm_max_pool_s8")


def test_avgpool_buffer_size():
    # Only the DSP build keeps an int32 running sum per channel.
    assert [pooling.avgpool_s8_get_buffer_size(5, 17, isa) for isa in pooling.ISAS] == [0, 68, 0]
    with pytest.raises(KernelArgumentError, match="isa"):
        pooling.avgpool_s8_get_buffer_size(5, 17, "helium")


# --- conformance adapters -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kernel"), [("arm_avgpool_s8", pooling.avgpool_s8), ("arm_max_pool_s8", pooling.max_pool_s8)]
)
def test_adapter_generate_run_equals_kernel(name, kernel):
    function = registry.get(name)
    assert function.family == "pooling"
    rng = np.random.default_rng(99)
    for _ in range(12):
        arrays, params = function.generate(rng)
        assert params["function"] == name
        assert set(function.params) <= set(params) and set(function.arrays) == set(arrays)
        assert params["macs"] <= 50_000
        out = function.run(arrays, params)
        pool_params = PoolParams(
            stride=Tile(params["stride.w"], params["stride.h"]),
            padding=Tile(params["padding.w"], params["padding.h"]),
            activation=Activation(params["activation.min"], params["activation.max"]),
        )
        expected = kernel(
            arrays["input"],
            pool_params,
            (params["filter_dims.h"], params["filter_dims.w"]),
            (params["output_dims.h"], params["output_dims.w"]),
        )
        np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("name", ["arm_avgpool_s8", "arm_max_pool_s8"])
def test_pool_adapters_pool_every_image_of_a_batch(name: str):
    """CMSIS-NN (since v6.0.0) loops both functions over input_dims.n: a batch of two images is
    each image pooled on its own, stacked."""
    function = registry.get(name)
    arrays, params = function.generate(np.random.default_rng(5))
    params = {**params, "input_dims.n": 1, "output_dims.n": 1}
    first = {"input": arrays["input"][:1]}
    second = {"input": np.ascontiguousarray(arrays["input"][:1][..., ::-1])}
    both = {"input": np.concatenate([first["input"], second["input"]])}
    out = function.run(both, {**params, "input_dims.n": 2, "output_dims.n": 2})
    np.testing.assert_array_equal(
        out, np.concatenate([function.run(first, params), function.run(second, params)])
    )


def test_avgpool_adapter_rejects_missing_keys():
    function = registry.get("arm_avgpool_s8")
    arrays, params = function.generate(np.random.default_rng(5))
    with pytest.raises(VectorError, match=r"filter_dims\.h"):
        function.run(arrays, {k: v for k, v in params.items() if k != "filter_dims.h"})
    with pytest.raises(VectorError, match="input"):
        function.run({"input": arrays["input"].astype(np.uint8)}, params)

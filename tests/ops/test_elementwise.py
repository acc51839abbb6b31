"""kernels_py.elementwise: reference == fast path with broadcasting, hand-worked rounding,
subtraction, argument checks, CMSIS-NN's min/max broadcast walk and the adapters."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernels_py import elementwise as ew
from kernels_py.errors import KernelArgumentError
from kernels_py.fixedpoint import elementwise_add_params
from kernels_py.types import INT32_MAX, INT32_MIN
from refsim.conformance import registry
from refsim.errors import VectorError
from refsim.testing.strategies import (
    activations,
    input_offsets,
    int8_arrays,
    multipliers,
    output_offsets,
    shifts,
)

# --- strategies ----------------------------------------------------------------------------


@st.composite
def broadcast_pairs(draw, max_dim: int = 3):
    """Two int8 arrays of 1..4 dims whose shapes broadcast (each extent equal or 1)."""
    ndim = draw(st.integers(1, 4))
    full = [draw(st.integers(1, max_dim)) for _ in range(ndim)]
    shape_1 = [d if draw(st.booleans()) else 1 for d in full]
    shape_2 = [d if draw(st.booleans()) else 1 for d in full]
    # Either side may also have fewer leading dims (numpy right-aligns shapes).
    shape_1 = shape_1[draw(st.integers(0, ndim - 1)) :]
    shape_2 = shape_2[draw(st.integers(0, ndim - 1)) :]
    return draw(int8_arrays(tuple(shape_1))), draw(int8_arrays(tuple(shape_2)))


@st.composite
def add_kwargs(draw):
    act = draw(activations())
    negate = draw(st.booleans())  # subtraction is the same call with input_2_mult negated
    return {
        "input_1_offset": draw(input_offsets),
        "input_1_mult": draw(multipliers),
        "input_1_shift": draw(shifts),
        "input_2_offset": draw(input_offsets),
        "input_2_mult": -draw(multipliers) if negate else draw(multipliers),
        "input_2_shift": draw(shifts),
        "left_shift": draw(st.one_of(st.just(20), st.integers(0, ew.MAX_LEFT_SHIFT))),
        "out_offset": draw(output_offsets),
        "out_mult": draw(multipliers),
        "out_shift": draw(shifts),
        "out_activation_min": act.min,
        "out_activation_max": act.max,
    }


@st.composite
def mul_kwargs(draw):
    act = draw(activations())
    return {
        "input_1_offset": draw(input_offsets),
        "input_2_offset": draw(input_offsets),
        "out_offset": draw(output_offsets),
        "out_mult": draw(multipliers),
        "out_shift": draw(shifts),
        "out_activation_min": act.min,
        "out_activation_max": act.max,
    }


# --- reference == fast path --------------------------------------------------------------


@given(pair=broadcast_pairs(), kwargs=add_kwargs())
def test_add_reference_matches_fast_path(pair, kwargs):
    a, b = pair
    fast = ew.elementwise_add_s8(a, b, **kwargs)
    np.testing.assert_array_equal(fast, ew.elementwise_add_s8_reference(a, b, **kwargs))
    assert fast.shape == np.broadcast_shapes(a.shape, b.shape)


@settings(max_examples=40)
@given(kwargs=add_kwargs(), seed=st.integers(0, 2**32 - 1), broadcast=st.booleans())
def test_add_table_path_equals_the_reference(kwargs, seed, broadcast):
    """From `ADD_TABLE_MIN_ELEMENTS` an add reads its table: every one of the 65,536 input pairs, in
    a shuffled order (so a wrong index cannot pass), against the reference loop; and a broadcast."""
    rng = np.random.default_rng(seed)
    values = np.arange(-128, 128, dtype=np.int8)
    order = rng.permutation(256 * 256)
    a, b = np.repeat(values, 256)[order], np.tile(values, 256)[order]
    if broadcast:
        a, b = a.reshape(256, 16, 16)[:, :, :1], b.reshape(256, 16, 16)  # a [256, 16, 1] against b
    assert np.broadcast_shapes(a.shape, b.shape) == (256, 16, 16) or not broadcast
    got = ew.elementwise_add_s8(a, b, **kwargs)
    np.testing.assert_array_equal(got, ew.elementwise_add_s8_reference(a, b, **kwargs))


@given(pair=broadcast_pairs(), kwargs=mul_kwargs())
def test_mul_reference_matches_fast_path(pair, kwargs):
    a, b = pair
    np.testing.assert_array_equal(
        ew.elementwise_mul_s8(a, b, **kwargs), ew.elementwise_mul_s8_reference(a, b, **kwargs)
    )


@given(pair=broadcast_pairs())
def test_maximum_and_minimum_match_reference_and_numpy(pair):
    a, b = pair
    for fast, ref, oracle in (
        (ew.maximum_s8, ew.maximum_s8_reference, np.maximum),
        (ew.minimum_s8, ew.minimum_s8_reference, np.minimum),
    ):
        out = fast(a, b)
        np.testing.assert_array_equal(out, ref(a, b))
        np.testing.assert_array_equal(out, oracle(a, b))


@settings(max_examples=30)
@given(pair=broadcast_pairs(), kwargs=add_kwargs())
def test_add_is_symmetric_under_operand_swap(pair, kwargs):
    # ExecuTorch swaps operands (and their params) so the larger tensor comes first; the
    # int32 sum commutes, so the result cannot change.
    a, b = pair
    swapped = dict(kwargs)
    for p in ("offset", "mult", "shift"):
        swapped[f"input_1_{p}"], swapped[f"input_2_{p}"] = kwargs[f"input_2_{p}"], kwargs[f"input_1_{p}"]
    np.testing.assert_array_equal(
        ew.elementwise_add_s8(a, b, **kwargs), ew.elementwise_add_s8(b, a, **swapped)
    )


@settings(max_examples=30)
@given(data=st.data(), kwargs=mul_kwargs())
def test_channel_broadcast_equals_per_channel_block_calls(data, kwargs):
    # ExecuTorch's quantized_mul/add call the block function once per channel vector:
    # input_1 [N, H, W, C] in blocks of C against the same input_2 [C].
    shape = data.draw(st.tuples(*(st.integers(1, 3) for _ in range(3)), st.integers(1, 7)))
    a = data.draw(int8_arrays(shape))
    c = data.draw(int8_arrays((shape[-1],)))
    blocks = [ew.elementwise_mul_s8(row, c, **kwargs) for row in a.reshape(-1, shape[-1])]
    np.testing.assert_array_equal(ew.elementwise_mul_s8(a, c, **kwargs), np.stack(blocks).reshape(shape))


# --- hand-worked cases -----------------------------------------------------------------------

# TFLM's preparation for equal scales 1, 1 -> out 1: twice_max = 2, each input 0.5 = (2^30, 0),
# output 2 / 2^20 = 2^-19 = (2^30, -18).
UNIT = {"left_shift": 20, **elementwise_add_params(1.0, 1.0, 1.0)}
ZERO_OFFSETS = {"input_1_offset": 0, "input_2_offset": 0, "out_offset": 0}
FULL = {"out_activation_min": -128, "out_activation_max": 127}


def test_hand_worked_add():
    # a = (10 << 20) * 0.5 = 5 * 2^20, b = (-5 << 20) * 0.5 = -2.5 * 2^20 (both exact);
    # sum 2.5 * 2^20; * 0.5 = 1.25 * 2^20; / 2^18 = 5 exactly.
    p = {k: v for k, v in UNIT.items()} | ZERO_OFFSETS | FULL
    assert (p["input_1_mult"], p["input_1_shift"], p["out_mult"], p["out_shift"]) == (
        1 << 30,
        0,
        1 << 30,
        -18,
    )
    out = ew.elementwise_add_s8(np.array([10], np.int8), np.array([-5], np.int8), **p)
    np.testing.assert_array_equal(out, [5])


def test_add_rounds_ties_away_from_zero():
    # Output scale 2: out_mult = 2 / (2^20 * 2) = 2^-20 -> (2^30, -19). x1 = +-1, x2 = 0:
    # sum = +-2^19, * 0.5 = +-2^18, / 2^19 = +-0.5 -> +-1 (rounding divide, ties away from 0).
    p = {"left_shift": 20, **elementwise_add_params(1.0, 1.0, 2.0)} | ZERO_OFFSETS | FULL
    assert (p["out_mult"], p["out_shift"]) == (1 << 30, -19)
    out = ew.elementwise_add_s8(np.array([1, -1], np.int8), np.array([0, 0], np.int8), **p)
    np.testing.assert_array_equal(out, [1, -1])


def test_subtraction_by_negated_multiplier():
    # 10 - 4: a = 5 * 2^20, b = (4 << 20) * -0.5 = -2 * 2^20; sum 3 * 2^20 -> 6. With offsets
    # x1 = 9 + 1 and x2 = 6 - 2 give the same 10 - 4, then + out_offset -3 -> 3.
    p = dict(UNIT, input_2_mult=-UNIT["input_2_mult"]) | FULL
    out = ew.elementwise_add_s8(np.array([10], np.int8), np.array([4], np.int8), **p, **ZERO_OFFSETS)
    np.testing.assert_array_equal(out, [6])
    offsets = {"input_1_offset": 1, "input_2_offset": -2, "out_offset": -3}
    out = ew.elementwise_add_s8(np.array([9], np.int8), np.array([6], np.int8), **p, **offsets)
    np.testing.assert_array_equal(out, [3])


def test_hand_worked_mul():
    # (3 + 1) * (-4 - 2) = -24, * 0.5 = -12, + 5 = -7. (-2 - 1) * (1 + 0) = -3, * 0.5 = -1.5:
    # the doubling high multiply rounds half up -> -1, + 5 = 4.
    p = {
        "input_1_offset": 1,
        "input_2_offset": -2,
        "out_offset": 5,
        "out_mult": 1 << 30,
        "out_shift": 0,
    } | FULL
    out = ew.elementwise_mul_s8(np.array([3], np.int8), np.array([-4], np.int8), **p)
    np.testing.assert_array_equal(out, [-7])
    p = dict(p, input_1_offset=-1, input_2_offset=0)
    out = ew.elementwise_mul_s8(np.array([-2], np.int8), np.array([1], np.int8), **p)
    np.testing.assert_array_equal(out, [4])


def test_activation_clamps_add_and_mul():
    p = {"input_1_offset": 0, "input_2_offset": 0, "out_offset": 0, "out_mult": 1 << 30, "out_shift": 1}
    out = ew.elementwise_mul_s8(
        np.array([12, -12, 3], np.int8),
        np.array([12, 12, 1], np.int8),
        **p,
        out_activation_min=-6,
        out_activation_max=6,
    )
    np.testing.assert_array_equal(out, [6, -6, 3])


def test_maximum_broadcasts_a_channel_vector():
    a = np.arange(-6, 6, dtype=np.int8).reshape(1, 2, 2, 3)
    c = np.array([0, -100, 100], np.int8)
    expected = [[[[0, -5, 100], [0, -2, 100]], [[0, 1, 100], [3, 4, 100]]]]
    np.testing.assert_array_equal(ew.maximum_s8(a, c), expected)
    np.testing.assert_array_equal(ew.minimum_s8(c, a), np.minimum(a, c))


# --- CMSIS-NN's arm_maximum_s8 broadcast walk ------------------------------------------------


def _cmsis_max_walk(a: np.ndarray, b: np.ndarray):
    """Transliteration of arm_maximum_s8's pointer walk (V.1.0.0, 8 Oct 2024), on flat
    buffers; None when it reads outside an input."""
    (n1, h1, w1, c1), (n2, h2, w2, c2) = a.shape, b.shape
    on, oh, ow = max(n1, n2), max(h1, h2), max(w1, w2)
    A, B, out = a.ravel(), b.ravel(), []

    def read(buf: np.ndarray, i: int) -> int:
        if not 0 <= i < buf.size:  # numpy would wrap a negative index silently
            raise IndexError(i)
        return int(buf[i])

    def run(p1, p2, size, scalar):  # scalar: 0 none, 1 input_1 is the scalar, 2 input_2 is
        for k in range(size):
            out.append(max(read(A, p1 if scalar == 1 else p1 + k), read(B, p2 if scalar == 2 else p2 + k)))

    try:
        if a.shape == b.shape:
            run(0, 0, a.size, 0)
        elif a.size == 1:
            run(0, 0, b.size, 1)
        elif b.size == 1:
            run(0, 0, a.size, 2)
        else:
            wd1, wd2 = (0 if w1 >= w2 else c1), (0 if w2 >= w1 else c2)
            hd1 = wd1 if h1 >= h2 else -w1 * (c1 - wd1)
            hd2 = wd2 if h2 >= h1 else -w2 * (c2 - wd2)
            bd1, bd2 = (c1 * w1 * h1 if n1 >= n2 else 0), (c2 * w2 * h2 if n2 >= n1 else 0)
            for n in range(on):
                p1, p2 = n * bd1, n * bd2
                f1, f2 = h1 * w1 * c1, h2 * w2 * c2
                if (h1, w1, c1) == (h2, w2, c2):
                    run(p1, p2, f1, 0)
                elif f1 == 1:
                    run(p1, p2, f2, 1)
                elif f2 == 1:
                    run(p1, p2, f1, 2)
                else:
                    f1, f2 = w1 * c1, w2 * c2
                    for _ in range(oh):
                        if (w1, c1) == (w2, c2):
                            run(p1, p2, f1, 0)
                            p1, p2 = p1 + f1, p2 + f1
                        elif f1 == 1:
                            run(p1, p2, f2, 1)
                            p1, p2 = p1 + 1, p2 + f2
                        elif f2 == 1:
                            run(p1, p2, f1, 2)
                            p1, p2 = p1 + f1, p2 + 1
                        else:
                            for _ in range(ow):
                                if c1 == c2:
                                    run(p1, p2, c1, 0)
                                    p1, p2 = p1 + c1, p2 + c1
                                elif c1 == 1:
                                    run(p1, p2, c2, 1)
                                    p1, p2 = p1 + 1, p2 + c2
                                else:
                                    run(p1, p2, c1, 2)
                                    p1, p2 = p1 + c1, p2 + 1
                                p1, p2 = p1 - wd1, p2 - wd2
                        p1, p2 = p1 + hd1, p2 + hd2
    except IndexError:
        return None
    return np.array(out, np.int8)


def test_cmsis_minmax_walk_differs_from_numpy_exactly_where_predicted():
    # Every pair of NHWC shapes over extents {1, 2} broadcasts; cmsis_minmax_broadcast_is_exact
    # must name precisely the pairs where CMSIS-NN's walk disagrees with numpy (and so with
    # maximum_s8, which the conformance generator therefore never feeds those shapes).
    rng = np.random.default_rng(0)
    shapes = list(itertools.product((1, 2), repeat=4))
    mismatches = 0
    for s1, s2 in itertools.product(shapes, shapes):
        a = rng.integers(-128, 128, s1).astype(np.int8)
        b = rng.integers(-128, 128, s2).astype(np.int8)
        walked = _cmsis_max_walk(a, b)
        agrees = walked is not None and np.array_equal(walked, ew.maximum_s8(a, b).ravel())
        assert agrees == ew.cmsis_minmax_broadcast_is_exact(s1, s2), (s1, s2)
        mismatches += not agrees
    assert mismatches > 0  # e.g. (1, 2, 1, 1) against (1, 1, 2, 1)


# --- argument checks ---------------------------------------------------------------------------

A1 = np.zeros((2, 3), np.int8)
ADD_OK = {"left_shift": 20, **elementwise_add_params(0.5, 0.25, 1.0)} | ZERO_OFFSETS | FULL
MUL_OK = {
    "input_1_offset": 0,
    "input_2_offset": 0,
    "out_offset": 0,
    "out_mult": 1 << 30,
    "out_shift": 0,
} | FULL


@pytest.mark.parametrize(
    ("b", "changes", "argument"),
    [
        (A1.astype(np.int32), {}, "input_2"),
        (np.zeros((4,), np.int8), {}, "input_2"),
        (np.zeros((1, 1, 1, 1, 3), np.int8), {}, "input_2"),
        (np.int8(3), {}, "input_2"),
        (A1, {"input_1_offset": 129}, "input_1_offset"),
        (A1, {"input_2_offset": -128}, "input_2_offset"),
        (A1, {"out_offset": 128}, "out_offset"),
        (A1, {"left_shift": ew.MAX_LEFT_SHIFT + 1}, "left_shift"),
        (A1, {"left_shift": -1}, "left_shift"),
        (A1, {"input_1_mult": INT32_MIN}, "input_1_mult"),
        (A1, {"out_mult": INT32_MAX + 1}, "out_mult"),
        (A1, {"input_2_shift": 31}, "input_2_shift"),
        (A1, {"out_shift": -32}, "out_shift"),
        (A1, {"out_activation_min": 10, "out_activation_max": 9}, "out_activation_min/out_activation_max"),
        (A1, {"out_activation_max": 128}, "out_activation_min/out_activation_max"),
    ],
)
@pytest.mark.parametrize("kernel", [ew.elementwise_add_s8, ew.elementwise_add_s8_reference])
def test_add_rejects(kernel, b, changes, argument):
    with pytest.raises(KernelArgumentError) as err:
        kernel(A1, b, **(ADD_OK | changes))
    assert (err.value.function, err.value.argument) == (ew.ADD_S8, argument)


@pytest.mark.parametrize(
    ("b", "changes", "argument"),
    [
        (np.zeros((3, 3), np.int8), {}, "input_2"),
        (A1, {"input_2_offset": 200}, "input_2_offset"),
        (A1, {"out_mult": INT32_MIN}, "out_mult"),
        (A1, {"out_shift": 31}, "out_shift"),
    ],
)
@pytest.mark.parametrize("kernel", [ew.elementwise_mul_s8, ew.elementwise_mul_s8_reference])
def test_mul_rejects(kernel, b, changes, argument):
    with pytest.raises(KernelArgumentError) as err:
        kernel(A1, b, **(MUL_OK | changes))
    assert (err.value.function, err.value.argument) == (ew.MUL_S8, argument)


@pytest.mark.parametrize(
    "kernel", [ew.maximum_s8, ew.maximum_s8_reference, ew.minimum_s8, ew.minimum_s8_reference]
)
def test_minmax_rejects(kernel):
    with pytest.raises(KernelArgumentError, match="input_2"):
        kernel(A1, np.zeros((2, 2), np.int8))
    with pytest.raises(KernelArgumentError, match="input_1"):
        kernel(A1.astype(np.uint8), A1)


# --- conformance adapters ----------------------------------------------------------------------


def _direct(name: str, arrays, params):
    a, b = arrays["input_1"], arrays["input_2"]
    if name == ew.ADD_S8:
        keys = registry.get(name).params
        return ew.elementwise_add_s8_reference(a, b, **{k: params[k] for k in keys if k != "block_size"})
    if name == ew.MUL_S8:
        keys = registry.get(name).params
        return ew.elementwise_mul_s8_reference(a, b, **{k: params[k] for k in keys if k != "block_size"})
    oracle = np.maximum if name == ew.MAXIMUM_S8 else np.minimum
    return oracle(a, b)


@pytest.mark.parametrize("name", [ew.ADD_S8, ew.MUL_S8, ew.MAXIMUM_S8, ew.MINIMUM_S8])
def test_adapter_generate_then_run_equals_direct_call(name):
    function = registry.get(name)
    assert function.family == "elementwise"
    for seed in range(8):
        arrays, params = function.generate(np.random.default_rng([23, seed]))
        params = dict(params, function=name)
        assert set(function.arrays) <= set(arrays)
        assert set(function.params) <= set(params)
        if name in (ew.MAXIMUM_S8, ew.MINIMUM_S8):
            assert ew.cmsis_minmax_broadcast_is_exact(arrays["input_1"].shape, arrays["input_2"].shape)
        np.testing.assert_array_equal(function.run(arrays, params), _direct(name, arrays, params))


def test_adapter_reports_malformed_cases():
    function = registry.get(ew.ADD_S8)
    arrays, params = function.generate(np.random.default_rng(2))
    params = dict(params, function=ew.ADD_S8)
    with pytest.raises(VectorError, match="left_shift"):
        function.run(arrays, {k: v for k, v in params.items() if k != "left_shift"})
    with pytest.raises(VectorError, match="block_size"):
        function.run(arrays, dict(params, block_size=params["block_size"] + 1))
    with pytest.raises(VectorError, match="input_2"):
        function.run(dict(arrays, input_2=arrays["input_2"].astype(np.int16)), params)
    maximum = registry.get(ew.MAXIMUM_S8)
    arrays, params = maximum.generate(np.random.default_rng(2))
    with pytest.raises(VectorError, match="output_dims"):
        maximum.run(
            arrays, dict(params, function=ew.MAXIMUM_S8, **{"output_dims.c": params["output_dims.c"] + 1})
        )

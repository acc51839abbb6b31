"""kernels_py.depthwise: reference == fast path, hand-worked integers, validation, routing, adapters."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kernels_py import depthwise as dw
from kernels_py.errors import KernelArgumentError
from kernels_py.types import Activation, Dims, DwConvParams, PerChannelQuantParams, Tile
from refsim.conformance import registry
from refsim.errors import VectorError
from refsim.testing.strategies import (
    activations,
    input_offsets,
    int8_arrays,
    int32_arrays,
    output_offsets,
    per_channel,
)

KERNELS = {
    "arm_depthwise_conv_s8": dw.depthwise_conv_s8,
    "arm_depthwise_conv_wrapper_s8": dw.depthwise_conv_wrapper_s8,
    "arm_depthwise_conv_3x3_s8": dw.depthwise_conv_3x3_s8,
    "arm_depthwise_conv_s8_opt": dw.depthwise_conv_s8_opt,
}
#: requantize(v, 2^30, 1) == v: a real scale of exactly 1.0, so hand-worked sums pass through.
IDENTITY = (1 << 30, 1)


def _identity(channels: int) -> PerChannelQuantParams:
    return PerChannelQuantParams.per_tensor(*IDENTITY, channels)


# --- strategies ---------------------------------------------------------------------------


@st.composite
def dw_cases(draw, *, ch_mult_1=False, kernel=None, dilation=True, batch=True):
    """(input, filter, bias, dw_conv_params, quant_params, output_hw), small enough for the reference."""
    n = draw(st.integers(1, 2)) if batch else 1
    in_c = draw(st.integers(1, 5))
    ch_mult = 1 if ch_mult_1 else draw(st.integers(1, 4))
    k_h, k_w = kernel or (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    d_h, d_w = (draw(st.integers(1, 3)), draw(st.integers(1, 3))) if dilation else (1, 1)
    s_h, s_w = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    p_h = draw(st.integers(0, d_h * (k_h - 1)))
    p_w = draw(st.integers(0, d_w * (k_w - 1)))
    min_h, min_w = max(1, d_h * (k_h - 1) + 1 - 2 * p_h), max(1, d_w * (k_w - 1) + 1 - 2 * p_w)
    in_h, in_w = draw(st.integers(min_h, max(min_h, 6))), draw(st.integers(min_w, max(min_w, 6)))
    out_c = in_c * ch_mult
    params = DwConvParams(
        input_offset=draw(input_offsets),
        output_offset=draw(output_offsets),
        ch_mult=ch_mult,
        stride=Tile(s_w, s_h),
        padding=Tile(p_w, p_h),
        dilation=Tile(d_w, d_h),
        activation=draw(activations()),
    )
    # Bias over the full int32 range exercises the wrap-around of the accumulator.
    bias = draw(st.one_of(st.none(), int32_arrays((out_c,)), int32_arrays((out_c,), -(2**31), 2**31 - 1)))
    multiplier, shift = draw(per_channel(out_c))
    return (
        draw(int8_arrays((n, in_h, in_w, in_c))),
        draw(int8_arrays((1, k_h, k_w, out_c))),
        bias,
        params,
        PerChannelQuantParams(multiplier, shift),
        None,
    )


def _accepted(kernel, case) -> bool:
    try:
        kernel(*case)
    except KernelArgumentError:
        return False
    return True


# --- reference == fast path ---------------------------------------------------------------


@given(dw_cases())
def test_reference_equals_fast_path(case):
    np.testing.assert_array_equal(dw.depthwise_conv_s8_reference(*case), dw.depthwise_conv_s8(*case))


@given(
    st.one_of(dw_cases(ch_mult_1=True), dw_cases(ch_mult_1=True, kernel=(3, 3))),
    st.integers(1, 12),
    st.booleans(),
)
def test_row_kernel_equals_the_reference(case, wide, extreme):
    """The whole-row kernel the runtime prepares for ch_mult 1 (refsim.ops, where
    `rows_kernel_pays`), on every other drawn parameter (horizontal strides and dilations
    included; 3x3 filters, its one-pass branch, drawn half the time), wider rows, and the
    largest products."""
    x, w, bias, p, quant, _ = case
    x = np.concatenate([x] * wide, axis=2)  # wider rows: out_w up to ~75
    if extreme:
        x[...] = 127 if p.input_offset > 0 else -128
        w[...] = -128
    expected = dw.depthwise_conv_s8_reference(x, w, bias, p, quant, None)
    out_h, out_w = expected.shape[1:3]
    taps, table = dw.depthwise_row_operands(w, bias, quant.multiplier, quant.shift, out_w)
    into = np.full(expected.shape, 99, np.int8)  # as a prepared call passes the arena's view
    got = dw._depthwise_rows_kernel(
        x, taps, table, p.input_offset, p.output_offset, p.stride.h, p.stride.w, p.padding.h,
        p.padding.w, p.dilation.h, p.dilation.w, p.activation.min, p.activation.max, out_h, out_w, into,
    )  # fmt: skip
    assert got is into
    np.testing.assert_array_equal(got, expected)


@given(dw_cases(ch_mult_1=True, dilation=False, batch=False))
def test_ch_mult_1_kernels_equal_the_generic_kernel(case):
    expected = dw.depthwise_conv_s8_reference(*case)
    np.testing.assert_array_equal(dw.depthwise_conv_wrapper_s8(*case), expected)
    np.testing.assert_array_equal(dw.depthwise_conv_s8_opt(*case), expected)


@given(dw_cases(ch_mult_1=True, kernel=(3, 3), dilation=False, batch=False))
def test_3x3_kernel_equals_the_reference_where_accepted(case):
    assume(_accepted(dw.depthwise_conv_3x3_s8, case))  # padding.w <= 1 and the middle column inside
    np.testing.assert_array_equal(dw.depthwise_conv_3x3_s8(*case), dw.depthwise_conv_s8_reference(*case))


@given(dw_cases())
def test_padding_contributes_nothing(case):
    # Padding with -input_offset makes (x + input_offset) zero there: same integers with no padding.
    input, filter, bias, p, quant, _ = case
    fill = -p.input_offset
    padded = np.pad(input, ((0, 0), (p.padding.h,) * 2, (p.padding.w,) * 2, (0, 0)), constant_values=fill)
    unpadded = DwConvParams(
        p.input_offset, p.output_offset, p.ch_mult, p.stride, Tile(0, 0), p.dilation, p.activation
    )
    expected = dw.depthwise_conv_s8(input, filter, bias, p, quant)
    got = dw.depthwise_conv_s8(padded, filter, bias, unpadded, quant, expected.shape[1:3])
    np.testing.assert_array_equal(got, expected)


@given(dw_cases())
def test_batches_are_independent(case):
    input, *rest = case
    whole = dw.depthwise_conv_s8(input, *rest)
    for b in range(input.shape[0]):
        np.testing.assert_array_equal(whole[b : b + 1], dw.depthwise_conv_s8(input[b : b + 1], *rest))


def test_kws_layer_reference_equals_fast_path():
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, (1, 25, 5, 64), dtype=np.int8)
    f = rng.integers(-128, 128, (1, 3, 3, 64), dtype=np.int8)
    b = rng.integers(-5000, 5000, 64).astype(np.int32)
    q = PerChannelQuantParams(
        rng.integers(1 << 30, 1 << 31, 64).astype(np.int32), rng.integers(-12, 1, 64).astype(np.int32)
    )
    p = DwConvParams(
        input_offset=128, output_offset=-128, padding=Tile(1, 1), activation=Activation(-128, 127)
    )
    expected = dw.depthwise_conv_s8_reference(x, f, b, p, q)
    for kernel in KERNELS.values():
        np.testing.assert_array_equal(kernel(x, f, b, p, q), expected)


# --- hand-worked integers -----------------------------------------------------------------


@pytest.mark.parametrize("kernel", [dw.depthwise_conv_s8_reference, dw.depthwise_conv_s8])
def test_hand_worked_3x3_same_padding(kernel):
    # Input 1..9, all-ones 3x3 filter, pad 1, input_offset 1, scale 1.0. Each output is the sum of
    # the in-image neighbours plus one per in-image tap (4 at corners, 6 on edges, 9 centre):
    # corner (0,0): 1+2+4+5 + 4 = 16; edge (0,1): 1+2+3+4+5+6 + 6 = 27; centre: 45 + 9 = 54.
    x = np.arange(1, 10, dtype=np.int8).reshape(1, 3, 3, 1)
    f = np.ones((1, 3, 3, 1), np.int8)
    p = DwConvParams(input_offset=1, padding=Tile(1, 1))
    out = kernel(x, f, None, p, _identity(1))
    np.testing.assert_array_equal(out[0, :, :, 0], [[16, 27, 20], [33, 54, 39], [28, 45, 32]])


@pytest.mark.parametrize("kernel", [dw.depthwise_conv_s8_reference, dw.depthwise_conv_s8])
def test_hand_worked_channel_multiplier_order(kernel):
    # Output channel = ic * ch_mult + m: inputs (3, -5), taps (1, 2, 3, 4) give (3, 6, -15, -20).
    x = np.array([3, -5], np.int8).reshape(1, 1, 1, 2)
    f = np.array([1, 2, 3, 4], np.int8).reshape(1, 1, 1, 4)
    out = kernel(x, f, None, DwConvParams(ch_mult=2), _identity(4))
    np.testing.assert_array_equal(out.ravel(), [3, 6, -15, -20])


@pytest.mark.parametrize("kernel", [dw.depthwise_conv_s8_reference, dw.depthwise_conv_s8])
def test_hand_worked_dilation(kernel):
    # 1x2 filter of ones, dilation 2 over [1..5]: taps x and x+2 -> (1+3, 2+4, 3+5), bias 10.
    x = np.arange(1, 6, dtype=np.int8).reshape(1, 1, 5, 1)
    f = np.ones((1, 1, 2, 1), np.int8)
    out = kernel(x, f, np.array([10], np.int32), DwConvParams(dilation=Tile(2, 1)), _identity(1))
    np.testing.assert_array_equal(out.ravel(), [14, 16, 18])


@pytest.mark.parametrize("kernel", [dw.depthwise_conv_s8_reference, dw.depthwise_conv_s8])
def test_hand_worked_double_rounding(kernel):
    # Scale 0.25 as (2^30, -1). acc 5: high multiply (5 * 2^30 + 2^30) >> 31 = 3, then 3 / 2 = 1.5
    # rounds away to 2 (exact 1.25 would round to 1). acc -6: floor(-5 * 2^30 / 2^31) = -3,
    # then -1.5 rounds away to -2. acc 6: 3, then 1.5 -> 2.
    x = np.array([5, -6, 6], np.int8).reshape(1, 1, 1, 3)
    f = np.ones((1, 1, 1, 3), np.int8)
    q = PerChannelQuantParams.per_tensor(1 << 30, -1, 3)
    np.testing.assert_array_equal(kernel(x, f, None, DwConvParams(), q).ravel(), [2, -2, 2])


@pytest.mark.parametrize("kernel", [dw.depthwise_conv_s8_reference, dw.depthwise_conv_s8])
def test_hand_worked_accumulator_wraps_like_int32(kernel):
    # bias INT32_MAX plus one tap of 1 wraps to INT32_MIN (as SMLAD/MLA do); scale 0.5 (2^30, 0)
    # gives -2^30, clamped to -128. Without the wrap it would be +2^30, clamped to 127.
    x = np.ones((1, 1, 1, 1), np.int8)
    f = np.ones((1, 1, 1, 1), np.int8)
    q = PerChannelQuantParams.per_tensor(1 << 30, 0, 1)
    assert kernel(x, f, np.array([2**31 - 1], np.int32), DwConvParams(), q).item() == -128


@pytest.mark.parametrize("kernel", [dw.depthwise_conv_s8_reference, dw.depthwise_conv_s8])
def test_hand_worked_offsets_and_activation(kernel):
    # (x + 128) * 1 with x = -128 gives 0; output_offset -128 -> -128; clamped up to ReLU's -100.
    x = np.full((1, 1, 1, 1), -128, np.int8)
    f = np.ones((1, 1, 1, 1), np.int8)
    p = DwConvParams(input_offset=128, output_offset=-128, activation=Activation(-100, 127))
    assert kernel(x, f, None, p, _identity(1)).item() == -100


# --- validation ---------------------------------------------------------------------------


def _base():
    x = np.zeros((1, 4, 4, 2), np.int8)
    f = np.zeros((1, 3, 3, 2), np.int8)
    return x, f, np.zeros(2, np.int32), DwConvParams(padding=Tile(1, 1)), _identity(2)


BAD = {
    "input not int8": lambda x, f, b, p, q: (x.astype(np.int16), f, b, p, q),
    "input 3-D": lambda x, f, b, p, q: (x[0], f, b, p, q),
    "filter first dim": lambda x, f, b, p, q: (x, np.zeros((2, 3, 3, 2), np.int8), b, p, q),
    "C_OUT != C_IN*ch_mult": lambda x, f, b, p, q: (x, np.zeros((1, 3, 3, 3), np.int8), b, p, q),
    "bias dtype": lambda x, f, b, p, q: (x, f, b.astype(np.int64), p, q),
    "bias shape": lambda x, f, b, p, q: (x, f, np.zeros(3, np.int32), p, q),
    "quant shape": lambda x, f, b, p, q: (x, f, b, p, _identity(3)),
    "shift range": lambda x, f, b, p, q: (x, f, b, p, PerChannelQuantParams.per_tensor(1 << 30, 31, 2)),
    "input_offset -128": lambda x, f, b, p, q: (x, f, b, DwConvParams(input_offset=-128), q),
    "output_offset 128": lambda x, f, b, p, q: (x, f, b, DwConvParams(output_offset=128), q),
    "activation min > max": lambda x, f, b, p, q: (x, f, b, DwConvParams(activation=Activation(5, 4)), q),
    "stride 0": lambda x, f, b, p, q: (x, f, b, DwConvParams(stride=Tile(0, 1)), q),
    "dilation 0": lambda x, f, b, p, q: (x, f, b, DwConvParams(dilation=Tile(1, 0)), q),
    "negative padding": lambda x, f, b, p, q: (x, f, b, DwConvParams(padding=Tile(-1, 0)), q),
    "ch_mult 0": lambda x, f, b, p, q: (x, f, b, DwConvParams(ch_mult=0), q),
    "input smaller than filter": lambda x, f, b, p, q: (x[:, :2], f, b, DwConvParams(), q),
}


@pytest.mark.parametrize("reason", sorted(BAD))
@pytest.mark.parametrize("kernel", [dw.depthwise_conv_s8_reference, *KERNELS.values()])
def test_bad_arguments_raise(kernel, reason):
    with pytest.raises(KernelArgumentError) as err:
        kernel(*BAD[reason](*_base()))
    assert err.value.function.startswith("arm_depthwise_conv")


def test_bad_output_hw_raises():
    with pytest.raises(KernelArgumentError, match="output_hw"):
        dw.depthwise_conv_s8(*_base(), output_hw=(0, 4))


CH_MULT_1_BAD = {
    "ch_mult 2": (np.zeros((1, 4, 4, 1), np.int8), np.zeros((1, 3, 3, 2), np.int8), DwConvParams(ch_mult=2)),
    "batch 2": (np.zeros((2, 4, 4, 2), np.int8), np.zeros((1, 3, 3, 2), np.int8), DwConvParams()),
    "dilation 2": (
        np.zeros((1, 6, 6, 2), np.int8),
        np.zeros((1, 3, 3, 2), np.int8),
        DwConvParams(dilation=Tile(2, 2)),
    ),
}


@pytest.mark.parametrize("reason", sorted(CH_MULT_1_BAD))
@pytest.mark.parametrize("kernel", [dw.depthwise_conv_3x3_s8, dw.depthwise_conv_s8_opt])
def test_ch_mult_1_kernels_reject_what_they_cannot_compute(kernel, reason):
    x, f, p = CH_MULT_1_BAD[reason]
    with pytest.raises(KernelArgumentError):
        kernel(x, f, None, p, _identity(f.shape[3]))
    dw.depthwise_conv_s8(x, f, None, p, _identity(f.shape[3]))  # the generic kernel takes all of them


@pytest.mark.parametrize(
    ("filter_hw", "padding", "argument"),
    [((3, 5), Tile(0, 0), "filter"), ((3, 3), Tile(2, 0), "dw_conv_params.padding.w")],
)
def test_3x3_arg_errors(filter_hw, padding, argument):
    x = np.zeros((1, 6, 6, 2), np.int8)
    f = np.zeros((1, *filter_hw, 2), np.int8)
    with pytest.raises(KernelArgumentError) as err:
        dw.depthwise_conv_3x3_s8(x, f, None, DwConvParams(padding=padding), _identity(2))
    assert err.value.argument == argument


def test_3x3_and_wrapper_reject_a_middle_column_outside_the_input():
    # 3 output columns over a width-3 input with pad 1: the last window starts at column 1 and its
    # middle column (2) is inside, but asking for 4 columns puts the middle at column 3.
    x = np.zeros((1, 3, 3, 1), np.int8)
    f = np.zeros((1, 3, 3, 1), np.int8)
    args = (x, f, None, DwConvParams(padding=Tile(1, 1)), _identity(1))
    dw.depthwise_conv_3x3_s8(*args, output_hw=(3, 3))
    for kernel in (dw.depthwise_conv_3x3_s8, dw.depthwise_conv_wrapper_s8):
        with pytest.raises(KernelArgumentError, match=r"output_dims\.w"):
            kernel(*args, output_hw=(3, 4))
    assert dw.depthwise_conv_s8(*args, output_hw=(3, 4)).shape == (1, 3, 4, 1)


def test_opt_and_wrapper_reject_windows_wholly_outside_the_rows():
    # 5x5 filter, no padding, input height 5: a second output row would start at row 6 > H.
    x = np.zeros((1, 5, 5, 1), np.int8)
    f = np.zeros((1, 5, 5, 1), np.int8)
    args = (x, f, None, DwConvParams(stride=Tile(1, 6)), _identity(1))
    for kernel in (dw.depthwise_conv_s8_opt, dw.depthwise_conv_wrapper_s8):
        with pytest.raises(KernelArgumentError, match=r"output_dims\.h"):
            kernel(*args, output_hw=(2, 1))


# --- routing and scratch sizes ------------------------------------------------------------

KWS = (DwConvParams(padding=Tile(1, 1)), Dims(1, 25, 5, 64), Dims(1, 3, 3, 64), Dims(1, 25, 5, 64))
S8, OPT, K3X3, CONV = (
    "arm_depthwise_conv_s8",
    "arm_depthwise_conv_s8_opt",
    "arm_depthwise_conv_3x3_s8",
    "arm_convolve_wrapper_s8",
)
CH_MULT_2 = (DwConvParams(ch_mult=2), Dims(1, 5, 5, 4), Dims(1, 3, 3, 8), Dims(1, 3, 3, 8))
ONE_IN_CH = (
    DwConvParams(ch_mult=8, padding=Tile(1, 1)),
    Dims(1, 5, 5, 1),
    Dims(1, 3, 3, 8),
    Dims(1, 5, 5, 8),
)


def _isas(scalar, dsp=None, mve=None):
    return {"scalar": scalar, "dsp": scalar if dsp is None else dsp, "mve": scalar if mve is None else mve}


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        (KWS, _isas(K3X3, K3X3, OPT)),
        ((DwConvParams(padding=Tile(2, 2)), *KWS[1:]), _isas(OPT)),
        ((KWS[0], Dims(1, 9, 9, 8), Dims(1, 5, 5, 8), Dims(1, 5, 5, 8)), _isas(OPT)),
        (CH_MULT_2, _isas(S8)),
        ((KWS[0], Dims(2, 25, 5, 64), KWS[2], Dims(2, 25, 5, 64)), _isas(S8)),
        ((DwConvParams(dilation=Tile(2, 2)), *KWS[1:]), _isas(S8)),
        (ONE_IN_CH, _isas(S8, S8, CONV)),
    ],
)
def test_select_depthwise_kernel(case, expected):
    assert {isa: dw.select_depthwise_kernel(*case, isa) for isa in dw.ISAS} == expected


def test_to_conv_threshold_is_compiler_dependent():
    case = ONE_IN_CH
    assert dw.is_depthwise_conv_to_conv_s8(*case)  # GCC: output_dims.c > 1
    assert not dw.is_depthwise_conv_to_conv_s8(
        *case, threshold=dw.DW_TO_CONV_THRESHOLD_ARMCLANG
    )  # 8 > 8 false
    assert dw.select_depthwise_kernel(*case, "mve", to_conv_threshold=8) == "arm_depthwise_conv_s8"


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        # KWS 3x3: the 3x3 kernel needs no scratch; MVE runs _opt: 4 columns * 124 ch * 9 taps.
        (KWS, _isas(0, 0, 4 * 124 * 9)),
        # 5x5, 64 channels: DSP im2col 64 * 25 int16 = 3200 bytes; MVE 4 * 124 * 25 = 12400.
        ((KWS[0], Dims(1, 9, 9, 64), Dims(1, 5, 5, 64), Dims(1, 7, 7, 64)), _isas(0, 3200, 12400)),
        # Generic route (ch_mult 2): none anywhere.
        (CH_MULT_2, _isas(0)),
        # MVE to-conv: conv im2col 4 * ceil(1 * 9 / 8) * 8 = 64 bytes plus the 72-byte transposed filter.
        (ONE_IN_CH, _isas(0, 0, 136)),
    ],
)
def test_wrapper_buffer_sizes(case, expected):
    assert {isa: dw.depthwise_conv_wrapper_s8_get_buffer_size(*case, isa) for isa in dw.ISAS} == expected


def test_unknown_isa_raises():
    with pytest.raises(KernelArgumentError, match="isa"):
        dw.select_depthwise_kernel(*KWS, "neon")
    with pytest.raises(KernelArgumentError, match="isa"):
        dw.depthwise_conv_wrapper_s8_get_buffer_size(*KWS, "m55")


# --- conformance adapters -----------------------------------------------------------------


def _direct(name: str, arrays, params):
    """Call the kernel straight from a case, without the adapter."""
    n, h, w, c = (params[f"input_dims.{k}"] for k in "nhwc")
    p = DwConvParams(
        params["input_offset"],
        params["output_offset"],
        params["ch_mult"],
        Tile(params["stride.w"], params["stride.h"]),
        Tile(params["padding.w"], params["padding.h"]),
        Tile(params["dilation.w"], params["dilation.h"]),
        Activation(params["activation.min"], params["activation.max"]),
    )
    quant = PerChannelQuantParams(arrays["multiplier"], arrays["shift"])
    bias = None if params["bias_is_null"] else arrays["bias"]
    output_hw = (params["output_dims.h"], params["output_dims.w"])
    return KERNELS[name](arrays["input"].reshape(n, h, w, c), arrays["filter"], bias, p, quant, output_hw)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_adapter_generate_run_equals_kernel(name):
    function = registry.get(name)
    assert function.family == "depthwise"
    rng = np.random.default_rng(2024)
    for _ in range(8):
        arrays, params = function.generate(rng)
        assert params["function"] == name
        assert set(function.params) <= set(params) and set(function.arrays) == set(arrays)
        assert params["macs"] <= 50_000
        out = function.run(arrays, params)
        assert out.shape == tuple(params[f"output_dims.{k}"] for k in "nhwc")
        np.testing.assert_array_equal(out, _direct(name, arrays, params))


def test_adapter_rejects_missing_keys_and_wrong_dtypes():
    function = registry.get("arm_depthwise_conv_s8")
    arrays, params = function.generate(np.random.default_rng(3))
    with pytest.raises(VectorError, match="ch_mult"):
        function.run(arrays, {k: v for k, v in params.items() if k != "ch_mult"})
    with pytest.raises(VectorError, match="bias"):
        function.run({**arrays, "bias": arrays["bias"].astype(np.int64)}, params)
    with pytest.raises(VectorError, match="dims"):
        function.run(arrays, {**params, "output_dims.c": params["output_dims.c"] + 1})


@settings(max_examples=20)
@given(st.integers(0, 2**32 - 1))
def test_wrapper_adapter_records_each_isa_route(seed):
    _, params = registry.get("arm_depthwise_conv_wrapper_s8").generate(np.random.default_rng(seed))
    assert params["route_mve"] != "arm_depthwise_conv_3x3_s8"
    if params["route_dsp"] == "arm_depthwise_conv_3x3_s8":
        assert params["buffer_size_dsp"] == 0

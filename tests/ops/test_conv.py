"""kernels_py.conv and kernels_py.conv_transpose: references equal fast paths, hand-worked integers,
validation, routing, buffer sizes, and the conformance adapters of refsim.conformance.functions.conv."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernels_py import conv, conv_transpose
from kernels_py.errors import KernelArgumentError
from kernels_py.fixedpoint import clamp, requantize, wrap_int32
from kernels_py.types import Activation, ConvParams, Dims, PerChannelQuantParams, Tile, TransposeConvParams
from refsim.conformance import registry
from refsim.errors import VectorError
from refsim.testing.strategies import activations, input_offsets, int8_arrays, output_offsets, per_channel

# Q0.31 multiplier 2^30 (0.5) with shift 1 is the identity: requantize(v, 2^30, 1) == v.
IDENTITY = (1 << 30, 1)

biases = st.one_of(
    st.none(),
    st.integers(-(2**20), 2**20),
    st.sampled_from([-(2**31), 2**31 - 1]),  # int32 extremes: the accumulator wraps
)


def _identity(channels: int) -> PerChannelQuantParams:
    return PerChannelQuantParams.per_tensor(*IDENTITY, channels)


def _bias_array(draw, value, channels):
    if value is None:
        return None
    elements = st.just(value) | st.integers(-(2**20), 2**20)
    return np.array(draw(st.lists(elements, min_size=channels, max_size=channels)), dtype=np.int32)


@st.composite
def conv_cases(draw, route: str = "general"):
    """(input, filter, bias, conv_params, quant_params, output_hw), small enough for the reference."""
    n = draw(st.integers(1, 2))
    if route == "general":
        groups = draw(st.sampled_from([1, 1, 2]))
        filter_c, per_group = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        k_h, k_w = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        h, w = draw(st.integers(1, 5)), draw(st.integers(1, 5))
        stride = Tile(draw(st.integers(1, 3)), draw(st.integers(1, 3)))
        dilation = Tile(draw(st.integers(1, 2)), draw(st.integers(1, 2)))
        padding = Tile(draw(st.integers(0, 2)), draw(st.integers(0, 2)))
    else:  # the shapes arm_convolve_wrapper_s8 sends to a specialised kernel
        groups, filter_c, per_group = 1, draw(st.integers(1, 9)), draw(st.integers(1, 5))
        dilation, padding = Tile(1, 1), Tile(0, 0)
        k_h = k_w = 1
        h, w = draw(st.integers(1, 5)), draw(st.integers(1, 5))
        stride = Tile(1, 1) if route == "1x1_fast" else Tile(draw(st.integers(1, 3)), draw(st.integers(2, 3)))
        if route == "1_x_n":
            stride = Tile(draw(st.sampled_from([1, 2, 4])), draw(st.integers(1, 2)))
            filter_c = 4 // math.gcd(stride.w, 4) * draw(st.integers(1, 2))
            h, k_w, padding = 1, draw(st.integers(2, 4)), Tile(draw(st.integers(0, 1)), 0)
            w = draw(st.integers(k_w, 8))
    out_c = groups * per_group
    x = draw(int8_arrays((n, h, w, groups * filter_c)))
    f = draw(int8_arrays((out_c, k_h, k_w, filter_c)))
    formula = tuple(
        conv.conv_output_size(size, k, s, p, d)
        for size, k, s, p, d in (
            (h, k_h, stride.h, padding.h, dilation.h),
            (w, k_w, stride.w, padding.w, dilation.w),
        )
    )
    if route == "general" and (min(formula) < 1 or draw(st.booleans())):
        output_hw = (
            draw(st.integers(1, max(formula[0], 0) + 1)),
            draw(st.integers(1, max(formula[1], 0) + 1)),
        )
    else:
        output_hw = None
    params = ConvParams(
        draw(input_offsets), draw(output_offsets), stride, padding, dilation, draw(activations())
    )
    multiplier, shift = draw(per_channel(out_c))
    bias = _bias_array(draw, draw(biases), out_c)
    return x, f, bias, params, PerChannelQuantParams(multiplier, shift), output_hw


@st.composite
def transpose_cases(draw):
    n, h, w, in_c = (
        draw(st.integers(1, 2)),
        draw(st.integers(1, 4)),
        draw(st.integers(1, 4)),
        draw(st.integers(1, 4)),
    )
    out_c, k_h, k_w = draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    stride = Tile(draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    padding = Tile(draw(st.integers(0, k_w - 1)), draw(st.integers(0, k_h - 1)))
    output_hw = (
        draw(st.integers(1, (h - 1) * stride.h + max(k_h, stride.h) - padding.h)),
        draw(st.integers(1, (w - 1) * stride.w + max(k_w, stride.w) - padding.w)),
    )
    params = TransposeConvParams(
        draw(input_offsets), draw(output_offsets), stride, padding, Tile(0, 0), activation=draw(activations())
    )
    multiplier, shift = draw(per_channel(out_c))
    bias = _bias_array(draw, draw(biases), out_c)
    x, f = draw(int8_arrays((n, h, w, in_c))), draw(int8_arrays((out_c, k_h, k_w, in_c)))
    return x, f, bias, params, PerChannelQuantParams(multiplier, shift), output_hw


# --- reference == fast path ------------------------------------------------------------------------------


@given(conv_cases())
def test_convolve_reference_equals_fast_path(case):
    np.testing.assert_array_equal(conv.convolve_s8_reference(*case), conv.convolve_s8(*case))


@given(st.sampled_from(["1x1_fast", "1x1", "1_x_n"]).flatmap(conv_cases))
def test_wrapper_routes_compute_convolve_s8(case):
    dims = conv.convolve_s8_dims(*case[:2], case[3], case[5])
    assert conv.select_convolve_kernel(case[3], *dims) != "arm_convolve_s8"
    np.testing.assert_array_equal(conv.convolve_wrapper_s8(*case), conv.convolve_s8_reference(*case))


@given(transpose_cases())
def test_transpose_reference_equals_fast_path(case):
    expected = conv_transpose.transpose_conv_s8_reference(*case)
    np.testing.assert_array_equal(conv_transpose.transpose_conv_s8(*case), expected)
    np.testing.assert_array_equal(conv_transpose.transpose_conv_wrapper_s8(*case), expected)


@settings(max_examples=30)
@given(transpose_cases())
def test_transpose_equals_reverse_conv_on_upscaled_input(case):
    """arm_transpose_conv_wrapper_s8's reverse route: stride-1 conv of the zero-upscaled input with the
    filter flipped and padding kernel - 1 - padding. Inserted zeros hold -input_offset (no contribution)."""
    x, f, bias, p, quant, output_hw = case
    n, h, w, c = x.shape
    upscaled = np.full((n, (h - 1) * p.stride.h + 1, (w - 1) * p.stride.w + 1, c), -p.input_offset, np.int8)
    upscaled[:, :: p.stride.h, :: p.stride.w, :] = x
    padding = Tile(f.shape[2] - 1 - p.padding.w, f.shape[1] - 1 - p.padding.h)
    conv_params = ConvParams(p.input_offset, p.output_offset, Tile(1, 1), padding, activation=p.activation)
    flipped = np.ascontiguousarray(f[:, ::-1, ::-1, :])
    expected = conv.convolve_s8_reference(upscaled, flipped, bias, conv_params, quant, output_hw)
    np.testing.assert_array_equal(conv_transpose.transpose_conv_s8(*case), expected)


@given(conv_cases("1x1_fast"))
def test_1x1_equals_folded_offset_matmul(case):
    """arm_nn_mat_mult_nt_t_s8 computes Σx·w + input_offset·Σw: equal to Σ(x + offset)·w modulo 2^32."""
    x, f, bias, p, quant, _ = case
    lhs, rhs = x.reshape(-1, x.shape[3]).astype(np.int64), f.reshape(f.shape[0], -1).astype(np.int64)
    acc = lhs @ rhs.T + p.input_offset * rhs.sum(axis=1) + (0 if bias is None else bias.astype(np.int64))
    channels = np.tile(np.arange(f.shape[0]), lhs.shape[0])
    scaled = [
        # + output_offset is an int32 add in CMSIS-NN: it wraps at the edge (test_output_offset_wrap.py)
        wrap_int32(
            requantize(wrap_int32(int(v)), int(quant.multiplier[o]), int(quant.shift[o])) + p.output_offset
        )
        for v, o in zip(acc.ravel(), channels, strict=True)
    ]
    expected = [clamp(v, p.activation.min, p.activation.max) for v in scaled]
    np.testing.assert_array_equal(conv.convolve_s8(*case).ravel(), np.array(expected, np.int8))


# --- hand-worked cases -----------------------------------------------------------------------------------


def test_single_pixel_offsets_bias_and_rounding():
    # acc = (3+1)·4 + (-2+1)·5 + 10 = 21; ·0.5 = 10.5 rounds up to 11 in the doubling high multiply; -3 → 8
    x = np.array([3, -2], np.int8).reshape(1, 1, 1, 2)
    f = np.array([4, 5], np.int8).reshape(1, 1, 1, 2)
    quant = PerChannelQuantParams.per_tensor(1 << 30, 0, 1)
    out = conv.convolve_s8_reference(x, f, np.array([10], np.int32), ConvParams(1, -3), quant)
    assert out.tolist() == [[[[8]]]]
    np.testing.assert_array_equal(
        conv.convolve_s8(x, f, np.array([10], np.int32), ConvParams(1, -3), quant), out
    )


def test_padding_contributes_nothing_not_even_the_offset():
    # zero input, input_offset 5, 3x3 ones filter, padding 1: each output is 5 · (taps inside the input)
    x = np.zeros((1, 3, 3, 1), np.int8)
    f = np.ones((1, 3, 3, 1), np.int8)
    params = ConvParams(5, 0, padding=Tile(1, 1))
    for kernel in (conv.convolve_s8_reference, conv.convolve_s8):
        out = kernel(x, f, None, params, _identity(1))
        assert out[0, :, :, 0].tolist() == [[20, 30, 20], [30, 45, 30], [20, 30, 20]]


def test_stride_and_dilation():
    # row [1..5], filter [1, 1] dilated by 2, stride 2: outputs x0 + x2 = 4 and x2 + x4 = 8
    x = np.arange(1, 6, dtype=np.int8).reshape(1, 1, 5, 1)
    f = np.ones((1, 1, 2, 1), np.int8)
    params = ConvParams(stride=Tile(2, 1), dilation=Tile(2, 1))
    for kernel in (conv.convolve_s8_reference, conv.convolve_s8):
        assert kernel(x, f, None, params, _identity(1)).ravel().tolist() == [4, 8]


def test_grouped_convolution():
    # C_IN 4, filter C 2: groups 2. Output 0 = 1 + 2 from channels 0-1; output 1 = 3 - 4 from channels 2-3
    x = np.array([1, 2, 3, 4], np.int8).reshape(1, 1, 1, 4)
    f = np.array([[1, 1], [1, -1]], np.int8).reshape(2, 1, 1, 2)
    for kernel in (conv.convolve_s8_reference, conv.convolve_s8, conv.convolve_wrapper_s8):
        assert kernel(x, f, None, ConvParams(), _identity(2)).ravel().tolist() == [3, -1]


def test_double_rounding():
    # 5 · 2^30 · 2^-31 = 2.5 rounds to 3, then 3 / 2 = 1.5 rounds away to 2; single rounding of 1.25 gives 1
    x = np.array([5], np.int8).reshape(1, 1, 1, 1)
    f = np.ones((1, 1, 1, 1), np.int8)
    quant = PerChannelQuantParams.per_tensor(1 << 30, -1, 1)
    assert conv.convolve_s8(x, f, None, ConvParams(), quant).item() == 2
    # -5: -2.5 rounds up to -2 (half toward +inf), -2 / 2 = -1 exactly
    assert conv.convolve_s8(-x, f, None, ConvParams(), quant).item() == -1


def test_activation_clamp_and_accumulator_wrap():
    x = np.array([100], np.int8).reshape(1, 1, 1, 1)
    f = np.array([100], np.int8).reshape(1, 1, 1, 1)
    half = PerChannelQuantParams.per_tensor(1 << 30, 0, 1)
    params = ConvParams(activation=Activation(-5, 7))
    assert conv.convolve_s8(x, f, None, params, half).item() == 7  # 10000 · 0.5 = 5000 clamps to 7
    bias = np.array([2**31 - 1], np.int32)
    for kernel in (conv.convolve_s8_reference, conv.convolve_s8):
        # INT32_MAX + 10000 wraps to -2147473649; · 0.5 is about -2^30: clamps to -128
        assert kernel(x, f, bias, ConvParams(), half).item() == -128
        # with shift 1 requantize's left shift wraps again: -2147473649 · 2 + 2^32 = 19998 → 9999 → 127
        assert kernel(x, f, bias, ConvParams(), _identity(1)).item() == 127


def test_transpose_conv_by_hand():
    x = np.array([[1, 2], [3, 4]], np.int8).reshape(1, 2, 2, 1)
    ones = np.ones((1, 2, 2, 1), np.int8)
    for kernel in (conv_transpose.transpose_conv_s8_reference, conv_transpose.transpose_conv_s8):
        # stride 2, 2x2 ones: each input fills its own 2x2 block; input_offset 1 adds 1 to each value
        out = kernel(x, ones, None, TransposeConvParams(1, 0, Tile(2, 2)), _identity(1), (4, 4))
        assert out[0, :, :, 0].tolist() == [[2, 2, 3, 3], [2, 2, 3, 3], [4, 4, 5, 5], [4, 4, 5, 5]]
        # stride 1: overlapping blocks add up
        out = kernel(x, ones, None, TransposeConvParams(), _identity(1), (3, 3))
        assert out[0, :, :, 0].tolist() == [[1, 3, 2], [4, 10, 6], [3, 7, 4]]
        # padding 1 crops one row/column at the top/left; output (1, 1) keeps the centre
        out = kernel(x, ones, None, TransposeConvParams(padding=Tile(1, 1)), _identity(1), (1, 1))
        assert out.item() == 10


# --- validation ------------------------------------------------------------------------------------------

X = np.zeros((1, 4, 4, 4), np.int8)
F = np.zeros((2, 3, 3, 4), np.int8)


@pytest.mark.parametrize(
    ("args", "argument"),
    [
        ((X.astype(np.int16), F, None, ConvParams(), _identity(2)), "input"),
        ((X[0], F, None, ConvParams(), _identity(2)), "input"),
        (
            (X, np.zeros((2, 3, 3, 3), np.int8), None, ConvParams(), _identity(2)),
            "filter",
        ),  # 3 does not divide 4
        (
            (X, np.zeros((3, 3, 3, 2), np.int8), None, ConvParams(), _identity(3)),
            "filter",
        ),  # 3 outputs, 2 groups
        ((X, F, np.zeros(3, np.int32), ConvParams(), _identity(2)), "bias"),
        ((X, F, np.zeros(2, np.int64), ConvParams(), _identity(2)), "bias"),
        ((X, F, None, ConvParams(), _identity(3)), "quant_params.multiplier"),
        ((X, F, None, ConvParams(), PerChannelQuantParams.per_tensor(1 << 30, 31, 2)), "quant_params.shift"),
        ((X, F, None, ConvParams(input_offset=-128), _identity(2)), "input_offset"),
        ((X, F, None, ConvParams(output_offset=128), _identity(2)), "output_offset"),
        ((X, F, None, ConvParams(activation=Activation(5, 4)), _identity(2)), "activation"),
        ((X, F, None, ConvParams(stride=Tile(0, 1)), _identity(2)), "stride"),
        ((X, F, None, ConvParams(dilation=Tile(1, 0)), _identity(2)), "dilation"),
        ((X, F, None, ConvParams(padding=Tile(-1, 0)), _identity(2)), "padding"),
        ((X, F, None, ConvParams(dilation=Tile(3, 3)), _identity(2)), "output_hw"),  # no window fits
        ((X, F, None, ConvParams(), _identity(2), (0, 2)), "output_hw"),
    ],
)
def test_convolve_rejects(args, argument):
    for kernel in (conv.convolve_s8_reference, conv.convolve_s8, conv.convolve_wrapper_s8):
        with pytest.raises(KernelArgumentError) as error:
            kernel(*args)
        assert error.value.argument == argument


@pytest.mark.parametrize(
    ("x_shape", "f_shape", "params", "output_hw", "argument"),
    [
        ((1, 4, 4, 8), (2, 1, 1, 8), ConvParams(), (3, 4), "output_hw"),  # 1x1 fast reads every input pixel
        ((1, 4, 4, 8), (2, 1, 1, 8), ConvParams(stride=Tile(2, 2)), (3, 2), "output_hw"),  # past the input
    ],
)
def test_wrapper_rejects_what_its_route_cannot_compute(x_shape, f_shape, params, output_hw, argument):
    x, f = np.zeros(x_shape, np.int8), np.zeros(f_shape, np.int8)
    conv.convolve_s8(x, f, None, params, _identity(f_shape[0]), output_hw)  # fine for arm_convolve_s8
    with pytest.raises(KernelArgumentError) as error:
        conv.convolve_wrapper_s8(x, f, None, params, _identity(f_shape[0]), output_hw)
    assert error.value.argument == argument


def test_specialised_kernel_checks():
    check, p = conv.check_convolve_kernel_arguments, ConvParams()
    one_row = (Dims(1, 1, 8, 3), Dims(4, 1, 3, 3), Dims(1, 1, 6, 4))
    with pytest.raises(KernelArgumentError, match=r"stride\.w"):
        check("arm_convolve_1_x_n_s8", p, *one_row)  # stride.w · C_IN = 3
    with pytest.raises(KernelArgumentError, match="padding"):
        check(
            "arm_convolve_1x1_s8",
            ConvParams(padding=Tile(1, 0)),
            Dims(1, 4, 4, 8),
            Dims(2, 1, 1, 8),
            Dims(1, 4, 6, 2),
        )
    with pytest.raises(KernelArgumentError, match=r"filter_dims\.c"):
        check("arm_convolve_1x1_s8_fast", p, Dims(1, 4, 4, 8), Dims(2, 1, 1, 4), Dims(1, 4, 4, 2))
    with pytest.raises(KernelArgumentError, match="function"):
        check("arm_convolve_even_s8", p, *one_row)
    check("arm_convolve_s8", p, *one_row)


T_X, T_F = np.zeros((1, 3, 3, 2), np.int8), np.zeros((2, 3, 3, 2), np.int8)


@pytest.mark.parametrize(
    ("filter", "params", "output_hw", "argument"),
    [
        (np.zeros((2, 3, 3, 3), np.int8), TransposeConvParams(), (5, 5), "filter"),
        (T_F, TransposeConvParams(dilation=Tile(2, 2)), (5, 5), "dilation"),
        (T_F, TransposeConvParams(padding=Tile(0, 3)), (2, 2), "padding.h"),
        (T_F, TransposeConvParams(padding_offsets=Tile(-1, 0)), (5, 5), "padding_offsets"),
        (T_F, TransposeConvParams(), (6, 5), "output_hw"),  # (3 - 1)·1 + 3 = 5 rows at most
        (T_F, TransposeConvParams(), (0, 5), "output_hw"),
    ],
)
def test_transpose_rejects(filter, params, output_hw, argument):
    for kernel in (
        conv_transpose.transpose_conv_s8_reference,
        conv_transpose.transpose_conv_s8,
        conv_transpose.transpose_conv_wrapper_s8,
    ):
        with pytest.raises(KernelArgumentError) as error:
            kernel(T_X, filter, None, params, _identity(2), output_hw)
        assert error.value.argument == argument


# --- routing and buffer sizes ----------------------------------------------------------------------------

KWS_FIRST = (ConvParams(stride=Tile(2, 2), padding=Tile(1, 4)), Dims(1, 49, 10, 1), Dims(64, 10, 4, 1),
             Dims(1, 25, 5, 64))  # fmt: skip
KWS_POINTWISE = (ConvParams(), Dims(1, 25, 5, 64), Dims(64, 1, 1, 64), Dims(1, 25, 5, 64))


@pytest.mark.parametrize(
    ("case", "kernel"),
    [
        (KWS_POINTWISE, "arm_convolve_1x1_s8_fast"),
        (KWS_FIRST, "arm_convolve_s8"),
        (
            (ConvParams(stride=Tile(2, 2)), Dims(1, 8, 8, 16), Dims(8, 1, 1, 16), Dims(1, 4, 4, 8)),
            "arm_convolve_1x1_s8",
        ),
        ((ConvParams(), Dims(1, 8, 8, 16), Dims(8, 1, 1, 8), Dims(1, 8, 8, 8)), "arm_convolve_s8"),  # grouped
        (
            (ConvParams(padding=Tile(1, 0)), Dims(1, 1, 16, 4), Dims(8, 1, 3, 4), Dims(1, 1, 16, 8)),
            "arm_convolve_1_x_n_s8",
        ),
        ((ConvParams(), Dims(1, 1, 16, 3), Dims(8, 1, 3, 3), Dims(1, 1, 14, 8)), "arm_convolve_s8"),  # 3 % 4
        (
            (ConvParams(stride=Tile(4, 1)), Dims(1, 1, 16, 3), Dims(8, 1, 3, 3), Dims(1, 1, 4, 8)),
            "arm_convolve_1_x_n_s8",
        ),
        (
            (ConvParams(dilation=Tile(2, 1)), Dims(1, 1, 16, 4), Dims(8, 1, 3, 4), Dims(1, 1, 12, 8)),
            "arm_convolve_s8",
        ),
    ],
)
def test_select_convolve_kernel(case, kernel):
    assert conv.select_convolve_kernel(*case) == kernel
    predicates = {
        "arm_convolve_1x1_s8_fast": conv.is_convolve_1x1_s8_fast,
        "arm_convolve_1x1_s8": conv.is_convolve_1x1_s8,
        "arm_convolve_1_x_n_s8": conv.is_convolve_1_x_n_s8,
    }
    assert [name for name, predicate in predicates.items() if predicate(*case)] == (
        [kernel] if kernel in predicates else []
    )


def test_convolve_buffer_sizes():
    # KWS first conv: im2col column 10·4·1 = 40 values. scalar/DSP: two int16 columns, 40 already a multiple
    # of 4: 2·40·2 = 160 B. MVE: four int8 columns of ceil(40/16)·16 = 48: 192 B.
    assert [conv.convolve_wrapper_s8_get_buffer_size(*KWS_FIRST, isa) for isa in conv.ISAS] == [160, 160, 192]
    # 1x1 fast: no buffer, except DSP built with Arm Compiler 6: 2·64 int16 = 256 B
    assert [conv.convolve_wrapper_s8_get_buffer_size(*KWS_POINTWISE, isa) for isa in conv.ISAS] == [0, 0, 0]
    assert conv.convolve_wrapper_s8_get_buffer_size(*KWS_POINTWISE, "dsp", armclang=True) == 256
    # 1xN, C 4, k 3, stride 1, pad 1, 16 → 16: total pad 2 (symmetric). MVE stages
    # max(3·4 + 1·4, 2·4 + 1·4) = 16 bytes; elsewhere arm_convolve_s8's 2·12·2 = 48.
    one_row = (ConvParams(padding=Tile(1, 0)), Dims(1, 1, 16, 4), Dims(8, 1, 3, 4), Dims(1, 1, 16, 8))
    assert [conv.convolve_wrapper_s8_get_buffer_size(*one_row, isa) for isa in conv.ISAS] == [48, 48, 16]
    # 1x1 strided and the C's grouped 1x1 quirk: both 0 bytes
    grouped = (ConvParams(), Dims(1, 8, 8, 16), Dims(8, 1, 1, 8), Dims(1, 8, 8, 8))
    assert conv.convolve_wrapper_s8_get_buffer_size(*grouped, "scalar") == 0
    with pytest.raises(KernelArgumentError, match="isa"):
        conv.convolve_wrapper_s8_get_buffer_size(*KWS_FIRST, "neon")


def test_transpose_routing_and_buffer_sizes():
    params = TransposeConvParams(stride=Tile(2, 2), padding=Tile(1, 1))
    small, deep = Dims(1, 4, 4, 16), Dims(1, 4, 4, 17)
    assert conv_transpose.select_transpose_conv_kernel(params, small) == "arm_transpose_conv_s8"
    assert conv_transpose.select_transpose_conv_kernel(params, deep) == "arm_convolve_s8"
    assert (
        conv_transpose.select_transpose_conv_kernel(TransposeConvParams(stride=Tile(3, 1)), deep)
        == "arm_transpose_conv_s8"
    )
    # rolling buffer: ((4-1)·2 + max(3, 2)) = 9 columns · 5 channels, max(3, 2) = 3 rows, int32: 540 B
    f, out = Dims(5, 3, 3, 16), Dims(1, 8, 8, 5)
    assert conv_transpose.transpose_conv_s8_get_buffer_size(params, small, f, out, "scalar") == 540
    assert conv_transpose.transpose_conv_s8_get_reverse_conv_buffer_size(params, small, f) == 0
    # reverse conv: arm_convolve_s8's size for the 8x8 upscaled input: 3·3·17 = 153 → 156; 2·156·2 = 624 B;
    # MVE 4·ceil(153/16)·16 = 640 B; the reversed filter takes 17·3·3·5 = 765 B
    f = Dims(5, 3, 3, 17)
    assert conv_transpose.transpose_conv_s8_get_buffer_size(params, deep, f, out, "dsp") == 624
    assert conv_transpose.transpose_conv_s8_get_buffer_size(params, deep, f, out, "mve") == 640
    assert conv_transpose.transpose_conv_s8_get_reverse_conv_buffer_size(params, deep, f) == 765


# --- conformance adapters --------------------------------------------------------------------------------

CONV_FUNCTIONS = [name for name, function in registry.functions().items() if function.family == "conv"]
ROUTES = {
    "arm_convolve_1x1_s8_fast": conv.is_convolve_1x1_s8_fast,
    "arm_convolve_1x1_s8": lambda p, i, f, o: (
        (f.h, f.w, p.padding.h, p.padding.w) == (1, 1, 0, 0) and i.c == f.c
    ),
    "arm_convolve_1_x_n_s8": lambda p, i, f, o: (
        i.h == f.h == 1 and (p.stride.w * i.c) % 4 == 0 and i.c == f.c
    ),
}


def test_every_cmsis_nn_conv_function_is_registered():
    assert set(CONV_FUNCTIONS) == {
        "arm_convolve_s8", "arm_convolve_wrapper_s8", "arm_convolve_1x1_s8_fast", "arm_convolve_1x1_s8",
        "arm_convolve_1_x_n_s8", "arm_transpose_conv_s8", "arm_transpose_conv_wrapper_s8",
    }  # fmt: skip


def _tile(params, key):
    return Tile(params[f"{key}.w"], params[f"{key}.h"])


@pytest.mark.parametrize("name", CONV_FUNCTIONS)
def test_generate_then_run_equals_the_kernel(name):
    function = registry.get(name)
    rng = np.random.default_rng(sum(map(ord, name)))
    print(f"seed {sum(map(ord, name))}")
    for _ in range(20):
        arrays, params = function.generate(rng)
        assert params["function"] == name and params["macs"] <= 50_000
        assert set(function.params) <= set(params) and set(function.arrays) == set(arrays)
        got = function.run(arrays, params)
        bias = None if params["bias_is_null"] else arrays["bias"]
        quant = PerChannelQuantParams(arrays["multiplier"], arrays["shift"])
        output_hw = (params["output_dims.h"], params["output_dims.w"])
        activation = Activation(params["activation.min"], params["activation.max"])
        offsets = (params["input_offset"], params["output_offset"])
        stride, padding, dilation = (_tile(params, key) for key in ("stride", "padding", "dilation"))
        if name.startswith("arm_transpose_conv"):
            offsets_tile = _tile(params, "padding_offsets")
            p = TransposeConvParams(*offsets, stride, padding, offsets_tile, dilation, activation)
            expected = conv_transpose.transpose_conv_s8(
                arrays["input"], arrays["filter"], bias, p, quant, output_hw
            )
        else:
            p = ConvParams(*offsets, stride, padding, dilation, activation)
            expected = conv.convolve_s8(arrays["input"], arrays["filter"], bias, p, quant, output_hw)
            if name in ROUTES:
                assert ROUTES[name](
                    p, *conv.convolve_s8_dims(arrays["input"], arrays["filter"], p, output_hw)
                )
        np.testing.assert_array_equal(got, expected)


def test_run_reports_malformed_cases():
    function = registry.get("arm_convolve_wrapper_s8")
    arrays, params = function.generate(np.random.default_rng(7))
    with pytest.raises(VectorError, match=r"stride\.h"):
        function.run(arrays, {k: v for k, v in params.items() if k != "stride.h"})
    with pytest.raises(VectorError, match="filter"):
        function.run({**arrays, "filter": arrays["filter"].astype(np.int16)}, params)
    with pytest.raises(VectorError, match="input_dims"):
        function.run(arrays, {**params, "input_dims.h": params["input_dims.h"] + 1})
    # a NULL bias and a zero bias give the same numbers; bias_is_null may be absent
    zero = {**arrays, "bias": np.zeros_like(arrays["bias"])}
    without_flag = {k: v for k, v in params.items() if k != "bias_is_null"}
    np.testing.assert_array_equal(
        function.run(zero, without_flag), function.run(arrays, {**params, "bias_is_null": True})
    )

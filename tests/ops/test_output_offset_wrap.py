"""``requantize(acc) + output_offset`` is an int32 add in CMSIS-NN (``sum += out_offset``, VADD):
it wraps, it does not saturate. Every kernel must reproduce that at the int32 edge.

Worked value: requantize(2, 2^31 - 1, 30): 2 << 30 wraps to -2^31, times (2^31 - 1) / 2^31
rounds to -2147483647; + (-128) wraps to +2147483521, which clamps to 127. Without the
wrap the sum would be -2147483775 and clamp to -128.
"""

import numpy as np
import pytest

from kernels_py import conv, depthwise, elementwise, fully_connected
from kernels_py.fixedpoint import requantize, wrap_int32
from kernels_py.types import (
    Activation,
    ConvParams,
    DwConvParams,
    FcParams,
    PerChannelQuantParams,
    PerTensorQuantParams,
)

M, S, OFF = 2**31 - 1, 30, -128


def test_worked_value():
    assert requantize(2, M, S) == -2147483647
    assert wrap_int32(requantize(2, M, S) + OFF) == 2147483521


X = np.array([[2]], np.int8)
W = np.array([[1]], np.int8)


@pytest.mark.parametrize("impl", ["fast", "reference"])
def test_fully_connected(impl):
    fn = (
        fully_connected.fully_connected_s8 if impl == "fast" else fully_connected.fully_connected_s8_reference
    )
    out = fn(X, W, None, FcParams(0, 0, OFF, Activation()), PerTensorQuantParams(M, S))
    assert out.tolist() == [[127]]


@pytest.mark.parametrize("impl", ["fast", "reference"])
def test_fully_connected_per_channel(impl):
    fn = fully_connected.fully_connected_per_channel_s8
    if impl == "reference":
        fn = fully_connected.fully_connected_per_channel_s8_reference
    out = fn(X, W, None, FcParams(0, 0, OFF, Activation()), PerChannelQuantParams.per_tensor(M, S, 1))
    assert out.tolist() == [[127]]


@pytest.mark.parametrize("fn", [conv.convolve_s8, conv.convolve_s8_reference, conv.convolve_wrapper_s8])
def test_conv(fn):
    out = fn(
        X.reshape(1, 1, 1, 1), W.reshape(1, 1, 1, 1), None, ConvParams(0, OFF),
        PerChannelQuantParams.per_tensor(M, S, 1),
    )  # fmt: skip
    assert out.reshape(-1).tolist() == [127]


@pytest.mark.parametrize("fn", [depthwise.depthwise_conv_s8, depthwise.depthwise_conv_s8_reference])
def test_depthwise(fn):
    out = fn(
        X.reshape(1, 1, 1, 1), W.reshape(1, 1, 1, 1), None, DwConvParams(0, OFF),
        PerChannelQuantParams.per_tensor(M, S, 1),
    )  # fmt: skip
    assert out.reshape(-1).tolist() == [127]


@pytest.mark.parametrize("fn", [elementwise.elementwise_mul_s8, elementwise.elementwise_mul_s8_reference])
def test_mul(fn):
    # (2 + 0) * (1 + 0) = 2 → the worked value
    out = fn(
        np.array([2], np.int8), np.array([1], np.int8), input_1_offset=0, input_2_offset=0, out_offset=OFF,
        out_mult=M, out_shift=S, out_activation_min=-128, out_activation_max=127,
    )  # fmt: skip
    assert out.tolist() == [127]

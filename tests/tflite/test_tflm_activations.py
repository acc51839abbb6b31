"""kernels_py.tflm's element-wise int8 kernels against the tflite-micro wheel, every input byte.

Each case draws the quantization (scales from 2^-30 to 2^20 as float32, zero points over int8)
and runs all 256 input bytes through a single-op model in TFLM's interpreter; the kernel must
give the same bytes, and must refuse (ValueError) exactly where TFLM's Prepare refuses — or
where TFLM's arithmetic is undefined, which the test then does not run.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, event, given, note
from hypothesis import strategies as st

from kernels_py.tflm import activations as act
from kernels_py.tflm import fixedpoint as fp
from kernels_py.tflm.quantize import lookup
from refsim.tflite import schema as s
from tests.tflite.tflm_wheel import Rejected, T, requires_wheel, run_single_op

B = s.BuiltinOperator
ALL_BYTES = np.arange(-128, 128, dtype=np.int8)


@st.composite
def scales(draw, low: int = -30, high: int = 20) -> float:
    """float32 scales over a wide exponent range, with the usual ones and powers of two likelier."""
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return float(np.float32(2.0 ** draw(st.integers(low, high))))
    if kind <= 5:
        return float(np.float32(draw(st.floats(2.0**-12, 1.0))))
    mantissa = draw(st.floats(0.5, 1.0, exclude_max=True))
    return float(np.float32(math.ldexp(mantissa, draw(st.integers(low, high)))))


zero_points = st.integers(-128, 127) | st.sampled_from([-128, 0, 127])


def _shape(draw) -> tuple[int, ...]:
    return draw(st.sampled_from([(256,), (1, 256), (2, 128), (4, 8, 8), (1, 2, 2, 64)]))


def _oracle(code, in_q, out_q, shape, **options):
    x = ALL_BYTES.reshape(shape)
    return run_single_op(
        code,
        [T(shape, scale=in_q[0], zero_point=in_q[1])],
        [T(shape, scale=out_q[0], zero_point=out_q[1])],
        [x],
        **options,
    )[0]


@requires_wheel
@given(st.data())
def test_relu(data):
    shape = _shape(data.draw)
    in_q = (data.draw(scales()), data.draw(zero_points))
    out_q = (data.draw(scales()), data.draw(zero_points))
    p = act.relu_params(in_q[0], in_q[1], out_q[0], out_q[1])
    note(f"{in_q} -> {out_q}: {p}")
    assume(p.output_shift <= 30)  # x * (1 << 31) is undefined; the op refuses it
    # TFLM divides the scales in float32 (activations_common.cc), as a Cortex-M does; the wheel's
    # x86 build prices a few quotients as if in double (1.0 / 0.8f: multiplier 1342177260, not
    # 1342177280, so 2 * 1.25 rounds to 2, not 3). There the wheel is no oracle; the device
    # benchmark (benchmarks/tflm_reference_device.py, TFLM under QEMU) holds those scales.
    in_double = fp.quantize_multiplier(np.float64(in_q[0]) / np.float64(out_q[0]))
    if in_double != (p.output_multiplier, p.output_shift):
        event("float32 and double scale quotients differ: wheel not an oracle")
        assume(False)
    expected = _oracle(B.RELU, in_q, out_q, shape)
    np.testing.assert_array_equal(lookup(act.relu_table(p), ALL_BYTES).reshape(shape), expected)


@requires_wheel
@given(st.data())
def test_relu6(data):
    shape = _shape(data.draw)
    in_q = (data.draw(scales()), data.draw(zero_points))
    out_q = (data.draw(scales()), data.draw(zero_points))
    # beyond int32 the wheel's x86 conversion gives INT32_MIN where a Cortex-M saturates (see
    # relu6_bounds; the device benchmark covers those scales)
    assume(act.float_to_quantized_int32(6.0, *in_q) < 2.0**31)
    zero, six = act.relu6_bounds(*in_q)
    expected = _oracle(B.RELU6, in_q, out_q, shape)
    np.testing.assert_array_equal(lookup(act.relu6_table(zero, six), ALL_BYTES).reshape(shape), expected)


def test_relu6_tiny_scale_saturates_like_cortex_m():
    assert act.relu6_bounds(2.0**-30, 3) == (3, 127)


def _sigmoid(data, code, table_fn, output_zero_point):
    shape = _shape(data.draw)
    in_q = (data.draw(scales(-34, 40)), data.draw(zero_points))
    out_q = (
        data.draw(scales()),
        output_zero_point if output_zero_point is not None else data.draw(zero_points),
    )
    try:
        p = act.sigmoid_params(*in_q)
    except ValueError:
        assume(False)
    note(f"{in_q} -> {out_q}: {p}")
    expected = _oracle(code, in_q, out_q, shape)
    np.testing.assert_array_equal(lookup(table_fn(p), ALL_BYTES).reshape(shape), expected)


@requires_wheel
@given(st.data())
def test_logistic(data):
    _sigmoid(data, B.LOGISTIC, act.logistic_table, -128)


@requires_wheel
@given(st.data())
def test_tanh(data):
    _sigmoid(data, B.TANH, act.tanh_table, None)


@requires_wheel
def test_logistic_output_zero_point_is_required():
    with pytest.raises(Rejected):
        _oracle(B.LOGISTIC, (0.1, 0), (1 / 256, 0), (256,))


@requires_wheel
@given(st.data())
def test_hard_swish(data):
    shape = _shape(data.draw)
    in_q = (data.draw(scales()), data.draw(zero_points))
    out_q = (data.draw(scales()), data.draw(zero_points))
    try:
        p = act.hard_swish_params(in_q[0], in_q[1], out_q[0], out_q[1])
    except ValueError as exc:
        note(str(exc))
        # TFLM's Prepare must refuse it too, unless the arithmetic is only undefined
        assume("Prepare fails" in str(exc))
        with pytest.raises(Rejected):
            _oracle(B.HARD_SWISH, in_q, out_q, shape)
        event("refused by TFLM's Prepare and by the kernel")
        return
    note(f"{in_q} -> {out_q}: {p}")
    expected = _oracle(B.HARD_SWISH, in_q, out_q, shape)
    np.testing.assert_array_equal(lookup(act.hard_swish_table(p), ALL_BYTES).reshape(shape), expected)
    event("compared")


# --- without the wheel: the gemmlowp functions against the real functions they approximate ----------


def test_gemmlowp_logistic_and_tanh_track_the_math():
    for k in range(-200, 201):
        a = k << 22  # Q4.27: k / 32
        x = a / 2**27
        assert abs(fp.logistic(a, 4) / 2**31 - 1 / (1 + math.exp(-x))) < 2e-6
        assert abs(fp.tanh(a, 4) / 2**31 - math.tanh(x)) < 4e-6


def test_int16_rounding_divide_by_large_exponents():
    # exponents 16..31: the mask narrows to int16 -1, so x >= 0 gives 1 and x < 0 gives -1
    assert [fp.rdbpot16(x, 20) for x in (-5, -1, 0, 1, 300)] == [-1, -1, 1, 1, 1]
    assert [fp.rdbpot16(x, 2) for x in (-6, -5, -2, 2, 5, 6)] == [-2, -1, -1, 1, 1, 2]

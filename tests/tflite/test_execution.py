"""`.tflite` execution, bit-exact with TFLM: the four MLPerf Tiny reference models and drawn
single-op models of every builtin TFLM's cmsis_nn kernels compute with CMSIS-NN (conv,
depthwise, fully connected, pooling, add, mul, softmax, pad, transpose, reshape), each tensor
against TFLM's own interpreter (tests/tflite/oracle.py); what refsim does not run is one error
naming the operator and its index."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from refsim.errors import RefsimError, UnsupportedError
from refsim.runtime import Program
from refsim.tflite import BuiltinOperator as B
from refsim.tflite import TensorType as T
from refsim.tflite.quantization import out_size, per_tensor_multiplier, quantize_multiplier, window_padding
from refsim.tflite.schema import ActivationFunctionType as Act
from refsim.tflite.schema import Padding
from refsim.tflite.writer import ModelBuilder, write_model
from tests.tflite.oracle import assert_matches_tflm, random_inputs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tflite"
MLPERF = sorted(FIXTURES.glob("*.tflite"))
DRAWN = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ACTIVATIONS = [Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1]


@pytest.mark.parametrize("path", MLPERF, ids=lambda p: p.stem)
def test_mlperf_tiny_reference_models_match_tflm_at_every_tensor(path):
    data = path.read_bytes()
    for seed in range(3):
        compared = assert_matches_tflm(data, random_inputs(data, seed))
        assert compared >= len(Program.load(data).file.origins)  # every op's output at least


# --- drawn single-op models ---------------------------------------------------------------------

scales = st.integers(-9, 1).flatmap(lambda e: st.floats(2.0**e, 2.0 ** (e + 1), width=32))
zero_points = st.integers(-128, 127)


def _int8(b: ModelBuilder, shape, draw, **kw) -> int:
    return b.tensor(shape, T.INT8, scale=draw(scales), zero_point=draw(zero_points), **kw)


def _weights(draw, rng, shape, channels: int, axis: int, b: ModelBuilder) -> int:
    per_channel = draw(st.booleans())
    n = channels if per_channel else 1
    filter_scales = tuple(draw(st.lists(st.floats(2.0**-9, 2.0**-3, width=32), min_size=n, max_size=n)))
    data = rng.integers(-127, 128, shape, dtype=np.int8)
    return b.tensor(
        shape, T.INT8, data=data, scale=filter_scales, zero_point=(0,) * n, quantized_dimension=axis
    )


def _bias(draw, rng, channels: int, b: ModelBuilder) -> int:
    if not draw(st.booleans()):
        return -1
    data = rng.integers(-(2**15), 2**15, channels, dtype=np.int32)
    return b.tensor((channels,), T.INT32, data=data, scale=(1.0,) * channels, zero_point=(0,) * channels)


def _run(b: ModelBuilder, inputs: list[int], outputs: list[int], seed: int) -> None:
    data = write_model(b.build(inputs=inputs, outputs=outputs))
    assert_matches_tflm(data, random_inputs(data, seed))


@st.composite
def windows(draw, max_kernel: int = 5):
    """(input h, w; kernel h, w; stride h, w; dilation h, w; padding) with a non-empty output."""
    h, w = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    kh, kw = draw(st.integers(1, max_kernel)), draw(st.integers(1, max_kernel))
    sh, sw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    padding = draw(st.sampled_from([Padding.SAME, Padding.VALID]))
    return h, w, kh, kw, sh, sw, padding


@DRAWN
@given(st.data(), windows(), st.integers(1, 2), st.integers(1, 2), st.integers(0, 2**31 - 1))
def test_conv_2d(data, win, dil_h, dil_w, seed):
    draw = data.draw
    h, w, kh, kw, sh, sw, padding = win
    pad = window_padding(padding, (sh, sw), (dil_h, dil_w), (h, w), (kh, kw))
    assume(pad.out_height > 0 and pad.out_width > 0)
    n, cin = draw(st.integers(1, 2)), draw(st.integers(1, 6))
    groups = draw(st.sampled_from([g for g in (1, 2, 3) if cin % g == 0]))
    cout = groups * draw(st.integers(1, 4))
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = _int8(b, (n, h, w, cin), draw)
    wt = _weights(draw, rng, (cout, kh, kw, cin // groups), cout, 0, b)
    bias = _bias(draw, rng, cout, b)
    y = _int8(b, (n, pad.out_height, pad.out_width, cout), draw)
    b.op(
        B.CONV_2D, [x, wt, bias], [y], padding=padding, stride_h=sh, stride_w=sw,
        dilation_h_factor=dil_h, dilation_w_factor=dil_w, fused_activation_function=draw(st.sampled_from(ACTIVATIONS)),
    )  # fmt: skip
    _run(b, [x], [y], seed)


@DRAWN
@given(st.data(), windows(), st.integers(1, 2), st.integers(0, 2**31 - 1))
def test_depthwise_conv_2d(data, win, dilation, seed):
    draw = data.draw
    h, w, kh, kw, sh, sw, padding = win
    pad = window_padding(padding, (sh, sw), (dilation, dilation), (h, w), (kh, kw))
    assume(pad.out_height > 0 and pad.out_width > 0)
    cin, mult = draw(st.integers(1, 8)), draw(st.integers(1, 3))
    cout = cin * mult
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = _int8(b, (1, h, w, cin), draw)
    wt = _weights(draw, rng, (1, kh, kw, cout), cout, 3, b)
    bias = _bias(draw, rng, cout, b)
    y = _int8(b, (1, pad.out_height, pad.out_width, cout), draw)
    b.op(
        B.DEPTHWISE_CONV_2D, [x, wt, bias] if bias >= 0 else [x, wt], [y], padding=padding, stride_h=sh, stride_w=sw, depth_multiplier=mult,
        dilation_h_factor=dilation, dilation_w_factor=dilation,
        fused_activation_function=draw(st.sampled_from(ACTIVATIONS)),
    )  # fmt: skip
    _run(b, [x], [y], seed)


@DRAWN
@given(st.data(), st.integers(0, 2**31 - 1))
def test_fully_connected(data, seed):
    """Rank-2 outputs (arm_fully_connected_s8 / _per_channel_s8) and rank-3 outputs with a depth
    of 4k (TFLM's arm_convolve_1x1_s8_fast path)."""
    draw = data.draw
    rank3 = draw(st.booleans())
    depth = 4 * draw(st.integers(1, 6)) if rank3 else draw(st.integers(1, 24))
    rows, channels = draw(st.integers(1, 4)), draw(st.integers(1, 12))
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    in_shape, out_shape = (
        ((1, rows, depth), (1, rows, channels)) if rank3 else ((rows, depth), (rows, channels))
    )
    x = _int8(b, in_shape, draw)
    wt = _weights(draw, rng, (channels, depth), channels, 0, b)
    bias = -1
    if draw(st.booleans()):
        bias_data = rng.integers(-(2**15), 2**15, channels, dtype=np.int32)
        bias = b.tensor((channels,), T.INT32, data=bias_data, scale=(1.0,), zero_point=0)
    y = _int8(b, out_shape, draw)
    b.op(
        B.FULLY_CONNECTED, [x, wt, bias], [y], keep_num_dims=rank3,
        fused_activation_function=draw(st.sampled_from(ACTIVATIONS)),
    )  # fmt: skip
    # a per-tensor bias must carry input scale × filter scale (TFLM's Prepare checks it)
    if bias >= 0 and not b.tensors[wt].quantization.per_channel:
        product = np.float32(b.tensors[x].quantization.scale[0]) * np.float32(
            b.tensors[wt].quantization.scale[0]
        )
        b.tensors[bias] = _with_scale(b.tensors[bias], float(product))
    _run(b, [x], [y], seed)


def _with_scale(t, scale: float):
    from dataclasses import replace

    return replace(t, quantization=replace(t.quantization, scale=(scale,)))


@DRAWN
@given(
    st.data(),
    windows(max_kernel=4),
    st.sampled_from([B.AVERAGE_POOL_2D, B.MAX_POOL_2D]),
    st.integers(0, 2**31 - 1),
)
def test_pooling(data, win, code, seed):
    draw = data.draw
    h, w, kh, kw, sh, sw, padding = win
    pad = window_padding(padding, (sh, sw), (1, 1), (h, w), (kh, kw))
    assume(pad.out_height > 0 and pad.out_width > 0)
    # every window must overlap the input (TFLM divides by the taps inside it)
    assume(pad.height < kh and pad.width < kw)
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 8))
    b = ModelBuilder()
    scale, zp = draw(scales), draw(zero_points)
    x = b.tensor((n, h, w, c), T.INT8, scale=scale, zero_point=zp)
    y = b.tensor((n, pad.out_height, pad.out_width, c), T.INT8, scale=scale, zero_point=zp)
    b.op(
        code, [x], [y], padding=padding, stride_h=sh, stride_w=sw, filter_height=kh, filter_width=kw,
        fused_activation_function=draw(st.sampled_from(ACTIVATIONS)),
    )  # fmt: skip
    _run(b, [x], [y], seed)


@st.composite
def broadcast_shapes(draw):
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)))
    other = tuple(d if draw(st.integers(0, 3)) else 1 for d in shape)
    other = other[draw(st.integers(0, len(other) - 1)) :] if draw(st.booleans()) else other
    return (shape, other) if draw(st.booleans()) else (other, shape)


@DRAWN
@given(st.data(), broadcast_shapes(), st.sampled_from([B.ADD, B.MUL]), st.integers(0, 2**31 - 1))
def test_add_and_mul(data, shapes, code, seed):
    draw = data.draw
    sa, sb = draw(scales), draw(scales)
    sy = draw(scales)
    if code == B.ADD:  # TFLM's Prepare aborts unless 2·max(s1, s2) / (2^20 · s_out) < 1
        assume(2 * max(sa, sb) < (1 << 20) * sy)
    b = ModelBuilder()
    a = b.tensor(shapes[0], T.INT8, scale=sa, zero_point=draw(zero_points))
    c = b.tensor(shapes[1], T.INT8, scale=sb, zero_point=draw(zero_points))
    y = b.tensor(np.broadcast_shapes(*shapes), T.INT8, scale=sy, zero_point=draw(zero_points))
    b.op(code, [a, c], [y], fused_activation_function=draw(st.sampled_from(ACTIVATIONS)))
    _run(b, [a, c], [y], seed)


@DRAWN
@given(st.lists(st.integers(1, 6), min_size=1, max_size=4), scales, zero_points, st.floats(0.25, 4.0, width=32), st.integers(0, 2**31 - 1))  # fmt: skip
def test_softmax(shape, scale, zp, beta, seed):
    b = ModelBuilder()
    x = b.tensor(shape, T.INT8, scale=scale, zero_point=zp)
    y = b.tensor(shape, T.INT8, scale=1.0 / 256, zero_point=-128)
    b.op(B.SOFTMAX, [x], [y], beta=beta)
    _run(b, [x], [y], seed)


@DRAWN
@given(st.data(), st.lists(st.integers(1, 5), min_size=1, max_size=4), st.integers(0, 2**31 - 1))
def test_pad_transpose_reshape(data, shape, seed):
    draw = data.draw
    rank = len(shape)
    scale, zp = draw(scales), draw(zero_points)
    b = ModelBuilder()
    x = b.tensor(shape, T.INT8, scale=scale, zero_point=zp)
    pads = np.array(
        draw(st.lists(st.integers(0, 3), min_size=2 * rank, max_size=2 * rank)), np.int32
    ).reshape(rank, 2)
    padded = [s + int(p.sum()) for s, p in zip(shape, pads, strict=True)]
    p = b.tensor((rank, 2), T.INT32, data=pads)
    y = b.tensor(padded, T.INT8, scale=scale, zero_point=zp)
    if draw(st.booleans()):
        value = b.tensor(
            (1,), T.INT8, data=np.array([draw(zero_points)], np.int8), scale=scale, zero_point=zp
        )
        b.op(B.PADV2, [x, p, value], [y])
    else:
        b.op(B.PAD, [x, p], [y])
    perm = draw(st.permutations(list(range(rank))))
    assume(not (rank == 2 and perm == [0, 1] and min(padded) > 1))  # arm_transpose_s8's 2-D path transposes
    q = b.tensor((rank,), T.INT32, data=np.array(perm, np.int32))
    z = b.tensor([padded[k] for k in perm], T.INT8, scale=scale, zero_point=zp)
    b.op(B.TRANSPOSE, [y, q], [z])
    flat = b.tensor((int(np.prod(padded)),), T.INT8, scale=scale, zero_point=zp)
    shape_t = b.tensor((1,), T.INT32, data=np.array([int(np.prod(padded))], np.int32))
    b.op(B.RESHAPE, [z, shape_t], [flat])
    _run(b, [x], [flat], seed)


# --- TFLM's Prepare arithmetic -------------------------------------------------------------------


def test_quantize_multiplier_is_tflms():
    assert quantize_multiplier(0.0) == (0, 0)
    assert quantize_multiplier(0.5) == (1 << 30, 0)
    assert quantize_multiplier(1.0) == (1 << 30, 1)
    assert quantize_multiplier(2.0**-40) == (0, 0)  # shifts below -31 flush to zero
    assert quantize_multiplier(2.0**40) == (1 << 30, 41)  # no saturation in TFLM's default build
    # the mantissa rounds half away from zero: 0.75 + 2^-33 -> 0.75·2^31 + 0.25 -> down; +2^-32 -> up
    assert quantize_multiplier(0.75 + 2.0**-32)[0] == 3 * (1 << 29) + 1


def test_per_tensor_fc_multiplier_rounds_the_scale_product_to_float32():
    """GetQuantizedConvolutionMultipler multiplies the two float32 scales in float32: for these
    scales the float32 and double products give different multipliers."""
    s_in, s_w, s_out = 0.1, 0.3, 0.07
    f32 = per_tensor_multiplier(s_in, s_w, s_out)
    f64 = quantize_multiplier(float(np.float32(s_in)) * float(np.float32(s_w)) / float(np.float32(s_out)))
    assert f32 != f64


def test_out_size_and_padding_are_tflms():
    assert out_size(Padding.SAME, 10, 3, 2) == 5 and out_size(Padding.VALID, 10, 3, 2) == 4
    p = window_padding(Padding.SAME, (2, 1), (1, 1), (10, 7), (3, 4))
    assert (p.out_height, p.height, p.height_offset) == (5, 0, 1)  # total 1: all of it at the bottom
    assert (p.out_width, p.width, p.width_offset) == (7, 1, 1)  # total 3: 1 left, 2 right


# --- what refsim does not run --------------------------------------------------------------------


def test_an_operator_refsim_does_not_run_is_named_with_its_index():
    b = ModelBuilder()
    x = b.tensor((1, 4), T.INT8, scale=0.5, zero_point=0)
    y = b.tensor((1, 4), T.INT8, scale=0.5, zero_point=0)
    z = b.tensor((1, 4), T.INT8, scale=0.5, zero_point=0)
    b.op(B.RESHAPE, [x], [y])
    b.op(B.ELU, [y], [z])
    with pytest.raises(UnsupportedError, match=r"^operator 1 \(ELU\): not supported by refsim"):
        Program.load(write_model(b.build(inputs=[x], outputs=[z])))


def test_int16_activations_are_refused_not_guessed():
    b = ModelBuilder()
    x = b.tensor((1, 2, 2, 1), T.INT16, scale=0.5, zero_point=0)
    w = b.tensor((1, 1, 1, 1), T.INT8, data=np.ones((1, 1, 1, 1), np.int8), scale=(0.5,), zero_point=(0,))
    y = b.tensor((1, 2, 2, 1), T.INT16, scale=0.5, zero_point=0)
    b.op(B.CONV_2D, [x, w, -1], [y], stride_h=1, stride_w=1)
    with pytest.raises(UnsupportedError, match=r"^operator 0 \(CONV_2D\): not supported on int16"):
        Program.load(write_model(b.build(inputs=[x], outputs=[y])))


def test_a_depthwise_conv_tflm_would_crash_on_is_refused():
    """Three inputs with the bias absent (-1): TFLM's depthwise Prepare takes the input count as
    "has a bias" and dereferences the null tensor (the wheel segfaults; so would a device)."""
    b = ModelBuilder()
    x = b.tensor((1, 2, 2, 1), T.INT8, scale=0.5, zero_point=0)
    w = b.tensor((1, 1, 1, 1), T.INT8, data=np.ones((1, 1, 1, 1), np.int8), scale=(0.5,), zero_point=(0,))
    y = b.tensor((1, 2, 2, 1), T.INT8, scale=0.5, zero_point=0)
    b.op(B.DEPTHWISE_CONV_2D, [x, w, -1], [y], stride_h=1, stride_w=1, depth_multiplier=1)
    with pytest.raises(
        UnsupportedError, match=r"^operator 0 \(DEPTHWISE_CONV_2D\): the bias input is listed but absent"
    ):
        Program.load(write_model(b.build(inputs=[x], outputs=[y])))


def test_a_custom_operator_is_refused():
    from refsim.tflite import model as m

    b = ModelBuilder()
    x = b.tensor((4,), T.INT8, scale=0.5, zero_point=0)
    y = b.tensor((4,), T.INT8, scale=0.5, zero_point=0)
    b.codes.append(m.OperatorCode(B.CUSTOM, custom_code="MyOp"))
    b.operators.append(m.Operator(opcode_index=0, inputs=(x,), outputs=(y,)))
    with pytest.raises(UnsupportedError, match=r"^operator 0 \(CUSTOM\(MyOp\)\): custom operators"):
        Program.load(write_model(b.build(inputs=[x], outputs=[y])))


def test_an_input_nobody_writes_is_refused():
    b = ModelBuilder()
    x = b.tensor((1, 4), T.INT8, scale=0.5, zero_point=0)
    orphan = b.tensor((1, 4), T.INT8, scale=0.5, zero_point=0)
    y = b.tensor((1, 4), T.INT8, scale=0.5, zero_point=0)
    b.op(B.ADD, [x, orphan], [y])
    with pytest.raises(RefsimError, match=r"^operator 0: input tensor 1 .* written by no earlier operator"):
        Program.load(write_model(b.build(inputs=[x], outputs=[y])))


# --- the real TFLM on Cortex-M (QEMU), recorded ----------------------------------------------------

QEMU_FIXTURES = FIXTURES / "tflm_qemu"


@pytest.mark.parametrize("path", MLPERF, ids=lambda p: p.stem)
def test_refsim_equals_tflm_on_cortex_m_under_qemu(path):
    """refsim's outputs equal TFLM + CMSIS-NN (4ab83cc3) built for cortex-m3, m4, m33 and m55 and run
    under QEMU on a seeded input (tests/fixtures/tflite/tflm_qemu, refsim/lab/tflm/measure.py):
    three CMSIS-NN code paths (scalar, DSP, MVE), one answer."""
    with np.load(QEMU_FIXTURES / f"{path.stem}.npz") as z:
        recorded = {k: z[k] for k in z.files}
    (output,) = Program.load(path).method().execute([recorded["input"]])
    cores = [k for k in recorded if k.startswith("output0_")]
    assert sorted(cores) == [
        "output0_cortex_m3",
        "output0_cortex_m33",
        "output0_cortex_m4",
        "output0_cortex_m55",
    ]
    for core in cores:
        np.testing.assert_array_equal(output.reshape(-1), recorded[core], err_msg=core)

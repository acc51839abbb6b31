"""TFLM's float32 kernels (kernels_py/tflm_float, tflm::*_f32, refsim/tflite/lower_float.py)
against the tflite-micro wheel, TFLM's own interpreter: hypothesis-drawn single-op float32
models, every output compared bit for bit.

Bit-exact is the contract for every op here (kernels_py/tflm_float/__init__.py): the sums run in
TFLM's order without contraction, and the transcendentals call the same host ``expf``/``tanhf``
the wheel imports (checked directly in `test_libm_is_the_wheels`). The wheel runs in
tests/tflite/oracle.py's spawned worker (tests/tflite/tflm_worker.py says why). What a device's newlib and
VFMA change is docs/tflite.md's business, not these tests'. The seed is printed by hypothesis
(``print_blob``); run ``HYPOTHESIS_PROFILE=thorough`` for a long campaign.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path
from struct import error as struct_error

import numpy as np
import pytest
from hypothesis import assume, event, given
from hypothesis import strategies as st

from refsim.errors import UnsupportedError
from refsim.runtime.program import Program
from refsim.tflite import load_model
from refsim.tflite.schema import ActivationFunctionType as A
from refsim.tflite.schema import BuiltinOperator as B
from refsim.tflite.schema import Padding
from refsim.tflite.schema import TensorType as T
from refsim.tflite.writer import ModelBuilder, write_model
from tests.tflite.oracle import tflm_run

F32 = T.FLOAT32
ACTIVATIONS = st.sampled_from([A.NONE, A.RELU, A.RELU6, A.RELU_N1_TO_1])
SPECIALS = np.array(
    [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.2e-38, 3.4e38, -3.4e38, 6.0, -1.0, 1.0, -3.0, 3.0],
    np.float32,
)


def assert_bit_exact(data: bytes, inputs: list[np.ndarray], indices: list[int]) -> None:
    """Tensors ``indices`` after refsim's run equal TFLM's (tests/tflite/oracle.py's spawned
    wheel) bit for bit: signed zeros and infinities exactly; a NaN as a NaN, since its sign and
    payload follow the host FPU's NaN rules (x86 makes 0xffc00000, a Cortex-M 0x7fc00000) and
    LLVM may swap a commutative operation's operands (oracle.assert_matches_tflm compares NaN
    bits too, which IEEE special values in the inputs would trip)."""
    method = Program.load(data).method("forward")
    method.execute(list(inputs))
    theirs, _ = tflm_run(data, inputs, indices)
    for i in indices:
        a, b = method.values[i].logical, theirs[i]
        assert a.shape == b.shape, f"tensor {i}: shape {a.shape}, TFLM {b.shape}"
        a_bits, b_bits = a.view(np.uint32).reshape(-1), b.view(np.uint32).reshape(-1)
        both_nan = (np.isnan(a) & np.isnan(b)).reshape(-1)
        diff = np.flatnonzero((a_bits != b_bits) & ~both_nan)
        if diff.size:
            k = int(diff[0])
            pytest.fail(
                f"tensor {i}: {diff.size} of {a.size} values differ from TFLM's bits; first at flat {k}: "
                f"refsim {a.reshape(-1)[k]!r} ({a_bits[k]:#010x}), TFLM {b.reshape(-1)[k]!r} ({b_bits[k]:#010x})"
            )


def assert_bit_exact_any(data: bytes, inputs: list[np.ndarray], indices: list[int]) -> None:
    """`assert_bit_exact` for float32 tensors; integer tensors compared exactly."""
    method = Program.load(data).method("forward")
    method.execute(list(inputs))
    theirs, _ = tflm_run(data, inputs, indices)
    floats_only = [i for i in indices if method.values[i].dtype == np.float32]
    for i in indices:
        if i not in floats_only:
            np.testing.assert_array_equal(method.values[i].logical, theirs[i], err_msg=f"tensor {i}")
    assert_bit_exact(data, inputs, floats_only)


@st.composite
def floats(draw, shape: tuple[int, ...], specials: bool = False) -> np.ndarray:
    """Float32 data of mixed magnitudes (so that the summation order shows in the last bits),
    with a few IEEE special values when ``specials``."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    scale = 10.0 ** rng.integers(-3, 4, size=shape)
    x = (rng.standard_normal(shape) * scale).astype(np.float32)
    if specials and x.size and draw(st.booleans()):
        k = rng.integers(0, x.size, size=max(1, x.size // 8))
        x.reshape(-1)[k] = rng.choice(SPECIALS, size=k.size)
    return x


def _run(b: ModelBuilder, inputs: list[int], outputs: list[int], data: list[np.ndarray]) -> None:
    model = write_model(b.build(inputs=inputs, outputs=outputs))
    assert_bit_exact(model, data, outputs)


def _out_size(padding: Padding, size: int, k: int, stride: int, dilation: int) -> int:
    eff = (k - 1) * dilation + 1
    return (size + stride - 1) // stride if padding == Padding.SAME else (size + stride - eff) // stride


# --- conv, depthwise, fully connected ------------------------------------------------------------


@given(data=st.data())
def test_conv_2d(data):
    n = data.draw(st.integers(1, 2))
    h, w = data.draw(st.integers(1, 8)), data.draw(st.integers(1, 8))
    groups = data.draw(st.sampled_from([1, 1, 2]))
    fin = data.draw(st.integers(1, 4))
    cout = groups * data.draw(st.integers(1, 3))
    kh, kw = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    sh, sw = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    dh, dw = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))
    padding = data.draw(st.sampled_from([Padding.SAME, Padding.VALID]))
    oh, ow = _out_size(padding, h, kh, sh, dh), _out_size(padding, w, kw, sw, dw)
    assume(oh > 0 and ow > 0)
    with_bias = data.draw(st.booleans())
    b = ModelBuilder()
    x = b.tensor([n, h, w, groups * fin], F32)
    wt = b.tensor([cout, kh, kw, fin], F32, data=data.draw(floats((cout, kh, kw, fin))))
    bias = b.tensor([cout], F32, data=data.draw(floats((cout,)))) if with_bias else -1
    y = b.tensor([n, oh, ow, cout], F32)
    b.op(
        B.CONV_2D, [x, wt, bias] if with_bias else [x, wt], [y], padding=padding, stride_h=sh, stride_w=sw,
        dilation_h_factor=dh, dilation_w_factor=dw, fused_activation_function=data.draw(ACTIVATIONS),
    )  # fmt: skip
    _run(b, [x], [y], [data.draw(floats((n, h, w, groups * fin), specials=True))])


@given(data=st.data())
def test_depthwise_conv_2d(data):
    n = data.draw(st.integers(1, 2))
    h, w = data.draw(st.integers(1, 8)), data.draw(st.integers(1, 8))
    c, mult = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 3))
    kh, kw = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    sh, sw = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    dh, dw = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))
    padding = data.draw(st.sampled_from([Padding.SAME, Padding.VALID]))
    oh, ow = _out_size(padding, h, kh, sh, dh), _out_size(padding, w, kw, sw, dw)
    assume(oh > 0 and ow > 0)
    b = ModelBuilder()
    x = b.tensor([n, h, w, c], F32)
    wt = b.tensor([1, kh, kw, c * mult], F32, data=data.draw(floats((1, kh, kw, c * mult))))
    bias = b.tensor([c * mult], F32, data=data.draw(floats((c * mult,))))
    y = b.tensor([n, oh, ow, c * mult], F32)
    b.op(
        B.DEPTHWISE_CONV_2D, [x, wt, bias], [y], padding=padding, stride_h=sh, stride_w=sw, depth_multiplier=mult,
        dilation_h_factor=dh, dilation_w_factor=dw, fused_activation_function=data.draw(ACTIVATIONS),
    )  # fmt: skip
    _run(b, [x], [y], [data.draw(floats((n, h, w, c), specials=True))])


@given(data=st.data())
def test_fully_connected(data):
    batches, accum, depth = (
        data.draw(st.integers(1, 3)),
        data.draw(st.integers(1, 64)),
        data.draw(st.integers(1, 8)),
    )
    with_bias = data.draw(st.booleans())
    b = ModelBuilder()
    x = b.tensor([batches, accum], F32)
    wt = b.tensor([depth, accum], F32, data=data.draw(floats((depth, accum))))
    inputs = [x, wt]
    if with_bias:
        inputs.append(b.tensor([depth], F32, data=data.draw(floats((depth,)))))
    y = b.tensor([batches, depth], F32)
    b.op(B.FULLY_CONNECTED, inputs, [y], fused_activation_function=data.draw(ACTIVATIONS))
    _run(b, [x], [y], [data.draw(floats((batches, accum), specials=True))])


# --- pooling, elementwise ------------------------------------------------------------------------


@pytest.mark.parametrize("code", [B.AVERAGE_POOL_2D, B.MAX_POOL_2D], ids=lambda c: c.name)
@given(data=st.data())
def test_pool(code, data):
    n, h, w, c = (data.draw(st.integers(1, k)) for k in (2, 9, 9, 4))
    fh, fw = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    sh, sw = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    padding = data.draw(st.sampled_from([Padding.SAME, Padding.VALID]))
    oh, ow = _out_size(padding, h, fh, sh, 1), _out_size(padding, w, fw, sw, 1)
    assume(oh > 0 and ow > 0)
    b = ModelBuilder()
    x = b.tensor([n, h, w, c], F32)
    y = b.tensor([n, oh, ow, c], F32)
    b.op(
        code, [x], [y], padding=padding, stride_h=sh, stride_w=sw, filter_height=fh, filter_width=fw,
        fused_activation_function=data.draw(ACTIVATIONS),
    )  # fmt: skip
    _run(b, [x], [y], [data.draw(floats((n, h, w, c), specials=True))])


@st.composite
def broadcast_pair(draw) -> tuple[tuple[int, ...], tuple[int, ...]]:
    rank = draw(st.integers(0, 5))
    out = [draw(st.integers(1, 4)) for _ in range(rank)]
    a = [d if draw(st.booleans()) else 1 for d in out]
    bb = [d if draw(st.booleans()) else 1 for d in out]
    a = a[draw(st.integers(0, rank)) :]
    bb = bb[draw(st.integers(0, rank)) :]
    return tuple(a), tuple(bb)


@pytest.mark.parametrize("code", [B.ADD, B.MUL], ids=lambda c: c.name)
@given(data=st.data())
def test_add_mul_broadcast(code, data):
    sa, sb = data.draw(broadcast_pair())
    out = tuple(np.broadcast_shapes(sa, sb))
    b = ModelBuilder()
    x1, x2 = b.tensor(sa, F32), b.tensor(sb, F32)
    y = b.tensor(out, F32)
    b.op(code, [x1, x2], [y], fused_activation_function=data.draw(ACTIVATIONS))
    _run(b, [x1, x2], [y], [data.draw(floats(sa, specials=True)), data.draw(floats(sb, specials=True))])


# --- activations, softmax, mean ------------------------------------------------------------------


@pytest.mark.parametrize("code", [B.RELU, B.RELU6, B.LOGISTIC, B.TANH, B.HARD_SWISH], ids=lambda c: c.name)
@given(data=st.data())
def test_unary(code, data):
    shape = tuple(data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=4)))
    b = ModelBuilder()
    x, y = b.tensor(shape, F32), b.tensor(shape, F32)
    b.op(code, [x], [y])
    _run(b, [x], [y], [data.draw(floats(shape, specials=True))])


def test_unary_over_a_sweep():
    """Every activation over a dense sweep of float32 around its interesting range (the
    logistic cut-offs, tanh's saturation, hard-swish's knees) plus the special values."""
    sweep = np.concatenate([np.linspace(-20, 20, 20001, dtype=np.float32), SPECIALS])
    sweep = np.concatenate(
        [sweep, np.nextafter(sweep, np.float32(np.inf)), np.nextafter(sweep, np.float32(-np.inf))]
    )
    for code in (B.RELU, B.RELU6, B.LOGISTIC, B.TANH, B.HARD_SWISH):
        b = ModelBuilder()
        x, y = b.tensor(sweep.shape, F32), b.tensor(sweep.shape, F32)
        b.op(code, [x], [y])
        _run(b, [x], [y], [sweep])


@given(data=st.data())
def test_softmax(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 12), min_size=1, max_size=3)))
    beta = data.draw(st.sampled_from([1.0, 0.5, 2.0, 0.1, 1.7]))
    b = ModelBuilder()
    x, y = b.tensor(shape, F32), b.tensor(shape, F32)
    b.op(B.SOFTMAX, [x], [y], beta=beta)
    _run(b, [x], [y], [data.draw(floats(shape))])


@given(data=st.data())
def test_mean(data):
    rank = data.draw(st.integers(1, 4))
    shape = tuple(data.draw(st.integers(1, 6)) for _ in range(rank))
    if rank == 4 and data.draw(st.booleans()):
        axes = data.draw(st.sampled_from([[1, 2], [2, 1]]))  # TFLM's 4-D special case
        keep = True
    else:
        axes = data.draw(st.lists(st.integers(-rank, rank - 1), min_size=1, max_size=min(rank, 4)))
        keep = data.draw(st.booleans())
    resolved = sorted({a % rank for a in axes})
    out = (
        tuple(1 if d in resolved else s for d, s in enumerate(shape))
        if keep
        else tuple(s for d, s in enumerate(shape) if d not in resolved)
    )
    b = ModelBuilder()
    x = b.tensor(shape, F32)
    ax = b.tensor([len(axes)], T.INT32, data=np.array(axes, np.int32))
    y = b.tensor(out, F32)
    b.op(B.MEAN, [x, ax], [y], keep_dims=keep)
    _run(b, [x], [y], [data.draw(floats(shape, specials=True))])


# --- data movement -------------------------------------------------------------------------------


@given(data=st.data())
def test_pad(data):
    rank = data.draw(st.integers(1, 4))
    shape = tuple(data.draw(st.integers(1, 5)) for _ in range(rank))
    pads = np.array([[data.draw(st.integers(0, 3)) for _ in range(2)] for _ in range(rank)], np.int32)
    out = tuple(int(s + p.sum()) for s, p in zip(shape, pads, strict=True))
    b = ModelBuilder()
    x = b.tensor(shape, F32)
    p = b.tensor([rank, 2], T.INT32, data=pads)
    y = b.tensor(out, F32)
    b.op(B.PAD, [x, p], [y])
    _run(b, [x], [y], [data.draw(floats(shape, specials=True))])


@given(data=st.data())
def test_transpose(data):
    rank = data.draw(st.integers(1, 5))
    shape = tuple(data.draw(st.integers(1, 4)) for _ in range(rank))
    perm = data.draw(st.permutations(range(rank)))
    b = ModelBuilder()
    x = b.tensor(shape, F32)
    p = b.tensor([rank], T.INT32, data=np.array(perm, np.int32))
    y = b.tensor([shape[k] for k in perm], F32)
    b.op(B.TRANSPOSE, [x, p], [y])
    _run(b, [x], [y], [data.draw(floats(shape, specials=True))])


@given(data=st.data())
def test_concatenation(data):
    rank = data.draw(st.integers(1, 4))
    base = [data.draw(st.integers(1, 4)) for _ in range(rank)]
    axis = data.draw(st.integers(-rank, rank - 1))
    count = data.draw(st.integers(1, 4))
    shapes = []
    for _ in range(count):
        s = list(base)
        s[axis] = data.draw(st.integers(1, 3))
        shapes.append(tuple(s))
    out = list(base)
    out[axis] = sum(s[axis] for s in shapes)
    b = ModelBuilder()
    xs = [b.tensor(s, F32) for s in shapes]
    y = b.tensor(out, F32)
    b.op(B.CONCATENATION, xs, [y], axis=axis)
    _run(b, xs, [y], [data.draw(floats(s, specials=True)) for s in shapes])


def _strided_slice_model(shape, begin, end, strides, masks) -> tuple[bytes, int, int]:
    from refsim.tflite.lower_float import _prepare_output_shape

    out = _prepare_output_shape(shape, begin, end, strides, **masks)
    b = ModelBuilder()
    x = b.tensor(shape, F32)
    idx = [b.tensor([len(shape)], T.INT32, data=np.array(v, np.int32)) for v in (begin, end, strides)]
    y = b.tensor(out, F32)
    b.op(B.STRIDED_SLICE, [x, *idx], [y], **masks)
    return write_model(b.build(inputs=[x], outputs=[y])), x, y


@pytest.mark.parametrize(
    ("shape", "begin", "end", "strides", "masks"),
    [
        ((4, 6), (1, 0), (3, 6), (1, 2), {}),
        ((4, 6), (0, -1), (4, -7), (1, -1), {}),  # reverse the last axis
        ((2, 5, 3), (0, 1, 0), (0, 4, 0), (1, 1, 1), {"begin_mask": 0b101, "end_mask": 0b101}),
        ((1, 8, 8, 3), (0, 2, 0, 1), (1, 7, 8, 2), (1, 2, 3, 1), {"shrink_axis_mask": 0b1000}),
        ((3, 4), (-1, 0), (0, 4), (1, 1), {"shrink_axis_mask": 0b01}),
    ],
)
def test_strided_slice_cases(shape, begin, end, strides, masks):
    masks = {"begin_mask": 0, "end_mask": 0, "shrink_axis_mask": 0, **masks}
    model, _, y = _strided_slice_model(shape, list(begin), list(end), list(strides), masks)
    data = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    assert_bit_exact(model, [data], [y])


@given(data=st.data())
def test_strided_slice(data):
    from refsim.tflite.lower_float import _prepare_output_shape

    rank = data.draw(st.integers(1, 4))
    shape = tuple(data.draw(st.integers(1, 6)) for _ in range(rank))
    begin = [data.draw(st.integers(-7, 7)) for _ in range(rank)]
    end = [data.draw(st.integers(-7, 7)) for _ in range(rank)]
    strides = [data.draw(st.sampled_from([-3, -2, -1, 1, 2, 3])) for _ in range(rank)]
    masks = {k: data.draw(st.integers(0, 2**rank - 1)) for k in ("begin_mask", "end_mask")}
    masks["shrink_axis_mask"] = data.draw(st.integers(0, 2**rank - 1)) if data.draw(st.booleans()) else 0
    assume(0 not in _prepare_output_shape(shape, begin, end, strides, **masks))  # the wheel needs data
    model, _, y = _strided_slice_model(shape, begin, end, strides, masks)
    try:
        assert_bit_exact(model, [data.draw(floats(shape, specials=True))], [y])
        event("bit-exact")
    except UnsupportedError as exc:  # a shrunk axis with a negative stride: TFLM's Eval takes nothing
        assert "Eval would take" in str(exc)
        event("refused: Eval disagrees with Prepare")


# --- multi-op, refusals, the libm ----------------------------------------------------------------


def _small_float_network() -> tuple[bytes, list[int], int]:
    """conv -> depthwise -> avg pool -> mean -> FC -> softmax, with pad, hard-swish and an add on
    the way: (the model, its intermediate tensors, its output)."""
    rng = np.random.default_rng(7)
    b = ModelBuilder()

    def const(shape):
        return b.tensor(shape, F32, data=(rng.standard_normal(shape) * 0.5).astype(np.float32))

    x = b.tensor([1, 10, 10, 3], F32)
    p = b.tensor([4, 2], T.INT32, data=np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32))
    t0 = b.tensor([1, 12, 12, 3], F32)
    b.op(B.PAD, [x, p], [t0])
    t1 = b.tensor([1, 6, 6, 8], F32)
    b.op(B.CONV_2D, [t0, const([8, 3, 3, 3]), const([8])], [t1], padding=Padding.SAME, stride_h=2, stride_w=2,
         fused_activation_function=A.RELU6)  # fmt: skip
    t2 = b.tensor([1, 6, 6, 8], F32)
    b.op(B.DEPTHWISE_CONV_2D, [t1, const([1, 3, 3, 8]), const([8])], [t2], padding=Padding.SAME, stride_h=1,
         stride_w=1, depth_multiplier=1)  # fmt: skip
    t3 = b.tensor([1, 6, 6, 8], F32)
    b.op(B.HARD_SWISH, [t2], [t3])
    t4 = b.tensor([1, 6, 6, 8], F32)
    b.op(B.ADD, [t3, t1], [t4], fused_activation_function=A.RELU)
    t5 = b.tensor([1, 3, 3, 8], F32)
    b.op(B.AVERAGE_POOL_2D, [t4], [t5], padding=Padding.VALID, stride_h=2, stride_w=2, filter_height=2,
         filter_width=2)  # fmt: skip
    ax = b.tensor([2], T.INT32, data=np.array([1, 2], np.int32))
    t6 = b.tensor([1, 8], F32)
    b.op(B.MEAN, [t5, ax], [t6], keep_dims=False)
    t7 = b.tensor([1, 5], F32)
    b.op(B.FULLY_CONNECTED, [t6, const([5, 8]), const([5])], [t7])
    y = b.tensor([1, 5], F32)
    b.op(B.SOFTMAX, [t7], [y], beta=1.0)
    return write_model(b.build(inputs=[x], outputs=[y])), [t0, t1, t2, t3, t4, t5, t6, t7], y


def test_small_float_network_every_tensor():
    """Every intermediate tensor of a nine-op float network against the wheel's."""
    model, inner, y = _small_float_network()
    data = np.random.default_rng(7).standard_normal((1, 10, 10, 3)).astype(np.float32)
    assert_bit_exact(model, [data], [*inner, y])


MUTATION_VALUES = [-7, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 8, 13, 100, 2**31 - 1, -(2**31)]


@given(
    st.lists(
        st.tuples(st.sampled_from(["shape", "option", "input", "rank"]), st.integers(0, 1000),
                  st.sampled_from(MUTATION_VALUES)),
        min_size=1, max_size=3,
    )
)  # fmt: skip
def test_mutated_float_network_runs_or_is_one_refsim_error(changes):
    """Shapes, options, operator inputs and ranks of the float network set to boundary values:
    the model loads, lowers and runs, or one RefsimError says why - never another exception."""
    from dataclasses import replace

    from refsim.errors import RefsimError

    model = load_model(_small_float_network()[0]).model
    for what, k, value in changes:
        g = model.subgraphs[0]
        tensors, ops = list(g.tensors), list(g.operators)
        t, op = tensors[k % len(tensors)], ops[k % len(ops)]
        if what == "shape" and t.shape:
            shape = list(t.shape)
            shape[k % len(shape)] = value % 16 if value >= 0 else value
            tensors[k % len(tensors)] = replace(t, shape=tuple(shape))
        elif what == "rank" and t.shape:
            shape = list(t.shape)
            shape = [*shape, 1] if value % 2 else shape[:-1]
            tensors[k % len(tensors)] = replace(t, shape=tuple(shape))
        elif what == "option" and op.builtin_options:
            key = sorted(op.builtin_options)[k % len(op.builtin_options)]
            old = op.builtin_options[key]
            new = (not old) if isinstance(old, bool) else value
            if isinstance(old, float):
                new = float(value)
            ops[k % len(ops)] = replace(op, builtin_options={**op.builtin_options, key: new})
        elif what == "input":
            ins = list(op.inputs)
            ins[k % len(ins)] = value % (len(tensors) + 1) - 1
            ops[k % len(ops)] = replace(op, inputs=tuple(ins))
        model = replace(model, subgraphs=(replace(g, tensors=tuple(tensors), operators=tuple(ops)),))
    try:
        data = write_model(model, validate=False)
    except (ValueError, OverflowError, TypeError, KeyError, struct_error):
        event("not writable")  # a value the writer cannot encode in that field: nothing to read
        return
    try:
        graph = load_model(data).model.subgraphs[0]
        Program.load(data).method("forward").execute(
            [np.ones(graph.tensors[i].shape, np.float32) for i in graph.inputs]
        )
        event("ran")
    except RefsimError as exc:
        assert "\n" not in str(exc)
        event(f"refused: {type(exc).__name__}")


@pytest.mark.parametrize(
    ("act", "message"), [(A.TANH, "fused activation TANH"), (A.SIGN_BIT, "fused activation SIGN_BIT")]
)
def test_unsupported_fused_activation_is_refused(act, message):

    b = ModelBuilder()
    x1, x2, y = b.tensor([4], F32), b.tensor([4], F32), b.tensor([4], F32)
    b.op(B.ADD, [x1, x2], [y], fused_activation_function=act)
    with pytest.raises(UnsupportedError, match=rf"operator 0 \(ADD\): {message}"):
        Program.load(write_model(b.build(inputs=[x1, x2], outputs=[y])))


def test_hybrid_filter_is_refused():

    b = ModelBuilder()
    x = b.tensor([1, 4], F32)
    w = b.tensor([2, 4], T.INT8, data=np.ones((2, 4), np.int8), scale=0.1)
    y = b.tensor([1, 2], F32)
    b.op(B.FULLY_CONNECTED, [x, w], [y])
    with pytest.raises(UnsupportedError, match=r"operator 0 \(FULLY_CONNECTED\): filter is int8.*hybrid"):
        Program.load(write_model(b.build(inputs=[x], outputs=[y])))


def test_libm_is_the_wheels():
    """The kernels' expf/tanhf are the host C library's (the ones the wheel's _runtime.so imports):
    numba's math.exp/math.tanh on float32 against ctypes calls to libm, over 200,000 inputs."""
    from kernels_py.tflm_float.activations import expf, tanh_f32

    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    for name in ("expf", "tanhf"):
        getattr(libm, name).restype = ctypes.c_float
        getattr(libm, name).argtypes = [ctypes.c_float]
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(-105, 90, 100_000), rng.standard_normal(100_000) * 4]).astype(np.float32)
    for ours, theirs in ((expf, libm.expf), (tanh_f32, libm.tanhf)):
        ref = np.array([theirs(float(v)) for v in x], np.float32)
        np.testing.assert_array_equal(ours(x).view(np.uint32), ref.view(np.uint32))


# --- the MLPerf Tiny float32 reference models ----------------------------------------------------

FLOAT_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tflite_float"
#: Paths inside a checkout of mlcommons/tiny (REFSIM_MLPERF_TINY) of the two larger float models.
TINY_FLOAT = {
    "ad01_fp32": "benchmark/training/anomaly_detection/trained_models/ad01_fp32.tflite",
    "vww_96_float": "benchmark/training/visual_wake_words/trained_models/vww_96_float.tflite",
}


def _float_model(name: str) -> bytes:
    if name in TINY_FLOAT:
        root = os.environ.get("REFSIM_MLPERF_TINY")
        if not root:
            pytest.skip(f"{name}: set REFSIM_MLPERF_TINY to a checkout of mlcommons/tiny")
        return (Path(root) / TINY_FLOAT[name]).read_bytes()
    return (FLOAT_FIXTURES / f"{name}.tflite").read_bytes()


@pytest.mark.parametrize("name", ["pretrainedResnet", *TINY_FLOAT])
def test_mlperf_tiny_float_models_every_tensor(name):
    """Every tensor an operator writes, bit for bit with the wheel, on a random input."""
    data = _float_model(name)
    graph = load_model(data).model.subgraphs[0]
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(graph.tensors[i].shape).astype(np.float32) for i in graph.inputs]
    written = sorted({o for op in graph.operators for o in op.outputs})
    assert_bit_exact(data, inputs, written)


def test_hybrid_mlperf_tiny_model_is_refused():
    """kws_ref_model_float32 has int8 weights on float activations; TFLM's Prepare refuses it
    ("Hybrid models are not supported on TFLite Micro"), and so does refsim, by name."""

    with pytest.raises(UnsupportedError, match=r"operator 0 \(CONV_2D\): filter is int8 .*hybrid"):
        Program.load((FLOAT_FIXTURES / "kws_ref_model_float32.tflite").read_bytes())


def test_fused_kernels_are_fmaf_in_tflms_order():
    """``fused=True`` (what an FPU core's VFMA computes; benchmarks/tflm_float_device.py holds it
    against TFLM under QEMU) is libm's ``fmaf`` applied in TFLM's loop order."""
    from kernels_py.tflm_float.conv import conv_2d_f32, depthwise_conv_2d_f32
    from kernels_py.tflm_float.fully_connected import fully_connected_f32

    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.fmaf.restype = ctypes.c_float
    libm.fmaf.argtypes = [ctypes.c_float] * 3

    def dot(xs, ws) -> np.float32:
        total = 0.0
        for a, b in zip(xs, ws, strict=True):
            total = libm.fmaf(float(a), float(b), total)
        return np.float32(total) + np.float32(0.0)

    rng = np.random.default_rng(5)
    x = (rng.standard_normal((1, 4, 4, 6)) * 10.0 ** rng.integers(-2, 3, (1, 4, 4, 6))).astype(np.float32)
    w = rng.standard_normal((3, 1, 1, 6)).astype(np.float32)
    none = (-3.4028235e38, 3.4028235e38)
    one = {"stride": (1, 1), "padding": (0, 0), "dilation": (1, 1), "activation": none}
    y = conv_2d_f32(x, w, None, (1, 4, 4, 3), fused=True, **one)
    expected = [[dot(x[0, i, j], w[o, 0, 0]) for o in range(3)] for i in range(4) for j in range(4)]
    np.testing.assert_array_equal(
        y.reshape(16, 3).view(np.uint32), np.array(expected, np.float32).view(np.uint32)
    )
    fc = fully_connected_f32(x.reshape(16, 6), w.reshape(3, 6), None, 16, activation=none, fused=True)
    np.testing.assert_array_equal(fc.view(np.uint32), y.reshape(16, 3).view(np.uint32))
    dw = rng.standard_normal((1, 2, 2, 6)).astype(np.float32)
    yd = depthwise_conv_2d_f32(x, dw, None, (1, 3, 3, 6), depth_multiplier=1, fused=True, **one)
    for c in range(6):
        taps = [(ky, kx) for ky in range(2) for kx in range(2)]
        want = dot([x[0, 1 + ky, 2 + kx, c] for ky, kx in taps], [dw[0, ky, kx, c] for ky, kx in taps])
        assert yd[0, 1, 2, c].view(np.uint32) == want.view(np.uint32)
    unfused = conv_2d_f32(x, w, None, (1, 4, 4, 3), **one)
    assert (unfused.view(np.uint32) != y.view(np.uint32)).any(), "the fused sums must differ somewhere here"


def test_a_shrunk_axis_with_a_negative_stride_is_refused_as_tflm_leaves_it_unwritten():
    """``x[1, :]`` written as begin 1, stride -1, shrink axis 0: TFLM's Prepare sizes a [4]
    output, its Eval loop (``index > start + 1``) takes no row, so the wheel's output is whatever
    its arena held (zeros in a fresh process, an earlier run's bytes in the reused oracle worker),
    never row 1. refsim refuses the operator rather than guess the arena's content."""
    masks = {"begin_mask": 0, "end_mask": 0, "shrink_axis_mask": 1}
    model, _, y = _strided_slice_model((3, 4), [1, 0], [0, 4], [-1, 1], masks)
    x = (np.arange(12, dtype=np.float32).reshape(3, 4) * 1.5 + 1000.25).astype(np.float32)
    theirs, _ = tflm_run(model, [x], [y])
    assert not np.isin(theirs[y], x).any(), f"TFLM wrote {theirs[y]} from the input {x}"
    with pytest.raises(UnsupportedError, match=r"operator 0 \(STRIDED_SLICE\): TFLM's Eval would take"):
        Program.load(model)


def test_mixed_float_and_int8_model_every_tensor():
    """float32 in, QUANTIZE to int8, int8 RELU6, DEQUANTIZE, then the float kernels (MUL by a
    constant, HARD_SWISH, SOFTMAX): the float and the int8 lowerings side by side, every tensor
    against the wheel's."""
    b = ModelBuilder()
    x = b.tensor([2, 16], F32)
    q = b.tensor([2, 16], T.INT8, scale=0.05, zero_point=-3)
    b.op(B.QUANTIZE, [x], [q])
    r = b.tensor([2, 16], T.INT8, scale=0.05, zero_point=-3)
    b.op(B.RELU6, [q], [r])
    d = b.tensor([2, 16], F32)
    b.op(B.DEQUANTIZE, [r], [d])
    k = b.tensor([16], F32, data=np.linspace(-2, 2, 16, dtype=np.float32))
    m = b.tensor([2, 16], F32)
    b.op(B.MUL, [d, k], [m])
    h = b.tensor([2, 16], F32)
    b.op(B.HARD_SWISH, [m], [h])
    y = b.tensor([2, 16], F32)
    b.op(B.SOFTMAX, [h], [y], beta=1.0)
    model = write_model(b.build(inputs=[x], outputs=[y]))
    data = (np.random.default_rng(11).standard_normal((2, 16)) * 4).astype(np.float32)
    assert_bit_exact_any(model, [data], [q, r, d, m, h, y])

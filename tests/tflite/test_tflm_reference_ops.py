"""The tflm:: op registrations (refsim/ops/tflm_reference.py): each op bound to tensors by hand,
validated (TFLM's Prepare), run, and compared with the tflite-micro wheel on the same model; and
the refusals and divergences the validators report."""

from __future__ import annotations

import numpy as np
import pytest

from refsim.ops.registry import Args, OpError, lookup
from refsim.pte import model as m
from refsim.runtime.tensor import TensorRef
from refsim.tflite import schema as s
from tests.tflite.tflm_wheel import T, requires_wheel, run_single_op

B = s.BuiltinOperator
I8, F32, I32 = s.TensorType.INT8, s.TensorType.FLOAT32, s.TensorType.INT32
SCALAR = {I8: m.ScalarType.INT8, F32: m.ScalarType.FLOAT32, I32: m.ScalarType.INT32}
rng = np.random.default_rng(15)


def ref(data: np.ndarray, dtype: m.ScalarType) -> TensorRef:
    meta = m.Tensor(dtype, tuple(data.shape), tuple(range(data.ndim)))
    return TensorRef(0, meta, np.ascontiguousarray(data))


def call(name: str, **values) -> tuple[Args, TensorRef]:
    """Bind ``values`` to the op's schema, validate and run it; returns the args and ``out``."""
    op = lookup(name)
    names = tuple(a.name for a in op.schema.args)
    args = Args(op.name, 0, names, [values[n] for n in names])
    op.validate(args)
    op.run(args)
    return args, values["out"]


def q_args(in_q, out_q) -> dict:
    return {
        "input_scale": in_q[0],
        "input_zero_point": in_q[1],
        "output_scale": out_q[0],
        "output_zero_point": out_q[1],
    }


def values(shape, dtype=I8):
    if dtype == F32:
        return rng.normal(0, 20, shape).astype(np.float32)
    return rng.integers(-128, 128, shape, dtype=np.int8)


ELEMENTWISE = {
    # name: (builtin, input type, output type, input quant, output quant)
    "quantize_requant": ("tflm::quantize", B.QUANTIZE, I8, I8, (0.05, 3), (0.11, -7)),
    "quantize_float": ("tflm::quantize", B.QUANTIZE, F32, I8, (1.0, 0), (0.3, 11)),
    "relu": ("tflm::relu", B.RELU, I8, I8, (0.05, -10), (0.03, -128)),
    "relu6": ("tflm::relu6", B.RELU6, I8, I8, (0.04, -20), (0.04, -20)),
    "logistic": ("tflm::logistic", B.LOGISTIC, I8, I8, (0.07, 5), (1 / 256, -128)),
    "tanh": ("tflm::tanh", B.TANH, I8, I8, (0.02, -1), (1 / 128, 0)),
    "hard_swish": ("tflm::hard_swish", B.HARD_SWISH, I8, I8, (0.05, -3), (0.04, -50)),
}


@requires_wheel
@pytest.mark.parametrize("case", ELEMENTWISE, ids=str)
def test_elementwise_op_matches_the_wheel(case):
    name, code, tin, tout, in_q, out_q = ELEMENTWISE[case]
    shape = (2, 5, 7)
    x = values(shape, tin)
    t_in = T(shape, tin, *(in_q if tin == I8 else (None, 0)))
    expected = run_single_op(code, [t_in], [T(shape, tout, *out_q)], [x])[0]
    _, out = call(
        name,
        input=ref(x, SCALAR[tin]),
        out=ref(np.zeros(shape, np.int8), SCALAR[tout]),
        **q_args(in_q, out_q),
    )
    np.testing.assert_array_equal(out.storage, expected)


@requires_wheel
def test_dequantize_matches_the_wheel():
    x = values((3, 4))
    expected = run_single_op(B.DEQUANTIZE, [T((3, 4), I8, 0.013, -4)], [T((3, 4), F32)], [x])[0]
    _, out = call(
        "tflm::dequantize",
        input=ref(x, m.ScalarType.INT8),
        input_scale=0.013,
        input_zero_point=-4,
        out=ref(np.zeros((3, 4), np.float32), m.ScalarType.FLOAT32),
    )
    np.testing.assert_array_equal(out.storage.view(np.int32), expected.view(np.int32))


@requires_wheel
@pytest.mark.parametrize(
    "axis,keep", [([1, 2], True), ([1, 2], False), ([-1], False), ([0, 3, 0], True), ([], True)]
)
def test_mean_matches_the_wheel(axis, keep):
    shape = (2, 5, 6, 8)
    x = values(shape)
    out_shape = tuple(1 if (d in [a % 4 for a in axis]) else n for d, n in enumerate(shape)) if keep else None
    if not keep:
        out_shape = tuple(n for d, n in enumerate(shape) if d not in [a % 4 for a in axis])
    in_q, out_q = (0.02, -3), (0.015, 9)
    expected = run_single_op(
        B.MEAN,
        [T(shape, I8, *in_q), T((len(axis),), I32, data=np.array(axis, np.int32))],
        [T(out_shape, I8, *out_q)],
        [x],
        keep_dims=keep,
    )[0]
    _, out = call(
        "tflm::mean",
        input=ref(x, m.ScalarType.INT8),
        axis=tuple(axis),
        keep_dims=keep,
        out=ref(np.zeros(out_shape, np.int8), m.ScalarType.INT8),
        **q_args(in_q, out_q),
    )
    np.testing.assert_array_equal(out.storage, expected)


@requires_wheel
@pytest.mark.parametrize("dtype", [I8, F32])
def test_strided_slice_squeeze_concatenation_match_the_wheel(dtype):
    x = values((3, 6, 5), dtype)
    begin, end, strides = (0, -1, 4), (3, 0, 0), (2, -2, -1)
    q = (0.5, 1) if dtype == I8 else (None, 0)
    consts = [T((3,), I32, data=np.array(v, np.int32)) for v in (begin, end, strides)]
    out_shape = (2, 3, 4)
    expected = run_single_op(
        B.STRIDED_SLICE, [T(x.shape, dtype, *q), *consts], [T(out_shape, dtype, *q)], [x]
    )[0]
    _, out = call(
        "tflm::strided_slice",
        input=ref(x, SCALAR[dtype]),
        begin=begin,
        end=end,
        strides=strides,
        begin_mask=0,
        end_mask=0,
        ellipsis_mask=0,
        new_axis_mask=0,
        shrink_axis_mask=0,
        offset=False,
        out=ref(np.zeros(out_shape, x.dtype), SCALAR[dtype]),
    )
    np.testing.assert_array_equal(out.storage, expected)

    y = values((1, 4, 1, 3), dtype)
    _, out = call(
        "tflm::squeeze",
        input=ref(y, SCALAR[dtype]),
        squeeze_dims=(0,),
        out=ref(np.zeros((4, 1, 3), y.dtype), SCALAR[dtype]),
    )
    np.testing.assert_array_equal(out.storage, y.reshape(4, 1, 3))

    parts = [values((2, k, 3), dtype) for k in (1, 4, 2)]
    expected = run_single_op(
        B.CONCATENATION, [T(p.shape, dtype, *q) for p in parts], [T((2, 7, 3), dtype, *q)], parts, axis=-2
    )[0]
    _, out = call(
        "tflm::concatenation",
        inputs=tuple(ref(p, SCALAR[dtype]) for p in parts),
        axis=-2,
        out=ref(np.zeros((2, 7, 3), x.dtype), SCALAR[dtype]),
    )
    np.testing.assert_array_equal(out.storage, expected)


# --- refusals and divergences (no wheel needed) --------------------------------------------------------


def _bind(name: str, **values) -> Args:
    op = lookup(name)
    names = tuple(a.name for a in op.schema.args)
    return Args(op.name, 3, names, [values[n] for n in names])


def _i8(shape):
    return ref(np.zeros(shape, np.int8), m.ScalarType.INT8)


REFUSED = {
    "logistic zero point": ("tflm::logistic", {**q_args((0.1, 0), (1 / 256, 0))}, "output_zero_point"),
    "relu shift 31": ("tflm::relu", {**q_args((2.0**31, 0), (1.0, 0))}, "shift"),
    "requantize shift 31": ("tflm::quantize", {**q_args((2.0**31, 0), (1.0, 0))}, "shift"),
    "hard_swish output exponent": ("tflm::hard_swish", {**q_args((1000.0, 0), (0.01, 0))}, "Prepare fails"),
    "sigmoid input scale tiny": (
        "tflm::tanh",
        {**q_args((2.0**-30, 0), (1 / 128, 0))},
        "CalculateInputRadius",
    ),
    "zero point out of int8": ("tflm::relu", {**q_args((0.1, 200), (0.1, 0))}, "input_zero_point"),
    "scale zero": ("tflm::relu", {**q_args((0.0, 0), (0.1, 0))}, "input_scale"),
}


@pytest.mark.parametrize("case", REFUSED, ids=str)
def test_refused_at_load(case):
    name, kwargs, message = REFUSED[case]
    a = _bind(name, input=_i8((4,)), out=_i8((4,)), **kwargs)
    with pytest.raises(OpError, match=message) as info:
        lookup(name).validate(a)
    assert f"{name} (instruction 3)" in str(info.value)


def test_strided_slice_refusals_and_divergence():
    base = dict(
        begin=(1,), end=(0,), strides=(-1,), begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0
    )
    a = _bind("tflm::strided_slice", input=_i8((4,)), shrink_axis_mask=1, offset=False, out=_i8(()), **base)
    with pytest.raises(OpError, match="writes nothing"):
        lookup("tflm::strided_slice").validate(a)
    a = _bind(
        "tflm::strided_slice",
        input=_i8((4,)),
        shrink_axis_mask=0,
        offset=True,
        out=_i8((1,)),
        **{**base, "ellipsis_mask": 1},
    )
    lookup("tflm::strided_slice").validate(a)
    assert [d.arguments for d in a.divergences] == [("ellipsis_mask", "offset")]


def test_relu6_and_tanh_record_the_ignored_output_quantization():
    a = _bind("tflm::relu6", input=_i8((4,)), out=_i8((4,)), **q_args((0.1, 0), (0.2, 0)))
    lookup("tflm::relu6").validate(a)
    assert a.divergences and a.divergences[0].kind == "ignored_argument"
    a = _bind("tflm::tanh", input=_i8((4,)), out=_i8((4,)), **q_args((0.1, 0), (1 / 128, 0)))
    lookup("tflm::tanh").validate(a)
    assert not a.divergences


def test_concatenation_shape_checks():
    a = _bind("tflm::concatenation", inputs=(_i8((2, 3)), _i8((3, 3))), axis=1, out=_i8((2, 6)))
    with pytest.raises(OpError, match="off axis"):
        lookup("tflm::concatenation").validate(a)

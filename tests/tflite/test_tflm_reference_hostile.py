"""Hostile single-op models of the reference builtins: drawn shapes (empty and 0-d included),
types, quantization at and beyond the edges (denormal, huge, infinite, zero and negative scales,
zero points outside int8, none at all) and options. Loading and running each must work or be
one `RefsimError`; nothing else may escape (a traceback would reach the CLI)."""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import event, given
from hypothesis import strategies as st

from refsim.errors import RefsimError
from refsim.runtime.program import Program
from refsim.tflite import schema as s
from refsim.tflite.writer import ModelBuilder, write_model

B = s.BuiltinOperator
I8, F32, I32 = s.TensorType.INT8, s.TensorType.FLOAT32, s.TensorType.INT32
TYPES = [I8, I8, I8, F32, I32, s.TensorType.INT16, s.TensorType.UINT8, s.TensorType.BOOL]
CODES = [
    B.QUANTIZE, B.DEQUANTIZE, B.RELU, B.RELU6, B.LOGISTIC, B.TANH, B.HARD_SWISH,
    B.MEAN, B.STRIDED_SLICE, B.SQUEEZE, B.CONCATENATION,
]  # fmt: skip
shapes = st.lists(st.sampled_from([0, 1, 2, 3, 5]), max_size=5).map(tuple)
scales = st.sampled_from(
    [1e-40, 1e-10, 2.0**-30, 0.01, 1.0, 1e10, 3e38, float("inf"), 0.0, -1.0]
) | st.floats(0.001, 1.0)
zero_points = st.sampled_from([-300, -128, 0, 5, 127, 300]) | st.integers(-128, 127)


@st.composite
def tensor(draw, b: ModelBuilder, shape=None, dtype=None):
    shape = draw(shapes) if shape is None else shape
    dtype = draw(st.sampled_from(TYPES)) if dtype is None else dtype
    if draw(st.integers(0, 9)) == 0:
        return b.tensor(shape, dtype)
    return b.tensor(shape, dtype, scale=draw(scales), zero_point=draw(zero_points))


def _ints(draw, n: int, low: int, high: int) -> np.ndarray:
    return np.array(draw(st.lists(st.integers(low, high), min_size=n, max_size=n)), np.int32)


@given(st.data())
def test_hostile_reference_models_fail_cleanly(data):
    draw = data.draw
    b = ModelBuilder()
    code = draw(st.sampled_from(CODES))
    x = draw(tensor(b))
    xs, xt = b.tensors[x].shape, b.tensors[x].type
    inputs, options = [x], {}
    if code == B.MEAN:
        k = draw(st.integers(0, 3))
        inputs.append(b.tensor((k,), I32, data=_ints(draw, k, -6, 6)))
        options = {"keep_dims": draw(st.booleans())}
    elif code == B.STRIDED_SLICE:
        r = len(xs) if draw(st.booleans()) else draw(st.integers(0, 5))
        inputs += [b.tensor((r,), I32, data=_ints(draw, r, -7, 7)) for _ in range(3)]
        options = {
            k: draw(st.integers(0, 40))
            for k in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
        }
        options["offset"] = draw(st.booleans())
    elif code == B.SQUEEZE:
        options = {"squeeze_dims": draw(st.lists(st.integers(-6, 6), max_size=3))}
    elif code == B.CONCATENATION:
        inputs += [draw(tensor(b)) for _ in range(draw(st.integers(0, 11)))]
        options = {"axis": draw(st.integers(-6, 6))}
    same = draw(st.booleans())
    y = draw(tensor(b, xs if same else None, xt if same and draw(st.booleans()) else None))
    b.op(code, inputs, [y], **options)
    try:
        blob = write_model(b.build([x], [y]))
    except RefsimError:
        event("the writer refuses it")
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            method = Program.load(blob).method("forward")
            method.execute([np.zeros(xs, method.inputs[0].dtype)])
    except RefsimError:
        event("refused")
        return
    event("ran")

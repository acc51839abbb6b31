""".tflite models of TFLM's reference-kernel builtins through `Program.load` (the lowering in
refsim/tflite/lower_reference.py and the tflm:: ops) against the tflite-micro wheel, every tensor
(``GetTensor``) and not only the outputs; and the operators the lowering refuses, by name."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import event, given, note
from hypothesis import strategies as st

from kernels_py.tflm import reduce as rd
from kernels_py.tflm import slicing as sl
from refsim.errors import RefsimError, UnsupportedError
from refsim.runtime.program import Program
from refsim.tflite import schema as s
from refsim.tflite.writer import ModelBuilder, write_model
from tests.tflite.test_tflm_activations import scales, zero_points
from tests.tflite.test_tflm_reduce_slicing import _slice_params
from tests.tflite.tflm_wheel import NP_OF, T, build_single_op, requires_wheel, run_model

B = s.BuiltinOperator
I8, F32, I32, I16 = s.TensorType.INT8, s.TensorType.FLOAT32, s.TensorType.INT32, s.TensorType.INT16
rng = np.random.default_rng(2026)


def _random(shape, dtype):
    if dtype == F32:
        return rng.normal(0, 4, shape).astype(np.float32)
    if dtype == s.TensorType.BOOL:
        return rng.integers(0, 2, shape).astype(np.bool_)
    info = np.iinfo(NP_OF[dtype])
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(NP_OF[dtype])


def compare_every_tensor(data: bytes, inputs: list[np.ndarray], n_outputs: int = 1) -> int:
    """Run ``data`` in refsim and in the wheel; every non-constant tensor must hold the same
    bytes. Returns how many tensors were compared."""
    expected = run_model(data, inputs, n_outputs)
    program = Program.load(data)
    method = program.method("forward")
    outputs = method.execute(inputs)
    graph = program.file.file.model.subgraphs[0]
    compared = 0
    for i, t in enumerate(graph.tensors):
        value = method.values[i]
        if program.file.file.constant_data(t) is not None and i not in graph.inputs:
            continue
        mine = np.array(value.logical, order="C")  # (ascontiguousarray would make a 0-d tensor 1-d)
        theirs = expected.tensor(i)
        assert mine.shape == theirs.shape, (i, mine.shape, theirs.shape)
        np.testing.assert_array_equal(
            mine.reshape(-1).view(np.uint8),
            theirs.reshape(-1).view(np.uint8),
            err_msg=f"tensor {i} ({t.name})",
        )
        compared += 1
    for k, out in enumerate(outputs):
        np.testing.assert_array_equal(
            out.reshape(-1).view(np.uint8), expected.outputs[k].reshape(-1).view(np.uint8)
        )
    return compared


def _single(code, ins, outs, **options) -> tuple[bytes, list[np.ndarray]]:
    data, _, _ = build_single_op(code, ins, outs, **options)
    values = [_random(t.shape, t.dtype) for t in ins if t.data is None]
    return data, values


SINGLE = {
    "quantize f32->i8": (B.QUANTIZE, [T((2, 9), F32)], [T((2, 9), I8, 0.07, -5)], {}),
    "quantize i8->i8": (B.QUANTIZE, [T((3, 3, 4), I8, 0.02, 7)], [T((3, 3, 4), I8, 0.05, -100)], {}),
    "dequantize": (B.DEQUANTIZE, [T((1, 17), I8, 0.3, 4)], [T((1, 17), F32)], {}),
    "relu": (B.RELU, [T((1, 4, 4, 3), I8, 0.1, 2)], [T((1, 4, 4, 3), I8, 0.05, -128)], {}),
    "relu6": (B.RELU6, [T((5, 7), I8, 0.05, -3)], [T((5, 7), I8, 0.05, -3)], {}),
    "logistic": (B.LOGISTIC, [T((6, 6), I8, 0.09, 1)], [T((6, 6), I8, 1 / 256, -128)], {}),
    "tanh": (B.TANH, [T((6, 6), I8, 0.03, -2)], [T((6, 6), I8, 1 / 128, 0)], {}),
    "hard_swish": (B.HARD_SWISH, [T((1, 3, 3, 8), I8, 0.04, 9)], [T((1, 3, 3, 8), I8, 0.03, -60)], {}),
    "mean hw": (
        B.MEAN,
        [T((1, 5, 5, 16), I8, 0.05, -1), T((2,), I32, data=np.array([1, 2], np.int32))],
        [T((1, 1, 1, 16), I8, 0.02, 4)],
        {"keep_dims": True},
    ),
    "mean last": (
        B.MEAN,
        [T((3, 10), I8, 0.05, 3), T((1,), I32, data=np.array([-1], np.int32))],
        [T((3,), I8, 0.05, 3)],
        {},
    ),
    "strided slice": (
        B.STRIDED_SLICE,
        [
            T((2, 8, 6), I8, 0.5, 0),
            *(T((3,), I32, data=np.array(v, np.int32)) for v in ((1, 7, 0), (2, 0, 6), (1, -3, 2))),
        ],
        [T((3, 3), I8, 0.5, 0)],
        {"shrink_axis_mask": 1, "end_mask": 4},
    ),
    "squeeze": (B.SQUEEZE, [T((1, 4, 1, 2), I8, 0.1, 0)], [T((4, 2), I8, 0.1, 0)], {"squeeze_dims": [0, 2]}),
    "concatenation": (
        B.CONCATENATION,
        [T((2, 3), I8, 0.1, 1), T((2, 5), I8, 0.1, 1), T((2, 1), I8, 0.1, 1)],
        [T((2, 9), I8, 0.1, 1)],
        {"axis": 1},
    ),
    "concatenation int32": (B.CONCATENATION, [T((1, 2), I32), T((3, 2), I32)], [T((4, 2), I32)], {"axis": 0}),
    "strided slice int16": (
        B.STRIDED_SLICE,
        [T((9,), I16), *(T((1,), I32, data=np.array([v], np.int32)) for v in (-1, 0, -2))],
        [T((4,), I16)],
        {},
    ),
}


@requires_wheel
@pytest.mark.parametrize("case", SINGLE, ids=str)
def test_single_op_model(case):
    code, ins, outs, options = SINGLE[case]
    data, values = _single(code, ins, outs, **options)
    assert compare_every_tensor(data, values) >= 2


@requires_wheel
@given(st.data())
def test_drawn_activation_chain(data):
    """QUANTIZE -> (RELU | RELU6 | LOGISTIC | TANH | HARD_SWISH) x3 -> MEAN -> DEQUANTIZE, with
    drawn quantization; TFLM-refused or undefined parameters are drawn away by retrying."""
    shape = data.draw(st.sampled_from([(1, 4, 4, 3), (2, 6), (1, 3, 5, 2)]))
    b = ModelBuilder()
    x = b.tensor(shape, F32)
    q = (data.draw(scales(-10, 2)), data.draw(zero_points))
    h = b.tensor(shape, I8, scale=q[0], zero_point=q[1])
    b.op(B.QUANTIZE, [x], [h])
    for _ in range(3):
        code = data.draw(st.sampled_from([B.RELU, B.RELU6, B.LOGISTIC, B.TANH, B.HARD_SWISH, B.QUANTIZE]))
        if code == B.LOGISTIC:
            out_q = (1 / 256, -128)
        elif code == B.TANH:
            out_q = (1 / 128, 0)
        elif code == B.RELU6:
            out_q = q
        else:
            out_q = (data.draw(scales(-10, 2)), data.draw(zero_points))
        g = b.tensor(shape, I8, scale=out_q[0], zero_point=out_q[1])
        b.op(code, [h], [g])
        h, q = g, out_q
    axis = b.tensor((1,), I32, data=np.array([-1], np.int32))
    m_q = (data.draw(scales(-10, 2)), data.draw(zero_points))
    mean = b.tensor(shape[:-1], I8, scale=m_q[0], zero_point=m_q[1])
    b.op(B.MEAN, [h, axis], [mean])
    y = b.tensor(shape[:-1], F32)
    b.op(B.DEQUANTIZE, [mean], [y])
    blob = write_model(b.build([x], [y]))
    try:
        Program.load(blob).method("forward")  # lowered and validated (TFLM's Prepare)
    except RefsimError as exc:
        note(f"refused: {exc}")
        event("refused by refsim")
        return
    n = compare_every_tensor(blob, [(rng.normal(0, 3, shape)).astype(np.float32)])
    assert n == 7
    event("compared")


# --- refusals ------------------------------------------------------------------------------------------

REFUSED = {
    "int16 relu": (B.RELU, [T((4,), I16, 0.1, 0)], [T((4,), I16, 0.1, 0)], {}, "int16"),
    "int16 quantize output": (B.QUANTIZE, [T((4,), F32)], [T((4,), I16, 0.1, 0)], {}, "int16"),
    "uint8 dequantize": (B.DEQUANTIZE, [T((4,), s.TensorType.UINT8, 0.1, 0)], [T((4,), F32)], {}, "uint8"),
    "concat mixed quantization": (
        B.CONCATENATION,
        [T((1, 2), I8, 0.5, 0), T((1, 2), I8, 0.25, 0)],
        [T((1, 4), I8, 0.5, 0)],
        {"axis": 1},
        "quantized",
    ),
    "concat fused relu": (
        B.CONCATENATION,
        [T((1, 2), I8, 0.5, 0), T((1, 2), I8, 0.5, 0)],
        [T((1, 4), I8, 0.5, 0)],
        {"axis": 1, "fused_activation_function": s.ActivationFunctionType.RELU},
        "RELU",
    ),
    "mean variable axis": (
        B.MEAN,
        [T((2, 3), I8, 0.1, 0), T((1,), I32)],
        [T((2,), I8, 0.1, 0)],
        {},
        "constant",
    ),
    "logistic zero point": (B.LOGISTIC, [T((4,), I8, 0.1, 0)], [T((4,), I8, 1 / 256, 0)], {}, "-128"),
    "shrink negative stride": (
        B.STRIDED_SLICE,
        [T((4,), I8, 0.5, 0), *(T((1,), I32, data=np.array([v], np.int32)) for v in (1, 0, -1))],
        [T((), I8, 0.5, 0)],
        {"shrink_axis_mask": 1},
        "writes nothing",
    ),
}


@pytest.mark.parametrize("case", REFUSED, ids=str)
def test_refused_with_the_operator_named(case):
    code, ins, outs, options, message = REFUSED[case]
    data, _, _ = build_single_op(code, ins, outs, **options)
    with pytest.raises(RefsimError, match=message) as info:
        Program.load(data).method("forward")
    text = str(info.value)
    assert f"({code.name})" in text or "tflm::" in text, text
    if isinstance(info.value, UnsupportedError):
        assert text.startswith(f"operator 0 ({code.name})"), text


# --- through the CLI --------------------------------------------------------------------------------------


def _chain_model() -> tuple[bytes, np.ndarray]:
    """QUANTIZE -> HARD_SWISH -> STRIDED_SLICE -> CONCATENATION(with itself) -> SQUEEZE -> TANH ->
    MEAN -> DEQUANTIZE: every reference lowering in one model."""
    b = ModelBuilder()
    x = b.tensor((1, 6, 4), F32)
    q = b.tensor((1, 6, 4), I8, scale=0.05, zero_point=-3)
    b.op(B.QUANTIZE, [x], [q])
    hs = b.tensor((1, 6, 4), I8, scale=0.04, zero_point=-20)
    b.op(B.HARD_SWISH, [q], [hs])
    consts = [b.tensor((3,), I32, data=np.array(v, np.int32)) for v in ((0, 5, 0), (1, 0, 4), (1, -2, 1))]
    ss = b.tensor((1, 3, 4), I8, scale=0.04, zero_point=-20)
    b.op(B.STRIDED_SLICE, [hs, *consts], [ss])
    cat = b.tensor((1, 6, 4), I8, scale=0.04, zero_point=-20)
    b.op(B.CONCATENATION, [ss, ss], [cat], axis=1)
    sq = b.tensor((6, 4), I8, scale=0.04, zero_point=-20)
    b.op(B.SQUEEZE, [cat], [sq], squeeze_dims=[0])
    th = b.tensor((6, 4), I8, scale=1 / 128, zero_point=0)
    b.op(B.TANH, [sq], [th])
    axis = b.tensor((1,), I32, data=np.array([0], np.int32))
    mean = b.tensor((4,), I8, scale=0.01, zero_point=5)
    b.op(B.MEAN, [th, axis], [mean])
    y = b.tensor((4,), F32)
    b.op(B.DEQUANTIZE, [mean], [y])
    return write_model(b.build([x], [y])), rng.normal(0, 2, (1, 6, 4)).astype(np.float32)


@requires_wheel
def test_chain_of_every_reference_op():
    data, x = _chain_model()
    assert compare_every_tensor(data, [x]) == 9  # the non-constant tensors


@requires_wheel
def test_refsim_run_cli(tmp_path, capsys):
    from tests.cli_util import refsim

    data, x = _chain_model()
    model = tmp_path / "chain.tflite"
    model.write_bytes(data)
    np.savez(tmp_path / "in.npz", input0=x)
    code, _, err = refsim(
        capsys,
        "run",
        model,
        "--inputs",
        tmp_path / "in.npz",
        "--outputs",
        tmp_path / "out.npz",
        "--dump-tensors",
        tmp_path / "dump.npz",
    )
    assert code == 0, err
    expected = run_model(data, [x])
    np.testing.assert_array_equal(
        np.load(tmp_path / "out.npz")["output0"].view(np.int32), expected.outputs[0].view(np.int32)
    )
    dump = np.load(tmp_path / "dump.npz")
    assert len(dump.files) >= 8
    for key in dump.files:
        np.testing.assert_array_equal(
            dump[key].reshape(-1).view(np.uint8), expected.tensor(int(key)).reshape(-1).view(np.uint8)
        )


def test_refused_operator_is_one_cli_line(tmp_path, capsys):
    from tests.cli_util import assert_one_error_line, refsim

    data, _, _ = build_single_op(B.RELU, [T((4,), I16, 0.1, 0)], [T((4,), I16, 0.1, 0)])
    model = tmp_path / "relu16.tflite"
    model.write_bytes(data)
    assert_one_error_line(refsim(capsys, "run", model), "operator 0 (RELU)", "int16")


@requires_wheel
@pytest.mark.parametrize("option", ["ellipsis_mask", "new_axis_mask", "offset"])
def test_strided_slice_options_tflm_ignores(option):
    """TFLM's BuildStridedSliceParams drops ellipsis_mask, new_axis_mask and offset; the wheel and
    refsim both slice as if they were unset, and refsim records the divergence."""
    consts = [T((2,), I32, data=np.array(v, np.int32)) for v in ((1, 0), (3, 2), (1, 1))]
    value = True if option == "offset" else 1
    data, values = _single(
        B.STRIDED_SLICE, [T((4, 3), I8, 0.5, 0), *consts], [T((2, 2), I8, 0.5, 0)], **{option: value}
    )
    assert compare_every_tensor(data, values) == 2
    method = Program.load(data).method("forward")
    reasons = [str(d) for call in method.calls for d in call.args.divergences]
    assert any(option in r for r in reasons), reasons


@requires_wheel
@given(st.data())
def test_drawn_slicing_chain(data):
    """QUANTIZE -> STRIDED_SLICE -> CONCATENATION (with itself) -> MEAN -> DEQUANTIZE over drawn
    shapes, slices, axes and quantization, every tensor compared."""
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)))
    p = _slice_params(data, shape)
    sliced = sl.strided_slice_output_shape(p, shape)
    written = int(np.prod([len(r) for r in sl.strided_slice_ranges(p, shape)]))
    if written != int(np.prod(sliced)) or written == 0 or not sliced:
        event("slice refused (partial or empty)")
        return
    rank = len(sliced)
    cat_axis = data.draw(st.integers(-rank, rank - 1))
    cat_shape = list(sliced)
    cat_shape[cat_axis] *= 2
    axes = data.draw(st.lists(st.integers(-rank, rank - 1), min_size=1, max_size=3))
    keep = data.draw(st.booleans())
    resolved = rd.resolve_axis(rank, axes)
    mean_shape = rd.mean_shape(tuple(cat_shape), resolved, keep)
    q = (data.draw(scales(-8, 0)), data.draw(zero_points))
    mq = (data.draw(scales(-8, 0)), data.draw(zero_points))

    b = ModelBuilder()
    x = b.tensor(shape, F32)
    h = b.tensor(shape, I8, scale=q[0], zero_point=q[1])
    b.op(B.QUANTIZE, [x], [h])
    consts = [b.tensor((len(shape),), I32, data=np.array(v, np.int32)) for v in (p.begin, p.end, p.strides)]
    s1 = b.tensor(sliced, I8, scale=q[0], zero_point=q[1])
    b.op(
        B.STRIDED_SLICE,
        [h, *consts],
        [s1],
        begin_mask=p.begin_mask,
        end_mask=p.end_mask,
        shrink_axis_mask=p.shrink_axis_mask,
    )
    c = b.tensor(tuple(cat_shape), I8, scale=q[0], zero_point=q[1])
    b.op(B.CONCATENATION, [s1, s1], [c], axis=cat_axis)
    ax = b.tensor((len(axes),), I32, data=np.array(axes, np.int32))
    mn = b.tensor(mean_shape, I8, scale=mq[0], zero_point=mq[1])
    b.op(B.MEAN, [c, ax], [mn], keep_dims=keep)
    y = b.tensor(mean_shape, F32)
    b.op(B.DEQUANTIZE, [mn], [y])
    blob = write_model(b.build([x], [y]))
    note(f"{shape} {p} -> {sliced}, cat {cat_axis}, mean {axes} keep {keep}")
    try:
        Program.load(blob).method("forward")
    except RefsimError as exc:
        note(f"refused: {exc}")
        event("refused by refsim")
        return
    assert compare_every_tensor(blob, [rng.normal(0, 2, shape).astype(np.float32)]) == 6
    event("compared")

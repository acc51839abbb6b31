"""Portable ops a cortex_m program carries (layout conversion, views, cat, slice) and the
``quantized_decomposed`` quantize/dequantize kernels, op by op; and the quantized-portable
fixtures (XNNPACK-quantizer annotations, no delegate) bit-exact against the outputs
``executorch.runtime`` produced for them (stored in ``qp_*.io.npz`` by
make_elementwise_fixtures.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kernels_py import quantize
from refsim.ops.registry import OpError
from refsim.pte import ScalarType
from refsim.runtime import Program
from tests.runtime.test_cortex_m_elementwise import NHWC, ProgramBuilder, int8, run, to_nhwc

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pte"
I8, I32, F32, F64 = ScalarType.INT8, ScalarType.INT32, ScalarType.FLOAT32, ScalarType.FLOAT64


def _values(rng: np.random.Generator, dtype: ScalarType, shape) -> np.ndarray:
    if dtype in (F32, F64):
        return rng.standard_normal(shape).astype(dtype.numpy_dtype)
    info = np.iinfo(dtype.numpy_dtype)
    return rng.integers(max(info.min, -1000), min(info.max, 1000) + 1, shape).astype(dtype.numpy_dtype)


def _unary(op: str, in_dtype, in_shape, in_order, out_dtype, out_shape, out_order, *args):
    b = ProgramBuilder()
    x = b.input(in_dtype, in_shape, in_order)
    out = b.tensor(out_dtype, out_shape, out_order)
    b.call(op, x, *args, out=out)
    b.output(out)
    return b


# --- dim order conversions -----------------------------------------------------------------------

CLONE = "dim_order_ops::_clone_dim_order.out"
TO_COPY = "dim_order_ops::_to_dim_order_copy.out"


@pytest.mark.parametrize("dtype", [I8, I32, F32])
@pytest.mark.parametrize(("source", "target"), [(NHWC, (0, 1, 2, 3)), ((0, 1, 2, 3), NHWC)])
def test_clone_dim_order_converts_the_layout(dtype, source, target):
    rng = np.random.default_rng(20)
    shape = (2, 3, 4, 5)
    b = _unary(CLONE, dtype, shape, source, dtype, shape, target, False, list(target))
    x = _values(rng, dtype, shape)
    method = b.method()
    (got,) = method.execute([x])
    np.testing.assert_array_equal(got, x)
    out_bytes = method.outputs[0].storage
    np.testing.assert_array_equal(out_bytes, to_nhwc(x) if target == NHWC else x)


def test_clone_dim_order_without_dim_order_keeps_the_input_order():
    x = np.arange(24, dtype=np.int8).reshape(1, 2, 3, 4)
    (got,) = run(_unary(CLONE, I8, x.shape, NHWC, I8, x.shape, NHWC, False, None), x)
    np.testing.assert_array_equal(got, x)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(out_order=NHWC, dim_order=[0, 1, 2, 3]), r"out must be dim_order \[0, 1, 2, 3\]"),
        (dict(dim_order=[0, 3, 1, 2]), r"dim_order must be \[0, 1, 2, 3\] or channels-last"),
        (dict(non_blocking=True), r"non_blocking must be False"),
        (dict(out_dtype=I32), r"out must be int8 like self"),
        (dict(dim_order=None, out_order=NHWC), r"out must be dim_order \[0, 1, 2, 3\] like self"),
    ],
)
def test_clone_dim_order_validator(kwargs, message):
    shape = (1, 2, 3, 4)
    b = _unary(
        CLONE, I8, shape, None, kwargs.get("out_dtype", I8), shape, kwargs.get("out_order"),
        kwargs.get("non_blocking", False), kwargs.get("dim_order", [0, 1, 2, 3]),
    )  # fmt: skip
    with pytest.raises(OpError, match=message):
        b.method()


def test_to_dim_order_copy_casts_like_static_cast():
    x = np.array([[1.9, -1.9, 127.5], [-128.7, 0.4, -0.6]], np.float32)
    (got,) = run(_unary(TO_COPY, F32, x.shape, None, I8, x.shape, None, False, None), x)
    np.testing.assert_array_equal(got, [[1, -1, 127], [-128, 0, 0]])  # truncation toward zero
    y = np.array([[5, -7]], np.int8)
    (got,) = run(_unary(TO_COPY, I8, y.shape, None, F32, y.shape, None, False, [0, 1]), y)
    np.testing.assert_array_equal(got, y.astype(np.float32))


# --- memcpy views --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [I8, F32])
def test_view_copy(dtype):
    rng = np.random.default_rng(21)
    x = _values(rng, dtype, (3, 8))
    (got,) = run(_unary("aten::view_copy.out", dtype, (3, 8), None, dtype, (2, 12), None, [2, -1]), x)
    np.testing.assert_array_equal(got, x.reshape(2, 12))


@pytest.mark.parametrize(
    ("size", "out_shape", "order", "message"),
    [
        ([2, -1], (2, 12), NHWC, r"self/out must be all default or all channels-last"),
        ([-1, -1], (2, 12), None, r"size must be non-negative sizes with at most one -1"),
        ([2, 12, 1], (2, 12), None, r"size must be 2 entries"),
        ([3, 8], (2, 12), None, r"out must be sizes \[3, 8\]"),
    ],
)
def test_view_copy_validator(size, out_shape, order, message):
    in_shape = (1, 3, 2, 4) if order else (3, 8)
    b = _unary("aten::view_copy.out", I8, in_shape, order, I8, out_shape, None, size)
    with pytest.raises(OpError, match=message):
        b.method()


def test_view_copy_of_a_channels_last_tensor_is_refused():
    """op_view_copy.cpp: both default dim order (ExecuTorch's ET_KERNEL_CHECK)."""
    b = _unary("aten::view_copy.out", I8, (1, 2, 3, 4), NHWC, I8, (1, 2, 3, 4), NHWC, [1, 2, 3, 4])
    with pytest.raises(OpError, match="self must be the default dim order"):
        b.method()


def test_clone_squeeze_unsqueeze_copy_bytes():
    rng = np.random.default_rng(22)
    x = int8(rng, (1, 3, 1, 4))
    (got,) = run(_unary("aten::clone.out", I8, x.shape, None, I8, x.shape, None, None), x)
    np.testing.assert_array_equal(got, x)
    (got,) = run(_unary("aten::squeeze_copy.dims_out", I8, x.shape, None, I8, (3, 4), None, [0, -2]), x)
    np.testing.assert_array_equal(got, x.reshape(3, 4))
    (got,) = run(_unary("aten::squeeze_copy.dim_out", I8, x.shape, None, I8, (1, 3, 4), None, 2), x)
    np.testing.assert_array_equal(got, x.reshape(1, 3, 4))
    (got,) = run(
        _unary("aten::squeeze_copy.dim_out", I8, x.shape, None, I8, x.shape, None, 1), x
    )  # size 3 stays
    np.testing.assert_array_equal(got, x)
    (got,) = run(_unary("aten::unsqueeze_copy.out", I8, x.shape, None, I8, (1, 3, 1, 4, 1), None, -1), x)
    np.testing.assert_array_equal(got, x[..., None])


def test_view_like_validators():
    with pytest.raises(OpError, match=r"memory_format must be None or contiguous"):
        _unary("aten::clone.out", I8, (2,), None, I8, (2,), None, 2).method()
    with pytest.raises(OpError, match=r"dim must be distinct dims"):
        _unary("aten::squeeze_copy.dims_out", I8, (1, 2), None, I8, (2,), None, [0, -2]).method()
    with pytest.raises(OpError, match=r"dim must be in \[-3, 2\]"):
        _unary("aten::unsqueeze_copy.out", I8, (1, 2), None, I8, (1, 1, 2), None, 3).method()
    with pytest.raises(OpError, match=r"out must be float32 like self"):
        _unary("aten::squeeze_copy.dim_out", F32, (1, 2), None, I8, (2,), None, 0).method()


# --- permute, cat, slice -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [I8, F32, I32])
def test_permute_copy(dtype):
    rng = np.random.default_rng(23)
    x = _values(rng, dtype, (2, 3, 4))
    b = _unary("aten::permute_copy.out", dtype, x.shape, None, dtype, (4, 2, 3), None, [-1, 0, 1])
    (got,) = run(b, x)
    np.testing.assert_array_equal(got, x.transpose(2, 0, 1))


def test_permute_copy_reads_channels_last_bytes_as_contiguous():
    """op_permute_copy.cpp indexes both tensors with coordinateToIndex (row-major over the
    sizes), so channels-last bytes are permuted as if they were NCHW: refsim does the same."""
    rng = np.random.default_rng(24)
    x = int8(rng, (1, 2, 3, 4))
    b = _unary("aten::permute_copy.out", I8, x.shape, NHWC, I8, (1, 3, 4, 2), NHWC, [0, 2, 3, 1])
    method = b.method()
    (got,) = method.execute([x])
    raw_in = to_nhwc(x).reshape(x.shape)
    np.testing.assert_array_equal(
        method.outputs[0].storage.reshape(-1), raw_in.transpose(0, 2, 3, 1).reshape(-1)
    )
    assert not np.array_equal(got, x.transpose(0, 2, 3, 1))


def test_permute_copy_validator():
    with pytest.raises(OpError, match=r"dims must be no repeated dim"):
        _unary("aten::permute_copy.out", I8, (2, 3), None, I8, (2, 3), None, [0, -2]).method()
    with pytest.raises(OpError, match=r"out must be sizes \[3, 2\]"):
        _unary("aten::permute_copy.out", I8, (2, 3), None, I8, (2, 3), None, [1, 0]).method()
    with pytest.raises(OpError, match=r"self/out must be all default or all channels-last"):
        _unary(
            "aten::permute_copy.out", I8, (1, 2, 3, 4), NHWC, I8, (1, 2, 3, 4), None, [0, 1, 2, 3]
        ).method()


def _cat_program(shapes_dtypes, dim, out_shape, out_dtype, out_order=None):
    b = ProgramBuilder()
    xs = [b.input(dtype, shape) for shape, dtype in shapes_dtypes]
    out = b.tensor(out_dtype, out_shape, out_order)
    b.call("aten::cat.out", xs, dim, out=out)
    b.output(out)
    return b


def test_cat_same_and_mixed_dtypes():
    rng = np.random.default_rng(25)
    a, c = int8(rng, (2, 3, 4)), int8(rng, (2, 1, 4))
    (got,) = run(_cat_program([(a.shape, I8), (c.shape, I8)], 1, (2, 4, 4), I8), a, c)
    np.testing.assert_array_equal(got, np.concatenate([a, c], axis=1))
    d = rng.integers(-(2**20), 2**20, (2, 2, 4)).astype(np.int32)
    (got,) = run(_cat_program([(a.shape, I8), (d.shape, I32)], -2, (2, 5, 4), I32), a, d)
    np.testing.assert_array_equal(got, np.concatenate([a.astype(np.int32), d], axis=1))


def test_cat_validator():
    with pytest.raises(OpError, match=r"tensors\[1\] must be castable to int8"):
        _cat_program([((2, 2), I8), ((2, 2), F32)], 0, (4, 2), I8).method()
    with pytest.raises(OpError, match=r"must be the default dim order"):
        _cat_program([((1, 2, 2, 2), I8), ((1, 2, 2, 2), I8)], 1, (1, 4, 2, 2), I8, NHWC).method()
    with pytest.raises(OpError, match=r"tensors\[1\] must be sizes \[2, 3\] except along dim 0"):
        _cat_program([((2, 3), I8), ((2, 4), I8)], 0, (4, 3), I8).method()
    with pytest.raises(OpError, match=r"out must be sizes \[5, 3\]"):
        _cat_program([((2, 3), I8), ((3, 3), I8)], 0, (4, 3), I8).method()


@pytest.mark.parametrize(
    ("start", "end", "step"),
    [(1, 6, 2), (-3, None, 1), (None, 100, 3), (-100, -1, 2), (5, 2, 1)],
)
def test_slice_copy(start, end, step):
    rng = np.random.default_rng(26)
    x = int8(rng, (3, 8))
    expected = x[:, slice(start, end, step)]
    b = _unary(
        "aten::slice_copy.Tensor_out", I8, x.shape, None, I8, expected.shape, None, -1, start, end, step
    )
    (got,) = run(b, x)
    np.testing.assert_array_equal(got, expected)


def test_slice_copy_validator():
    with pytest.raises(OpError, match=r"step must be greater than zero"):
        _unary("aten::slice_copy.Tensor_out", I8, (4,), None, I8, (4,), None, 0, None, None, 0).method()
    with pytest.raises(OpError, match=r"out must be sizes \[2\]"):
        _unary("aten::slice_copy.Tensor_out", I8, (4,), None, I8, (3,), None, 0, 0, 4, 2).method()


# --- quantized_decomposed ------------------------------------------------------------------------

Q = "quantized_decomposed::quantize_per_tensor.out"
DQ = "quantized_decomposed::dequantize_per_tensor.out"
QC = "quantized_decomposed::quantize_per_channel.out"
DQC = "quantized_decomposed::dequantize_per_channel.out"


@pytest.mark.parametrize(
    ("in_dtype", "q_dtype", "qmin", "qmax"),
    [(F32, I8, -128, 127), (F64, ScalarType.UINT8, 0, 255), (F32, ScalarType.INT16, -32768, 32767)],
)
def test_quantize_dequantize_per_tensor(in_dtype, q_dtype, qmin, qmax):
    rng = np.random.default_rng(27)
    shape = (2, 3, 4)
    x = (rng.standard_normal(shape) * 3).astype(in_dtype.numpy_dtype)
    x.reshape(-1)[:3] = [np.nan, np.inf, 0.5 * 0.02]  # NaN/inf -> quant_min (x86-64 conversion); a tie
    b = ProgramBuilder()
    xi = b.input(in_dtype, shape)
    q = b.tensor(q_dtype, shape)
    y = b.tensor(F32, shape)
    b.call(Q, xi, 0.02, 3, qmin, qmax, int(q_dtype), out=q)
    b.call(DQ, q, 0.02, 3, qmin, qmax, int(q_dtype), None, out=y)
    b.output(q, y)
    got_q, got_y = run(b, x)
    expected_q = quantize.quantize_per_tensor_reference(x, 0.02, 3, qmin, qmax, q_dtype.numpy_dtype)
    np.testing.assert_array_equal(got_q, expected_q)
    np.testing.assert_array_equal(
        got_y, quantize.dequantize_per_tensor_reference(expected_q, 0.02, 3, qmin, qmax)
    )
    assert got_q.reshape(-1)[0] == qmin


@pytest.mark.parametrize("scale_dtype", [F32, F64])
@pytest.mark.parametrize("axis", [0, -1])
def test_quantize_dequantize_per_channel(scale_dtype, axis):
    rng = np.random.default_rng(28)
    shape = (4, 3, 5)
    channels = shape[axis]
    scales = (rng.random(channels) * 0.05 + 0.01).astype(scale_dtype.numpy_dtype)
    zps = rng.integers(-5, 6, channels).astype(np.int64)
    x = (rng.standard_normal(shape) * 2).astype(np.float32)
    b = ProgramBuilder()
    xi = b.input(F32, shape)
    s = b.constant(scales, scale_dtype)
    z = b.constant(zps, ScalarType.INT64)
    q = b.tensor(I8, shape)
    y = b.tensor(F32, shape)
    b.call(QC, xi, s, z, axis, -127, 127, int(I8), out=q)
    b.call(DQC, q, s, z, axis, -127, 127, int(I8), int(F32), out=y)
    b.output(q, y)
    got_q, got_y = run(b, x)
    expected_q = quantize.quantize_per_channel_reference(x, scales, zps, axis, -127, 127, np.int8)
    np.testing.assert_array_equal(got_q, expected_q)
    expected_y = quantize.dequantize_per_channel_reference(
        expected_q, scales, zps, axis, -127, 127, np.float32
    )
    np.testing.assert_array_equal(got_y, expected_y)


def test_quantized_decomposed_validators():
    with pytest.raises(OpError, match=r"out must be uint8 \(the dtype argument\)"):
        _unary(Q, F32, (4,), None, I8, (4,), None, 0.1, 0, 0, 255, int(ScalarType.UINT8)).method()
    with pytest.raises(OpError, match=r"quant_min must be in"):
        _unary(Q, F32, (4,), None, I8, (4,), None, 0.1, 0, -200, 127, int(I8)).method()
    with pytest.raises(OpError, match=r"dtype must be int8 \(input's dtype\)"):
        _unary(DQ, I8, (4,), None, F32, (4,), None, 0.1, 0, -128, 127, int(I32), None).method()
    with pytest.raises(OpError, match=r"out_dtype must be float32"):
        _unary(DQ, I8, (4,), None, F32, (4,), None, 0.1, 0, -128, 127, int(I8), int(F64)).method()
    b = ProgramBuilder()
    x = b.input(I8, (3, 2))
    s = b.constant(np.ones(2), F64)
    b.call(DQC, x, s, None, 0, -128, 127, int(I8), None, out=b.tensor(F32, (3, 2)))
    with pytest.raises(OpError, match=r"scales must be float32 or float64 with 3 elements"):
        b.method()


# --- quantized portable programs: bit-exact with executorch.runtime ------------------------------


@pytest.mark.parametrize("name", ["qp_linear", "qp_conv"])
def test_quantized_portable_fixture_is_bit_exact_with_executorch_runtime(name):
    program = Program.load(FIXTURES / f"{name}.pte")
    data = np.load(FIXTURES / f"{name}.io.npz")
    method = program.method("forward")
    got = method.execute([data[f"input{k}"] for k in range(len(method.inputs))])
    for k, g in enumerate(got):
        np.testing.assert_array_equal(g, data[f"reference{k}"], err_msg=f"{name} output{k}")

"""The fp32 portable ops (refsim/ops/portable_float/), op by op and on exported programs.

Three kinds of checks:

* ExecuTorch's own exports (tests/fixtures/pte/fp32/, written by make_fp32_fixtures.py with the
  real exporter and runtime) run in refsim and match what ``executorch.runtime`` returned: bit
  for bit where the runtime runs the portable kernel, within 1e-5 relative where it runs an
  optimized one (the ``exact`` flag saved with each case).
* One-op programs written with `ProgramBuilder`, compared (a) bit for bit with a slow oracle
  that transliterates the portable C++ loop with float32 scalars, which pins the accumulation
  order, and (b) with the plain float64 formula within 1e-5 relative.
* Validators: what the portable kernel would refuse, refsim refuses at load with an `OpError`
  naming the op and the argument.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from refsim.errors import RefsimError
from refsim.ops.registry import OpError
from refsim.pte import KernelCall, Operator, ScalarType, String
from refsim.runtime import Program
from tests.runtime.test_cortex_m_elementwise import ProgramBuilder, run

F32, I8, I64 = ScalarType.FLOAT32, ScalarType.INT8, ScalarType.INT64
f32 = np.float32
NHWC = (0, 2, 3, 1)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pte"
FP32_CASES = sorted(p.stem for p in (FIXTURES / "fp32").glob("*.pte"))

#: Load failures outside portable_float that ExecuTorch's own exports hit today: a test that
#: meets one is an xfail while it stands and runs normally once it is fixed.
KNOWN_GAPS = {
    "no extended header gives their base offset": (
        "refsim.pte's reader rejects the empty constant segment (segments=[{0, 0}], no extended "
        "header) that ExecuTorch writes for a program without constants"
    ),
    r"\(\+[2-9] return\)": (
        "refsim.runtime binds a multi-output KernelCall as n or n + n_out args; ExecuTorch emits "
        "n + 1 (one TensorList holding the outs)"
    ),
}


def load_method(source):
    """refsim's ``forward`` of ``source``; a known gap (above) becomes an xfail."""
    try:
        return Program.load(source).method("forward")
    except RefsimError as e:
        for pattern, reason in KNOWN_GAPS.items():
            if re.search(pattern, str(e)):
                pytest.xfail(reason)
        raise


def assert_close(actual: np.ndarray, expected: np.ndarray, rtol: float = 1e-5) -> None:
    """Within ``rtol`` relative, plus 1e-6 of the output's magnitude for values near zero."""
    scale = float(np.max(np.abs(expected), initial=0.0))
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=1e-6 * max(scale, 1e-3))


# --- ExecuTorch's exports ------------------------------------------------------------------------


def test_fp32_linear_fixture_matches_executorch():
    io = np.load(FIXTURES / "fp32_linear.io.npz")
    (out,) = load_method(FIXTURES / "fp32_linear.pte").execute([io["input0"]])
    np.testing.assert_allclose(out, io["output0"], rtol=1e-5, atol=0)


@pytest.mark.parametrize("name", FP32_CASES)
def test_exported_fp32_program_matches_executorch(name):
    io = np.load(FIXTURES / "fp32" / f"{name}.io.npz")
    n_in = sum(k.startswith("input") for k in io.files)
    n_out = sum(k.startswith("output") for k in io.files)
    outputs = load_method(FIXTURES / "fp32" / f"{name}.pte").execute([io[f"input{i}"] for i in range(n_in)])
    assert len(outputs) == n_out
    for i, actual in enumerate(outputs):
        expected = io[f"output{i}"]
        assert actual.shape == expected.shape and actual.dtype == expected.dtype
        if bool(io["exact"]):
            np.testing.assert_array_equal(actual, expected)
        else:
            assert_close(actual, expected)


# --- one-op programs -----------------------------------------------------------------------------


def call(b: ProgramBuilder, op: str, *args) -> None:
    """A KernelCall with exactly the schema's arguments, outs included (no return value)."""
    name, overload = op.rsplit(".", 1)
    operator = Operator(name, overload)
    if operator not in b.operators:
        b.operators.append(operator)
    indices = tuple(b._add(String(a)) if isinstance(a, str) else b.value(a) for a in args)
    b.instructions.append(KernelCall(b.operators.index(operator), indices))


def unary(op: str, x: np.ndarray, *scalars, dtype: ScalarType = F32, dim_order=None) -> np.ndarray:
    b = ProgramBuilder()
    t = b.input(dtype, x.shape, dim_order)
    out = b.tensor(dtype, x.shape, dim_order)
    call(b, op, t, *scalars, out)
    b.output(out)
    return run(b, x)[0]


def randn(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(f32)


# --- slow oracles: the portable loops with float32 scalars ---------------------------------------


def out_size(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool = False) -> int:
    numerator = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = numerator // s + 1
    return out - 1 if ceil_mode and (out - 1) * s >= size + p else out


def conv_oracle(x, w, bias, stride, padding, dilation, groups, dtype=f32):
    """op_convolution.cpp ``conv2d_impl``, non-transposed branch."""
    n, _, h, wd = x.shape
    cout, cg, kh, kw = w.shape
    og = cout // groups
    oh = out_size(h, kh, stride[0], padding[0], dilation[0])
    ow = out_size(wd, kw, stride[1], padding[1], dilation[1])
    out = np.zeros((n, cout, oh, ow), dtype)
    for b in range(n):
        for oc in range(cout):
            g = oc // og
            for oy in range(oh):
                for ox in range(ow):
                    acc = dtype(0)
                    for ic in range(cg):
                        for ky in range(kh):
                            iy = stride[0] * oy + dilation[0] * ky - padding[0]
                            if not 0 <= iy < h:
                                continue
                            for kx in range(kw):
                                ix = stride[1] * ox + dilation[1] * kx - padding[1]
                                if 0 <= ix < wd:
                                    acc = dtype(
                                        acc
                                        + dtype(dtype(x[b, g * cg + ic, iy, ix]) * dtype(w[oc, ic, ky, kx]))
                                    )
                    if bias is not None:
                        acc = dtype(acc + dtype(bias[oc]))
                    out[b, oc, oy, ox] = acc
    return out


def conv_transpose_oracle(x, w, bias, stride, padding, dilation, output_padding, groups, dtype=f32):
    """op_convolution.cpp, transposed branch: out starts at the bias, taps scattered in order."""
    n, cin, h, wd = x.shape
    _, og, kh, kw = w.shape
    cg = cin // groups
    oh = (h - 1) * stride[0] - 2 * padding[0] + dilation[0] * (kh - 1) + output_padding[0] + 1
    ow = (wd - 1) * stride[1] - 2 * padding[1] + dilation[1] * (kw - 1) + output_padding[1] + 1
    out = np.zeros((n, og * groups, oh, ow), dtype)
    if bias is not None:
        out[...] = np.asarray(bias, dtype)[None, :, None, None]
    for b in range(n):
        for g in range(groups):
            for oc in range(g * og, (g + 1) * og):
                for iy in range(h):
                    for ix in range(wd):
                        for ic in range(g * cg, (g + 1) * cg):
                            for ky in range(kh):
                                oy = stride[0] * iy + dilation[0] * ky - padding[0]
                                if not 0 <= oy < oh:
                                    continue
                                for kx in range(kw):
                                    ox = stride[1] * ix + dilation[1] * kx - padding[1]
                                    if 0 <= ox < ow:
                                        tap = dtype(
                                            dtype(x[b, ic, iy, ix]) * dtype(w[ic, oc - g * og, ky, kx])
                                        )
                                        out[b, oc, oy, ox] = dtype(out[b, oc, oy, ox] + tap)
    return out


def matmul_oracle(x, y, dtype=f32):
    """vec_matmul: ``sum = 0; for k: sum += x[i, k] * y[k, j]``."""
    out = np.zeros((x.shape[0], y.shape[1]), dtype)
    for i in range(x.shape[0]):
        for j in range(y.shape[1]):
            acc = dtype(0)
            for k in range(x.shape[1]):
                acc = dtype(acc + dtype(dtype(x[i, k]) * dtype(y[k, j])))
            out[i, j] = acc
    return out


def pool_oracle(x, k, s, p, d, ceil_mode, mode, count_include_pad=True, divisor=None):
    """kernel_reduction_then_map_2d for avg (``mode="avg"``) or max pooling (values, indices)."""
    n, c, h, w = x.shape
    oh, ow = (out_size(h, k[0], s[0], p[0], d[0], ceil_mode), out_size(w, k[1], s[1], p[1], d[1], ceil_mode))
    out = np.zeros((n, c, oh, ow), x.dtype)
    indices = np.zeros((n, c, oh, ow), np.int64)
    for b in range(n):
        for ch in range(c):
            for oy in range(oh):
                for ox in range(ow):
                    ih0, iw0 = oy * s[0] - p[0], ox * s[1] - p[1]
                    ih1, iw1 = min(ih0 + k[0], h + p[0]), min(iw0 + k[1], w + p[1])
                    pool = (ih1 - ih0) * (iw1 - iw0)
                    ih0, iw0, ih1, iw1 = max(ih0, 0), max(iw0, 0), min(ih1, h), min(iw1, w)
                    count = pool if count_include_pad else (ih1 - ih0) * (iw1 - iw0)
                    acc, acc_idx, seen = x.dtype.type(0), 0, False
                    for ky in range(k[0]):
                        iy = s[0] * oy + d[0] * ky - p[0]
                        for kx in range(k[1]):
                            ix = s[1] * ox + d[1] * kx - p[1]
                            if not (0 <= iy < h and 0 <= ix < w):
                                continue
                            v = x[b, ch, iy, ix]
                            if not seen:
                                acc, acc_idx, seen = v, iy * w + ix, True
                            elif mode == "avg":
                                acc = f32(v + acc)
                            elif v > acc:
                                acc, acc_idx = v, iy * w + ix
                    if mode == "avg":
                        acc = f32(acc / f32(divisor if divisor is not None else count))
                    out[b, ch, oy, ox], indices[b, ch, oy, ox] = acc, acc_idx
    return out, indices


def sequential_sum(values) -> np.float32:
    acc = f32(0)
    for v in values:
        acc = f32(acc + f32(v))
    return acc


# --- convolution ---------------------------------------------------------------------------------

CONV = "aten::convolution.out"


def run_conv(
    x, w, bias, stride, padding, dilation, transposed, output_padding, groups, out_shape, dim_order=None
):
    b = ProgramBuilder()
    t = b.input(F32, x.shape, dim_order)
    wt = b.constant(w, F32)
    bt = None if bias is None else b.constant(bias, F32)
    out = b.tensor(F32, out_shape, dim_order)
    call(
        b,
        CONV,
        t,
        wt,
        bt,
        list(stride),
        list(padding),
        list(dilation),
        transposed,
        list(output_padding),
        groups,
        out,
    )
    b.output(out)
    return run(b, x)[0]


@st.composite
def conv_cases(draw):
    transposed = draw(st.booleans())
    groups = draw(st.integers(1, 3))
    cg, og = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    k = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    s = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    d = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    p = (draw(st.integers(0, 2)), draw(st.integers(0, 2)))
    hw = (draw(st.integers(1, 6)), draw(st.integers(1, 6)))
    op = (
        (draw(st.integers(0, max(s[0], d[0]) - 1)), draw(st.integers(0, max(s[1], d[1]) - 1)))
        if transposed
        else (0, 0)
    )
    n = draw(st.integers(1, 2))
    return dict(transposed=transposed, groups=groups, cg=cg, og=og, k=k, s=s, d=d, p=p, hw=hw, op=op, n=n,
                bias=draw(st.booleans()), nhwc=draw(st.booleans()), seed=draw(st.integers(0, 2**16)))  # fmt: skip


@given(conv_cases())
def test_convolution_is_the_portable_loop_bit_for_bit(case):
    rng = np.random.default_rng(case["seed"])
    g, cg, og, k = case["groups"], case["cg"], case["og"], case["k"]
    s, p, d, op = case["s"], case["p"], case["d"], case["op"]
    x = randn(rng, case["n"], g * cg, *case["hw"])
    bias = randn(rng, g * og) if case["bias"] else None
    if case["transposed"]:
        assume(all((case["hw"][i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] >= 0 for i in (0, 1)))
        w = randn(rng, g * cg, og, *k)
        expected = conv_transpose_oracle(x, w, bias, s, p, d, op, g)
    else:
        assume(all(out_size(case["hw"][i], k[i], s[i], p[i], d[i]) >= 1 for i in (0, 1)))
        w = randn(rng, g * og, cg, *k)
        expected = conv_oracle(x, w, bias, s, p, d, g)
    actual = run_conv(
        x, w, bias, s, p, d, case["transposed"], op, g, expected.shape, NHWC if case["nhwc"] else None
    )
    np.testing.assert_array_equal(actual, expected)


def test_convolution_matches_the_float64_formula():
    rng = np.random.default_rng(3)
    x, w, bias = randn(rng, 2, 16, 7, 6), randn(rng, 12, 8, 3, 3), randn(rng, 12)
    expected = conv_oracle(x, w, bias, (2, 1), (1, 2), (1, 2), 2, dtype=np.float64)
    actual = run_conv(x, w, bias, (2, 1), (1, 2), (1, 2), False, (0, 0), 2, expected.shape)
    assert_close(actual, expected)


def test_conv1d_is_a_conv2d_of_unit_height():
    rng = np.random.default_rng(4)
    x, w, bias = randn(rng, 2, 4, 9), randn(rng, 6, 2, 3), randn(rng, 6)
    expected = conv_oracle(x[:, :, None], w[:, :, None], bias, (1, 2), (0, 1), (1, 1), 2)[:, :, 0]
    actual = run_conv(x, w, bias, (2,), (1,), (1,), False, (0,), 2, expected.shape)
    np.testing.assert_array_equal(actual, expected)


# --- matrix products -----------------------------------------------------------------------------


@pytest.mark.parametrize("bias_shape", [(5,), (3, 5), (1, 5)])
@pytest.mark.parametrize(("beta", "alpha"), [(1, 1), (0.5, 2.0)])
def test_addmm(bias_shape, beta, alpha):
    rng = np.random.default_rng(5)
    x, w, bias = randn(rng, 3, 33), randn(rng, 33, 5), randn(rng, *bias_shape)
    b = ProgramBuilder()
    t = b.input(F32, x.shape)
    out = b.tensor(F32, (3, 5))
    call(b, "aten::addmm.out", b.constant(bias, F32), t, b.constant(w, F32), beta, alpha, out)
    b.output(out)
    (actual,) = run(b, x)
    acc = matmul_oracle(x, w)
    np.testing.assert_array_equal(actual, acc * f32(alpha) + np.broadcast_to(bias, (3, 5)) * f32(beta))
    assert_close(actual, alpha * (x.astype(np.float64) @ w) + beta * bias)


@pytest.mark.parametrize("op", ["mm", "bmm", "linear"])
def test_matrix_products_sum_in_k_order(op):
    rng = np.random.default_rng(6)
    b = ProgramBuilder()
    if op == "mm":
        x, y = randn(rng, 4, 40), randn(rng, 40, 3)
        tx, ty = b.input(F32, x.shape), b.input(F32, y.shape)
        out = b.tensor(F32, (4, 3))
        call(b, "aten::mm.out", tx, ty, out)
        expected = matmul_oracle(x, y)
    elif op == "bmm":
        x, y = randn(rng, 2, 4, 40), randn(rng, 2, 40, 3)
        tx, ty = b.input(F32, x.shape), b.input(F32, y.shape)
        out = b.tensor(F32, (2, 4, 3))
        call(b, "aten::bmm.out", tx, ty, out)
        expected = np.stack([matmul_oracle(x[i], y[i]) for i in range(2)])
    else:
        x, y, bias = randn(rng, 2, 2, 40), randn(rng, 3, 40), randn(rng, 3)
        tx, ty = b.input(F32, x.shape), b.input(F32, y.shape)
        out = b.tensor(F32, (2, 2, 3))
        call(b, "aten::linear.out", tx, ty, b.constant(bias, F32), out)
        expected = (matmul_oracle(x.reshape(4, 40), y.T) + bias).reshape(2, 2, 3)
    b.output(out)
    np.testing.assert_array_equal(run(b, x, y)[0], expected)


# --- elementwise ---------------------------------------------------------------------------------


def binary(op, x, y, *scalars, out_shape=None, dim_order=None):
    b = ProgramBuilder()
    tx, ty = b.input(F32, x.shape, dim_order), b.input(F32, y.shape, dim_order)
    out = b.tensor(F32, out_shape or np.broadcast_shapes(x.shape, y.shape), dim_order)
    call(b, op, tx, ty, *scalars, out)
    b.output(out)
    return run(b, x, y)[0]


@pytest.mark.parametrize(
    ("op", "alpha", "formula"),
    [
        ("add", 1, lambda x, y: x + y),
        ("add", 2.5, lambda x, y: x + f32(2.5) * y),
        ("sub", 1, lambda x, y: x - y),
        ("sub", -3, lambda x, y: x - f32(-3) * y),
        ("mul", None, lambda x, y: x * y),
        ("div", None, lambda x, y: x / y),
    ],
)
def test_binary_ops_broadcast_in_float32(op, alpha, formula):
    rng = np.random.default_rng(7)
    x, y = randn(rng, 2, 3, 4), randn(rng, 3, 1)
    scalars = () if alpha is None else (alpha,)
    np.testing.assert_array_equal(binary(f"aten::{op}.out", x, y, *scalars), formula(x, y))


def test_binary_op_channels_last_without_broadcasting():
    rng = np.random.default_rng(8)
    x, y = randn(rng, 1, 3, 4, 5), randn(rng, 1, 3, 4, 5)
    np.testing.assert_array_equal(binary("aten::add.out", x, y, 1, dim_order=NHWC), x + y)


FLOAT_UNARY = {
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "exp": np.exp,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "neg": np.negative,
    "relu": lambda x: np.maximum(x, 0),
    "hardsigmoid": lambda x: np.clip(x + 3, 0, 6) / 6,
    "hardswish": lambda x: x * np.clip(x + 3, 0, 6) / 6,
}


@pytest.mark.parametrize("name", sorted(FLOAT_UNARY))
def test_float_unary_ops_match_the_formula(name):
    rng = np.random.default_rng(9)
    x = randn(rng, 2, 3, 4, 5) * 3
    if name in ("sqrt", "rsqrt"):
        x = np.abs(x) + f32(0.01)
    actual = unary(f"aten::{name}.out", x, dim_order=NHWC)
    assert_close(actual, FLOAT_UNARY[name](x.astype(np.float64)))


def test_transcendentals_are_correctly_rounded_float32():
    """exp/tanh/sigmoid: one rounding of the float64 value (what glibc's expf/tanhf return)."""
    x = np.linspace(-20, 20, 4001, dtype=f32)
    np.testing.assert_array_equal(unary("aten::exp.out", x), np.exp(x.astype(np.float64)).astype(f32))
    np.testing.assert_array_equal(unary("aten::tanh.out", x), np.tanh(x.astype(np.float64)).astype(f32))
    e = np.exp(-x.astype(np.float64)).astype(f32)
    np.testing.assert_array_equal(unary("aten::sigmoid.out", x), f32(1) / (f32(1) + e))


def test_relu_keeps_nan_and_negative_zero():
    x = np.array([-1.0, -0.0, 0.0, 2.0, np.nan, -np.inf], f32)
    actual = unary("aten::relu.out", x)
    np.testing.assert_array_equal(actual, np.array([0, -0.0, 0, 2, np.nan, 0], f32))
    assert np.signbit(actual[1])


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate):
    x = np.concatenate([np.linspace(-6, 6, 301, dtype=f32), np.array([np.inf, -np.inf], f32)])
    actual = unary("aten::gelu.out", x, approximate)
    x64 = x[:-2].astype(np.float64)
    if approximate == "none":
        expected = 0.5 * x64 * (1 + np.vectorize(math.erf)(x64 / math.sqrt(2)))
    else:
        expected = 0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64**3)))
    assert_close(actual[:-2], expected)
    np.testing.assert_array_equal(actual[-2:], [np.inf, 0])


@pytest.mark.parametrize(("lo", "hi"), [(-0.5, 0.25), (0.1, None), (None, -0.2)])
def test_clamp_float(lo, hi):
    x = np.random.default_rng(10).standard_normal((4, 9)).astype(f32)
    expected = np.minimum(
        np.maximum(x, f32(lo if lo is not None else -np.inf)), f32(hi if hi is not None else np.inf)
    )
    np.testing.assert_array_equal(unary("aten::clamp.out", x, lo, hi), expected)


def test_clamp_and_hardtanh_are_dtype_generic_int8():
    x = np.arange(-128, 128, dtype=np.int8).reshape(1, 4, 8, 8)
    expected = np.clip(x, -5, 100).astype(np.int8)
    np.testing.assert_array_equal(unary("aten::clamp.out", x, -5, 100, dtype=I8, dim_order=NHWC), expected)
    np.testing.assert_array_equal(unary("aten::hardtanh.out", x, 0, 6, dtype=I8), np.clip(x, 0, 6))
    np.testing.assert_array_equal(unary("aten::relu.out", x, dtype=I8), np.maximum(x, 0))
    np.testing.assert_array_equal(unary("aten::neg.out", x, dtype=I8), -x)  # -(-128) wraps


def test_clamp_propagates_nan():
    x = np.array([np.nan, -3, 3], f32)
    np.testing.assert_array_equal(unary("aten::clamp.out", x, -1, 1), [np.nan, -1, 1])


# --- reductions ----------------------------------------------------------------------------------


def reduce(op, x, dim, keepdim, out_shape, dtype=None):
    b = ProgramBuilder()
    t = b.input(F32, x.shape)
    out = b.tensor(F32, out_shape)
    call(b, op, t, dim, keepdim, dtype, out)
    b.output(out)
    return run(b, x)[0]


@pytest.mark.parametrize(
    ("dim", "keepdim"), [((2, 3), True), ((-1,), False), ((0, 2), False), (None, False), ((), True)]
)
def test_mean_and_sum_add_left_to_right(dim, keepdim):
    rng = np.random.default_rng(11)
    x = randn(rng, 2, 3, 5, 7) * 100
    axes = tuple(range(4)) if not dim else tuple(d % 4 for d in dim)
    expected_sum = np.sum(x.astype(np.float64), axis=axes, keepdims=keepdim)
    kept = [d for d in range(4) if d not in axes]
    moved = np.transpose(x, (*kept, *axes)).reshape(*(x.shape[d] for d in kept), -1)
    ordered = np.array([sequential_sum(row) for row in moved.reshape(-1, moved.shape[-1])], f32)
    ordered = ordered.reshape(expected_sum.shape)
    count = math.prod(x.shape[d] for d in axes)
    total = reduce("aten::sum.IntList_out", x, dim, keepdim, expected_sum.shape)
    mean = reduce("aten::mean.out", x, dim, keepdim, expected_sum.shape, 6)
    np.testing.assert_array_equal(total, ordered)
    np.testing.assert_array_equal(mean, ordered / f32(count))
    assert_close(total, expected_sum, rtol=1e-4)  # float32 running sums of 210 values ~1e2
    assert_close(mean, expected_sum / count, rtol=1e-4)


@pytest.mark.parametrize("dim", [-1, 1, 0])
def test_softmax(dim):
    rng = np.random.default_rng(12)
    x = randn(rng, 3, 4, 6) * 4
    actual = unary("aten::_softmax.out", x, dim, False)
    moved = np.moveaxis(x, dim, -1)
    e = np.exp((moved - moved.max(-1, keepdims=True)).astype(np.float64)).astype(f32)
    sums = np.array([sequential_sum(r) for r in e.reshape(-1, e.shape[-1])], f32).reshape(e.shape[:-1])
    np.testing.assert_array_equal(actual, np.moveaxis(e / sums[..., None], -1, dim))
    x64 = x.astype(np.float64)
    formula = np.exp(x64 - x64.max(dim, keepdims=True))
    assert_close(actual, formula / formula.sum(dim, keepdims=True))


def test_softmax_reads_channels_last_as_if_contiguous():
    """apply_over_dim walks ``sizes`` over the bytes, so a channels-last tensor is read raw."""
    rng = np.random.default_rng(13)
    x = randn(rng, 1, 3, 2, 4)
    actual = unary("aten::_softmax.out", x, 1, False, dim_order=NHWC)
    raw = np.ascontiguousarray(x.transpose(NHWC)).reshape(x.shape)  # the bytes, read as NCHW
    e = np.exp((raw - raw.max(1, keepdims=True)).astype(np.float64)).astype(f32)
    result_raw = e / np.add.accumulate(e, axis=1, dtype=f32)[:, -1:]
    np.testing.assert_array_equal(np.ascontiguousarray(actual.transpose(NHWC)).reshape(x.shape), result_raw)


# --- pooling and batch norm ----------------------------------------------------------------------

POOL_CASES = {
    "k3s2p1_ceil": dict(k=(3, 3), s=(2, 2), p=(1, 1), ceil_mode=True),
    "k2_default_stride": dict(k=(2, 2), s=(), p=(0, 0), ceil_mode=False),
    "k2x3_s1x2_p1": dict(k=(2, 3), s=(1, 2), p=(1, 1), ceil_mode=False),
    "single_values": dict(k=(3,), s=(2,), p=(1,), ceil_mode=True),
}


def _pair(v, default):
    return (default, default) if not v else (v[0], v[0]) if len(v) == 1 else tuple(v)


@pytest.mark.parametrize("name", sorted(POOL_CASES))
@pytest.mark.parametrize("include_pad", [True, False])
@pytest.mark.parametrize("divisor", [None, 5])
def test_avg_pool2d(name, include_pad, divisor):
    c = POOL_CASES[name]
    rng = np.random.default_rng(14)
    x = randn(rng, 2, 3, 7, 8)
    k = _pair(c["k"], 1)
    s, p = _pair(c["s"], None) if c["s"] else k, _pair(c["p"], 0)
    expected, _ = pool_oracle(x, k, s, p, (1, 1), c["ceil_mode"], "avg", include_pad, divisor)
    b = ProgramBuilder()
    t = b.input(F32, x.shape)
    out = b.tensor(F32, expected.shape)
    call(
        b,
        "aten::avg_pool2d.out",
        t,
        list(c["k"]),
        list(c["s"]),
        list(c["p"]),
        c["ceil_mode"],
        include_pad,
        divisor,
        out,
    )
    b.output(out)
    np.testing.assert_array_equal(run(b, x)[0], expected)


@pytest.mark.parametrize("name", sorted(POOL_CASES))
@pytest.mark.parametrize("dilation", [(1,), (2, 1)])
@pytest.mark.parametrize("dtype", [F32, I8])
def test_max_pool2d_with_indices(name, dilation, dtype):
    c = POOL_CASES[name]
    rng = np.random.default_rng(15)
    x = rng.integers(-4, 4, (1, 3, 7, 8)).astype(dtype.numpy_dtype)  # ties: the first tap wins
    k = _pair(c["k"], 1)
    s, p, d = _pair(c["s"], None) if c["s"] else k, _pair(c["p"], 0), _pair(dilation, 1)
    values, indices = pool_oracle(x, k, s, p, d, c["ceil_mode"], "max")
    b = ProgramBuilder()
    t = b.input(dtype, x.shape, NHWC)
    out, idx = b.tensor(dtype, values.shape, NHWC), b.tensor(I64, values.shape, NHWC)
    call(b, "aten::max_pool2d_with_indices.out", t, list(c["k"]), list(c["s"]), list(c["p"]), list(dilation), c["ceil_mode"], out, idx)  # fmt: skip
    b.output(out, idx)
    actual_values, actual_indices = run(b, x)
    np.testing.assert_array_equal(actual_values, values)
    np.testing.assert_array_equal(actual_indices, indices)


@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_no_training(affine):
    rng = np.random.default_rng(16)
    x = randn(rng, 2, 4, 3, 5)
    mean, var = randn(rng, 4), np.abs(randn(rng, 4)) + f32(0.5)
    weight, bias = randn(rng, 4), randn(rng, 4)
    b = ProgramBuilder()
    t = b.input(F32, x.shape)
    out, s1, s2 = b.tensor(F32, x.shape), b.tensor(F32, (0,)), b.tensor(F32, (0,))
    w_t, b_t = (b.constant(weight, F32), b.constant(bias, F32)) if affine else (None, None)
    call(b, "aten::_native_batch_norm_legit_no_training.out", t, w_t, b_t, b.constant(mean, F32), b.constant(var, F32), 0.1, 1e-5, out, s1, s2)  # fmt: skip
    b.output(out)
    (actual,) = run(b, x)
    shape = (1, 4, 1, 1)
    invstd = (1.0 / np.sqrt(var.astype(np.float64) + 1e-5)).astype(f32).reshape(shape)
    w32 = weight.reshape(shape) if affine else f32(1)
    b32 = bias.reshape(shape) if affine else f32(0)
    np.testing.assert_array_equal(actual, (x - mean.reshape(shape)) * invstd * w32 + b32)
    x64 = x.astype(np.float64)
    formula = (x64 - mean.reshape(shape)) / np.sqrt(var.reshape(shape).astype(np.float64) + 1e-5)
    assert_close(actual, formula * w32 + b32)


# --- validators ----------------------------------------------------------------------------------


def build_unary(
    op, shape, *scalars, dtype=F32, out_shape=None, out_dtype=None, dim_order=None, out_order=None
):
    b = ProgramBuilder()
    t = b.input(dtype, shape, dim_order)
    out = b.tensor(out_dtype or dtype, out_shape or shape, out_order if out_order is not None else dim_order)
    call(b, op, t, *scalars, out)
    b.output(out)
    return b


def build_binary(op, sx, sy, out_shape, *scalars, dim_order=None, y_order=None):
    b = ProgramBuilder()
    tx, ty = b.input(F32, sx, dim_order), b.input(F32, sy, y_order)
    out = b.tensor(F32, out_shape, dim_order)
    call(b, op, tx, ty, *scalars, out)
    b.output(out)
    return b


def build_conv(x_shape, w_shape, out_shape, stride=(1, 1), padding=(0, 0), dilation=(1, 1), transposed=False,
               output_padding=(0, 0), groups=1, bias=None, dtype=F32):  # fmt: skip
    b = ProgramBuilder()
    t = b.input(dtype, x_shape)
    w = b.constant(np.zeros(w_shape), dtype)
    bt = None if bias is None else b.constant(np.zeros(bias), F32)
    out = b.tensor(dtype, out_shape)
    call(
        b,
        CONV,
        t,
        w,
        bt,
        list(stride),
        list(padding),
        list(dilation),
        transposed,
        list(output_padding),
        groups,
        out,
    )
    b.output(out)
    return b


def build_pool(k, s, p, ceil_mode, out_shape, x_shape=(1, 2, 6, 6)):
    b = ProgramBuilder()
    t = b.input(F32, x_shape)
    out = b.tensor(F32, out_shape)
    call(b, "aten::avg_pool2d.out", t, list(k), list(s), list(p), ceil_mode, True, None, out)
    b.output(out)
    return b


INVALID = {
    "relu6 out shape": (lambda: build_unary("aten::hardtanh.out", (2, 3), 0, 6, out_shape=(3, 2)), "out must be sizes [2, 3]"),
    "sigmoid of int8": (lambda: build_unary("aten::sigmoid.out", (4,), dtype=I8), "self must be a float32 tensor"),
    "exp out dtype": (lambda: build_unary("aten::exp.out", (4,), out_dtype=ScalarType.FLOAT64), "out must be float32 like self"),
    "clamp without bounds": (lambda: build_unary("aten::clamp.out", (4,), None, None), "at least one bound"),
    "int8 clamp, float bound": (lambda: build_unary("aten::clamp.out", (4,), -0.5, 3, dtype=I8), "min must be an integer"),
    "int8 clamp out of range": (lambda: build_unary("aten::clamp.out", (4,), -1, 300, dtype=I8), "max must be within [-128, 127]"),
    "int8 in, float32 out": (lambda: build_unary("aten::clamp.out", (4,), 0, 1, dtype=I8, out_dtype=F32), "out must be int8 like self"),
    "gelu approximation": (lambda: build_unary("aten::gelu.out", (4,), "fast"), "approximate must be 'none' or 'tanh'"),
    "tanh dim orders differ": (lambda: build_unary("aten::tanh.out", (1, 2, 3, 4), dim_order=NHWC, out_order=(0, 1, 2, 3)), "all default or all channels-last"),
    "softmax half_to_float": (lambda: build_unary("aten::_softmax.out", (2, 3), 1, True), "half_to_float must be False"),
    "softmax dim": (lambda: build_unary("aten::_softmax.out", (2, 3), 2, False), "dim must be in [-2, 1]"),
    "add shapes": (lambda: build_binary("aten::add.out", (2, 3), (4,), (2, 3), 1), "other must be broadcastable"),
    "mul out shape": (lambda: build_binary("aten::mul.out", (2, 3), (3,), (3,)), "out must be sizes [2, 3]"),
    "add channels-last broadcast": (lambda: build_binary("aten::add.out", (1, 3, 2, 2), (1, 3, 1, 1), (1, 3, 2, 2), 1, dim_order=NHWC, y_order=NHWC), "out must be in the default dim order when broadcasting"),
    "div 0-D with channels-last": (lambda: build_binary("aten::div.out", (1, 3, 2, 2), (), (1, 3, 2, 2), dim_order=NHWC, y_order=()), "all default or all channels-last"),
    "mean dtype": (lambda: _reduce_program("aten::mean.out", (2, 3), (1,), False, (2,), 7), "dtype must be None or float32"),
    "sum dims": (lambda: _reduce_program("aten::sum.IntList_out", (2, 3), (2,), False, (2,), None), "dim must be dims in [-2, 1]"),
    "mean keepdim shape": (lambda: _reduce_program("aten::mean.out", (2, 3), (1,), True, (2,), None), "out must be sizes [2, 1]"),
    "conv out shape": (lambda: build_conv((1, 2, 5, 5), (3, 2, 3, 3), (1, 3, 5, 5)), "out must be sizes [1, 3, 3, 3]"),
    "conv groups": (lambda: build_conv((1, 4, 5, 5), (4, 2, 3, 3), (1, 4, 3, 3), groups=3), "groups must be a positive divisor"),
    "conv weight channels": (lambda: build_conv((1, 4, 5, 5), (4, 3, 3, 3), (1, 4, 3, 3)), "weight must be"),
    "conv bias length": (lambda: build_conv((1, 2, 5, 5), (3, 2, 3, 3), (1, 3, 3, 3), bias=(4,)), "bias must be sizes [3]"),
    "conv stride list": (lambda: build_conv((1, 2, 5, 5), (3, 2, 3, 3), (1, 3, 3, 3), stride=(1, 1, 1)), "stride must be 1 or 2 values"),
    "transposed output_padding": (lambda: build_conv((1, 2, 3, 3), (2, 3, 3, 3), (1, 3, 7, 7), stride=(2, 2), transposed=True, output_padding=(2, 2)), "output_padding must be smaller"),
    "conv of int8": (lambda: build_conv((1, 2, 5, 5), (3, 2, 3, 3), (1, 3, 3, 3), dtype=I8), "input must be a float32"),
    "avg_pool padding": (lambda: build_pool((2, 2), (2, 2), (2, 2), False, (1, 2, 5, 5)), "padding must be between 0 and half"),
    "avg_pool out shape": (lambda: build_pool((3, 3), (2, 2), (1, 1), True, (1, 2, 3, 3)), "out must be sizes [1, 2, 4, 4]"),
}  # fmt: skip


def _reduce_program(op, shape, dim, keepdim, out_shape, dtype):
    b = ProgramBuilder()
    t = b.input(F32, shape)
    out = b.tensor(F32, out_shape)
    call(b, op, t, list(dim), keepdim, dtype, out)
    b.output(out)
    return b


@pytest.mark.parametrize("name", sorted(INVALID))
def test_validators_refuse_at_load(name):
    build, message = INVALID[name]
    with pytest.raises(OpError, match=re.escape(message)) as info:
        build().method()
    assert str(info.value).startswith("aten::")

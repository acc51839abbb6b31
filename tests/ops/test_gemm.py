"""kernels_py.gemm: the float32-BLAS convolution equals the integer kernels bit for bit.

The branch-free requantization against ``fixedpoint.requantize`` over the whole int32 range, every
shift and multipliers to both ends; the GEMM convolution against the old int32-loop kernel and
the readable reference, including depths past K_CHUNK (the split) and sums that wrap int32. The
GEMM tests run on each product kernels_py.gemm can use: float32, and the integer product of
refsim.runtime.igemm with the weights as int8 (where MLAS cannot saturate) and as uint8.
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernels_py import conv as kconv
from kernels_py import gemm
from kernels_py.fixedpoint import clamp, requantize, wrap_int32
from kernels_py.types import Activation, ConvParams, PerChannelQuantParams, Tile

INT32 = st.integers(-(2**31), 2**31 - 1)
EDGES = [-(2**31), -(2**31) + 1, -(2**30), -1, 0, 1, 2**30, 2**31 - 2, 2**31 - 1]


PRODUCTS = ["float32", "integer, int8 weights", "integer, uint8 weights"]


@functools.cache
def _integer_matmul(signed: bool):
    igemm = pytest.importorskip("refsim.runtime.igemm")
    pytest.importorskip("onnxruntime", reason="the integer product needs the `fast` extra (onnxruntime)")
    if signed and not igemm.signed_weights_exact():
        pytest.skip("MLAS's uint8 x int8 GEMM may saturate on this CPU (x86 without VNNI): not used here")
    return igemm.IntegerMatmul(signed_weights=signed)


@contextlib.contextmanager
def product(name: str):
    """kernels_py.gemm on the product ``name`` (one of `PRODUCTS`), restored afterwards."""
    matmul = None if name == "float32" else _integer_matmul(name.endswith("int8 weights"))
    previous = gemm._integer_matmul
    gemm.set_integer_matmul(matmul)
    try:
        yield
    finally:
        gemm.set_integer_matmul(previous)


def rows_of(acc: np.ndarray, bias, mult, shift, offset: int, lo: int, hi: int) -> np.ndarray:
    """`_requantize_rows` on accumulators given as float32 parts (each part exact: |part| < 2^24)."""
    acc = np.asarray(acc, np.int64)
    parts = []
    rest = acc.copy()
    while True:  # split each value into float32-exact pieces
        piece = np.clip(rest, -(2**23), 2**23)
        parts.append(piece.astype(np.float32))
        rest = rest - piece
        if not rest.any():
            break
    out = np.empty(acc.shape, np.int8)
    table = gemm.requantize_table(bias, mult, shift)
    gemm._requantize_rows(np.stack(parts), table, offset, lo, hi, out)
    return out


@given(
    vals=st.lists(st.one_of(INT32, st.sampled_from(EDGES)), min_size=1, max_size=40),
    mult=st.one_of(
        st.integers(-(2**31) + 1, 2**31 - 1), st.sampled_from([2**31 - 1, 2**30, 1, -(2**31) + 1])
    ),
    shift=st.integers(-31, 30),
    bias=INT32,
    offset=st.integers(-128, 127),
)
def test_branch_free_requantize_is_fixedpoint_requantize(vals, mult, shift, bias, offset):
    acc = np.asarray(vals, np.int64)[None, :]
    n = acc.shape[1]
    got = rows_of(acc, np.full(n, bias), np.full(n, mult), np.full(n, shift), offset, -128, 127)
    for v, g in zip(acc[0], got[0], strict=True):
        total = wrap_int32(int(v) + bias)
        expected = clamp(wrap_int32(requantize(total, mult, shift) + offset), -128, 127)
        assert int(g) == expected, (int(v), mult, shift, bias, offset)


def test_branch_free_requantize_sweep():
    """Ten thousand random accumulators against every shift, per channel (vectorised lanes differ)."""
    rng = np.random.default_rng(3)
    shifts = np.arange(-31, 31)
    mults = rng.integers(-(2**31) + 1, 2**31, shifts.size)
    acc = rng.integers(-(2**31), 2**31, (160, shifts.size))
    acc[:9] = np.asarray(EDGES)[:, None]
    bias = rng.integers(-(2**31), 2**31, shifts.size)
    got = rows_of(acc, bias, mults, shifts, -7, -100, 90)
    for (m, n), g in np.ndenumerate(got):
        total = wrap_int32(int(acc[m, n]) + int(bias[n]))
        expected = clamp(wrap_int32(requantize(total, int(mults[n]), int(shifts[n])) - 7), -100, 90)
        assert int(g) == expected, (m, n)


@st.composite
def conv_cases(draw):
    # 600 > K_CHUNK even for 1x1; 6 and 12 channels: the integer im2col's 2- and 4-byte words
    c_in = draw(st.sampled_from([1, 3, 6, 8, 12, 64, 70, 600]))
    k = draw(st.sampled_from([1, 2, 3]))
    h, w = draw(st.integers(k, 7)), draw(st.integers(k, 7))
    c_out = draw(st.integers(1, 9))
    seed = draw(st.integers(0, 2**31))
    stride, pad, dil = draw(st.integers(1, 2)), draw(st.integers(0, k - 1)), draw(st.integers(1, 2))
    if (h + 2 * pad - dil * (k - 1) - 1) < 0 or (w + 2 * pad - dil * (k - 1) - 1) < 0:
        dil = 1
    return c_in, k, h, w, c_out, seed, stride, pad, dil, draw(st.integers(-127, 128)), draw(st.booleans())


@pytest.mark.parametrize("name", PRODUCTS)
@given(conv_cases())
def test_gemm_conv_equals_integer_kernel(name, case):
    c_in, k, h, w, c_out, seed, stride, pad, dil, input_offset, saturate = case
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (2, h, w, c_in), dtype=np.int8)
    if saturate:  # every product at its largest: the sums that stress float32 exactness and int32 wrap
        x[...] = -128 if input_offset <= 0 else 127
    weight = rng.integers(-128, 128, (c_out, k, k, c_in), dtype=np.int8)
    if saturate:
        weight[...] = -128
    bias = rng.integers(-(2**31), 2**31, c_out).astype(np.int32)
    quant = PerChannelQuantParams(
        rng.integers(2**30, 2**31 - 1, c_out).astype(np.int32), rng.integers(-12, 3, c_out).astype(np.int32)
    )
    p = ConvParams(
        input_offset, 3, Tile(stride, stride), Tile(pad, pad), Tile(dil, dil), Activation(-128, 127)
    )
    out_h = kconv.conv_output_size(h, k, stride, pad, dil)
    out_w = kconv.conv_output_size(w, k, stride, pad, dil)
    old = kconv._convolve_kernel(
        x, weight.reshape(c_out, -1).astype(np.int16), bias, quant.multiplier, quant.shift,
        input_offset, 3, stride, stride, pad, pad, dil, dil, -128, 127, k, k, out_h, out_w,
    )  # fmt: skip
    with product(name):
        new = gemm.convolve_gemm(
            x, gemm.conv_filter_matrix(weight), gemm.requantize_table(bias, quant.multiplier, quant.shift),
            input_offset, 3, stride, stride, pad, pad, dil, dil, -128, 127, k, k, out_h, out_w,
        )  # fmt: skip
    np.testing.assert_array_equal(new, old)
    if c_in * k * k <= 200:  # the readable reference is slow
        np.testing.assert_array_equal(new, kconv.convolve_s8_reference(x, weight, bias, p, quant))


@pytest.mark.parametrize("name", PRODUCTS)
@given(
    rows=st.integers(1, 70),
    depth=st.sampled_from([1, 7, 64, 513, 1100]),
    channels=st.integers(1, 20),
    input_offset=st.integers(-127, 128),
    kernel_sum=st.booleans(),
    seed=st.integers(0, 2**31),
)
def test_gemm_fully_connected_equals_integer_kernel(
    name, rows, depth, channels, input_offset, kernel_sum, seed
):
    from kernels_py import fully_connected as kfc

    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (rows, depth), dtype=np.int8)
    w = rng.integers(-128, 128, (channels, depth), dtype=np.int8)
    if seed % 4 == 0:  # the largest products everywhere
        x[...], w[...] = -128, -128
    base = rng.integers(-(2**31), 2**31, channels).astype(np.int32)
    mult = np.full(channels, int(rng.integers(2**30, 2**31 - 1)), np.int32)
    shift = np.full(channels, int(rng.integers(-20, 3)), np.int32)
    table = gemm.requantize_table(base, mult, shift)
    if kernel_sum:
        old = kfc._kernel_sum_fc_kernel(x, w, base, 0, 5, mult, shift, -128, 127)
        input_offset = 0
    else:
        old = kfc._fully_connected_kernel(x, w, base, input_offset, 0, 5, mult, shift, -128, 127)
    with product(name):
        new = gemm.fully_connected_gemm(x, gemm.conv_filter_matrix(w), table, input_offset, 5, -128, 127)
    np.testing.assert_array_equal(new, old)


@given(
    k=st.sampled_from([(3, 3), (10, 4), (1, 1)]),
    mult=st.integers(1, 70),
    stride=st.integers(1, 2),
    input_offset=st.integers(-127, 128),
    seed=st.integers(0, 2**31),
)
def test_one_channel_depthwise_is_the_transposed_gemm_conv(k, mult, stride, input_offset, seed):
    from kernels_py import depthwise as kdw

    rng = np.random.default_rng(seed)
    (kh, kw), h, w = k, 12, 9
    x = rng.integers(-128, 128, (1, h, w, 1), dtype=np.int8)
    weight = rng.integers(-128, 128, (1, kh, kw, mult), dtype=np.int8)
    bias = rng.integers(-(2**20), 2**20, mult).astype(np.int32)
    m = rng.integers(2**30, 2**31 - 1, mult).astype(np.int32)
    s = rng.integers(-12, 1, mult).astype(np.int32)
    pad_h, pad_w = kh // 2, kw // 2
    out_h, out_w = kconv.conv_output_size(h, kh, stride, pad_h), kconv.conv_output_size(w, kw, stride, pad_w)
    old = kdw._depthwise_conv_kernel(
        x,
        weight,
        bias,
        m,
        s,
        input_offset,
        -2,
        mult,
        stride,
        stride,
        pad_h,
        pad_w,
        1,
        1,
        -128,
        127,
        out_h,
        out_w,
        None,
    )
    new = gemm.convolve_gemm(
        x, gemm.conv_filter_matrix(weight.transpose(3, 1, 2, 0)), gemm.requantize_table(bias, m, s),
        input_offset, -2, stride, stride, pad_h, pad_w, 1, 1, -128, 127, kh, kw, out_h, out_w,
    )  # fmt: skip
    np.testing.assert_array_equal(new, old)


@pytest.mark.parametrize("name", PRODUCTS[1:])
@pytest.mark.parametrize("w_value", [-128, 127, "alternating"])
@pytest.mark.parametrize("depth", [2, 63, 1100])
def test_integer_product_exact_at_the_extremes(name, w_value, depth):
    """The operands at which MLAS's uint8 x int8 path without VNNI saturates (``x + 128`` = 255 beside
    255, weights -128 or 127) and the zero points at both ends: the exact int64 sums, every one."""
    matmul = _integer_matmul(name.endswith("int8 weights"))
    x = np.full((5, depth), 127, np.int8)
    x[1, ::2] = -128  # 0 beside 255
    x[2] = np.arange(depth) % 256 - 128
    w = np.full((depth, 3), -128 if w_value == "alternating" else w_value, np.int8)
    if w_value == "alternating":
        w[1::2] = 127
    w[:, 2] = -w[:, 1].clip(-127, 127)
    weight_t = w.astype(np.float32)
    for input_offset in (-127, 0, 128):
        got = matmul(gemm._biased_u8(x), 128 - input_offset, weight_t)
        want = (x.astype(np.int64) + input_offset) @ w.astype(np.int64)
        np.testing.assert_array_equal(got.astype(np.int64), want)


@pytest.mark.parametrize("signed", [True, False], ids=["int8 weights", "uint8 weights"])
@pytest.mark.parametrize(
    ("depth", "out_c", "rows"), [(27, 8, 64), (8, 16, 30), (27, 16, 7), (3, 1, 12), (144, 16, 9)]
)
def test_grouped_rows_are_the_same_sums(signed, depth, out_c, rows):
    """igemm's narrow products take ``group_rows`` rows as one against a block-diagonal weight matrix:
    the same int32 sums, at the extreme operands (255 - 0 and 0 - 255 against -128 and 127), for
    row counts the group divides and does not."""
    matmul = _integer_matmul(signed)
    rng = np.random.default_rng(depth * 100 + out_c)
    w = rng.integers(-128, 128, (depth, out_c)).astype(np.float32)
    w[0], w[-1] = -128, 127
    a = rng.integers(0, 256, (rows, depth), dtype=np.uint8)
    a[0], a[-1] = 255, 0
    for zero_point in (0, 128, 255):
        got = matmul(a, zero_point, w)
        expected = (a.astype(np.int64) - zero_point) @ w.astype(np.int64)  # |sum| < 2^31 here
        assert got.shape == (rows, out_c)
        np.testing.assert_array_equal(got, expected)

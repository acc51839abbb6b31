"""refsim's cortex_m ops against ExecuTorch's Python reference implementations, op by op.

Each trial calls ``torch.ops.cortex_m.<op>`` (the implementations in ExecuTorch 1.5.1's
``backends/cortex_m/ops/operators.py``) and runs the same op with the same arguments as a
one-op program in refsim. Where CMSIS-NN and the Python reference use different arithmetic the
test states the difference and bounds it (at most 1 LSB here, the interop bound is 2):

* ``quantized_avg_pool2d``: the reference averages dequantized floats and rounds with
  ``torch.round`` (ties to even); ``arm_avgpool_s8`` divides the integer sum with ties away
  from zero. Measured: about 10% of outputs 1 LSB apart (means of 2, 4, ... taps hit .5).
* ``softmax``: the reference is float ``torch.softmax`` rounded once; ``arm_softmax_s8`` is
  fixed point (Q5.26 differences, a Q12.19 sum, a reciprocal in Q0.31). Measured: identical
  on 200 random rows of 2..60 elements; bounded by 1 LSB here.
* ``quantized_div``: same float32 division, but ``std::round`` against ``torch.round``.
* ``transpose`` of a channels-last tensor: the reference permutes the logical tensor, the
  kernel permutes the bytes as if contiguous (refsim warns, `LayoutWarning`).

* ``quantize_per_tensor``: ``1.0f / (float)scale`` against ``1.0 / scale``: values within an
  ulp of a .5 tie can round differently (1 LSB).

Everything else (max pool, pad, contiguous transpose, dequantize, LUT) is bit-exact.
Also a few whole exported programs (pooling and softmax, legacy and explicit layout).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("executorch")

import torch.nn.functional as F  # noqa: E402
from executorch.backends.cortex_m.passes.cortex_m_pass_manager import CortexMPassManager  # noqa: E402, F401

from kernels_py.softmax import softmax_params_executorch  # noqa: E402
from refsim.ops.cortex_m_elementwise import LayoutWarning  # noqa: E402
from refsim.pte import ScalarType  # noqa: E402
from tests.fixtures.pte.make_elementwise_fixtures import CL, _random, build_cortex_m  # noqa: E402
from tests.interop.test_cortex_m_elementwise_reference import Lambda, compare  # noqa: E402
from tests.runtime.test_cortex_m_elementwise import ProgramBuilder  # noqa: E402

cm = torch.ops.cortex_m
I8, F32 = ScalarType.INT8, ScalarType.FLOAT32
NHWC = (0, 2, 3, 1)
TRIALS = 25


def _order(t: torch.Tensor) -> tuple[int, ...] | None:
    return NHWC if t.dim() == 4 and t.is_contiguous(memory_format=CL) and not t.is_contiguous() else None


def refsim_op(op: str, inputs: list[torch.Tensor], args: list, out_like: torch.Tensor) -> np.ndarray:
    """Run ``op`` as a one-op refsim program: tensors in ``inputs`` are program inputs (their
    torch memory format becomes the dim order), ``args`` the other arguments in schema order,
    with `str` "in0", "in1" ... naming the inputs' places."""
    b = ProgramBuilder()
    tensors = [
        b.input({torch.int8: I8, torch.float32: F32}[t.dtype], tuple(t.shape), _order(t)) for t in inputs
    ]
    values = [tensors[int(a[2:])] if isinstance(a, str) and a.startswith("in") else a for a in args]
    out_dtype = {torch.int8: I8, torch.float32: F32}[out_like.dtype]
    out = b.tensor(out_dtype, tuple(out_like.shape), _order(out_like))
    b.call(op, *values, out=out)
    b.output(out)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LayoutWarning)
        method = b.method()
    (got,) = method.execute([t.numpy() for t in inputs])
    return got


def int8(shape, generator, memory_format=torch.contiguous_format) -> torch.Tensor:
    return torch.randint(-128, 128, shape, dtype=torch.int8, generator=generator).contiguous(
        memory_format=memory_format
    )


def diff(got: np.ndarray, reference: torch.Tensor) -> np.ndarray:
    return np.abs(got.astype(np.int32) - reference.contiguous().numpy().astype(np.int32))


# --- div -----------------------------------------------------------------------------------------


def test_quantized_div_differs_only_on_ties():
    g = torch.Generator().manual_seed(0)
    worst, ties = 0, 0
    for trial in range(TRIALS):
        x, y = int8((3, 17), g), int8((3, 17), g)
        zps = [int(v) for v in torch.randint(-20, 21, (3,), generator=g)]
        scale = 0.5 if trial % 3 == 0 else float(torch.rand(1, generator=g)) * 4
        reference = cm.quantized_div(x, zps[0], y, zps[1], zps[2], scale)
        got = refsim_op(
            "cortex_m::quantized_div.out", [x, y], ["in0", zps[0], "in1", zps[1], zps[2], scale], reference
        )
        d = diff(got, reference)
        worst = max(worst, int(d.max()))
        ties += int((d > 0).sum())
    x = torch.tensor([1, -1, 3, -3, 5], dtype=torch.int8)
    y = torch.full((5,), 2, dtype=torch.int8)
    reference = cm.quantized_div(x, 0, y, 0, 0, 1.0)
    got = refsim_op("cortex_m::quantized_div.out", [x, y], ["in0", 0, "in1", 0, 0, 1.0], reference)
    np.testing.assert_array_equal(reference.numpy(), [0, 0, 2, -2, 2])  # torch.round: ties to even
    np.testing.assert_array_equal(got, [1, -1, 2, -2, 3])  # std::round: ties away from zero
    assert worst <= 1 and ties > 0


# --- pooling -------------------------------------------------------------------------------------


def _pool_configs(g):
    for _ in range(TRIALS):
        k = [int(v) for v in torch.randint(1, 4, (2,), generator=g)]
        s = [int(v) for v in torch.randint(1, 3, (2,), generator=g)]
        p = [int(torch.randint(0, kk // 2 + 1, (1,), generator=g)) for kk in k]
        h, w = (int(v) for v in torch.randint(4, 9, (2,), generator=g))
        yield k, s, p, (h, w), bool(torch.randint(0, 2, (1,), generator=g))


@pytest.mark.parametrize("nhwc", [False, True], ids=["legacy", "nhwc"])
def test_avg_pool_within_1_lsb(nhwc):
    g = torch.Generator().manual_seed(1)
    worst, differing, total = 0, 0, 0
    for k, s, p, (h, w), ceil_mode in _pool_configs(g):
        x = int8((2, 3, h, w), g, CL)
        if nhwc:
            x = x.permute(0, 2, 3, 1).contiguous()
        scratch = torch.empty(0, dtype=torch.uint8)
        name = "quantized_avg_pool2d_nhwc" if nhwc else "quantized_avg_pool2d"
        # multiplier/shift: what the AOT pass makes from an input scale of 0.02
        args = [k, s, p, ceil_mode, 3, 1374389535, -5]
        reference = getattr(cm, name)(x, *args, scratch)
        b_args = ["in0", *args, None]
        got = _avg_with_scratch(f"cortex_m::{name}.out", x, b_args, reference)
        d = diff(got, reference)
        worst, differing, total = max(worst, int(d.max())), differing + int((d > 0).sum()), total + d.size
    # ~15% of outputs differ by 1: an integer mean of 2, 4, ... taps is often exactly .5
    assert worst <= 1, f"avg pool: {worst} LSB ({differing} of {total} outputs differ)"


def _avg_with_scratch(op, x, args, reference):
    b = ProgramBuilder()
    xi = b.input(I8, tuple(x.shape), _order(x))
    scratch = b.tensor(ScalarType.UINT8, (0,))
    out = b.tensor(I8, tuple(reference.shape), _order(reference))
    b.call(op, xi, *args[1:-1], scratch, out=out)
    b.output(out)
    (got,) = b.method().execute([x.numpy()])
    return got


@pytest.mark.parametrize("nhwc", [False, True], ids=["legacy", "nhwc"])
def test_max_pool_bit_exact(nhwc):
    g = torch.Generator().manual_seed(2)
    for k, s, p, (h, w), _ in _pool_configs(g):
        x = int8((1, 5, h, w), g, CL)
        if nhwc:
            x = x.permute(0, 2, 3, 1).contiguous()
        name = "quantized_max_pool2d_nhwc" if nhwc else "quantized_max_pool2d"
        args = [k, s, p, [1, 1], False, -3, -3, -100, 120]
        reference = getattr(cm, name)(x, *args)
        got = refsim_op(f"cortex_m::{name}.out", [x], ["in0", *args], reference)
        np.testing.assert_array_equal(got, reference.contiguous().numpy())


# --- softmax -------------------------------------------------------------------------------------


def test_softmax_within_1_lsb():
    g = torch.Generator().manual_seed(3)
    worst, differing, total = 0, 0, 0
    for _ in range(TRIALS):
        rows, row = int(torch.randint(1, 5, (1,), generator=g)), int(torch.randint(2, 40, (1,), generator=g))
        scale = float(torch.rand(1, generator=g)) * 0.1 + 0.005
        mult, shift, diff_min = softmax_params_executorch(scale)
        x = int8((rows, row), g)
        zp = int(torch.randint(-10, 11, (1,), generator=g))
        args = [-1, zp, -128, mult, shift, diff_min]
        reference = cm.softmax(x, *args)
        got = refsim_op("cortex_m::softmax.out", [x], ["in0", *args], reference)
        d = diff(got, reference)
        worst, differing, total = max(worst, int(d.max())), differing + int((d > 0).sum()), total + d.size
    assert worst <= 1, f"softmax: {worst} LSB"


# --- pad, transpose, quantize/dequantize ---------------------------------------------------------


@pytest.mark.parametrize("memory_format", ["contiguous", "channels_last"])
def test_pad_bit_exact(memory_format):
    g = torch.Generator().manual_seed(4)
    for _ in range(TRIALS):
        x = int8((1, 3, 4, 5), g, CL if memory_format == "channels_last" else torch.contiguous_format)
        pre = [0] + [int(v) for v in torch.randint(0, 3, (3,), generator=g)]
        post = [0] + [int(v) for v in torch.randint(0, 3, (3,), generator=g)]
        reference = cm.pad(x, pre, post, -9)
        got = refsim_op("cortex_m::pad.out", [x], ["in0", pre, post, -9], reference)
        np.testing.assert_array_equal(got, reference.numpy())


def test_transpose_bit_exact_on_contiguous_tensors():
    g = torch.Generator().manual_seed(5)
    for perm in [(0, 2, 3, 1), (0, 3, 1, 2), (3, 2, 1, 0), (1, 0, 2)]:
        x = int8((2, 3, 4, 5)[: len(perm)], g)
        reference = cm.transpose(x, list(perm))
        got = refsim_op("cortex_m::transpose.out", [x], ["in0", list(perm)], reference)
        np.testing.assert_array_equal(got, reference.numpy())


def test_transpose_of_channels_last_tensor_follows_the_bytes():
    x = torch.arange(24, dtype=torch.int8).reshape(1, 2, 3, 4).contiguous(memory_format=CL)
    reference = cm.transpose(x, [0, 2, 3, 1])
    with pytest.raises(LayoutWarning, match="contiguous tensors"):
        refsim_op("cortex_m::transpose.out", [x], ["in0", [0, 2, 3, 1]], reference)


def test_quantize_within_1_lsb_and_dequantize_bit_exact():
    """cortex_m quantize: the kernel multiplies by ``1.0f / (float)scale`` (float32), the
    reference (quantized_decomposed in torch) by ``1.0 / scale`` rounded to float32: the two
    reciprocals can differ by an ulp, which moves values within an ulp of a .5 tie across it."""
    g = torch.Generator().manual_seed(6)
    near_ties = 0
    for _ in range(TRIALS):
        scale = float(torch.rand(1, generator=g)) * 0.1 + 1e-3
        zp = int(torch.randint(-20, 21, (1,), generator=g))
        x = torch.randn((4, 9), generator=g) * 3
        x[0, :3] = torch.tensor([0.5, 1.5, -2.5]) * scale  # (nearly) ties
        q_args = [scale, zp, -128, 127, torch.int8]
        q = cm.quantize_per_tensor(x, *q_args)
        got_q = refsim_op("cortex_m::quantize_per_tensor.out", [x], ["in0", scale, zp, -128, 127, int(I8)], q)
        d = diff(got_q, q)
        assert d.max() <= 1
        ratio = x.numpy().astype(np.float64) / scale
        assert np.all(np.abs(np.abs(ratio[d > 0] - np.floor(ratio[d > 0])) - 0.5) < 1e-5)
        near_ties += int((d > 0).sum())
        y = cm.dequantize_per_tensor(q, *q_args)
        got_y = refsim_op(
            "cortex_m::dequantize_per_tensor.out", [q], ["in0", scale, zp, -128, 127, int(I8)], y
        )
        np.testing.assert_array_equal(got_y, y.numpy())


def test_lut_bit_exact():
    g = torch.Generator().manual_seed(7)
    x = torch.arange(-128, 128, dtype=torch.int8).reshape(16, 16)
    lut = int8((256,), g)
    reference = cm.quantized_activation(x, lut)
    b = ProgramBuilder()
    xi = b.input(I8, (16, 16))
    table = b.constant(lut.numpy(), I8)
    out = b.tensor(I8, (16, 16))
    b.call("cortex_m::quantized_activation.out", xi, table, out=out)
    b.output(out)
    (got,) = b.method().execute([x.numpy()])
    np.testing.assert_array_equal(got, reference.numpy())


# --- whole exported programs ---------------------------------------------------------------------

PROGRAMS = {
    "avg_pool_ceil": (
        lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
        (1, 4, 9, 9),
    ),
    "avg_pool_count_pad": (lambda x: F.avg_pool2d(x, 3, 2, 1), (1, 4, 8, 8)),
    "max_pool": (lambda x: F.max_pool2d(x, 3, 2, 1), (1, 4, 9, 9)),
    "pad": (lambda x: F.pad(x, (1, 2, 2, 0), value=-0.25), (1, 4, 5, 5)),
    "softmax": (lambda x: torch.softmax(x, dim=-1), (3, 11)),
}


@pytest.mark.parametrize("explicit_layout", [False, True], ids=["legacy", "explicit"])
@pytest.mark.parametrize("case", list(PROGRAMS))
def test_exported_program_against_reference(case, explicit_layout):
    fn, shape = PROGRAMS[case]
    four_d = len(shape) == 4
    memory_format = CL if four_d and not explicit_layout else torch.contiguous_format
    compare(
        case,
        build_cortex_m(
            Lambda(fn),
            lambda: (_random(shape, memory_format, -2.0, 2.0),),
            explicit_layout=explicit_layout,
        ),
        {},
    )

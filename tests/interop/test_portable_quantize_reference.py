"""refsim bit-exact against ``executorch.runtime`` (ExecuTorch's own portable kernels) on
quantized-portable programs and on the portable layout ops.

Quantized portable: XNNPACKQuantizer annotations (per-channel weights) lowered with plain
``to_edge`` and no delegate, so ``quantized_decomposed`` quantize/dequantize surround fp32
portable ops (refsim.ops.portable_float). Also programs made of the quantize ops alone, fed
the inputs where the conversions differ most (ties, NaN, infinities, out of range), and the
layout ops (``_clone_dim_order``, ``_to_dim_order_copy``, cat, slice, permute, view, squeeze).
Every output must be identical, bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("executorch")

import executorch.kernels.quantized  # noqa: E402, F401  (registers the quantized_decomposed out variants)

from refsim.runtime import Program  # noqa: E402
from tests.fixtures.pte.make_elementwise_fixtures import (  # noqa: E402
    QpConv,
    QpLinear,
    _random,
    build_quantized_portable,
    run_executorch,
)

qd = torch.ops.quantized_decomposed


def refsim_outputs(data: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    return Program.load(data).method("forward").execute(inputs)


def export_portable(model: torch.nn.Module, example: tuple[torch.Tensor, ...]) -> bytes:
    from executorch.exir import to_edge

    return to_edge(torch.export.export(model.eval(), example)).to_executorch().buffer


def assert_identical(data: bytes, inputs: list[np.ndarray]) -> None:
    expected = run_executorch(data, inputs)
    got = refsim_outputs(data, inputs)
    assert len(got) == len(expected)
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        assert g.dtype == e.dtype and g.shape == e.shape, f"output{k}"
        np.testing.assert_array_equal(g, e, err_msg=f"output{k}")


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(
    "model",
    [
        (QpLinear, lambda: (_random((2, 8), low=-2.0, high=2.0),)),
        (QpConv, lambda: (_random((1, 3, 5, 5)),)),
    ],
    ids=["linear", "conv"],
)
def test_quantized_portable_model(model, seed):
    cls, make_inputs = model
    data, inputs, expected = build_quantized_portable(cls(), make_inputs, seed=seed)
    for k, (g, e) in enumerate(zip(refsim_outputs(data, inputs), expected, strict=True)):
        np.testing.assert_array_equal(g, e, err_msg=f"output{k}")
    for _ in range(3):  # more inputs through the same program
        assert_identical(data, [x.numpy() for x in make_inputs()])


def _edge_values(scale: float, shape: tuple[int, ...], seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g) * 200 * scale
    flat = x.view(-1)
    specials = [
        0.5,
        1.5,
        -0.5,
        -2.5,
        126.5,
        -128.5,
        1e30,
        -1e30,
        float("nan"),
        float("inf"),
        float("-inf"),
        1e-40,
    ]
    flat[: len(specials)] = torch.tensor(specials) * torch.tensor([scale] * 6 + [1.0] * 6)
    return x


class QuantizeDequantize(torch.nn.Module):
    def __init__(self, scale: float, zero_point: int, qmin: int, qmax: int, dtype: torch.dtype) -> None:
        super().__init__()
        self.args = (scale, zero_point, qmin, qmax, dtype)

    def forward(self, x):
        q = qd.quantize_per_tensor(x, *self.args)
        return q, qd.dequantize_per_tensor(q, *self.args)


@pytest.mark.parametrize(
    ("dtype", "qmin", "qmax", "zero_point"),
    [(torch.int8, -128, 127, 3), (torch.uint8, 0, 255, 128), (torch.int16, -32768, 32767, -7)],
)
def test_quantize_dequantize_per_tensor_edge_values(dtype, qmin, qmax, zero_point):
    scale = 0.0173
    x = _edge_values(scale, (4, 16), 0)
    data = export_portable(QuantizeDequantize(scale, zero_point, qmin, qmax, dtype), (x,))
    assert_identical(data, [x.numpy()])
    assert_identical(data, [_edge_values(scale, (4, 16), 1).numpy()])


class PerChannel(torch.nn.Module):
    def __init__(self, channels: int, axis: int) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(5)
        self.register_buffer("scales", torch.rand(channels, generator=g, dtype=torch.float64) * 0.05 + 0.002)
        self.register_buffer("zero_points", torch.randint(-9, 10, (channels,), generator=g))
        self.axis = axis

    def forward(self, x):
        args = (self.scales, self.zero_points, self.axis, -127, 127, torch.int8)
        q = qd.quantize_per_channel(x, *args)
        return q, qd.dequantize_per_channel(q, *args)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_quantize_dequantize_per_channel(axis):
    shape = (3, 4, 5)
    x = _edge_values(0.01, shape, axis)
    data = export_portable(PerChannel(shape[axis], axis), (x,))
    assert_identical(data, [x.numpy()])


class Layout(torch.nn.Module):
    def forward(self, x, y):
        nhwc = x.contiguous(memory_format=torch.channels_last)
        back = nhwc.contiguous()
        joined = torch.cat([x, y], dim=1)
        return (  # no arithmetic on nhwc: ExecuTorch's portable add/mul refuse mixed dim orders
            nhwc,
            back * 2,
            joined[:, 1:5:2],
            joined.permute(0, 2, 3, 1) - 1,
            joined.reshape(2, -1).unsqueeze(0).squeeze(0) + 0,
        )


def test_layout_ops():
    g = torch.Generator().manual_seed(7)
    x, y = torch.randn((2, 3, 4, 5), generator=g), torch.randn((2, 2, 4, 5), generator=g)
    data = export_portable(Layout(), (x, y))
    assert_identical(data, [x.numpy(), y.numpy()])

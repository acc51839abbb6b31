"""The held-out model of the TFLM flash check: an op set that none of the four MLPerf Tiny models
has (PAD, MUL, MEAN, LOGISTIC, HARD_SWISH beside CONV_2D, DEPTHWISE_CONV_2D, ADD,
FULLY_CONNECTED), written with refsim's writer from a fixed seed. Its firmware is linked by
refsim/lab/tflm/flash_probe.py --check (recorded in refsim/memory/tflm_flash.json ``checks``).

    PYTHONPATH=. python tests/memory/tflm_flash_heldout.py   # rewrites the fixture
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from refsim.tflite import schema as s
from refsim.tflite.writer import ModelBuilder, write_model

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures/tflite/heldout/tflm_flash_heldout.tflite"
B, T = s.BuiltinOperator, s.TensorType


def heldout_model(seed: int = 15) -> bytes:
    rng = np.random.default_rng(seed)
    b = ModelBuilder()

    def act(shape, scale=0.05, zp=-3):
        return b.tensor(shape, T.INT8, scale=scale, zero_point=zp)

    def weights(shape, channels, axis):
        data = rng.integers(-127, 128, shape, dtype=np.int8)
        return b.tensor(shape, T.INT8, data=data, scale=(0.01,) * channels, zero_point=(0,) * channels,
                        quantized_dimension=axis)  # fmt: skip

    def bias(n):
        data = rng.integers(-1000, 1000, n, dtype=np.int32)
        return b.tensor((n,), T.INT32, data=data, scale=(0.0005,) * n, zero_point=(0,) * n)

    x = act((1, 16, 16, 3))
    pads = b.tensor((4, 2), T.INT32, data=np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32))
    xp = act((1, 18, 18, 3))
    b.op(B.PAD, [x, pads], [xp])
    c1 = act((1, 16, 16, 8))
    b.op(B.CONV_2D, [xp, weights((8, 3, 3, 3), 8, 0), bias(8)], [c1], padding=s.Padding.VALID,
         stride_h=1, stride_w=1, fused_activation_function=s.ActivationFunctionType.RELU)  # fmt: skip
    d1 = act((1, 16, 16, 8))
    b.op(B.DEPTHWISE_CONV_2D, [c1, weights((1, 3, 3, 8), 8, 3), bias(8)], [d1], padding=s.Padding.SAME,
         stride_h=1, stride_w=1, depth_multiplier=1)  # fmt: skip
    h1 = act((1, 16, 16, 8))
    b.op(B.HARD_SWISH, [d1], [h1])
    a1 = act((1, 16, 16, 8))
    b.op(B.ADD, [c1, h1], [a1])
    m1 = act((1, 16, 16, 8))
    b.op(B.MUL, [a1, c1], [m1])
    axes = b.tensor((2,), T.INT32, data=np.array([1, 2], np.int32))
    g = act((1, 8))
    b.op(B.MEAN, [m1, axes], [g], keep_dims=False)
    f = act((1, 4))
    fw = b.tensor(
        (4, 8), T.INT8, data=rng.integers(-127, 128, (4, 8), dtype=np.int8), scale=0.01, zero_point=0
    )
    b.op(B.FULLY_CONNECTED, [g, fw, -1], [f])
    y = b.tensor((1, 4), T.INT8, scale=1 / 256, zero_point=-128)
    b.op(B.LOGISTIC, [f], [y])
    return write_model(b.build(inputs=[x], outputs=[y]))


if __name__ == "__main__":
    FIXTURE.write_bytes(heldout_model())
    print(FIXTURE, FIXTURE.stat().st_size)

"""The MLPerf Tiny KWS DS-CNN layer stack through kernels_py, with deterministic int8 weights.

    python examples/kws_layers.py [--seed N] [--repeat N]

Input 49×10×1 → conv 64 (10×4, stride 2, SAME) → 4 × (depthwise 3×3 + pointwise 64), all with
fused ReLU → average pool → fully connected 12 → softmax. About 2.66 M MACs. Weights and the
input are drawn from a fixed seed; per-channel output scales are calibrated on that input so
activations use the int8 range, as a post-training quantizer would. Prints per-layer MACs,
the CMSIS-NN function each layer routes to, and time per call with a warm numba cache.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from rich.console import Console
from rich.table import Table

from kernels_py import conv, depthwise, fully_connected, pooling, softmax
from kernels_py.fixedpoint import quantize_multiplier
from kernels_py.types import (
    Activation,
    ConvParams,
    Dims,
    DwConvParams,
    FcParams,
    PerChannelQuantParams,
    PerTensorQuantParams,
    PoolParams,
    Tile,
)

LABELS = ["silence", "unknown", "yes", "no", "up", "down", "left", "right", "on", "off", "stop", "go"]


@dataclass
class Layer:
    name: str
    kernel: str
    macs: int
    run: Callable[[np.ndarray], np.ndarray]


def same_padding(size: int, k: int, stride: int) -> tuple[int, int]:
    """TensorFlow SAME: (output size, top/left padding)."""
    out = -(-size // stride)
    total = max((out - 1) * stride + k - size, 0)
    return out, total // 2


def per_channel(
    acc_max: np.ndarray, in_scale: float, w_scale: np.ndarray
) -> tuple[float, PerChannelQuantParams]:
    """Output scale from the calibrated accumulator range, then multiplier/shift per channel."""
    out_scale = float(max(np.max(acc_max * in_scale * w_scale), 1e-6) / 127.0)
    pairs = [quantize_multiplier(in_scale * float(s) / out_scale) for s in w_scale]
    return out_scale, PerChannelQuantParams(np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs]))


def build(seed: int) -> tuple[np.ndarray, list[Layer]]:
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (1, 49, 10, 1), dtype=np.int8)
    layers: list[Layer] = []
    relu = Activation(-128, 127)  # output zero point -128 makes ReLU the full int8 range
    in_scale, in_offset = 0.05, 0  # input zero point 0

    def add_conv(name: str, x: np.ndarray, c_out: int, kh: int, kw: int, stride: int) -> np.ndarray:
        nonlocal in_scale, in_offset
        _, h, w, c_in = x.shape
        oh, pad_h = same_padding(h, kh, stride)
        ow, pad_w = same_padding(w, kw, stride)
        filt = rng.integers(-127, 128, (c_out, kh, kw, c_in), dtype=np.int8)
        w_scale = rng.uniform(0.5, 1.5, c_out) / 127.0
        bias = rng.integers(-2000, 2000, c_out, dtype=np.int32)
        params = ConvParams(in_offset, 0, Tile(stride, stride), Tile(pad_w, pad_h), Tile(1, 1), Activation())
        acc = _accumulators(x, filt, bias, params, (oh, ow))
        out_scale, quant = per_channel(np.abs(acc).max(axis=(0, 1, 2)), in_scale, w_scale)
        params = ConvParams(in_offset, -128, Tile(stride, stride), Tile(pad_w, pad_h), Tile(1, 1), relu)
        dims = (Dims.of(x.shape), Dims(c_out, kh, kw, c_in), Dims(1, oh, ow, c_out))
        kernel = conv.select_convolve_kernel(params, *dims)
        layers.append(
            Layer(
                name,
                kernel,
                oh * ow * c_out * kh * kw * c_in,
                lambda t, f=filt, b=bias, p=params, q=quant, o=(oh, ow): conv.convolve_wrapper_s8(
                    t, f, b, p, q, o
                ),
            )
        )
        in_scale, in_offset = out_scale, 128
        return layers[-1].run(x)

    def add_depthwise(name: str, x: np.ndarray) -> np.ndarray:
        nonlocal in_scale, in_offset
        _, h, w, c = x.shape
        filt = rng.integers(-127, 128, (1, 3, 3, c), dtype=np.int8)
        w_scale = rng.uniform(0.5, 1.5, c) / 127.0
        bias = rng.integers(-2000, 2000, c, dtype=np.int32)
        # Calibrate with a depthwise conv expressed per channel (no cross-channel terms).
        acc = np.zeros((h, w, c))
        xp = np.pad(x[0].astype(np.int64) + in_offset, ((1, 1), (1, 1), (0, 0)))
        for i in range(3):
            for j in range(3):
                acc += xp[i : i + h, j : j + w, :] * filt[0, i, j, :]
        acc += bias
        out_scale, quant = per_channel(np.abs(acc).max(axis=(0, 1)), in_scale, w_scale)
        params = DwConvParams(in_offset, -128, 1, Tile(1, 1), Tile(1, 1), Tile(1, 1), relu)
        dims = (Dims.of(x.shape), Dims(1, 3, 3, c), Dims(1, h, w, c))
        kernel = depthwise.select_depthwise_kernel(params, *dims, "dsp")
        layers.append(
            Layer(
                name,
                kernel,
                h * w * c * 9,
                lambda t, f=filt, b=bias, p=params, q=quant: depthwise.depthwise_conv_wrapper_s8(
                    t, f, b, p, q, (h, w)
                ),
            )
        )
        in_scale, in_offset = out_scale, 128
        return layers[-1].run(x)

    y = add_conv("conv1 10x4/2", x, 64, 10, 4, 2)
    for block in range(4):
        y = add_depthwise(f"dw{block + 1} 3x3", y)
        y = add_conv(f"pw{block + 1} 1x1", y, 64, 1, 1, 1)

    _, h, w, c = y.shape
    pool = PoolParams(Tile(1, 1), Tile(0, 0), Activation())
    layers.append(
        Layer(
            "avgpool 25x5", "arm_avgpool_s8", h * w * c, lambda t: pooling.avgpool_s8(t, pool, (h, w), (1, 1))
        )
    )
    y = layers[-1].run(y)

    filt = rng.integers(-127, 128, (12, c), dtype=np.int8)
    bias = rng.integers(-500, 500, 12, dtype=np.int32)
    flat = y.reshape(1, c)
    acc = (flat.astype(np.int64) + in_offset) @ filt.T.astype(np.int64) + bias
    w_scale = 1 / 127.0
    fc_out_scale = float(np.abs(acc).max() * in_scale * w_scale / 127.0)
    mult, shift = quantize_multiplier(in_scale * w_scale / fc_out_scale)
    fc = FcParams(in_offset, 0, 0, Activation())
    quant = PerTensorQuantParams(mult, shift)
    layers.append(
        Layer(
            "fc 12",
            "arm_fully_connected_s8",
            c * 12,
            lambda t: fully_connected.fully_connected_s8(t.reshape(1, -1), filt, bias, fc, quant),
        )
    )
    y = layers[-1].run(y)

    sm_mult, sm_shift, sm_diff_min = softmax.softmax_params(1.0, fc_out_scale)
    layers.append(
        Layer(
            "softmax", "arm_softmax_s8", 12, lambda t: softmax.softmax_s8(t, sm_mult, sm_shift, sm_diff_min)
        )
    )
    return x, layers


def _accumulators(x, filt, bias, params: ConvParams, out_hw) -> np.ndarray:
    """int64 conv accumulators (calibration only; the golden kernel is conv.convolve_wrapper_s8)."""
    c_out, kh, kw, _ = filt.shape
    oh, ow = out_hw
    sh, sw = params.stride.h, params.stride.w
    ph, pw = params.padding.h, params.padding.w
    xs = x[0].astype(np.int64) + params.input_offset
    pad_b = max((oh - 1) * sh + kh - x.shape[1] - ph, 0)
    pad_r = max((ow - 1) * sw + kw - x.shape[2] - pw, 0)
    xp = np.pad(xs, ((ph, pad_b), (pw, pad_r), (0, 0)))
    mask = np.pad(np.ones(x.shape[1:3], np.int64), ((ph, pad_b), (pw, pad_r)))[..., None]
    xp = xp * mask  # padding contributes nothing, not even the input offset
    acc = np.zeros((1, oh, ow, c_out), np.int64)
    w = filt.astype(np.int64)
    for i in range(kh):
        for j in range(kw):
            patch = xp[i : i + (oh - 1) * sh + 1 : sh, j : j + (ow - 1) * sw + 1 : sw, :]
            acc[0] += patch @ w[:, i, j, :].T
    return acc + bias


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    console = Console(width=max(Console().width, 120))

    t0 = time.perf_counter()
    x, layers = build(args.seed)
    setup_s = time.perf_counter() - t0

    table = Table(title=f"KWS DS-CNN through kernels_py (seed {args.seed}, {args.repeat} runs per layer)")
    for col in ("layer", "CMSIS-NN function", "output", "MACs", "µs / call", "GMAC/s"):
        table.add_column(col, justify="right" if col in ("MACs", "µs / call", "GMAC/s") else "left")
    total_macs = 0
    total_s = 0.0
    act = x
    for layer in layers:
        out = layer.run(act)  # warm
        start = time.perf_counter()
        for _ in range(args.repeat):
            out = layer.run(act)
        dt = (time.perf_counter() - start) / args.repeat
        total_macs += layer.macs
        total_s += dt
        table.add_row(
            layer.name,
            layer.kernel,
            "×".join(map(str, out.shape)),
            f"{layer.macs:,}",
            f"{dt * 1e6:,.1f}",
            f"{layer.macs / dt / 1e9:.2f}",
        )
        act = out
    table.add_row(
        "total", "", "", f"{total_macs:,}", f"{total_s * 1e6:,.1f}", f"{total_macs / total_s / 1e9:.2f}"
    )
    console.print(table)
    probs = (act.reshape(-1).astype(np.int32) + 128) / 256.0
    best = int(np.argmax(probs))
    console.print(
        f"prediction: [bold]{LABELS[best]}[/] (p ≈ {probs[best]:.3f}, int8 {int(act.reshape(-1)[best])}); "
        f"set-up incl. numba load/compile {setup_s:.2f} s"
    )


if __name__ == "__main__":
    main()

"""CONV_2D and DEPTHWISE_CONV_2D in float32, as TFLM's reference kernels loop.

* `conv_2d_f32` mirrors ``reference_ops::Conv`` (float overload,
  tensorflow/lite/kernels/internal/reference/conv.h), called by ``ConvEval``
  (micro/kernels/conv.cc) and by the float branch of micro/kernels/cmsis_nn/conv.cc.
* `depthwise_conv_2d_f32` mirrors ``reference_ops::DepthwiseConv``
  (kernels/internal/reference/depthwiseconv_float.h), called by micro/kernels/depthwise_conv.cc
  and micro/kernels/cmsis_nn/depthwise_conv.cc.

Per output: ``total = 0.f``; taps in (filter_y, filter_x, in_channel) order for conv and
(filter_y, filter_x) for depthwise, a tap outside the image skipped (not multiplied by zero);
``total += input * filter``; then ``clamp(total + bias)`` with ``bias = 0.f`` when absent.
With ``fused=True`` each ``total += input * filter`` is one fused multiply-add (``fmaf``): what
TFLM's loop becomes on a Cortex-M with an FPU, where arm-none-eabi-gcc's default
``-ffp-contract=fast`` turns it into ``VFMA.F32`` (docs/tflite.md, "Float32 kernels").
Shapes are NHWC, the filter ``[out_channels, kh, kw, in_channels / groups]`` for conv and
``[1, kh, kw, out_channels]`` for depthwise. Padding is the top/left TFLM's Prepare computes
(``ComputePaddingHeightWidth``); the extra bottom/right only shows in the output size.
"""

from __future__ import annotations

import numpy as np

from kernels_py._jit import jit
from kernels_py.tflm_float._common import F32, as_f32, clamp, fmaf


@jit
def _conv(x, w, bias, out, sh, sw, ph, pw, dh, dw, lo, hi, fused):  # pragma: no cover - compiled
    batches, in_h, in_w, _ = x.shape
    out_c, kh, kw, filter_in_c = w.shape
    _, out_h, out_w, _ = out.shape
    filters_per_group = out_c // (x.shape[3] // filter_in_c)
    for b in range(batches):
        for oy in range(out_h):
            in_y0 = oy * sh - ph
            for ox in range(out_w):
                in_x0 = ox * sw - pw
                for oc in range(out_c):
                    group = oc // filters_per_group
                    total = F32(0.0)
                    for fy in range(kh):
                        iy = in_y0 + dh * fy
                        for fx in range(kw):
                            ix = in_x0 + dw * fx
                            if ix < 0 or ix >= in_w or iy < 0 or iy >= in_h:
                                continue
                            for ic in range(filter_in_c):
                                xv = x[b, iy, ix, ic + group * filter_in_c]
                                if fused:
                                    total = fmaf(xv, w[oc, fy, fx, ic], total)
                                else:
                                    total += xv * w[oc, fy, fx, ic]
                    out[b, oy, ox, oc] = clamp(total + bias[oc], lo, hi)


@jit
def _depthwise(x, w, bias, out, depth_multiplier, sh, sw, ph, pw, dh, dw, lo, hi, fused):  # pragma: no cover
    batches, in_h, in_w, in_c = x.shape
    _, kh, kw, _ = w.shape
    _, out_h, out_w, _ = out.shape
    for b in range(batches):
        for oy in range(out_h):
            for ox in range(out_w):
                for ic in range(in_c):
                    for m in range(depth_multiplier):
                        oc = m + ic * depth_multiplier
                        in_x0 = ox * sw - pw
                        in_y0 = oy * sh - ph
                        total = F32(0.0)
                        for fy in range(kh):
                            for fx in range(kw):
                                ix = in_x0 + dw * fx
                                iy = in_y0 + dh * fy
                                if ix >= 0 and ix < in_w and iy >= 0 and iy < in_h:
                                    if fused:
                                        total = fmaf(x[b, iy, ix, ic], w[0, fy, fx, oc], total)
                                    else:
                                        total += x[b, iy, ix, ic] * w[0, fy, fx, oc]
                        out[b, oy, ox, oc] = clamp(total + bias[oc], lo, hi)


def _bias(bias: np.ndarray | None, channels: int) -> np.ndarray:
    """The bias, or ``0.f`` per channel: TFLM adds ``bias_value = 0.0f`` when there is none."""
    if bias is None:
        return np.zeros(channels, F32)
    b = as_f32(bias).reshape(-1)
    if b.size != channels:
        raise ValueError(f"bias has {b.size} values for {channels} output channels")
    return b


def conv_2d_f32(
    x: np.ndarray,
    w: np.ndarray,
    bias: np.ndarray | None,
    out_shape: tuple[int, int, int, int],
    *,
    stride: tuple[int, int],
    padding: tuple[int, int],
    dilation: tuple[int, int],
    activation: tuple[float, float],
    fused: bool = False,
) -> np.ndarray:
    """``reference_ops::Conv`` (float): NHWC ``x``, OHWI ``w`` (grouped when ``w``'s last dim
    divides the input channels), returns the NHWC output of ``out_shape``. ``fused``: each
    ``total += x * w`` rounded once, as GCC's default contraction into ``VFMA.F32`` computes it
    on a core with an FPU (the module docstring)."""
    x, w = as_f32(x), as_f32(w)
    if x.ndim != 4 or w.ndim != 4 or len(out_shape) != 4:
        raise ValueError("conv_2d_f32 takes 4-D input, filter and output")
    if w.shape[3] <= 0 or x.shape[3] % w.shape[3] or w.shape[0] % (x.shape[3] // w.shape[3]):
        raise ValueError(f"filter {w.shape} does not group input channels {x.shape[3]}")
    if out_shape[0] != x.shape[0] or out_shape[3] != w.shape[0]:
        raise ValueError(f"output {out_shape} does not match input {x.shape} and filter {w.shape}")
    out = np.empty(out_shape, F32)
    _conv(
        x,
        w,
        _bias(bias, w.shape[0]),
        out,
        *stride,
        *padding,
        *dilation,
        F32(activation[0]),
        F32(activation[1]),
        fused,
    )
    return out


def depthwise_conv_2d_f32(
    x: np.ndarray,
    w: np.ndarray,
    bias: np.ndarray | None,
    out_shape: tuple[int, int, int, int],
    *,
    depth_multiplier: int,
    stride: tuple[int, int],
    padding: tuple[int, int],
    dilation: tuple[int, int],
    activation: tuple[float, float],
    fused: bool = False,
) -> np.ndarray:
    """``reference_ops::DepthwiseConv`` (float): NHWC ``x``, ``[1, kh, kw, C·m]`` ``w``;
    ``fused`` as for `conv_2d_f32`."""
    x, w = as_f32(x), as_f32(w)
    if x.ndim != 4 or w.ndim != 4 or len(out_shape) != 4:
        raise ValueError("depthwise_conv_2d_f32 takes 4-D input, filter and output")
    channels = x.shape[3] * depth_multiplier
    if w.shape[0] != 1 or w.shape[3] != channels or out_shape[3] != channels or out_shape[0] != x.shape[0]:
        raise ValueError(
            f"filter {w.shape} / output {out_shape} do not match input {x.shape} x {depth_multiplier}"
        )
    out = np.empty(out_shape, F32)
    _depthwise(
        x, w, _bias(bias, channels), out, depth_multiplier, *stride, *padding, *dilation,
        F32(activation[0]), F32(activation[1]), fused,
    )  # fmt: skip
    return out

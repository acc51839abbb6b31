"""Portable fp32 ``convolution.out``: 1-D and 2-D, grouped, strided, padded, dilated and
transposed (``op_convolution.cpp``), taps accumulated in the portable kernel's order.
"""

from __future__ import annotations

import math

import numpy as np

from refsim.ops.portable_float._common import (
    F32,
    _check_dtype,
    _check_same_dim_order,
    _check_sizes,
    _portable,
    _taps,
    _val_at,
)
from refsim.ops.registry import Args


def _conv_params(a: Args) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int], tuple[int, int]]:
    """(stride, padding, dilation, output_padding) as (y, x); 1-D convs get a unit height."""
    if len(a.input.sizes) == 3:
        return (
            (1, _val_at(a.stride, 0, 1)),
            (0, _val_at(a.padding, 0, 0)),
            (1, _val_at(a.dilation, 0, 1)),
            (0, _val_at(a.output_padding, 0, 0)),
        )
    pair = [
        tuple(_val_at(v, i, d) for i in (0, 1)) for v, d in ((a.stride, 1), (a.padding, 0), (a.dilation, 1))
    ]
    return (*pair, tuple(_val_at(a.output_padding, i, 0) for i in (0, 1)))  # type: ignore[return-value]


def _as_4d(x: np.ndarray) -> np.ndarray:
    return x[:, :, None, :] if x.ndim == 3 else x


def _conv_out_sizes(a: Args) -> tuple[int, ...]:
    x, w = a.input.sizes, a.weight.sizes
    (sy, sx), (py, px), (dy, dx), (oy, ox) = _conv_params(a)
    in_hw = (1, x[2]) if len(x) == 3 else (x[2], x[3])
    k_hw = (1, w[2]) if len(w) == 3 else (w[2], w[3])
    out_hw = []
    for size, k, s, p, d, op in zip(in_hw, k_hw, (sy, sx), (py, px), (dy, dx), (oy, ox), strict=True):
        if a.transposed:
            out_hw.append((size - 1) * s - 2 * p + d * (k - 1) + op + 1)
        else:
            out_hw.append((size + 2 * p - d * (k - 1) - 1) // s + 1)
    channels = w[1] * a.groups if a.transposed else w[0]
    return (x[0], channels, *out_hw[2 - (len(x) - 2) :])


@_portable(
    "aten::convolution.out(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, *, Tensor(a!) out) -> Tensor(a!)"
)
def convolution(a: Args) -> None:
    """1-D/2-D convolution (grouped, strided, padded, dilated; transposed too) in float32.

    Per output: ``acc = 0``, taps in (ic, ky, kx) order with out-of-bounds taps skipped, then
    ``acc + bias``. Transposed: ``out = bias`` (or 0), then for each output the taps in the
    portable loop's (iy, ix, ic) order, i.e. (ky descending, kx descending, ic ascending).
    """
    x = _as_4d(a.input.logical)
    w = _as_4d(a.weight.logical)
    out = _as_4d(a.out.logical)
    (sy, sx), (py, px), (dy, dx), _ = _conv_params(a)
    g = a.groups
    n, cin, h, wd = x.shape
    kh, kw = w.shape[2], w.shape[3]
    cg = cin // g
    oh, ow = out.shape[2], out.shape[3]
    xg = x.reshape(n, g, cg, h, wd)
    if not a.transposed:
        og = w.shape[0] // g
        wg = w.reshape(g, og, cg, kh, kw)
        acc = np.zeros((n, g, og, oh, ow), F32)
        for ic in range(cg):
            for ky in range(kh):
                oy_s, iy_s = _taps(oh, h, sy, dy * ky - py)
                for kx in range(kw):
                    ox_s, ix_s = _taps(ow, wd, sx, dx * kx - px)
                    tap = xg[:, :, ic, None, iy_s, ix_s] * wg[None, :, :, ic, ky, kx, None, None]
                    acc[:, :, :, oy_s, ox_s] += tap
        acc = acc.reshape(n, g * og, oh, ow)
        if a.bias is not None:
            acc = acc + a.bias.logical[None, :, None, None]
        out[...] = acc
        return
    og = w.shape[1]
    wg = w.reshape(g, cg, og, kh, kw)
    acc = np.zeros((n, g, og, oh, ow), F32)
    if a.bias is not None:
        acc[...] = a.bias.logical.reshape(g, og)[None, :, :, None, None]
    for ky in reversed(range(kh)):
        # input row iy feeds output row sy·iy + dy·ky - py: the same map, read the other way.
        iy_s, oy_s = _taps(h, oh, sy, dy * ky - py)
        for kx in reversed(range(kw)):
            ix_s, ox_s = _taps(wd, ow, sx, dx * kx - px)
            for ic in range(cg):
                acc[:, :, :, oy_s, ox_s] += (
                    xg[:, :, ic, None, iy_s, ix_s] * wg[None, :, ic, :, ky, kx, None, None]
                )
    out[...] = acc.reshape(n, g * og, oh, ow)


@convolution.validator
def _validate_convolution(a: Args) -> None:
    for name in ("input", "weight", "out"):
        _check_dtype(a, name)
    x, w = a.input.sizes, a.weight.sizes
    if len(x) not in (3, 4):
        raise a.error("input", "3-D [N, C, L] or 4-D [N, C, H, W]", list(x))
    if len(w) != len(x):
        raise a.error("weight", f"{len(x)}-D like input", list(w))
    if a.groups < 1 or x[1] % a.groups:
        raise a.error("groups", f"a positive divisor of the {x[1]} input channels", a.groups)
    spatial = len(x) - 2
    for name in ("stride", "padding", "dilation"):
        values = getattr(a, name)
        if len(values) not in (1, spatial):
            raise a.error(name, f"1 or {spatial} values", list(values))
    (sy, sx), (py, px), (dy, dx), (opy, opx) = _conv_params(a)
    if min(sy, sx, dy, dx) < 1 or min(py, px) < 0:
        raise a.error("stride", "positive strides and dilations, non-negative padding", list(a.stride))
    if a.transposed:
        if w[0] != x[1]:
            raise a.error("weight", f"[{x[1]}, out_channels / groups, ...] for a transposed conv", list(w))
        if not (0 <= opy < max(sy, dy) and 0 <= opx < max(sx, dx)):
            raise a.error("output_padding", "smaller than stride or dilation", list(a.output_padding))
        out_channels = w[1] * a.groups
    else:
        if w[1] * a.groups != x[1] or w[0] % a.groups:
            raise a.error("weight", f"[k·{a.groups}, {x[1] // a.groups}, ...] for {a.groups} groups", list(w))
        out_channels = w[0]
    if a.bias is not None:
        _check_dtype(a, "bias")
        _check_sizes(a, "bias", (out_channels,))
    expected = _conv_out_sizes(a)
    if min(expected[2:]) < 1:
        raise a.error("input", "large enough for the kernel (output size would be < 1)", list(x))
    _check_sizes(a, "out", expected)
    _check_same_dim_order(a, "input", "out")


@convolution.mac_count
def _convolution_macs(a: Args) -> int:
    w = a.weight.sizes
    taps = math.prod(w[2:])
    if a.transposed:
        return math.prod(a.input.sizes) * w[1] * taps
    return math.prod(a.out.sizes) * w[1] * taps

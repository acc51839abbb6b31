"""Portable pooling: ``avg_pool2d.out`` (float32, one division by the window count) and
``max_pool2d_with_indices.out`` (any real dtype, first maximum in (ky, kx) order wins).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from refsim.ops.portable_float._common import (
    F32,
    FLOAT32,
    REAL_TYPES,
    _check_default_dim_order,
    _check_dtype,
    _check_same_dim_order,
    _check_same_dtype,
    _check_sizes,
    _portable,
    _taps,
    _val_at,
)
from refsim.ops.registry import Args
from refsim.pte.model import ScalarType


def _pool_out_size(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """ExecuTorch's ``_kernel_output_size_helper`` (PyTorch's pooling_output_shape)."""
    numerator = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = numerator // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _pool_params(a: Args, dilation: Sequence[int] = ()) -> tuple[tuple[int, ...], ...]:
    k = tuple(_val_at(a.kernel_size, i, 1) for i in (0, 1))
    s = tuple(_val_at(a.stride, i, k[i]) for i in (0, 1))
    p = tuple(_val_at(a.padding, i, 0) for i in (0, 1))
    d = tuple(_val_at(dilation, i, 1) for i in (0, 1))
    return k, s, p, d


def _validate_pool(a: Args, dilation: Sequence[int], allowed: frozenset[ScalarType]) -> None:
    _check_dtype(a, "self", allowed)
    _check_same_dtype(a, "self", "out")
    x = a.self.sizes
    if len(x) not in (3, 4):
        raise a.error("self", "3-D [C, H, W] or 4-D [N, C, H, W]", list(x))
    for name, values in (("kernel_size", a.kernel_size), ("stride", a.stride), ("padding", a.padding)):
        if len(values) > 2 or (name == "kernel_size" and not values):
            raise a.error(
                name, "1 or 2 values" + ("" if name == "kernel_size" else " (or none)"), list(values)
            )
    k, s, p, d = _pool_params(a, dilation)
    if min(*k, *s, *d) < 1:
        raise a.error("kernel_size", "positive kernel sizes, strides and dilations", list(a.kernel_size))
    if not all(0 <= p[i] <= k[i] // 2 for i in (0, 1)):
        raise a.error("padding", f"between 0 and half the kernel size {list(k)}", list(a.padding))
    out_hw = [_pool_out_size(x[-2 + i], k[i], s[i], p[i], d[i], a.ceil_mode) for i in (0, 1)]
    if min(out_hw) < 1:
        raise a.error("self", "large enough for the pooling window", list(x))
    _check_sizes(a, "out", (*x[:-2], *out_hw))
    _check_same_dim_order(a, "self", "out")


@_portable(
    "aten::avg_pool2d.out(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None, *, Tensor(a!) out) -> Tensor(a!)"
)
def avg_pool2d(a: Args) -> None:
    """Window sum in (ky, kx) order over in-bounds taps, then ``sum / (float)count`` (float32).

    count = divisor_override, else the window clipped to the padded input (count_include_pad)
    or to the input itself.
    """
    (kh, kw), (sh, sw), (ph, pw), _ = _pool_params(a)
    x, out = a.self.logical, a.out.logical
    h, w = x.shape[-2:]
    oh, ow = out.shape[-2:]
    acc = np.zeros(out.shape, F32)
    for ky in range(kh):
        oy_s, iy_s = _taps(oh, h, sh, ky - ph)
        for kx in range(kw):
            ox_s, ix_s = _taps(ow, w, sw, kx - pw)
            acc[..., oy_s, ox_s] += x[..., iy_s, ix_s]
    if a.divisor_override is not None:
        out[...] = acc / F32(a.divisor_override)
        return
    counts = []
    for o, size, k, s, p in ((oh, h, kh, sh, ph), (ow, w, kw, sw, pw)):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, size + p)
        if not a.count_include_pad:
            start, end = np.maximum(start, 0), np.minimum(end, size)
        counts.append(end - start)
    out[...] = acc / np.outer(counts[0], counts[1]).astype(F32)


@avg_pool2d.validator
def _validate_avg_pool2d(a: Args) -> None:
    _validate_pool(a, (), frozenset({FLOAT32}))
    _check_default_dim_order(a, "self")
    if a.divisor_override is not None and a.divisor_override == 0:
        raise a.error("divisor_override", "non-zero", 0)


@_portable(
    "aten::max_pool2d_with_indices.out(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False, *, Tensor(a!) out, Tensor(b!) indices) -> (Tensor(a!), Tensor(b!))"
)
def max_pool2d_with_indices(a: Args) -> None:
    """Window max over in-bounds taps in (ky, kx) order; a later tap wins only if strictly greater.

    ``indices`` holds ``iy * W + ix`` of the winner (int64). Any real dtype.
    """
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = _pool_params(a, a.dilation)
    x, out = a.self.logical, a.out.logical
    h, w = x.shape[-2:]
    oh, ow = out.shape[-2:]
    best = np.zeros(out.shape, x.dtype)
    index = np.zeros(out.shape, np.int64)
    seen = np.zeros(out.shape, bool)
    rows = np.arange(h, dtype=np.int64)[:, None] * w + np.arange(w, dtype=np.int64)[None, :]
    for ky in range(kh):
        oy_s, iy_s = _taps(oh, h, sh, dh * ky - ph)
        for kx in range(kw):
            ox_s, ix_s = _taps(ow, w, sw, dw * kx - pw)
            region = (..., oy_s, ox_s)
            v = x[..., iy_s, ix_s]
            take = ~seen[region] | (v > best[region])
            best[region] = np.where(take, v, best[region])
            index[region] = np.where(take, rows[iy_s, ix_s], index[region])
            seen[region] = True
    out[...] = best
    # indices_ptr[out_idx]: the indices are stored with out's strides, whatever their own dim order.
    order = a.out.dim_order
    inverse = tuple(int(i) for i in np.argsort(order))
    a.indices.storage.reshape([a.out.sizes[d] for d in order]).transpose(inverse)[...] = index


@max_pool2d_with_indices.validator
def _validate_max_pool2d(a: Args) -> None:
    if len(a.dilation) > 2:
        raise a.error("dilation", "1 or 2 values", list(a.dilation))
    _validate_pool(a, a.dilation, REAL_TYPES)
    _check_dtype(a, "indices", frozenset({ScalarType.INT64}))
    _check_sizes(a, "indices", a.out.sizes)

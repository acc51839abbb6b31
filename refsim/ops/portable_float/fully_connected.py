"""Portable fp32 matrix products: addmm, mm, bmm and linear, each ``sum = 0; for k: sum +=
a[i,k] * b[k,j]`` in float32 (``vec_matmul``), then alpha/beta (addmm) or the bias (linear).
"""

from __future__ import annotations

import math

import numpy as np

from refsim.ops.portable_float._common import (
    F32,
    _check_default_dim_order,
    _check_dtype,
    _check_sizes,
    _portable,
)
from refsim.ops.registry import Args


def _matmul(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``vec_matmul``: ``sum = 0; for k: sum += x[..., i, k] * y[..., k, j]`` in float32."""
    acc = np.zeros((*np.broadcast_shapes(x.shape[:-2], y.shape[:-2]), x.shape[-2], y.shape[-1]), F32)
    for k in range(x.shape[-1]):
        acc += x[..., :, k, None] * y[..., None, k, :]
    return acc


@_portable(
    "aten::addmm.out(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)"
)
def addmm(a: Args) -> None:
    """``sum_k mat1[i,k]·mat2[k,j]`` sequentially, then ``sum·alpha + self·beta`` (float32)."""
    acc = _matmul(a.mat1.logical, a.mat2.logical)
    a.out.logical[...] = acc * F32(a.alpha) + a.self.logical * F32(a.beta)


@addmm.validator
def _validate_addmm(a: Args) -> None:
    for name in ("self", "mat1", "mat2", "out"):
        _check_dtype(a, name)
    m1, m2 = a.mat1.sizes, a.mat2.sizes
    if len(m1) != 2:
        raise a.error("mat1", "2-D", list(m1))
    if len(m2) != 2 or m2[0] != m1[1]:
        raise a.error("mat2", f"2-D with {m1[1]} rows (mat1's columns)", list(m2))
    _check_sizes(a, "out", (m1[0], m2[1]))
    try:
        np.broadcast_shapes(tuple(a.self.sizes), (m1[0], m2[1]))
    except ValueError:
        raise a.error("self", f"broadcastable to {[m1[0], m2[1]]}", list(a.self.sizes)) from None
    _check_default_dim_order(a, "self", "mat1", "mat2", "out")


@addmm.mac_count
def _addmm_macs(a: Args) -> int:
    return a.mat1.sizes[0] * a.mat1.sizes[1] * a.mat2.sizes[1]


@_portable("aten::mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)")
def mm(a: Args) -> None:
    """``out[i,j] = sum_k self[i,k]·mat2[k,j]``, k sequential, float32."""
    a.out.logical[...] = _matmul(a.self.logical, a.mat2.logical)


@mm.validator
def _validate_mm(a: Args) -> None:
    for name in ("self", "mat2", "out"):
        _check_dtype(a, name)
    s, m2 = a.self.sizes, a.mat2.sizes
    if len(s) != 2:
        raise a.error("self", "2-D", list(s))
    if len(m2) != 2 or m2[0] != s[1]:
        raise a.error("mat2", f"2-D with {s[1]} rows (self's columns)", list(m2))
    _check_sizes(a, "out", (s[0], m2[1]))
    _check_default_dim_order(a, "self", "mat2", "out")


@mm.mac_count
def _mm_macs(a: Args) -> int:
    return a.self.sizes[0] * a.self.sizes[1] * a.mat2.sizes[1]


@_portable("aten::bmm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)")
def bmm(a: Args) -> None:
    """Per batch, ``out[b,i,j] = sum_k self[b,i,k]·mat2[b,k,j]``, k sequential, float32."""
    a.out.logical[...] = _matmul(a.self.logical, a.mat2.logical)


@bmm.validator
def _validate_bmm(a: Args) -> None:
    for name in ("self", "mat2", "out"):
        _check_dtype(a, name)
    s, m2 = a.self.sizes, a.mat2.sizes
    if len(s) != 3:
        raise a.error("self", "3-D", list(s))
    if len(m2) != 3 or m2[0] != s[0] or m2[1] != s[2]:
        raise a.error("mat2", f"3-D [{s[0]}, {s[2]}, p]", list(m2))
    _check_sizes(a, "out", (s[0], s[1], m2[2]))
    _check_default_dim_order(a, "self", "mat2", "out")


@bmm.mac_count
def _bmm_macs(a: Args) -> int:
    b, m, n = a.self.sizes
    return b * m * n * a.mat2.sizes[2]


@_portable(
    "aten::linear.out(Tensor input, Tensor weight, Tensor? bias=None, *, Tensor(a!) out) -> Tensor(a!)"
)
def linear(a: Args) -> None:
    """``sum_k input[..., k]·weight[n, k]`` sequentially, then ``+ bias[n]`` (float32).

    ExecuTorch has no portable linear (to_edge decomposes it to permute + addmm); this is the
    addmm order with alpha = beta = 1.
    """
    x = a.input.logical
    acc = _matmul(x.reshape(-1, x.shape[-1]), a.weight.logical.T).reshape(a.out.sizes)
    if a.bias is not None:
        acc = acc + a.bias.logical
    a.out.logical[...] = acc


@linear.validator
def _validate_linear(a: Args) -> None:
    for name in ("input", "weight", "out"):
        _check_dtype(a, name)
    x, w = a.input.sizes, a.weight.sizes
    if len(x) < 1:
        raise a.error("input", "at least 1-D", list(x))
    if len(w) != 2 or w[1] != x[-1]:
        raise a.error("weight", f"2-D [out_features, {x[-1]}]", list(w))
    if a.bias is not None:
        _check_dtype(a, "bias")
        # The bias is added to the [..., out_features] product in place: it must broadcast to
        # that shape without growing it ([6, 1] against [2, 4] broadcasts with [4] alone).
        out = (*x[:-1], w[0])
        try:
            fits = np.broadcast_shapes(tuple(a.bias.sizes), out) == out
        except ValueError:
            fits = False
        if not fits:
            raise a.error("bias", f"broadcastable to {list(out)}", list(a.bias.sizes))
    _check_sizes(a, "out", (*x[:-1], w[0]))
    _check_default_dim_order(a, "input", "weight", "out")


@linear.mac_count
def _linear_macs(a: Args) -> int:
    return math.prod(a.input.sizes) * a.weight.sizes[0]

"""Portable fp32 inference batch norm (``_native_batch_norm_legit_no_training.out``)."""

from __future__ import annotations

import math

import numpy as np

from refsim.ops.cortex_m_elementwise import raw
from refsim.ops.portable_float._common import (
    F32,
    _check_default_dim_order,
    _check_dtype,
    _check_sizes,
    _portable,
)
from refsim.ops.registry import Args


@_portable(
    "aten::_native_batch_norm_legit_no_training.out(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, float momentum, float eps, *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2) -> (Tensor(a!), Tensor(b!), Tensor(c!))"
)
def batch_norm(a: Args) -> None:
    """Inference batch norm over dim 1: ``((x - mean) · invstd) · weight + bias`` in float32.

    ``invstd = (float)(1.0 / sqrt((double)var + eps))``; out1/out2 (saved stats) stay empty.
    """
    x = a.input.logical
    shape = (1, -1) + (1,) * (x.ndim - 2) if x.ndim >= 2 else (-1,)
    invstd = (1.0 / np.sqrt(a.running_var.logical.astype(np.float64) + a.eps)).astype(F32)
    weight = F32(1) if a.weight is None else a.weight.logical.reshape(shape)
    bias = F32(0) if a.bias is None else a.bias.logical.reshape(shape)
    # in is in the default dim order (checked); out0 is written by a pointer walking with in's.
    raw(a.out0)[...] = (x - a.running_mean.logical.reshape(shape)) * invstd.reshape(shape) * weight + bias


@batch_norm.validator
def _validate_batch_norm(a: Args) -> None:
    _check_dtype(a, "input")
    _check_dtype(a, "out0")
    x = a.input.sizes
    channels = x[1] if len(x) >= 2 else x[0] if x else 1
    for name in ("weight", "bias", "running_mean", "running_var"):
        if getattr(a, name) is not None:
            _check_dtype(a, name)
            _check_sizes(a, name, (channels,))
    _check_sizes(a, "out0", x)
    _check_default_dim_order(a, "input")
    for name in ("out1", "out2"):
        if math.prod(getattr(a, name).sizes) != 0:
            raise a.error(
                name, "an empty tensor (ExecuTorch resizes it to [0])", list(getattr(a, name).sizes)
            )

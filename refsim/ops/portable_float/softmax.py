"""Portable fp32 ``_softmax.out``: ``expf(x - max)``, a left-to-right sum, one division per
element, over the bytes as ``apply_over_dim`` walks them.
"""

from __future__ import annotations

import math

import numpy as np

from refsim.ops.cortex_m_elementwise import raw
from refsim.ops.portable_float._common import (
    _check_dtype,
    _check_same_dim_order,
    _check_sizes,
    _correctly_rounded,
    _portable,
    _sequential_sum,
)
from refsim.ops.registry import Args


@_portable("aten::_softmax.out(Tensor self, int dim, bool half_to_float, *, Tensor(a!) out) -> Tensor(a!)")
def softmax(a: Args) -> None:
    """``e = expf(x - max)``; ``sum`` left to right; ``out = e / sum`` (float32).

    ``apply_over_dim`` walks the bytes as if contiguous in ``sizes`` (getTrailingDims), so a
    channels-last tensor is read that way too.
    """
    x = np.moveaxis(raw(a.self), a.dim, -1)
    e = _correctly_rounded(np.exp, x - x.max(axis=-1, keepdims=True))
    out = e / _sequential_sum(e)[..., None]
    raw(a.out)[...] = np.moveaxis(out, -1, a.dim)


@softmax.validator
def _validate_softmax(a: Args) -> None:
    _check_dtype(a, "self")
    _check_dtype(a, "out")
    rank = len(a.self.sizes)
    if not -max(rank, 1) <= a.dim < max(rank, 1):
        raise a.error("dim", f"in [-{rank}, {rank - 1}]", a.dim)
    if a.half_to_float:
        raise a.error("half_to_float", "False (not supported on CPU)", True)
    if math.prod(a.self.sizes) == 0:
        raise a.error("self", "a non-empty tensor", list(a.self.sizes))
    _check_sizes(a, "out", a.self.sizes)
    _check_same_dim_order(a, "self", "out")

"""Portable fp32 reductions: ``mean.out`` and ``sum.IntList_out``, a sequential float32 sum over
the reduced dims in row-major order (``np.add.accumulate``, never numpy's pairwise ``np.sum``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from refsim.ops.portable_float._common import (
    F32,
    FLOAT32,
    _check_default_dim_order,
    _check_dtype,
    _check_sizes,
    _portable,
    _sequential_sum,
)
from refsim.ops.registry import Args


def _dims(a: Args, argument: str, rank: int) -> tuple[int, ...]:
    """A reduction's dim list normalised to ascending non-negative dims (None or [] = all)."""
    dims = getattr(a, argument)
    if not dims:
        return tuple(range(rank))
    out = []
    for d in dims:
        if not -max(rank, 1) <= d < max(rank, 1):
            raise a.error(argument, f"dims in [-{rank}, {rank - 1}]", list(dims))
        out.append(d % max(rank, 1))
    if len(set(out)) != len(out):
        raise a.error(argument, "distinct dims", list(dims))
    return tuple(sorted(out))


def _reduced_sizes(sizes: Sequence[int], dims: Sequence[int], keepdim: bool) -> tuple[int, ...]:
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(sizes))
    return tuple(s for i, s in enumerate(sizes) if i not in dims)


def _reduce_sum(a: Args) -> np.ndarray:
    """Sum over ``a.dim`` in row-major order of the reduced dims, shaped like ``a.out``."""
    x = a.self.logical
    dims = _dims(a, "dim", x.ndim)
    kept = [d for d in range(x.ndim) if d not in dims]
    moved = np.transpose(x, (*kept, *dims)).reshape(*(x.shape[d] for d in kept), -1)
    return _sequential_sum(moved).reshape(a.out.sizes)


def _validate_reduction(a: Args) -> None:
    _check_dtype(a, "self")
    _check_dtype(a, "out")
    if a.dtype is not None and a.dtype != FLOAT32:
        raise a.error("dtype", "None or float32 (6)", a.dtype)
    dims = _dims(a, "dim", len(a.self.sizes))
    _check_sizes(a, "out", _reduced_sizes(a.self.sizes, dims, a.keepdim))
    _check_default_dim_order(a, "self", "out")


@_portable(
    "aten::mean.out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)"
)
def mean(a: Args) -> None:
    """Sequential float32 sum over ``dim`` (None/[] = all), then ``sum / (float)count``."""
    count = math.prod(a.self.sizes[d] for d in _dims(a, "dim", len(a.self.sizes)))
    a.out.logical[...] = _reduce_sum(a) / F32(count)


mean.validator(_validate_reduction)


@_portable(
    "aten::sum.IntList_out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)"
)
def sum_dim(a: Args) -> None:
    """Sequential float32 sum over ``dim`` (None/[] = all)."""
    a.out.logical[...] = _reduce_sum(a)


sum_dim.validator(_validate_reduction)

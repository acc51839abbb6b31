"""Portable fp32 elementwise arithmetic: add, sub (with alpha), mul, div with broadcasting
(``op_add.cpp`` ...), and the one-tensor neg, exp, sqrt and rsqrt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from refsim.ops.portable import is_default_dim_order
from refsim.ops.portable_float._common import (
    F32,
    REAL_TYPES,
    _broadcast,
    _check_dtype,
    _check_same_dim_order,
    _check_sizes,
    _correctly_rounded,
    _portable,
    _unary,
)
from refsim.ops.registry import Args


def _sizes_match_ignoring_leading_1s(x: Sequence[int], y: Sequence[int]) -> bool:
    def strip(s: Sequence[int]) -> tuple[int, ...]:
        s = tuple(s)
        while s and s[0] == 1:
            s = s[1:]
        return s

    return strip(x) == strip(y)


def _binary(schema: str, fn: Callable[[Args, np.ndarray, np.ndarray], np.ndarray], doc: str) -> None:
    def run(a: Args) -> None:
        a.out.logical[...] = fn(a, a.self.logical, a.other.logical)

    run.__doc__ = doc
    op = _portable(schema)(run)

    @op.validator
    def _(a: Args) -> None:
        for name in ("self", "other", "out"):
            _check_dtype(a, name)
        _check_sizes(a, "out", _broadcast(a, "self", "other"))
        _check_same_dim_order(a, "self", "other", "out")
        broadcasting = not all(
            _sizes_match_ignoring_leading_1s(t.sizes, a.out.sizes) for t in (a.self, a.other)
        )
        if broadcasting and not is_default_dim_order(a.out):
            # Portable's BroadcastIndexesRange reads inputs by their strides but writes out by a
            # linear index (as if contiguous); the optimized kernel treats all three as
            # contiguous. The two disagree, so refsim does not guess.
            raise a.error("out", "in the default dim order when broadcasting", list(a.out.dim_order))


_binary(
    "aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
    lambda a, x, y: x + F32(a.alpha) * y,
    "out = self + alpha * other in float32 (product rounded, then the sum), with broadcasting.",
)
_binary(
    "aten::sub.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
    lambda a, x, y: x - F32(a.alpha) * y,
    "out = self - alpha * other in float32, with broadcasting.",
)
_binary(
    "aten::mul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
    lambda a, x, y: x * y,
    "out = self * other in float32, with broadcasting.",
)
_binary(
    "aten::div.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
    lambda a, x, y: x / y,
    "out = self / other in float32 (IEEE division), with broadcasting.",
)

_unary("neg", np.negative, "-x; any real dtype (integers wrap).", REAL_TYPES)


def _rsqrt(x: np.ndarray) -> np.ndarray:
    # ``1.0 / std::sqrt(x)``: sqrtf, then a double division rounded to float.
    return (1.0 / np.sqrt(x).astype(np.float64)).astype(F32)


_unary("exp", lambda x: _correctly_rounded(np.exp, x), "expf(x).")
_unary("sqrt", np.sqrt, "sqrtf(x) (IEEE, correctly rounded).")
_unary("rsqrt", _rsqrt, "1.0 / sqrtf(x), the division in double, rounded to float.")

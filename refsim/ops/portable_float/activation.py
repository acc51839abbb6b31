"""Portable activations: clamp and hardtanh (any real dtype, the int8 clamp a Cortex-M program
carries included), relu, sigmoid, tanh, hardsigmoid, hardswish and gelu (erf or tanh form).
"""

from __future__ import annotations

import math

import numpy as np

from kernels_py._jit import jit
from refsim.ops.cortex_m_elementwise import flat
from refsim.ops.portable_float._common import (
    F32,
    REAL_TYPES,
    _check_dtype,
    _check_same_dim_order,
    _check_same_dtype,
    _check_sizes,
    _correctly_rounded,
    _portable,
    _scalar_fits,
    _unary,
)
from refsim.ops.registry import Args


@jit
def _erf_f64(x: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = math.erf(x[i])
    return out


def _erf(x: np.ndarray) -> np.ndarray:
    """C's ``erf`` (double) elementwise; numpy has none, numba lowers math.erf to libm."""
    values = np.ascontiguousarray(x, dtype=np.float64).reshape(-1)
    return _erf_f64(values).reshape(x.shape)


def _clamp(x: np.ndarray, lo: object, hi: object) -> np.ndarray:
    """``max_override`` then ``min_override`` (NaN propagates), bounds cast to the tensor type."""
    if lo is not None:
        x = np.maximum(x, np.asarray(lo).astype(x.dtype))
    if hi is not None:
        x = np.minimum(x, np.asarray(hi).astype(x.dtype))
    return x


@_portable(
    "aten::clamp.out(Tensor self, Scalar? min=None, Scalar? max=None, *, Tensor(a!) out) -> Tensor(a!)"
)
def clamp(a: Args) -> None:
    """Clamp to [min, max] (either may be None) in the tensor's own type; any real dtype (int8 too)."""
    flat(a.out)[...] = _clamp(flat(a.self), a.min, a.max)


def _validate_bounds(a: Args, lo: str, hi: str) -> None:
    _check_dtype(a, "self", REAL_TYPES)
    _check_same_dtype(a, "self", "out")
    for bound in (lo, hi):
        _scalar_fits(a, bound, a.self.dtype)
    _check_sizes(a, "out", a.self.sizes)
    _check_same_dim_order(a, "self", "out")


@clamp.validator
def _validate_clamp(a: Args) -> None:
    if a.min is None and a.max is None:
        raise a.error("min", "given when max is None (at least one bound)", None)
    _validate_bounds(a, "min", "max")


@_portable(
    "aten::hardtanh.out(Tensor self, Scalar min_val=-1, Scalar max_val=1, *, Tensor(a!) out) -> Tensor(a!)"
)
def hardtanh(a: Args) -> None:
    """Clamp to [min_val, max_val] in the tensor's type (ReLU6 is hardtanh(0, 6)); any real dtype."""
    flat(a.out)[...] = _clamp(flat(a.self), a.min_val, a.max_val)


hardtanh.validator(lambda a: _validate_bounds(a, "min_val", "max_val"))


def _relu(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind == "f":
        return np.where(np.isnan(x) | (x >= 0), x, x.dtype.type(0))
    return np.maximum(x, x.dtype.type(0))


_unary(
    "relu",
    _relu,
    "x if x >= 0 or x is NaN, else 0; any real dtype.",
    REAL_TYPES,
    same_dim_order=False,  # op_relu.cpp checks shape and dtype only
)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    one = F32(1)
    return one / (one + _correctly_rounded(np.exp, -x))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    # kBeta = float(sqrt(2) * 2/sqrt(pi) * 0.5), kKappa = 0.044715f; inner terms in float,
    # then 0.5 * x * (1.0 + tanhf(inner)) in double (the literals are doubles).
    k_beta = F32(math.sqrt(2.0) * (2.0 / math.sqrt(math.pi)) * 0.5)
    k_kappa = F32(0.044715)
    inner = k_beta * (x + k_kappa * (x * x * x))
    t = _correctly_rounded(np.tanh, inner).astype(np.float64)
    out = (0.5 * x.astype(np.float64) * (1.0 + t)).astype(F32)
    out[np.isposinf(x)] = np.inf
    out[np.isneginf(x)] = 0
    return out


def _gelu_erf(x: np.ndarray) -> np.ndarray:
    # static_cast<float>(0.5 * x * (1 + erf(x * M_SQRT1_2))), all in double.
    x64 = x.astype(np.float64)
    out = (0.5 * x64 * (1.0 + _erf(x64 * (1.0 / math.sqrt(2.0))))).astype(F32)
    out[np.isposinf(x)] = np.inf
    out[np.isneginf(x)] = 0
    return out


def _hardsigmoid(x: np.ndarray) -> np.ndarray:
    return np.minimum(np.maximum(x + F32(3), F32(0)), F32(6)) / F32(6)


def _hardswish(x: np.ndarray) -> np.ndarray:
    return x * np.minimum(np.maximum(x + F32(3), F32(0)), F32(6)) / F32(6)


_unary("sigmoid", _sigmoid, "1 / (1 + expf(-x)) in float32.")
_unary("tanh", lambda x: _correctly_rounded(np.tanh, x), "tanhf(x).")
_unary(
    "hardsigmoid",
    _hardsigmoid,
    "min(max(x + 3, 0), 6) / 6 in float32 (ATen's formula; ExecuTorch 1.5 decomposes it at export).",
)
_unary(
    "hardswish",
    _hardswish,
    "x * min(max(x + 3, 0), 6) / 6 in float32 (ATen's formula; ExecuTorch 1.5 decomposes it at export).",
)


@_portable('aten::gelu.out(Tensor self, *, str approximate="none", Tensor(a!) out) -> Tensor(a!)')
def gelu(a: Args) -> None:
    """GELU: ``0.5·x·(1 + erf(x/√2))`` in double, or the tanh approximation with float inner terms."""
    fn = _gelu_tanh if a.approximate == "tanh" else _gelu_erf
    flat(a.out)[...] = fn(flat(a.self))


@gelu.validator
def _validate_gelu(a: Args) -> None:
    _check_dtype(a, "self")
    _check_dtype(a, "out")
    if a.approximate not in ("none", "tanh"):
        raise a.error("approximate", "'none' or 'tanh'", repr(a.approximate))
    _check_sizes(a, "out", a.self.sizes)
    _check_same_dim_order(a, "self", "out")

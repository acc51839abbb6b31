"""ExecuTorch's portable fp32 kernels: what a mixed program's CPU fallback layers compute.

Each op registers under its exact ``.out`` schema (``torch.ops.aten.<op>.out._schema`` of torch
2.13, the names ExecuTorch 1.5.1's emitter writes) and follows the portable kernel
(``kernels/portable/cpu/op_<op>.cpp``): float32 arithmetic with the few double intermediates
the C++ has, and the same accumulation order, which is what makes refsim agree with a
portable build bit for bit rather than within a tolerance. Every reduction is sequential:

* convolution: ``acc = 0; for ic, ky, kx: acc += x * w`` (out-of-bounds taps skipped), then
  ``+ bias``; transposed: ``out = bias``, then each output's taps in (iy, ix, ic) order.
* addmm / mm / bmm / linear: ``sum = 0; for k: sum += a[i,k] * b[k,j]``, then
  ``sum * alpha + self * beta`` (addmm) or ``+ bias`` (linear).
* mean / sum / softmax denominators: left to right over the reduced elements (row-major in
  the reduced dims) with ``np.add.accumulate``, which is strictly sequential (``np.sum`` is
  pairwise). avg_pool2d: taps in (ky, kx) order, then one division by the count.

Measured against ``executorch.runtime`` 1.5.1 (tests/interop/test_portable_float_interop.py):
conv (incl. grouped, dilated, 1-D, transposed), addmm, pooling, mean, batch norm, the
clamps, add/sub (alpha), mul, div by a tensor, sqrt, rsqrt, neg are bit-exact. Where they
are not, the cause is on the runtime's side and refsim keeps the portable semantics: the
Python wheel links ExecuTorch's *optimized* kernels for mm, bmm and linear (blocked gemm
whose last bits even depend on buffer alignment), sum.IntList, exp, gelu (vectorised erf,
~1e-2 relative in the far negative tail, where refsim is correctly rounded) and div by a
one-element tensor (multiplies by the reciprocal); and transcendentals (exp, tanh, erf,
sigmoid's exp) are evaluated here in float64 and rounded once, i.e. the correctly rounded
float, which glibc's expf/tanhf match to 1 ULP (newlib's on a device may differ by a few
ULP). All of these agree within 1e-5 relative plus 1e-6 of the output's magnitude. A
compiler that contracts ``acc += a*b`` into FMA (GCC does by default for a Cortex-M with an
FPU) would change a device's last bits as well.

Dim order is ExecuTorch's business too: its checks become validators
(``tensors_have_same_dim_order``: all default or all channels-last; the default dim order
where the kernel assumes contiguous data: mean, sum, matrix products, avg_pool2d, batch
norm). Elementwise kernels walk the bytes in memory order, convolution and max-pool honour
strides, softmax reads the bytes as if contiguous in ``sizes`` (``apply_over_dim``), as the
C++ does. Broadcasting a channels-last output is refused: the portable and optimized kernels
compute different things there.

Dtypes: float32, except relu, neg, hardtanh, clamp and max_pool2d_with_indices, which are
dtype-generic (the int8 clamp a Cortex-M program carries is this ``aten::clamp.out``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import numpy as np

from kernels_py._jit import jit
from refsim.ops.cortex_m_elementwise import flat, raw
from refsim.ops.portable import have_same_dim_order, is_default_dim_order
from refsim.ops.registry import Args, OpDef, register
from refsim.pte.model import ScalarType

F32 = np.float32
FLOAT32 = ScalarType.FLOAT32
#: Types the dtype-generic ops accept (ExecuTorch's REAL types that numpy can hold).
REAL_TYPES = frozenset(
    {
        ScalarType.UINT8,
        ScalarType.INT8,
        ScalarType.INT16,
        ScalarType.INT32,
        ScalarType.INT64,
        ScalarType.FLOAT32,
        ScalarType.FLOAT64,
    }
)


def _portable(schema: str) -> Callable[[Callable[[Args], None]], OpDef]:
    """Register a portable fallback kernel; its float arithmetic runs with IEEE semantics
    (overflow to inf, 0·inf = NaN) and no numpy warnings, as the C++ does."""

    def wrap(fn: Callable[[Args], None]) -> OpDef:
        @functools.wraps(fn)
        def run(a: Args) -> None:
            with np.errstate(all="ignore"):
                fn(a)

        return register(schema, portable_fallback=True)(run)

    return wrap


# --- shared checks ------------------------------------------------------------------------------


def _name(t: ScalarType) -> str:
    return t.name.lower()


def _check_dtype(a: Args, argument: str, allowed: frozenset[ScalarType] = frozenset({FLOAT32})) -> None:
    t = getattr(a, argument)
    if t.scalar_type not in allowed:
        expected = " or ".join(sorted(_name(s) for s in allowed))
        raise a.error(argument, f"a {expected} tensor", _name(t.scalar_type))


def _check_same_dtype(a: Args, reference: str, *others: str) -> None:
    want = getattr(a, reference).scalar_type
    for argument in others:
        found = getattr(a, argument).scalar_type
        if found != want:
            raise a.error(argument, f"{_name(want)} like {reference}", _name(found))


def _check_sizes(a: Args, argument: str, expected: Sequence[int]) -> None:
    found = tuple(getattr(a, argument).sizes)
    if found != tuple(expected):
        raise a.error(argument, f"sizes {list(expected)}", list(found))


def _check_same_dim_order(a: Args, *names: str) -> None:
    """``tensors_have_same_dim_order``: all default or all channels-last (not merely equal)."""
    tensors = [getattr(a, n) for n in names if getattr(a, n) is not None]
    if not have_same_dim_order(*tensors):
        found = ", ".join(f"{n} {list(getattr(a, n).dim_order)}" for n in names if getattr(a, n) is not None)
        raise a.error(
            "/".join(names), "all default or all channels-last dim orders (as ExecuTorch checks)", found
        )


def _check_default_dim_order(a: Args, *names: str) -> None:
    """``tensor_is_default_dim_order``: what ExecuTorch's kernel requires before it runs."""
    for name in names:
        t = getattr(a, name)
        if not is_default_dim_order(t):
            raise a.error(
                name, "in the default dim order (the portable kernel requires it)", list(t.dim_order)
            )


def _broadcast(a: Args, *arguments: str) -> tuple[int, ...]:
    shapes = [tuple(getattr(a, n).sizes) for n in arguments]
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise a.error(
            arguments[-1], f"broadcastable with {arguments[0]} {list(shapes[0])}", list(shapes[-1])
        ) from None


def _scalar_fits(a: Args, argument: str, dtype: np.dtype) -> None:
    """ExecuTorch's clamp/hardtanh bound check: an integer tensor takes integer bounds in its range."""
    value = getattr(a, argument)
    if value is None or dtype.kind == "f":
        if value is not None and math.isfinite(value) and abs(value) > np.finfo(dtype).max:
            raise a.error(argument, f"within the range of {dtype}", value)
        return
    if isinstance(value, float):
        raise a.error(argument, f"an integer for a {dtype} tensor (a float would promote to float)", value)
    info = np.iinfo(dtype)
    if not info.min <= int(value) <= info.max:
        raise a.error(argument, f"within [{info.min}, {info.max}] for a {dtype} tensor", value)


def _val_at(values: Sequence[int], i: int, default: int) -> int:
    """ExecuTorch's ``val_at``: one value applies to both dims; an empty list takes the default."""
    if len(values) == 0:
        return default
    return values[0] if len(values) == 1 else values[i]


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


def _sequential_sum(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Left-to-right float32 sum along ``axis`` (``acc = x0; acc += x1; ...``), as the C loops.

    ``np.add.accumulate`` adds strictly in order; ``np.sum`` would sum pairwise.
    """
    if x.shape[axis] == 0:
        return np.zeros(np.delete(x.shape, axis), F32)
    return np.take(np.add.accumulate(x, axis=axis, dtype=F32), -1, axis=axis)


def _matmul(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``vec_matmul``: ``sum = 0; for k: sum += x[..., i, k] * y[..., k, j]`` in float32."""
    acc = np.zeros((*np.broadcast_shapes(x.shape[:-2], y.shape[:-2]), x.shape[-2], y.shape[-1]), F32)
    for k in range(x.shape[-1]):
        acc += x[..., :, k, None] * y[..., None, k, :]
    return acc


def _correctly_rounded(fn: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> np.ndarray:
    """``fn`` in float64 rounded once to float32: what libm's ``expf``/``tanhf`` return (to 1 ULP)."""
    return fn(x.astype(np.float64)).astype(F32)


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


# --- elementwise ---------------------------------------------------------------------------------


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


#: The schema of every one-tensor elementwise op (``{}`` is the op name).
_UNARY = "aten::{}.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)"


def _unary(
    name: str,
    fn: Callable[[np.ndarray], np.ndarray],
    doc: str,
    dtypes: frozenset[ScalarType] = frozenset({FLOAT32}),
    same_dim_order: bool = True,
) -> OpDef:
    """An elementwise op: one walk over the bytes in memory order, as ``apply_unary_map_fn``."""

    def run(a: Args) -> None:
        flat(a.out)[...] = fn(flat(a.self))

    run.__doc__ = doc
    op = _portable(_UNARY.format(name))(run)

    @op.validator
    def _(a: Args) -> None:
        _check_dtype(a, "self", dtypes)
        _check_same_dtype(a, "self", "out")
        _check_sizes(a, "out", a.self.sizes)
        if same_dim_order:
            _check_same_dim_order(a, "self", "out")

    return op


_unary(
    "relu",
    _relu,
    "x if x >= 0 or x is NaN, else 0; any real dtype.",
    REAL_TYPES,
    same_dim_order=False,  # op_relu.cpp checks shape and dtype only
)
_unary("neg", np.negative, "-x; any real dtype (integers wrap).", REAL_TYPES)


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


def _rsqrt(x: np.ndarray) -> np.ndarray:
    # ``1.0 / std::sqrt(x)``: sqrtf, then a double division rounded to float.
    return (1.0 / np.sqrt(x).astype(np.float64)).astype(F32)


_unary("sigmoid", _sigmoid, "1 / (1 + expf(-x)) in float32.")
_unary("tanh", lambda x: _correctly_rounded(np.tanh, x), "tanhf(x).")
_unary("exp", lambda x: _correctly_rounded(np.exp, x), "expf(x).")
_unary("sqrt", np.sqrt, "sqrtf(x) (IEEE, correctly rounded).")
_unary("rsqrt", _rsqrt, "1.0 / sqrtf(x), the division in double, rounded to float.")
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


# --- reductions ----------------------------------------------------------------------------------


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


# --- matrix products -----------------------------------------------------------------------------


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
        try:
            np.broadcast_shapes(tuple(a.bias.sizes), (w[0],))
        except ValueError:
            raise a.error("bias", f"broadcastable to [{w[0]}]", list(a.bias.sizes)) from None
    _check_sizes(a, "out", (*x[:-1], w[0]))
    _check_default_dim_order(a, "input", "weight", "out")


@linear.mac_count
def _linear_macs(a: Args) -> int:
    return math.prod(a.input.sizes) * a.weight.sizes[0]


# --- convolution ---------------------------------------------------------------------------------


def _taps(out_size: int, in_size: int, stride: int, offset: int) -> tuple[slice, slice]:
    """Positions o in [0, out_size) whose i = stride·o + offset is in [0, in_size), and those i.

    Returned as (contiguous slice of o, strided slice of i), so a whole tap is one numpy op.
    """
    lo = max(0, -(offset // stride))
    hi = min(out_size, (in_size - 1 - offset) // stride + 1)
    if hi <= lo:
        return slice(0, 0), slice(0, 0)
    return slice(lo, hi), slice(stride * lo + offset, stride * (hi - 1) + offset + 1, stride)


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


# --- pooling -------------------------------------------------------------------------------------


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


# --- normalization -------------------------------------------------------------------------------


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

"""The shared half of the portable fp32 ops: registration and ExecuTorch's argument checks.

`_portable` registers a kernel as a portable fallback that runs with IEEE float semantics and
no numpy warnings; the ``_check_*`` validators are ExecuTorch's ``ET_KERNEL_CHECK``s (dtype,
sizes, ``tensors_have_same_dim_order``, ``tensor_is_default_dim_order``); `_sequential_sum`,
`_correctly_rounded` and `_taps` are the float helpers whose order and rounding the package
docstring (refsim/ops/portable_float/__init__.py) states; `_unary` builds a one-tensor
elementwise op (used by elementwise.py and activation.py).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import numpy as np

from refsim.ops.cortex_m_elementwise import flat
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


def _sequential_sum(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Left-to-right float32 sum along ``axis`` (``acc = x0; acc += x1; ...``), as the C loops.

    ``np.add.accumulate`` adds strictly in order; ``np.sum`` would sum pairwise.
    """
    if x.shape[axis] == 0:
        return np.zeros(np.delete(x.shape, axis), F32)
    return np.take(np.add.accumulate(x, axis=axis, dtype=F32), -1, axis=axis)


def _correctly_rounded(fn: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> np.ndarray:
    """``fn`` in float64 rounded once to float32: what libm's ``expf``/``tanhf`` return (to 1 ULP)."""
    return fn(x.astype(np.float64)).astype(F32)


def _taps(out_size: int, in_size: int, stride: int, offset: int) -> tuple[slice, slice]:
    """Positions o in [0, out_size) whose i = stride·o + offset is in [0, in_size), and those i.

    Returned as (contiguous slice of o, strided slice of i), so a whole tap is one numpy op.
    """
    lo = max(0, -(offset // stride))
    hi = min(out_size, (in_size - 1 - offset) // stride + 1)
    if hi <= lo:
        return slice(0, 0), slice(0, 0)
    return slice(lo, hi), slice(stride * lo + offset, stride * (hi - 1) + offset + 1, stride)


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

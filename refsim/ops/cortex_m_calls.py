"""What the cortex_m conv and fully-connected ops share: argument checks and prepared calls.

Used by refsim/ops/cortex_m_conv.py and refsim/ops/cortex_m_fully_connected.py. Their validators
check everything once at load (shapes, dtypes, layouts, ranges; each check raises ``a.error`` naming
the argument) and finish with a dry run of the kernels_py public wrapper on a zero input
(`_dry_run`), so any argument kernels_py would reject fails at load as an `OpError`. They also
prepare each call (a `_Plan`: NHWC views of the arena, constants copied once, the kernel's
positional operands) in ``a.state``, the per-call slot `Args` keeps for its op; a plan stays valid
until a MoveCall rebinds a tensor it views (`_Plan.fresh`). ``run`` then calls kernels_py's private
jit fast path with the prepared operands (`_execute`): the public wrappers re-validate every call
(10-20 µs per op measured, against 1-2 µs for a prepared call). Set ``cortex_m_calls.CHECKED = True`` to route every call through the public
wrappers instead (tests compare both).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from kernels_py._jit import resolve
from kernels_py.errors import KernelArgumentError
from kernels_py.types import (
    INT8_MAX,
    INT8_MIN,
    INT32_MAX,
    INT32_MIN,
    Activation,
)
from refsim.ops.registry import Args
from refsim.pte.model import ScalarType
from refsim.runtime.tensor import TensorRef

#: Route every call through kernels_py's validating public wrappers (slower; for tests).
CHECKED = False


# --- argument checks (each raises a.error naming the argument) --------------------------------------


def _tensor(a: Args, name: str, dtypes: tuple[ScalarType, ...], rank: int | None = None) -> TensorRef:
    t = getattr(a, name)
    if t.scalar_type not in dtypes:
        raise a.error(name, " or ".join(d.name.lower() for d in dtypes), t.scalar_type.name.lower())
    if rank is not None and len(t.sizes) != rank:
        raise a.error(name, f"a {rank}-D tensor", f"sizes {list(t.sizes)}")
    return t


def _contiguous(a: Args, name: str, t: TensorRef) -> None:
    if tuple(t.dim_order) != tuple(range(len(t.sizes))):
        raise a.error(
            name,
            "contiguous (dim_order [0, 1, ...]; the kernel reads its bytes row major)",
            list(t.dim_order),
        )


def _int_in(a: Args, name: str, low: int, high: int) -> int:
    value = getattr(a, name)
    if not low <= value <= high:
        raise a.error(name, f"in [{low}, {high}]", value)
    return int(value)


def _activation(a: Args) -> Activation:
    low = _int_in(a, "activation_min", INT8_MIN, INT8_MAX)
    high = _int_in(a, "activation_max", INT8_MIN, INT8_MAX)
    if low > high:
        raise a.error("activation_min", f"<= activation_max ({high})", low)
    return Activation(low, high)


def _constant_int32(a: Args, name: str, length: int, *, any_shape: bool = False) -> np.ndarray | None:
    """An int32 per-channel tensor (or None) of ``length`` values (shape ``(length,)``, or any shape with
    that many elements), flat; a constant is copied once into a private contiguous array."""
    t = getattr(a, name)
    if t is None:
        return None
    _tensor(a, name, (ScalarType.INT32,))
    count_ok = int(np.prod(t.sizes)) == length if any_shape else tuple(t.sizes) == (length,)
    if not count_ok:
        raise a.error(name, f"{length} int32 values (one per output channel)", f"sizes {list(t.sizes)}")
    flat = t.storage.reshape(-1)
    return np.array(flat, np.int32) if t.meta.is_constant else flat


def _check_multipliers(a: Args, name: str, values: np.ndarray | tuple[int, ...]) -> None:
    """Q0.31 multipliers (INT32_MIN is the one value CMSIS-NN's doubling multiply cannot take)."""
    arr = np.asarray(values, np.int64)
    if arr.size and (arr.min() <= INT32_MIN or arr.max() > INT32_MAX):
        raise a.error(name, f"in [{INT32_MIN + 1}, {INT32_MAX}]", (int(arr.min()), int(arr.max())))


def _check_shifts(a: Args, name: str, values: np.ndarray | tuple[int, ...]) -> None:
    arr = np.asarray(values, np.int64)
    if arr.size and (arr.min() < -31 or arr.max() > 30):
        raise a.error(name, "in [-31, 30] (arm_nn_requantize)", (int(arr.min()), int(arr.max())))


def _scratch(a: Args, name: str, need: dict[str, int]) -> None:
    """The tensor CMSIS-NN gets as ``ctx.buf``. Its size was chosen for the exporting target, which the
    program does not record, so it must be at least what the least demanding tier needs; `scratch_bytes`
    reports the need per tier."""
    t = _tensor(a, name, (ScalarType.UINT8, ScalarType.INT8), 1)
    if t.storage.nbytes < min(need.values()):
        tiers = ", ".join(f"{isa} {n}" for isa, n in need.items())
        raise a.error(
            name,
            f"at least the CMSIS-NN buffer size of some tier ({tiers} bytes)",
            f"{t.storage.nbytes} bytes",
        )


def _dry_run(a: Args, fn: Callable[..., np.ndarray], *operands: Any) -> np.ndarray:
    """Run the validating public wrapper once (on a zero input) so that load rejects whatever it would."""
    try:
        return fn(*operands)
    except KernelArgumentError as e:
        raise a.error(f"{e.argument} (for {e.function})", e.expected, e.found) from None


# --- prepared calls -------------------------------------------------------------------------------------


class _Plan:
    """One call, prepared: ``fn(*operands)`` computes the output, copied into ``dst`` (unless ``dst`` is
    None: the kernel writes in place). ``watch`` are the tensor arguments whose arena views the operands
    hold; a MoveCall that rebinds one makes the plan stale. ``stacked``: another ``(fn, operands)`` of
    the same call for refsim.runtime.stack to run on many samples' rows (None: ``fn`` serves both)."""

    __slots__ = ("args", "dst", "fn", "operands", "slots", "stacked", "watch")

    def __init__(self, args, fn, operands, dst, watch, stacked=None):
        # A jit kernel is resolved once to the machine code for these operands' types (AOT or numba's
        # dispatcher): the operands are the same arrays at every call, so their types cannot change.
        fn = resolve(fn, *operands)
        self.args, self.fn, self.operands, self.dst, self.watch = args, fn, operands, dst, watch
        self.stacked = stacked
        # positions in the bound values, so that the per-run check reads no attribute by name
        self.slots = tuple((args._names.index(name), ref) for name, ref in watch)

    def fresh(self, a: Args) -> bool:
        if self.args is not a:
            return False
        values = a._values
        for position, ref in self.slots:  # noqa: SIM110  (a loop: all() over a generator costs more here)
            if values[position] is not ref:
                return False
        return True


def _execute(a: Args, prepare: Callable[[Args], _Plan]) -> None:
    plan = a.state
    if plan is None or not plan.fresh(a):
        plan = a.state = prepare(a)
    if plan.dst is None:
        plan.fn(*plan.operands)
    else:
        plan.dst[...] = plan.fn(*plan.operands)


def _view(t: TensorRef, shape: tuple[int, ...]) -> np.ndarray:
    """``t``'s bytes reshaped without copying (so writes land in the arena)."""
    view = t.storage.view()
    view.shape = shape  # raises rather than copy
    return view


def _watch(a: Args, *names: str) -> tuple[tuple[str, TensorRef], ...]:
    """The non-constant tensor arguments among ``names`` (a MoveCall only ever targets those)."""
    refs = ((n, getattr(a, n)) for n in names)
    return tuple((n, t) for n, t in refs if isinstance(t, TensorRef) and not t.meta.is_constant)

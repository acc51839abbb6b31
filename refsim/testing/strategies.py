"""Hypothesis strategies for CMSIS-NN argument domains: whole calls and their parts.

    from hypothesis import given
    from refsim.testing import strategies as rst

    @given(rst.arguments("arm_convolve_wrapper_s8"))
    def test_my_conv(call):
        arrays, params = call              # VECTORS.md names: arrays["input"], params["stride.h"]

**Whole calls.** :func:`arguments` and :func:`cases` draw one valid call of a CMSIS-NN function
with the very code ``refsim conformance`` draws its cases with (each family's ``generate`` in
:mod:`refsim.conformance.functions`): hypothesis drives that code through :class:`HypothesisRng`,
a stand-in for the numpy ``Generator`` it takes. So the domain of a strategy is exactly the
domain the conformance campaigns cover, and each function's documented limits hold for every
draw (``arm_convolve_1x1_s8_fast``: stride 1, no padding; ``arm_convolve_1_x_n_s8``: one input
row, ``stride.w · C_IN % 4 == 0``; ``arm_relu6_s8``: ``size`` a uint16; at most ~50k MACs per
call...; :func:`limits` prints each function's as written in its generator). Shapes, strides,
offsets and quantization parameters shrink (each is one hypothesis draw); bulk data (tensors
bigger than four elements) comes from a numpy generator seeded by one draw, so an example stays
small and its data shrinks to seed 0.

**Parts.** The scalar domains of CMSIS-NN's quantized arithmetic, leaning on their edges:
:data:`input_offsets`, :data:`output_offsets`, :data:`multipliers`, :data:`shifts`,
:func:`activations`, :func:`int8_arrays`, :func:`int32_arrays`, :func:`per_channel`.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

try:
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp
except ModuleNotFoundError as error:  # hypothesis comes with the `testing` (and `test`) extra
    raise ModuleNotFoundError(
        f"refsim.testing.strategies needs hypothesis ({error}): pip install 'refsim[testing]'",
        name=error.name,
    ) from None

from kernels_py.types import Activation
from refsim.conformance import registry
from refsim.conformance import vectors as vec
from refsim.conformance.registry import (
    INPUT_OFFSET_RANGE,
    MULTIPLIER_RANGE,
    OUTPUT_OFFSET_RANGE,
    SHIFT_RANGE,
    Arrays,
    Params,
)

INT8 = st.integers(-128, 127)

#: input_offset = -input_zero_point, zero point in [-128, 127]
input_offsets = st.one_of(st.sampled_from([-127, 128, 0, 1, -1]), st.integers(*INPUT_OFFSET_RANGE))
#: output_offset = output_zero_point
output_offsets = st.one_of(st.sampled_from([-128, 127, 0]), st.integers(*OUTPUT_OFFSET_RANGE))
#: Q0.31 multipliers as quantize_multiplier makes them: [2^30, 2^31 - 1] (0 for a zero scale)
multipliers = st.one_of(
    st.sampled_from([1 << 30, (1 << 31) - 1, (1 << 31) - 2, (1 << 30) + 1]),
    st.integers(*MULTIPLIER_RANGE),
)
#: any legal shift; realistic conv shifts are in [-12, 0], the extremes exercise the rounding
shifts = st.one_of(st.sampled_from([-31, -30, 0, 1, 30]), st.integers(*SHIFT_RANGE), st.integers(-14, 2))


@st.composite
def activations(draw) -> Activation:
    """Full, ReLU-like, narrow and single-value clamp ranges."""
    kind = draw(st.sampled_from(["full", "relu", "narrow", "single", "any"]))
    if kind == "full":
        return Activation(-128, 127)
    if kind == "relu":
        return Activation(draw(st.integers(-128, 0)), 127)
    if kind == "single":
        v = draw(INT8)
        return Activation(v, v)
    lo = draw(INT8)
    hi = draw(st.integers(lo, min(127, lo + (8 if kind == "narrow" else 255))))
    return Activation(lo, hi)


def int8_arrays(shape) -> st.SearchStrategy[np.ndarray]:
    """int8 arrays whose elements favour -128, 127 and 0."""
    return hnp.arrays(np.int8, shape, elements=st.one_of(st.sampled_from([-128, 127, 0]), INT8))


def int32_arrays(shape, lo: int = -(2**20), hi: int = 2**20) -> st.SearchStrategy[np.ndarray]:
    return hnp.arrays(np.int32, shape, elements=st.integers(lo, hi))


def per_channel(channels: int) -> st.SearchStrategy[tuple[np.ndarray, np.ndarray]]:
    """(multiplier, shift) int32 arrays for ``channels`` output channels."""
    return st.tuples(
        hnp.arrays(np.int32, (channels,), elements=multipliers),
        hnp.arrays(np.int32, (channels,), elements=shifts),
    )


# --- whole calls: the conformance generators, driven by hypothesis ------------------------------

#: Draws with at most this many elements are made element by element (they shrink); bigger ones
#: (tensor data) come from a numpy generator seeded by one draw.
SMALL = 4
#: Draws per example before the rest of it comes from numpy (see HypothesisRng).
BUDGET = 96
_UNIT = 1 << 53  # random() and uniform() are k / 2^53, as numpy's doubles are


class HypothesisRng:
    """The part of ``numpy.random.Generator`` the conformance generators call, answered by
    hypothesis draws: ``integers``, ``choice``, ``random``, ``uniform``, ``normal``,
    ``permutation``, with numpy's argument conventions and return types.

    A weighted ``choice`` (``p=``) never picks an item of weight 0 and shrinks toward the first
    item of positive weight; ``random()`` shrinks toward 0.0. The frequencies differ from numpy's
    (hypothesis favours small and boundary values), the set of reachable values does not.

    After :data:`BUDGET` draws in one example every further call goes to a numpy generator seeded
    by one draw: a generator's rejection loop (``while True: draw a shape; if it fits: break``)
    then ends as it does with numpy, even on hypothesis' simplest input, where every draw is
    its minimum and would be rejected forever.
    """

    def __init__(self, draw: st.DrawFn) -> None:
        self._draw_fn = draw
        self._draws = 0
        self._spent: np.random.Generator | None = None

    def _draw(self, strategy: st.SearchStrategy) -> Any:
        self._draws += 1
        return self._draw_fn(strategy)

    def _numpy(self) -> np.random.Generator | None:
        """The numpy generator every call goes to once the budget is spent, else None."""
        if self._spent is None and self._draws >= BUDGET:
            self._spent = self._bulk()
        return self._spent

    def _bulk(self) -> np.random.Generator:
        return np.random.default_rng(self._draw(st.integers(0, 2**64 - 1)))

    @staticmethod
    def _small(size: Any) -> tuple[int, ...] | None:
        """The shape of a sized draw small enough to draw element by element, else None."""
        shape = (int(size),) if np.ndim(size) == 0 else tuple(int(s) for s in size)
        return shape if int(np.prod(shape)) <= SMALL else None

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint: bool = False):
        if (rng := self._numpy()) is not None:
            return rng.integers(low, high, size=size, dtype=dtype, endpoint=endpoint)
        if high is None:
            low, high = 0, low
        if np.ndim(low) or np.ndim(high) or (size is not None and self._small(size) is None):
            return self._bulk().integers(low, high, size=size, dtype=dtype, endpoint=endpoint)
        top = int(high) if endpoint else int(high) - 1
        if top < int(low):
            raise ValueError(f"integers: low {low} >= high {high}")
        element = st.integers(int(low), top)
        if size is None:
            return np.dtype(dtype).type(self._draw(element))
        shape = self._small(size)
        values = [self._draw(element) for _ in range(int(np.prod(shape)))]  # type: ignore[arg-type]
        return np.array(values, dtype=dtype).reshape(shape)

    def _index(self, count: int, p) -> int:
        if p is None:
            return self._draw(st.integers(0, count - 1))
        weights = np.asarray(p, dtype=np.float64)
        if weights.shape != (count,) or (weights < 0).any():
            raise ValueError(f"choice: p must be {count} non-negative weights, got {p}")
        edges = np.cumsum(weights) / weights.sum()
        u = self._draw(st.integers(0, _UNIT - 1)) / _UNIT
        # The first item whose cumulative weight exceeds u: an item of weight 0 is never picked.
        return int(min(np.searchsorted(edges, u, side="right"), np.flatnonzero(weights)[-1]))

    def choice(self, a, size=None, replace: bool = True, p=None):
        if (rng := self._numpy()) is not None:
            return rng.choice(a, size=size, replace=replace, p=p)
        items = np.arange(a) if np.ndim(a) == 0 else np.asarray(a)
        if not replace or (size is not None and self._small(size) is None):
            return self._bulk().choice(items, size=size, replace=replace, p=p)
        if size is None:
            return items[self._index(len(items), p)]
        shape = self._small(size)
        picks = [self._index(len(items), p) for _ in range(int(np.prod(shape)))]  # type: ignore[arg-type]
        return items[np.array(picks, dtype=np.intp).reshape(shape)]  # type: ignore[arg-type]

    def random(self, size=None):
        if (rng := self._numpy()) is not None:
            return rng.random(size)
        if size is not None and self._small(size) is None:
            return self._bulk().random(size)
        if size is None:
            return self._draw(st.integers(0, _UNIT - 1)) / _UNIT
        shape = self._small(size)
        return np.array([self.random() for _ in range(int(np.prod(shape)))]).reshape(shape)  # type: ignore[arg-type]

    def uniform(self, low=0.0, high=1.0, size=None):
        if (rng := self._numpy()) is not None:
            return rng.uniform(low, high, size)
        if size is not None or np.ndim(low) or np.ndim(high):
            return self._bulk().uniform(low, high, size)
        value = float(low) + (float(high) - float(low)) * self.random()
        return value if value < float(high) else float(np.nextafter(float(high), float(low)))  # [low, high)

    def normal(self, loc=0.0, scale=1.0, size=None):
        return self._bulk().normal(loc, scale, size)

    def permutation(self, x):
        if (rng := self._numpy()) is not None:
            return rng.permutation(x)
        items = np.arange(x) if np.ndim(x) == 0 else np.asarray(x)
        order = self._draw(st.permutations(list(range(len(items)))))
        return items[np.array(order, dtype=np.intp)]


def functions(family: str | None = None) -> list[str]:
    """The functions :func:`arguments` and :func:`cases` draw, by CMSIS-NN name (one family's)."""
    return [name for name, fn in registry.functions().items() if family in (None, fn.family)]


@st.composite
def arguments(draw: st.DrawFn, function: str) -> tuple[Arrays, Params]:
    """One valid call of ``function``: ``(arrays, params)`` in the conformance-vector form
    (shared VECTORS.md: CMSIS-NN layouts, struct fields flattened with dots, ``params["function"]``
    set), drawn by refsim's conformance generator for that function."""
    fn = registry.get(function)
    arrays, params = fn.generate(HypothesisRng(draw))
    return arrays, dict(params, function=function)


def _case_id(arrays: Arrays, params: Params) -> str:
    digest = zlib.crc32(json.dumps(params, sort_keys=True, default=str).encode())
    for name in sorted(arrays):
        digest = zlib.crc32(np.ascontiguousarray(arrays[name]).tobytes(), digest)
    return f"h{digest:08x}"


def cases(function: str) -> st.SearchStrategy[vec.Case]:
    """One call of ``function`` with the golden model's output: a conformance
    :class:`~refsim.conformance.vectors.Case` (``case.output``), whose id is a hash of its
    contents. What the pytest plugin's ``refsim_kernels.check_cases`` runs under QEMU."""
    fn = registry.get(function)

    def with_output(call: tuple[Arrays, Params]) -> vec.Case:
        arrays, params = call
        return vec.Case(
            function, _case_id(arrays, params), arrays, params, np.asarray(fn.run(arrays, params))
        )

    return arguments(function).map(with_output)


def limits(function: str) -> str:
    """The documented limits of ``function``'s domain: the docstring of the module that draws it."""
    import importlib

    fn = registry.get(function)
    module = importlib.import_module(f"refsim.conformance.functions.{fn.family}")
    return (module.__doc__ or "").strip()


def batches(function: str, size: int) -> st.SearchStrategy[Sequence[vec.Case]]:
    """``size`` cases of ``function`` at once: one hypothesis example, one QEMU start."""
    return st.lists(cases(function), min_size=size, max_size=size)


__all__ = [
    "BUDGET",
    "INT8",
    "SMALL",
    "HypothesisRng",
    "activations",
    "arguments",
    "batches",
    "cases",
    "functions",
    "input_offsets",
    "int8_arrays",
    "int32_arrays",
    "limits",
    "multipliers",
    "output_offsets",
    "per_channel",
    "shifts",
]

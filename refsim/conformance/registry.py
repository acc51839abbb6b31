"""Adapters between CMSIS-NN function signatures (vector files) and kernels_py.

One :class:`VectorFunction` per CMSIS-NN function name. ``run`` takes the case's arrays
(CMSIS-NN layouts) and flattened params (CMSIS-NN struct field names) and returns the
output the golden model computes; ``generate`` draws one random, valid case from a numpy
``Generator``. Family modules in :mod:`refsim.conformance.functions` register adapters at
import time.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from refsim.errors import UnsupportedError, VectorError

Arrays = dict[str, np.ndarray]
Params = dict[str, Any]


@dataclass(frozen=True)
class VectorFunction:
    """A CMSIS-NN function the conformance tools know.

    ``arrays``: required array names; ``params``: required parameter keys (flattened
    struct field names). ``run(arrays, params)`` returns the int8 output;
    ``generate(rng)`` returns ``(arrays, params)`` for one random valid case (``params``
    includes ``function`` and every required key; informational keys such as ``macs`` may
    be added).
    """

    name: str
    family: str
    arrays: tuple[str, ...]
    params: tuple[str, ...]
    run: Callable[[Mapping[str, np.ndarray], Mapping[str, Any]], np.ndarray]
    generate: Callable[[np.random.Generator], tuple[Arrays, Params]]


_FUNCTIONS: dict[str, VectorFunction] = {}

#: Family modules under refsim.conformance.functions, one per kernels_py module.
FAMILIES = (
    "conv",
    "depthwise",
    "fully_connected",
    "pooling",
    "elementwise",
    "activation",
    "softmax",
    "layout",
    "quantize",
)


def register(function: VectorFunction) -> VectorFunction:
    if function.name in _FUNCTIONS:
        raise RuntimeError(f"conformance function {function.name} registered twice")
    _FUNCTIONS[function.name] = function
    return function


def _load() -> None:
    # Import every family (idempotent: Python caches modules), so importing one family
    # module directly before the first lookup cannot hide the others.
    for family in FAMILIES:
        importlib.import_module(f"refsim.conformance.functions.{family}")


def functions() -> dict[str, VectorFunction]:
    """Every registered function, by CMSIS-NN name."""
    _load()
    return dict(sorted(_FUNCTIONS.items()))


def get(name: str) -> VectorFunction:
    _load()
    try:
        return _FUNCTIONS[name]
    except KeyError:
        known = ", ".join(sorted(_FUNCTIONS))
        raise UnsupportedError(f"no CMSIS-NN function named {name!r}; known: {known}") from None


# --- the scalar domains of CMSIS-NN's quantized arithmetic --------------------------------
# (refsim.testing.strategies draws the same ranges for hypothesis)

#: input_offset = -input_zero_point, zero point in [-128, 127]; CMSIS-NN asks [-127, 128].
INPUT_OFFSET_RANGE = (-127, 128)
#: output_offset = output_zero_point.
OUTPUT_OFFSET_RANGE = (-128, 127)
#: Q0.31 multipliers as quantize_multiplier makes them (0 only for a zero scale).
MULTIPLIER_RANGE = (1 << 30, (1 << 31) - 1)
#: Shifts as frexp gives them (positive = left), the range arm_nn_requantize handles.
SHIFT_RANGE = (-31, 30)


# --- helpers the family adapters share -------------------------------------------------


def param(params: Mapping[str, Any], key: str, kind: type = int) -> Any:
    """A required scalar parameter, type-checked; a ``VectorError`` names the missing key."""
    if key not in params:
        raise VectorError(f"{params.get('function', '?')}: params lacks required key {key!r}")
    value = params[key]
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise VectorError(
                f"{params.get('function', '?')}: params[{key!r}] must be an integer, got {value!r}"
            )
    elif kind is bool:
        if not isinstance(value, bool) and value not in (0, 1):
            raise VectorError(
                f"{params.get('function', '?')}: params[{key!r}] must be a boolean, got {value!r}"
            )
        value = bool(value)
    elif kind is list:
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            raise VectorError(f"{params.get('function', '?')}: params[{key!r}] must be a list of integers")
    return value


def array(arrays: Mapping[str, np.ndarray], key: str, dtype: type, function: str) -> np.ndarray:
    """A required array of the given dtype, C-contiguous."""
    if key not in arrays:
        raise VectorError(f"{function}: case lacks array {key!r}")
    arr = arrays[key]
    if arr.dtype != np.dtype(dtype):
        raise VectorError(f"{function}: array {key!r} must be {np.dtype(dtype)}, got {arr.dtype}")
    return np.ascontiguousarray(arr)


def dims(params: Mapping[str, Any], prefix: str) -> tuple[int, int, int, int]:
    """``(n, h, w, c)`` from ``prefix.n`` ... ``prefix.c``."""
    return tuple(param(params, f"{prefix}.{k}") for k in "nhwc")  # type: ignore[return-value]


def put_dims(params: Params, prefix: str, shape: tuple[int, ...]) -> None:
    """Store an NHWC shape (right-aligned when shorter) as ``prefix.n`` ... ``prefix.c``."""
    full = (1,) * (4 - len(shape)) + tuple(int(s) for s in shape)
    for k, v in zip("nhwc", full, strict=True):
        params[f"{prefix}.{k}"] = v


def random_multiplier(rng: np.random.Generator, size: int | None = None) -> Any:
    """Multipliers as quantize_multiplier produces them, biased toward the extremes."""
    lo, hi = MULTIPLIER_RANGE
    values = rng.integers(lo, hi, size=size, endpoint=True, dtype=np.int64)
    if size is None:
        return int(values)
    return values.astype(np.int32)


def random_offset(rng: np.random.Generator, lo: int, hi: int) -> int:
    """An offset at an extreme, at zero or anywhere in [lo, hi]."""
    if rng.random() < 0.4:
        return int(rng.choice([lo, hi, 0]))
    return int(rng.integers(lo, hi, endpoint=True))


def random_input_offset(rng: np.random.Generator) -> int:
    """An input offset (:data:`INPUT_OFFSET_RANGE`), at an extreme, at zero or anywhere."""
    return random_offset(rng, *INPUT_OFFSET_RANGE)


def random_output_offset(rng: np.random.Generator) -> int:
    """An output offset (:data:`OUTPUT_OFFSET_RANGE`), at an extreme, at zero or anywhere."""
    return random_offset(rng, *OUTPUT_OFFSET_RANGE)


def random_activation(
    rng: np.random.Generator, weights: tuple[float, float, float, float] = (0.4, 0.25, 0.25, 0.1)
) -> tuple[int, int]:
    """An activation range: full, ReLU-like, narrow (at most 8 wide) or a single value,
    drawn with ``weights`` in that order."""
    kind = rng.choice(["full", "relu", "narrow", "single"], p=list(weights))
    if kind == "full":
        return -128, 127
    if kind == "relu":
        return int(rng.integers(-128, 0, endpoint=True)), 127
    lo = int(rng.integers(-128, 127, endpoint=True))
    if kind == "single":
        return lo, lo
    return lo, int(min(127, lo + rng.integers(0, 8, endpoint=True)))

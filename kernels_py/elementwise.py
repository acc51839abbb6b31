"""Elementwise add, mul, maximum and minimum: CMSIS-NN ``Source/BasicMathFunctions``.

Every kernel takes two int8 tensors of up to four dimensions (NHWC, shorter shapes
right-aligned) and broadcasts them the numpy way: each dimension is equal or 1 on one
side. The per-element arithmetic is exactly CMSIS-NN's block function; broadcasting only
decides which pair of elements meets, which is what ExecuTorch's cortex_m kernels do by
calling the block function once per channel vector (``op_quantized_add.cpp``,
``op_quantized_mul.cpp``) and what TFLM's ``BroadcastAdd4DSlow``/``BroadcastMul4DSlow``
do element by element.
"""

from __future__ import annotations

import numpy as np

from kernels_py._jit import jit
from kernels_py.errors import KernelArgumentError
from kernels_py.fixedpoint import requantized_add, requantized_mul
from kernels_py.types import INT8_MAX, INT8_MIN, INT32_MAX, INT32_MIN, check_int8, check_offset, check_shifts

ADD_S8 = "arm_elementwise_add_s8"
MUL_S8 = "arm_elementwise_mul_s8"
MAXIMUM_S8 = "arm_maximum_s8"
MINIMUM_S8 = "arm_minimum_s8"

#: (x + offset) is in [-255, 255]; shifted left by at most 23 it still fits int32. (CMSIS-NN's
#: DSP path shifts the 16-bit lane zero-extended, which equals the scalar path only for
#: left_shift >= 16; TFLM always passes 20.)
MAX_LEFT_SHIFT = 23


# --- validation ------------------------------------------------------------------------------


def _broadcast(function: str, input_1, input_2) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """Both inputs as int8 arrays of one to four dims, and the broadcast output shape."""
    checked = []
    for name, arr in (("input_1", input_1), ("input_2", input_2)):
        if not 1 <= np.ndim(arr) <= 4:
            raise KernelArgumentError(function, name, "1-D to 4-D (NHWC)", f"shape {np.shape(arr)}")
        checked.append(check_int8(function, name, arr))
    input_1, input_2 = checked
    try:
        shape = np.broadcast_shapes(input_1.shape, input_2.shape)
    except ValueError:
        raise KernelArgumentError(
            function,
            "input_2",
            f"a shape broadcastable with input_1 {input_1.shape}",
            f"shape {input_2.shape}",
        ) from None
    return input_1, input_2, shape


def cmsis_minmax_broadcast_is_exact(dims_1, dims_2) -> bool:
    """Whether CMSIS-NN's ``arm_maximum_s8``/``arm_minimum_s8`` (V.1.0.0, 8 Oct 2024) read
    the right elements for two broadcastable NHWC shapes (4-tuples).

    When one input has H >= 2 and one element per row (W = C = 1) while the other has
    W >= 2, the C code's per-row scalar branch advances that input's pointer by a row and
    its ``height_diff`` then adds ``width_diff`` = C = 1 again, so from the second row on it
    reads the wrong (or an out-of-bounds) element. Every other broadcastable pair is exact;
    :func:`maximum_s8` and :func:`minimum_s8` always broadcast the numpy way.
    """
    for a, b in ((dims_1, dims_2), (dims_2, dims_1)):
        if a[1] >= 2 and a[2] == 1 and a[3] == 1 and b[2] >= 2:
            return False
    return True


def _check_multiplier(function: str, argument: str, value: int) -> int:
    if not INT32_MIN < value <= INT32_MAX:
        raise KernelArgumentError(function, argument, f"in [{INT32_MIN + 1}, {INT32_MAX}]", value)
    return int(value)


def _check_shift(function: str, argument: str, value: int) -> int:
    check_shifts(function, argument, value)
    return int(value)


def _check_activation(function: str, lo: int, hi: int) -> tuple[int, int]:
    if not INT8_MIN <= lo <= hi <= INT8_MAX:
        raise KernelArgumentError(
            function,
            "out_activation_min/out_activation_max",
            f"{INT8_MIN} <= min <= max <= {INT8_MAX}",
            (lo, hi),
        )
    return int(lo), int(hi)


def _flat_pair(
    input_1: np.ndarray, input_2: np.ndarray, shape: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """Materialise the broadcast so the fast path is one contiguous block loop."""
    return (
        np.ascontiguousarray(np.broadcast_to(input_1, shape)).reshape(-1),
        np.ascontiguousarray(np.broadcast_to(input_2, shape)).reshape(-1),
    )


def _extended(shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    return (1,) * (4 - len(shape)) + tuple(shape)  # type: ignore[return-value]


def _reference_loop(input_1: np.ndarray, input_2: np.ndarray, shape: tuple[int, ...], element) -> np.ndarray:
    """TFLM's ``BroadcastBinaryFunction4DSlow``: walk the 4-D output, index each input
    with 0 along its broadcast (extent 1) dimensions."""
    dims_1, dims_2, out_dims = _extended(input_1.shape), _extended(input_2.shape), _extended(shape)
    a = input_1.reshape(dims_1).tolist()
    b = input_2.reshape(dims_2).tolist()
    output = np.empty(out_dims, np.int8)
    for n in range(out_dims[0]):
        for h in range(out_dims[1]):
            for w in range(out_dims[2]):
                for c in range(out_dims[3]):
                    i1 = [i if d > 1 else 0 for i, d in zip((n, h, w, c), dims_1, strict=True)]
                    i2 = [i if d > 1 else 0 for i, d in zip((n, h, w, c), dims_2, strict=True)]
                    x = a[i1[0]][i1[1]][i1[2]][i1[3]]
                    y = b[i2[0]][i2[1]][i2[2]][i2[3]]
                    output[n, h, w, c] = element(x, y)
    return output.reshape(shape)


# --- add -------------------------------------------------------------------------------------


def _prepare_add(
    input_1, input_2, p: dict
) -> tuple[np.ndarray, np.ndarray, tuple[int, ...], tuple[int, ...]]:
    """Check ``arm_elementwise_add_s8``'s arguments; ``p`` is the caller's ``locals()``."""
    f = ADD_S8
    input_1, input_2, shape = _broadcast(f, input_1, input_2)
    check_offset(f, "input_1_offset", p["input_1_offset"], -127, 128)
    check_offset(f, "input_2_offset", p["input_2_offset"], -127, 128)
    check_offset(f, "out_offset", p["out_offset"], -128, 127)
    check_offset(f, "left_shift", p["left_shift"], 0, MAX_LEFT_SHIFT)
    scalars = (
        int(p["input_1_offset"]),
        _check_multiplier(f, "input_1_mult", p["input_1_mult"]),
        _check_shift(f, "input_1_shift", p["input_1_shift"]),
        int(p["input_2_offset"]),
        _check_multiplier(f, "input_2_mult", p["input_2_mult"]),
        _check_shift(f, "input_2_shift", p["input_2_shift"]),
        int(p["left_shift"]),
        int(p["out_offset"]),
        _check_multiplier(f, "out_mult", p["out_mult"]),
        _check_shift(f, "out_shift", p["out_shift"]),
        *_check_activation(f, p["out_activation_min"], p["out_activation_max"]),
    )
    return input_1, input_2, shape, scalars


@jit
def _add_kernel(
    a, b, i1_off, i1_mult, i1_shift, i2_off, i2_mult, i2_shift, left_shift, o_off, o_mult, o_shift, lo, hi
):
    out = np.empty(a.shape[0], np.int8)
    for i in range(a.shape[0]):
        out[i] = requantized_add(
            np.int64(a[i]), np.int64(b[i]), i1_off, i1_mult, i1_shift,
            i2_off, i2_mult, i2_shift, left_shift, o_off, o_mult, o_shift, lo, hi,
        )  # fmt: skip
    return out


#: From this many elements an add reads its outputs from a table of every input pair (`_add_table`).
ADD_TABLE_MIN_ELEMENTS = 1 << 14
_add_tables: dict[tuple, np.ndarray] = {}


def _add_table(scalars: tuple) -> np.ndarray:
    """The add's output for every pair of int8 inputs, ``table[(a + 128)·256 + b + 128]``, computed by
    `_add_kernel` itself over the 65,536 pairs: reading it is the same function, by construction.
    Kept per parameter set (a program's add layers have a few), which pays from one 128x128 map."""
    table = _add_tables.get(scalars)
    if table is None:
        values = np.arange(INT8_MIN, INT8_MAX + 1, dtype=np.int8)
        table = _add_kernel(np.repeat(values, 256), np.tile(values, 256), *scalars)
        if len(_add_tables) >= 64:  # bounded: a long-lived process may meet many parameter sets
            _add_tables.clear()
        _add_tables[scalars] = table
    return table


@jit
def _look_up_pairs(a, b, table, out):
    """``out[i] = table[(a[i] + 128)·256 + b[i] + 128]``, into ``out`` (None: a new array)."""
    if out is None:
        out = np.empty(a.shape[0], np.int8)
    for i in range(a.shape[0]):
        out[i] = table[(np.int32(a[i]) + 128) * 256 + np.int32(b[i]) + 128]
    return out


def elementwise_add_s8_reference(
    input_1: np.ndarray,
    input_2: np.ndarray,
    *,
    input_1_offset: int,
    input_1_mult: int,
    input_1_shift: int,
    input_2_offset: int,
    input_2_mult: int,
    input_2_shift: int,
    left_shift: int,
    out_offset: int,
    out_mult: int,
    out_shift: int,
    out_activation_min: int,
    out_activation_max: int,
) -> np.ndarray:
    """Plain-loop oracle for :func:`elementwise_add_s8` (same arguments, same checks)."""
    input_1, input_2, shape, s = _prepare_add(input_1, input_2, locals())
    (o1, m1, s1, o2, m2, s2, ls, oo, om, os_, lo, hi) = s
    return _reference_loop(
        input_1,
        input_2,
        shape,
        lambda x, y: requantized_add(x, y, o1, m1, s1, o2, m2, s2, ls, oo, om, os_, lo, hi),
    )


def elementwise_add_s8(
    input_1: np.ndarray,
    input_2: np.ndarray,
    *,
    input_1_offset: int,
    input_1_mult: int,
    input_1_shift: int,
    input_2_offset: int,
    input_2_mult: int,
    input_2_shift: int,
    left_shift: int,
    out_offset: int,
    out_mult: int,
    out_shift: int,
    out_activation_min: int,
    out_activation_max: int,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """``arm_elementwise_add_s8`` (``Source/BasicMathFunctions/arm_elementwise_add_s8.c``).

    Per element: ``a = requantize((x1 + input_1_offset) << left_shift, input_1_mult,
    input_1_shift)``, likewise ``b``; ``requantize(a + b, out_mult, out_shift) +
    out_offset``, clamped. Each requantize is CMSIS-NN's double rounding (floor of
    ``(v*m + 2^30) >> 31``, then a rounding right shift with ties away from zero); the
    shifts and the sum wrap as int32. TFLM prepares ``left_shift = 20``. Subtraction is
    this function with ``input_2_mult`` negated (what ExecuTorch 1.5's cortex_m pass does
    for ``aten.sub``); the negation is exact, so ``x - y`` rounds like ``x + (-y)``.
    Inputs broadcast as the module docstring says. ``out``: a C-contiguous int8 array of the
    output's size that the result is written into where the table serves the add (a prepared op's
    arena view: no copy of a fresh array); whatever is returned is the result.
    """
    input_1, input_2, shape, scalars = _prepare_add(input_1, input_2, locals())
    a, b = _flat_pair(input_1, input_2, shape)
    if a.shape[0] >= ADD_TABLE_MIN_ELEMENTS:
        into = (
            out.reshape(-1) if out is not None and out.flags.c_contiguous and out.size == a.shape[0] else None
        )
        return _look_up_pairs(a, b, _add_table(scalars), into).reshape(shape)
    return _add_kernel(a, b, *scalars).reshape(shape)


# --- mul -------------------------------------------------------------------------------------


def _prepare_mul(input_1, input_2, p: dict):
    """Check ``arm_elementwise_mul_s8``'s arguments; ``p`` is the caller's ``locals()``."""
    f = MUL_S8
    input_1, input_2, shape = _broadcast(f, input_1, input_2)
    check_offset(f, "input_1_offset", p["input_1_offset"], -127, 128)
    check_offset(f, "input_2_offset", p["input_2_offset"], -127, 128)
    check_offset(f, "out_offset", p["out_offset"], -128, 127)
    scalars = (
        int(p["input_1_offset"]),
        int(p["input_2_offset"]),
        int(p["out_offset"]),
        _check_multiplier(f, "out_mult", p["out_mult"]),
        _check_shift(f, "out_shift", p["out_shift"]),
        *_check_activation(f, p["out_activation_min"], p["out_activation_max"]),
    )
    return input_1, input_2, shape, scalars


@jit
def _mul_kernel(a, b, i1_off, i2_off, o_off, o_mult, o_shift, lo, hi):
    out = np.empty(a.shape[0], np.int8)
    for i in range(a.shape[0]):
        out[i] = requantized_mul(
            np.int64(a[i]), np.int64(b[i]), i1_off, i2_off, o_off, o_mult, o_shift, lo, hi
        )
    return out


def elementwise_mul_s8_reference(
    input_1: np.ndarray,
    input_2: np.ndarray,
    *,
    input_1_offset: int,
    input_2_offset: int,
    out_offset: int,
    out_mult: int,
    out_shift: int,
    out_activation_min: int,
    out_activation_max: int,
) -> np.ndarray:
    """Plain-loop oracle for :func:`elementwise_mul_s8`."""
    input_1, input_2, shape, s = _prepare_mul(input_1, input_2, locals())
    o1, o2, oo, om, os_, lo, hi = s
    return _reference_loop(
        input_1, input_2, shape, lambda x, y: requantized_mul(x, y, o1, o2, oo, om, os_, lo, hi)
    )


def elementwise_mul_s8(
    input_1: np.ndarray,
    input_2: np.ndarray,
    *,
    input_1_offset: int,
    input_2_offset: int,
    out_offset: int,
    out_mult: int,
    out_shift: int,
    out_activation_min: int,
    out_activation_max: int,
) -> np.ndarray:
    """``arm_elementwise_mul_s8`` (``Source/BasicMathFunctions/arm_elementwise_mul_s8.c``).

    Per element ``requantize((x1 + input_1_offset) * (x2 + input_2_offset), out_mult,
    out_shift) + out_offset``, clamped; the product (at most 255 * 255) is exact in int32
    and the requantize is CMSIS-NN's double rounding. Inputs broadcast as the module
    docstring says.
    """
    input_1, input_2, shape, scalars = _prepare_mul(input_1, input_2, locals())
    a, b = _flat_pair(input_1, input_2, shape)
    return _mul_kernel(a, b, *scalars).reshape(shape)


# --- maximum / minimum -----------------------------------------------------------------------


@jit
def _extremum_kernel(a, b, take_max):
    out = np.empty(a.shape[0], np.int8)
    for i in range(a.shape[0]):
        x = a[i]
        y = b[i]
        if take_max:
            out[i] = x if x >= y else y
        else:
            out[i] = x if x <= y else y
    return out


def maximum_s8_reference(input_1: np.ndarray, input_2: np.ndarray) -> np.ndarray:
    """Plain-loop oracle for :func:`maximum_s8`."""
    input_1, input_2, shape = _broadcast(MAXIMUM_S8, input_1, input_2)
    return _reference_loop(input_1, input_2, shape, lambda x, y: x if x >= y else y)


def maximum_s8(input_1: np.ndarray, input_2: np.ndarray) -> np.ndarray:
    """``arm_maximum_s8`` (``Source/BasicMathFunctions/arm_maximum_s8.c``): elementwise max.

    No arithmetic, so no rounding. CMSIS-NN takes ``input_1_dims``/``input_2_dims``/
    ``output_dims`` and broadcasts N, H, W and C where one side is 1; this is numpy's rule
    on shapes of up to four dims. CMSIS-NN's own walk is wrong for the shape pairs
    :func:`cmsis_minmax_broadcast_is_exact` rejects; this function is not.
    """
    input_1, input_2, shape = _broadcast(MAXIMUM_S8, input_1, input_2)
    a, b = _flat_pair(input_1, input_2, shape)
    return _extremum_kernel(a, b, True).reshape(shape)


def minimum_s8_reference(input_1: np.ndarray, input_2: np.ndarray) -> np.ndarray:
    """Plain-loop oracle for :func:`minimum_s8`."""
    input_1, input_2, shape = _broadcast(MINIMUM_S8, input_1, input_2)
    return _reference_loop(input_1, input_2, shape, lambda x, y: x if x <= y else y)


def minimum_s8(input_1: np.ndarray, input_2: np.ndarray) -> np.ndarray:
    """``arm_minimum_s8`` (``Source/BasicMathFunctions/arm_minimum_s8.c``): elementwise min.

    As :func:`maximum_s8`, with the smaller element; same broadcasting and the same
    CMSIS-NN pointer-walk caveat.
    """
    input_1, input_2, shape = _broadcast(MINIMUM_S8, input_1, input_2)
    a, b = _flat_pair(input_1, input_2, shape)
    return _extremum_kernel(a, b, False).reshape(shape)

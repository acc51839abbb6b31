"""Plain-numpy references and random case generators for the kernels_c tests.

The references are vectorised int64 numpy, written from CMSIS-NN's definitions independently of
kernels_py (which the tests also compare against when it is importable): arm_nn_requantize's
double rounding, int32 wrap-around where the C code wraps.
"""

from __future__ import annotations

import numpy as np

from refsim.qemu import Case

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


# --- fixed point ---------------------------------------------------------------------------------


def wrap32(v: np.ndarray) -> np.ndarray:
    """Two's-complement narrowing of int64 values to int32 (kept as int64)."""
    return ((v + 2**31) & 0xFFFFFFFF) - 2**31


def requantize(v: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    """arm_nn_requantize (default build): wrap(v << left), (v*m + 2^30) >> 31, rounding >> right."""
    left, right = max(shift, 0), max(-shift, 0)
    v = wrap32(np.asarray(v, np.int64) << left)
    v = wrap32((v * multiplier + (1 << 30)) >> 31)
    mask = (1 << right) - 1
    result = v >> right
    threshold = (mask >> 1) + (result < 0)
    return result + ((v & mask) > threshold)


def offset_and_clamp(v: np.ndarray, offset: int, lo: int, hi: int) -> np.ndarray:
    """``clamp(v + offset)`` with the int32 add wrapping, as CMSIS-NN's C (and ours) computes it on
    every tier (``sum += out_offset``, ``vaddq_n_s32``); it matters only when a requantized value
    lies within |offset| of an int32 bound (see :func:`offset_add_wraps`)."""
    return np.clip(wrap32(v + offset), lo, hi).astype(np.int8)


def offset_add_wraps(v: np.ndarray, offset: int) -> bool:
    return bool(np.any(wrap32(v + offset) != v + offset))


# --- kernels -----------------------------------------------------------------------------------


def elementwise_add_s8_requantized(p: dict, input_1: np.ndarray, input_2: np.ndarray) -> np.ndarray:
    """The add before the output offset: requant(requant((x1+o1) << ls) + requant((x2+o2) << ls))."""
    a = requantize((input_1.astype(np.int64) + p["input_1_offset"]) << p["left_shift"], p["input_1_mult"],
                   p["input_1_shift"])  # fmt: skip
    b = requantize((input_2.astype(np.int64) + p["input_2_offset"]) << p["left_shift"], p["input_2_mult"],
                   p["input_2_shift"])  # fmt: skip
    return requantize(wrap32(a + b), p["out_mult"], p["out_shift"])


def elementwise_mul_s8_requantized(p: dict, input_1: np.ndarray, input_2: np.ndarray) -> np.ndarray:
    product = (input_1.astype(np.int64) + p["input_1_offset"]) * (
        input_2.astype(np.int64) + p["input_2_offset"]
    )
    return requantize(product, p["out_mult"], p["out_shift"])


def fully_connected_s8_requantized(p: dict, x: np.ndarray, w: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """[N * C_OUT] requant(bias + sum_k (x + io)(w + fo)), the accumulator wrapped to int32."""
    n, k, c = p["input_dims.n"], p["filter_dims.n"], p["output_dims.c"]
    xs = x.reshape(n, k).astype(np.int64) + p["input_offset"]
    ws = w.reshape(c, k).astype(np.int64) + p["filter_offset"]
    acc = xs @ ws.T + (bias.astype(np.int64) if bias.size else 0)
    return requantize(wrap32(acc), p["multiplier"], p["shift"]).ravel()


def _elementwise(requantized):
    def reference(case: Case) -> tuple[np.ndarray, np.ndarray, int]:
        p = case.params
        return requantized(p, case.arrays["input_1"], case.arrays["input_2"]), p["out_offset"], (
            p["out_activation_min"], p["out_activation_max"])  # fmt: skip

    return reference


def _fully_connected(case: Case):
    p, a = case.params, case.arrays
    return fully_connected_s8_requantized(p, a["input"], a["filter"], a["bias"]), p["output_offset"], (
        p["activation.min"], p["activation.max"])  # fmt: skip


#: function -> case -> (requantized values before the output offset, output offset, (act min, act max))
REQUANTIZED = {
    "arm_elementwise_add_s8": _elementwise(elementwise_add_s8_requantized),
    "arm_elementwise_mul_s8": _elementwise(elementwise_mul_s8_requantized),
    "arm_fully_connected_s8": _fully_connected,
}


def expected_output(case: Case) -> np.ndarray:
    """The int8 output CMSIS-NN's arithmetic gives for ``case``, flat."""
    values, offset, (lo, hi) = REQUANTIZED[case.function](case)
    return offset_and_clamp(values, offset, lo, hi)


def output_offset_wraps(case: Case) -> bool:
    """Whether adding the output offset wraps int32 for some output of ``case``."""
    values, offset, _ = REQUANTIZED[case.function](case)
    return offset_add_wraps(values, offset)


# --- random cases, leaning on the edges ----------------------------------------------------------


def _pick(rng: np.random.Generator, edges: list[int], lo: int, hi: int, p_edge: float = 0.3) -> int:
    """An edge value with probability p_edge, else uniform in [lo, hi]."""
    return int(rng.choice(edges)) if rng.random() < p_edge else int(rng.integers(lo, hi, endpoint=True))


def _multiplier(rng, allow_negative: bool = False) -> int:
    m = _pick(rng, [1 << 30, INT32_MAX, INT32_MAX - 1, (1 << 30) + 1], 1 << 30, INT32_MAX)
    return -m if allow_negative and rng.random() < 0.2 else m


def _shift(rng, lo: int = -31, hi: int = 30) -> int:
    return _pick(rng, [lo, hi, 0, -1], lo, hi) if rng.random() < 0.5 else int(rng.integers(max(lo, -14), 3))


def _activation(rng) -> tuple[int, int]:
    kind = rng.integers(4)
    if kind == 0:
        return -128, 127
    if kind == 1:
        return int(rng.integers(-128, 1)), 127
    lo = int(rng.integers(-128, 128))
    return lo, int(rng.integers(lo, min(127, lo + (8 if kind == 2 else 255)), endpoint=True))


def _s8(rng, shape) -> np.ndarray:
    """int8 data with extra weight on -128, 127 and 0."""
    data = rng.integers(-128, 128, size=shape, dtype=np.int8)
    edges = rng.random(size=shape) < 0.15
    data[edges] = rng.choice(np.array([-128, 127, 0], np.int8), size=int(edges.sum()))
    return data


def _block_size(rng) -> int:
    return _pick(rng, [1, 2, 3, 4, 5, 15, 16, 17, 31, 33, 64], 1, 200, p_edge=0.5)


def elementwise_add_case(rng) -> Case:
    n = _block_size(rng)
    lo, hi = _activation(rng)
    params = {
        "input_1_offset": _pick(rng, [-127, 128, 0], -127, 128),
        "input_1_mult": _multiplier(rng),
        "input_1_shift": _shift(rng, -31, 0),
        "input_2_offset": _pick(rng, [-127, 128, 0], -127, 128),
        "input_2_mult": _multiplier(rng, allow_negative=True),  # negated: elementwise sub
        "input_2_shift": _shift(rng, -31, 0),
        "left_shift": 20 if rng.random() < 0.6 else _pick(rng, [0, 23], 0, 23),
        "out_offset": _pick(rng, [-128, 127, 0], -128, 127),
        "out_mult": _multiplier(rng),
        "out_shift": _shift(rng),
        "out_activation_min": lo,
        "out_activation_max": hi,
        "block_size": n,
    }
    return Case("arm_elementwise_add_s8", params, {"input_1": _s8(rng, n), "input_2": _s8(rng, n)})


def elementwise_mul_case(rng) -> Case:
    n = _block_size(rng)
    lo, hi = _activation(rng)
    params = {
        "input_1_offset": _pick(rng, [-127, 128, 0], -127, 128),
        "input_2_offset": _pick(rng, [-127, 128, 0], -127, 128),
        "out_offset": _pick(rng, [-128, 127, 0], -128, 127),
        "out_mult": _multiplier(rng),
        "out_shift": _shift(rng),
        "out_activation_min": lo,
        "out_activation_max": hi,
        "block_size": n,
    }
    return Case("arm_elementwise_mul_s8", params, {"input_1": _s8(rng, n), "input_2": _s8(rng, n)})


def fully_connected_case(rng) -> Case:
    n = int(rng.integers(1, 4))
    k = _pick(rng, [1, 3, 4, 15, 16, 17, 31, 32, 33, 255], 1, 300, p_edge=0.4)
    c = _pick(rng, [1, 2, 3, 4, 5, 7, 8, 9], 1, 40, p_edge=0.4)
    lo, hi = _activation(rng)
    bias_kind = rng.integers(3)  # NULL, TFLM-sized, full int32 (makes the accumulator wrap)
    if bias_kind == 0:
        bias = np.zeros(0, np.int32)
    elif bias_kind == 1:
        bias = rng.integers(-(2**20), 2**20, size=c, dtype=np.int32)
    else:
        bias = rng.integers(INT32_MIN, INT32_MAX, size=c, dtype=np.int32, endpoint=True)
    params = {
        "input_offset": _pick(rng, [-127, 128, 0], -127, 128),
        "filter_offset": 0 if rng.random() < 0.6 else _pick(rng, [-127, 128], -127, 128),
        "output_offset": _pick(rng, [-128, 127, 0], -128, 127),
        "activation.min": lo,
        "activation.max": hi,
        "multiplier": _multiplier(rng),
        "shift": _shift(rng),
        "input_dims.n": n,
        "filter_dims.n": k,
        "output_dims.c": c,
    }
    return Case(
        "arm_fully_connected_s8", params, {"input": _s8(rng, n * k), "filter": _s8(rng, c * k), "bias": bias}
    )


GENERATORS = {
    "arm_elementwise_add_s8": elementwise_add_case,
    "arm_elementwise_mul_s8": elementwise_mul_case,
    "arm_fully_connected_s8": fully_connected_case,
}

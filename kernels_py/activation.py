"""Standalone int8 activations: CMSIS-NN's ReLU6, the int8 clamp and ExecuTorch's 256-entry LUT.

* :func:`relu6_s8` mirrors ``arm_relu6_s8`` (``Source/ActivationFunctions/arm_relu6_s8.c``): a clamp
  of the *raw* int8 values to [0, 6], whatever the quantization. CMSIS-NN works in place;
  ours returns a new array.
* :func:`clamp_s8` is the clamp ExecuTorch's Cortex-M flow leaves in the graph. cortex_m has no
  clamp operator: ``passes/activation_fusion_pass.py`` folds relu/hardtanh/hardsigmoid/clamp into
  the preceding conv/linear/add/max-pool as its ``activation.min``/``activation.max``, and
  ``passes/quantized_clamp_activation_pass.py`` rewrites the rest to the portable
  ``aten.clamp.default`` on int8 with bounds from :func:`clamp_bound`.
* :func:`lut_s8` mirrors cortex_m ``quantized_activation`` (``backends/cortex_m/ops/
  op_quantized_activation.cpp``): ``out = table[(uint8_t)(x + 128)]``, i.e. the table is indexed
  by ``x + 128`` (``table[0]`` is the entry for -128), not by the raw byte.
  :func:`build_activation_lut` reproduces the AOT table of ``backends/cortex_m/passes/
  passes_utils.py::build_activation_lut``.

No arithmetic rounds inside the kernels; the rounding of the LUT and of the clamp bounds happens
ahead of time and is documented on those two builders.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from kernels_py._jit import jit
from kernels_py.errors import KernelArgumentError
from kernels_py.types import INT8_MAX, INT8_MIN, check_int8

#: arm_relu6_s8 clamps raw int8 values to [RELU6_MIN, RELU6_MAX].
RELU6_MIN = 0
RELU6_MAX = 6
LUT_SIZE = 256
#: The LUT index of input x is x + LUT_OFFSET (``static_cast<uint8_t>(x + 128)``).
LUT_OFFSET = 128


# --- ReLU6 ------------------------------------------------------------------------------------


def _check_relu6(function: str, input: np.ndarray) -> np.ndarray:
    return check_int8(function, "input", input)


def relu6_s8_reference(input: np.ndarray) -> np.ndarray:
    """``arm_relu6_s8``: ``min(max(x, 0), 6)`` on the raw int8 values; no rounding."""
    data = _check_relu6("relu6_s8", input)
    flat = data.reshape(-1)
    out = np.empty(flat.shape, np.int8)
    for i in range(flat.size):
        value = int(flat[i])
        out[i] = min(max(value, RELU6_MIN), RELU6_MAX)
    return out.reshape(input.shape)


@jit
def _relu6_s8_kernel(flat, out):
    for i in range(flat.size):
        value = np.int32(flat[i])
        if value < RELU6_MIN:
            value = RELU6_MIN
        elif value > RELU6_MAX:
            value = RELU6_MAX
        out[i] = value


def relu6_s8(input: np.ndarray) -> np.ndarray:
    """``arm_relu6_s8`` (``Source/ActivationFunctions/arm_relu6_s8.c``), out of place.

    Clamps the raw int8 values to [0, 6] (CMSIS-NN's ``MAX(ip, 0)`` then ``MIN(ip, 6)``); it
    does not look at the quantization, so it is ReLU6 only when scale = 1 and zero point = 0.
    No rounding. The C function takes ``uint16_t size``; this wrapper accepts any shape.
    """
    data = _check_relu6("relu6_s8", input)
    out = np.empty(data.shape, np.int8)
    _relu6_s8_kernel(data.reshape(-1), out.reshape(-1))
    return out.reshape(input.shape)


# --- clamp ------------------------------------------------------------------------------------


def _check_clamp(function: str, input: np.ndarray, activation_min: int, activation_max: int) -> np.ndarray:
    data = check_int8(function, "input", input)
    for name, value in (("activation_min", activation_min), ("activation_max", activation_max)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise KernelArgumentError(function, name, "an integer", type(value).__name__)
    if not INT8_MIN <= activation_min <= activation_max <= INT8_MAX:
        raise KernelArgumentError(
            function,
            "activation_min/activation_max",
            f"{INT8_MIN} <= activation_min <= activation_max <= {INT8_MAX}",
            (activation_min, activation_max),
        )
    return data


def clamp_s8_reference(input: np.ndarray, activation_min: int, activation_max: int) -> np.ndarray:
    """Portable ``aten.clamp`` on int8: ``min(max(x, activation_min), activation_max)``."""
    data = _check_clamp("clamp_s8", input, activation_min, activation_max)
    flat = data.reshape(-1)
    out = np.empty(flat.shape, np.int8)
    lo, hi = int(activation_min), int(activation_max)
    for i in range(flat.size):
        out[i] = min(max(int(flat[i]), lo), hi)
    return out.reshape(input.shape)


@jit
def _clamp_s8_kernel(flat, activation_min, activation_max, out):
    for i in range(flat.size):
        value = np.int32(flat[i])
        if value < activation_min:
            value = activation_min
        if value > activation_max:
            value = activation_max
        out[i] = value


def clamp_s8(input: np.ndarray, activation_min: int, activation_max: int) -> np.ndarray:
    """The int8 activation clamp of ExecuTorch's Cortex-M flow; no rounding.

    cortex_m has no standalone clamp kernel. A relu/hardtanh/clamp that could not be fused into
    the preceding CMSIS-NN call as ``activation.min/max`` (``activation_fusion_pass.py``) is
    rewritten by ``quantized_clamp_activation_pass.py`` to ``aten.clamp.default`` on the int8
    tensor, i.e. ExecuTorch's portable ``op_clamp``: ``min(max(x, lo), hi)``. The bounds are
    :func:`clamp_bound` of the float bounds. Same values as CMSIS-NN's ``CLAMP(x, max, min)``
    whenever ``min <= max``, which this wrapper requires.
    """
    data = _check_clamp("clamp_s8", input, activation_min, activation_max)
    out = np.empty(data.shape, np.int8)
    _clamp_s8_kernel(data.reshape(-1), int(activation_min), int(activation_max), out.reshape(-1))
    return out.reshape(input.shape)


def clamp_bound(value: float, scale: float, zero_point: int, quant_min: int, quant_max: int) -> int:
    """A float activation bound in the int8 domain, as ``passes_utils.quantize_val`` computes it.

    ``value / scale + zero_point`` in float64, stored into a float32 tensor (``torch.Tensor([..])``
    rounds to float32 first), rounded half to even (``torch.round``), then clamped to
    [quant_min, quant_max]. Used for both fused activation ranges and the leftover clamp.
    """
    stored = np.float32(value / scale + zero_point)
    return int(min(max(float(np.rint(stored)), quant_min), quant_max))


# --- LUT activation ---------------------------------------------------------------------------


def _check_lut(function: str, input: np.ndarray, table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    data = check_int8(function, "input", input)
    lut = check_int8(function, "table", table)
    if lut.shape != (LUT_SIZE,):
        raise KernelArgumentError(function, "table", f"shape ({LUT_SIZE},)", lut.shape)
    return data, lut


def lut_s8_reference(input: np.ndarray, table: np.ndarray) -> np.ndarray:
    """cortex_m ``quantized_activation``: ``out = table[x + 128]``; no arithmetic, no rounding."""
    data, lut = _check_lut("lut_s8", input, table)
    flat = data.reshape(-1)
    out = np.empty(flat.shape, np.int8)
    for i in range(flat.size):
        out[i] = lut[int(flat[i]) + LUT_OFFSET]
    return out.reshape(input.shape)


@jit
def _lut_s8_kernel(flat, table, out):
    for i in range(flat.size):
        out[i] = table[np.int32(flat[i]) + LUT_OFFSET]


def lut_s8(input: np.ndarray, table: np.ndarray) -> np.ndarray:
    """cortex_m ``quantized_activation_out`` (``backends/cortex_m/ops/op_quantized_activation.cpp``).

    ``out[i] = table[(uint8_t)(in[i] + 128)]``: the signed input biased by 128 indexes the
    256-entry int8 table (the MVE path adds 128 mod 256 to the raw byte and gathers; the DSP
    path uses ``__uadd8(word, 0x80808080)``; all three give the same index). No rounding: the
    table (:func:`build_activation_lut`) carries all the numerics.
    """
    data, lut = _check_lut("lut_s8", input, table)
    out = np.empty(data.shape, np.int8)
    _lut_s8_kernel(data.reshape(-1), lut, out.reshape(-1))
    return out.reshape(input.shape)


def _stable_sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _silu(x: float) -> float:
    return x * _stable_sigmoid(x)


def _gelu(x: float) -> float:
    return 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0)))


def _log_like(fn: Callable[[float], float], domain_edge: float) -> Callable[[float], float]:
    """``fn`` with the IEEE edges torch's float64 unary returns (ExecuTorch evaluates the log
    family through torch for exactly these): -inf at the domain edge, NaN below it."""

    def evaluate(x: float) -> float:
        if math.isnan(x) or x < domain_edge:
            return math.nan
        if x == domain_edge:
            return -math.inf
        return fn(x)

    return evaluate


def _sqrt(x: float) -> float:
    return math.nan if math.isnan(x) or x < 0.0 else math.sqrt(x)


def _rsqrt(x: float) -> float:
    if math.isnan(x) or x < 0.0:
        return math.nan
    if x == 0.0:
        return math.copysign(math.inf, x)
    return 1.0 / math.sqrt(x)


#: The activations ExecuTorch's cortex_m lowering builds tables for, by aten name, evaluated in
#: float64 as ``passes_utils._ACTIVATION_FNS`` evaluates them.
ACTIVATION_FUNCTIONS: dict[str, Callable[[float], float]] = {
    "sigmoid": _stable_sigmoid,
    "tanh": math.tanh,
    "silu": _silu,
    "gelu": _gelu,
    "log": _log_like(math.log, 0.0),
    "log2": _log_like(math.log2, 0.0),
    "log10": _log_like(math.log10, 0.0),
    "log1p": _log_like(math.log1p, -1.0),
    "sqrt": _sqrt,
    "rsqrt": _rsqrt,
}


def _round_half_away_from_zero(x: float) -> int:
    return int(math.copysign(math.floor(abs(x) + 0.5), x)) if x != 0 else 0


def build_activation_lut(
    fn: str | Callable[[float], float],
    input_scale: float,
    input_zero_point: int,
    output_scale: float,
    output_zero_point: int,
) -> np.ndarray:
    """The 256-entry int8 table of ExecuTorch's ``passes_utils.build_activation_lut``.

    For each ``q`` in [-128, 127], all in Python float64: ``x = (q - input_zero_point) *
    input_scale``; ``y = fn(x)``; ``s = y / output_scale + output_zero_point``; rounded **half
    away from zero** (``floor(|s| + 0.5)`` with the sign; not banker's rounding); clamped to
    [-128, 127]; stored at index ``q + 128``. A pole (``s`` infinite) takes the rail of its sign;
    entries where ``fn`` is undefined (NaN) copy the nearest defined entry (the lower index on a
    tie). ``fn`` is a name in :data:`ACTIVATION_FUNCTIONS` or any float -> float callable.
    """
    function = "build_activation_lut"
    if isinstance(fn, str):
        if fn not in ACTIVATION_FUNCTIONS:
            raise KernelArgumentError(function, "fn", f"one of {sorted(ACTIVATION_FUNCTIONS)}", fn)
        fn = ACTIVATION_FUNCTIONS[fn]
    if not callable(fn):
        raise KernelArgumentError(function, "fn", "an activation name or a callable", type(fn).__name__)
    for name, scale in (("input_scale", input_scale), ("output_scale", output_scale)):
        if not (math.isfinite(scale) and scale != 0.0):
            raise KernelArgumentError(function, name, "finite and nonzero", scale)
    defined: dict[int, int] = {}
    undefined: list[int] = []
    for q in range(INT8_MIN, INT8_MAX + 1):
        x = (q - int(input_zero_point)) * float(input_scale)
        y = float(fn(x))
        scaled = y / float(output_scale) + int(output_zero_point) if math.isfinite(y) else y
        if math.isnan(scaled):
            undefined.append(q + LUT_OFFSET)
            continue
        q_out = (
            (INT8_MAX if scaled > 0 else INT8_MIN)
            if math.isinf(scaled)
            else _round_half_away_from_zero(scaled)
        )
        defined[q + LUT_OFFSET] = max(INT8_MIN, min(INT8_MAX, q_out))
    if not defined:
        raise KernelArgumentError(
            function, "fn", "defined somewhere on the int8 input range", "NaN everywhere"
        )
    table = np.empty(LUT_SIZE, np.int8)
    for index, value in defined.items():
        table[index] = value
    for index in undefined:
        table[index] = defined[min(defined, key=lambda d: abs(d - index))]
    return table

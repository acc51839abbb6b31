"""Float <-> int quantization as ExecuTorch's C++ kernels compute it.

Two families, which agree on every finite in-range input and differ at the edges:

* ``quantize_per_tensor`` ... ``dequantize_per_channel``: ExecuTorch's portable
  ``quantized_decomposed`` kernels, ``kernels/quantized/cpu/op_quantize.cpp`` and
  ``op_dequantize.cpp``, scalar path as built for an x86-64 host.
* ``cortex_m_quantize_per_tensor`` / ``cortex_m_dequantize_per_tensor``: the scalar paths of
  ``backends/cortex_m/ops/op_quantize_per_tensor.cpp`` / ``op_dequantize_per_tensor.cpp``, the
  kernels a Cortex-M ``.pte`` calls.

Quantize, both families: ``inv_scale = 1.0f / (float)scale`` in float32 (a float32 division of
the scale rounded to float32, not the float64 ``1.0 / scale`` of torch.ao's Python reference);
``p = (float)(inv_scale * x)``, a float32 product for float32 ``x``; ``nearbyint(p)``, round half
to even. Then:

* portable: ``(float)zero_point + nearbyint(p)`` is a *float32* addition, converted to int64
  with x86-64 ``cvttss2si`` semantics (NaN and |v| >= 2^63 give INT64_MIN), clamped with
  ``max(., quant_min)`` then ``min(., quant_max)``. NaN, +inf and -inf all give ``quant_min``.
* cortex_m: ``(int32_t)nearbyint(p)`` with Arm ``VCVT`` semantics (saturating, NaN -> 0), then
  ``zero_point +`` in int32 (wraps; signed overflow is undefined in C, the compiled ADD wraps),
  clamped the same way. NaN gives ``zero_point``; +inf gives ``quant_max`` if zero_point <= 0
  else (wrapped) ``quant_min``.

Dequantize, both: ``(float)((int32_t)q - (int32_t)zero_point) * (float)scale``, a float32
product; except two loops of the portable per-channel kernel: int8 input with float32 output
computes ``(q - zero_point) * (double)(float)scale`` in float64 and rounds once to float32 (equal
to the float32 product while ``|q - zero_point| < 2^29``), and a 1-D input with float64 output
multiplies in float64.
"""

from __future__ import annotations

import numpy as np

from kernels_py._jit import jit
from kernels_py.errors import KernelArgumentError
from kernels_py.types import INT32_MAX, INT32_MIN

QUANT_DTYPES = (np.int8, np.uint8, np.int16, np.uint16, np.int32)
FLOAT_DTYPES = (np.float32, np.float64)
INT64_MIN = -(2**63)
_TWO_63 = float(2**63)


# --- validation -------------------------------------------------------------------------------


def _int(function: str, name: str, value, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise KernelArgumentError(function, name, "an integer", type(value).__name__)
    if not low <= value <= high:
        raise KernelArgumentError(function, name, f"in [{low}, {high}]", value)
    return int(value)


def _scale(function: str, name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise KernelArgumentError(function, name, "a real number", type(value).__name__)
    return float(value)


def _float_input(function: str, x: np.ndarray) -> np.ndarray:
    if not isinstance(x, np.ndarray) or x.dtype not in FLOAT_DTYPES:
        raise KernelArgumentError(
            function, "x", "a float32 or float64 numpy array", getattr(x, "dtype", type(x))
        )
    return np.ascontiguousarray(x).reshape(x.shape)  # ascontiguousarray makes 0-d arrays 1-d


def _int_input(function: str, q: np.ndarray, dtypes=QUANT_DTYPES) -> np.ndarray:
    if not isinstance(q, np.ndarray) or q.dtype not in dtypes:
        names = ", ".join(np.dtype(d).name for d in dtypes)
        raise KernelArgumentError(function, "q", f"a numpy array of {names}", getattr(q, "dtype", type(q)))
    return np.ascontiguousarray(q).reshape(q.shape)


def _quant_range(function: str, quant_min, quant_max, dtype) -> tuple[int, int]:
    info = np.iinfo(dtype)
    # ExecuTorch checks each bound against the dtype, not min <= max (max then min then wins).
    lo = _int(function, "quant_min", quant_min, int(info.min), 2**63 - 1)
    hi = _int(function, "quant_max", quant_max, -(2**63), int(info.max))
    return lo, hi


def _out_dtype(function: str, dtype, allowed) -> np.dtype:
    try:
        resolved = np.dtype(dtype)
    except TypeError:
        resolved = None
    if resolved is None or resolved not in allowed:
        names = ", ".join(np.dtype(d).name for d in allowed)
        raise KernelArgumentError(function, "dtype", f"one of {names}", dtype)
    return resolved


def _channels(function: str, shape: tuple[int, ...], axis, scales, zero_points):
    if not shape:
        raise KernelArgumentError(function, "input", "at least 1-D for per-channel quantization", shape)
    axis = _int(function, "axis", axis, -len(shape), len(shape) - 1) % len(shape)
    channels = shape[axis]
    scales = np.asarray(scales, dtype=np.float64)
    if scales.shape != (channels,):
        raise KernelArgumentError(function, "scales", f"shape ({channels},)", scales.shape)
    if zero_points is None:
        zero_points = np.zeros(channels, np.int64)
    zp = np.asarray(zero_points)
    if zp.dtype.kind not in "iu" or zp.shape != (channels,):
        raise KernelArgumentError(
            function, "zero_points", f"integers of shape ({channels},)", (zp.dtype, zp.shape)
        )
    if zp.size and (zp.min() < INT32_MIN or zp.max() > INT32_MAX):
        raise KernelArgumentError(function, "zero_points", "int32 values", (int(zp.min()), int(zp.max())))
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    inner = int(np.prod(shape[axis + 1 :], dtype=np.int64))
    return axis, scales, zp.astype(np.int64), (outer, channels, inner)


def _inv_scale(scale: float) -> np.float32:
    """``1.0f / static_cast<float>(scale)``: both steps in float32."""
    with np.errstate(all="ignore"):
        return np.float32(1.0) / np.float32(scale)


# --- quantize (portable) ----------------------------------------------------------------------


def _quantize_values_reference(x, inv_scale, zero_point, quant_min, quant_max):
    """Vectorised ``quantize_val``; ``inv_scale``/``zero_point`` broadcast against ``x``."""
    with np.errstate(all="ignore"):
        if x.dtype == np.float32:
            product = x * inv_scale
        else:
            product = (x * inv_scale.astype(np.float64)).astype(np.float32)
        total = zero_point.astype(np.float32) + np.rint(product)
        indefinite = np.isnan(total) | (total >= _TWO_63) | (total < -_TWO_63)
        q = np.where(indefinite, INT64_MIN, np.where(indefinite, 0, total).astype(np.int64))
    return np.minimum(np.maximum(q, quant_min), quant_max)


def quantize_per_tensor_reference(
    x: np.ndarray, scale: float, zero_point: int, quant_min: int, quant_max: int, dtype=np.int8
) -> np.ndarray:
    """``quantize_per_tensor_out`` of ``kernels/quantized/cpu/op_quantize.cpp`` in numpy."""
    function = "quantize_per_tensor"
    x = _float_input(function, x)
    dtype = _out_dtype(function, dtype, QUANT_DTYPES)
    lo, hi = _quant_range(function, quant_min, quant_max, dtype)
    zp = np.array(_int(function, "zero_point", zero_point, INT32_MIN, INT32_MAX), np.int64)
    inv = np.array(_inv_scale(_scale(function, "scale", scale)), np.float32)
    return _quantize_values_reference(x, inv, zp, lo, hi).astype(dtype)


@jit
def _quantize_value(value, inv_scale, zero_point, quant_min, quant_max):
    product = np.float32(np.float64(inv_scale) * value)  # exact for float32 value
    total = np.float32(zero_point) + np.float32(np.rint(product))
    if total != total or total >= 9.223372036854775808e18 or total < -9.223372036854775808e18:
        q = np.int64(INT64_MIN)
    else:
        q = np.int64(total)
    if q < quant_min:
        q = quant_min
    if q > quant_max:
        q = quant_max
    return q


@jit
def _quantize_per_tensor_kernel(flat, inv_scale, zero_point, quant_min, quant_max, out):
    for i in range(flat.size):
        out[i] = _quantize_value(flat[i], inv_scale, zero_point, quant_min, quant_max)


def quantize_per_tensor(
    x: np.ndarray, scale: float, zero_point: int, quant_min: int, quant_max: int, dtype=np.int8
) -> np.ndarray:
    """ExecuTorch ``quantized_decomposed::quantize_per_tensor.out`` (``kernels/quantized/cpu/``
    ``op_quantize.cpp``).

    ``clamp((int64)((float)zero_point + nearbyint((float)(inv_scale * x))), quant_min, quant_max)``
    with ``inv_scale = 1.0f / (float)scale``: float32 arithmetic, round half to even, x86-64
    conversion (NaN/inf -> ``quant_min``). The aarch64 NEON path (``vcvtnq_s32_f32``, saturating
    int16 add of the zero point) gives the same result for finite inputs. ``x`` float32 or
    float64 (float64 multiplies in double, then rounds the product to float32); ``dtype`` one of
    int8/uint8/int16/uint16/int32, ``quant_min >= dtype.min``, ``quant_max <= dtype.max``.
    """
    function = "quantize_per_tensor"
    x = _float_input(function, x)
    dtype = _out_dtype(function, dtype, QUANT_DTYPES)
    lo, hi = _quant_range(function, quant_min, quant_max, dtype)
    zp = _int(function, "zero_point", zero_point, INT32_MIN, INT32_MAX)
    inv = _inv_scale(_scale(function, "scale", scale))
    out = np.empty(x.shape, dtype)
    _quantize_per_tensor_kernel(x.reshape(-1), inv, zp, lo, hi, out.reshape(-1))
    return out


def quantize_per_channel_reference(
    x: np.ndarray, scales, zero_points, axis: int, quant_min: int, quant_max: int, dtype=np.int8
) -> np.ndarray:
    """``quantize_per_channel_out``: :func:`quantize_per_tensor_reference` with channel parameters."""
    function = "quantize_per_channel"
    x = _float_input(function, x)
    dtype = _out_dtype(function, dtype, QUANT_DTYPES)
    lo, hi = _quant_range(function, quant_min, quant_max, dtype)
    axis, scales, zp, blocks = _channels(function, x.shape, axis, scales, zero_points)
    inv = np.array([_inv_scale(s) for s in scales], np.float32).reshape(1, -1, 1)
    q = _quantize_values_reference(x.reshape(blocks), inv, zp.reshape(1, -1, 1), lo, hi)
    return q.reshape(x.shape).astype(dtype)


@jit
def _quantize_per_channel_kernel(blocks, inv_scales, zero_points, quant_min, quant_max, out):
    outer, channels, inner = blocks.shape
    for o in range(outer):
        for ch in range(channels):
            for i in range(inner):
                out[o, ch, i] = _quantize_value(
                    blocks[o, ch, i], inv_scales[ch], zero_points[ch], quant_min, quant_max
                )


def quantize_per_channel(
    x: np.ndarray, scales, zero_points, axis: int, quant_min: int, quant_max: int, dtype=np.int8
) -> np.ndarray:
    """ExecuTorch ``quantized_decomposed::quantize_per_channel.out`` (``op_quantize.cpp``).

    Per element, :func:`quantize_per_tensor` with ``scales[c]`` (float64, rounded to float32
    before the float32 reciprocal) and ``zero_points[c]`` of its index ``c`` along ``axis``.
    """
    function = "quantize_per_channel"
    x = _float_input(function, x)
    dtype = _out_dtype(function, dtype, QUANT_DTYPES)
    lo, hi = _quant_range(function, quant_min, quant_max, dtype)
    axis, scales, zp, blocks = _channels(function, x.shape, axis, scales, zero_points)
    inv = np.array([_inv_scale(s) for s in scales], np.float32)
    out = np.empty(blocks, dtype)
    _quantize_per_channel_kernel(x.reshape(blocks), inv, zp, lo, hi, out)
    return out.reshape(x.shape)


# --- dequantize (portable) --------------------------------------------------------------------


def _difference_reference(q: np.ndarray, zero_point: np.ndarray) -> np.ndarray:
    """``(int32_t)q - (int32_t)zero_point`` in int32 (the compiled subtraction wraps)."""
    d = q.astype(np.int64) - zero_point
    return ((d + 2**31) & 0xFFFFFFFF) - 2**31


def _check_dequantize(function: str, q, quant_min, quant_max, out_dtype):
    q = _int_input(function, q)
    out_dtype = _out_dtype(function, out_dtype, FLOAT_DTYPES)
    lo = _int(function, "quant_min", quant_min, -(2**63), 2**63 - 1)
    hi = _int(function, "quant_max", quant_max, -(2**63), 2**63 - 1)
    if lo > hi:
        raise KernelArgumentError(function, "quant_min/quant_max", "quant_min <= quant_max", (lo, hi))
    return q, out_dtype, lo, hi


def dequantize_per_tensor_reference(
    q: np.ndarray, scale: float, zero_point: int, quant_min: int, quant_max: int, out_dtype=np.float32
) -> np.ndarray:
    """``dequantize_per_tensor_out`` of ``op_dequantize.cpp`` in numpy."""
    function = "dequantize_per_tensor"
    q, out_dtype, _, _ = _check_dequantize(function, q, quant_min, quant_max, out_dtype)
    zp = np.int64(_int(function, "zero_point", zero_point, INT32_MIN, INT32_MAX))
    with np.errstate(all="ignore"):
        scale32 = np.float32(_scale(function, "scale", scale))
        return (_difference_reference(q, zp).astype(np.float32) * scale32).astype(out_dtype)


@jit
def _dequantize_value(value, zero_point, scale32):
    d = np.int64(value) - zero_point
    d = ((d + 2147483648) & 0xFFFFFFFF) - 2147483648
    return np.float32(d) * scale32


@jit
def _dequantize_per_tensor_kernel(flat, zero_point, scale32, out):
    for i in range(flat.size):
        out[i] = _dequantize_value(flat[i], zero_point, scale32)


def dequantize_per_tensor(
    q: np.ndarray, scale: float, zero_point: int, quant_min: int, quant_max: int, out_dtype=np.float32
) -> np.ndarray:
    """ExecuTorch ``quantized_decomposed::dequantize_per_tensor.out`` (``kernels/quantized/cpu/``
    ``op_dequantize.cpp``).

    ``(OUT)(((int32_t)q - (int32_t)zero_point) * (float)scale)``: the difference converted to
    float32 (round to nearest even; exact for 8/16-bit inputs), one float32 multiply, then the
    cast to ``out_dtype`` (float32 or float64, widening exactly). ``quant_min``/``quant_max`` are
    metadata (only ``quant_min <= quant_max`` is checked). Output is float, not int8.
    """
    function = "dequantize_per_tensor"
    q, out_dtype, _, _ = _check_dequantize(function, q, quant_min, quant_max, out_dtype)
    zp = _int(function, "zero_point", zero_point, INT32_MIN, INT32_MAX)
    with np.errstate(all="ignore"):
        scale32 = np.float32(_scale(function, "scale", scale))
    out = np.empty(q.shape, out_dtype)
    _dequantize_per_tensor_kernel(q.reshape(-1), zp, scale32, out.reshape(-1))
    return out


#: dequantize_per_channel's three ways to form ``(q - zero_point) * scale``.
_FLOAT32_PRODUCT, _OPTIMIZED_FLOAT64, _ONE_D_FLOAT64 = 0, 1, 2


def _channel_path(q: np.ndarray, out_dtype: np.dtype) -> int:
    """Which loop of ``dequantize_per_channel_out`` runs (our arrays are always contiguous).

    ``can_use_optimized_dequantize_per_channel`` (int8 in, float32 out) computes in float64 and
    rounds once to float32; otherwise a 1-D input with float64 output casts the int32 difference
    to double before multiplying (``static_cast<CTYPE_OUT>(q - zp) * _scale``); everything else
    multiplies in float32 and casts the product (``static_cast<CTYPE_OUT>((q - zp) * _scale)``).
    """
    if q.dtype == np.int8 and out_dtype == np.float32:
        return _OPTIMIZED_FLOAT64
    if q.ndim == 1 and out_dtype == np.float64:
        return _ONE_D_FLOAT64
    return _FLOAT32_PRODUCT


def _check_channel_zero_points(function, zp, lo, hi):
    # dequantize_optimized ET_CHECKs quant_min <= zero_point <= quant_max for every channel.
    if zp.size and (zp.min() < lo or zp.max() > hi):
        raise KernelArgumentError(function, "zero_points", f"in [quant_min, quant_max] = [{lo}, {hi}]", zp)


def dequantize_per_channel_reference(
    q: np.ndarray, scales, zero_points, axis: int, quant_min: int, quant_max: int, out_dtype=np.float32
) -> np.ndarray:
    """``dequantize_per_channel_out`` of ``op_dequantize.cpp`` in numpy, all three of its loops."""
    function = "dequantize_per_channel"
    q, out_dtype, lo, hi = _check_dequantize(function, q, quant_min, quant_max, out_dtype)
    _, scales, zp, blocks = _channels(function, q.shape, axis, scales, zero_points)
    path = _channel_path(q, out_dtype)
    zp = zp.reshape(1, -1, 1)
    blocked = q.reshape(blocks)
    with np.errstate(all="ignore"):
        scale32 = scales.astype(np.float32).reshape(1, -1, 1)
        if path == _OPTIMIZED_FLOAT64:
            _check_channel_zero_points(function, zp, lo, hi)
            wide = (blocked.astype(np.int64) - zp).astype(np.float64) * scale32.astype(np.float64)
            out = wide.astype(np.float32)
        elif path == _ONE_D_FLOAT64:
            out = _difference_reference(blocked, zp).astype(np.float64) * scale32.astype(np.float64)
        else:
            out = (_difference_reference(blocked, zp).astype(np.float32) * scale32).astype(out_dtype)
    return out.reshape(q.shape)


@jit
def _dequantize_per_channel_kernel(blocks, zero_points, scales32, path, out):
    outer, channels, inner = blocks.shape
    for o in range(outer):
        for ch in range(channels):
            for i in range(inner):
                if path == _OPTIMIZED_FLOAT64:
                    d = np.float64(np.int64(blocks[o, ch, i]) - zero_points[ch])
                    out[o, ch, i] = d * np.float64(scales32[ch])
                elif path == _ONE_D_FLOAT64:
                    d = np.int64(blocks[o, ch, i]) - zero_points[ch]
                    d = ((d + 2147483648) & 0xFFFFFFFF) - 2147483648
                    out[o, ch, i] = np.float64(d) * np.float64(scales32[ch])
                else:
                    out[o, ch, i] = _dequantize_value(blocks[o, ch, i], zero_points[ch], scales32[ch])


def dequantize_per_channel(
    q: np.ndarray, scales, zero_points, axis: int, quant_min: int, quant_max: int, out_dtype=np.float32
) -> np.ndarray:
    """ExecuTorch ``quantized_decomposed::dequantize_per_channel.out`` (``op_dequantize.cpp``).

    ``scales[c]`` is first rounded to float32 (``get_scale``). int8 input with float32 output
    takes ``dequantize_per_channel_optimized``: ``(q - zero_point)`` as int64 times the float32
    scale in **float64**, rounded once to float32 (and every zero point must lie in
    [quant_min, quant_max]). A 1-D input with float64 output multiplies the int32 difference by
    the float32 scale in float64. Anything else: the float32 product of
    :func:`dequantize_per_tensor`. ``zero_points`` may be None (all zero).
    """
    function = "dequantize_per_channel"
    q, out_dtype, lo, hi = _check_dequantize(function, q, quant_min, quant_max, out_dtype)
    _, scales, zp, blocks = _channels(function, q.shape, axis, scales, zero_points)
    path = _channel_path(q, out_dtype)
    if path == _OPTIMIZED_FLOAT64:
        _check_channel_zero_points(function, zp, lo, hi)
    with np.errstate(all="ignore"):
        scales32 = scales.astype(np.float32)
    out = np.empty(blocks, out_dtype)
    _dequantize_per_channel_kernel(q.reshape(blocks), zp, scales32, path, out)
    return out.reshape(q.shape)


# --- cortex_m ---------------------------------------------------------------------------------


def _check_cortex_m_quantize(function, x, zero_point, quant_min, quant_max):
    if not isinstance(x, np.ndarray) or x.dtype != np.float32:
        raise KernelArgumentError(function, "x", "a float32 numpy array", getattr(x, "dtype", type(x)))
    zp = _int(function, "zero_point", zero_point, INT32_MIN, INT32_MAX)
    lo = _int(function, "quant_min", quant_min, -128, 2**63 - 1)
    hi = _int(function, "quant_max", quant_max, -(2**63), 127)
    return np.ascontiguousarray(x).reshape(x.shape), zp, lo, hi


def cortex_m_quantize_per_tensor_reference(
    x: np.ndarray, scale: float, zero_point: int, quant_min: int, quant_max: int
) -> np.ndarray:
    """cortex_m ``quantize_per_tensor_out`` scalar path in numpy."""
    function = "cortex_m_quantize_per_tensor"
    x, zp, lo, hi = _check_cortex_m_quantize(function, x, zero_point, quant_min, quant_max)
    inv = _inv_scale(_scale(function, "scale", scale))
    with np.errstate(all="ignore"):
        rounded = np.rint(x * inv).astype(np.float64)
        converted = np.where(np.isnan(rounded), 0.0, np.clip(rounded, INT32_MIN, INT32_MAX)).astype(np.int64)
    total = ((converted + zp + 2**31) & 0xFFFFFFFF) - 2**31
    return np.minimum(np.maximum(total, lo), hi).astype(np.int8)


@jit
def _cortex_m_quantize_per_tensor_kernel(flat, inv_scale, zero_point, quant_min, quant_max, out):
    for i in range(flat.size):
        rounded = np.float64(np.rint(inv_scale * flat[i]))
        if rounded != rounded:
            converted = np.int64(0)
        elif rounded >= 2147483647.0:
            converted = np.int64(INT32_MAX)
        elif rounded <= -2147483648.0:
            converted = np.int64(INT32_MIN)
        else:
            converted = np.int64(rounded)
        q = ((converted + zero_point + 2147483648) & 0xFFFFFFFF) - 2147483648
        if q < quant_min:
            q = quant_min
        if q > quant_max:
            q = quant_max
        out[i] = q


def cortex_m_quantize_per_tensor(
    x: np.ndarray, scale: float, zero_point: int, quant_min: int, quant_max: int
) -> np.ndarray:
    """cortex_m ``quantize_per_tensor_out`` (``backends/cortex_m/ops/op_quantize_per_tensor.cpp``), int8 out.

    Scalar path: ``zero_point + (int32_t)nearbyint(inv_scale * x)`` with ``inv_scale = 1.0f /
    (float)scale``, the float32 product rounded half to even, the conversion saturating with NaN
    -> 0 (Arm ``VCVT``), the zero-point addition in int32 (wrapping), then ``max(., quant_min)``,
    ``min(., quant_max)``. Finite in-range inputs match :func:`quantize_per_tensor`. The MVE path
    (groups of 16 elements on Helium cores) differs: ``vfmaq`` fuses multiply and round-to-int
    into one rounding (ties of the *exact* product), its magic-number conversion is only valid for
    ``|x * inv_scale| < 2^22`` and it narrows to int16 without saturation.
    """
    function = "cortex_m_quantize_per_tensor"
    x, zp, lo, hi = _check_cortex_m_quantize(function, x, zero_point, quant_min, quant_max)
    inv = _inv_scale(_scale(function, "scale", scale))
    out = np.empty(x.shape, np.int8)
    _cortex_m_quantize_per_tensor_kernel(x.reshape(-1), inv, zp, lo, hi, out.reshape(-1))
    return out


def _check_cortex_m_dequantize(function, q, zero_point, quant_min, quant_max):
    q = _int_input(function, q, (np.int8,))
    lo = _int(function, "quant_min", quant_min, -128, 2**63 - 1)
    hi = _int(function, "quant_max", quant_max, -(2**63), 127)
    zp = _int(function, "zero_point", zero_point, INT32_MIN, INT32_MAX)
    if not lo <= zp <= hi:
        raise KernelArgumentError(function, "zero_point", f"in [quant_min, quant_max] = [{lo}, {hi}]", zp)
    return q, zp


def cortex_m_dequantize_per_tensor_reference(
    q: np.ndarray, scale: float, zero_point: int, quant_min: int, quant_max: int
) -> np.ndarray:
    """cortex_m ``dequantize_per_tensor_out`` in numpy."""
    function = "cortex_m_dequantize_per_tensor"
    q, zp = _check_cortex_m_dequantize(function, q, zero_point, quant_min, quant_max)
    with np.errstate(all="ignore"):
        scale32 = np.float32(_scale(function, "scale", scale))
        return (q.astype(np.int64) - zp).astype(np.float32) * scale32


def cortex_m_dequantize_per_tensor(
    q: np.ndarray, scale: float, zero_point: int, quant_min: int, quant_max: int
) -> np.ndarray:
    """cortex_m ``dequantize_per_tensor_out`` (``backends/cortex_m/ops/op_dequantize_per_tensor.cpp``).

    ``(float)((int32_t)q - zero_point) * (float)scale``: the same float32 product as
    :func:`dequantize_per_tensor` (its MVE path converts the same integers and multiplies in
    float32 too); int8 input only, float32 output, and ``quant_min <= zero_point <= quant_max``
    within int8, as the kernel checks.
    """
    function = "cortex_m_dequantize_per_tensor"
    q, zp = _check_cortex_m_dequantize(function, q, zero_point, quant_min, quant_max)
    with np.errstate(all="ignore"):
        scale32 = np.float32(_scale(function, "scale", scale))
    out = np.empty(q.shape, np.float32)
    _dequantize_per_tensor_kernel(q.reshape(-1), zp, scale32, out.reshape(-1))
    return out

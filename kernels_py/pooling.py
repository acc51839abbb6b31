"""Pooling, s8: CMSIS-NN's ``arm_avgpool_s8`` and ``arm_max_pool_s8``.

Both slide a ``filter_hw`` window over an NHWC tensor with ``stride`` and top/left ``padding``
and look only at the taps inside the input (padding is never counted or compared):

* average: ``sum`` of the valid taps (int32), divided by their ``count`` rounding half away from
  zero exactly as C computes it, ``sum > 0 ? (sum + count/2)/count : (sum - count/2)/count`` with
  truncating ``/``; then clamped to the activation range. No offset or rescale: input and output
  share scale and zero point.
* max: the largest valid tap, then clamped.

A window with no valid tap is an error here: ``arm_avgpool_s8`` returns ``ARM_CMSIS_NN_ARG_ERROR``
on every build (scalar, DSP, MVE) and ``arm_max_pool_s8`` leaves those output bytes unwritten.
"""

from __future__ import annotations

import numpy as np

from kernels_py._jit import jit
from kernels_py.errors import KernelArgumentError
from kernels_py.types import PoolParams, check_int8

ISAS = ("scalar", "dsp", "mve")

ARM_AVGPOOL_S8 = "arm_avgpool_s8"
ARM_MAX_POOL_S8 = "arm_max_pool_s8"

#: Largest window whose int8 sum fits an int32 on every path (the DSP path adds with QADD,
#: which saturates, the scalar path wraps: they agree only while nothing overflows).
_MAX_AVG_WINDOW = 1 << 24


def _prepare(function, input, pool_params: PoolParams, filter_hw, output_hw):
    input = check_int8(function, "input", input, ndim=4)
    n, in_h, in_w, ch = input.shape
    if min(n, in_h, in_w, ch) < 1:
        raise KernelArgumentError(function, "input", "a non-empty [N, H, W, C] array", input.shape)
    if len(filter_hw) != 2 or min(filter_hw) < 1:
        raise KernelArgumentError(function, "filter_hw", "a positive (h, w) window", filter_hw)
    k_h, k_w = (int(v) for v in filter_hw)
    stride, padding = pool_params.stride, pool_params.padding
    if stride.h < 1 or stride.w < 1:
        raise KernelArgumentError(function, "pool_params.stride", "h, w >= 1", (stride.h, stride.w))
    if padding.h < 0 or padding.w < 0:
        raise KernelArgumentError(function, "pool_params.padding", "h, w >= 0", (padding.h, padding.w))
    pool_params.activation.check(function)
    if output_hw is None:
        output_hw = (
            (in_h + 2 * padding.h - k_h) // stride.h + 1,
            (in_w + 2 * padding.w - k_w) // stride.w + 1,
        )
    if len(output_hw) != 2:
        raise KernelArgumentError(function, "output_hw", "an (h, w) pair", output_hw)
    out_h, out_w = (int(v) for v in output_hw)
    if out_h < 1 or out_w < 1:
        raise KernelArgumentError(
            function, "output_hw", "positive (is the input smaller than the window?)", output_hw
        )
    # The first window starts at -padding, the last at (out - 1) * stride - padding; windows in
    # between start in between, so these two bounds make every window see at least one tap.
    axes = (("h", k_h, padding.h, stride.h, in_h, out_h), ("w", k_w, padding.w, stride.w, in_w, out_w))
    for axis, k, pad, step, size, out in axes:
        if pad >= k or (out - 1) * step - pad >= size:
            raise KernelArgumentError(
                function,
                f"output_hw/padding.{axis}",
                "every window to overlap the input (CMSIS-NN: ARG_ERROR or unwritten output)",
                {"padding": pad, "window": k, "output": out, "input": size},
            )
    return input, k_h, k_w, out_h, out_w


# --- average ------------------------------------------------------------------------------


def _c_div(numerator: int, denominator: int) -> int:
    """C's integer ``/`` for a positive denominator: truncates toward zero."""
    q = abs(numerator) // denominator
    return q if numerator >= 0 else -q


def avgpool_s8_reference(
    input: np.ndarray,
    pool_params: PoolParams,
    filter_hw: tuple[int, int],
    output_hw: tuple[int, int] | None = None,
) -> np.ndarray:
    """Readable definition of :func:`avgpool_s8` (TFLM's ``reference_integer_ops::AveragePool`` loops)."""
    input, k_h, k_w, out_h, out_w = _prepare(ARM_AVGPOOL_S8, input, pool_params, filter_hw, output_hw)
    if k_h * k_w > _MAX_AVG_WINDOW:
        raise KernelArgumentError(ARM_AVGPOOL_S8, "filter_hw", f"at most {_MAX_AVG_WINDOW} taps", filter_hw)
    stride, padding, act = pool_params.stride, pool_params.padding, pool_params.activation
    batches, in_h, in_w, depth = input.shape
    output = np.empty((batches, out_h, out_w, depth), np.int8)
    for batch in range(batches):
        for out_y in range(out_h):
            for out_x in range(out_w):
                for channel in range(depth):
                    total = 0
                    count = 0
                    for fy in range(k_h):
                        for fx in range(k_w):
                            in_y = out_y * stride.h - padding.h + fy
                            in_x = out_x * stride.w - padding.w + fx
                            if 0 <= in_y < in_h and 0 <= in_x < in_w:
                                total += int(input[batch, in_y, in_x, channel])
                                count += 1
                    if total > 0:
                        avg = _c_div(total + count // 2, count)
                    else:
                        avg = _c_div(total - count // 2, count)
                    output[batch, out_y, out_x, channel] = min(max(avg, act.min), act.max)
    return output


@jit
def _avgpool_kernel(input, k_h, k_w, stride_h, stride_w, pad_h, pad_w, act_min, act_max, out_h, out_w):
    batches, in_h, in_w, depth = input.shape
    output = np.empty((batches, out_h, out_w, depth), np.int8)
    acc = np.empty(depth, np.int32)
    for b in range(batches):
        for oy in range(out_h):
            base_y = oy * stride_h - pad_h
            ky_start = max(0, -base_y)
            ky_end = min(k_h, in_h - base_y)
            for ox in range(out_w):
                base_x = ox * stride_w - pad_w
                kx_start = max(0, -base_x)
                kx_end = min(k_w, in_w - base_x)
                count = (ky_end - ky_start) * (kx_end - kx_start)
                half = count // 2
                for c in range(depth):
                    acc[c] = 0
                for ky in range(ky_start, ky_end):
                    for kx in range(kx_start, kx_end):
                        row = input[b, base_y + ky, base_x + kx]
                        for c in range(depth):
                            acc[c] += np.int32(row[c])
                dst = output[b, oy, ox]
                for c in range(depth):
                    total = np.int64(acc[c])
                    # Truncating division with the half added away from zero: ties round away.
                    if total > 0:
                        avg = (total + half) // count
                    else:
                        avg = -((half - total) // count)
                    dst[c] = min(max(avg, act_min), act_max)
    return output


def avgpool_s8(
    input: np.ndarray,
    pool_params: PoolParams,
    filter_hw: tuple[int, int],
    output_hw: tuple[int, int] | None = None,
) -> np.ndarray:
    """``arm_avgpool_s8`` (``Source/PoolingFunctions/arm_avgpool_s8.c``).

    input [N, H, W, C]; window ``filter_hw = (h, w)``; ``output_hw=None`` means
    ``(in + 2 * pad - k) // stride + 1``. Rounding: valid-tap sum divided by the valid-tap count,
    ties away from zero (module docstring). Every image of N is pooled, as the C function loops
    over ``input_dims->n`` (CMSIS-NN since v6.0.0) and TFLM's reference over batches.
    """
    input, k_h, k_w, out_h, out_w = _prepare(ARM_AVGPOOL_S8, input, pool_params, filter_hw, output_hw)
    if k_h * k_w > _MAX_AVG_WINDOW:
        raise KernelArgumentError(ARM_AVGPOOL_S8, "filter_hw", f"at most {_MAX_AVG_WINDOW} taps", filter_hw)
    p = pool_params
    return _avgpool_kernel(
        input, k_h, k_w, p.stride.h, p.stride.w, p.padding.h, p.padding.w,
        p.activation.min, p.activation.max, out_h, out_w,
    )  # fmt: skip


def avgpool_s8_get_buffer_size(output_w: int, input_c: int, isa: str) -> int:
    """``arm_avgpool_s8_get_buffer_size{,_dsp,_mve}`` (``arm_avgpool_get_buffer_sizes_s8.c``), bytes.

    Only the DSP build needs scratch: one int32 running sum per channel.
    """
    if isa not in ISAS:
        raise KernelArgumentError(ARM_AVGPOOL_S8, "isa", f"one of {ISAS}", isa)
    return 4 * input_c if isa == "dsp" else 0


# --- max ----------------------------------------------------------------------------------


def max_pool_s8_reference(
    input: np.ndarray,
    pool_params: PoolParams,
    filter_hw: tuple[int, int],
    output_hw: tuple[int, int] | None = None,
) -> np.ndarray:
    """Readable definition of :func:`max_pool_s8` (TFLM's ``reference_integer_ops::MaxPool`` loops)."""
    input, k_h, k_w, out_h, out_w = _prepare(ARM_MAX_POOL_S8, input, pool_params, filter_hw, output_hw)
    stride, padding, act = pool_params.stride, pool_params.padding, pool_params.activation
    batches, in_h, in_w, depth = input.shape
    output = np.empty((batches, out_h, out_w, depth), np.int8)
    for batch in range(batches):
        for out_y in range(out_h):
            for out_x in range(out_w):
                for channel in range(depth):
                    largest = -128
                    for fy in range(k_h):
                        for fx in range(k_w):
                            in_y = out_y * stride.h - padding.h + fy
                            in_x = out_x * stride.w - padding.w + fx
                            if 0 <= in_y < in_h and 0 <= in_x < in_w:
                                largest = max(largest, int(input[batch, in_y, in_x, channel]))
                    output[batch, out_y, out_x, channel] = min(max(largest, act.min), act.max)
    return output


@jit
def _max_pool_kernel(input, k_h, k_w, stride_h, stride_w, pad_h, pad_w, act_min, act_max, out_h, out_w):
    batches, in_h, in_w, depth = input.shape
    output = np.empty((batches, out_h, out_w, depth), np.int8)
    lo = np.int8(act_min)
    hi = np.int8(act_max)
    for b in range(batches):
        for oy in range(out_h):
            base_y = oy * stride_h - pad_h
            ky_start = max(0, -base_y)
            ky_end = min(k_h, in_h - base_y)
            for ox in range(out_w):
                base_x = ox * stride_w - pad_w
                kx_start = max(0, -base_x)
                kx_end = min(k_w, in_w - base_x)
                dst = output[b, oy, ox]
                for c in range(depth):
                    dst[c] = -128
                for ky in range(ky_start, ky_end):
                    for kx in range(kx_start, kx_end):
                        row = input[b, base_y + ky, base_x + kx]
                        for c in range(depth):
                            dst[c] = max(dst[c], row[c])
                for c in range(depth):
                    dst[c] = min(max(dst[c], lo), hi)
    return output


def max_pool_s8(
    input: np.ndarray,
    pool_params: PoolParams,
    filter_hw: tuple[int, int],
    output_hw: tuple[int, int] | None = None,
) -> np.ndarray:
    """``arm_max_pool_s8`` (``Source/PoolingFunctions/arm_max_pool_s8.c``).

    input [N, H, W, C] (the C function loops over ``input_dims->n``); window ``filter_hw = (h, w)``;
    ``output_hw=None`` means ``(in + 2 * pad - k) // stride + 1``. Exact: the maximum of the valid
    taps, clamped to the activation range. No rounding.
    """
    input, k_h, k_w, out_h, out_w = _prepare(ARM_MAX_POOL_S8, input, pool_params, filter_hw, output_hw)
    p = pool_params
    return _max_pool_kernel(
        input, k_h, k_w, p.stride.h, p.stride.w, p.padding.h, p.padding.w,
        p.activation.min, p.activation.max, out_h, out_w,
    )  # fmt: skip

"""Convolution as an integer GEMM on the float32 BLAS, exact by construction.

``arm_convolve_s8`` computes, per output pixel and channel, ``Σ_k (x_k + input_offset)·w_k`` in an
int32 accumulator, adds the bias (wrapping), requantizes with ``arm_nn_requantize`` and clamps.
This module computes the same sum as a matrix product ``col · Wᵀ`` where ``col`` is the im2col
matrix of ``x + input_offset`` (0 at padding taps, as CMSIS-NN skips them) and ``W`` the OHWI filter
as [C_OUT, KH·KW·C_IN], both held in float32, and hands it to ``numpy.matmul`` (OpenBLAS sgemm).

Why not a bit can move. ``x + input_offset`` is in [-255, 255] and ``w`` in [-128, 127], so every
product is an integer of magnitude at most 255·128 = 32,640 < 2^15, exactly representable. A
float32 holds every integer of magnitude up to 2^24 exactly, so a sum of at most
``K_CHUNK = 512`` such products (at most 512·32,640 = 16,711,680 < 2^24 = 16,777,216 in magnitude,
and so is every partial sum, in whatever order and blocking the BLAS chooses, fused multiply-add
or not) is computed without a single rounding: the float32 result *is* the integer sum. A deeper
product is split into chunks of at most ``K_CHUNK`` columns, each exact, and the chunks are added in
int64 by `_requantize_rows`. The int64 total equals the true sum, and CMSIS-NN's int32 accumulator
equals it modulo 2^32; ``wrap_int32(total + bias)`` is therefore the accumulator C computes, and
from there ``arm_nn_requantize`` is kernels_py.fixedpoint's integer arithmetic, step for step
(`_requantize_rows`, written without branches so it vectorises). No
``fastmath`` anywhere; BLAS rounding modes do not matter because nothing is ever rounded.

The BLAS runs single-threaded (`single_threaded_blas`): refsim spreads samples over the cores
itself (refsim.runtime.batch), and OpenBLAS's own threads on a small product, on a shared
machine, cost more than they give.
"""

from __future__ import annotations

import numpy as np

from kernels_py._jit import jit

#: Largest depth summed in one float32 product (512·255·128 < 2^24: see the module docstring).
K_CHUNK = 512

_blas_limited = False


def single_threaded_blas() -> None:
    """Limit the BLAS that numpy uses to one thread (once per process; threadpoolctl)."""
    global _blas_limited
    if _blas_limited:
        return
    _blas_limited = True
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # a dependency of refsim; without it the BLAS keeps its default threads
        return
    threadpool_limits(limits=1, user_api="blas")


def conv_filter_matrix(filter: np.ndarray) -> np.ndarray:
    """An OHWI int8 filter as the float32 [KH·KW·C_IN, C_OUT] right-hand side of the product."""
    return np.ascontiguousarray(filter.reshape(filter.shape[0], -1).T, dtype=np.float32)


@jit
def _im2col(input, input_offset, k_h, k_w, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, out_h, out_w, col):
    """``col[(b·out_h + oy)·out_w + ox, (ky·k_w + kx)·C + c] = x + input_offset``, 0 at padding taps."""
    n_batch, in_h, in_w, in_c = input.shape
    row = 0
    for b in range(n_batch):
        for oy in range(out_h):
            y0 = oy * stride_h - pad_h
            for ox in range(out_w):
                x0 = ox * stride_w - pad_w
                k = 0
                for ky in range(k_h):
                    iy = y0 + ky * dil_h
                    inside_y = iy >= 0 and iy < in_h
                    for kx in range(k_w):
                        ix = x0 + kx * dil_w
                        if inside_y and ix >= 0 and ix < in_w:
                            for c in range(in_c):
                                col[row, k + c] = np.float32(np.int32(input[b, iy, ix, c]) + input_offset)
                        else:
                            for c in range(in_c):
                                col[row, k + c] = np.float32(0.0)
                        k += in_c
                row += 1


def requantize_table(bias, multiplier, shift) -> np.ndarray:
    """Per output channel, the int64 constants `_requantize_rows` reads: bias (0 for None), multiplier,
    ``max(shift, 0)``, ``max(-shift, 0)``, the remainder mask ``2^right - 1`` and its half ``mask >> 1``
    (arm_nn_requantize's split of the shift and arm_nn_divide_by_power_of_two's threshold), computed once."""
    multiplier = np.asarray(multiplier, np.int64).reshape(-1)
    shift = np.asarray(shift, np.int64).reshape(-1)
    bias = np.zeros_like(multiplier) if bias is None else np.asarray(bias, np.int64).reshape(-1)
    right = np.maximum(-shift, 0)
    mask = (np.int64(1) << right) - 1
    return np.ascontiguousarray(np.stack([bias, multiplier, np.maximum(shift, 0), right, mask, mask >> 1]))


@jit
def _requantize_rows(parts, table, output_offset, act_min, act_max, out):
    """``out[m, n]`` from the exact partial sums ``parts[p, m, n]`` (integers held in float32).

    Per element, the int64 steps of kernels_py.fixedpoint written without branches, so that LLVM
    vectorises them across channels (tests/kernels_py/test_gemm.py checks them against
    ``fixedpoint.requantize`` over the whole int32 range and every shift):
    ``(x << 32) >> 32`` is ``wrap_int32``; ``v << left`` then wrap is C's ``val * (1 << left)``;
    ``(v·m + 2^30) >> 31`` then wrap is ``doubling_high_mult_no_sat``; the shift, the remainder
    ``h & mask`` against ``half + (quotient < 0)`` is ``divide_by_power_of_two``."""
    n_parts, rows, cols = parts.shape
    bias, mult, left, right, mask, half = table[0], table[1], table[2], table[3], table[4], table[5]
    acc = np.empty(cols, np.int64)
    for m in range(rows):
        for n in range(cols):
            acc[n] = np.int64(parts[0, m, n])
        for p in range(1, n_parts):
            for n in range(cols):
                acc[n] += np.int64(parts[p, m, n])
        for n in range(cols):
            v = ((acc[n] + bias[n]) << 32) >> 32
            v = ((v << left[n]) << 32) >> 32
            h = (((v * mult[n] + (np.int64(1) << 30)) >> 31) << 32) >> 32
            r = h >> right[n]
            r += (h & mask[n]) > (half[n] + (r < 0))
            r = ((r + output_offset) << 32) >> 32
            out[m, n] = min(max(r, act_min), act_max)


def convolve_gemm(input, weight_t, table, input_offset, output_offset,
                  stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, act_min, act_max,
                  k_h, k_w, out_h, out_w):  # fmt: skip
    """``arm_convolve_s8`` (groups = 1) on [N, H, W, C_IN] int8, with ``weight_t`` from `conv_filter_matrix`
    and ``table`` from `requantize_table`: the int8 [N, out_h, out_w, C_OUT] ``conv._convolve_kernel`` gives."""
    n_batch = input.shape[0]
    depth, out_c = weight_t.shape
    rows = n_batch * out_h * out_w
    col = np.empty((rows, depth), np.float32)
    _im2col(input, input_offset, k_h, k_w, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, out_h, out_w, col)
    n_parts = -(-depth // K_CHUNK)
    parts = np.empty((n_parts, rows, out_c), np.float32)
    if n_parts == 1:
        np.matmul(col, weight_t, out=parts[0])
    else:
        for p in range(n_parts):
            k0, k1 = p * K_CHUNK, min(depth, (p + 1) * K_CHUNK)
            np.matmul(col[:, k0:k1], weight_t[k0:k1], out=parts[p])
    output = np.empty((n_batch, out_h, out_w, out_c), np.int8)
    _requantize_rows(parts, table, output_offset, act_min, act_max, output.reshape(rows, out_c))
    return output

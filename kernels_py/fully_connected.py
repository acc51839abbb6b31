"""Fully connected, kernel sums and batch matmul: CMSIS-NN ``Source/FullyConnectedFunctions``.

Every function here computes, for each lhs row ``n`` and output channel ``c``::

    acc[n, c] = bias[c] + sum_k (x[n, k] + input_offset) * (w[c, k] + filter_offset)
    y[n, c]   = clamp(arm_nn_requantize(acc, multiplier[c], shift[c]) + output_offset,
                      activation.min, activation.max)

``acc`` is an int32 that wraps (C's ``int32_t +=``, SMLAD and VMLADAVA all wrap), so every
implementation here reduces it modulo 2^32 before requantizing. That makes the bias form
and the MVE kernel-sum form (``kernel_sum[c] + sum_k x*w + filter_offset * sum_k x``) equal
for all inputs: both are the same polynomial evaluated in Z/2^32. Without bias the
accumulator cannot leave int32 for K <= 33025 (each term is at most 255 * 255 = 65025).

The filter is ``[C_OUT, K]`` row-major (CMSIS-NN's ``filter_dims`` is ``{K, 1, 1, C_OUT}``:
``filter_dims->n`` is the row length the C code strides by). Offsets follow CMSIS-NN:
``input_offset = -input_zero_point``, ``output_offset = output_zero_point`` and
``filter_offset = -filter_zero_point``: 0 for symmetric weights, applied on every tier by
``arm_fully_connected_s8`` V.5.3.0 (6 Feb 2024) and later, ignored by V.5.2.0 (Oct 2023).
"""

from __future__ import annotations

import numpy as np

from kernels_py._jit import jit
from kernels_py.errors import KernelArgumentError
from kernels_py.fixedpoint import clamp, requantize, wrap_int32
from kernels_py.types import (
    INT32_MAX,
    INT32_MIN,
    BmmParams,
    FcParams,
    PerChannelQuantParams,
    PerTensorQuantParams,
    check_int8,
    check_int32,
    check_offset,
    check_shifts,
)

FC_S8 = "arm_fully_connected_s8"
FC_PER_CHANNEL_S8 = "arm_fully_connected_per_channel_s8"
VECTOR_SUM_S8 = "arm_vector_sum_s8"
BATCH_MATMUL_S8 = "arm_batch_matmul_s8"

#: Each product (x + input_offset) * (w + filter_offset) is at most 255 * 255 in magnitude,
#: so a bias-free accumulator stays inside int32 up to this depth.
NO_WRAP_MAX_DEPTH = (2**31 - 1) // (255 * 255)


# --- validation shared by the reference and the fast path --------------------------------


def _check_multipliers(function: str, argument: str, multiplier) -> None:
    """Q0.31 multipliers as ``quantize_multiplier`` makes them; INT32_MIN is the one value
    ``arm_nn_doubling_high_mult_no_sat`` cannot square, so it is refused."""
    arr = np.asarray(multiplier, dtype=np.int64)
    if arr.size and (arr.min() <= INT32_MIN or arr.max() > INT32_MAX):
        raise KernelArgumentError(
            function, argument, f"in [{INT32_MIN + 1}, {INT32_MAX}]", (int(arr.min()), int(arr.max()))
        )


def _check_fc_params(function: str, fc_params: FcParams) -> tuple[int, int, int, int, int]:
    """Offsets in the ranges zero points give them (CMSIS-NN's DSP path packs them into
    int16 lanes, so wider values would differ between tiers) and the clamp range."""
    check_offset(function, "fc_params.input_offset", fc_params.input_offset, -127, 128)
    check_offset(function, "fc_params.filter_offset", fc_params.filter_offset, -127, 128)
    check_offset(function, "fc_params.output_offset", fc_params.output_offset, -128, 127)
    fc_params.activation.check(function)
    return (
        int(fc_params.input_offset),
        int(fc_params.filter_offset),
        int(fc_params.output_offset),
        int(fc_params.activation.min),
        int(fc_params.activation.max),
    )


def _check_positive_shape(function: str, argument: str, array: np.ndarray) -> None:
    if 0 in array.shape:
        raise KernelArgumentError(function, argument, "non-empty dimensions", f"shape {array.shape}")


def _check_matrices(function: str, input: np.ndarray, filter: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    input = check_int8(function, "input", input, ndim=2)
    filter = check_int8(function, "filter", filter, ndim=2)
    # An empty batch (N = 0) is a call CMSIS-NN accepts: it computes no row. K must be positive.
    if input.shape[1] == 0:
        raise KernelArgumentError(function, "input", "[N, K] with K >= 1", f"shape {input.shape}")
    _check_positive_shape(function, "filter", filter)
    if filter.shape[1] != input.shape[1]:
        raise KernelArgumentError(
            function, "filter", f"[C_OUT, {input.shape[1]}] (K from input [N, K])", f"shape {filter.shape}"
        )
    return input, filter


def _check_bias(function: str, bias: np.ndarray | None, out_depth: int) -> np.ndarray:
    """A NULL bias is the same as zeros; the fast path always receives an array."""
    if bias is None:
        return np.zeros(out_depth, np.int32)
    return check_int32(function, "bias", bias, (out_depth,))


def _per_tensor(
    function: str, quant_params: PerTensorQuantParams, out_depth: int
) -> tuple[np.ndarray, np.ndarray]:
    _check_multipliers(function, "quant_params.multiplier", quant_params.multiplier)
    check_shifts(function, "quant_params.shift", quant_params.shift)
    return (
        np.full(out_depth, quant_params.multiplier, np.int32),
        np.full(out_depth, quant_params.shift, np.int32),
    )


def _per_channel(
    function: str, quant_params: PerChannelQuantParams, out_depth: int
) -> tuple[np.ndarray, np.ndarray]:
    quant_params.check(function, out_depth)
    _check_multipliers(function, "quant_params.multiplier", quant_params.multiplier)
    return quant_params.multiplier, quant_params.shift


def _prepare_fc(function, input, filter, bias, fc_params, quant_params, per_channel: bool):
    input, filter = _check_matrices(function, input, filter)
    bias = _check_bias(function, bias, filter.shape[0])
    scalars = _check_fc_params(function, fc_params)
    if per_channel:
        mult, shift = _per_channel(function, quant_params, filter.shape[0])
    else:
        mult, shift = _per_tensor(function, quant_params, filter.shape[0])
    return input, filter, bias, scalars, mult, shift


# --- readable references (TFLM's loop structure, Python ints) -----------------------------


def _fc_reference(input, filter, bias, scalars, mult, shift) -> np.ndarray:
    input_offset, filter_offset, output_offset, act_min, act_max = scalars
    x, w, b = input.tolist(), filter.tolist(), bias.tolist()
    m, s = mult.tolist(), shift.tolist()
    batches, depth = input.shape
    out_depth = filter.shape[0]
    output = np.empty((batches, out_depth), np.int8)
    for n in range(batches):
        for c in range(out_depth):
            acc = b[c]
            for k in range(depth):
                acc += (x[n][k] + input_offset) * (w[c][k] + filter_offset)
            # The C accumulator is int32: reduce modulo 2^32 exactly where it would wrap.
            acc = wrap_int32(requantize(wrap_int32(acc), m[c], s[c]) + output_offset)
            output[n, c] = clamp(acc, act_min, act_max)
    return output


def fully_connected_s8_reference(
    input: np.ndarray,
    filter: np.ndarray,
    bias: np.ndarray | None,
    fc_params: FcParams,
    quant_params: PerTensorQuantParams,
) -> np.ndarray:
    """Plain-loop oracle for :func:`fully_connected_s8` (same arguments, same checks)."""
    return _fc_reference(*_prepare_fc(FC_S8, input, filter, bias, fc_params, quant_params, False))


def fully_connected_per_channel_s8_reference(
    input: np.ndarray,
    filter: np.ndarray,
    bias: np.ndarray | None,
    fc_params: FcParams,
    quant_params: PerChannelQuantParams,
) -> np.ndarray:
    """Plain-loop oracle for :func:`fully_connected_per_channel_s8`."""
    return _fc_reference(*_prepare_fc(FC_PER_CHANNEL_S8, input, filter, bias, fc_params, quant_params, True))


# --- fast path -------------------------------------------------------------------------------


@jit
def _row_terms(filter, bias, input_offset, filter_offset):
    """``bias[c] + input_offset * sum_k (w[c, k] + filter_offset)`` per output channel, in
    int64 (the row sum itself in int32, which can only be off by multiples of 2^32)."""
    out_depth, depth = filter.shape
    terms = np.empty(out_depth, np.int64)
    for c in range(out_depth):
        row_sum = np.int32(0)
        for k in range(depth):
            row_sum = np.int32(row_sum + np.int32(filter[c, k]))
        terms[c] = np.int64(bias[c]) + input_offset * (np.int64(row_sum) + depth * filter_offset)
    return terms


@jit
def _vec_mat_mult(
    lhs, rhs, base, input_offset, filter_offset, multipliers, shifts, output_offset, act_min, act_max, out
):
    """``out[n, c]`` from ``base[c] + input_offset * sum_k (rhs[c, k] + filter_offset)
    + sum_k lhs[n, k] * rhs[c, k] + filter_offset * sum_k lhs[n, k]``.

    That is the bias form with ``base`` = bias, and the kernel-sum form with ``base`` =
    kernel sums and ``input_offset`` = 0. Folding the offsets out of the inner loop is
    exact (integer products distribute over sums) and only the value modulo 2^32 is used.
    The dot product accumulates in int32 on purpose: each term is at most 2^14, a wrap
    past K = 131071 is a multiple of 2^32 that the final ``wrap_int32`` removes anyway,
    and an int32 reduction over contiguous rows vectorises. Channels are the outer loop,
    so one filter row is read from memory once and stays in L1 across the batch.
    """
    rows, depth = lhs.shape
    out_depth = rhs.shape[0]
    lhs_terms = np.empty(rows, np.int64)
    for n in range(rows):
        lhs_sum = np.int32(0)
        line = lhs[n]
        for k in range(depth):  # int32 ufuncs: numba types a + b of two int32 as int64 (half the lanes)
            lhs_sum = np.add(lhs_sum, np.int32(line[k]))
        lhs_terms[n] = np.int64(lhs_sum) * filter_offset
    for c in range(out_depth):
        term = np.int64(base[c])
        weights = rhs[c]
        if input_offset != 0:
            row_sum = np.int32(0)
            for k in range(depth):
                row_sum = np.add(row_sum, np.int32(weights[k]))
            term += input_offset * (np.int64(row_sum) + depth * filter_offset)
        for n in range(rows):
            acc = np.int32(0)
            line = lhs[n]
            for k in range(depth):  # int16 products (|x·w| <= 2^14, exact), int32 sum
                acc = np.add(acc, np.int32(np.multiply(np.int16(line[k]), np.int16(weights[k]))))
            total = wrap_int32(np.int64(acc) + term + lhs_terms[n])
            value = wrap_int32(requantize(total, multipliers[c], shifts[c]) + output_offset)
            out[n, c] = clamp(value, act_min, act_max)


@jit
def _fully_connected_kernel(
    input, filter, bias, input_offset, filter_offset, output_offset, multipliers, shifts, act_min, act_max
):
    out = np.empty((input.shape[0], filter.shape[0]), np.int8)
    _vec_mat_mult(
        input,
        filter,
        bias,
        input_offset,
        filter_offset,
        multipliers,
        shifts,
        output_offset,
        act_min,
        act_max,
        out,
    )
    return out


@jit
def _kernel_sum_fc_kernel(
    input, filter, kernel_sum, filter_offset, output_offset, multipliers, shifts, act_min, act_max
):
    out = np.empty((input.shape[0], filter.shape[0]), np.int8)
    # input_offset = 0: the kernel sums already hold bias + input_offset * sum (w + filter_offset).
    _vec_mat_mult(
        input, filter, kernel_sum, 0, filter_offset, multipliers, shifts, output_offset, act_min, act_max, out
    )
    return out


def _run_fc(input, filter, bias, scalars, mult, shift) -> np.ndarray:
    input_offset, filter_offset, output_offset, act_min, act_max = scalars
    return _fully_connected_kernel(
        input, filter, bias, input_offset, filter_offset, output_offset, mult, shift, act_min, act_max
    )


def fully_connected_s8(
    input: np.ndarray,
    filter: np.ndarray,
    bias: np.ndarray | None,
    fc_params: FcParams,
    quant_params: PerTensorQuantParams,
) -> np.ndarray:
    """``arm_fully_connected_s8`` (``Source/FullyConnectedFunctions/arm_fully_connected_s8.c``).

    ``input`` [N, K] int8, ``filter`` [C_OUT, K] int8, ``bias`` [C_OUT] int32 or None;
    returns [N, C_OUT] int8. Per-tensor ``arm_nn_requantize``, CMSIS-NN's default double
    rounding: doubling high multiply with +2^30 then ``>> 31`` (floor), then a rounding
    right shift with ties away from zero. ``filter_offset`` is applied as current CMSIS-NN
    does (``arm_nn_vec_mat_mult_t_s8``'s ``rhs_offset``).
    """
    return _run_fc(*_prepare_fc(FC_S8, input, filter, bias, fc_params, quant_params, False))


def fully_connected_per_channel_s8(
    input: np.ndarray,
    filter: np.ndarray,
    bias: np.ndarray | None,
    fc_params: FcParams,
    quant_params: PerChannelQuantParams,
) -> np.ndarray:
    """``arm_fully_connected_per_channel_s8`` (``Source/FullyConnectedFunctions/
    arm_fully_connected_per_channel_s8.c``, via ``arm_nn_vec_mat_mult_t_per_ch_s8``).

    As :func:`fully_connected_s8` with ``multiplier[c]``/``shift[c]`` per output channel;
    same double rounding. CMSIS-NN applies ``filter_offset`` here too (TFLM's reference
    ``FullyConnectedPerChannel`` ignores it, assuming symmetric weights).
    """
    return _run_fc(*_prepare_fc(FC_PER_CHANNEL_S8, input, filter, bias, fc_params, quant_params, True))


# --- kernel sums (the MVE form) ---------------------------------------------------------------


def _prepare_vector_sum(filter, input_offset, bias, filter_offset):
    filter = check_int8(VECTOR_SUM_S8, "filter", filter, ndim=2)
    _check_positive_shape(VECTOR_SUM_S8, "filter", filter)
    check_offset(VECTOR_SUM_S8, "input_offset", input_offset, -127, 128)
    check_offset(VECTOR_SUM_S8, "filter_offset", filter_offset, -127, 128)
    bias = _check_bias(VECTOR_SUM_S8, bias, filter.shape[0])
    return filter, int(input_offset), bias, int(filter_offset)


def vector_sum_s8_reference(
    filter: np.ndarray, input_offset: int, bias: np.ndarray | None, filter_offset: int = 0
) -> np.ndarray:
    """Plain-loop oracle for :func:`vector_sum_s8`."""
    filter, input_offset, bias, filter_offset = _prepare_vector_sum(filter, input_offset, bias, filter_offset)
    out_depth, depth = filter.shape
    w, b = filter.tolist(), bias.tolist()
    sums = np.empty(out_depth, np.int32)
    for c in range(out_depth):
        row_sum = sum(w[c]) + depth * filter_offset
        sums[c] = wrap_int32(b[c] + wrap_int32(row_sum * input_offset))
    return sums


@jit
def _vector_sum_kernel(filter, input_offset, bias, filter_offset):
    terms = _row_terms(filter, bias, input_offset, filter_offset)
    sums = np.empty(terms.shape[0], np.int32)
    for c in range(terms.shape[0]):
        sums[c] = wrap_int32(terms[c])
    return sums


def vector_sum_s8(
    filter: np.ndarray, input_offset: int, bias: np.ndarray | None, filter_offset: int = 0
) -> np.ndarray:
    """``arm_vector_sum_s8`` (``Source/FullyConnectedFunctions/arm_vector_sum_s8.c``): kernel sums.

    ``filter`` [C_OUT, K] int8 (``vector_data``: rows = C_OUT, cols = K); returns int32
    [C_OUT] ``bias[c] + input_offset * (sum_k w[c, k] + K * filter_offset)``, wrapped to
    int32 as the C stores it (``lhs_offset`` = ``input_offset``, ``rhs_offset`` =
    ``filter_offset``; a NULL bias is zeros). This is the ``ctx->buf`` that
    ``arm_fully_connected_s8`` reads on MVE, and what ExecuTorch's cortex_m AOT pass
    precomputes as ``kernel_sum = -zp * sum(w) + bias``. No rounding: exact integers.
    """
    return _vector_sum_kernel(*_prepare_vector_sum(filter, input_offset, bias, filter_offset))


def _prepare_kernel_sum_fc(input, filter, kernel_sum, fc_params, quant_params):
    input, filter = _check_matrices(FC_S8, input, filter)
    kernel_sum = check_int32(FC_S8, "kernel_sum", kernel_sum, (filter.shape[0],))
    _, filter_offset, output_offset, act_min, act_max = _check_fc_params(FC_S8, fc_params)
    mult, shift = _per_tensor(FC_S8, quant_params, filter.shape[0])
    return input, filter, kernel_sum, (filter_offset, output_offset, act_min, act_max), mult, shift


def fully_connected_s8_kernel_sum_reference(
    input: np.ndarray,
    filter: np.ndarray,
    kernel_sum: np.ndarray,
    fc_params: FcParams,
    quant_params: PerTensorQuantParams,
) -> np.ndarray:
    """Plain-loop oracle for :func:`fully_connected_s8_kernel_sum`."""
    input, filter, kernel_sum, scalars, mult, shift = _prepare_kernel_sum_fc(
        input, filter, kernel_sum, fc_params, quant_params
    )
    filter_offset, output_offset, act_min, act_max = scalars
    x, w, ks = input.tolist(), filter.tolist(), kernel_sum.tolist()
    m, s = mult.tolist(), shift.tolist()
    batches, depth = input.shape
    out_depth = filter.shape[0]
    output = np.empty((batches, out_depth), np.int8)
    for n in range(batches):
        lhs_sum = sum(x[n])
        for c in range(out_depth):
            acc = ks[c] + filter_offset * lhs_sum
            for k in range(depth):
                acc += x[n][k] * w[c][k]
            acc = wrap_int32(requantize(wrap_int32(acc), m[c], s[c]) + output_offset)
            output[n, c] = clamp(acc, act_min, act_max)
    return output


def fully_connected_s8_kernel_sum(
    input: np.ndarray,
    filter: np.ndarray,
    kernel_sum: np.ndarray,
    fc_params: FcParams,
    quant_params: PerTensorQuantParams,
) -> np.ndarray:
    """``arm_fully_connected_s8`` as its MVE path computes it (``ctx->buf`` = kernel sums).

    ``acc = kernel_sum[c] + sum_k x*w + filter_offset * sum_k x`` (``arm_nn_vec_mat_mult_t_s8``,
    ``ARM_MATH_MVEI``), then the same requantization as :func:`fully_connected_s8`.
    ``kernel_sum`` is :func:`vector_sum_s8`'s output, so ``fc_params.input_offset`` and the
    bias are not read here (they are inside the sums). Bit-identical to the bias form for
    every input, because both reduce the same integer modulo 2^32.
    """
    input, filter, kernel_sum, scalars, mult, shift = _prepare_kernel_sum_fc(
        input, filter, kernel_sum, fc_params, quant_params
    )
    filter_offset, output_offset, act_min, act_max = scalars
    return _kernel_sum_fc_kernel(
        input, filter, kernel_sum, filter_offset, output_offset, mult, shift, act_min, act_max
    )


# --- batch matmul ---------------------------------------------------------------------------


def _as_4d(function: str, argument: str, array: np.ndarray) -> np.ndarray:
    array = check_int8(function, argument, array)
    if not 2 <= array.ndim <= 4:
        raise KernelArgumentError(function, argument, "2-D to 4-D [..., rows, K]", f"shape {array.shape}")
    _check_positive_shape(function, argument, array)
    return array.reshape((1,) * (4 - array.ndim) + array.shape)


def _prepare_bmm(input_lhs, input_rhs, bmm_params: BmmParams, quant_params):
    ndim = max(np.ndim(input_lhs), np.ndim(input_rhs))
    lhs = _as_4d(BATCH_MATMUL_S8, "input_lhs", input_lhs)
    rhs = _as_4d(BATCH_MATMUL_S8, "input_rhs", input_rhs)
    if lhs.shape[3] != rhs.shape[3]:
        raise KernelArgumentError(
            BATCH_MATMUL_S8,
            "input_rhs",
            f"[..., RHS_ROWS, {lhs.shape[3]}] (K of input_lhs)",
            f"shape {rhs.shape}",
        )
    for axis, name in ((0, "n"), (1, "h")):
        a, b = lhs.shape[axis], rhs.shape[axis]
        if a != b and 1 not in (a, b):
            raise KernelArgumentError(
                BATCH_MATMUL_S8, f"input_rhs_dims.{name}", f"{a} or 1 (broadcast against input_lhs)", b
            )
    scalars = _check_fc_params(BATCH_MATMUL_S8, bmm_params.fc_params)
    _check_multipliers(BATCH_MATMUL_S8, "quant_params.multiplier", quant_params.multiplier)
    check_shifts(BATCH_MATMUL_S8, "quant_params.shift", quant_params.shift)
    out_shape = (max(lhs.shape[0], rhs.shape[0]), max(lhs.shape[1], rhs.shape[1]), lhs.shape[2], rhs.shape[2])
    return lhs, rhs, scalars, int(quant_params.multiplier), int(quant_params.shift), out_shape, ndim


def batch_matmul_s8_reference(
    input_lhs: np.ndarray, input_rhs: np.ndarray, bmm_params: BmmParams, quant_params: PerTensorQuantParams
) -> np.ndarray:
    """Plain-loop oracle for :func:`batch_matmul_s8`."""
    lhs, rhs, scalars, mult, shift, out_shape, ndim = _prepare_bmm(
        input_lhs, input_rhs, bmm_params, quant_params
    )
    input_offset, filter_offset, output_offset, act_min, act_max = scalars
    x, w = lhs.tolist(), rhs.tolist()
    output = np.empty(out_shape, np.int8)
    batches, height, lhs_rows, rhs_rows = out_shape
    depth = lhs.shape[3]
    for b in range(batches):
        for h in range(height):
            # Broadcast dims of extent 1 repeat their only slice (numpy's rule).
            lhs_mat = x[b if lhs.shape[0] > 1 else 0][h if lhs.shape[1] > 1 else 0]
            rhs_mat = w[b if rhs.shape[0] > 1 else 0][h if rhs.shape[1] > 1 else 0]
            for i in range(lhs_rows):
                for j in range(rhs_rows):
                    acc = 0
                    for k in range(depth):
                        acc += (lhs_mat[i][k] + input_offset) * (rhs_mat[j][k] + filter_offset)
                    acc = wrap_int32(requantize(wrap_int32(acc), mult, shift) + output_offset)
                    output[b, h, i, j] = clamp(acc, act_min, act_max)
    return output.reshape(out_shape[4 - ndim :])


@jit
def _batch_matmul_kernel(
    lhs, rhs, input_offset, filter_offset, output_offset, multiplier, shift, act_min, act_max, out
):
    rhs_rows = rhs.shape[2]
    multipliers = np.full(rhs_rows, multiplier, np.int32)
    shifts = np.full(rhs_rows, shift, np.int32)
    no_bias = np.zeros(rhs_rows, np.int32)
    for b in range(out.shape[0]):
        for h in range(out.shape[1]):
            lhs_mat = lhs[b if lhs.shape[0] > 1 else 0, h if lhs.shape[1] > 1 else 0]
            rhs_mat = rhs[b if rhs.shape[0] > 1 else 0, h if rhs.shape[1] > 1 else 0]
            _vec_mat_mult(
                lhs_mat, rhs_mat, no_bias, input_offset, filter_offset,
                multipliers, shifts, output_offset, act_min, act_max, out[b, h],
            )  # fmt: skip


def batch_matmul_s8(
    input_lhs: np.ndarray, input_rhs: np.ndarray, bmm_params: BmmParams, quant_params: PerTensorQuantParams
) -> np.ndarray:
    """``arm_batch_matmul_s8`` (``Source/FullyConnectedFunctions/arm_batch_matmul_s8.c``).

    ``input_lhs`` [N1, H1, LHS_ROWS, K], ``input_rhs`` [N2, H2, RHS_ROWS, K] (the rhs is
    already transposed: ``out = lhs @ rhs^T``); 2-D and 3-D arrays are right-aligned as
    TFLM's ``FillVariableShape`` does. N and H broadcast when one side is 1 (the C walks
    its pointers back for that side); output [max(N), max(H), LHS_ROWS, RHS_ROWS] with the
    inputs' larger rank. Each row is ``arm_nn_vec_mat_mult_t_s8`` without bias: per-tensor
    double-rounding requantize, ``fc_params`` offsets (``filter_offset`` = -rhs zero point).
    ``bmm_params.adj_x``/``adj_y`` are not read, exactly as in the C function: the caller
    (TFLM's ``batch_matmul.cc``) transposes beforehand so that the layouts above hold.
    """
    lhs, rhs, scalars, mult, shift, out_shape, ndim = _prepare_bmm(
        input_lhs, input_rhs, bmm_params, quant_params
    )
    input_offset, filter_offset, output_offset, act_min, act_max = scalars
    out = np.empty(out_shape, np.int8)
    _batch_matmul_kernel(
        lhs, rhs, input_offset, filter_offset, output_offset, mult, shift, act_min, act_max, out
    )
    return out.reshape(out_shape[4 - ndim :])

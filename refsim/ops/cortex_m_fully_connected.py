"""cortex_m linear and batch matmul (ExecuTorch 1.5.1) on kernels_py's CMSIS-NN fully-connected kernels.

How each op reaches CMSIS-NN, as ExecuTorch's ``backends/cortex_m/ops/op_quantized_*.cpp`` calls it:

| op | CMSIS-NN call | tensors as the C++ reads them |
|---|---|---|
| quantized_linear | arm_fully_connected_s8 (per tensor) | input [..., K] row major; ``kernel_sum`` is ``ctx.buf`` |
| quantized_batch_matmul | arm_batch_matmul_s8 | lhs [B, M, K], rhs_transposed [B, N, K] (``out = lhs @ rhs^T``) |

Quirks carried over from ExecuTorch: ``input_offset = -input_zero_point`` and ``output_offset =
output_zero_point``; batch matmul's ``lhs_zero_point``/``rhs_zero_point`` arguments also hold the
*negated* zero points (offsets) despite their names; quantized_linear lists ``activation_max`` before
``activation_min``, carries its multiplier/shift as one-element int lists (the C++ reads element 0:
per-tensor only) and, when exported for MVE, no bias but a constant ``kernel_sum = bias -
input_zp·Σw`` that CMSIS-NN's MVE path reads from ``ctx.buf`` (the DSP/scalar paths read the bias and
ignore ``ctx.buf``, so such a program computes something else on those cores, as a bias-only program
fails on MVE: refsim computes the form the program carries, i.e. what its exporting target computes);
batch matmul clamps to the full int8 range (it has no activation arguments). Its scratch tensor
(uint8, memory planned) is CMSIS-NN's ``ctx.buf`` sized by the ``*_get_buffer_size`` of the
exporting target; refsim's kernels need none, so it only gets checked.

Validated and prepared as `cortex_m_calls` describes; the convolutions are in `cortex_m_conv`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernels_py import fully_connected as kfc
from kernels_py import gemm
from kernels_py.types import (
    INT8_MAX,
    INT8_MIN,
    BmmParams,
    FcParams,
    PerTensorQuantParams,
)
from refsim.ops import cortex_m_calls
from refsim.ops.cortex_m_calls import (
    _activation,
    _check_multipliers,
    _check_shifts,
    _constant_int32,
    _contiguous,
    _dry_run,
    _execute,
    _int_in,
    _Plan,
    _scratch,
    _tensor,
    _view,
    _watch,
)
from refsim.ops.divergence import Divergence
from refsim.ops.registry import Args, register
from refsim.pte.model import ScalarType

LINEAR = (
    "cortex_m::quantized_linear.out(Tensor input, Tensor weights, Tensor? bias, Tensor? kernel_sum, int "
    "input_offset, int filter_offset, int output_offset, int[] requantize_multipliers, int[] "
    "requantize_shifts, int activation_max, int activation_min, *, Tensor(a!) out) -> Tensor(a!)"
)
BATCH_MATMUL = (
    "cortex_m::quantized_batch_matmul.out(Tensor lhs, int lhs_zero_point, Tensor rhs_transposed, int "
    "rhs_zero_point, int output_zero_point, int output_multiplier, int output_shift, Tensor scratch, *, "
    "Tensor(a!) out) -> Tensor(a!)"
)


# --- quantized_linear -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _LinearCall:
    rows: int
    depth: int
    channels: int
    params: FcParams
    quant: PerTensorQuantParams


def _linear_call(a: Args) -> _LinearCall:
    x = _tensor(a, "input", (ScalarType.INT8,))
    out = _tensor(a, "out", (ScalarType.INT8,), len(x.sizes))
    w = _tensor(a, "weights", (ScalarType.INT8,), 2)
    for name, t in (("input", x), ("out", out), ("weights", w)):
        if len(t.sizes) < 1 or not t.logical.flags.c_contiguous:
            raise a.error(
                name,
                "row-major bytes (the kernel reads [rows, K] from memory)",
                f"dim_order {list(t.dim_order)}",
            )
    channels, depth = w.sizes
    if not x.sizes or x.sizes[-1] != depth or min(x.sizes) < 1 or channels < 1:
        raise a.error("input", f"[..., K={depth}] (K from weights [C_OUT, K])", f"sizes {list(x.sizes)}")
    if tuple(out.sizes) != (*x.sizes[:-1], channels):
        raise a.error("out", f"sizes {[*x.sizes[:-1], channels]}", f"{list(out.sizes)}")
    multipliers, shifts = a.requantize_multipliers, a.requantize_shifts
    for name, values in (("requantize_multipliers", multipliers), ("requantize_shifts", shifts)):
        if not values or len(set(values)) != 1:
            expected = "one value (ExecuTorch's kernel is per tensor: it reads element 0 only)"
            raise a.error(name, expected, list(values))
    _check_multipliers(a, "requantize_multipliers", multipliers)
    _check_shifts(a, "requantize_shifts", shifts)
    activation = _activation(a)
    params = FcParams(
        _int_in(a, "input_offset", -127, 128),
        _int_in(a, "filter_offset", -127, 128),
        _int_in(a, "output_offset", INT8_MIN, INT8_MAX),
        activation,
    )
    rows = int(np.prod(x.sizes[:-1], dtype=np.int64))
    return _LinearCall(
        rows, depth, channels, params, PerTensorQuantParams(int(multipliers[0]), int(shifts[0]))
    )


def _linear_operands(a: Args, call: _LinearCall, checked: bool, out: np.ndarray | None = None):
    x = _view(a.input, (call.rows, call.depth))
    w = a.weights.storage.reshape(call.channels, call.depth)
    bias = _constant_int32(a, "bias", call.channels)
    kernel_sum = _constant_int32(a, "kernel_sum", call.channels, any_shape=True)
    if bias is not None and kernel_sum is not None:
        raise a.error(
            "bias",
            "None when kernel_sum is given (CMSIS-NN's MVE path reads only kernel_sum, DSP/scalar only bias)",
            "a tensor",
        )
    w = np.array(w) if a.weights.meta.is_constant else w
    p, q = call.params, call.quant
    if checked:
        if kernel_sum is not None:
            return kfc.fully_connected_s8_kernel_sum, (x, w, kernel_sum, p, q)
        return kfc.fully_connected_s8, (x, w, bias, p, q)
    mult, shift = np.full(call.channels, q.multiplier, np.int32), np.full(call.channels, q.shift, np.int32)
    act = p.activation
    if p.filter_offset == 0 and out is not None:
        # kernels_py.gemm: Σ (x + input_offset)·w + base, written into ``out`` (the exact float32 GEMM
        # from FC_GEMM_ROWS rows on, as a stacked batch has; the int32 vector loop below that).
        gemm.single_threaded_blas()
        base, offset = (kernel_sum, 0) if kernel_sum is not None else (bias, p.input_offset)
        if base is None:
            base = np.zeros(call.channels, np.int32)
        table = gemm.requantize_table(base, mult, shift)
        weight_t = gemm.conv_filter_matrix(w)
        operands = (x, w, weight_t, table, base, offset, p.output_offset, mult, shift, act.min, act.max, out)
        return gemm.fully_connected_rows, operands
    if kernel_sum is not None:
        operands = (x, w, kernel_sum, p.filter_offset, p.output_offset, mult, shift, act.min, act.max)
        return kfc._kernel_sum_fc_kernel, operands
    if bias is None:
        bias = np.zeros(call.channels, np.int32)
    operands = (x, w, bias, p.input_offset, p.filter_offset, p.output_offset, mult, shift, act.min, act.max)
    return kfc._fully_connected_kernel, operands


def _linear_prepare(a: Args) -> _Plan:
    call = _linear_call(a)
    dst = _view(a.out, (call.rows, call.channels))
    fn, operands = _linear_operands(a, call, cortex_m_calls.CHECKED, dst)
    watch = _watch(a, "input", "weights", "bias", "kernel_sum", "out")
    if fn is not gemm.fully_connected_rows:
        return _Plan(a, fn, operands, dst, watch)
    if call.rows >= gemm.FC_GEMM_ROWS:
        return _Plan(a, fn, operands, None, watch)  # writes dst itself
    # A row or few (a single run): the vector loop fully_connected_rows would pick, called without
    # its Python wrapper (~1 us a layer of AD's ~3); a stacked run keeps the wrapper, whose GEMM
    # takes the stacked rows.
    direct = gemm.vector_loop_operands(*operands)
    return _Plan(a, kfc._vec_mat_mult, direct, None, watch, stacked=(fn, operands))


@register(LINEAR, kernel="arm_fully_connected_s8")
def quantized_linear(a: Args) -> None:
    """arm_fully_connected_s8, per tensor, over [rows, K] (every leading dim is a row). With ``kernel_sum``
    (MVE export) the MVE form ``kernel_sum + Σx·w + filter_offset·Σx``, else the bias form."""
    _execute(a, _linear_prepare)


@quantized_linear.validator
def _validate_linear(a: Args) -> None:
    call = _linear_call(a)
    fn, operands = _linear_operands(a, call, checked=True)
    _dry_run(a, fn, np.zeros_like(operands[0]), *operands[1:])
    a.state = _linear_prepare(a)


@quantized_linear.mac_count
def _linear_macs(a: Args) -> int:
    call = _linear_call(a)
    return call.rows * call.depth * call.channels


@quantized_linear.scratch_bytes
def _linear_scratch(a: Args, isa: str) -> int:
    return 0  # the MVE kernel sums are a constant tensor (kernel_sum), not scratch


def _linear_divergences(a: Args, isa: str) -> list[Divergence]:
    """arm_fully_connected_s8 reads ``ctx.buf`` (the kernel sums) on MVE only, the bias on
    scalar/DSP only (CMSIS-NN Source/FullyConnectedFunctions/arm_fully_connected_s8.c)."""
    if a.kernel_sum is not None and isa != "mve":
        reason = (
            f"kernel_sum (an MVE export's bias - input_zp·Σw) is CMSIS-NN's ctx.buf, which the {isa} "
            "arm_fully_connected_s8 ignores; with no bias tensor that build leaves the bias out "
            "(refsim computes the MVE form the program carries)"
        )
        return [Divergence(a.op, a.instruction, "ignored_argument", ("kernel_sum", "bias"), reason)]
    if a.kernel_sum is None and isa == "mve":
        reason = (
            "no kernel_sum: CMSIS-NN's MVE arm_fully_connected_s8 returns ARM_CMSIS_NN_ARG_ERROR "
            "when ctx.buf is NULL (refsim computes the bias form the program carries)"
        )
        return [Divergence(a.op, a.instruction, "device_error", ("kernel_sum",), reason)]
    return []


quantized_linear.divergences = _linear_divergences


# --- quantized_batch_matmul --------------------------------------------------------------------------


def _bmm_call(a: Args) -> tuple[tuple[int, int, int, int], BmmParams, PerTensorQuantParams]:
    lhs = _tensor(a, "lhs", (ScalarType.INT8,), 3)
    rhs = _tensor(a, "rhs_transposed", (ScalarType.INT8,), 3)
    out = _tensor(a, "out", (ScalarType.INT8,), 3)
    for name, t in (("lhs", lhs), ("rhs_transposed", rhs), ("out", out)):
        _contiguous(a, name, t)
    batch, rows, depth = lhs.sizes
    if rhs.sizes[0] != batch or rhs.sizes[2] != depth or min(batch, rows, depth, rhs.sizes[1]) < 1:
        raise a.error(
            "rhs_transposed",
            f"[B={batch}, N, K={depth}] (rhs already transposed)",
            f"sizes {list(rhs.sizes)}",
        )
    cols = rhs.sizes[1]
    if tuple(out.sizes) != (batch, rows, cols):
        raise a.error("out", f"sizes {[batch, rows, cols]}", f"{list(out.sizes)}")
    _check_multipliers(a, "output_multiplier", (a.output_multiplier,))
    _check_shifts(a, "output_shift", (a.output_shift,))
    fc = FcParams(
        _int_in(a, "lhs_zero_point", -127, 128),  # holds -zero_point: an offset
        _int_in(a, "rhs_zero_point", -127, 128),
        _int_in(a, "output_zero_point", INT8_MIN, INT8_MAX),
    )
    return (
        (batch, rows, cols, depth),
        BmmParams(fc_params=fc),
        PerTensorQuantParams(int(a.output_multiplier), int(a.output_shift)),
    )


def _bmm_need(cols: int) -> dict[str, int]:
    """arm_fully_connected_s8_get_buffer_size(out_dims): the MVE kernel sums of one rhs matrix."""
    return {"scalar": 0, "dsp": 0, "mve": 4 * cols}


def _bmm_prepare(a: Args) -> _Plan:
    (batch, rows, cols, depth), bmm, q = _bmm_call(a)
    watch = _watch(a, "lhs", "rhs_transposed", "out")
    if cortex_m_calls.CHECKED:
        lhs, rhs = _view(a.lhs, (batch, rows, depth)), _view(a.rhs_transposed, (batch, cols, depth))
        return _Plan(a, kfc.batch_matmul_s8, (lhs, rhs, bmm, q), _view(a.out, (batch, rows, cols)), watch)
    lhs, rhs = _view(a.lhs, (1, batch, rows, depth)), _view(a.rhs_transposed, (1, batch, cols, depth))
    fc = bmm.fc_params
    operands = (lhs, rhs, fc.input_offset, fc.filter_offset, fc.output_offset, q.multiplier, q.shift)
    operands += (INT8_MIN, INT8_MAX, _view(a.out, (1, batch, rows, cols)))
    return _Plan(a, kfc._batch_matmul_kernel, operands, None, watch)


@register(BATCH_MATMUL, kernel="arm_batch_matmul_s8")
def quantized_batch_matmul(a: Args) -> None:
    """arm_batch_matmul_s8: ``out[b] = requantize((lhs[b] + lhs_offset) @ (rhs_transposed[b] + rhs_offset)^T)``,
    per tensor, full int8 clamp."""
    _execute(a, _bmm_prepare)


@quantized_batch_matmul.validator
def _validate_bmm(a: Args) -> None:
    (batch, rows, cols, depth), bmm, q = _bmm_call(a)
    _scratch(a, "scratch", _bmm_need(cols))
    lhs = np.zeros((batch, rows, depth), np.int8)
    _dry_run(a, kfc.batch_matmul_s8, lhs, np.array(a.rhs_transposed.storage), bmm, q)
    a.state = _bmm_prepare(a)


@quantized_batch_matmul.mac_count
def _bmm_macs(a: Args) -> int:
    (batch, rows, cols, depth), _, _ = _bmm_call(a)
    return batch * rows * cols * depth


@quantized_batch_matmul.scratch_bytes
def _bmm_scratch(a: Args, isa: str) -> int:
    return _bmm_need(_bmm_call(a)[0][2])[isa]

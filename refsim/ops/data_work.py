"""Work that depends on the values a call sees, as the golden kernels count it.

Most CMSIS-NN loops run the same trips whatever the data (activation clamps and rounding are
branchless or a few instructions). Read from CMSIS-NN's sources (Source/**/*_s8.c at the
calibrated commit), the s8 functions the cost model prices whose loop trips follow the values:

- ``arm_softmax_s8`` (``arm_nn_softmax_common_s8``): ``EXP_ON_NEG`` runs, in the sum pass and
  again in the output pass, only for the elements with ``x - max(row) >= diff_min``; the others
  cost a compare and a store of -128; and an exponential whose scaled input is 0 returns early
  in GCC's build. Counted by ``kernels_py.softmax.softmax_s8_exp_counts``.

Looked at and found data-independent in their loop trips (the shape decides them): max pooling
(``arm_max_pool_s8`` compares every tap, no early exit; off MVE its per-byte ``if (src > dst)
dst = src`` is an IT block on Thumb-2, but may be a branch on ARMv6-M: a few cycles per replaced
byte on the M0+, not priced), ``arm_maximum_s8``/``arm_minimum_s8``,
``arm_relu6_s8`` and the elementwise add/mul (a branchless clamp per element), the convolutions,
depthwise and fully connected kernels (requantization is straight-line; no zero skipping),
``arm_pad_s8`` and ``arm_transpose_s8`` (copies by shape).

Two entries, each a dict of counts under the names the formulas take as params
(:attr:`isa_models.cortex_m.formula.Formula.data`):

- :func:`call_counts` for a CMSIS-NN call given its arrays (a conformance or calibration case);
- :func:`op_counts` for a KernelCall of a program, called before the call runs (its inputs are
  in place): ``refsim run --estimate-cycles`` and ``refsim eval`` collect these with a trace hook
  and price each call on its own values.

Light on purpose, like work_params: a plain run must not load the cost model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from kernels_py import softmax
from refsim.ops.registry import Args

Counts = dict[str, int]


def _softmax_counts(rows: np.ndarray, mult: int, shift: int, diff_min: int) -> Counts:
    computed, zero = softmax.softmax_s8_exp_counts(rows, mult, shift, diff_min)
    return {"exp_elements": computed, "exp_zero": zero}


def _softmax_call(params: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> Counts:
    rows, size = int(params["num_rows"]), int(params["row_size"])
    data = np.asarray(arrays["input"]).reshape(-1)[: rows * size].reshape(rows, size)
    return _softmax_counts(data, int(params["mult"]), int(params["shift"]), int(params["diff_min"]))


#: CMSIS-NN function → its counter over (params, arrays).
_CALLS: dict[str, Callable[[Mapping[str, Any], Mapping[str, np.ndarray]], Counts]] = {
    "arm_softmax_s8": _softmax_call,
}


def call_counts(function: str, params: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> Counts:
    """The data-dependent counts of one call of ``function`` on ``arrays`` ({} for a function
    whose work the shape decides)."""
    counter = _CALLS.get(function)
    return counter(params, arrays) if counter is not None else {}


def _softmax_op(a: Args) -> Counts:
    from refsim.ops.cortex_m_elementwise import flat

    row = int(a.input.sizes[-1])
    return _softmax_counts(flat(a.input).reshape(-1, row), int(a.input_multiplier), int(a.input_shift),
                           int(a.diff_min))  # fmt: skip


#: Registry op → its counter over the call's bound arguments (inputs in place, before it runs).
_OPS: dict[str, Callable[[Args], Counts]] = {
    "cortex_m::softmax.out": _softmax_op,
}


def data_dependent(op_name: str) -> bool:
    """Whether ``op_name``'s work depends on the values it sees."""
    return op_name in _OPS


def op_counts(op_name: str, args: Args) -> Counts | None:
    """The counts of a KernelCall about to run, or None for an op whose work the shape decides."""
    counter = _OPS.get(op_name)
    return counter(args) if counter is not None else None


class CountingTrace:
    """A ``Method.execute`` trace hook that records :func:`op_counts` of every data-dependent call
    before it runs: ``counts[instruction]``. The estimate prices each instruction once, so a call
    run more than once (a loop) keeps its first run's counts."""

    def __init__(self) -> None:
        self.counts: dict[int, Counts] = {}

    def __call__(self, pc: int, call: Any, phase: str) -> None:
        if phase == "before" and call.op.name in _OPS and call.instruction not in self.counts:
            self.counts[call.instruction] = _OPS[call.op.name](call.args)


__all__ = ["CountingTrace", "call_counts", "data_dependent", "op_counts"]

"""Cost formula for CMSIS-NN's s8 softmax (kernels_py/softmax.py).

CMSIS-NN (``arm_softmax_s8``; built with GCC 12.2 its MVE path is compiled out by
``ARM_GCC_12_2_ICE``, so every tier runs ``arm_nn_softmax_common_s8``): per row a max pass, a
sum pass and an output pass over the S elements; the sum and output passes compute
``EXP_ON_NEG`` only for the elements whose ``diff = x - max`` passes ``diff_min`` and store -128
for the others. So the work follows a count of the *values*, not the shape (R rows of S
elements, λ = 16 int8 lanes on MVE)::

    call         = 1
    rows         = R                  per-row max, reciprocal (one_over_one_plus_x), set-up
    max_rows     = R when S > 1       rows whose max loop runs (its set-up: vectorised on MVE)
    elements     = R·S                the three passes' loop trips, the diff_min test, the -128 stores
    exp_elements = the elements with diff >= diff_min whose scaled input is not 0 (the golden run's
                   counts, kernels_py.softmax.softmax_s8_exp_counts, params ``exp_elements`` minus
                   ``exp_zero``); without them, R·S: the shape-only bound (every exponential computed)
    exp_zero     = those whose scaled input is 0 (GCC's EXP_ON_NEG returns NN_Q31_MAX early)
    blocks       = R·⌈S/λ⌉ on MVE (a vectorised max pass), 0 otherwise

kernels_c (:func:`_features_kernels_c`) tabulates the exponential of every diff that can pass
``diff_min`` when the call has more elements than that span, then gathers per element::

    exp_elements   = R·S when each element's exponential is computed
    table_elements = R·S when the call tabulates first, table = that span,
    table_calls    = 1 then (the table's set-up, which the direct path does not pay)
    kernels_c on MVE: exp_vectors / table_vectors = R·⌈S/4⌉ (four exponentials per vector)

kernels_c's tabulated path does the same per element whatever the values; its scalar/DSP direct
path (calls of at most ``span`` elements) computes an exponential only where diff >= diff_min,
so there exp_elements is the golden run's count too, and ``skipped`` = R·S - exp_elements the
elements that still take their sum and output terms (of a 0); on MVE four lanes are computed
per vector regardless.

    instructions = Σ a_f · f          cycles = Σ b_f · f                (per core, fitted)
"""

from __future__ import annotations

from isa_models.cortex_m.formula import Features, Formula
from isa_models.shapes import Params, ceil_div, value

FAMILY = "softmax"

#: The params that carry the golden run's counts: computed exponentials, and those of a 0 input.
EXP_ELEMENTS, EXP_ZERO = "exp_elements", "exp_zero"


def _table_span(diff_min: int) -> int:
    """Exponentials a call can need: diffs 0 .. -(span - 1) pass diff_min (diffs are >= -255)."""
    return 1 - min(max(diff_min, -255), 1)


def exp_elements(p: Params) -> int:
    """The exponentials CMSIS-NN computes: the golden run's count, or every element (shape only)."""
    n = value(p, "num_rows") * value(p, "row_size")
    return min(value(p, EXP_ELEMENTS, n), n)


def exp_zero(p: Params) -> int:
    """Of those, the ones whose scaled input is 0: the golden run's count, or none (shape only)."""
    return min(value(p, EXP_ZERO, 0), exp_elements(p))


def _features(p: Params, tier: str) -> Features:
    rows, size = value(p, "num_rows"), value(p, "row_size")
    return {
        "call": 1.0,
        "rows": float(rows),
        "max_rows": float(rows if size > 1 else 0),
        "elements": float(rows * size),
        "exp_elements": float(exp_elements(p) - exp_zero(p)),
        "exp_zero": float(exp_zero(p)),
        "blocks": float(rows * ceil_div(size, 16) if tier == "mve" else 0),
    }


def _scaled_is_zero(diff: int, mult: int, shift: int) -> bool:
    """``MUL_SAT(diff · 2^shift, mult) == 0`` (CMSIS-NN's ``arm_nn_doubling_high_mult``, the
    product wrapping to int32 first as C's multiply does): an exponential of 0, which the compiled
    exponential returns early."""
    a = ((diff << shift) + (1 << 31)) % (1 << 32) - (1 << 31)
    x = a * mult + ((1 << 30) if (a < 0) == (mult < 0) else 1 - (1 << 30))
    return (abs(x) >> 31) == 0 and not (a == mult == -(1 << 31))


def _table_zero(span: int, p: Params) -> int:
    """Entries of kernels_c's table (diffs 0, -1, .. -(span - 1)) whose exponential has a 0 input:
    a property of ``mult``/``shift``, not of the data."""
    mult, shift = value(p, "mult", 1 << 30), value(p, "shift", 23)
    return sum(_scaled_is_zero(-d, mult, shift) for d in range(span))


def _features_kernels_c(p: Params, tier: str) -> Features:
    """kernels_c: per element an exponential, or (tabulated) the table's span of exponentials then
    a gather per element; on MVE four exponentials (or gathers) per loop trip, the row's last
    S mod 4 in one predicated block of the same work after the loop: exp_vectors /
    table_vectors = R·⌈S/4⌉ in place of the per-element counts."""
    rows, size = value(p, "num_rows"), value(p, "row_size")
    n = rows * size
    span = _table_span(value(p, "diff_min", -248))
    tabulated = n > span
    table = float(span if tabulated else 0)
    if tier == "mve":
        vectors = float(rows * ceil_div(size, 4))
        exp, gathered = (0.0, vectors) if tabulated else (vectors, 0.0)
        return {"call": 1.0, "rows": float(rows), "table": table, "blocks": float(rows * ceil_div(size, 16)),
                "exp_vectors": exp, "table_vectors": gathered, "table_calls": float(tabulated)}  # fmt: skip
    exp, gathered = (0.0, float(n)) if tabulated else (float(exp_elements(p)), 0.0)
    zero = float(_table_zero(span, p) if tabulated else exp_zero(p))
    return {"call": 1.0, "rows": float(rows), "exp_elements": exp - (0.0 if tabulated else zero),
            "table_elements": gathered, "table": table - (zero if tabulated else 0.0), "blocks": 0.0,
            "skipped": 0.0 if tabulated else n - exp, "table_calls": float(tabulated), "exp_zero": zero}  # fmt: skip


def _macs(p: Params) -> int:
    return value(p, "num_rows") * value(p, "row_size")


FORMULAS: dict[str, Formula] = {
    "arm_softmax_s8": Formula(
        "arm_softmax_s8", "arm_softmax_s8", _features, _macs, lambda p: (_macs(p), _macs(p)),
        "max, Σ exp(x - max), exp · reciprocal per element whose diff passes diff_min",
        library_features=(("kernels_c", _features_kernels_c),),
        data=(EXP_ELEMENTS, EXP_ZERO),
    )
}  # fmt: skip


def route(function: str, p: Params, tier: str) -> str:
    return function


__all__ = ["EXP_ELEMENTS", "EXP_ZERO", "FAMILY", "FORMULAS", "exp_elements", "exp_zero", "route"]

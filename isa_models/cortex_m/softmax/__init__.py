"""Cost formula for CMSIS-NN's s8 softmax (kernels_py/softmax.py).

CMSIS-NN (``arm_softmax_s8``; built with GCC 12.2 its MVE path is compiled out by
``ARM_GCC_12_2_ICE``, so every tier runs ``arm_nn_softmax_common_s8``): per row a max pass, a
sum pass and an output pass over the S elements; the sum and output passes compute
``EXP_ON_NEG`` only for the elements whose ``diff = x - max`` passes ``diff_min`` and store -128
for the others. So the work follows a count of the *values*, not the shape (R rows of S
elements, λ = 16 int8 lanes on MVE)::

    call         = 1
    rows         = R                  per-row max, reciprocal (one_over_one_plus_x), set-up
    elements     = R·S                the three passes' loop trips, the diff_min test, the -128 stores
    exp_elements = the elements with diff >= diff_min (the golden run's count,
                   kernels_py.softmax.softmax_s8_exp_elements, param ``exp_elements``); without it,
                   R·S: the shape-only bound (every exponential computed)
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

#: The param that carries the golden run's count of computed exponentials.
EXP_ELEMENTS = "exp_elements"


def _table_span(diff_min: int) -> int:
    """Exponentials a call can need: diffs 0 .. -(span - 1) pass diff_min (diffs are >= -255)."""
    return 1 - min(max(diff_min, -255), 1)


def exp_elements(p: Params) -> int:
    """The exponentials CMSIS-NN computes: the golden run's count, or every element (shape only)."""
    n = value(p, "num_rows") * value(p, "row_size")
    return min(value(p, EXP_ELEMENTS, n), n)


def _features(p: Params, tier: str) -> Features:
    rows, size = value(p, "num_rows"), value(p, "row_size")
    return {
        "call": 1.0,
        "rows": float(rows),
        "elements": float(rows * size),
        "exp_elements": float(exp_elements(p)),
        "blocks": float(rows * ceil_div(size, 16) if tier == "mve" else 0),
    }


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
    return {"call": 1.0, "rows": float(rows), "exp_elements": exp, "table_elements": gathered, "table": table,
            "blocks": 0.0, "skipped": 0.0 if tabulated else n - exp, "table_calls": float(tabulated)}  # fmt: skip


def _macs(p: Params) -> int:
    return value(p, "num_rows") * value(p, "row_size")


FORMULAS: dict[str, Formula] = {
    "arm_softmax_s8": Formula(
        "arm_softmax_s8", "arm_softmax_s8", _features, _macs, lambda p: (_macs(p), _macs(p)),
        "max, Σ exp(x - max), exp · reciprocal per element whose diff passes diff_min",
        library_features=(("kernels_c", _features_kernels_c),),
        data=(EXP_ELEMENTS,),
    )
}  # fmt: skip


def route(function: str, p: Params, tier: str) -> str:
    return function


__all__ = ["EXP_ELEMENTS", "FAMILY", "FORMULAS", "exp_elements", "route"]

"""Cost formula for CMSIS-NN's s8 softmax (kernels_py/softmax.py).

One path per tier (CMSIS-NN has no DSP softmax; MVE is used for the max and sum passes when
built with it). Features (R rows of S elements, λ = 16 int8 lanes on MVE)::

    call     = 1
    rows     = R                  per-row max, reciprocal (one_over_one_plus_x) and setup
    exp_elements   = R·S when each element's exponential is computed (exp_on_negative_values)
    table_elements = R·S when the call tabulates exp per possible diff first (kernels_c does when
                     R·S exceeds the span of diffs that pass diff_min), table = that span
    blocks   = R·⌈S/λ⌉ on MVE (the vectorised max pass), 0 otherwise
    kernels_c on MVE: exp_vectors / table_vectors = R·⌈S/4⌉ (four exponentials per vector) in
    place of exp_elements / table_elements (:func:`_features_kernels_c`)

    instructions = Σ a_f · f          cycles = Σ b_f · f                (per core, fitted)
"""

from __future__ import annotations

from isa_models.cortex_m.formula import Features, Formula
from isa_models.shapes import Params, ceil_div, value

FAMILY = "softmax"


def _table_span(diff_min: int) -> int:
    """Exponentials a call can need: diffs 0 .. -(span - 1) pass diff_min (diffs are >= -255)."""
    return 1 - min(max(diff_min, -255), 1)


def _features(p: Params, tier: str) -> Features:
    rows, size = value(p, "num_rows"), value(p, "row_size")
    n = rows * size
    span = _table_span(value(p, "diff_min", -248))
    tabulated = n > span
    blocks = rows * ceil_div(size, 16) if tier == "mve" else 0
    return {
        "call": 1.0,
        "rows": float(rows),
        "exp_elements": float(0 if tabulated else n),
        "table_elements": float(n if tabulated else 0),
        "table": float(span if tabulated else 0),
        "blocks": float(blocks),
    }


def _features_kernels_c(p: Params, tier: str) -> Features:
    """kernels_c: :func:`_features` off MVE; its MVE softmax computes (or, tabulated, gathers)
    four exponentials per loop trip, the row's last S mod 4 in one predicated block of the same
    work after the loop: exp_vectors / table_vectors = R·⌈S/4⌉ in place of the per-element
    counts."""
    f = dict(_features(p, tier))
    if tier != "mve":
        return f
    vectors = float(value(p, "num_rows") * ceil_div(value(p, "row_size"), 4))
    tabulated = f.pop("table_elements") > 0
    f.pop("exp_elements")
    f["exp_vectors"], f["table_vectors"] = (0.0, vectors) if tabulated else (vectors, 0.0)
    return f


def _macs(p: Params) -> int:
    return value(p, "num_rows") * value(p, "row_size")


FORMULAS: dict[str, Formula] = {
    "arm_softmax_s8": Formula(
        "arm_softmax_s8", "arm_softmax_s8", _features, _macs, lambda p: (_macs(p), _macs(p)),
        "max, Σ exp(x - max), exp · reciprocal per element",
        library_features=(("kernels_c", _features_kernels_c),),
    )
}  # fmt: skip


def route(function: str, p: Params, tier: str) -> str:
    return function


__all__ = ["FAMILY", "FORMULAS", "route"]

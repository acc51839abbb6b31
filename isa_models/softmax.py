"""Cost formula for CMSIS-NN's s8 softmax (kernels_py/softmax.py).

One path per tier (CMSIS-NN has no DSP softmax; MVE is used for the max and sum passes when
built with it). Features (R rows of S elements, λ = 16 int8 lanes on MVE)::

    call     = 1
    rows     = R                  per-row max, reciprocal (one_over_one_plus_x) and setup
    elements = R·S                per element: exp_on_negative_values twice (sum pass, output pass)
    blocks   = R·⌈S/λ⌉ on MVE (the vectorised max pass), 0 otherwise

    instructions = Σ a_f · f          cycles = Σ b_f · f                (per core, fitted)
"""

from __future__ import annotations

from isa_models.formula import Features, Formula
from isa_models.shapes import Params, ceil_div, value

FAMILY = "softmax"


def _features(p: Params, tier: str) -> Features:
    rows, size = value(p, "num_rows"), value(p, "row_size")
    blocks = rows * ceil_div(size, 16) if tier == "mve" else 0
    return {"call": 1.0, "rows": float(rows), "elements": float(rows * size), "blocks": float(blocks)}


def _macs(p: Params) -> int:
    return value(p, "num_rows") * value(p, "row_size")


FORMULAS: dict[str, Formula] = {
    "arm_softmax_s8": Formula(
        "arm_softmax_s8", "arm_softmax_s8", _features, _macs, lambda p: (_macs(p), _macs(p)),
        "max, Σ exp(x - max), exp · reciprocal per element",
    )
}  # fmt: skip


def route(function: str, p: Params, tier: str) -> str:
    return function


def sweep() -> list[tuple[str, dict[str, int]]]:
    shapes = ((1, 12), (1, 10), (4, 64), (1, 1000), (8, 256), (2, 33), (16, 16), (1, 2), (3, 100), (1, 512))
    return [("arm_softmax_s8", {"num_rows": r, "row_size": s}) for r, s in shapes]


__all__ = ["FAMILY", "FORMULAS", "route", "sweep"]

"""Cost formulas for s8 activations (kernels_py/activation.py): CMSIS-NN's arm_relu6_s8 and
refsim_lut_s8 (ExecuTorch's quantized_activation: a 256-entry table lookup per element).

Features (n elements, λ elements per pass: 4 on DSP (``__SSAT``/``__USAT`` on packed bytes),
16 on MVE)::

    call     = 1
    elements = n
    blocks   = ⌊n/λ⌋  (⌈n/λ⌉ on MVE)
    tail     = n mod λ  (0 on MVE)

    instructions = Σ a_f · f          cycles = Σ b_f · f                (per core, fitted)
"""

from __future__ import annotations

from isa_models.cortex_m.formula import Features, Formula
from isa_models.shapes import BLOCKING, Params, ceil_div, value

FAMILY = "activation"


def _n(p: Params) -> int:
    return value(p, "size")


def _features(p: Params, tier: str) -> Features:
    n = _n(p)
    lanes = BLOCKING[tier].element_lanes
    blocks, tail = (ceil_div(n, lanes), 0) if tier == "mve" else (n // lanes, n % lanes)
    return {"call": 1.0, "elements": float(n), "blocks": float(blocks), "tail": float(tail)}


FORMULAS: dict[str, Formula] = {
    name: Formula(name, name, _features, _n, lambda p: (_n(p), _n(p)), doc)
    for name, doc in (("arm_relu6_s8", "clamp to [0, 6·scale] in place"), ("refsim_lut_s8", "table lookup"))
}


def route(function: str, p: Params, tier: str) -> str:
    return function


__all__ = ["FAMILY", "FORMULAS", "route"]

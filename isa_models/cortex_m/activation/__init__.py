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
    """kernels_c's loops (MVE: tail-predicated, ⌈n/16⌉ passes)."""
    n = _n(p)
    lanes = BLOCKING[tier].element_lanes
    blocks, tail = (ceil_div(n, lanes), 0) if tier == "mve" else (n // lanes, n % lanes)
    return {"call": 1.0, "elements": float(n), "blocks": float(blocks), "tail": float(tail)}


def _cmsis_relu6_features(p: Params, tier: str) -> Features:
    """CMSIS-NN's arm_relu6_s8 is a plain C byte loop; on MVE GCC -Ofast vectorizes it into
    ⌊n/16⌋ 16-byte passes and a scalar epilogue of n mod 16 elements (no tail predication;
    measured: a 14-element call costs more than a 32-element one); the vector loop's set-up
    runs only for n >= 16 (``vector_loop``). Other tiers:
    :func:`_features`."""
    if tier != "mve":
        return _features(p, tier)
    n = _n(p)
    return {"call": 1.0, "elements": float(n), "blocks": float(n // 16), "tail": float(n % 16),
            "vector_loop": float(n >= 16)}  # fmt: skip


FORMULAS: dict[str, Formula] = {
    name: Formula(name, name, features, _n, lambda p: (_n(p), _n(p)), doc, library_features=(("kernels_c", _features),))
    for name, features, doc in (
        ("arm_relu6_s8", _cmsis_relu6_features, "clamp to [0, 6·scale] in place"),
        ("refsim_lut_s8", _features, "table lookup"),
    )
}  # fmt: skip


def route(function: str, p: Params, tier: str) -> str:
    return function


__all__ = ["FAMILY", "FORMULAS", "route"]

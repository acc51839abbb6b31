"""Cost formulas for CMSIS-NN's s8 elementwise add, mul, maximum and minimum (kernels_py/elementwise.py).

No routing. Features (n elements, λ elements per pass from :data:`isa_models.shapes.BLOCKING`:
4 on DSP (SIMD add/sub pairs), 16 on MVE)::

    call     = 1
    elements = n                      per-element requantization (add: three requantizes)
    blocks   = ⌊n/λ⌋  (⌈n/λ⌉ on MVE)     SIMD passes
    tail     = n mod λ  (0 on MVE)
    maximum/minimum walk the broadcast in runs (adjacent axes that broadcast alike merge):
    rows = number of runs, blocks/tail per run, broadcast = elements of runs that repeat one
    input's value

    instructions = Σ a_f · f          cycles = Σ b_f · f                (per core, fitted)
"""

from __future__ import annotations

from isa_models.cortex_m.formula import Features, Formula
from isa_models.shapes import BLOCKING, Params, ceil_div, dims, value

FAMILY = "elementwise"


def _lanes(tier: str, n: int) -> tuple[int, int]:
    lanes = BLOCKING[tier].element_lanes
    if tier == "mve":
        return ceil_div(n, lanes), 0
    return n // lanes, n % lanes


def _block_features(p: Params, tier: str) -> Features:
    n = value(p, "block_size")
    blocks, tail = _lanes(tier, n)
    return {"call": 1.0, "elements": float(n), "blocks": float(blocks), "tail": float(tail)}


def _runs(p: Params) -> tuple[int, int, bool]:
    """(innermost contiguous run, number of runs, whether the run broadcasts one input): the
    kernels merge adjacent axes that broadcast the same way (kernels_c/src/minmax_s8.c plan)."""
    a, b, o = (dims(p, name).shape for name in ("input_1_dims", "input_2_dims", "output_dims"))
    total = o[0] * o[1] * o[2] * o[3]
    run, kind = 1, None
    for k in (3, 2, 1, 0):
        if o[k] == 1:
            continue
        this = "same" if a[k] == b[k] else ("a1" if a[k] == 1 else "b1")
        if kind is not None and this != kind:
            break
        kind = this
        run *= o[k]
    return run, total // max(run, 1), kind not in (None, "same")


def _minmax_features(p: Params, tier: str) -> Features:
    run, rows, broadcast = _runs(p)
    blocks, tail = _lanes(tier, run)
    n = run * rows
    return {"call": 1.0, "elements": float(n), "rows": float(rows), "blocks": float(rows * blocks),
            "tail": float(rows * tail), "broadcast": float(n if broadcast else 0)}  # fmt: skip


def _block_macs(p: Params) -> int:
    return value(p, "block_size")


def _block_bytes(p: Params) -> tuple[int, int]:
    n = value(p, "block_size")
    return 2 * n, n


def _minmax_macs(p: Params) -> int:
    o = dims(p, "output_dims")
    return o.n * o.h * o.w * o.c


def _minmax_bytes(p: Params) -> tuple[int, int]:
    a, b = dims(p, "input_1_dims"), dims(p, "input_2_dims")
    n = _minmax_macs(p)
    return a.n * a.h * a.w * a.c + b.n * b.h * b.w * b.c, n


FORMULAS: dict[str, Formula] = {
    f.key: f
    for f in (
        Formula("arm_elementwise_add_s8", "arm_elementwise_add_s8", _block_features, _block_macs, _block_bytes,
                "(x + off) << left_shift, requantize each, add, requantize"),
        Formula("arm_elementwise_mul_s8", "arm_elementwise_mul_s8", _block_features, _block_macs, _block_bytes,
                "(x + off)·(y + off), requantize"),
        Formula("arm_maximum_s8", "arm_maximum_s8", _minmax_features, _minmax_macs, _minmax_bytes,
                "broadcast walk, max"),
        Formula("arm_minimum_s8", "arm_minimum_s8", _minmax_features, _minmax_macs, _minmax_bytes,
                "broadcast walk, min"),
    )
}  # fmt: skip


def route(function: str, p: Params, tier: str) -> str:
    return function


def minmax_params(a, b) -> dict[str, int]:
    out = tuple(max(x, y) for x, y in zip(a, b, strict=True))
    p: dict[str, int] = {}
    for name, dd in (("input_1_dims", a), ("input_2_dims", b), ("output_dims", out)):
        for key, v in zip("nhwc", dd, strict=True):
            p[f"{name}.{key}"] = v
    return p


__all__ = ["FAMILY", "FORMULAS", "minmax_params", "route"]

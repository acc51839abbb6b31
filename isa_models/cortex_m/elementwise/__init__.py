"""Cost formulas for CMSIS-NN's s8 elementwise add, mul, maximum and minimum (kernels_py/elementwise.py).

No routing. Features (n elements, λ elements per pass from :data:`isa_models.shapes.BLOCKING`:
4 on DSP (SIMD add/sub pairs), 16 on MVE in kernels_c; CMSIS-NN's MVE add/mul take 4 int32
lanes per pass, ⌈n/4⌉)::

    call     = 1
    elements = n                      per-element requantization (add: three requantizes)
    blocks   = ⌊n/λ⌋  (⌈n/λ⌉ on MVE)     SIMD passes
    tail     = n mod λ  (0 on MVE)
    maximum/minimum: CMSIS-NN's broadcast walk (:func:`_cmsis_minmax_features`): calls of its
    two inner loops (both inputs walk / one input is one value) by the level that makes them;
    kernels_c walks in runs (adjacent axes that broadcast alike merge): rows = number of runs,
    blocks/tail per run, broadcast = elements of runs that repeat one input's value

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
    """kernels_c's add/mul: λ elements per pass (16 on MVE, predicated)."""
    n = value(p, "block_size")
    blocks, tail = _lanes(tier, n)
    return {"call": 1.0, "elements": float(n), "blocks": float(blocks), "tail": float(tail)}


def _cmsis_block_features(p: Params, tier: str) -> Features:
    """CMSIS-NN's arm_elementwise_add_s8 / _mul_s8: on MVE one tail-predicated pass per 4
    elements (``vctp32q``, int32 lanes: blocks = ⌈n/4⌉), otherwise :func:`_block_features`
    (DSP: 4 per pass and a per-element tail loop; scalar: per element)."""
    if tier != "mve":
        return _block_features(p, tier)
    n = value(p, "block_size")
    return {"call": 1.0, "elements": float(n), "blocks": float(ceil_div(n, 4)), "tail": 0.0}


def _cmsis_mul_features(p: Params, tier: str) -> Features:
    """:func:`_cmsis_block_features`, and off MVE the loop version GCC -Ofast unswitches on the
    output shift: with ``out_shift > 0`` ``arm_nn_requantize`` shifts left and its rounding
    right shift is by 0, a shorter loop body (measured on the M3: 23% fewer instructions a
    call); ``right_blocks`` / ``right_tail`` count the passes of the longer right-shift version
    (``out_shift <= 0``: a shift-free call runs it too), whose extra rounding work a
    non-negative coefficient carries."""
    f = dict(_cmsis_block_features(p, tier))
    if tier != "mve":
        right = value(p, "out_shift", 0) <= 0
        f["right_blocks"] = f["blocks"] if right else 0.0
        f["right_tail"] = f["tail"] if right else 0.0
    return f


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
    """kernels_c's minimum/maximum (kernels_c/src/minmax_s8.c): the output in merged runs."""
    run, rows, broadcast = _runs(p)
    blocks, tail = _lanes(tier, run)
    n = run * rows
    return {"call": 1.0, "elements": float(n), "rows": float(rows), "blocks": float(rows * blocks),
            "tail": float(rows * tail), "broadcast": float(n if broadcast else 0)}  # fmt: skip


def _cmsis_minmax_features(p: Params, tier: str) -> Features:
    """CMSIS-NN's arm_maximum_s8 / arm_minimum_s8 (BasicMathFunctions/arm_maximum_s8.c): equal
    dims → one ``no_broadcast`` loop over everything; one input a single value → one ``scalar``
    loop; else per output batch (``batches``) the same test on the (H, W, C) blocks, then per
    output row (``rows``) on the (W, C) rows, then per output pixel (``cols``) on the C
    channels: each level either makes one inner call or descends. Every call site is its own
    inlined copy of the loop, so a call's set-up is counted per level and kind
    (``{top,batch,row,col}_{same,scalar}``); the n elements of a call are a byte loop of n trips
    (``same_elements`` / ``scalar_elements``; MVE: ⌈n/16⌉ predicated vector trips,
    ``same_vectors`` / ``scalar_vectors``, the top-level copies' trips apart, ``top_same_vectors``
    / ``top_scalar_vectors``: about 15 instructions a vector there against the walk's 12,
    measured). Pixels whose channels are neither equal nor 1 make no call (the walk skips
    them)."""
    a, b, o = (dims(p, name) for name in ("input_1_dims", "input_2_dims", "output_dims"))
    mve = tier == "mve"
    per = "vectors" if mve else "elements"
    calls = tuple(
        f"{level}_{kind}" for level in ("top", "batch", "row", "col") for kind in ("same", "scalar")
    )
    top = (f"top_same_{per}", f"top_scalar_{per}") if mve else ()
    f = dict.fromkeys(("call", "batches", "rows", "cols", *calls, f"same_{per}", f"scalar_{per}", *top), 0.0)
    f["call"] = 1.0

    def inner(level: str, kind: str, n: int, times: int) -> None:
        f[f"{level}_{kind}"] += times
        trips = f"top_{kind}_{per}" if mve and level == "top" else f"{kind}_{per}"
        f[trips] += times * (ceil_div(n, 16) if mve else n)

    size_1, size_2 = a.n * a.h * a.w * a.c, b.n * b.h * b.w * b.c
    if a.shape == b.shape:
        inner("top", "same", size_1, 1)
    elif size_1 == 1 or size_2 == 1:
        inner("top", "scalar", max(size_1, size_2), 1)
    else:
        f["batches"] = float(o.n)
        block_1, block_2 = a.h * a.w * a.c, b.h * b.w * b.c
        if (a.h, a.w, a.c) == (b.h, b.w, b.c):
            inner("batch", "same", block_1, o.n)
        elif block_1 == 1 or block_2 == 1:
            inner("batch", "scalar", max(block_1, block_2), o.n)
        else:
            rows = o.n * o.h
            f["rows"] = float(rows)
            row_1, row_2 = a.w * a.c, b.w * b.c
            if (a.w, a.c) == (b.w, b.c):
                inner("row", "same", row_1, rows)
            elif row_1 == 1 or row_2 == 1:
                inner("row", "scalar", max(row_1, row_2), rows)
            else:
                cols = rows * o.w
                f["cols"] = float(cols)
                if a.c == b.c:
                    inner("col", "same", a.c, cols)
                elif a.c == 1 or b.c == 1:
                    inner("col", "scalar", max(a.c, b.c), cols)
    return f


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
        Formula("arm_elementwise_add_s8", "arm_elementwise_add_s8", _cmsis_block_features, _block_macs, _block_bytes,
                "(x + off) << left_shift, requantize each, add, requantize",
                library_features=(("kernels_c", _block_features),)),
        Formula("arm_elementwise_mul_s8", "arm_elementwise_mul_s8", _cmsis_mul_features, _block_macs, _block_bytes,
                "(x + off)·(y + off), requantize", library_features=(("kernels_c", _block_features),)),
        Formula("arm_maximum_s8", "arm_maximum_s8", _cmsis_minmax_features, _minmax_macs, _minmax_bytes,
                "broadcast walk, max", library_features=(("kernels_c", _minmax_features),)),
        Formula("arm_minimum_s8", "arm_minimum_s8", _cmsis_minmax_features, _minmax_macs, _minmax_bytes,
                "broadcast walk, min", library_features=(("kernels_c", _minmax_features),)),
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

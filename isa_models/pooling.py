"""Cost formulas for CMSIS-NN's s8 average and max pooling (kernels_py/pooling.py).

No routing: ``arm_avgpool_s8`` and ``arm_max_pool_s8`` each have one path per tier. Features
(P = N·OH·OW output pixels, C channels, T = Σ over pixels of the window taps inside the input,
λ channels per pass from :data:`isa_models.shapes.BLOCKING`)::

    call    = 1
    pixels  = P                       window clipping per output pixel
    outputs = P·C                     per-output division (average), clamp and store
    taps    = T                       per valid (pixel, tap) loop overhead
    blocks  = T·⌊C/λ⌋  (⌈C/λ⌉ on MVE)    channel-parallel accumulate / compare passes
    c_tail  = T·(C mod λ)  (0 on MVE)

    instructions = Σ a_f · f          cycles = Σ b_f · f                (per core, fitted)
"""

from __future__ import annotations

from isa_models.formula import Features, Formula
from isa_models.shapes import BLOCKING, Params, ceil_div, dims, tile, valid_taps, value

FAMILY = "pooling"


def _features(p: Params, tier: str) -> Features:
    i, o = dims(p, "input_dims"), dims(p, "output_dims")
    s, pad = tile(p, "stride", 1), tile(p, "padding")
    kh, kw = value(p, "filter_dims.h"), value(p, "filter_dims.w")
    pixels = o.n * o.h * o.w
    taps = o.n * valid_taps(i.h, o.h, kh, s.h, pad.h) * valid_taps(i.w, o.w, kw, s.w, pad.w)
    lanes = BLOCKING[tier].channel_lanes
    if tier == "mve":
        blocks, tail = taps * ceil_div(o.c, lanes), 0
    else:
        blocks, tail = taps * (o.c // lanes), taps * (o.c % lanes)
    return {
        "call": 1.0,
        "pixels": float(pixels),
        "outputs": float(pixels * o.c),
        "taps": float(taps),
        "blocks": float(blocks),
        "c_tail": float(tail),
    }


def macs(p: Params) -> int:
    o = dims(p, "output_dims")
    return o.n * o.h * o.w * o.c * value(p, "filter_dims.h") * value(p, "filter_dims.w")


def nbytes(p: Params) -> tuple[int, int]:
    i, o = dims(p, "input_dims"), dims(p, "output_dims")
    return i.n * i.h * i.w * i.c, o.n * o.h * o.w * o.c


FORMULAS: dict[str, Formula] = {
    name: Formula(name, name, _features, macs, nbytes, doc)
    for name, doc in (
        ("arm_avgpool_s8", "sum of the valid window, rounded division by its size"),
        ("arm_max_pool_s8", "running maximum over the valid window"),
    )
}


def route(function: str, p: Params, tier: str) -> str:
    return function


def pool_params(x, k, stride, padding=(0, 0)) -> dict[str, int]:
    n, h, w, c = x
    oh = (h + 2 * padding[0] - k[0]) // stride[0] + 1
    ow = (w + 2 * padding[1] - k[1]) // stride[1] + 1
    p = {"filter_dims.h": k[0], "filter_dims.w": k[1], "stride.h": stride[0], "stride.w": stride[1]}
    p.update({"padding.h": padding[0], "padding.w": padding[1]})
    for name, dd in (("input_dims", (n, h, w, c)), ("output_dims", (n, oh, ow, c))):
        for key, v in zip("nhwc", dd, strict=True):
            p[f"{name}.{key}"] = v
    return p


_SHAPES = (
    ((1, 25, 5, 64), (25, 5), (1, 1)),
    ((1, 16, 16, 16), (2, 2), (2, 2)),
    ((1, 8, 8, 64), (8, 8), (1, 1)),
    ((1, 12, 12, 13), (3, 3), (2, 2), (1, 1)),
    ((1, 10, 10, 32), (3, 3), (1, 1), (1, 1)),
    ((1, 6, 6, 128), (2, 2), (2, 2)),
    ((1, 9, 9, 7), (3, 3), (3, 3)),
    ((1, 16, 8, 24), (2, 2), (2, 2)),
    ((1, 3, 3, 256), (3, 3), (1, 1)),
    ((1, 14, 14, 20), (5, 5), (2, 2), (2, 2)),
)


def sweep() -> list[tuple[str, dict[str, int]]]:
    return [(fn, pool_params(*s)) for fn in FORMULAS for s in _SHAPES]


__all__ = ["FAMILY", "FORMULAS", "pool_params", "route", "sweep"]

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

These are kernels_c's features, and CMSIS-NN's for avgpool off MVE; CMSIS-NN's MVE avgpool
and its max pool (every tier) loop differently: see :func:`_avgpool_features` and
:func:`_max_pool_features`.

    instructions = Σ a_f · f          cycles = Σ b_f · f                (per core, fitted)
"""

from __future__ import annotations

from isa_models.cortex_m.formula import Features, Formula
from isa_models.shapes import BLOCKING, ByteOps, Params, ceil_div, dims, tile, valid_taps, value

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


def _window(p: Params) -> tuple[int, int, int, int]:
    """(P, C, Σ valid window rows over pixels, T valid taps)."""
    i, o = dims(p, "input_dims"), dims(p, "output_dims")
    s, pad = tile(p, "stride", 1), tile(p, "padding")
    kh, kw = value(p, "filter_dims.h"), value(p, "filter_dims.w")
    rows_h = valid_taps(i.h, o.h, kh, s.h, pad.h)
    return o.n * o.h * o.w, o.c, o.n * rows_h * o.w, o.n * rows_h * valid_taps(i.w, o.w, kw, s.w, pad.w)


def _avgpool_features(p: Params, tier: str) -> Features:
    """CMSIS-NN's MVE arm_avgpool_s8: per pixel and 16-channel chunk (tail-predicated) a sum
    over the valid window (chunk_rows = Σ valid rows · ⌈C/16⌉, chunk_taps = T·⌈C/16⌉: one
    load, four widenings and adds) and 16 lane divisions (chunks = P·⌈C/16⌉). Other tiers:
    :func:`_features` on DSP, with its valid window rows (``rows``); scalar (no DSP: CMSIS-NN's reference loop) visits every window
    row per output (pixel, channel) (window_rows = P·C·KH) and, in rows inside the input (GCC
    unswitches the row test out of the tap loop: valid_rows = Σ valid rows · C set up the tap
    loop), every tap with its column test (window_taps = Σ valid rows · KW · C), summing the
    valid ones (valid_taps = T·C). Every tier loops over the input batches
    (``batches`` = N)."""
    batches = float(dims(p, "output_dims").n)
    if tier == "scalar":
        # arm_avgpool_s8's reference loop: per output (pixel, channel) every tap of the whole
        # window is visited and bounds-checked; only the valid ones are summed
        pixels, c, rows, taps = _window(p)
        kh, kw = value(p, "filter_dims.h"), value(p, "filter_dims.w")
        outputs = pixels * c
        return {"call": 1.0, "batches": batches, "pixels": float(pixels), "outputs": float(outputs),
                "window_rows": float(outputs * kh), "valid_rows": float(rows * c), "window_taps": float(rows * c * kw),
                "valid_taps": float(taps * c)}  # fmt: skip
    if tier != "mve":  # DSP: the window loops run over the valid rows (rows = Σ valid rows)
        return {**_features(p, tier), "batches": batches, "rows": float(_window(p)[2])}
    pixels, c, rows, taps = _window(p)
    chunks = ceil_div(c, 16)
    return {"call": 1.0, "pixels": float(pixels), "chunks": float(pixels * chunks),
            "chunk_rows": float(rows * chunks), "chunk_taps": float(taps * chunks), "batches": batches}  # fmt: skip


def _max_pool_features(p: Params, tier: str, arch: str | None = None) -> Features:
    """CMSIS-NN's arm_max_pool_s8: per pixel the first valid tap copied (``arm_memcpy_s8`` of
    C bytes, :class:`isa_models.shapes.ByteOps` for the core's architecture), every other valid tap a
    ``compare_and_replace_if_larger`` call (compares = T − P; MVE: ⌈C/16⌉ predicated vector
    passes, else ⌊C/4⌋ word passes of four byte compares + C mod 4 bytes), then per batch
    (``batches`` = N) one clamp over its P/N·C outputs (MVE: ⌈P·C/16N⌉ passes, else ⌊P·C/4N⌋
    words + tail)."""
    pixels, c, rows, taps = _window(p)
    mve = tier == "mve"
    ops = ByteOps(tier, skip_empty=False, arch=arch)
    for r in range(4):  # output pixel r's copy lands at r·C (mod 4); its source alike
        times = len(range(r, pixels, 4))
        if times:
            ops.copy(c, r * c, r * c, times)
    compares = taps - pixels
    n = dims(p, "output_dims").n
    per_batch = pixels // n * c  # clamp_output runs once per batch over its outputs
    return {"call": 1.0, "pixels": float(pixels), "rows": float(rows), "compares": float(compares),
            "compare_blocks": float(compares * (ceil_div(c, 16) if mve else c // 4)),
            "compare_tail": float(0 if mve else compares * (c % 4)),
            "clamp_blocks": float(n * (ceil_div(per_batch, 16) if mve else per_batch // 4)),
            "clamp_tail": float(0 if mve else n * (per_batch % 4)), "batches": float(n),
            **{k: v for k, v in ops.f.items() if k.startswith("copy")}}  # fmt: skip


def _kernels_c_features(p: Params, tier: str, lanes: int) -> Features:
    """kernels_c: :func:`_features` off MVE; on MVE per pixel ⌊C/λ⌋ full passes and one
    predicated tail pass (λ = 8 int16 lanes for the average, 16 for the maximum), each over the
    valid rows and taps: passes, pass_rows, pass_taps (full), tail_taps; the tail pass is its
    own block (tail_passes = P when C mod λ > 0), the full passes' loop set-up runs per pixel
    only when C >= λ (full_pixels: a C < λ layer goes straight to the tail), and each output
    row (out_rows = N·OH) sets up its window rows and pointers once (read from the harness disassembly)."""
    if tier != "mve":
        return _features(p, tier)
    pixels, c, rows, taps = _window(p)
    full, tail = c // lanes, int(c % lanes != 0)
    o = dims(p, "output_dims")
    return {"call": 1.0, "out_rows": float(o.n * o.h), "pixels": float(pixels), "full_pixels": float(pixels if full else 0),
            "passes": float(pixels * (full + tail)), "tail_passes": float(pixels * tail), "pass_rows": float(rows * (full + tail)),
            "pass_taps": float(taps * full), "tail_taps": float(taps * tail)}  # fmt: skip


def macs(p: Params) -> int:
    o = dims(p, "output_dims")
    return o.n * o.h * o.w * o.c * value(p, "filter_dims.h") * value(p, "filter_dims.w")


def nbytes(p: Params) -> tuple[int, int]:
    i, o = dims(p, "input_dims"), dims(p, "output_dims")
    return i.n * i.h * i.w * i.c, o.n * o.h * o.w * o.c


FORMULAS: dict[str, Formula] = {
    name: Formula(name, name, features, macs, nbytes, doc,
                  library_features=(("kernels_c", lambda p, tier, lanes=lanes, arch=None: _kernels_c_features(p, tier, lanes)),),
                  by_arch=by_arch)
    for name, features, lanes, by_arch, doc in (
        ("arm_avgpool_s8", _avgpool_features, 8, False, "sum of the valid window, rounded division by its size"),
        ("arm_max_pool_s8", _max_pool_features, 16, True, "first tap copied, running maximum, clamp"),
    )
}  # fmt: skip


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


__all__ = ["FAMILY", "FORMULAS", "pool_params", "route"]

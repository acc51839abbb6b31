"""Cost formulas for CMSIS-NN's s8 depthwise convolutions (kernels_py/depthwise.py).

Routing is kernels_py's ``select_depthwise_kernel`` (per tier): arm_depthwise_conv_3x3_s8 and
arm_depthwise_conv_s8_opt for the ``ch_mult == 1`` group, arm_depthwise_conv_s8 for the rest,
and on MVE a one-channel input with many outputs goes to arm_convolve_wrapper_s8 (costed by
:mod:`isa_models.cortex_m.conv` as ``arm_depthwise_conv_wrapper_s8/to_conv``).

Features (P = N·OH·OW output pixels, C = output channels, T = Σ over pixels of the filter taps
inside the input — the kernels skip padding — and λ channels per pass from
:data:`isa_models.shapes.BLOCKING`)::

    call     = 1
    pixels   = P                      per-pixel window clipping and pointer setup
    outputs  = P·C                    per-output requantization and store
    taps     = T                      per valid (pixel, tap): row/column loop overhead
    blocks   = T·⌊C/λ⌋  (MVE: T·⌊C/8⌋, 8 int16 lanes)   channel-parallel MAC passes (ch_mult 1)
    c_tail   = T·(C mod λ) (MVE: T·⌈(C mod 8)/4⌉ int32 passes)   leftover channels (ch_mult 1)
    ch_mult > 1 runs other loops (each input channel's outputs as one run), so its passes are
    features of their own: runs = T·C_IN, blocks_mult = T·C_IN·⌊m/λ⌋ (MVE: T·⌈C/λ⌉),
    tail_mult = T·C_IN·(m mod λ)
    macs_valid = T·C                     one MAC per output and valid tap (a plain loop)
    MVE also: im2col_bytes = T·C_IN, im2col_pad = (P·KH·KW − T)·C_IN, nominal_blocks =
    ⌈P/4⌉·⌈C/4⌉·KH·KW (CMSIS-NN's _opt runs every tap of 4 pixels' im2col columns)

    instructions = Σ a_f · f          cycles = Σ b_f · f                (per core, fitted)
"""

from __future__ import annotations

from isa_models.cortex_m import conv as conv_formulas
from isa_models.cortex_m.formula import Features, Formula, imported_at_call
from isa_models.shapes import BLOCKING, ByteOps, Params, ceil_div, dims, tile, valid_taps, value
from kernels_py import depthwise
from kernels_py.types import DwConvParams

FAMILY = "depthwise"
PUBLIC_WRAPPER = "arm_depthwise_conv_wrapper_s8"
TO_CONV = "arm_depthwise_conv_wrapper_s8/to_conv"


def _dw_params(p: Params) -> DwConvParams:
    return DwConvParams(
        ch_mult=value(p, "ch_mult", 1),
        stride=tile(p, "stride", 1),
        padding=tile(p, "padding"),
        dilation=tile(p, "dilation", 1),
    )


def route(function: str, p: Params, tier: str) -> str:
    if function != PUBLIC_WRAPPER:
        return function
    chosen = depthwise.select_depthwise_kernel(
        _dw_params(p), dims(p, "input_dims"), dims(p, "filter_dims"), dims(p, "output_dims"), tier
    )
    return TO_CONV if chosen == "arm_convolve_wrapper_s8" else chosen


def macs(p: Params) -> int:
    o, f = dims(p, "output_dims"), dims(p, "filter_dims")
    return o.n * o.h * o.w * o.c * f.h * f.w


def nbytes(p: Params) -> tuple[int, int]:
    i, f, o = dims(p, "input_dims"), dims(p, "filter_dims"), dims(p, "output_dims")
    return i.n * i.h * i.w * i.c + f.h * f.w * f.c + 12 * f.c, o.n * o.h * o.w * o.c


def _features(p: Params, tier: str) -> Features:
    i, f, o = dims(p, "input_dims"), dims(p, "filter_dims"), dims(p, "output_dims")
    s, pad, d = tile(p, "stride", 1), tile(p, "padding"), tile(p, "dilation", 1)
    mult = value(p, "ch_mult", 1)
    pixels = o.n * o.h * o.w
    taps = o.n * valid_taps(i.h, o.h, f.h, s.h, pad.h, d.h) * valid_taps(i.w, o.w, f.w, s.w, pad.w, d.w)
    lanes = BLOCKING[tier].channel_lanes
    features = {
        "call": 1.0,
        "pixels": float(pixels),
        "outputs": float(pixels * o.c),
        "taps": float(taps),
        "blocks": 0.0,
        "c_tail": 0.0,
        "runs": 0.0,
        "blocks_mult": 0.0,
        "tail_mult": 0.0,
        "macs_valid": float(taps * o.c),
    }
    if tier == "mve":  # CMSIS-NN's MVE _opt: im2col of 4 pixels' windows (padding zero-filled), then
        # 4-channel passes over every tap of the window, padded or not
        window = f.h * f.w
        features["im2col_bytes"] = float(taps * i.c)
        features["im2col_pad"] = float((pixels * window - taps) * i.c)
        features["nominal_blocks"] = float(ceil_div(pixels, 4) * ceil_div(o.c, lanes) * window)
    if tier == "mve" and mult == 1:  # 8 channels per pass in int16 lanes, then 4-lane int32 passes
        features["blocks"] = float(taps * (o.c // 8))
        features["c_tail"] = float(taps * ceil_div(o.c % 8, lanes))
    elif tier == "mve":
        features["blocks_mult"] = float(taps * ceil_div(o.c, lanes))
    elif mult == 1:
        features["blocks"], features["c_tail"] = float(taps * (o.c // lanes)), float(taps * (o.c % lanes))
    else:  # per input channel, its ch_mult outputs: blocks of λ within the run, then a tail
        features["runs"] = float(taps * i.c)
        features["blocks_mult"] = float(taps * i.c * (mult // lanes))
        features["tail_mult"] = float(taps * i.c * (mult % lanes))
    return features


def _v6m_divisions(size: int, out: int, stride: int, pad: int, dilation: int) -> dict[str, int]:
    """The ARMv6-M cost classes of depthwise_conv_s8_generic's two window-bound divisions per
    output position along one dilated axis: ``(d - 1 - base) / d`` and ``(size - base + d - 1) / d``
    (base = o·stride − pad). ARMv6-M has no divide instruction: each is libgcc's ``__divsi3``
    (thumb/v6-m), which branches on the operands: a positive dividend under twice the divisor
    returns after one step (div_short); a positive quotient under 16 runs 4 shift-subtract steps
    (div_steps4); a negative dividend takes the sign-fixing path, then 4 steps while |q| < 16
    (div_negative); any quotient from 16 runs 8 or more steps (div_long). Counted per output
    position (the caller multiplies by the outputs sharing it)."""
    counts = dict.fromkeys(("div_short", "div_steps4", "div_negative", "div_long"), 0)
    for o in range(out):
        base = o * stride - pad
        for n in (dilation - 1 - base, size - base + dilation - 1):
            if n < 0:
                counts["div_negative" if (-n) >> 4 < dilation else "div_long"] += 1
            elif n >> 1 < dilation:
                counts["div_short"] += 1
            else:
                counts["div_steps4" if n >> 4 < dilation else "div_long"] += 1
    return counts


def _generic_features(p: Params, tier: str, arch: str | None = None) -> Features:
    """CMSIS-NN's arm_depthwise_conv_s8 (any tier: the same C loops). Two routes:

    ``ch_mult % 4 == 0``, one image, no dilation: ``depthwise_conv_s8_mult_4``, per pixel
    (tile_pixels) and input channel (tile_channels) a loop step, per 4-output tile a bias
    load and 4 requantizations (tiles = P·C/4), per valid filter row a row set-up
    (tile_rows = Σ valid rows · C/4), per valid tap 4 MACs (tile_taps = T·C/4).
    Otherwise ``depthwise_conv_s8_generic``: per output (P·C) the window bounds (two integer
    divisions per dilated axis: div_w, div_h = outputs), per valid row a loop start
    (out_rows = Σ valid rows · C; dilated_rows the same when dilated, whose row set-up
    multiplies by the dilation), per valid tap one MAC (macs_valid = T·C), then one
    requantization (outputs)."""
    i, f, o = dims(p, "input_dims"), dims(p, "filter_dims"), dims(p, "output_dims")
    s, pad, d = tile(p, "stride", 1), tile(p, "padding"), tile(p, "dilation", 1)
    mult = value(p, "ch_mult", 1)
    pixels = o.n * o.h * o.w
    rows_h = valid_taps(i.h, o.h, f.h, s.h, pad.h, d.h)
    cols_w = valid_taps(i.w, o.w, f.w, s.w, pad.w, d.w)
    rows = o.n * rows_h * o.w  # Σ over pixels of the valid filter rows
    taps = o.n * rows_h * cols_w
    if mult % 4 == 0 and o.n == 1 and d.h == 1 and d.w == 1:
        q = o.c // 4
        return {"call": 1.0, "tile_pixels": float(pixels), "tile_channels": float(pixels * i.c),
                "tiles": float(pixels * q), "tile_rows": float(rows * q), "tile_taps": float(taps * q)}  # fmt: skip
    out = {
        "call": 1.0,
        "pixels": float(pixels),
        "in_channels": float(pixels * i.c),
        "outputs": float(pixels * o.c),
    }
    features = {**out, "out_rows": float(rows * o.c), "macs_valid": float(taps * o.c),
                "div_w": float(pixels * o.c if d.w > 1 else 0), "div_h": float(pixels * o.c if d.h > 1 else 0),
                "dilated_rows": float(rows * o.c if d.w > 1 or d.h > 1 else 0)}  # fmt: skip
    if arch == "armv6-m":  # libgcc's software division: div_w / div_h price the two divisions'
        # shortest path, these the longer paths' extra (never cheaper than the short one)
        classes = dict.fromkeys(("div_steps4", "div_negative", "div_long"), 0.0)
        for dil, size, n_out, st, pd, others in (
            (d.w, i.w, o.w, s.w, pad.w, o.n * o.h),
            (d.h, i.h, o.h, s.h, pad.h, o.n * o.w),
        ):
            if dil > 1:
                for k, v in _v6m_divisions(size, n_out, st, pd, dil).items():
                    if k in classes:
                        classes[k] += v * others * o.c
        features.update(classes)
    return features


def _opt_features(p: Params, tier: str) -> Features:
    """CMSIS-NN's arm_depthwise_conv_s8_opt. Scalar builds run the generic kernel
    (:func:`_generic_features`). DSP, per output pixel: the window's column buffer in int16 —
    padded top/bottom filter rows zeroed by one ``memset`` each (pad_row_fills, their bytes
    through :class:`isa_models.shapes.ByteOps`), per valid row and tap either a ``memset`` of
    2·C bytes (tap left/right of the input) or ``arm_q7_to_q15_with_offset`` of C (T calls,
    T·⌊C/4⌋ blocks, T·(C mod 4) tail); then per 4 channels a pass over every tap of the window,
    two taps per SMLAD step (quad_pairs = P·⌊C/4⌋·⌊KH·KW/2⌋, quad_odd = P·⌊C/4⌋·(KH·KW mod 2)),
    the last C mod 4 channels tap by tap (tail_taps = P·(C mod 4)·KH·KW), and one requantization
    per output. MVE, per 124-channel block: per pixel and tap one ``arm_memcpy_s8`` /
    ``arm_memset_s8`` of the block's channels into a 4-column buffer (ByteOps), per 4 pixels
    ``arm_nn_depthwise_conv_nt_t_s8`` (nt_calls; nominal_blocks = ⌈C/4⌉·KH·KW per 4 pixels,
    requant vectors ⌈C/4⌉), the last P mod 4 pixels one by one (odd_blocks, odd_vectors);
    pixels and tap_rows (P·KH) count the im2col loop steps per channel block."""
    if tier == "scalar":
        return _generic_features(p, tier)
    i, f, o = dims(p, "input_dims"), dims(p, "filter_dims"), dims(p, "output_dims")
    s, pad = tile(p, "stride", 1), tile(p, "padding")
    c, window = o.c, f.h * f.w
    pixels = o.n * o.h * o.w
    rows_h = valid_taps(i.h, o.h, f.h, s.h, pad.h)
    cols_w = valid_taps(i.w, o.w, f.w, s.w, pad.w)
    ops = ByteOps(tier, skip_empty=False)
    if tier == "mve":
        valid = o.n * rows_h * cols_w
        for start in range(0, c, 124):
            active = min(124, c - start)
            ops.copy(active, 0, 0, valid)
            ops.fill(active, 0, pixels * window - valid)
        full, odd = divmod(pixels, 4)
        vectors = sum(ceil_div(min(124, c - b), 4) for b in range(0, c, 124))
        blocks = ceil_div(c, 124)
        return {"call": 1.0, "pixels": float(pixels * blocks), "nt_calls": float(full * blocks),
                "tap_rows": float(pixels * blocks * f.h), "nominal_blocks": float(full * vectors * window),
                "out_vectors": float(full * vectors), "odd_blocks": float(odd * vectors * window),
                "odd_vectors": float(odd * vectors), **ops.f}  # fmt: skip
    taps = o.n * rows_h * cols_w
    x_pads = o.n * rows_h * o.w * f.w - taps  # valid rows, taps left/right of the input
    ops.fill(2 * c, 0, x_pads)
    top = bottom = 0
    for oy in range(o.h):
        base = oy * s.h - pad.h
        start, end = max(0, -base), min(f.h, i.h - base)
        if start:
            top += 1
            ops.fill(2 * f.w * c * start, 0, o.n * o.w)
        if f.h - end:
            bottom += 1
            ops.fill(2 * f.w * c * (f.h - end), 0, o.n * o.w)
    quads, rest = divmod(c, 4)
    return {"call": 1.0, "pixels": float(pixels), "outputs": float(pixels * c),
            "pad_row_fills": float(o.n * o.w * (top + bottom)), "widen_calls": float(taps),
            "widen_blocks": float(taps * quads), "widen_tail": float(taps * rest),
            "quad_pairs": float(pixels * quads * (window // 2)), "quad_odd": float(pixels * quads * (window % 2)),
            "tail_taps": float(pixels * rest * window), **ops.f}  # fmt: skip


def _as_conv(p: Params) -> dict[str, int]:
    """The arm_convolve_wrapper_s8 call a one-channel depthwise becomes (filter [C_OUT, KH, KW, 1])."""
    f = dims(p, "filter_dims")
    q = dict(p)
    q.update({"filter_dims.n": f.c, "filter_dims.c": 1})
    return q


def _to_conv_features(p: Params, tier: str, library: str | None = None) -> Features:
    """The features of the convolution the call becomes, as ``library`` runs it. CMSIS-NN's
    wrapper first transposes the filter [1, KH, KW, C] to [C, KH, KW, 1] with arm_transpose_s8
    (permutation 3, 1, 2, 0: its 4-D element nest, a row of C elements per tap gathered
    with stride KH·KW): ``filter_rows`` = KH·KW, ``filter_elements`` = KH·KW·C (TFLM's -O2
    file keeps the features it was fitted with)."""
    q = _as_conv(p)
    key = conv_formulas.conv_route(q)
    features = dict(conv_formulas.FORMULAS[key].features_for(library)(q, tier))
    if library is None:
        f = dims(p, "filter_dims")
        features.update({"filter_rows": float(f.h * f.w), "filter_elements": float(f.h * f.w * f.c)})
    return features


def _three_features(p: Params, tier: str) -> Features:
    """CMSIS-NN's arm_depthwise_conv_3x3_s8 (scalar and DSP: the same loop nest). It has no
    batch loop. Per output row and pixel (``out_rows`` = OH, ``pixels`` = OH·OW) a channel loop:
    blocks of 4 channels (bias loads, four requantizations and stores: ``quad_pixels`` =
    P·⌊C/4⌋), then the C mod 4 leftover channels one by one (``tail_pixels`` = P·(C mod 4)).
    Each runs a loop over the filter rows inside the input (``ker_h_start`` to ``MIN(3, input_y
    - in_h)``: ``quad_rows`` / ``tail_rows`` = R·⌊C/4⌋ / R·(C mod 4), R = Σ over pixels of those
    rows) whose three column taps are straight-line code: the middle one always, the left one
    when ``in_w >= 0``, the right one when ``input_x - in_w >= 3`` (``quad_taps`` /
    ``tail_taps``, T = Σ over pixels of rows × those columns). With no small shapes, a
    feature set of per-tap terms only fitted a call term of thousands of cycles (issue 18)."""
    i, o = dims(p, "input_dims"), dims(p, "output_dims")
    s, pad = tile(p, "stride", 1), tile(p, "padding")
    rows = [max(0, min(3, i.h - y) - max(0, -y)) for y in (oy * s.h - pad.h for oy in range(o.h))]
    cols = [(x >= 0) + 1 + (i.w - x >= 3) for x in (ox * s.w - pad.w for ox in range(o.w))]
    r, t = sum(rows) * o.w, sum(rows) * sum(cols)
    quads, rest = divmod(o.c, 4)
    pixels = o.h * o.w
    return {"call": 1.0, "out_rows": float(o.h), "pixels": float(pixels),
            "quad_pixels": float(pixels * quads), "tail_pixels": float(pixels * rest),
            "quad_rows": float(r * quads), "tail_rows": float(r * rest),
            "quad_taps": float(t * quads), "tail_taps": float(t * rest)}  # fmt: skip


#: kernels_c's own loops (:mod:`isa_models.cortex_m.depthwise.kernels_c`), imported only by an
#: estimate of kernels_c.
_KERNELS_C = "isa_models.cortex_m.depthwise.kernels_c"

FORMULAS: dict[str, Formula] = {
    f.key: f
    for f in (
        Formula(
            "arm_depthwise_conv_s8",
            PUBLIC_WRAPPER,
            _generic_features,
            macs,
            nbytes,
            "generic (any ch_mult, dilation, batch)",
            # kernels_c and TFLM's -O2 file keep the features they were fitted with
            library_features=(
                ("kernels_c", lambda p, t, arch=None: imported_at_call(_KERNELS_C, "features")(p, t)),
                ("cmsis-nn-tflm", lambda p, t, arch=None: _generic_features(p, t)),
            ),
            by_arch=True,
        ),
        Formula(
            "arm_depthwise_conv_s8_opt",
            PUBLIC_WRAPPER,
            _opt_features,
            macs,
            nbytes,
            "ch_mult 1: im2col of the window, channel-parallel MACs",
            library_features=(("kernels_c", imported_at_call(_KERNELS_C, "opt_features")),),
        ),
        Formula(
            "arm_depthwise_conv_3x3_s8",
            PUBLIC_WRAPPER,
            _three_features,
            macs,
            nbytes,
            "ch_mult 1, 3x3, padding <= 1 (scalar/DSP builds)",
            # kernels_c, and TFLM's -O2 build (not re-measured on the small shapes), keep the
            # per-tap features their files were fitted with
            library_features=(("kernels_c", _features), ("cmsis-nn-tflm", _features)),
        ),
        Formula(
            TO_CONV,
            PUBLIC_WRAPPER,
            _to_conv_features,
            macs,
            nbytes,
            "MVE: one input channel as a conv",
            library_features=(
                ("kernels_c", lambda p, t: _to_conv_features(p, t, "kernels_c")),
                ("cmsis-nn-tflm", lambda p, t: _to_conv_features(p, t, "cmsis-nn-tflm")),
            ),
        ),
    )
}


__all__ = ["FAMILY", "FORMULAS", "PUBLIC_WRAPPER", "TO_CONV", "macs", "route"]

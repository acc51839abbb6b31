"""kernels_c's depthwise loops (kernels_c/src/depthwise_s8_{scalar,dsp,mve}.c), as
:mod:`isa_models.cortex_m.depthwise`'s kernels_c features: imported only by an estimate of kernels_c
(:func:`isa_models.cortex_m.formula.imported_at_call`), never by one of the real CMSIS-NN.
"""

from __future__ import annotations

from isa_models.cortex_m.formula import Features
from isa_models.shapes import Params, ceil_div, dims, tile, valid_taps, value


def _window_counts(size: int, out: int, kernel: int, stride: int, pad: int, dilation: int) -> list[int]:
    """Per output position, the filter taps inside the input."""
    return [sum(1 for k in range(kernel) if 0 <= o * stride - pad + k * dilation < size) for o in range(out)]


def _ch1_features(p: Params, tier: str) -> Features:
    """kernels_c's ch_mult 1 loops on DSP (src/depthwise_s8_dsp.c; used for that tier): per pixel and
    64-channel chunk (chunks; bias and requant passes per output), 4-channel passes that run a
    straight-line 3x3 when the window is whole (full_blocks), else per valid row a switch
    unrolled up to 3 taps (row_blocks, tap_blocks; wider rows loop: loop_taps), then the last
    C mod 4 channels tap by tap (tail_rows, tail_taps)."""
    i, f, o = dims(p, "input_dims"), dims(p, "filter_dims"), dims(p, "output_dims")
    s, pad, d = tile(p, "stride", 1), tile(p, "padding"), tile(p, "dilation", 1)
    rows = _window_counts(i.h, o.h, f.h, s.h, pad.h, d.h)
    cols = _window_counts(i.w, o.w, f.w, s.w, pad.w, d.w)
    can_full = f.w == 3 and d.w == 1
    full_px = o.n * sum(r == 3 for r in rows) * sum(c == 3 for c in cols) if can_full else 0
    sum_rows, sum_cols = sum(rows), sum(cols)
    all_rows, all_taps = o.n * sum_rows * o.w, o.n * sum_rows * sum_cols
    full_rows, full_taps = 3 * full_px, 9 * full_px
    wide = sum(c for c in cols if c > 3)
    quads, rest = o.c // 4, o.c % 4
    pixels = o.n * o.h * o.w
    return {"call": 1.0, "pixels": float(pixels), "outputs": float(pixels * o.c),
            "chunks": float(pixels * ceil_div(o.c, 64)), "full_blocks": float(full_px * quads),
            "row_blocks": float((all_rows - full_rows) * quads), "tap_blocks": float((all_taps - full_taps) * quads),
            "loop_taps": float(o.n * sum_rows * wide * quads), "tail_rows": float(all_rows * rest),
            "tail_taps": float(all_taps * rest)}  # fmt: skip


def _ch1_mve_features(p: Params, tier: str) -> Features:
    """kernels_c's ch_mult 1 loops on MVE (src/depthwise_s8_mve.c ``dw_ch1_mve``): per pixel,
    ⌊C/8⌋ int16-lane blocks (blocks8: bias, requantize and narrow per block), each over the
    window's valid rows (row_blocks: a switch unrolled up to 3 taps; wider rows loop:
    loop_taps) and taps (tap_blocks); then ⌈(C mod 8)/4⌉ predicated int32 passes (tail_passes),
    each a row loop (tail_rows) of tap loops (tail_taps)."""
    i, f, o = dims(p, "input_dims"), dims(p, "filter_dims"), dims(p, "output_dims")
    s, pad, d = tile(p, "stride", 1), tile(p, "padding"), tile(p, "dilation", 1)
    rows = _window_counts(i.h, o.h, f.h, s.h, pad.h, d.h)
    cols = _window_counts(i.w, o.w, f.w, s.w, pad.w, d.w)
    sum_rows, sum_cols = sum(rows), sum(cols)
    all_rows, all_taps = o.n * sum_rows * o.w, o.n * sum_rows * sum_cols
    wide = sum(c for c in cols if c > 3)
    blocks, tails = o.c // 8, ceil_div(o.c % 8, 4)
    pixels = o.n * o.h * o.w
    return {"call": 1.0, "pixels": float(pixels), "outputs": float(pixels * o.c),
            "blocks8": float(pixels * blocks), "row_blocks": float(all_rows * blocks),
            "tap_blocks": float(all_taps * blocks), "loop_taps": float(o.n * sum_rows * wide * blocks),
            "tail_passes": float(pixels * tails), "tail_rows": float(all_rows * tails),
            "tail_taps": float(all_taps * tails)}  # fmt: skip


def opt_features(p: Params, tier: str) -> Features:
    """kernels_c's _opt: its ch_mult 1 loops (:func:`_ch1_features`,
    :func:`_ch1_mve_features` on MVE)."""
    if tier == "mve":
        return _ch1_mve_features(p, tier)
    return _ch1_features(p, tier)


def features(p: Params, tier: str) -> Features:
    """kernels_c's depthwise: ch_mult 1 as :func:`_features`; ch_mult > 1 per output pixel
    (scalar/DSP, in chunks of 64 outputs, requantized per chunk) per input channel's run of
    outputs in the chunk: 4-output passes, then the run's last outputs one by one, each pass
    over the valid rows and taps (quad_rows/quad_taps, rest_rows/rest_taps; runs, chunks).
    MVE: 4-lane passes over all outputs and a predicated tail pass, each over the valid rows
    and taps."""
    mult = value(p, "ch_mult", 1)
    if mult == 1:
        return opt_features(p, tier)
    i, f, o = dims(p, "input_dims"), dims(p, "filter_dims"), dims(p, "output_dims")
    s, pad, d = tile(p, "stride", 1), tile(p, "padding"), tile(p, "dilation", 1)
    pixels = o.n * o.h * o.w
    rows_h = valid_taps(i.h, o.h, f.h, s.h, pad.h, d.h)
    rows = o.n * rows_h * o.w
    taps = o.n * rows_h * valid_taps(i.w, o.w, f.w, s.w, pad.w, d.w)
    if tier == "mve":
        quads, rest, runs, chunks = o.c // 4, int(o.c % 4 != 0), 0, 0
    else:
        quads = rest = runs = chunks = 0
        for c0 in range(0, o.c, 64):
            chunks += 1
            c_end = min(c0 + 64, o.c)
            oc = c0
            while oc < c_end:
                run_end = min((oc // mult + 1) * mult, c_end)
                runs += 1
                quads += (run_end - oc) // 4
                rest += (run_end - oc) % 4
                oc = run_end
    return {"call": 1.0, "pixels": float(pixels), "outputs": float(pixels * o.c), "chunks": float(pixels * chunks),
            "runs": float(pixels * runs), "quad_rows": float(rows * quads), "quad_taps": float(taps * quads),
            "rest_rows": float(rows * rest), "rest_taps": float(taps * rest)}  # fmt: skip


__all__ = ["features", "opt_features"]

"""kernels_c's im2col, as its loops run it (kernels_c/src/conv_s8_{scalar,dsp,mve}.c).

Per output pixel and group (MVE: unless its receptive field is one contiguous run of the input,
``rs_conv_direct_column``: a one-row filter inside the input, not upscaled), per filter row
(``tap_rows``): a row in the padding or on an inserted zero row of an upscaled input
(``rs_conv_row`` NULL) is one run of KW·C padding; a row whose taps are adjacent inside an
ungrouped, not upscaled input (``rs_conv_row_contiguous``) is one run of KW·C input bytes; any
other row loops over its taps (``split_taps``), one run of C per tap, padding where
``rs_conv_row_pixel`` is NULL. Scalar and DSP widen each run into int16 columns: ``im2col_runs``
runs, ``im2col`` input and ``im2col_pad`` padding elements, ``im2col_scalar`` the elements
outside whole L-blocks of the column (one by one, :func:`head_tail`). MVE copies or fills each
run with one tail-predicated 16-byte loop (:class:`isa_models.shapes.ByteOps`), into one of 4
column slots; ``im2col_cols`` counts the pixels so built.

The upscaled input of the transpose-conv wrapper's reverse route is virtual: ``up`` (0 or 1 per
axis, stride 2) makes odd upscaled rows and columns zeros, read as padding. The MVE engine's
column collection (:func:`mve_column_calls`) and kernels_c's arm_transpose_conv_s8 gather
(:func:`transpose_features`) are here too, and the convolution's features that use them
(:func:`conv_features`): all kernels_c's loops only, imported by an estimate of kernels_c alone
(:func:`isa_models.cortex_m.formula.imported_at_call`).
"""

from __future__ import annotations

import numpy as np

from isa_models.cortex_m import conv
from isa_models.cortex_m.formula import Features
from isa_models.shapes import BLOCKING, ByteOps, Params, ceil_div, dims, tile
from kernels_py.types import Tile


def head_tail(start: int, n: int, lanes: int) -> int:
    """Elements of the run [start, start + n) outside whole ``lanes``-blocks of the column."""
    if lanes == 1:
        return 0
    head = min((-start) % lanes, n)
    body_end = (start + n) - (start + n) % lanes
    return head + max(start + n - max(body_end, start + head), 0)


def _inside(pos: np.ndarray, size: int, up: int) -> np.ndarray:
    """Upscaled coordinates that read an input row/column (not padding, not an inserted zero)."""
    return (pos >= 0) & ((pos >> up) < size) & ((pos & up) == 0)


def im2col_features(
    i, f, o, s, pad, d, groups: int, tier: str, up: tuple[int, int] = (0, 0)
) -> dict[str, float]:
    """The features of the module docstring for one call (``i`` the real input's dims)."""
    up_h, up_w = up
    n = f.c
    row_elements = f.w * n
    y0 = np.arange(o.h) * s.h - pad.h
    x0 = np.arange(o.w) * s.w - pad.w
    contiguous = (groups == 1 and d.w == 1 and up_w == 0) & (x0 >= 0) & (x0 + f.w <= i.w)  # per ox
    rows_valid = [_inside(y0 + ky * d.h, i.h, up_h) for ky in range(f.h)]  # per ky: per oy
    taps_valid = [_inside(x0 + kx * d.w, i.w, up_w) for kx in range(f.w)]  # per kx: per ox
    built = ~mve_direct(i, f, o, s, pad, d, groups, up) if tier == "mve" else np.ones((o.h, o.w), dtype=bool)
    times = o.n * groups
    lanes = BLOCKING[tier].reduce_lanes
    ops = ByteOps(tier, skip_empty=False)
    feats = dict.fromkeys(("im2col_runs", "im2col", "im2col_pad", "im2col_scalar", "split_taps"), 0.0)

    def run(start: int, length: int, valid: bool, count: int) -> None:
        if count == 0:
            return
        if tier == "mve":
            if valid:
                ops.copy(length, 0, 0, times * count)
            else:
                ops.fill(length, 0, times * count)
        feats["im2col_runs"] += times * count
        feats["im2col" if valid else "im2col_pad"] += times * count * length
        feats["im2col_scalar"] += times * count * head_tail(start, length, lanes)

    for ky in range(f.h):
        row_ok = rows_valid[ky][:, None] & built
        pad_row = ~rows_valid[ky][:, None] & built
        start = ky * row_elements
        run(start, row_elements, False, int(pad_row.sum()))
        run(start, row_elements, True, int((row_ok & contiguous[None, :]).sum()))
        split = row_ok & ~contiguous[None, :]
        feats["split_taps"] += times * f.w * int(split.sum())
        for kx in range(f.w):
            ok = split & taps_valid[kx][None, :]
            run(start + kx * n, n, True, int(ok.sum()))
            run(start + kx * n, n, False, int((split & ~ok).sum()))
    cols = float(times * int(built.sum()))
    feats.update({"im2col_cols": cols, "tap_rows": cols * f.h})
    if tier == "mve":  # the WLSTP loop trips replace the element counts
        for k in ("im2col", "im2col_pad", "im2col_scalar"):
            del feats[k]
        feats.update(
            {k: v for k, v in ops.f.items() if k in ("copy_calls", "copy_blocks", "set_calls", "set_blocks")}
        )
    return feats


def mve_direct(i, f, o, s, pad, d, groups: int, up: tuple[int, int] = (0, 0)) -> np.ndarray:
    """Per output pixel (OH x OW), whether kernels_c's MVE engine reads its column in place
    (``rs_conv_direct_column``)."""
    if not (f.h == 1 and up == (0, 0) and (f.w == 1 or (d.w == 1 and groups == 1))):
        return np.zeros((o.h, o.w), dtype=bool)
    y0 = np.arange(o.h) * s.h - pad.h
    x0 = np.arange(o.w) * s.w - pad.w
    return ((y0 >= 0) & (y0 < i.h))[:, None] & ((x0 >= 0) & (x0 + f.w <= i.w))[None, :]


def mve_column_calls(direct: np.ndarray, slots: int) -> list[int]:
    """The column counts of the MVE engine's ``mat_cols`` calls for one image and group: columns
    are collected 4 at a time; a column built by im2col needs one of ``slots`` scratch slots,
    and when they are all in use the pending columns run first (``rs_conv_engine_mve``)."""
    calls: list[int] = []
    pending = used = 0
    for is_direct in direct.ravel():
        if not is_direct:
            if used == slots:
                if pending:
                    calls.append(pending)
                pending = used = 0
            used += 1
        pending += 1
        if pending == 4:
            calls.append(4)
            pending = used = 0
    if pending:
        calls.append(pending)
    return calls


def filter_reversal(f, tier: str) -> dict[str, float]:
    """The reverse route's filter reversal: one newlib ``memcpy`` of C_IN bytes per output channel
    and tap, from tap t to tap KH·KW−1−t (byte offsets multiples of C_IN)."""
    ops = ByteOps("scalar", skip_empty=True)
    taps = f.h * f.w
    for o in range(f.n):
        for t in range(taps):
            ops.copy(f.c, ((o * taps + taps - 1 - t) * f.c) % 4, ((o * taps + t) * f.c) % 4)
    return {f"rev_{k}": v for k, v in ops.f.items() if k.startswith("copy") and v}


def _gather_taps(out: int, pad: int, stride: int, size: int, kernel: int) -> list[int]:
    """Per output position, the filter taps that reach it (kernels_c ``tc_tap_range``)."""
    counts = []
    for o in range(out):
        t = o + pad
        lo, hi = max(t % stride, t - (size - 1) * stride), min(kernel - 1, t)
        counts.append((hi - lo) // stride + 1 if hi >= lo else 0)
    return counts


def transpose_features(p: Params, tier: str) -> Features:
    """kernels_c's arm_transpose_conv_s8 gathers per output pixel: per pair of output channels
    (then the odd one) a dot product over C_IN for every filter tap that reaches the pixel
    (rows: reaching filter rows, each with an integer division; taps: reaching taps), C_IN
    in ⌊C_IN/4⌋ SMLAD blocks + C_IN mod 4 (DSP), ⌊C_IN/16⌋ vectors + one predicated tail (MVE)
    or one by one (scalar); one requantization per output."""
    i, f, o = dims(p, "input_dims"), dims(p, "filter_dims"), dims(p, "output_dims")
    s, pad = tile(p, "stride", 1), tile(p, "padding")
    cy = sum(_gather_taps(o.h, pad.h, s.h, i.h, f.h))
    cx = sum(_gather_taps(o.w, pad.w, s.w, i.w, f.w))
    rows, taps = o.n * cy * o.w, o.n * cy * cx
    c = i.c
    if tier == "dsp":
        per, tail = c // 4, c % 4
    elif tier == "mve":
        per, tail = c // 16, int(c % 16 != 0)
    else:
        per, tail = 0, c
    pairs, odd = o.c // 2, o.c % 2
    return {"call": 1.0, "pixels": float(o.n * o.h * o.w), "outputs": float(o.n * o.h * o.w * o.c),
            "pair_rows": float(rows * pairs), "pair_taps": float(taps * pairs),
            "pair_blocks": float(taps * pairs * per), "pair_tail": float(taps * pairs * tail),
            "odd_rows": float(rows * odd), "odd_taps": float(taps * odd),
            "odd_blocks": float(taps * odd * per), "odd_tail": float(taps * odd * tail)}  # fmt: skip


def _mve_slots(p: Params) -> int:
    """Columns kernels_c's MVE engine can stage: the wrapper's scratch over the column length, at
    most 4 (arm_convolve_s8's size is 4 whole-vector columns; the 1xN kernel's holds one padded
    edge row, ``rs_convolve_1_x_n_s8_buffer_size_tier``)."""
    if conv.conv_route(p) != "arm_convolve_1_x_n_s8":
        return 4
    i, f, o = dims(p, "input_dims"), dims(p, "filter_dims"), dims(p, "output_dims")
    s, pad = tile(p, "stride", 1), tile(p, "padding")
    depth = f.w * f.c
    total = (o.w - 1) * s.w + f.w - i.w
    asym = total % 2
    right = max(1, ceil_div(pad.w + asym, s.w)) if pad.w + asym else 0
    left = max(1, ceil_div(pad.w, s.w)) if pad.w else 0
    middle = max(o.w - right - left, 0)
    if right + middle + left != o.w:
        return 4
    size = max(depth + pad.w * f.c, depth - f.c + (right * f.c if asym else pad.w * f.c))
    return min(4, size // depth)


def conv_features(p: Params, tier: str, reverse: bool = False) -> Features:
    """kernels_c's arm_convolve_s8 (conv_s8_{scalar,dsp,mve}.c engines): per call, output row,
    pixel and output; the mat-mult of :func:`isa_models.cortex_m.conv._mat_mult` (MVE: 4-column passes with a
    predicated K tail, the last < 4 columns as one more pass); im2col as
    :func:`isa_models.cortex_m.conv.kernels_c.im2col_features` runs it. ``reverse``: the transpose-conv
    wrapper's reverse route, the filter reversed (:func:`filter_reversal`)
    then this convolution on the input upscaled by the stride (virtually: up = stride 2), padding
    K−1−pad, stride 1."""
    i, f, o = dims(p, "input_dims"), dims(p, "filter_dims"), dims(p, "output_dims")
    s, pad, d = tile(p, "stride", 1), tile(p, "padding"), tile(p, "dilation", 1)
    up = (0, 0)
    extra: dict[str, float] = {}
    if reverse:
        up = (int(s.h == 2), int(s.w == 2))
        pad = Tile(w=f.w - 1 - pad.w, h=f.h - 1 - pad.h)
        s = d = Tile(w=1, h=1)
        extra = filter_reversal(f, tier)
    groups = max(i.c // max(f.c, 1), 1)
    per_group = max(f.n // groups, 1)
    pixels = o.n * o.h * o.w
    depth = f.h * f.w * f.c
    mat = conv._mat_mult(tier, pixels, per_group, depth, True)
    slots = _mve_slots(p) if tier == "mve" and not reverse else 4
    if slots < 4:  # the 1xN kernel's scratch holds fewer columns: im2col'd columns flush early
        calls = mve_column_calls(mve_direct(i, f, o, s, pad, d, groups, up), slots)
        passes = o.n * len(calls) * per_group
        partial = o.n * sum(n for n in calls if n < 4)
        mat = {"blocks": float(passes * (depth // 16)), "k_tail": float(passes * (depth % 16 != 0)),
               "passes": float(passes), "odd_columns": float(partial * per_group * ceil_div(depth, 16)),
               "odd_channels": 0.0}  # fmt: skip
    return {
        "call": 1.0,
        "out_rows": float(o.n * o.h * groups),
        "pixels": float(pixels * groups),
        "outputs": float(pixels * per_group * groups),
        **im2col_features(i, f, o, s, pad, d, groups, tier, up),
        **{k: v * groups for k, v in mat.items()},
        **extra,
    }


def reverse_conv_features(p: Params, tier: str) -> Features:
    """The transpose-conv wrapper's reverse route: :func:`conv_features` with ``reverse``."""
    return conv_features(p, tier, reverse=True)


__all__ = [
    "conv_features",
    "filter_reversal",
    "head_tail",
    "im2col_features",
    "mve_column_calls",
    "mve_direct",
    "reverse_conv_features",
    "transpose_features",
]

"""Cost formulas for CMSIS-NN's s8 convolutions (kernels_py/conv.py, conv_transpose.py,
kernels_c/src/conv_s8*.c).

Routing is kernels_py's: ``select_convolve_kernel`` picks arm_convolve_1x1_s8_fast,
arm_convolve_1x1_s8, arm_convolve_1_x_n_s8 or arm_convolve_s8 for the wrapper;
``select_transpose_conv_kernel`` sends a transpose convolution either to
arm_transpose_conv_s8 or to arm_convolve_s8 on the zero-upscaled input
(``arm_transpose_conv_wrapper_s8/reverse_conv``).

Features of a convolution (P = N·OH·OW output pixels, C = output channels per group,
K = KH·KW·C_IN/groups the reduction, G groups; blocking from :data:`isa_models.shapes.BLOCKING`
except scalar's 2 x 2 (:data:`_SCALAR_MAT_MULT`): L reduction lanes, Pb pixels and Cb channels
per mat-mult pass)::

    call      = 1                                     per-call setup
    out_rows  = N·OH·G                                per output row (strided 1x1: one mat-mult
                                                      per row, its column blocking per row)
    pixels    = P·G                                   per im2col column: loop and pointer setup
    outputs   = P·C·G                                 per-output requantization and store
    im2col_*  = the column building of the kernels that need one (CMSIS-NN: ``_im2col_calls``;
                kernels_c: :func:`isa_models.cortex_m.conv.kernels_c.im2col_features`); the 1x1 kernels
                read their columns in place
    blocks    = ⌊P/Pb⌋·⌊C/Cb⌋·⌊K/L⌋·G  (MVE: ⌈P/Pb⌉·C·⌈K/L⌉·G, the K tail is predicated)
    k_tail    = ⌊P/Pb⌋·Pb·C·(K mod L)·G   (0 on MVE)                 scalar tail MACs
    blocks16  = ⌊P/Pb⌋·⌊C/Cb⌋·⌊K/16⌋·G (DSP)        CMSIS-NN's 16-wide unrolled K loop
    weight_sums = C·K·G per mat-mult call (DSP)       CMSIS-NN sums each weight row per call
    passes    = ⌊P/Pb⌋·⌊C/Cb⌋·G (MVE: ⌈P/Pb⌉·C·G)      per (column block, channel block) set-up
    odd_columns  = (P mod Pb)·C·K·G  (MVE: (P mod Pb)·C·⌈K/L⌉·G)      the leftover pixel(s)
    odd_channels = ⌊P/Pb⌋·(C mod Cb)·K·G  (0 on MVE)                  the leftover channel

    instructions = Σ a_f · f          cycles = Σ b_f · f                (per core, fitted)

These are the 1x1 kernels' features. CMSIS-NN's
arm_convolve_s8 builds its columns with a loop trip per (pixel, filter row) and one
memcpy/memset per (pixel, tap), and widens them to int16 off MVE (``_cmsis_conv_features``);
its 1xN kernel is that off MVE and three mat-mults on MVE (``_cmsis_1_x_n_features``).
kernels_c's arm_convolve_s8, 1xN kernel and reverse transpose route count its own im2col
loops (:func:`isa_models.cortex_m.conv.kernels_c.conv_features`). A transpose
convolution (arm_transpose_conv_s8) is costed per library: CMSIS-NN scatters input rows into
an int32 row buffer (``_cmsis_transpose_features``), kernels_c gathers per output pixel
(:func:`isa_models.cortex_m.conv.kernels_c.transpose_features`); each docstring has the features.
"""

from __future__ import annotations

import math

import numpy as np

from isa_models.cortex_m.formula import Features, Formula, imported_at_call
from isa_models.shapes import BLOCKING, Blocking, ByteOps, Params, ceil_div, dims, tile, valid_taps
from kernels_py import conv, conv_transpose
from kernels_py.types import ConvParams, TransposeConvParams

FAMILY = "conv"


def _conv_params(p: Params) -> ConvParams:
    return ConvParams(
        stride=tile(p, "stride", 1), padding=tile(p, "padding"), dilation=tile(p, "dilation", 1)
    )


def conv_route(p: Params) -> str:
    """The function arm_convolve_wrapper_s8 calls (kernels_py's routing predicates)."""
    cp = _conv_params(p)
    return conv.select_convolve_kernel(
        cp, dims(p, "input_dims"), dims(p, "filter_dims"), dims(p, "output_dims")
    )


def transpose_route(p: Params) -> str:
    tp = TransposeConvParams(stride=tile(p, "stride", 1))
    if conv_transpose.select_transpose_conv_kernel(tp, dims(p, "input_dims")) == "arm_convolve_s8":
        return "arm_transpose_conv_wrapper_s8/reverse_conv"
    return "arm_transpose_conv_s8"


def conv_macs(p: Params) -> int:
    o, f = dims(p, "output_dims"), dims(p, "filter_dims")
    return o.n * o.h * o.w * o.c * f.h * f.w * f.c


def conv_bytes(p: Params) -> tuple[int, int]:
    i, f, o = dims(p, "input_dims"), dims(p, "filter_dims"), dims(p, "output_dims")
    weights = f.n * f.h * f.w * f.c + 12 * f.n  # filter, plus bias/multiplier/shift per channel
    return i.n * i.h * i.w * i.c + weights, o.n * o.h * o.w * o.c


#: Scalar mat-mults block 2 columns x 2 output channels, one MAC per step, a last odd column or
#: channel in loops of their own: CMSIS-NN's non-DSP arm_nn_mat_mult_kernel_s8_s16 and
#: arm_nn_mat_mult_nt_t_s8, kernels_c's ``mat_s16_2col`` / ``mat_s8_2col``.
_SCALAR_MAT_MULT = Blocking(reduce_lanes=1, columns=2, channels=2, channel_lanes=1, element_lanes=1)


def _mat_mult(tier: str, columns: int, channels: int, depth: int, padded: bool = False) -> dict[str, float]:
    """Inner-loop passes of a blocked mat-mult (``columns`` pixels x ``channels`` rows x ``depth``)
    and the MACs of its leftover column and channel (odd counts on DSP, < 4 pixels on MVE).
    ``padded`` (kernels_c's engines): on MVE the last < 4 columns run as one more 4-column pass,
    K in 16-lane steps and one predicated tail step (k_tail)."""
    b = _SCALAR_MAT_MULT if tier == "scalar" else BLOCKING[tier]
    full_cols, odd_cols = divmod(columns, b.columns)
    full_chans, odd_chans = divmod(channels, b.channels)
    if tier == "mve" and padded:  # 16-lane K steps, then one predicated tail step
        passes = ceil_div(columns, b.columns) * channels
        return {"blocks": float(passes * (depth // 16)), "k_tail": float(passes * (depth % 16 != 0)),
                "passes": float(passes), "odd_columns": float(odd_cols * channels * ceil_div(depth, 16)),
                "odd_channels": 0.0}  # fmt: skip
    if tier == "mve":  # arm_nn_mat_mult_nt_t_s8: 4 columns x 1 channel per pass, then 1 x 1 passes
        k_passes = ceil_div(depth, b.reduce_lanes)
        passes = full_cols * channels
        return {"blocks": float(passes * k_passes), "k_tail": 0.0, "passes": float(passes),
                "odd_passes": float(odd_cols * channels), "odd_columns": float(odd_cols * channels * k_passes),
                "odd_requant": float(odd_cols * ceil_div(channels, 4)), "odd_channels": 0.0}  # fmt: skip
    k_passes, k_left = divmod(depth, b.reduce_lanes)
    return {
        "passes": float(full_cols * full_chans),
        "blocks": float(full_cols * full_chans * k_passes),
        # CMSIS-NN's DSP mat-mult unrolls K by 16 before its 4-wide loop, and sums each weight row
        # (for the input offset) once per call: both are features of their own.
        "blocks16": float(full_cols * full_chans * (depth // 16)) if tier == "dsp" else 0.0,
        "weight_sums": float(channels * depth),
        "k_tail": float(full_cols * b.columns * channels * k_left),
        "odd_columns": float(odd_cols * channels * depth),
        "odd_channels": float(full_cols * odd_chans * depth),
    }


def _conv_features(
    p: Params, tier: str, *, row_wise: bool = False, kernels_c: bool = False
) -> dict[str, float]:
    """call, out_rows, pixels, outputs and the mat-mult features (the 1x1 kernels: all of them;
    the others add their im2col's)."""
    i, f, o = dims(p, "input_dims"), dims(p, "filter_dims"), dims(p, "output_dims")
    groups = max(i.c // max(f.c, 1), 1)
    per_group = max(f.n // groups, 1)
    pixels = o.n * o.h * o.w
    depth = f.h * f.w * f.c
    mat = _mat_mult(tier, pixels, per_group, depth, kernels_c)
    if row_wise and not kernels_c:  # CMSIS-NN: one mat-mult per output row (strided 1x1), the column
        # blocking restarts each row (kernels_c's 1x1 engines keep pairing / collecting 4 columns across rows)
        per_row = _mat_mult(tier, o.w, per_group, depth, kernels_c)
        mat = {k: v * o.n * o.h for k, v in per_row.items()}
    return {
        "call": 1.0,
        "out_rows": float(o.n * o.h * groups),
        "pixels": float(pixels * groups),
        "outputs": float(pixels * per_group * groups),
        **{k: v * groups for k, v in mat.items()},
    }


def _cmsis_1x1_features(p: Params, tier: str) -> Features:
    """CMSIS-NN's arm_convolve_1x1_s8: one ``arm_nn_mat_mult_nt_t_s8`` per output row
    (:func:`_conv_features` ``row_wise``). Off MVE that mat-mult runs, per pair of output channels
    (``chan_pairs``: its weight-sum loop and bias set-up), the column pairs, then the row's odd
    column (``odd_col_passes``: one pass and two requantizations per channel pair; its MACs
    ``odd_columns`` over the paired channels only), and then the
    odd output channel over *every* column of the row (``odd_chan_passes`` = rows·OW·(C mod 2),
    its MACs ``odd_channels`` = that · K; the blocked count's ⌊OW/2⌋·2 missed a one-column row's);
    DSP: the K mod 4 tail loop's entries (``tail_passes``, per column pass and channel pair).
    MVE: the leftover columns' requantization, a vector per 4 channels (``odd_requant``) and
    the scalar one per channel of C mod 4 (``odd_tail_requant``).
    The random-case tail (issue 18): rows of 1-3 columns, 1-11 channels, priced up to +240%."""
    features = _conv_features(p, tier, row_wise=True)
    f, o = dims(p, "filter_dims"), dims(p, "output_dims")
    if tier == "mve":  # a leftover column requantizes its channels 4 at a time (one vector), then
        # the C mod 4 last ones one by one with the scalar arm_nn_requantize (``odd_tail_requant``)
        odd = o.n * o.h * (o.w % 4)
        features["odd_requant"] = float(odd * (f.n // 4))
        features["odd_tail_requant"] = float(odd * (f.n % 4))
        return features
    b = _SCALAR_MAT_MULT if tier == "scalar" else BLOCKING[tier]
    rows, depth = o.n * o.h, f.h * f.w * f.c
    full_chans, odd_chans = divmod(f.n, b.channels)
    odd_cols = o.w % b.columns
    features.update({"chan_pairs": float(rows * full_chans), "odd_col_passes": float(rows * odd_cols * full_chans),
                     "odd_chan_passes": float(rows * o.w * odd_chans),
                     # the odd column's MACs run in the channel-pair loop only
                     "odd_columns": float(rows * odd_cols * full_chans * b.channels * depth),
                     "odd_channels": float(rows * o.w * odd_chans * depth)})  # fmt: skip
    if tier == "dsp":  # the K mod 4 tail loop, entered per (column pair or odd column, channel pair)
        features["tail_passes"] = float(rows * (o.w // 2 + odd_cols) * full_chans * (depth % 4 != 0))
    return features


def _cmsis_1x1_fast_features(p: Params, tier: str) -> Features:
    """CMSIS-NN's arm_convolve_1x1_s8_fast: one ``arm_nn_mat_mult_nt_t_s8`` over all N·H·W
    pixels (:func:`_conv_features`). DSP: each (column pair, channel pair) pass runs a 16-wide
    K loop, then enters the 4-wide one when (K mod 16) >= 4 (``k4_passes``) and the K mod 4
    tail loop when K has a tail (``tail_passes``; the odd column's entries stay in its
    per-MAC ``odd_columns``: counting them too fitted the sweep worse), and the odd output
    channel runs its own scalar K loop per
    column (``odd_chan_passes`` = P·(C mod 2), its MACs ``odd_channels``). (issue 18: C_IN of
    1-9 priced up to +28% on the M7, the 1-3 tail MACs carrying the loop's entry.)"""
    features = _conv_features(p, tier)
    if tier != "dsp":
        return features
    f, o = dims(p, "filter_dims"), dims(p, "output_dims")
    pixels, depth = o.n * o.h * o.w, f.h * f.w * f.c
    full_chans, odd_chans = divmod(f.n, 2)
    pair_passes = (pixels // 2) * full_chans
    features["k4_passes"] = float(pair_passes * ((depth % 16) // 4 != 0))
    features["tail_passes"] = float(pair_passes * (depth % 4 != 0))
    features["odd_chan_passes"] = float(pixels * odd_chans)
    return features


def _im2col_calls(p: Params, tier: str, upscale: tuple[int, int] = (1, 1)) -> dict[str, float]:
    """CMSIS-NN arm_convolve_s8's im2col: per output pixel and filter tap one ``arm_memcpy_s8``
    of C_IN/G bytes (tap inside the input) or one ``arm_memset_s8`` of the input offset (tap in
    the padding), as :class:`isa_models.shapes.ByteOps` counts them. The destination is the
    pixel's column (scalar/DSP: two columns of K bytes at a word-aligned base; MVE: the WLSTP
    loop, where alignment does not matter); the source offset is (y·W + x)·C_IN + g·C.
    ``upscale`` (the transpose-conv wrapper's stride-2 input): per pixel one memset of the
    whole column, then, in the filter rows not skipped (padding, odd upscaled rows), a loop over
    the taps (upscaled_taps) copying those at even upscaled positions only. tap_rows = P·KH·G
    counts the filter-row loop."""
    i, f, o = dims(p, "input_dims"), dims(p, "filter_dims"), dims(p, "output_dims")
    s, pad, d = tile(p, "stride", 1), tile(p, "padding"), tile(p, "dilation", 1)
    groups = max(i.c // max(f.c, 1), 1)
    depth = f.h * f.w * f.c
    ops = ByteOps(tier, skip_empty=False)
    oy, ox = np.arange(o.h), np.arange(o.w)
    parity = ((oy[:, None] * o.w + ox[None, :]) % 2) if tier != "mve" else np.zeros((o.h, o.w), int)
    up_h, up_w = upscale
    upscaled = up_h > 1 or up_w > 1
    column_fill = ByteOps(tier, skip_empty=False)  # the upscaled route's whole-column memset
    if upscaled:
        for col in (0, 1) if tier != "mve" else (0,):
            column_fill.fill(depth, col * depth, o.n * groups * int((parity == col).sum()))
    for g in range(groups):
        for ky in range(f.h):
            y = oy * s.h - pad.h + ky * d.h
            for kx in range(f.w):
                x = ox * s.w - pad.w + kx * d.w
                inside = (y >= 0)[:, None] & (y < i.h)[:, None] & (x >= 0)[None, :] & (x < i.w)[None, :]
                if upscaled:
                    inside &= ((y % up_h) == 0)[:, None] & ((x % up_w) == 0)[None, :]
                yy, xx = np.clip(y, 0, None) // up_h, np.clip(x, 0, None) // up_w
                src = ((yy[:, None] * (i.w // up_w) + xx[None, :]) * i.c + g * f.c) % 4
                tap = (ky * f.w + kx) * f.c
                for col in (0, 1) if tier != "mve" else (0,):
                    dst = col * depth + tap
                    here = parity == col
                    if not upscaled:
                        ops.fill(f.c, dst, o.n * int((here & ~inside).sum()))
                    counts = np.bincount(src[here & inside], minlength=4)
                    for r in range(4):
                        if counts[r]:
                            ops.copy(f.c, dst, r, o.n * int(counts[r]))
    rows = {"tap_rows": float(o.n * groups * o.h * o.w * f.h)}  # the per-(pixel, filter row) loop trips
    if upscaled:  # the tap loop runs (and tests each tap's column) only in rows it does not skip
        y = oy[:, None] * s.h - pad.h + np.arange(f.h)[None, :] * d.h
        kept = int(((y >= 0) & (y < i.h) & (y % up_h == 0)).sum())
        rows["upscaled_taps"] = float(o.n * groups * kept * o.w * f.w)
    rows.update({f"column_{k}": v for k, v in column_fill.f.items() if v})
    return {**rows, **{k: v for k, v in ops.f.items() if v or k in ("copy_calls", "set_calls")}}


def _cmsis_conv_features(p: Params, tier: str, *, per_image: bool = True) -> Features:
    """arm_convolve_s8 as CMSIS-NN loops: the mat-mult features above, im2col as memcpy/memset
    calls per (pixel, tap) (:func:`_im2col_calls`) and, off MVE, each column widened to int16
    (``arm_s8_to_s16_unordered_with_offset`` / ``arm_q7_to_q15_with_offset``: 4 per pass and
    a tail): widen_blocks = P·⌊K/4⌋·G, widen_tail = P·(K mod 4)·G (scalar: widen_tail = P·K·G).

    On MVE the columns are collected per (image, group): ``lhs_rows`` restarts in each group of
    each batch, a full set of 4 columns is one ``arm_nn_mat_mult_nt_t_s8`` call and the 1-3
    left over columns one more (``mat_calls`` = N·G·⌈OH·OW/4⌉), so the 4-column blocking and
    the leftover columns are per image (:func:`_mve_image_mat_mult`; ``per_image`` False: the
    blocking over all N·OH·OW columns, which TFLM's -O2 file was fitted with). A leftover
    column requantizes ⌊C/4⌋ vectors (``odd_requant``) and the C mod 4 last channels one by one
    with the scalar arm_nn_requantize (``odd_tail_requant``), as in :func:`_cmsis_1x1_features`.
    The random-case tail (issue 18): batches of 1-3 columns per image, -33% priced as blocks."""
    features = _conv_features(p, tier)
    if tier == "mve" and per_image:
        features.update(_mve_image_mat_mult(p))
    f, o, i = dims(p, "filter_dims"), dims(p, "output_dims"), dims(p, "input_dims")
    s, pad, d = tile(p, "stride", 1), tile(p, "padding"), tile(p, "dilation", 1)
    groups = max(i.c // max(f.c, 1), 1)
    columns = o.n * o.h * o.w * groups
    depth = f.h * f.w * f.c
    copied = (
        o.n * valid_taps(i.h, o.h, f.h, s.h, pad.h, d.h) * valid_taps(i.w, o.w, f.w, s.w, pad.w, d.w) * f.c
    )
    features["im2col_pad"] = float(columns * depth - copied * groups)  # column bytes in the padding
    features.update(_widen(tier, columns, depth))
    return {**features, **_im2col_calls(p, tier)}


def _mve_image_mat_mult(p: Params) -> dict[str, float]:
    """The MVE mat-mult features of arm_convolve_s8 per (image, group): :func:`_mat_mult` over
    one image's OH·OW columns and C_OUT/G channels, times N·G, with the leftover columns'
    requantization split into vectors and scalar tails, and the mat-mult calls."""
    i, f, o = dims(p, "input_dims"), dims(p, "filter_dims"), dims(p, "output_dims")
    groups = max(i.c // max(f.c, 1), 1)
    per_group = max(f.n // groups, 1)
    columns = o.h * o.w
    images = o.n * groups
    mat = {k: v * images for k, v in _mat_mult("mve", columns, per_group, f.h * f.w * f.c).items()}
    odd = images * (columns % 4)
    mat["odd_requant"] = float(odd * (per_group // 4))
    mat["odd_tail_requant"] = float(odd * (per_group % 4))
    mat["mat_calls"] = float(images * ceil_div(columns, 4))
    return mat


def _widen(tier: str, columns: int, depth: int) -> Features:
    """Off MVE each im2col column of ``depth`` int8 is widened to int16: 4 at a time with a
    tail on DSP (widen_blocks = P·⌊K/4⌋, widen_tail = P·(K mod 4)), one by one on scalar."""
    if tier == "dsp":
        return {"widen_blocks": float(columns * (depth // 4)), "widen_tail": float(columns * (depth % 4))}
    if tier == "scalar":
        return {"widen_blocks": 0.0, "widen_tail": float(columns * depth)}
    return {}


def _cmsis_1_x_n_features(p: Params, tier: str) -> Features:
    """CMSIS-NN's arm_convolve_1_x_n_s8: off MVE it is arm_convolve_s8 (:func:`_cmsis_conv_features`).
    On MVE, per image, three ``arm_nn_mat_mult_nt_t_s8`` calls (mat_calls) over the left-padded,
    unpadded and right-padded output columns (their 4-column blocking each: :func:`_mat_mult`),
    the unpadded ones reading the input in place; the padded columns' single im2col row is built
    by a memset and a memcpy each side (:class:`isa_models.shapes.ByteOps`). A padding the split
    cannot cover falls back to arm_convolve_s8."""
    if tier != "mve":
        return _cmsis_conv_features(p, tier)
    i, f, o = dims(p, "input_dims"), dims(p, "filter_dims"), dims(p, "output_dims")
    s, pad = tile(p, "stride", 1), tile(p, "padding")
    total = (o.w - 1) * s.w + f.w - i.w
    # C's remainder truncates toward zero: a valid padding whose stride leaves input columns
    # unread (total -1) has asym_pad -1, passes CMSIS-NN's check and takes the three mat-mults
    # (Python's -1 % 2 == 1 sent it to arm_convolve_s8's features: issue 18's 1xN tail)
    asym = int(math.fmod(total, 2))
    right = max(1, ceil_div(pad.w + asym, s.w)) if pad.w + asym else 0
    left = max(1, ceil_div(pad.w, s.w)) if pad.w else 0
    middle = max(o.w - right - left, 0)
    if pad.w * 2 + asym != total or right + middle + left != o.w:
        # priced with the 1xN fit, made with the blocking over all columns (one sweep shape)
        return _cmsis_conv_features(p, tier, per_image=False)
    depth = f.w * f.c
    features: dict[str, float] = {"call": 1.0, "mat_calls": 3.0 * o.n, "outputs": float(o.n * o.w * o.c)}
    for rows in (left, middle, right):
        for k, v in _mat_mult(tier, rows, o.c, depth).items():
            features[k] = features.get(k, 0.0) + o.n * v
        # the leftover columns requantize 4 channels a vector, the C mod 4 last ones one by one
        # (as in :func:`_cmsis_1x1_features`)
        features["odd_requant"] += o.n * (rows % 4) * (o.c // 4 - ceil_div(o.c, 4))
        features["odd_tail_requant"] = features.get("odd_tail_requant", 0.0) + o.n * (rows % 4) * (o.c % 4)
    ops = ByteOps(tier, skip_empty=False)
    ops.fill(pad.w * f.c, 0, o.n)
    ops.copy(depth, 0, 0, o.n)
    ops.copy(depth - f.c, 0, 0, o.n)
    ops.fill(right * f.c if asym else pad.w * f.c, 0, o.n)
    return {**features, **{k: v for k, v in ops.f.items() if v}}


def _cmsis_reverse_conv_features(p: Params, tier: str, *, aligned_reversal: bool = False) -> Features:
    """CMSIS-NN's arm_transpose_conv_wrapper_s8 reverse route: the filter reversed (one
    ``arm_memcpy_s8`` of C_IN per output channel and tap: rev_*), then arm_convolve_s8 on the
    input seen upscaled by the stride (N, H·SH, W·SW), padding KH−1−pad, stride 1: the
    mat-mult and widening of :func:`_cmsis_conv_features` and its im2col with ``upscale``."""
    i, f = dims(p, "input_dims"), dims(p, "filter_dims")
    s, pad = tile(p, "stride", 1), tile(p, "padding")
    q = dict(p)
    q.update({"input_dims.h": i.h * s.h, "input_dims.w": i.w * s.w, "stride.h": 1, "stride.w": 1})
    q.update({"padding.h": f.h - 1 - pad.h, "padding.w": f.w - 1 - pad.w, "dilation.h": 1, "dilation.w": 1})
    features = _conv_features(q, tier)
    o = dims(p, "output_dims")
    columns, depth = o.n * o.h * o.w, f.h * f.w * f.c
    features.update(_widen(tier, columns, depth))
    rev = ByteOps(tier, skip_empty=False)
    # per (output channel o, tap t) a copy from filter + (o·KH·KW + t)·C_IN to the reversed
    # buffer at o·S + S − (t+1)·C_IN (S = KH·KW·C_IN), both bases word aligned: with C_IN not a
    # multiple of 4 most copies are misaligned, which newlib's memcpy runs as a head and a tail
    # (issue 18: the random cases' C_IN 17-24 were priced as aligned copies, up to +27%)
    taps, size = f.h * f.w, f.h * f.w * f.c
    o, t = np.meshgrid(np.arange(f.n), np.arange(taps), indexing="ij")
    dst, src = (o * size + size - (t + 1) * f.c) % 4, ((o * taps + t) * f.c) % 4
    if aligned_reversal:  # the features TFLM's -O2 file was fitted with (not re-measured)
        dst, src = dst * 0, src * 0
    pairs, counts = np.unique(dst * 4 + src, return_counts=True)
    for pair, count in zip(pairs.tolist(), counts.tolist(), strict=True):
        rev.copy(f.c, pair // 4, pair % 4, count)
    features.update({f"rev_{k}": v for k, v in rev.f.items() if k.startswith("copy") and v})
    return {**features, **_im2col_calls(q, tier, (s.h, s.w))}


def _cmsis_transpose_features(p: Params, tier: str, arch: str | None = None) -> Features:
    """CMSIS-NN's arm_transpose_conv_s8: an int32 row buffer of max(KH, SH) rows of
    ((IW−1)·SW + max(KW, SW)) pixels, filled with the bias (one ``arm_memcpy_s8`` of 4·C_OUT
    bytes per buffer pixel, :class:`isa_models.shapes.ByteOps`; with a NULL bias, ``bias_is_null``,
    one ``arm_memset_s8`` of the buffer and one per flushed row instead); per input row j
    ``arm_nn_transpose_conv_row_s8_s32`` over the filter rows not skipped (KH − top − bottom
    skips) accumulates 4 input pixels at a time, then a pair and a single pixel (IW mod 4):
    per (pixel group, output
    channel, filter row) a row set-up (quad_rows / single_rows), per filter tap a K loop
    (quad_taps) of ⌊C_IN/4⌋ SMLAD blocks + C_IN mod 4 (DSP), ⌈C_IN/16⌉ predicated VMLADAVs
    (MVE) or C_IN/2 pairs (scalar) per pass (quad_blocks, quad_tail; the pair and single
    pixel alike: pair_taps/blocks/tail, single_taps/blocks/tail; single_rows counts both's
    row set-ups); finished output rows are requantized (outputs; MVE:
    ⌈C_OUT/4⌉ vectors per pixel) and their buffer row refilled from the bias. ARMv6-M
    (``arch``): newlib's generic C memcpy, a byte loop under 16 bytes and 16-byte blocks, words
    and bytes from 16 (:class:`isa_models.shapes.ByteOps`; issue 18: the M0+'s 8-byte bias
    copies of two output channels were priced as Thumb-2 word copies, -17%)."""
    i, f, o = dims(p, "input_dims"), dims(p, "filter_dims"), dims(p, "output_dims")
    s, pad = tile(p, "stride", 1), tile(p, "padding")
    oc, ic = f.n, i.c
    rows = 0  # Σ over input rows of the filter rows used
    flushed = 0
    for j in range(i.h):
        top = max(0, pad.h - j * s.h)
        bottom = max(0, (j * s.h + f.h) - (pad.h + o.h) - 1)
        rows += max(f.h - top - bottom, 0)
        flushed += max(0, (j + 1) * s.h - pad.h) - max(0, j * s.h - pad.h)
    quads, pairs, singles = i.w // 4, (i.w % 4) // 2, i.w % 2
    if tier == "dsp":
        per_pass, tail = ic // 4, ic % 4
    elif tier == "mve":
        per_pass, tail = ceil_div(ic, 16), 0
    else:
        per_pass, tail = ic // 2, ic % 2
    n = i.n
    quad_rows = n * rows * quads * oc
    pair_rows = n * rows * pairs * oc
    single_rows = n * rows * singles * oc
    buf_pixels = (i.w - 1) * s.w + max(f.w, s.w)
    ops = ByteOps(tier, skip_empty=False, arch=arch)
    if p.get("bias_is_null", 0):  # NULL bias: one memset of the buffer, one per flushed row
        ops.fill(4 * oc * buf_pixels * max(f.h, s.h), 0, n)
        ops.fill(4 * oc * buf_pixels, 0, n * flushed)
    else:
        ops.copy(4 * oc, 0, 0, n * (buf_pixels * max(f.h, s.h) + flushed * buf_pixels))
    taps_q, taps_p, taps_s = quad_rows * f.w, pair_rows * f.w, single_rows * f.w
    features = {"call": 1.0, "quad_rows": float(quad_rows), "single_rows": float(single_rows + pair_rows),
                "pair_taps": float(taps_p), "pair_blocks": float(taps_p * per_pass), "pair_tail": float(taps_p * tail),
                "quad_taps": float(taps_q), "quad_blocks": float(taps_q * per_pass),
                "quad_tail": float(taps_q * tail), "single_taps": float(taps_s),
                "single_blocks": float(taps_s * per_pass), "single_tail": float(taps_s * tail),
                "outputs": float(o.n * o.h * o.w * (ceil_div(oc, 4) if tier == "mve" else oc))}  # fmt: skip
    groups = quads + pairs + singles
    features["oc_loops"] = float(n * i.h * groups * oc)  # per (input row, pixel group, output channel)
    sets = {k: v for k, v in ops.f.items() if k.startswith("set_")}
    if ops.v6m:
        return {**features, **{k: v for k, v in ops.f.items() if k.startswith("copy_")}, **sets}
    return {**features, "copy_calls": ops.f["copy_calls"], "copy_blocks": ops.f["copy_blocks"], **sets}


def transpose_macs(p: Params) -> int:
    i, f = dims(p, "input_dims"), dims(p, "filter_dims")
    return i.n * i.h * i.w * i.c * f.h * f.w * f.n


#: kernels_c's own loops (:mod:`isa_models.cortex_m.conv.kernels_c`), imported only by an estimate
#: of kernels_c.
_KERNELS_C = "isa_models.cortex_m.conv.kernels_c"
_KERNELS_C_CONV = imported_at_call(_KERNELS_C, "conv_features")

FORMULAS: dict[str, Formula] = {
    formula.key: formula
    for formula in (
        Formula(
            "arm_convolve_s8",
            "arm_convolve_wrapper_s8",
            _cmsis_conv_features,
            conv_macs,
            conv_bytes,
            "im2col (memcpy/memset per tap) + mat-mult: call, pixels, outputs, blocks, k_tail",
            library_features=(
                ("kernels_c", _KERNELS_C_CONV),
                # TFLM's -O2 build keeps the features its file was fitted with (not re-measured)
                ("cmsis-nn-tflm", lambda p, t: _cmsis_conv_features(p, t, per_image=False)),
            ),
        ),
        Formula(
            "arm_convolve_1x1_s8_fast",
            "arm_convolve_wrapper_s8",
            _cmsis_1x1_fast_features,
            conv_macs,
            conv_bytes,
            "1x1, unit stride: the input is the column matrix; call, pixels, outputs, blocks, k_tail",
            library_features=(
                ("kernels_c", lambda p, t: _conv_features(p, t, kernels_c=True)),
                # TFLM's -O2 build keeps the features its file was fitted with (not re-measured)
                ("cmsis-nn-tflm", lambda p, t: _conv_features(p, t)),
            ),
        ),
        Formula(
            "arm_convolve_1x1_s8",
            "arm_convolve_wrapper_s8",
            _cmsis_1x1_features,
            conv_macs,
            conv_bytes,
            "1x1, any stride: strided rows read in place; call, pixels, outputs, blocks, k_tail",
            library_features=(
                (
                    "kernels_c",
                    lambda p, t: _conv_features(p, t, row_wise=True, kernels_c=True),
                ),
                # TFLM's -O2 build keeps the features its file was fitted with (not re-measured)
                ("cmsis-nn-tflm", lambda p, t: _conv_features(p, t, row_wise=True)),
            ),
        ),
        Formula(
            "arm_convolve_1_x_n_s8",
            "arm_convolve_wrapper_s8",
            _cmsis_1_x_n_features,
            conv_macs,
            conv_bytes,
            "1 x N row convolution: as arm_convolve_s8",
            library_features=(("kernels_c", _KERNELS_C_CONV),),
        ),
        Formula(
            "arm_transpose_conv_s8",
            "arm_transpose_conv_wrapper_s8",
            _cmsis_transpose_features,
            transpose_macs,
            conv_bytes,
            "row buffer: 4-pixel and single-pixel scatter passes per filter row and tap, requant",
            library_features=(
                (
                    "kernels_c",
                    lambda p, t, arch=None: imported_at_call(_KERNELS_C, "transpose_features")(p, t),
                ),
                # TFLM's -O2 file keeps the features it was fitted with (not re-measured)
                ("cmsis-nn-tflm", lambda p, t, arch=None: _cmsis_transpose_features(p, t)),
            ),
            by_arch=True,
        ),
        Formula(
            "arm_transpose_conv_wrapper_s8/reverse_conv",
            "arm_transpose_conv_wrapper_s8",
            _cmsis_reverse_conv_features,
            transpose_macs,
            conv_bytes,
            "reversed filter + arm_convolve_s8 on the upscaled input (kernels_c: conv features + upscale)",
            library_features=(
                ("kernels_c", imported_at_call(_KERNELS_C, "reverse_conv_features")),
                ("cmsis-nn-tflm", lambda p, t: _cmsis_reverse_conv_features(p, t, aligned_reversal=True)),
            ),
        ),
    )
}


def route(function: str, p: Params, tier: str) -> str:
    """The formula key a call of ``function`` runs."""
    if function in ("arm_convolve_wrapper_s8",):
        return conv_route(p)
    if function == "arm_transpose_conv_wrapper_s8":
        return transpose_route(p)
    return function


PUBLIC = ("arm_convolve_wrapper_s8", "arm_transpose_conv_wrapper_s8", *FORMULAS)


__all__ = ["FAMILY", "FORMULAS", "PUBLIC", "conv_route", "route", "transpose_route"]

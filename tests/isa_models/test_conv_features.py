"""Conv-family features: loop-trip counts checked against slow, obvious walks of the C loops."""

from __future__ import annotations

import pytest

from isa_models.cortex_m import conv, depthwise
from isa_models.cortex_m.conv import sweep as conv_sweep
from isa_models.cortex_m.conv.kernels_c import head_tail, im2col_features, mve_column_calls, mve_direct
from isa_models.cortex_m.depthwise import sweep as depthwise_sweep
from isa_models.shapes import BLOCKING, dims, tile


def _walk_im2col(p, tier, up=(0, 0)):
    """kernels_c's im2col_pair / im2col_s16 / im2col_s8, pixel by pixel (conv_s8_internal.h's
    rs_conv_row, rs_conv_row_pixel, rs_conv_row_contiguous)."""
    i, f, o = dims(p, "input_dims"), dims(p, "filter_dims"), dims(p, "output_dims")
    s, pad, d = tile(p, "stride", 1), tile(p, "padding"), tile(p, "dilation", 1)
    groups = i.c // f.c
    lanes = BLOCKING[tier].reduce_lanes

    def inside(pos, size, u):
        return pos >= 0 and (pos >> u) < size and (pos & u) == 0

    runs = valid = padded = scalar = split = 0
    for _g in range(groups):
        for oy in range(o.h):
            for ox in range(o.w):
                y0, x0 = oy * s.h - pad.h, ox * s.w - pad.w
                contiguous = groups == 1 and d.w == 1 and up[1] == 0 and x0 >= 0 and x0 + f.w <= i.w
                for ky in range(f.h):
                    start = ky * f.w * f.c
                    row = inside(y0 + ky * d.h, i.h, up[0])
                    if not row or contiguous:
                        pieces = [(start, f.w * f.c, row)]
                    else:
                        split += f.w
                        pieces = [
                            (start + kx * f.c, f.c, inside(x0 + kx * d.w, i.w, up[1])) for kx in range(f.w)
                        ]
                    for e, n, ok in pieces:
                        runs += 1
                        valid += n if ok else 0
                        padded += 0 if ok else n
                        scalar += head_tail(e, n, lanes)
    return {
        "im2col_runs": runs,
        "im2col": valid,
        "im2col_pad": padded,
        "im2col_scalar": scalar,
        "split_taps": split,
    }


@pytest.mark.parametrize("tier", ["scalar", "dsp"])
@pytest.mark.parametrize(
    "p",
    [
        conv_sweep._shape((1, 7, 6, 6), (4, 3, 3), stride=(2, 1)),
        conv_sweep._shape((1, 8, 8, 8), (6, 3, 2), groups=2),
        conv_sweep._shape((1, 9, 9, 5), (3, 3, 3), dilation=(2, 2)),
    ],
)
def test_kernels_c_im2col_matches_a_walk_of_its_loops(p, tier):
    i, f, o = dims(p, "input_dims"), dims(p, "filter_dims"), dims(p, "output_dims")
    s, pad, d = tile(p, "stride", 1), tile(p, "padding"), tile(p, "dilation", 1)
    got = im2col_features(i, f, o, s, pad, d, i.c // f.c, tier)
    assert {k: got[k] for k in _walk_im2col(p, tier)} == _walk_im2col(p, tier)


def test_kernels_c_reverse_route_reads_the_upscaled_zeros_as_padding():
    p = conv_sweep._transpose_shape((1, 3, 4, 20), (8, 3, 3), (2, 2))
    i, f, o = dims(p, "input_dims"), dims(p, "filter_dims"), dims(p, "output_dims")
    pad = tile(p, "padding")
    q = {**p, "padding.h": f.h - 1 - pad.h, "padding.w": f.w - 1 - pad.w, "stride.h": 1, "stride.w": 1}
    walked = _walk_im2col(q, "dsp", up=(1, 1))
    one = tile(q, "stride", 1)
    got = im2col_features(i, f, o, one, tile(q, "padding"), one, 1, "dsp", (1, 1))
    assert {k: got[k] for k in walked} == walked
    # a quarter of the upscaled taps read input: every valid element is one of the real input's
    assert got["im2col"] + got["im2col_pad"] == o.h * o.w * f.h * f.w * f.c
    features = conv.FORMULAS["arm_transpose_conv_wrapper_s8/reverse_conv"].features_for("kernels_c")(p, "dsp")
    assert features["rev_copy_calls"] == f.n * f.h * f.w  # one memcpy of C_IN per channel and tap


def test_mve_column_calls_flush_when_the_slots_are_full():
    import numpy as np

    four = np.zeros((2, 5), dtype=bool)  # 10 im2col'd columns, 4 slots
    assert mve_column_calls(four, 4) == [4, 4, 2]
    edge = np.array([[False, True, True, True, True, True, True, False]])
    assert mve_column_calls(edge, 1) == [4, 4]
    assert mve_column_calls(np.array([[False, False, True]]), 1) == [1, 2]
    p = conv_sweep._shape((1, 1, 12, 8), (8, 1, 3), padding=(0, 1))
    i, f, o = dims(p, "input_dims"), dims(p, "filter_dims"), dims(p, "output_dims")
    direct = mve_direct(i, f, o, tile(p, "stride", 1), tile(p, "padding"), tile(p, "dilation", 1), 1)
    assert direct.tolist() == [[False] + [True] * 10 + [False]]


def test_cmsis_1_x_n_on_mve_is_three_mat_mults_and_two_im2col_rows():
    p = conv_sweep._shape((1, 1, 12, 8), (8, 1, 3), padding=(0, 1))
    f = conv.FORMULAS["arm_convolve_1_x_n_s8"].features(p, "mve")
    assert f["mat_calls"] == 3 and f["set_calls"] == 2 and f["copy_calls"] == 2
    # 1 + 10 + 1 columns: two full 4-column passes in the middle, the rest one column at a time
    assert f["passes"] == 2 * 8 and f["odd_passes"] == (2 + 1 + 1) * 8
    assert conv.FORMULAS["arm_convolve_1_x_n_s8"].features(p, "dsp") == conv.FORMULAS[
        "arm_convolve_s8"
    ].features(p, "dsp")


def test_cmsis_conv_im2col_loops_per_filter_row_and_upscaled_tap():
    p = conv_sweep._shape((1, 6, 6, 4), (8, 3, 2))
    f = conv.FORMULAS["arm_convolve_s8"].features(p, "dsp")
    assert f["tap_rows"] == 6 * 6 * 3
    r = conv_sweep._transpose_shape((1, 4, 4, 24), (8, 3, 3), (2, 2))
    g = conv.FORMULAS["arm_transpose_conv_wrapper_s8/reverse_conv"].features(r, "mve")
    # upscaled 8x8, padding 1: per output row the filter rows at even upscaled rows inside the input
    kept = sum(1 for oy in range(8) for ky in range(3) if 0 <= oy - 1 + ky < 8 and (oy - 1 + ky) % 2 == 0)
    assert g["upscaled_taps"] == kept * 8 * 3
    assert g["column_set_calls"] == 64  # one whole-column memset per output pixel


def test_depthwise_generic_loops_per_pixel_and_input_channel():
    p = depthwise_sweep._shape((1, 8, 8, 6), (3, 3), ch_mult=3, dilation=(2, 2))
    f = depthwise.FORMULAS["arm_depthwise_conv_s8"].features(p, "dsp")
    assert f["in_channels"] == 64 * 6 and f["outputs"] == 64 * 18


def test_kernels_c_depthwise_mve_ch1_blocks_and_tails():
    p = depthwise_sweep._shape(
        (1, 6, 6, 13), (3, 1), dilation=(2, 1)
    )  # 13 = one 8-lane block + 5 in two 4-lane passes
    f = depthwise.FORMULAS["arm_depthwise_conv_s8"].features_for("kernels_c")(p, "mve")
    taps = f["tap_blocks"]  # one 8-lane block per valid (pixel, tap)
    assert f["blocks8"] == 36 and f["tail_passes"] == 72 and f["tail_taps"] == 2 * taps
    assert f["row_blocks"] == taps  # KW = 1: a row is a tap

"""Cost adds; the NNLS fit recovers known coefficients; features follow the kernels' loops."""

from __future__ import annotations

import numpy as np
import pytest

from isa_models.cortex_m import conv, depthwise, elementwise, layout
from isa_models.cortex_m.conv import sweep as conv_sweep
from isa_models.cortex_m.depthwise import sweep as depthwise_sweep
from isa_models.cost import NO_ESTIMATE, Cost
from isa_models.fit import fit_coefficients, nnls, relative_errors
from isa_models.shapes import ceil_div, valid_taps


def test_cost_adds_fields_and_memories():
    a = Cost(macs=10, instructions=5.0, cycles=7.0, bytes_read={"sram": 3}, bytes_written={"sram": 1})
    b = Cost(macs=2, instructions=1.0, cycles=2.0, bytes_read={"flash": 4, "sram": 1})
    total = a + b
    assert (total.macs, total.instructions, total.cycles) == (12, 6.0, 9.0)
    assert dict(total.bytes_read) == {"sram": 4, "flash": 4}
    assert dict(total.bytes_written) == {"sram": 1}
    assert sum([a, b]) == total
    assert total.cycles_per_mac == pytest.approx(0.75)


def test_no_estimate_poisons_a_sum():
    assert (Cost(cycles=5.0) + NO_ESTIMATE).estimated is False
    assert (Cost(cycles=5.0) + Cost(cycles=1.0)).estimated is True


def test_scaled_repeats_everything():
    c = Cost(macs=3, instructions=2.0, cycles=4.0, bytes_read={"sram": 5}).scaled(3)
    assert (c.macs, c.instructions, c.cycles, dict(c.bytes_read)) == (9, 6.0, 12.0, {"sram": 15})


def test_nnls_matches_an_exact_nonnegative_solution():
    rng = np.random.default_rng(0)
    a = rng.random((30, 5))
    x = np.array([1.5, 0.0, 3.0, 0.25, 0.0])
    np.testing.assert_allclose(nnls(a, a @ x), x, atol=1e-9)


def test_nnls_clamps_at_zero_where_least_squares_goes_negative():
    a = np.array([[1.0, 1.0], [1.0, 2.0], [1.0, 3.0]])
    b = np.array([3.0, 2.0, 1.0])  # unconstrained slope is -1
    x = nnls(a, b)
    assert (x >= 0).all() and x[1] == 0.0
    assert x[0] == pytest.approx(2.0)


def test_nnls_path_is_the_same_under_rounding_noise():
    """Two collinear columns (one a multiple of the other, as features such as ``im2col_cols``
    and ``tap_rows`` are on a sweep): whichever way rounding tips their gradients, the lower
    index carries the cost and the other stays 0 — the same coefficients on every machine."""
    rng = np.random.default_rng(3)
    rows = [{"call": 1.0, "cols": float(n), "rows": 3.0 * n} for n in rng.integers(1, 500, 12)]
    measured = [200.0 + 7.0 * r["cols"] for r in rows]
    for _ in range(50):
        noisy = [y * (1 + 4e-16 * rng.standard_normal()) for y in measured]
        got = fit_coefficients(["call", "cols", "rows"], rows, noisy)
        assert got["rows"] == 0.0
        assert got["call"] == pytest.approx(200.0, rel=1e-9) and got["cols"] == pytest.approx(7.0, rel=1e-9)
    swapped = fit_coefficients(
        ["call", "a_rows", "cols"], [{**r, "a_rows": r["rows"]} for r in rows], measured
    )
    assert swapped["cols"] == 0.0 and swapped["a_rows"] == pytest.approx(7.0 / 3.0, rel=1e-9)


def test_fit_recovers_coefficients_of_a_linear_cost():
    truth = {"call": 500.0, "outputs": 12.0, "blocks": 3.0}
    rows = [
        {"call": 1.0, "outputs": float(o), "blocks": float(b)}
        for o, b in ((10, 40), (50, 7), (300, 900), (8, 8))
    ]
    ys = [sum(truth[k] * r[k] for k in truth) for r in rows]
    got = fit_coefficients(list(truth), rows, ys)
    for k, v in truth.items():
        assert got[k] == pytest.approx(v, rel=1e-6)
    assert max(abs(e) for e in relative_errors(got, rows, ys)) < 1e-9


def test_valid_taps_counts_taps_inside_the_input():
    # 5 wide, 3-tap filter, SAME padding 1, stride 1: edges lose one tap each
    assert valid_taps(5, 5, 3, 1, 1) == 3 * 5 - 2
    assert valid_taps(4, 2, 2, 2, 0) == 4
    assert valid_taps(6, 3, 3, 2, 0, dilation=2) == sum(
        1 for o in range(3) for k in range(3) if 0 <= o * 2 + 2 * k < 6
    )


def test_conv_routes_like_kernels_py():
    p = conv_sweep._shape((1, 8, 8, 16), (32, 1, 1))
    assert conv.route("arm_convolve_wrapper_s8", p, "dsp") == "arm_convolve_1x1_s8_fast"
    p = conv_sweep._shape((1, 8, 8, 16), (32, 1, 1), stride=(2, 2))
    assert conv.route("arm_convolve_wrapper_s8", p, "dsp") == "arm_convolve_1x1_s8"
    p = conv_sweep._shape((1, 1, 32, 8), (8, 1, 3), padding=(0, 0))
    assert conv.route("arm_convolve_wrapper_s8", p, "mve") == "arm_convolve_1_x_n_s8"
    p = conv_sweep._shape((1, 8, 8, 3), (8, 3, 3))
    assert conv.route("arm_convolve_wrapper_s8", p, "scalar") == "arm_convolve_s8"


def test_depthwise_routes_per_tier():
    p = depthwise_sweep._shape((1, 10, 10, 16), (3, 3))
    assert depthwise.route(depthwise.PUBLIC_WRAPPER, p, "dsp") == "arm_depthwise_conv_3x3_s8"
    assert depthwise.route(depthwise.PUBLIC_WRAPPER, p, "mve") == "arm_depthwise_conv_s8_opt"
    one = depthwise_sweep._shape((1, 10, 10, 1), (3, 3), ch_mult=16)
    assert depthwise.route(depthwise.PUBLIC_WRAPPER, one, "mve") == depthwise.TO_CONV
    assert depthwise.route(depthwise.PUBLIC_WRAPPER, one, "dsp") == "arm_depthwise_conv_s8"


def test_conv_features_count_blocks_and_tails():
    p = conv_sweep._shape((1, 3, 3, 5), (3, 1, 1))  # 9 pixels, 3 channels, K = 5
    f = conv.FORMULAS["arm_convolve_1x1_s8_fast"].features(p, "dsp")
    # DSP: 4 full pixel pairs x 1 channel pair x 1 K-block, an odd pixel and an odd channel
    assert f["blocks"] == 4 and f["odd_columns"] == 1 * 3 * 5 and f["odd_channels"] == 4 * 1 * 5
    assert f["k_tail"] == 4 * 2 * 3 * 1
    m = conv.FORMULAS["arm_convolve_1x1_s8_fast"].features(p, "mve")
    # MVE: 2 full 4-pixel passes x 3 channels x ceil(5/16), then the odd pixel's 1 x 1 passes
    assert m["blocks"] == 2 * 3 * 1 and m["k_tail"] == 0 and m["odd_passes"] == 1 * 3


def test_pad_counts_the_memcpy_memset_calls_cmsis_nn_makes():
    pad = layout.FORMULAS["arm_pad_s8"]
    p = layout.pad_params((1, 4, 5, 3), (0, 1, 0, 0), (0, 1, 0, 0))
    f = pad.features(p, "dsp")
    # CMSIS-NN: a copy per input row (C unpadded), memsets for the N/H/W pads even when empty
    assert f["rows"] == 4 and f["pixel_runs"] == 0 and f["copy_calls"] == 4
    assert f["set_calls"] == 2 + 2 + 2 * 4 and f["set_empty"] == 2 + 2 * 4
    assert pad.features_for("kernels_c")(p, "dsp")["set_calls"] == 2  # kernels_c skips empty fills
    f = pad.features(layout.pad_params((1, 4, 5, 3), (0, 0, 0, 1), (0, 0, 0, 0)), "dsp")
    assert f["pixel_runs"] == 20 and f["copy_calls"] == 20
    mve = pad.features(p, "mve")  # one 16-byte predicated loop per call
    assert mve["copy_blocks"] == 4 * 1 and mve["set_blocks"] == 2 * ceil_div(15, 16)


def test_transpose_routes_by_rank_in_cmsis_nn_and_merges_axes_in_kernels_c():
    t = layout.FORMULAS["arm_transpose_s8"]
    same = layout.transpose_params((2, 3, 4), (0, 1, 2))
    assert t.features_for("kernels_c")(same, "dsp")["rows"] == 1  # one merged copy
    cm = t.features(same, "dsp")  # CMSIS-NN: the 3-D element nest, unit-stride rows of 4
    assert cm["unit_planes_3d"] == 2 and cm["unit_rows_3d"] == 6 and cm["unit_bytes_3d"] == 24
    assert (
        cm["planes_3d"] == 0 and cm["unit_nest_3d"] == 1 and cm["route_3d"] == 1
    )  # the unit version's own loops
    swap = layout.transpose_params((2, 3, 4), (0, 2, 1))
    assert t.features_for("kernels_c")(swap, "dsp")["gathers"] == 2 * 4 * (3 // 4)
    assert t.features(swap, "dsp")["elements_3d"] == 24
    two = layout.transpose_params((5, 20), (1, 0))
    assert t.features(two, "mve")["gathers"] == 20 * ceil_div(5, 8)
    assert t.features(two, "dsp")["rows_2d"] == 5


def test_minmax_runs_follow_the_broadcast():
    p = elementwise.minmax_params((1, 4, 4, 8), (1, 1, 1, 8))
    run = elementwise._runs(p)
    assert run == (8, 16, False)
    p = elementwise.minmax_params((1, 4, 4, 8), (1, 4, 4, 1))
    assert elementwise._runs(p) == (8, 16, True)

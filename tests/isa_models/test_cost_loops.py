"""Loop-trip features that depend on the code a core links: newlib's ARMv6-M memcpy, GCC's
transpose row versions, CMSIS-NN's MVE vector sum, kernels_c's MVE softmax and pooling."""

from __future__ import annotations

import itertools

import pytest

from isa_models.cortex_m import fully_connected, layout, pooling, softmax
from isa_models.cortex_m.calibration import load
from isa_models.cortex_m.formulas import describe_call, estimate_call
from isa_models.shapes import ByteOps


def _copy(n: int, dst: int = 0, src: int = 0, arch: str | None = "armv6-m") -> dict[str, float]:
    ops = ByteOps("scalar", skip_empty=False, arch=arch)
    ops.copy(n, dst, src)
    return {k: v for k, v in ops.f.items() if v}


def test_armv6m_memcpy_is_a_byte_loop_unless_long_and_word_aligned():
    assert _copy(15) == {"copy_calls": 1, "copy_bytes": 15}  # under 16 bytes: bytes even when aligned
    assert _copy(40, dst=2) == {"copy_calls": 1, "copy_bytes": 40}  # misaligned: every byte
    assert _copy(40, src=1) == {"copy_calls": 1, "copy_bytes": 40}
    assert _copy(16) == {"copy_calls": 1, "copy_long": 1, "copy_blocks": 1}
    assert _copy(39) == {"copy_calls": 1, "copy_long": 1, "copy_blocks": 2, "copy_step_loops": 1, "copy_steps": 1,
                         "copy_bytes": 3}  # fmt: skip
    # the Thumb-2 memcpy (every other core) is unchanged: 64-byte blocks, quads, steps, a tail
    assert _copy(39, arch=None) == {"copy_calls": 1, "copy_quads": 2, "copy_steps": 1, "copy_tails": 1}
    assert _copy(39, arch="armv7-m") == _copy(39, arch=None)


def _fill(n: int, dst: int) -> dict[str, float]:
    ops = ByteOps("scalar", skip_empty=False, arch="armv6-m")
    ops.fill(n, dst)
    return {k: v for k, v in ops.f.items() if v}


def test_armv6m_memset_counts_head_and_tail_bytes_apart():
    assert _fill(23, 1) == {"set_calls": 1, "set_head": 3, "set_words": 1, "set_long": 1, "set_blocks": 1,
                            "set_step_loops": 1, "set_steps": 1}  # fmt: skip
    assert _fill(2, 1) == {"set_calls": 1, "set_head": 2}  # the head loop runs out first
    assert _fill(3, 0) == {"set_calls": 1, "set_bytes": 3}  # aligned, under a word: the tail loop
    assert _fill(0, 1) == {"set_calls": 1, "set_empty": 1}


def test_the_core_picks_the_memcpy_the_features_count():
    pad = layout.FORMULAS["arm_pad_s8"]
    p = layout.pad_params((1, 4, 5, 3), (0, 1, 0, 0), (0, 1, 0, 0))  # rows of 15 bytes at offsets 15·k
    m0 = pad.features_for(None, "cortex-m0plus")(p, "scalar")
    assert m0["copy_bytes"] == 4 * 15 and "copy_short" not in m0
    assert pad.features_for(None, "cortex-m3")(p, "scalar") == pad.features(p, "scalar")
    call = describe_call("arm_pad_s8", p, "scalar", "cmsis-nn", "cortex-m0plus")
    assert call.features == m0
    fit = load("cortex-m0plus", "cmsis-nn").functions["arm_pad_s8"]
    cost = estimate_call("arm_pad_s8", p, "cortex-m0plus", library="cmsis-nn")
    assert cost.cycles == pytest.approx(fit.evaluate("cycles", m0))


def _brute_aligned_rows(shape: tuple[int, ...], perm: tuple[int, ...]) -> int:
    """Rows of the element nest whose input and output offsets are both word aligned, by walking
    every row (the transpose writes output[perm-ordered index] = input[index])."""
    out = [shape[a] for a in perm]
    aligned = 0
    for index in itertools.product(*(range(e) for e in shape[:-1])):
        full = (*index, 0)
        src = 0
        for k, i in enumerate(full):
            src = src * shape[k] + i
        dst = 0
        for k, a in enumerate(perm):
            dst = dst * out[k] + full[a]
        aligned += src % 4 == 0 and dst % 4 == 0
    return aligned


@pytest.mark.parametrize(
    "shape, perm",
    [
        ((2, 3, 4, 9), (0, 2, 1, 3)),
        ((3, 5, 6), (1, 0, 2)),
        ((6, 2, 5, 20), (1, 0, 2, 3)),
        ((4, 3, 2, 33), (2, 0, 1, 3)),
    ],
)
def test_armv6m_transpose_rows_take_the_word_version_only_when_aligned(shape, perm):
    assert layout._aligned_rows(list(shape), list(perm)) == _brute_aligned_rows(shape, perm)
    t = layout.FORMULAS["arm_transpose_s8"]
    f = t.features_for(None, "cortex-m0plus")(layout.transpose_params(shape, perm), "scalar")
    rank = "_3d" if len(shape) == 3 else ""
    run, rows = shape[-1], len(list(itertools.product(*(range(e) for e in shape[:-1]))))
    long = _brute_aligned_rows(shape, perm) if run >= 8 else 0
    assert f["unit_rows" + rank] == rows and f["unit_long" + rank] == long
    assert f["unit_words" + rank] == long * (run // 4) and f["unit_tails" + rank] == long * (run % 4)
    assert f["unit_bytes" + rank] == (rows - long) * run


@pytest.mark.parametrize(
    "run, expected",
    [
        (7, {"unit_bytes": 7}),  # up to 7 bytes: the byte loop
        (15, {"unit_long": 1, "unit_words": 1, "unit_tails": 7}),
        (16, {"unit_long": 1, "unit_vector_rows": 1, "unit_vectors": 1}),
        (
            20,
            {"unit_long": 1, "unit_vector_rows": 1, "unit_vectors": 1, "unit_short_rest": 1, "unit_tails": 4},
        ),
        (27, {"unit_long": 1, "unit_vector_rows": 1, "unit_vectors": 1, "unit_words": 1, "unit_tails": 3}),
    ],
)
def test_mve_transpose_rows_follow_gccs_mve_version(run, expected):
    t = layout.FORMULAS["arm_transpose_s8"]
    f = t.features(layout.transpose_params((1, 2, 1, run), (0, 2, 1, 3)), "mve")
    nest = (
        "unit_nest",
        "unit_planes",
        "unit_batches",
    )  # the unit version's outer loops (one plane of 2 rows)
    rows = {k: v for k, v in f.items() if k.startswith("unit_") and k not in nest and v}
    assert rows == {"unit_rows": 2, **{k: 2 * v for k, v in expected.items()}}
    assert (f["unit_nest"], f["unit_planes"], f["unit_batches"]) == (1, 2, 1)


def test_kernels_c_transpose_copies_have_their_real_alignment():
    """Output runs of 6 bytes at output offsets 6·k come from input offsets i0·6 + i1·30: the
    copies' alignment classes are counted from both, as a row-by-row walk counts them."""
    t = layout.FORMULAS["arm_transpose_s8"]
    p = layout.transpose_params((3, 5, 6), (1, 0, 2))
    for core, arch in (("cortex-m0plus", "armv6-m"), ("cortex-m3", None)):
        f = t.features_for("kernels_c", core)(p, "scalar")
        walk = ByteOps("scalar", skip_empty=False, arch=arch)
        for k, (i1, i0) in enumerate(itertools.product(range(5), range(3))):
            walk.copy(6, 6 * k, 6 * i1 + 30 * i0)
        assert {k: v for k, v in f.items() if k.startswith("copy")} == {
            k: v for k, v in walk.f.items() if k.startswith("copy")
        }
        assert f["rows"] == 15 and f["gathers"] == 0
    gather = t.features_for("kernels_c")(layout.transpose_params((6, 4, 2, 2), (1, 3, 0, 2)), "scalar")
    assert gather["gather_bytes"] == 48 * 2 and gather["gather_long"] == 0  # 2-byte runs skip the 4-pass loop
    long = t.features_for("kernels_c")(layout.transpose_params((16, 32), (1, 0)), "scalar")
    assert long["gathers"] == 32 * 4 and long["gather_long"] == 32


def test_cmsis_nn_mve_vector_sum_takes_rows_five_at_a_time():
    vs = fully_connected.FORMULAS["arm_vector_sum_s8"]
    p = {"vector_rows": 8, "vector_cols": 128}
    f = vs.features(p, "mve")
    # one pass of five rows (8 trips of 16 columns), then three single rows in their own loop
    assert (f["five_passes"], f["five_blocks"], f["five_loop"]) == (1, 8, 1)
    assert (f["tail_rows"], f["tail_blocks"], f["tail_loop"]) == (3, 3 * 8, 1)
    assert "blocks" not in f and f["null_bias"] == 0
    assert vs.features({**p, "vector_rows": 10, "bias_is_null": 1}, "mve")["tail_loop"] == 0
    assert vs.features({**p, "bias_is_null": 1}, "mve")["null_bias"] == 1  # a memset, not a memcpy
    tflm = vs.features_for("cmsis-nn-tflm")(p, "mve")  # the features its -O2 file was fitted with
    assert tflm["blocks"] == 8 * 8 and tflm["tail_blocks"] == 3 * 8 and "five_passes" not in tflm
    assert "tail_blocks" not in vs.features_for("kernels_c")(p, "mve")
    assert "tail_blocks" not in vs.features(p, "dsp")


def test_cmsis_nn_mve_convolve_blocks_columns_per_image_and_group():
    """arm_convolve_s8 on MVE restarts its 4-column sets in each group of each image."""
    from isa_models.cortex_m import conv

    cs = conv.FORMULAS["arm_convolve_s8"]
    # 2 images x 3 groups of 2x1 output pixels, 2 output channels a group, K = 3
    p = {"input_dims.n": 2, "input_dims.h": 5, "input_dims.w": 1, "input_dims.c": 3,
         "filter_dims.n": 6, "filter_dims.h": 3, "filter_dims.w": 1, "filter_dims.c": 1,
         "output_dims.n": 2, "output_dims.h": 2, "output_dims.w": 1, "output_dims.c": 6,
         "stride.h": 3, "stride.w": 2, "padding.h": 1, "padding.w": 0, "dilation.h": 2, "dilation.w": 2}  # fmt: skip
    f = cs.features(p, "mve")
    assert f["passes"] == 0 and f["blocks"] == 0  # no image has 4 columns
    assert f["mat_calls"] == 2 * 3 and f["odd_passes"] == 2 * 3 * 2 * 2  # 2 leftover columns x 2 channels
    assert f["odd_requant"] == 0 and f["odd_tail_requant"] == 2 * 3 * 2 * 2  # C mod 4 = 2, one by one
    tflm = cs.features_for("cmsis-nn-tflm")(p, "mve")  # blocked over all N*OH*OW columns
    assert tflm["passes"] == 3 * 2 and "mat_calls" not in tflm


def test_cmsis_nn_mve_depthwise_to_conv_transposes_the_filter():
    from isa_models.cortex_m import depthwise

    to_conv = depthwise.FORMULAS[depthwise.TO_CONV]
    p = {"ch_mult": 6, "input_dims.n": 1, "input_dims.h": 4, "input_dims.w": 4, "input_dims.c": 1,
         "filter_dims.n": 1, "filter_dims.h": 2, "filter_dims.w": 3, "filter_dims.c": 6,
         "output_dims.n": 1, "output_dims.h": 3, "output_dims.w": 2, "output_dims.c": 6,
         "stride.h": 1, "stride.w": 1, "padding.h": 0, "padding.w": 0, "dilation.h": 1, "dilation.w": 1}  # fmt: skip
    f = to_conv.features(p, "mve")
    assert (f["filter_rows"], f["filter_elements"]) == (2 * 3, 2 * 3 * 6)  # [1,2,3,6] -> [6,2,3,1]
    assert f["mat_calls"] == 2  # then arm_convolve_s8 over 6 columns: one set of 4, one of 2
    assert "filter_rows" not in to_conv.features_for("cmsis-nn-tflm")(p, "mve")


def test_kernels_c_mve_softmax_counts_exponential_vectors():
    sm = softmax.FORMULAS["arm_softmax_s8"].features_for("kernels_c")
    f = sm({"num_rows": 1, "row_size": 10}, "mve")
    assert f["exp_vectors"] == 3 and f["table_vectors"] == 0 and "exp_elements" not in f
    t = sm({"num_rows": 4, "row_size": 64}, "mve")  # 256 elements > 249 diffs: tabulated
    assert t["table_vectors"] == 4 * 16 and t["exp_vectors"] == 0 and t["table"] == 249
    assert (
        softmax.FORMULAS["arm_softmax_s8"].features({"num_rows": 1, "row_size": 10}, "mve")["exp_elements"]
        == 10
    )


def test_kernels_c_mve_pooling_counts_output_rows_and_the_two_pass_kinds():
    p = pooling.pool_params((1, 12, 6, 10), (2, 3), (2, 3))  # 6 x 2 outputs, C = 10
    avg = pooling.FORMULAS["arm_avgpool_s8"].features_for("kernels_c")(p, "mve")  # 8 int16 lanes
    assert (avg["out_rows"], avg["pixels"], avg["full_pixels"], avg["tail_passes"]) == (6, 12, 12, 12)
    assert avg["passes"] == 24 and avg["pass_taps"] == 72 and avg["tail_taps"] == 72
    mx = pooling.FORMULAS["arm_max_pool_s8"].features_for("kernels_c")(p, "mve")  # 16 lanes: tail only
    assert mx["full_pixels"] == 0 and mx["tail_passes"] == 12 and mx["passes"] == 12


def test_mve_only_sweep_shapes_reach_the_mve_files_only():
    """cmsis_nn_tier_sweep("mve") shapes (a one-channel depthwise is a convolution on MVE only) are
    measured for CMSIS-NN's MVE files, never for its scalar/DSP files or the other libraries."""
    from isa_models.cortex_m import formulas
    from isa_models.cortex_m.depthwise.sweep import cmsis_nn_tier_sweep

    extra = cmsis_nn_tier_sweep("mve")
    mve = formulas.sweep("depthwise", "cmsis-nn", "mve")
    assert mve[-len(extra) :] == extra
    for library, tier in (
        ("cmsis-nn", "dsp"),
        ("cmsis-nn", None),
        ("kernels_c", "mve"),
        ("cmsis-nn-tflm", "mve"),
    ):
        assert not any(s in formulas.sweep("depthwise", library, tier) for s in extra)
    assert {formulas.route(f, s, "mve") for f, s in extra} == {"arm_depthwise_conv_wrapper_s8/to_conv"}

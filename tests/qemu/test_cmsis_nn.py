"""The real CMSIS-NN under ``--kernels-dir``: built by its own CMake project for all seven core
models (cortex-m0plus's ARMv6-M build on the M3 board, cortex-m85's on the M55 board) and run
against the golden model. Runs when ``CMSIS_NN_DIR`` names a CMSIS-NN checkout (for example
``CMSIS_NN_DIR=~/src/CMSIS-NN``); CI without one keeps the kernels_c stand-in
(test_conformance_cli.py) and skips this module.

Every failure must belong to a defect class of CMSIS-NN itself that docs/numerics.md records
("CMSIS-NN defects"), each recognised by a predicate on the case; anything else fails the test.
The classes' hand-worked minimal cases must still fail on the library (so the record stays true
for the checkout tested: a fixed defect fails ``test_hand_worked_defects_reproduce``, strictly).

Seed: REFSIM_CMSIS_NN_SEED (default 0); cases per function: REFSIM_CMSIS_NN_CASES (default 4).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from isa_models.cortex_m.cores import CORE_MODELS
from kernels_py.conv import select_convolve_kernel
from kernels_py.conv_transpose import transpose_conv_s8_get_buffer_size
from kernels_py.elementwise import cmsis_minmax_broadcast_is_exact
from kernels_py.types import Activation, ConvParams, Dims, Tile, TransposeConvParams
from refsim.conformance import vectors as vec
from refsim.qemu import conformance as qc
from refsim.qemu.timing_cli import model_target

CMSIS_NN_DIR = os.environ.get("CMSIS_NN_DIR")
SEED = int(os.environ.get("REFSIM_CMSIS_NN_SEED", "0"))
CASES = int(os.environ.get("REFSIM_CMSIS_NN_CASES", "4"))

pytestmark = pytest.mark.skipif(
    not CMSIS_NN_DIR, reason="CMSIS_NN_DIR does not name a CMSIS-NN checkout (Include/, Source/)"
)

Params = Mapping[str, Any]
CONVOLVE = ("arm_convolve_s8", "arm_convolve_wrapper_s8")

#: The core models whose CMSIS-NN build takes the ARM_MATH_MVEI paths (the M85 runs the M55's code).
MVE_CORES = tuple(name for name, model in CORE_MODELS.items() if model.tier == "mve")


def _mve(core: str) -> bool:
    return core in MVE_CORES


def _grouped_null_bias(core: str, function: str, params: Params) -> bool:
    """arm_convolve_s8 advances a NULL bias pointer per group (bias_data_ptr += output_ch_per_group),
    so groups after the first read bias from address 4 * k: every core."""
    grouped = params.get("input_dims.c") != params.get("filter_dims.c")
    return function in CONVOLVE and bool(params.get("bias_is_null")) and grouped


#: CMSIS-NN's channel block of the MVE depthwise kernel (arm_nnsupportfunctions.h CH_IN_BLOCK_MVE).
CH_IN_BLOCK_MVE = 124


def _mve_depthwise_opt_null_bias(core: str, function: str, params: Params) -> bool:
    """arm_depthwise_conv_s8_opt's MVE path hands ``bias + block_offset`` to
    arm_nn_depthwise_conv_nt_t_s8 for every block of 124 channels, so with a NULL bias the blocks
    after the first (C > 124) test a non-NULL pointer and read their bias from address 4·124·k;
    only groups of four output pixels go that way (the leftover pixels test ``bias`` itself)."""
    routed = function == "arm_depthwise_conv_s8_opt" or (
        function == "arm_depthwise_conv_wrapper_s8" and params.get("route_mve") == "arm_depthwise_conv_s8_opt"
    )
    pixels = params.get("output_dims.h", 0) * params.get("output_dims.w", 0)
    return (
        _mve(core)
        and routed
        and bool(params.get("bias_is_null"))
        and params.get("input_dims.c", 0) > CH_IN_BLOCK_MVE
        and pixels >= 4
    )


def _routed_1xn(function: str, params: Params) -> bool:
    """The case runs arm_convolve_1_x_n_s8 (directly, or the wrapper's 1xN route)."""
    return function == "arm_convolve_1_x_n_s8" or params.get("category") == "arm_convolve_1_x_n_s8"


def _mve_1xn_padding_refused(core: str, function: str, params: Params) -> bool:
    """arm_convolve_1_x_n_s8's MVE path returns ARM_CMSIS_NN_FAILURE unless padding.w splits the
    total padding as TFLM's SAME does (``pad_x * 2 + total_pad % 2 == total_pad``, C's ``%``); the
    wrapper routes every 1xN shape to it (arm_nn_is_convolve_1_x_n looks at no padding)."""
    if not _mve(core) or not _routed_1xn(function, params):
        return False
    total_pad = (
        (params["output_dims.w"] - 1) * params["stride.w"] + params["filter_dims.w"] - params["input_dims.w"]
    )
    return 2 * params["padding.w"] + int(math.fmod(total_pad, 2)) != total_pad


def _mve_1xn_right_edge(core: str, function: str, params: Params) -> bool:
    """arm_convolve_1_x_n_s8's MVE path fills the last window with kernel_x - 1 input columns and
    padding: wrong unless that window overhangs the input by exactly one column (or no window does)."""
    if not _mve(core) or not _routed_1xn(function, params):
        return False
    total_pad = (
        (params["output_dims.w"] - 1) * params["stride.w"] + params["filter_dims.w"] - params["input_dims.w"]
    )
    return total_pad - params["padding.w"] not in (0, 1)


def _minmax_row_walk(core: str, function: str, params: Params) -> bool:
    """arm_maximum_s8 / arm_minimum_s8 V.1.0.0 walk the broadcast input with the wrong pointer when
    one input has H >= 2, W = C = 1 and the other W >= 2 (kernels_py.elementwise
    .cmsis_minmax_broadcast_is_exact tells which shape pairs): every core."""
    if function not in ("arm_maximum_s8", "arm_minimum_s8"):
        return False
    dims_1 = tuple(params[f"input_1_dims.{k}"] for k in "nhwc")
    dims_2 = tuple(params[f"input_2_dims.{k}"] for k in "nhwc")
    return not cmsis_minmax_broadcast_is_exact(dims_1, dims_2)


def _transpose_2d_permutation(core: str, function: str, params: Params) -> bool:
    """arm_transpose_s8's 2-D branch ignores permutations and always transposes: every core."""
    return (
        function == "arm_transpose_s8" and params["num_dims"] == 2 and list(params["permutations"]) == [0, 1]
    )


def _mve_transpose_4d_identity(core: str, function: str, params: Params) -> bool:
    """arm_transpose_s8's MVE build sends every 4-D permutation starting [0, 1] to its
    swap-W-and-C path (arm_transpose_s8_nhcw), so the identity [0, 1, 2, 3] swaps W and C (a
    change only when both exceed 1)."""
    return (
        _mve(core)
        and function == "arm_transpose_s8"
        and params["num_dims"] == 4
        and list(params["permutations"]) == [0, 1, 2, 3]
        and params["input_dims.w"] > 1
        and params["input_dims.c"] > 1
    )


def _transpose_conv_buffer_short(core: str, function: str, params: Params) -> bool:
    """arm_transpose_conv_s8_get_buffer_size promises fewer bytes than arm_transpose_conv_s8's rolling
    row buffer uses (it sizes the width with MAX(filter w, stride.h), the kernel with stride.w, and
    for reverse-conv-able shapes returns arm_convolve_s8's size though arm_transpose_conv_s8 itself
    never reverses): the kernel writes past ctx->buf, on every core."""
    rows = function == "arm_transpose_conv_s8" or params.get("category") == "arm_transpose_conv_s8"
    if function not in ("arm_transpose_conv_s8", "arm_transpose_conv_wrapper_s8") or not rows:
        return False
    d = {s: Dims(*(params[f"{s}.{k}"] for k in "nhwc")) for s in ("input_dims", "filter_dims", "output_dims")}
    tc = TransposeConvParams(
        input_offset=params["input_offset"],
        output_offset=params["output_offset"],
        stride=Tile(w=params["stride.w"], h=params["stride.h"]),
        padding=Tile(w=params["padding.w"], h=params["padding.h"]),
        padding_offsets=Tile(w=params["padding_offsets.w"], h=params["padding_offsets.h"]),
        activation=Activation(params["activation.min"], params["activation.max"]),
    )
    promised = transpose_conv_s8_get_buffer_size(
        tc, d["input_dims"], d["filter_dims"], d["output_dims"], CORE_MODELS[core].tier
    )
    i, f, o, s = d["input_dims"], d["filter_dims"], d["output_dims"], tc.stride
    used = ((i.w - 1) * s.w + max(f.w, s.w)) * o.c * max(f.h, s.h) * 4
    return used > promised


def _transpose_conv_ramp(core: str, function: str, params: Params) -> bool:
    """arm_transpose_conv_s8 before V.2.0.1 (v7.0.0) flushes stride_y rows per input row even while
    pad_y is not yet consumed: wrong rows when padding.h is not a multiple of stride.h."""
    transposed = function in ("arm_transpose_conv_s8", "arm_transpose_conv_wrapper_s8")
    return transposed and params["padding.h"] % params["stride.h"] != 0


def _transpose_conv_tall_padding(core: str, function: str, params: Params) -> bool:
    """arm_transpose_conv_s8 writes its leftover rows as if MAX(0, input_h·stride_h - pad_h) were
    input_h·stride_h - pad_h: when padding.h > input_h·stride_h no row became final inside the
    input loop, and the leftover output rows are read from the wrong slots of the row buffer."""
    transposed = function in ("arm_transpose_conv_s8", "arm_transpose_conv_wrapper_s8")
    rows = function == "arm_transpose_conv_s8" or params.get("category") == "arm_transpose_conv_s8"
    return transposed and rows and params["padding.h"] > params["input_dims.h"] * params["stride.h"]


#: Defect classes of CMSIS-NN (docs/numerics.md), each with the predicate that recognises a case.
KNOWN_DEFECTS: dict[str, Callable[[str, str, Params], bool]] = {
    "grouped conv with NULL bias reads bias from address 4k": _grouped_null_bias,
    "MVE 1xN conv refuses padding not split as SAME (ARM_CMSIS_NN_FAILURE)": _mve_1xn_padding_refused,
    "MVE 1xN conv right edge": _mve_1xn_right_edge,
    "MVE depthwise opt with NULL bias reads bias from address 4*124*k": _mve_depthwise_opt_null_bias,
    "maximum/minimum broadcast row walk": _minmax_row_walk,
    "2-D transpose ignores its permutation": _transpose_2d_permutation,
    "MVE 4-D transpose: the identity permutation swaps W and C": _mve_transpose_4d_identity,
    "transpose conv ctx buffer smaller than the kernel uses": _transpose_conv_buffer_short,
    "transpose conv rows when padding.h % stride.h != 0 (fixed in V.2.0.1)": _transpose_conv_ramp,
    "transpose conv leftover rows when padding.h > input_h * stride.h": _transpose_conv_tall_padding,
}


def _defect_of(core: str, case: vec.Case) -> str | None:
    for name, applies in KNOWN_DEFECTS.items():
        if applies(core, case.function, case.params):
            return name
    return None


@pytest.fixture(scope="module")
def library() -> Path:
    assert CMSIS_NN_DIR is not None
    path = Path(CMSIS_NN_DIR).expanduser()
    if not (path / "Include" / "arm_nnfunctions.h").is_file():
        pytest.fail(f"CMSIS_NN_DIR={CMSIS_NN_DIR}: no Include/arm_nnfunctions.h there")
    return path


@pytest.fixture(scope="module")
def cases() -> list[vec.Case]:
    return qc.generate_cases(qc.kernel_functions(), CASES, SEED)


@pytest.mark.parametrize("core", list(CORE_MODELS))
def test_cmsis_nn_matches_the_golden_model_but_for_its_known_defects(
    core: str, library: Path, cases: list[vec.Case], toolchain: None
) -> None:
    target = model_target(None, core, library)
    report = qc.run_cases(target, cases)
    assert report.kernels, f"{library} on {core}: no function ran"
    # What the library lacks is skipped by name, never a build failure.
    for function, reason in report.skip_reason.items():
        assert reason == f"{library} does not define it", (function, reason)
    unexplained = [
        f"{f.case.label}: {f.message}" for f in report.failures if _defect_of(core, f.case) is None
    ]
    assert not unexplained, f"seed {SEED} on {core}:\n" + "\n".join(unexplained)


def _conv_case(
    name: str, function: str, in_w: int, c_in: int, k_w: int, c_k: int, c_out: int, stride_w: int, pad_w: int
) -> vec.Case:
    """A 1-row convolution whose requantisation is the identity (multiplier 2^30, shift 1), input
    column x holding x + 1 in every channel, filter all ones: each output is its window's sum."""
    out_w = (in_w + 2 * pad_w - k_w) // stride_w + 1
    params: dict[str, Any] = {
        "input_offset": 0,
        "output_offset": 0,
        "activation.min": -128,
        "activation.max": 127,
        "bias_is_null": True,
        "stride.h": 1,
        "stride.w": stride_w,
        "padding.h": 0,
        "padding.w": pad_w,
        "dilation.h": 1,
        "dilation.w": 1,
        "function": function,
    }
    shapes = {
        "input_dims": (1, 1, in_w, c_in),
        "filter_dims": (c_out, 1, k_w, c_k),
        "output_dims": (1, 1, out_w, c_out),
        "bias_dims": (1, 1, 1, c_out),
    }
    for struct, shape in shapes.items():
        params.update({f"{struct}.{k}": v for k, v in zip("nhwc", shape, strict=True)})
    geometry = ConvParams(stride=Tile(w=stride_w, h=1), padding=Tile(w=pad_w, h=0))
    dims = (Dims(*shapes["input_dims"]), Dims(*shapes["filter_dims"]), Dims(*shapes["output_dims"]))
    params["category"] = select_convolve_kernel(geometry, *dims)  # the wrapper's route
    arrays = {
        "input": np.repeat(np.arange(1, in_w + 1), c_in).astype(np.int8).reshape(shapes["input_dims"]),
        "filter": np.ones(shapes["filter_dims"], np.int8),
        "bias": np.zeros(c_out, np.int32),
        "multiplier": np.full(c_out, 1 << 30, np.int32),
        "shift": np.ones(c_out, np.int32),
    }
    case = vec.Case(function, name, arrays, params, np.zeros(0, np.int8))
    case.output = vec.run_case(case)
    return case


def _minmax_case(name: str, function: str, dims_1: tuple[int, ...], dims_2: tuple[int, ...]) -> vec.Case:
    """Broadcast maximum/minimum of two ramps (-50, -47, ... and -40, -35, ...)."""
    params: dict[str, Any] = {"function": function}
    shapes = {
        "input_1_dims": dims_1,
        "input_2_dims": dims_2,
        "output_dims": np.broadcast_shapes(dims_1, dims_2),
    }
    for struct, shape in shapes.items():
        params.update({f"{struct}.{k}": int(v) for k, v in zip("nhwc", shape, strict=True)})
    arrays = {
        "input_1": (np.arange(np.prod(dims_1)) * 3 - 50).astype(np.int8).reshape(dims_1),
        "input_2": (np.arange(np.prod(dims_2)) * 5 - 40).astype(np.int8).reshape(dims_2),
    }
    case = vec.Case(function, name, arrays, params, np.zeros(0, np.int8))
    case.output = vec.run_case(case)
    return case


def _transpose_2d_identity() -> vec.Case:
    params: dict[str, Any] = {"function": "arm_transpose_s8", "num_dims": 2, "permutations": [0, 1]}
    for struct in ("input_dims", "output_dims"):
        params.update({f"{struct}.{k}": v for k, v in zip("nhwc", (2, 3, 1, 1), strict=True)})
    arrays = {"input": np.arange(6, dtype=np.int8).reshape(2, 3)}
    case = vec.Case("arm_transpose_s8", "transpose_2d_identity", arrays, params, np.zeros(0, np.int8))
    case.output = vec.run_case(case)
    return case


def _transpose_4d_identity() -> vec.Case:
    params: dict[str, Any] = {"function": "arm_transpose_s8", "num_dims": 4, "permutations": [0, 1, 2, 3]}
    for struct in ("input_dims", "output_dims"):
        params.update({f"{struct}.{k}": v for k, v in zip("nhwc", (1, 1, 2, 3), strict=True)})
    arrays = {"input": np.arange(6, dtype=np.int8).reshape(1, 1, 2, 3)}
    case = vec.Case("arm_transpose_s8", "transpose_4d_identity", arrays, params, np.zeros(0, np.int8))
    case.output = vec.run_case(case)
    return case


def _transpose_conv_wide_stride() -> vec.Case:
    """Transpose conv of a 1x1x2x1 input [1, 2] by a 1x1 filter of one, bias 100, stride (1, 3):
    output 1x1x6x1 = [101, 100, 100, 102, 100, 100] (identity requantisation)."""
    function = "arm_transpose_conv_s8"
    params = dict(next(vec.generate_cases(function, 1, 0)).params)
    params.update(
        {
            "input_offset": 0,
            "output_offset": 0,
            "activation.min": -128,
            "activation.max": 127,
            "bias_is_null": False,
        }
    )
    params.update({"stride.h": 1, "stride.w": 3, "padding.h": 0, "padding.w": 0})
    params.update({"padding_offsets.h": 0, "padding_offsets.w": 0, "dilation.h": 1, "dilation.w": 1})
    shapes = {
        "input_dims": (1, 1, 2, 1),
        "filter_dims": (1, 1, 1, 1),
        "output_dims": (1, 1, 6, 1),
        "bias_dims": (1, 1, 1, 1),
    }
    for struct, shape in shapes.items():
        params.update({f"{struct}.{k}": v for k, v in zip("nhwc", shape, strict=True)})
    params["category"] = "arm_transpose_conv_s8"
    arrays = {
        "input": np.array([1, 2], np.int8).reshape(1, 1, 2, 1),
        "filter": np.ones((1, 1, 1, 1), np.int8),
        "bias": np.array([100], np.int32),
        "multiplier": np.array([1 << 30], np.int32),
        "shift": np.array([1], np.int32),
    }
    case = vec.Case(function, "transpose_conv_wide_stride", arrays, params, np.zeros(0, np.int8))
    case.output = vec.run_case(case)
    return case


def _transpose_conv_tall_padding_case() -> vec.Case:
    """Transpose conv of a 1x1x1x1 input [1] by a 5x1 filter holding 1..5 down its rows, stride 1,
    padding.h 2, bias 0, identity requantisation: the one output row sees filter row 2, so 3."""
    function = "arm_transpose_conv_s8"
    params = dict(next(vec.generate_cases(function, 1, 0)).params)
    params.update({"input_offset": 0, "output_offset": 0, "activation.min": -128, "activation.max": 127})
    params.update({"bias_is_null": False, "stride.h": 1, "stride.w": 1, "padding.h": 2, "padding.w": 0})
    params.update({"padding_offsets.h": 2, "padding_offsets.w": 0, "dilation.h": 1, "dilation.w": 1})
    shapes = {
        "input_dims": (1, 1, 1, 1),
        "filter_dims": (1, 5, 1, 1),
        "output_dims": (1, 1, 1, 1),
        "bias_dims": (1, 1, 1, 1),
    }
    for struct, shape in shapes.items():
        params.update({f"{struct}.{k}": v for k, v in zip("nhwc", shape, strict=True)})
    params["category"] = "arm_transpose_conv_s8"
    arrays = {
        "input": np.ones((1, 1, 1, 1), np.int8),
        "filter": np.arange(1, 6, dtype=np.int8).reshape(1, 5, 1, 1),
        "bias": np.zeros(1, np.int32),
        "multiplier": np.array([1 << 30], np.int32),
        "shift": np.array([1], np.int32),
    }
    case = vec.Case(function, "transpose_conv_tall_padding", arrays, params, np.zeros(0, np.int8))
    case.output = vec.run_case(case)
    return case


def _depthwise_null_bias_case() -> vec.Case:
    """Depthwise 1x1 over a 2x2 input of 128 channels all holding 1, filter of ones, identity
    requantisation (multiplier 2^30, shift 1), bias NULL: every output is 1 (512 ones)."""
    function = "arm_depthwise_conv_s8_opt"
    params = dict(next(vec.generate_cases(function, 1, 0)).params)
    params.update({"input_offset": 0, "output_offset": 0, "activation.min": -128, "activation.max": 127})
    params.update({"bias_is_null": True, "ch_mult": 1, "padding_mode": "explicit"})
    params.update(
        {"stride.h": 1, "stride.w": 1, "padding.h": 0, "padding.w": 0, "dilation.h": 1, "dilation.w": 1}
    )
    channels = CH_IN_BLOCK_MVE + 4
    shapes = {
        "input_dims": (1, 2, 2, channels),
        "filter_dims": (1, 1, 1, channels),
        "output_dims": (1, 2, 2, channels),
        "bias_dims": (1, 1, 1, channels),
    }
    for struct, shape in shapes.items():
        params.update({f"{struct}.{k}": v for k, v in zip("nhwc", shape, strict=True)})
    params["macs"] = 4 * channels
    arrays = {
        "input": np.ones(shapes["input_dims"], np.int8),
        "filter": np.ones(shapes["filter_dims"], np.int8),
        "bias": np.zeros(channels, np.int32),
        "multiplier": np.full(channels, 1 << 30, np.int32),
        "shift": np.ones(channels, np.int32),
    }
    case = vec.Case(function, "depthwise_opt_null_bias", arrays, params, np.zeros(0, np.int8))
    case.output = vec.run_case(case)
    return case


@functools.cache
def hand_worked() -> dict[str, tuple[vec.Case, list[int], tuple[str, ...]]]:
    """The hand-worked cases of docs/numerics.md: name -> (case, its output by hand, cores it fails on)."""
    mve, every = MVE_CORES, tuple(CORE_MODELS)
    return {
        "grouped_null_bias": (_conv_case("grouped_null_bias", "arm_convolve_s8", 1, 2, 1, 1, 2, 1, 0), [1, 1], every),
        "1xn_unused_tail": (_conv_case("1xn_unused_tail", "arm_convolve_1_x_n_s8", 3, 4, 2, 4, 1, 3, 0), [12], mve),
        "1xn_left_pad_refused": (_conv_case("1xn_left_pad_refused", "arm_convolve_wrapper_s8", 3, 2, 2, 2, 1, 2, 1), [2, 10], mve),
        "1xn_two_right_pads": (_conv_case("1xn_two_right_pads", "arm_convolve_1_x_n_s8", 4, 4, 5, 4, 1, 3, 2), [24, 36], mve),
        "max_h_against_w": (_minmax_case("max_h_against_w", "arm_maximum_s8", (1, 3, 1, 1), (1, 1, 3, 1)), [-40, -35, -30] * 3, every),
        "min_h_against_w": (_minmax_case("min_h_against_w", "arm_minimum_s8", (1, 3, 1, 1), (1, 1, 3, 1)), [-50] * 3 + [-47] * 3 + [-44] * 3, every),
        "transpose_2d_identity": (_transpose_2d_identity(), [0, 1, 2, 3, 4, 5], every),
        "transpose_4d_identity": (_transpose_4d_identity(), [0, 1, 2, 3, 4, 5], mve),
        "transpose_conv_wide_stride": (_transpose_conv_wide_stride(), [101, 100, 100, 102, 100, 100], every),
        "transpose_conv_tall_padding": (_transpose_conv_tall_padding_case(), [3], every),
        "depthwise_opt_null_bias": (_depthwise_null_bias_case(), [1] * 4 * (CH_IN_BLOCK_MVE + 4), mve),
    }  # fmt: skip


@pytest.mark.parametrize("core", list(CORE_MODELS))
def test_hand_worked_defects_reproduce(core: str, library: Path, toolchain: None) -> None:
    target = model_target(None, core, library)
    cases = [case for case, _, _ in hand_worked().values()]
    report = qc.run_cases(target, cases)
    failed = {f.case.case_id for f in report.failures}
    for name, (case, expected, cores) in hand_worked().items():
        assert case.output.reshape(-1).tolist() == expected, name  # the hand arithmetic
        assert (name in failed) == (core in cores), f"{name} on {core}: failed={name in failed}"
        assert _defect_of(core, case) is not None or core not in cores, name

"""The convolution family of kernels_c (src/conv_s8*.c), bit-exact against kernels_py.conv and
kernels_py.conv_transpose on every core and tier.

Cases, each run through the public function and every tier variant the core has:

- refsim's conformance generators for all seven kernels (``REFSIM_QEMU_CONV_CASES`` each);
- layers large enough for the full-vector loops (depth past 16 and 32, odd remainders): plain,
  strided, dilated and grouped convs, every wrapper route, including the grouped 1x1- and
  1xN-shaped convs the wrapper's size routing under-sizes, outputs reaching past the input,
  NULL bias, and both transpose-conv routes (reverse conv with upscaling, gather);
- the shapes the kernels reject with ``ARM_CMSIS_NN_ARG_ERROR`` (kernels_py rejects the same
  ones) and missing scratch (``ctx.size`` 0);
- every buffer-size function, per tier, against kernels_py.conv's and conv_transpose's
  ``*_get_buffer_size``.

One QEMU start per core for the whole module. Seed: ``REFSIM_QEMU_SEED``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os

import numpy as np
import pytest

from kernels_py import conv, conv_transpose
from kernels_py.errors import KernelArgumentError
from kernels_py.types import ConvParams, Dims, Tile, TransposeConvParams
from refsim.conformance import registry
from refsim.conformance.registry import put_dims, random_multiplier
from refsim.qemu import CORES, Case
from tests.qemu.differential import (
    ARM_CMSIS_NN_ARG_ERROR,
    Golden,
    assert_no_failures,
    generated,
    golden,
    harness_case,
    rng_for,
    run_on_core,
)

CONV = "arm_convolve_s8"
WRAPPER = "arm_convolve_wrapper_s8"
FAST_1X1 = "arm_convolve_1x1_s8_fast"
CONV_1X1 = "arm_convolve_1x1_s8"
CONV_1XN = "arm_convolve_1_x_n_s8"
TRANSPOSE = "arm_transpose_conv_s8"
TRANSPOSE_WRAPPER = "arm_transpose_conv_wrapper_s8"
KERNELS = (CONV, WRAPPER, FAST_1X1, CONV_1X1, CONV_1XN, TRANSPOSE, TRANSPOSE_WRAPPER)

#: Buffer-size functions: harness name -> (kernels_py size function of the params, transpose?).
SIZES = {
    "arm_convolve_wrapper_s8_get_buffer_size": False,
    "arm_convolve_s8_get_buffer_size": False,
    "arm_convolve_1_x_n_s8_get_buffer_size": False,
    "arm_convolve_1x1_s8_fast_get_buffer_size": False,
    "arm_transpose_conv_s8_get_buffer_size": True,
    "arm_transpose_conv_s8_get_reverse_conv_buffer_size": True,
}
TIERS = ("scalar", "dsp", "mve")

CASES_PER_KERNEL = int(os.environ.get("REFSIM_QEMU_CONV_CASES", "40"))


# --- hand-written layers ---------------------------------------------------------------------------


def _layer(
    function: str,
    rng: np.random.Generator,
    x_shape: tuple[int, int, int, int],
    f_shape: tuple[int, int, int, int],
    out_hw: tuple[int, int] | None = None,
    stride: tuple[int, int] = (1, 1),
    padding: tuple[int, int] = (0, 0),
    dilation: tuple[int, int] = (1, 1),
    *,
    bias_is_null: bool = False,
    input_offset: int | None = None,
) -> tuple[dict, dict]:
    """A case in conformance-vector form (``(h, w)`` tuples); the output size defaults to what
    kernels_py's conv_output_size gives (transpose convs: TFLite's SAME/VALID size)."""
    out_c, k_h, k_w, filter_c = f_shape
    transpose = function.startswith("arm_transpose")
    if out_hw is None:
        if transpose:
            out_hw = tuple(
                s * st + max(k - st, 0) - 2 * p
                for s, k, st, p in zip(x_shape[1:3], (k_h, k_w), stride, padding, strict=True)
            )
        else:
            out_hw = tuple(
                conv.conv_output_size(s, k, st, p, d)
                for s, k, st, p, d in zip(x_shape[1:3], (k_h, k_w), stride, padding, dilation, strict=True)
            )
    depth = k_h * k_w * filter_c
    typical = 6 - round(math.log2(12_000 * math.sqrt(depth)))
    lo = int(rng.integers(-128, 0))
    params = {
        "function": function,
        "input_offset": int(rng.integers(-127, 129)) if input_offset is None else input_offset,
        "output_offset": int(rng.integers(-128, 128)),
        "activation.min": lo,
        "activation.max": int(rng.integers(lo + 64, 128)),
        "bias_is_null": bias_is_null,
    }
    for name, tile in (("stride", stride), ("padding", padding), ("dilation", dilation)):
        params[f"{name}.h"], params[f"{name}.w"] = (int(v) for v in tile)
    if transpose:
        params["padding_offsets.h"] = params["padding_offsets.w"] = 0
    put_dims(params, "input_dims", x_shape)
    put_dims(params, "filter_dims", f_shape)
    put_dims(params, "output_dims", (x_shape[0], *out_hw, out_c))
    put_dims(params, "bias_dims", (out_c,))
    arrays = {
        "input": rng.integers(-128, 128, x_shape).astype(np.int8),
        "filter": rng.integers(-128, 128, f_shape).astype(np.int8),
        "bias": (np.zeros(out_c) if bias_is_null else rng.integers(-50_000, 50_000, out_c)).astype(np.int32),
        "multiplier": random_multiplier(rng, out_c),
        "shift": np.clip(typical + rng.integers(-1, 2, out_c), -31, 30).astype(np.int32),
    }
    return arrays, params


#: (label, function, x_shape, f_shape, keyword arguments of _layer)
LAYERS = (
    ("3x3 same, depth 288", CONV, (1, 10, 10, 32), (24, 3, 3, 32), {"padding": (1, 1)}),
    (
        "3x3 stride 2 dilated",
        CONV,
        (2, 9, 11, 20),
        (13, 3, 3, 20),
        {"stride": (2, 2), "padding": (1, 0), "dilation": (1, 2)},
    ),
    ("4 groups of 8", CONV, (1, 8, 8, 32), (16, 3, 3, 8), {"padding": (1, 1)}),
    ("2 groups of 24, null bias", CONV, (1, 7, 6, 48), (10, 2, 2, 24), {"bias_is_null": True}),
    ("output past the input", CONV, (1, 5, 5, 12), (7, 3, 3, 12), {"out_hw": (6, 7), "padding": (1, 1)}),
    ("odd everything", CONV, (3, 5, 7, 19), (9, 2, 3, 19), {"stride": (1, 2), "padding": (1, 1)}),
    ("1x1 fast", WRAPPER, (1, 12, 12, 48), (20, 1, 1, 48), {}),
    ("1x1 stride 2", WRAPPER, (2, 9, 9, 36), (17, 1, 1, 36), {"stride": (2, 2)}),
    ("1xN same", WRAPPER, (2, 1, 40, 24), (12, 1, 5, 24), {"padding": (0, 2)}),
    ("1xN stride 2", WRAPPER, (1, 1, 33, 8), (6, 1, 4, 8), {"stride": (1, 2), "padding": (0, 1)}),
    ("grouped 1x1 (size 0)", WRAPPER, (1, 6, 6, 16), (10, 1, 1, 8), {}),
    ("grouped 1x1 stride 2 (size 0)", WRAPPER, (2, 7, 5, 18), (9, 1, 1, 6), {"stride": (2, 2)}),
    ("grouped 1xN (1xN size)", WRAPPER, (1, 1, 20, 16), (8, 1, 3, 4), {"padding": (0, 1)}),
    ("general 3x3", WRAPPER, (1, 9, 9, 17), (11, 3, 3, 17), {"padding": (1, 1)}),
    ("1x1 fast direct", FAST_1X1, (2, 6, 7, 33), (21, 1, 1, 33), {}),
    ("1x1 direct", CONV_1X1, (1, 11, 10, 40), (15, 1, 1, 40), {"stride": (3, 2)}),
    ("1x1 short output", CONV_1X1, (1, 9, 9, 8), (5, 1, 1, 8), {"stride": (2, 2), "out_hw": (3, 4)}),
    ("1xN direct", CONV_1XN, (1, 1, 50, 20), (9, 1, 7, 20), {"padding": (0, 3)}),
    ("1xN rows past the input", CONV_1XN, (1, 1, 12, 4), (3, 1, 3, 4), {"padding": (1, 1)}),
    (
        "reverse conv stride 2",
        TRANSPOSE_WRAPPER,
        (1, 5, 5, 24),
        (16, 3, 3, 24),
        {"stride": (2, 2), "padding": (1, 1)},
    ),
    ("reverse conv stride 1", TRANSPOSE_WRAPPER, (2, 4, 3, 20), (8, 5, 5, 20), {"padding": (2, 2)}),
    (
        "reverse conv strides 2, 1",
        TRANSPOSE_WRAPPER,
        (1, 3, 6, 17),
        (5, 4, 2, 17),
        {"stride": (2, 1), "padding": (1, 0)},
    ),
    (
        "gather stride 3",
        TRANSPOSE_WRAPPER,
        (1, 4, 6, 8),
        (12, 4, 4, 8),
        {"stride": (3, 3), "padding": (1, 0)},
    ),
    ("gather depth 40", TRANSPOSE, (1, 4, 4, 40), (9, 3, 3, 40), {"stride": (2, 2), "padding": (1, 1)}),
    ("gather stride 1, null bias", TRANSPOSE, (2, 3, 5, 20), (7, 3, 2, 20), {"bias_is_null": True}),
)


def _layers() -> list[Golden]:
    rng = rng_for("conv layers")
    out = []
    for label, function, x_shape, f_shape, kwargs in LAYERS:
        arrays, params = _layer(function, rng, x_shape, f_shape, **kwargs)
        out.append(golden(function, arrays, params, label))
    return out


# --- what the kernels reject ------------------------------------------------------------------------


#: (label, function, x_shape, f_shape, keyword arguments of _layer): kernels_py rejects each too.
REJECTED = (
    ("C_IN not a multiple of the filter depth", CONV, (1, 4, 4, 6), (4, 1, 1, 4), {}),
    ("groups not dividing C_OUT", CONV, (1, 4, 4, 8), (3, 1, 1, 4), {}),
    ("input_offset past 128", CONV, (1, 4, 4, 4), (4, 3, 3, 4), {"input_offset": 129}),
    ("1x1 fast with padding", FAST_1X1, (1, 4, 4, 8), (4, 1, 1, 8), {"padding": (1, 1), "out_hw": (4, 4)}),
    ("1x1 fast with stride 2", FAST_1X1, (1, 4, 4, 8), (4, 1, 1, 8), {"stride": (2, 2)}),
    ("1x1 fast with a 3x3 filter", FAST_1X1, (1, 4, 4, 8), (4, 3, 3, 8), {"padding": (1, 1)}),
    ("1x1 fast grouped", FAST_1X1, (1, 4, 4, 8), (4, 1, 1, 4), {}),
    ("1x1 fast output != input", FAST_1X1, (1, 4, 4, 8), (4, 1, 1, 8), {"out_hw": (3, 4)}),
    ("1x1 with padding", CONV_1X1, (1, 4, 4, 8), (4, 1, 1, 8), {"stride": (2, 2), "padding": (1, 0)}),
    ("1x1 output past the input", CONV_1X1, (1, 5, 5, 8), (4, 1, 1, 8), {"stride": (2, 2), "out_hw": (4, 3)}),
    ("1xN input height 2", CONV_1XN, (1, 2, 8, 4), (4, 1, 3, 4), {}),
    ("1xN stride.w * C_IN % 4", CONV_1XN, (1, 1, 8, 3), (4, 1, 3, 3), {}),
    ("1xN dilation.w 2", CONV_1XN, (1, 1, 9, 4), (4, 1, 3, 4), {"dilation": (1, 2)}),
    ("1xN grouped", CONV_1XN, (1, 1, 8, 8), (4, 1, 3, 4), {}),
    ("wrapper 1x1 fast route, output != input", WRAPPER, (1, 4, 4, 8), (4, 1, 1, 8), {"out_hw": (5, 4)}),
    ("transpose dilation 2", TRANSPOSE, (1, 3, 3, 4), (4, 3, 3, 4), {"dilation": (2, 2), "out_hw": (5, 5)}),
    (
        "transpose padding past kernel - 1",
        TRANSPOSE,
        (1, 3, 3, 4),
        (4, 2, 2, 4),
        {"padding": (2, 0), "out_hw": (2, 4)},
    ),
    (
        "transpose output too large",
        TRANSPOSE,
        (1, 3, 3, 4),
        (4, 3, 3, 4),
        {"stride": (2, 2), "out_hw": (8, 7)},
    ),
    (
        "reverse route dilation 2",
        TRANSPOSE_WRAPPER,
        (1, 3, 3, 20),
        (4, 3, 3, 20),
        {"dilation": (2, 2), "out_hw": (5, 5)},
    ),
)

#: Missing scratch: CMSIS-NN's own ARG_ERROR (nothing for kernels_py to say).
NO_BUFFER = (
    ("conv without a buffer", CONV, (1, 4, 4, 4), (4, 3, 3, 4), {"padding": (1, 1)}),
    ("1xN without a buffer", CONV_1XN, (1, 1, 8, 4), (4, 1, 3, 4), {"padding": (0, 1)}),
    ("wrapper general route without a buffer", WRAPPER, (1, 4, 4, 4), (4, 3, 3, 4), {}),
    ("transpose wrapper without a buffer", TRANSPOSE_WRAPPER, (1, 3, 3, 4), (4, 3, 3, 4), {"stride": (2, 2)}),
)


def _rejected() -> list[Golden]:
    rng = rng_for("conv rejected")
    out = []
    for label, function, x_shape, f_shape, kwargs in REJECTED:
        arrays, params = _layer(function, rng, x_shape, f_shape, **kwargs)
        out.append(Golden(label, harness_case(function, arrays, params), None, ARM_CMSIS_NN_ARG_ERROR))
    for label, function, x_shape, f_shape, kwargs in NO_BUFFER:
        arrays, params = _layer(function, rng, x_shape, f_shape, **kwargs)
        case = harness_case(function, arrays, params)
        case = dataclasses.replace(case, params={**case.params, "ctx.size": 0})
        out.append(Golden(label, case, None, ARM_CMSIS_NN_ARG_ERROR))
    return out


@pytest.mark.parametrize(("label", "function", "x_shape", "f_shape", "kwargs"), REJECTED)
def test_kernels_py_rejects_the_same_shapes(label, function, x_shape, f_shape, kwargs) -> None:
    arrays, params = _layer(function, rng_for("conv rejected " + label), x_shape, f_shape, **kwargs)
    with pytest.raises(KernelArgumentError):
        registry.get(function).run(arrays, params)


# --- buffer sizes ------------------------------------------------------------------------------------


def _shape_params(case: Case) -> dict:
    return {k: v for k, v in case.params.items() if k != "ctx.size"}


def _conv_args(p: dict):
    tile = lambda name: Tile(w=p[f"{name}.w"], h=p[f"{name}.h"])  # noqa: E731
    dims = lambda name: Dims(*(p[f"{name}.{k}"] for k in "nhwc"))  # noqa: E731
    conv_params = ConvParams(
        p["input_offset"], p["output_offset"], tile("stride"), tile("padding"), tile("dilation")
    )
    return conv_params, dims("input_dims"), dims("filter_dims"), dims("output_dims")


def expected_size(function: str, p: dict, isa: str) -> int:
    """kernels_py.conv's (or conv_transpose's) answer for one buffer-size function on one isa."""
    conv_params, i, f, o = _conv_args(p)
    if function == "arm_convolve_wrapper_s8_get_buffer_size":
        return conv.convolve_wrapper_s8_get_buffer_size(conv_params, i, f, o, isa)
    if function == "arm_convolve_s8_get_buffer_size":
        return conv.convolve_s8_get_buffer_size(i, f, isa)
    if function == "arm_convolve_1_x_n_s8_get_buffer_size":
        return conv.convolve_1_x_n_s8_get_buffer_size(conv_params, i, f, o, isa)
    if function == "arm_convolve_1x1_s8_fast_get_buffer_size":
        return conv.convolve_1x1_s8_fast_get_buffer_size(i, isa)
    tparams = TransposeConvParams(stride=conv_params.stride, padding=conv_params.padding)
    if function == "arm_transpose_conv_s8_get_buffer_size":
        return conv_transpose.transpose_conv_s8_get_buffer_size(tparams, i, f, o, isa)
    return conv_transpose.transpose_conv_s8_get_reverse_conv_buffer_size(tparams, i, f)


def _size_cases(kernel_goldens: list[Golden]) -> list[Golden]:
    """Every size function, as the public function ("default") and per tier, for the shapes of
    the kernel cases. Expected values depend on the core for "default", so they are checked in
    test_buffer_sizes_match_kernels_py rather than as golden outputs."""
    out = []
    seen = set()
    for g in kernel_goldens:
        transpose = g.case.function.startswith("arm_transpose")
        p = _shape_params(g.case)
        key = (transpose, tuple(sorted(p.items())))
        if key in seen:
            continue
        seen.add(key)
        for function, for_transpose in SIZES.items():
            if for_transpose != transpose:
                continue
            case = Case(function, p, {})
            out.append(Golden(g.label, case, None, variants=("default", *TIERS), agree=False))
    return out


# --- the batch ---------------------------------------------------------------------------------------


@functools.cache
def goldens() -> tuple[Golden, ...]:
    kernels = [g for name in KERNELS for g in generated(name, CASES_PER_KERNEL)] + _layers()
    return (*kernels, *_rejected(), *_size_cases(kernels))


@pytest.fixture(scope="module", params=list(CORES))
def core_results(request: pytest.FixtureRequest, toolchain: None):
    return request.param, run_on_core(request.param, goldens())


@pytest.mark.parametrize("function", KERNELS)
def test_matches_kernels_py_on_every_tier(core_results, function: str) -> None:
    core, results = core_results
    assert_no_failures(core, results, function)


def test_buffer_sizes_match_kernels_py(core_results) -> None:
    core, results = core_results
    wrong = []
    checked = 0
    for g, variant, result in results:
        if g.case.function not in SIZES:
            continue
        isa = CORES[core].tier if variant == "default" else variant
        got = int(result.output.view("<i4")[0])
        want = expected_size(g.case.function, _shape_params(g.case), isa)
        checked += 1
        if got != want:
            wrong.append(f"{g.case.function} {variant} ({isa}) [{g.label}]: got {got}, expected {want}")
    assert checked > 0
    assert not wrong, f"{core}: {len(wrong)} of {checked} sizes wrong; " + "; ".join(wrong[:3])


def test_the_layers_take_every_route() -> None:
    """The hand-written layers reach each kernel the wrappers can pick (as kernels_py routes)."""
    routes = set()
    for _, function, x_shape, f_shape, kwargs in LAYERS:
        _, params = _layer(function, rng_for("routes"), x_shape, f_shape, **kwargs)
        conv_params, i, f, o = _conv_args(params)
        if function == WRAPPER:
            routes.add(conv.select_convolve_kernel(conv_params, i, f, o))
        if function == TRANSPOSE_WRAPPER:
            tparams = TransposeConvParams(stride=conv_params.stride)
            routes.add("transpose " + conv_transpose.select_transpose_conv_kernel(tparams, i))
    assert routes == {
        "arm_convolve_1x1_s8_fast",
        "arm_convolve_1x1_s8",
        "arm_convolve_1_x_n_s8",
        "arm_convolve_s8",
        "transpose arm_convolve_s8",
        "transpose arm_transpose_conv_s8",
    }

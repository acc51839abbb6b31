"""kernels_c depthwise convolution on every core and tier, bit-exact against kernels_py.

Cases: refsim's conformance generators for the four functions (``registry.get(fn).generate``,
golden outputs from ``.run``, i.e. kernels_py), hand-made layers on the edges the C code has
(the KWS 25x5x64 3x3 layer, channel counts around the 4/8-lane blocks and CMSIS-NN's 124-channel
MVE block, ch_mult, dilation, batches, accumulator wrap-around, extreme requantization), the
statuses CMSIS-NN returns (ARG_ERROR of _3x3/_opt, a NULL ctx->buf), and the buffer sizes of
every variant against kernels_py's ``*_get_buffer_size``. Each core runs all of them in ONE
QEMU start, through the public function and every tier variant it has.

Seed: REFSIM_QEMU_SEED (in every failure message); generated cases per function:
REFSIM_QEMU_DW_CASES.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import zlib

import numpy as np
import pytest

from kernels_py import depthwise as dw
from kernels_py.types import Dims, DwConvParams, Tile
from refsim.conformance import registry
from refsim.qemu import CORES
from tests.qemu.vectors import (
    ARG_ERROR,
    SEED,
    SIZE_VARIANTS,
    CoreBatches,
    VectorCase,
    assert_all_match,
    size_bytes,
    with_params,
)

CASES_PER_FUNCTION = int(os.environ.get("REFSIM_QEMU_DW_CASES", "60"))
KERNELS = (
    dw.ARM_DEPTHWISE_CONV_WRAPPER_S8,
    dw.ARM_DEPTHWISE_CONV_S8,
    dw.ARM_DEPTHWISE_CONV_3X3_S8,
    dw.ARM_DEPTHWISE_CONV_S8_OPT,
)
WRAPPER_SIZE = "arm_depthwise_conv_wrapper_s8_get_buffer_size"
OPT_SIZE = "arm_depthwise_conv_s8_opt_get_buffer_size"


def _rng(*key: object) -> np.random.Generator:
    return np.random.default_rng([SEED, zlib.crc32(repr(key).encode())])


# --- cases -------------------------------------------------------------------------------------


def _layer(
    name: str,
    function: str,
    *,
    hw: tuple[int, int],
    c: int,
    ch_mult: int = 1,
    k: tuple[int, int] = (3, 3),
    stride: tuple[int, int] = (1, 1),
    pad: tuple[int, int] = (1, 1),
    dilation: tuple[int, int] = (1, 1),
    n: int = 1,
    bias: str = "random",
    quant: str = "typical",
    golden: bool = True,
) -> VectorCase:
    """One depthwise call in conformance-vector form; output size from the padding given."""
    rng = _rng(name)
    (in_h, in_w), out_c = hw, c * ch_mult
    out_h = (in_h + 2 * pad[0] - dilation[0] * (k[0] - 1) - 1) // stride[0] + 1
    out_w = (in_w + 2 * pad[1] - dilation[1] * (k[1] - 1) - 1) // stride[1] + 1
    multiplier = rng.integers(1 << 30, (1 << 31) - 1, out_c).astype(np.int32)
    shift = rng.integers(-10, -6, out_c).astype(np.int32)
    bias_values = rng.integers(-(1 << 16), 1 << 16, out_c)
    if quant == "extreme":  # wide shifts both ways, multipliers at both ends
        shift = rng.choice([-31, -30, -17, -1, 0, 1, 12, 30], out_c).astype(np.int32)
        multiplier = rng.choice([1 << 30, (1 << 31) - 1, 1518500250], out_c).astype(np.int32)
    if bias == "near_max":  # the int32 accumulator wraps (as SMLAxx and MLA do)
        bias_values = np.full(out_c, (1 << 31) - 1000)
    arrays = {
        "input": rng.integers(-128, 128, (n, in_h, in_w, c)).astype(np.int8),
        "filter": rng.integers(-128, 128, (1, k[0], k[1], out_c)).astype(np.int8),
        "bias": bias_values.astype(np.int32),
        "multiplier": multiplier,
        "shift": shift,
    }
    params = {
        "function": function,
        "input_offset": int(rng.choice([128, -127, 0, 5])),
        "output_offset": int(rng.choice([-128, 127, 3])),
        "ch_mult": ch_mult,
        "stride.h": stride[0],
        "stride.w": stride[1],
        "padding.h": pad[0],
        "padding.w": pad[1],
        "dilation.h": dilation[0],
        "dilation.w": dilation[1],
        "activation.min": -128 if bias != "relu" else -20,
        "activation.max": 127,
        "bias_is_null": bias == "null",
    }
    for struct, shape in (
        ("input_dims", (n, in_h, in_w, c)),
        ("filter_dims", (1, k[0], k[1], out_c)),
        ("output_dims", (n, out_h, out_w, out_c)),
        ("bias_dims", (1, 1, 1, out_c)),
    ):
        params.update({f"{struct}.{d}": int(v) for d, v in zip("nhwc", shape, strict=True)})
    expected = registry.get(function).run(arrays, params) if golden else None
    return VectorCase(name, function, arrays, params, expected)


def _edge_cases() -> list[VectorCase]:
    kws = {"hw": (25, 5), "c": 64}
    cases = [_layer(f"kws_{fn}", fn, **kws) for fn in KERNELS]
    for c in (1, 3, 4, 7, 8, 9, 15, 16, 17, 124, 125, 131):  # the 4/8-lane blocks, CMSIS-NN's 124
        cases.append(_layer(f"channels_{c}", dw.ARM_DEPTHWISE_CONV_WRAPPER_S8, hw=(5, 4), c=c))
        cases.append(
            _layer(
                f"opt_5x5_channels_{c}", dw.ARM_DEPTHWISE_CONV_S8_OPT, hw=(6, 7), c=c, k=(5, 5), pad=(2, 2)
            )
        )
    for ch_mult, c in ((2, 3), (3, 5), (4, 6), (8, 1), (5, 1), (16, 1)):  # generic; c == 1: MVE to-conv
        cases.append(
            _layer(
                f"ch_mult_{ch_mult}_c_{c}", dw.ARM_DEPTHWISE_CONV_WRAPPER_S8, hw=(6, 5), c=c, ch_mult=ch_mult
            )
        )
    cases += [
        _layer("dilated", dw.ARM_DEPTHWISE_CONV_S8, hw=(9, 8), c=12, dilation=(2, 3), pad=(2, 3)),
        _layer("batches", dw.ARM_DEPTHWISE_CONV_WRAPPER_S8, hw=(5, 6), c=9, n=3),
        _layer("stride_2", dw.ARM_DEPTHWISE_CONV_S8_OPT, hw=(9, 11), c=20, stride=(2, 2), pad=(0, 1)),
        _layer("filter_1x7", dw.ARM_DEPTHWISE_CONV_S8_OPT, hw=(4, 12), c=10, k=(1, 7), pad=(0, 3)),
        _layer("filter_7x2", dw.ARM_DEPTHWISE_CONV_WRAPPER_S8, hw=(10, 3), c=18, k=(7, 2), pad=(3, 0)),
        _layer("3x3_no_pad", dw.ARM_DEPTHWISE_CONV_3X3_S8, hw=(7, 7), c=24, pad=(0, 0)),
        _layer("3x3_stride_2", dw.ARM_DEPTHWISE_CONV_3X3_S8, hw=(8, 9), c=16, stride=(2, 2), pad=(1, 1)),
        _layer("bias_null", dw.ARM_DEPTHWISE_CONV_WRAPPER_S8, hw=(5, 5), c=20, bias="null"),
        _layer("relu", dw.ARM_DEPTHWISE_CONV_WRAPPER_S8, hw=(5, 5), c=20, bias="relu"),
        _layer("accumulator_wraps", dw.ARM_DEPTHWISE_CONV_S8, hw=(5, 5), c=20, bias="near_max"),
        _layer("extreme_requant", dw.ARM_DEPTHWISE_CONV_WRAPPER_S8, hw=(6, 5), c=40, quant="extreme"),
        _layer("extreme_requant_multi", dw.ARM_DEPTHWISE_CONV_S8, hw=(4, 5), c=5, ch_mult=3, quant="extreme"),
    ]
    return cases


def _status_cases() -> list[VectorCase]:
    """What CMSIS-NN rejects, status for status; where a tier accepts, its output is checked too."""
    err = {"scalar": ARG_ERROR, "dsp": ARG_ERROR, "mve": ARG_ERROR}
    bad = [
        _layer("3x3_ch_mult_2", dw.ARM_DEPTHWISE_CONV_3X3_S8, hw=(5, 5), c=4, ch_mult=2, golden=False),
        _layer("3x3_filter_5x5", dw.ARM_DEPTHWISE_CONV_3X3_S8, hw=(6, 6), c=4, k=(5, 5), golden=False),
        _layer("3x3_padding_w_2", dw.ARM_DEPTHWISE_CONV_3X3_S8, hw=(6, 6), c=4, pad=(1, 2), golden=False),
        _layer("opt_ch_mult_2", dw.ARM_DEPTHWISE_CONV_S8_OPT, hw=(5, 5), c=4, ch_mult=2, golden=False),
    ]
    cases = [VectorCase(c.name, c.function, c.arrays, c.params, None, err) for c in bad]
    # A NULL ctx->buf: _opt's DSP/MVE builds need their buffer; the scalar build runs the generic kernel.
    null_ctx = {"ctx.size": 0}
    opt = _layer("opt_null_ctx", dw.ARM_DEPTHWISE_CONV_S8_OPT, hw=(6, 6), c=8, k=(5, 5), pad=(2, 2))
    opt = with_params(opt, opt.name, **null_ctx)
    cases.append(dataclasses.replace(opt, status={"dsp": ARG_ERROR, "mve": ARG_ERROR}))
    routes = (  # the wrapper's route decides: _opt (DSP, MVE) and to-conv (MVE) use the buffer
        ("wrapper_null_ctx_opt", {"k": (5, 5), "pad": (2, 2), "c": 8}, {"dsp": ARG_ERROR, "mve": ARG_ERROR}),
        ("wrapper_null_ctx_3x3", {"c": 8}, {"mve": ARG_ERROR}),
        ("wrapper_null_ctx_to_conv", {"c": 1, "ch_mult": 4}, {"mve": ARG_ERROR}),
        ("wrapper_null_ctx_generic", {"c": 3, "ch_mult": 2}, {}),
    )
    for name, shape, status in routes:
        case = _layer(name, dw.ARM_DEPTHWISE_CONV_WRAPPER_S8, hw=(6, 6), **shape)
        cases.append(dataclasses.replace(with_params(case, name, **null_ctx), status=status))
    return cases


def _route_args(p: dict) -> tuple[DwConvParams, Dims, Dims, Dims]:
    """kernels_py's view of a case's params: DwConvParams and the input, filter and output dims."""
    params = DwConvParams(
        ch_mult=p["ch_mult"],
        stride=Tile(p["stride.w"], p["stride.h"]),
        padding=Tile(p["padding.w"], p["padding.h"]),
        dilation=Tile(p["dilation.w"], p["dilation.h"]),
    )
    return params, *(
        Dims(*(p[f"{s}.{d}"] for d in "nhwc")) for s in ("input_dims", "filter_dims", "output_dims")
    )


def _size_cases(shapes: list[VectorCase]) -> list[VectorCase]:
    """Every sizer variant against kernels_py's size for that tier."""
    cases = []
    for case in shapes:
        p = case.params
        params, *dims = _route_args(p)
        wrapper = {
            isa: size_bytes(dw.depthwise_conv_wrapper_s8_get_buffer_size(params, *dims, isa))
            for isa in dw.ISAS
        }
        opt = {
            isa: size_bytes(dw.depthwise_conv_s8_opt_get_buffer_size(dims[0], dims[1], isa))
            for isa in dw.ISAS
        }
        cases.append(VectorCase(f"size_{case.name}", WRAPPER_SIZE, {}, p, wrapper, variants=SIZE_VARIANTS))
        cases.append(VectorCase(f"opt_size_{case.name}", OPT_SIZE, {}, p, opt, variants=SIZE_VARIANTS))
    return cases


@functools.cache
def _generated(function: str) -> tuple[VectorCase, ...]:
    vector_function = registry.get(function)
    rng = _rng("generated", function)
    cases = []
    for i in range(CASES_PER_FUNCTION):
        arrays, params = vector_function.generate(rng)
        cases.append(
            VectorCase(f"{function}#{i}", function, arrays, params, vector_function.run(arrays, params))
        )
    return tuple(cases)


@functools.cache
def _all_cases() -> tuple[VectorCase, ...]:
    generated = [case for function in KERNELS for case in _generated(function)]
    edges = _edge_cases()
    wrapper_shapes = [c for c in generated + edges if c.function == dw.ARM_DEPTHWISE_CONV_WRAPPER_S8]
    return (*generated, *edges, *_status_cases(), *_size_cases(wrapper_shapes))


BATCHES = CoreBatches(_all_cases)


# --- tests -------------------------------------------------------------------------------------


def _outcomes(core: str, *functions: str) -> list:
    return [o for o in BATCHES.outcomes(core) if o.case.function in functions]


@pytest.mark.parametrize("core", list(CORES))
@pytest.mark.parametrize("function", KERNELS)
def test_depthwise_bit_exact_on_every_tier(function: str, core: str, toolchain: None) -> None:
    outcomes = [o for o in _outcomes(core, function) if not o.case.status]
    assert outcomes
    assert_all_match(core, outcomes)


@pytest.mark.parametrize("core", list(CORES))
def test_depthwise_status_codes(core: str, toolchain: None) -> None:
    outcomes = [o for o in _outcomes(core, *KERNELS) if o.case.status]
    assert len(outcomes) >= 9
    assert_all_match(core, outcomes)


@pytest.mark.parametrize("core", list(CORES))
def test_depthwise_buffer_sizes_match_kernels_py(core: str, toolchain: None) -> None:
    outcomes = _outcomes(core, WRAPPER_SIZE, OPT_SIZE)
    assert outcomes
    assert_all_match(core, outcomes)


def test_cases_cover_every_route() -> None:
    """The generated and edge cases reach every route of every build's wrapper."""
    routes = {
        (isa, dw.select_depthwise_kernel(*_route_args(c.params), isa))
        for c in _all_cases()
        if c.function == dw.ARM_DEPTHWISE_CONV_WRAPPER_S8
        for isa in dw.ISAS
    }
    assert routes >= {
        ("scalar", dw.ARM_DEPTHWISE_CONV_3X3_S8),
        ("dsp", dw.ARM_DEPTHWISE_CONV_S8_OPT),
        ("dsp", dw.ARM_DEPTHWISE_CONV_S8),
        ("mve", dw.ARM_DEPTHWISE_CONV_S8_OPT),
        ("mve", dw.ARM_CONVOLVE_WRAPPER_S8),
        ("mve", dw.ARM_DEPTHWISE_CONV_S8),
    }

"""kernels_c average and max pooling on every core and tier, bit-exact against kernels_py.

Cases: refsim's conformance generators (``registry.get(fn).generate``, golden outputs from
``.run``: kernels_py), hand-made windows on the edges the C code has (global pooling of the KWS
25x5x64 map, windows of 255 and 256 taps where the DSP/MVE sums leave int16 lanes, one-tap
windows, channel counts around the 4/8/16-lane blocks, saturated inputs, narrow activations,
batches for max pooling), the statuses CMSIS-NN returns (a window outside the input, a NULL
ctx->buf on DSP builds) and every variant of arm_avgpool_s8_get_buffer_size against kernels_py.
Each core runs all of them in ONE QEMU start, through the public function and every tier variant.

Seed: REFSIM_QEMU_SEED (in every failure message); generated cases per function:
REFSIM_QEMU_POOL_CASES.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import zlib

import numpy as np
import pytest

from kernels_py import pooling
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
)

CASES_PER_FUNCTION = int(os.environ.get("REFSIM_QEMU_POOL_CASES", "80"))
KERNELS = (pooling.ARM_AVGPOOL_S8, pooling.ARM_MAX_POOL_S8)
AVGPOOL_SIZE = "arm_avgpool_s8_get_buffer_size"


def _rng(*key: object) -> np.random.Generator:
    return np.random.default_rng([SEED, zlib.crc32(repr(key).encode())])


# --- cases -------------------------------------------------------------------------------------


def _pool(
    name: str,
    function: str,
    *,
    hw: tuple[int, int],
    c: int,
    k: tuple[int, int],
    stride: tuple[int, int] = (1, 1),
    pad: tuple[int, int] = (0, 0),
    n: int = 1,
    values: str = "random",
    activation: tuple[int, int] = (-128, 127),
    golden: bool = True,
) -> VectorCase:
    """One pooling call in conformance-vector form; output size from the padding given."""
    rng = _rng(name)
    (in_h, in_w), (k_h, k_w) = hw, k
    out_h = (in_h + 2 * pad[0] - k_h) // stride[0] + 1
    out_w = (in_w + 2 * pad[1] - k_w) // stride[1] + 1
    data = rng.integers(-128, 128, (n, in_h, in_w, c))
    if values in ("min", "max"):  # saturated sums: every int16 lane at its largest magnitude
        data[:] = -128 if values == "min" else 127
    params = {
        "function": function,
        "stride.h": stride[0],
        "stride.w": stride[1],
        "padding.h": pad[0],
        "padding.w": pad[1],
        "activation.min": activation[0],
        "activation.max": activation[1],
        "filter_dims.n": 1,
        "filter_dims.h": k_h,
        "filter_dims.w": k_w,
        "filter_dims.c": 1,
    }
    for struct, shape in (("input_dims", (n, in_h, in_w, c)), ("output_dims", (n, out_h, out_w, c))):
        params.update({f"{struct}.{d}": int(v) for d, v in zip("nhwc", shape, strict=True)})
    arrays = {"input": data.astype(np.int8)}
    expected = registry.get(function).run(arrays, params) if golden else None
    return VectorCase(name, function, arrays, params, expected)


def _edge_cases() -> list[VectorCase]:
    avg, mx = pooling.ARM_AVGPOOL_S8, pooling.ARM_MAX_POOL_S8
    cases = [
        _pool("kws_global", avg, hw=(25, 5), c=64, k=(25, 5)),
        _pool("taps_255", avg, hw=(15, 17), c=13, k=(15, 17)),
        _pool("taps_256", avg, hw=(16, 16), c=13, k=(16, 16)),
        _pool("taps_272_padded", avg, hw=(16, 17), c=20, k=(16, 17), stride=(2, 3), pad=(1, 2)),
        _pool("taps_255_all_min", avg, hw=(15, 17), c=9, k=(15, 17), values="min"),
        _pool("taps_255_all_max", avg, hw=(15, 17), c=9, k=(15, 17), values="max"),
        _pool("taps_400_all_min", avg, hw=(20, 20), c=5, k=(20, 20), values="min"),
        _pool("one_tap", avg, hw=(4, 5), c=24, k=(1, 1)),
        _pool("narrow_activation", avg, hw=(6, 6), c=17, k=(3, 3), pad=(1, 1), activation=(-5, 7)),
        _pool("max_batches", mx, hw=(7, 6), c=19, k=(3, 2), stride=(2, 2), pad=(1, 1), n=3),
        _pool("avg_batches", avg, hw=(7, 6), c=19, k=(3, 2), stride=(2, 2), pad=(1, 1), n=3),
        _pool("avg_batches_wide", avg, hw=(16, 16), c=9, k=(16, 16), n=2),
        _pool("max_one_tap", mx, hw=(3, 3), c=33, k=(1, 1)),
        _pool("max_narrow_activation", mx, hw=(6, 6), c=21, k=(2, 2), activation=(-3, 3)),
        _pool("max_all_min", mx, hw=(5, 5), c=18, k=(3, 3), pad=(1, 1), values="min"),
        _pool("max_large_window", mx, hw=(20, 20), c=35, k=(20, 20)),
    ]
    for c in (1, 3, 4, 7, 8, 9, 15, 16, 17, 31, 33, 64, 130):
        for function in KERNELS:
            cases.append(
                _pool(
                    f"channels_{c}_{function}", function, hw=(7, 6), c=c, k=(3, 3), stride=(2, 2), pad=(1, 1)
                )
            )
    return cases


def _status_cases() -> list[VectorCase]:
    avg, mx = pooling.ARM_AVGPOOL_S8, pooling.ARM_MAX_POOL_S8
    err = {"scalar": ARG_ERROR, "dsp": ARG_ERROR, "mve": ARG_ERROR}
    # The first window lies wholly in the padding: CMSIS-NN's avgpool refuses to divide by zero.
    outside = _pool("avg_window_outside", avg, hw=(4, 4), c=8, k=(2, 2), pad=(2, 2), golden=False)
    cases = [dataclasses.replace(outside, status=err)]
    # Its max pool leaves such a window unwritten (then clamps it): success, output not compared.
    cases.append(_pool("max_window_outside", mx, hw=(4, 4), c=8, k=(2, 2), pad=(2, 2), golden=False))
    # A NULL ctx->buf: only the DSP build of avgpool needs its buffer.
    null = _pool("avg_null_ctx", avg, hw=(6, 5), c=12, k=(3, 3), pad=(1, 1))
    cases.append(dataclasses.replace(null, params={**null.params, "ctx.size": 0}, status={"dsp": ARG_ERROR}))
    return cases


def _size_cases(shapes: list[VectorCase]) -> list[VectorCase]:
    cases = []
    for case in shapes:
        out_w, ch = case.params["output_dims.w"], case.params["input_dims.c"]
        expected = {
            isa: size_bytes(pooling.avgpool_s8_get_buffer_size(out_w, ch, isa)) for isa in pooling.ISAS
        }
        cases.append(
            VectorCase(f"size_{case.name}", AVGPOOL_SIZE, {}, case.params, expected, variants=SIZE_VARIANTS)
        )
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
    avg_shapes = [c for c in generated + edges if c.function == pooling.ARM_AVGPOOL_S8][:40]
    return (*generated, *edges, *_status_cases(), *_size_cases(avg_shapes))


BATCHES = CoreBatches(_all_cases)


# --- tests -------------------------------------------------------------------------------------


@pytest.mark.parametrize("core", list(CORES))
@pytest.mark.parametrize("function", KERNELS)
def test_pooling_bit_exact_on_every_tier(function: str, core: str, toolchain: None) -> None:
    outcomes = [o for o in BATCHES.outcomes(core) if o.case.function == function and not o.case.status]
    assert outcomes
    assert_all_match(core, outcomes)


@pytest.mark.parametrize("core", list(CORES))
def test_pooling_status_codes(core: str, toolchain: None) -> None:
    outcomes = [o for o in BATCHES.outcomes(core) if o.case.function in KERNELS and o.case.status]
    assert len(outcomes) >= 2 * len(CORES[core].tiers)
    assert_all_match(core, outcomes)


@pytest.mark.parametrize("core", list(CORES))
def test_avgpool_buffer_sizes_match_kernels_py(core: str, toolchain: None) -> None:
    outcomes = [o for o in BATCHES.outcomes(core) if o.case.function == AVGPOOL_SIZE]
    assert outcomes
    assert_all_match(core, outcomes)


def test_cases_reach_the_wide_sums() -> None:
    """Windows on both sides of the 255-tap int16 limit, and single-tap windows, are in the batch."""
    taps = {
        c.params["filter_dims.h"] * c.params["filter_dims.w"]
        for c in _all_cases()
        if c.function == pooling.ARM_AVGPOOL_S8 and c.expected is not None
    }
    assert {1, 255, 256} <= taps and max(taps) > 300

"""arm_batch_matmul_s8, arm_fully_connected_per_channel_s8 and arm_vector_sum_s8 in kernels_c,
bit-exact against kernels_py.fully_connected on every core and tier.

Cases: refsim's conformance generators, plus shapes that fill the 4-row (scalar, MVE) and 2-row
(DSP) blocks and their remainders, depths around the 4- and 16-column steps, non-zero filter
offsets for the per-channel FC (its generator keeps them at 0), N/H broadcasting both ways, and
the status codes: ARM_CMSIS_NN_ARG_ERROR for inconsistent batch-matmul dims and, on MVE, for a
missing kernel-sum buffer (``ctx.size`` 0). The buffer-size functions are checked on every core
for every variant. One QEMU start per core for the whole module.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest

from refsim.conformance.registry import put_dims, random_multiplier
from refsim.qemu import CORES
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

BMM = "arm_batch_matmul_s8"
BMM_SIZE = "arm_batch_matmul_s8_get_buffer_size"
FC_PC = "arm_fully_connected_per_channel_s8"
VECTOR_SUM = "arm_vector_sum_s8"


def _s8(rng: np.random.Generator, shape) -> np.ndarray:
    return rng.integers(-128, 128, shape).astype(np.int8)


def _shift_for(depth: int, io: int, fo: int) -> int:
    """The shift that brings a depth-``depth`` accumulator to about +-50."""
    rms = np.sqrt(depth * (74.0**2 + io**2) * (74.0**2 + fo**2))
    return int(np.clip(-np.round(np.log2(rms / 50.0)), -31, 30))


def _bmm_params(rng, lhs_shape, rhs_shape, io, fo) -> dict:
    out_shape = (max(lhs_shape[0], rhs_shape[0]), max(lhs_shape[1], rhs_shape[1]), lhs_shape[2], rhs_shape[2])
    lo = int(rng.integers(-128, 0))
    params = {
        "function": BMM,
        "adj_x": False,
        "adj_y": False,
        "fc_params.input_offset": io,
        "fc_params.filter_offset": fo,
        "fc_params.output_offset": int(rng.integers(-128, 128)),
        "fc_params.activation.min": lo,
        "fc_params.activation.max": int(rng.integers(lo, 128)),
        "multiplier": random_multiplier(rng),
        "shift": _shift_for(lhs_shape[3], io, fo),
    }
    put_dims(params, "input_lhs_dims", lhs_shape)
    put_dims(params, "input_rhs_dims", rhs_shape)
    put_dims(params, "output_dims", out_shape)
    return params


def _bmm_cases(rng: np.random.Generator) -> list[Golden]:
    out = []
    shapes = [
        ((1, 1, 5, 64), (1, 1, 9, 64)),
        ((2, 3, 4, 17), (2, 3, 7, 17)),
        ((1, 2, 3, 33), (3, 1, 6, 33)),  # N broadcast one way, H the other
        ((2, 1, 8, 100), (1, 1, 5, 100)),
        ((1, 1, 1, 3), (1, 1, 13, 3)),
        ((3, 2, 2, 16), (3, 2, 4, 16)),
    ]
    for lhs_shape, rhs_shape in shapes:
        for io, fo in ((0, 0), (128, -127), (int(rng.integers(-127, 129)), int(rng.integers(-127, 129)))):
            arrays = {"input_lhs": _s8(rng, lhs_shape), "input_rhs": _s8(rng, rhs_shape)}
            params = _bmm_params(rng, lhs_shape, rhs_shape, io, fo)
            out.append(golden(BMM, arrays, params, f"{lhs_shape} x {rhs_shape} io={io} fo={fo}"))
    # Inconsistent dims: the C kernel refuses them (CMSIS-NN would read out of bounds).
    bad = [
        ((1, 1, 3, 8), (1, 1, 4, 9), None),  # K differs
        ((2, 1, 3, 8), (3, 1, 4, 8), None),  # N 2 against 3
        ((1, 1, 3, 8), (1, 1, 4, 8), (1, 1, 3, 5)),  # output C is not RHS_ROWS
    ]
    for lhs_shape, rhs_shape, out_shape in bad:
        arrays = {"input_lhs": _s8(rng, lhs_shape), "input_rhs": _s8(rng, rhs_shape)}
        params = _bmm_params(rng, lhs_shape, rhs_shape, 0, 0)
        put_dims(
            params,
            "output_dims",
            out_shape or (max(lhs_shape[0], rhs_shape[0]), 1, lhs_shape[2], rhs_shape[2]),
        )
        out.append(
            Golden(
                f"bad dims {lhs_shape} x {rhs_shape}",
                harness_case(BMM, arrays, params),
                None,
                ARM_CMSIS_NN_ARG_ERROR,
            )
        )
    # MVE reads its kernel sums from ctx->buf and refuses to run without one, as CMSIS-NN does.
    lhs_shape, rhs_shape = (1, 1, 2, 16), (1, 1, 3, 16)
    arrays = {"input_lhs": _s8(rng, lhs_shape), "input_rhs": _s8(rng, rhs_shape)}
    case = harness_case(BMM, arrays, _bmm_params(rng, lhs_shape, rhs_shape, 1, 1))
    no_buffer = dataclasses.replace(case, params={**case.params, "ctx.size": 0})
    out.append(Golden("mve without a buffer", no_buffer, None, ARM_CMSIS_NN_ARG_ERROR, variants=("mve",)))
    return out


def _buffer_size_cases() -> list[Golden]:
    out = []
    for rows in (1, 7, 40):
        case = harness_case(BMM_SIZE, {}, {"input_rhs_dims.n": 2, "input_rhs_dims.h": 3, "input_rhs_dims.w": rows,
                                           "input_rhs_dims.c": 5})  # fmt: skip
        for variant, size in (("scalar", 0), ("dsp", 0), ("mve", 4 * rows)):
            out.append(Golden(f"{rows} rows", case, np.array([size], np.int32), variants=(variant,)))
        # The build's own answer depends on the core: checked by test_default_buffer_size_is_the_cores.
        out.append(Golden(f"default {rows} rows", case, None, variants=("default",)))
    return out


def _fc_per_channel_cases(rng: np.random.Generator) -> list[Golden]:
    out = []
    for batches, depth, rows in ((1, 64, 9), (2, 33, 4), (3, 16, 13), (1, 250, 6), (2, 7, 1), (1, 3, 5)):
        for io, fo in ((-128 + 1, 0), (5, -3), (128, 127), (0, -127)):
            bias = rng.integers(-(1 << 20), 1 << 20, rows).astype(np.int32)
            arrays = {
                "input": _s8(rng, (batches, depth)),
                "filter": _s8(rng, (rows, depth)),
                "bias": bias,
                "multiplier": random_multiplier(rng, rows),
                "shift": np.array(
                    [_shift_for(depth, io, fo) + int(rng.integers(-1, 2)) for _ in range(rows)], np.int32
                ),
            }
            params = {
                "function": FC_PC,
                "input_offset": io,
                "filter_offset": fo,
                "output_offset": int(rng.integers(-128, 128)),
                "activation.min": -128,
                "activation.max": 127,
                "bias_is_null": bool(rng.random() < 0.25),
            }
            put_dims(params, "input_dims", (batches, 1, 1, depth))
            put_dims(params, "filter_dims", (depth, 1, 1, rows))
            put_dims(params, "output_dims", (batches, 1, 1, rows))
            put_dims(params, "bias_dims", (1, 1, 1, rows))
            out.append(golden(FC_PC, arrays, params, f"{batches}x{depth}x{rows} io={io} fo={fo}"))
    no_buffer = dataclasses.replace(out[0].case, params={**out[0].case.params, "ctx.size": 0})
    out.append(Golden("mve without a buffer", no_buffer, None, ARM_CMSIS_NN_ARG_ERROR, variants=("mve",)))
    return out


def _vector_sum_cases(rng: np.random.Generator) -> list[Golden]:
    """Rows past the DSP tier's 512-byte int16-lane chunks, and extreme rows (all -128, all 127)."""
    out = []
    for rows, cols in ((3, 512), (3, 1024), (2, 1025), (2, 2055), (5, 31)):
        data = _s8(rng, (rows, cols))
        data[0] = -128
        data[-1] = 127
        params = {
            "function": VECTOR_SUM,
            "vector_cols": cols,
            "vector_rows": rows,
            "lhs_offset": int(rng.integers(-127, 129)),
            "rhs_offset": int(rng.integers(-127, 129)),
        }
        arrays = {"vector_data": data, "bias_data": rng.integers(-(1 << 24), 1 << 24, rows).astype(np.int32)}
        out.append(golden(VECTOR_SUM, arrays, params, f"{rows}x{cols}"))
    return out


@functools.cache
def goldens() -> tuple[Golden, ...]:
    return (
        *generated(BMM, 60),
        *_bmm_cases(rng_for(BMM + " edges")),
        *_buffer_size_cases(),
        *generated(FC_PC, 60),
        *_fc_per_channel_cases(rng_for(FC_PC + " edges")),
        *generated(VECTOR_SUM, 30),
        *_vector_sum_cases(rng_for(VECTOR_SUM + " edges")),
    )


@pytest.fixture(scope="module", params=list(CORES))
def core_results(request: pytest.FixtureRequest, toolchain: None):
    return request.param, run_on_core(request.param, goldens())


@pytest.mark.parametrize("function", [BMM, BMM_SIZE, FC_PC, VECTOR_SUM])
def test_matches_kernels_py_on_every_tier(core_results, function: str) -> None:
    core, results = core_results
    assert_no_failures(core, results, function)


def test_default_buffer_size_is_the_cores(core_results) -> None:
    core, results = core_results
    per_row = 4 if CORES[core].tier == "mve" else 0
    sizes = [
        (int(r.output.view("<i4")[0]), per_row * g.case.params["input_rhs_dims.w"])
        for g, _, r in results
        if g.case.function == BMM_SIZE and g.label.startswith("default")
    ]
    assert len(sizes) == 3 and all(got == want for got, want in sizes), sizes

"""arm_pad_s8 and arm_transpose_s8 in kernels_c, bit-exact against kernels_py.layout on every
core and tier.

Cases: refsim's conformance generators (small 4-D pads, 1- to 4-D transposes whose unused
trailing dims are 1 or 0), plus larger
tensors for the 16-byte (MVE) copies and fills, pads with and without channel padding, 1-D
copies, a 2-D identity (which CMSIS-NN would transpose: kernels_py and kernels_c copy), an
innermost input stride past the 16-bit gather offsets, and the status codes:
ARM_CMSIS_NN_ARG_ERROR for negative pads and for permutations CMSIS-NN rejects (an entry past
num_dims - 1) or that are not permutations, num_dims 5 and output dims that are not the permuted
input dims. One QEMU start per core for the whole module.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest

from refsim.conformance.registry import put_dims
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

PAD = "arm_pad_s8"
TRANSPOSE = "arm_transpose_s8"


def _pad_params(shape, pre, post, pad_value) -> dict:
    params = {"function": PAD, "pad_value": pad_value}
    put_dims(params, "input_size", shape)
    put_dims(params, "pre_pad", pre)
    put_dims(params, "post_pad", post)
    return params


def _pad_cases(rng: np.random.Generator) -> list[Golden]:
    out = []
    for shape, pre, post in (
        ((1, 5, 7, 40), (0, 1, 2, 0), (0, 2, 1, 0)),  # whole rows copied
        ((2, 3, 4, 17), (1, 0, 1, 3), (0, 1, 0, 5)),  # channel padding
        ((1, 1, 1, 100), (0, 0, 0, 17), (0, 0, 0, 0)),
        ((1, 8, 8, 3), (0, 3, 3, 0), (0, 3, 3, 0)),
        ((1, 2, 2, 1), (2, 0, 0, 0), (1, 0, 0, 0)),
    ):
        data = rng.integers(-128, 128, shape).astype(np.int8)
        value = int(rng.integers(-128, 128))
        out.append(
            golden(PAD, {"input": data}, _pad_params(shape, pre, post, value), f"{shape} {pre} {post}")
        )
    bad = harness_case(
        PAD,
        {"input": np.zeros((1, 2, 3, 4), np.int8)},
        _pad_params((1, 2, 3, 4), (0, -1, 0, 0), (0, 2, 0, 0), 0),
    )
    out.append(Golden("negative pad", bad, None, ARM_CMSIS_NN_ARG_ERROR))
    return out


def _transpose_params(shape, perm, out_shape=None, unused: int = 1) -> dict:
    out_shape = out_shape or tuple(shape[p] for p in perm)
    params = {"function": TRANSPOSE, "num_dims": len(shape), "permutations": list(perm)}
    for prefix, dims in (("input_dims", shape), ("output_dims", out_shape)):
        for key, value in zip("nhwc", (*dims, *(unused,) * 4)[:4], strict=True):
            params[f"{prefix}.{key}"] = int(value)
    return params


def _transpose_cases(rng: np.random.Generator) -> list[Golden]:
    out = []
    shapes = [(37,), (5, 9), (32, 48), (3, 17, 20), (2, 5, 6, 19), (4, 3, 8, 33), (1, 7, 1, 20)]
    for shape in shapes:
        for perm in itertools.permutations(range(len(shape))):
            data = rng.integers(-128, 128, shape).astype(np.int8)
            out.append(golden(TRANSPOSE, {"input": data}, _transpose_params(shape, perm), f"{shape} {perm}"))
    # Unused trailing dims 0, as CMSIS-NN's own unit tests pass them (it reads none of them).
    for shape, perm in (((37,), (0,)), ((5, 9), (1, 0)), ((3, 17, 20), (2, 0, 1))):
        data = rng.integers(-128, 128, shape).astype(np.int8)
        params = _transpose_params(shape, perm, unused=0)
        out.append(golden(TRANSPOSE, {"input": data}, params, f"{shape} {perm} unused dims 0"))
    # An innermost output axis whose input stride (10000) is past 16-bit gather offsets over 8 lanes.
    shape, perm = (20, 10000), (1, 0)
    data = rng.integers(-128, 128, shape).astype(np.int8)
    out.append(golden(TRANSPOSE, {"input": data}, _transpose_params(shape, perm), "stride 10000"))
    for label, shape, perm, out_shape, num_dims in (
        ("entry past num_dims - 1", (2, 3, 4), (0, 1, 3), (2, 3, 4), None),
        ("repeated axis", (2, 3, 4, 5), (0, 1, 1, 3), (2, 3, 3, 5), None),
        ("output dims", (2, 3, 4), (2, 1, 0), (4, 3, 3), None),
        ("num_dims 5", (2, 3, 4, 5), (0, 1, 2, 3), None, 5),
    ):
        params = _transpose_params(shape, perm, out_shape)
        if num_dims is not None:
            params["num_dims"] = num_dims
        case = harness_case(TRANSPOSE, {"input": np.zeros(shape, np.int8)}, params)
        out.append(Golden(label, case, None, ARM_CMSIS_NN_ARG_ERROR))
    return out


@functools.cache
def goldens() -> tuple[Golden, ...]:
    return (
        *generated(PAD, 60),
        *_pad_cases(rng_for(PAD + " edges")),
        *generated(TRANSPOSE, 60),
        *_transpose_cases(rng_for(TRANSPOSE + " edges")),
    )


@pytest.fixture(scope="module", params=list(CORES))
def core_results(request: pytest.FixtureRequest, toolchain: None):
    return request.param, run_on_core(request.param, goldens())


@pytest.mark.parametrize("function", [PAD, TRANSPOSE])
def test_matches_kernels_py_on_every_tier(core_results, function: str) -> None:
    core, results = core_results
    assert_no_failures(core, results, function)


def test_a_2d_identity_copies() -> None:
    data = np.arange(6, dtype=np.int8).reshape(2, 3)
    (g,) = [golden(TRANSPOSE, {"input": data}, _transpose_params((2, 3), (0, 1)), "identity")]
    np.testing.assert_array_equal(g.output, data.reshape(-1))

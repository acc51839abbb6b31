"""arm_maximum_s8 and arm_minimum_s8 in kernels_c, bit-exact against kernels_py.elementwise on
every core and tier, broadcasting the numpy way.

Cases: refsim's conformance generator (which leaves out the shape pairs CMSIS-NN's pointer walk
gets wrong), those pairs explicitly (an input with H >= 2 and W = C = 1 against one with W >= 2,
kernels_py.elementwise.cmsis_minmax_broadcast_is_exact: kernels_c must give the numpy result),
large shapes for the 4-byte (DSP) and 16-byte (MVE) steps and their tails, and dims that do not
broadcast (ARM_CMSIS_NN_ARG_ERROR). One QEMU start per core for the whole module.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from kernels_py.elementwise import cmsis_minmax_broadcast_is_exact
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

FUNCTIONS = ("arm_maximum_s8", "arm_minimum_s8")

#: Shape pairs CMSIS-NN V.1.0.0 reads wrongly (first three) and larger ones for the vector paths.
SHAPES = [
    ((1, 3, 1, 1), (1, 1, 4, 1)),
    ((2, 4, 1, 1), (2, 1, 5, 3)),
    ((1, 1, 6, 2), (1, 5, 1, 1)),
    ((1, 4, 8, 40), (1, 4, 8, 40)),
    ((1, 1, 1, 1), (2, 3, 5, 37)),
    ((1, 4, 8, 33), (1, 1, 1, 33)),
    ((2, 1, 7, 19), (2, 6, 1, 19)),
    ((1, 5, 9, 1), (1, 5, 9, 21)),
    ((3, 1, 1, 1), (1, 2, 2, 70)),
    ((1, 1, 1, 130), (1, 1, 1, 130)),
]


def _cases(function: str, rng: np.random.Generator) -> list[Golden]:
    out = []
    for shape_1, shape_2 in SHAPES:
        for pair in ((shape_1, shape_2), (shape_2, shape_1)):
            arrays = {
                name: rng.integers(-128, 128, s).astype(np.int8)
                for name, s in zip(("input_1", "input_2"), pair, strict=True)
            }
            params = {"function": function}
            put_dims(params, "input_1_dims", pair[0])
            put_dims(params, "input_2_dims", pair[1])
            put_dims(params, "output_dims", np.broadcast_shapes(*pair))
            exact = "" if cmsis_minmax_broadcast_is_exact(*pair) else " (CMSIS-NN reads wrongly)"
            out.append(golden(function, arrays, params, f"{pair[0]} vs {pair[1]}{exact}"))
    for dims_1, dims_2, dims_out in (
        ((1, 1, 2, 3), (1, 1, 3, 3), (1, 1, 3, 3)),  # W 2 against 3
        ((1, 1, 2, 3), (1, 1, 2, 3), (1, 1, 2, 4)),  # output is not the broadcast shape
    ):
        arrays = {"input_1": np.zeros(dims_1, np.int8), "input_2": np.zeros(dims_2, np.int8)}
        params = {"function": function}
        put_dims(params, "input_1_dims", dims_1)
        put_dims(params, "input_2_dims", dims_2)
        put_dims(params, "output_dims", dims_out)
        out.append(
            Golden(
                f"{dims_1} vs {dims_2}", harness_case(function, arrays, params), None, ARM_CMSIS_NN_ARG_ERROR
            )
        )
    return out


@functools.cache
def goldens() -> tuple[Golden, ...]:
    return tuple(g for f in FUNCTIONS for g in (*generated(f, 80), *_cases(f, rng_for(f + " edges"))))


@pytest.fixture(scope="module", params=list(CORES))
def core_results(request: pytest.FixtureRequest, toolchain: None):
    return request.param, run_on_core(request.param, goldens())


@pytest.mark.parametrize("function", FUNCTIONS)
def test_matches_kernels_py_on_every_tier(core_results, function: str) -> None:
    core, results = core_results
    assert_no_failures(core, results, function)


def test_the_pairs_cmsis_nn_gets_wrong_are_covered() -> None:
    wrong = [g for g in goldens() if "CMSIS-NN reads wrongly" in g.label]
    assert len(wrong) >= 2 * 2 * 3

"""arm_softmax_s8 in kernels_c, bit-exact against kernels_py.softmax on every core and tier.

Cases: refsim's conformance generator (rows up to 40, parameters from TFLM's preparation or raw
extremes), plus long rows that take the tabulated path (more elements than half the number of
diffs that pass diff_min), rows of 16 and more for the MVE full vectors, diff_min cutting rows,
shift 0 and 31, and rows at the 2^28 sum limit. Rows past it (512 or more elements at the row
maximum) are outside kernels_py's domain (it raises); there the tiers must only agree.
One QEMU start per core for the whole module.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from kernels_py.errors import KernelArgumentError
from kernels_py.softmax import softmax_params
from refsim.qemu import CORES
from tests.qemu.differential import (
    Golden,
    assert_no_failures,
    generated,
    golden,
    harness_case,
    rng_for,
    run_on_core,
)

NAME = "arm_softmax_s8"


def _params(rows: int, size: int, mult: int, shift: int, diff_min: int) -> dict:
    return {
        "function": NAME,
        "num_rows": rows,
        "row_size": size,
        "mult": mult,
        "shift": shift,
        "diff_min": diff_min,
    }


def _edge_cases(rng: np.random.Generator) -> list[Golden]:
    out = []
    shapes = [(1, 1), (1, 16), (2, 17), (3, 64), (1, 100), (2, 129), (4, 200), (1, 511), (3, 300), (8, 40)]
    for rows, size in shapes:
        for kind in ("tflm", "narrow", "cut", "raw"):
            data = rng.integers(-128, 128, (rows, size)).astype(np.int8)
            if kind == "narrow":
                top = int(rng.integers(-100, 128))
                data = np.clip(top - rng.integers(0, 12, (rows, size)), -128, 127).astype(np.int8)
            if kind in ("tflm", "narrow"):
                mult, shift, diff_min = softmax_params(
                    float(rng.uniform(0.5, 2.0)), float(2.0 ** rng.uniform(-8, 1))
                )
            elif kind == "cut":
                mult, shift, diff_min = softmax_params(1.0, float(2.0 ** rng.uniform(-5, -1)))
                diff_min = int(rng.integers(-200, 1))
            else:
                mult = int(rng.integers(1 << 30, (1 << 31) - 1))
                shift = int(rng.choice([0, 1, 30, 31]))
                diff_min = -int(rng.integers(0, ((31 << 26) >> shift) + 1))
            params = _params(rows, size, int(mult), int(shift), int(diff_min))
            out.append(golden(NAME, {"input": data}, params, f"{kind} {rows}x{size}"))
    # 511 equal elements: the largest row sum kernels_py accepts (511 * 2^19 < 2^28).
    params = _params(1, 511, *softmax_params(1.0, 0.1))
    out.append(golden(NAME, {"input": np.full((1, 511), 7, np.int8)}, params, "sum limit"))
    # Past the limit kernels_py raises; the tiers must still agree (the shift is capped at 31).
    for size in (512, 700):
        data = np.full((2, size), 3, np.int8)
        data[1, ::3] = -100
        params = _params(2, size, *softmax_params(1.0, 0.1))
        out.append(Golden(f"beyond the sum limit {size}", harness_case(NAME, {"input": data}, params), None))
    return out


@functools.cache
def goldens() -> tuple[Golden, ...]:
    return (*generated(NAME, 150), *_edge_cases(rng_for(NAME + " edges")))


@pytest.fixture(scope="module", params=list(CORES))
def core_results(request: pytest.FixtureRequest, toolchain: None):
    return request.param, run_on_core(request.param, goldens())


def test_softmax_matches_kernels_py_on_every_tier(core_results) -> None:
    core, results = core_results
    assert_no_failures(core, results, NAME)


def test_rows_past_the_sum_limit_are_outside_kernels_py() -> None:
    data = np.full((1, 512), 3, np.int8)
    with pytest.raises(KernelArgumentError):
        golden(NAME, {"input": data}, _params(1, 512, *softmax_params(1.0, 0.1)), "limit")

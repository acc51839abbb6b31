"""arm_relu6_s8 and refsim_lut_s8 (ExecuTorch cortex_m quantized_activation) in kernels_c,
bit-exact against kernels_py.activation on every core and tier.

Cases: refsim's conformance generators (up to 64 elements; LUTs built from the activations
ExecuTorch tabulates, or random), plus lengths around the 4-byte (DSP) and 16-byte (MVE) steps,
every int8 value through a random table. The harness copies ReLU6's input to
the output and the kernel rewrites it in place. One QEMU start per core for the whole module.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from kernels_py.activation import build_activation_lut
from refsim.qemu import CORES
from tests.qemu.differential import (
    Golden,
    assert_no_failures,
    generated,
    golden,
    rng_for,
    run_on_core,
)

RELU6 = "arm_relu6_s8"
LUT = "refsim_lut_s8"
SIZES = (1, 3, 4, 5, 15, 16, 17, 31, 33, 100, 1000, 4099)


def _cases(rng: np.random.Generator) -> list[Golden]:
    out = []
    for size in SIZES:
        data = rng.integers(-128, 128, size).astype(np.int8)
        out.append(golden(RELU6, {"input": data}, {"function": RELU6, "size": size}, f"{size} elements"))
        table = rng.integers(-128, 128, 256).astype(np.int8)
        out.append(golden(LUT, {"input": data, "table": table}, {"function": LUT}, f"{size} elements"))
    every_value = np.arange(-128, 128, dtype=np.int8)
    for name, table in (
        ("random", rng.integers(-128, 128, 256).astype(np.int8)),
        ("sigmoid", build_activation_lut("sigmoid", 0.05, -3, 1 / 256, -128)),
        ("identity", every_value.copy()),
    ):
        out.append(
            golden(LUT, {"input": every_value, "table": table}, {"function": LUT}, f"every value, {name}")
        )
    return out


@functools.cache
def goldens() -> tuple[Golden, ...]:
    return (*generated(RELU6, 60), *generated(LUT, 60), *_cases(rng_for("activation edges")))


@pytest.fixture(scope="module", params=list(CORES))
def core_results(request: pytest.FixtureRequest, toolchain: None):
    return request.param, run_on_core(request.param, goldens())


@pytest.mark.parametrize("function", [RELU6, LUT])
def test_matches_kernels_py_on_every_tier(core_results, function: str) -> None:
    core, results = core_results
    assert_no_failures(core, results, function)

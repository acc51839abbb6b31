"""kernels_c's C kernels on every core, bit-exact against a numpy reference.

One QEMU start per (function, core): a batch of random cases (the same cases on every core,
leaning on the parameter edges), each run through the public CMSIS-NN function and through
every tier variant the core has (scalar on all, DSP on M4/M7/M33/M55, MVE on M55). An ISA tier
never changes an output bit, so every variant must equal the reference.

The numpy reference (tests/qemu/reference.py) is checked against kernels_py's golden kernels on
the same cases when those modules import, so C == numpy == kernels_py.

Seed: REFSIM_QEMU_SEED (printed in every failure); cases per function: REFSIM_QEMU_CASES.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import os
import zlib

import numpy as np
import pytest

from refsim.qemu import CORES, Case, run_batch
from tests.qemu.reference import GENERATORS, expected_output

SEED = int(os.environ.get("REFSIM_QEMU_SEED", "20250101"))
CASES_PER_FUNCTION = int(os.environ.get("REFSIM_QEMU_CASES", "250"))


@functools.cache
def base_cases(function: str) -> tuple[Case, ...]:
    rng = np.random.default_rng([SEED, zlib.crc32(function.encode())])
    return tuple(GENERATORS[function](rng) for _ in range(CASES_PER_FUNCTION))


@functools.cache
def expected_outputs(function: str) -> tuple[np.ndarray, ...]:
    return tuple(expected_output(case) for case in base_cases(function))


def _describe(case: Case) -> str:
    sizes = {name: a.size for name, a in case.arrays.items()}
    return f"{case.function} variant={case.variant} params={dict(case.params)} sizes={sizes}"


@pytest.mark.parametrize("core", list(CORES))
@pytest.mark.parametrize("function", list(GENERATORS))
def test_kernel_bit_exact_on_every_tier(function: str, core: str, toolchain: None) -> None:
    variants = ("default", *CORES[core].tiers)
    cases = [dataclasses.replace(case, variant=v) for case in base_cases(function) for v in variants]
    expected = [e for e in expected_outputs(function) for _ in variants]

    run = run_batch(core, cases)

    failures = []
    for case, result, want in zip(cases, run.results, expected, strict=True):
        if result.kernel_status != 0:
            failures.append(f"status {result.kernel_status}: {_describe(case)}")
        elif not np.array_equal(result.output, want):
            wrong = np.flatnonzero(result.output != want)
            failures.append(
                f"{wrong.size} of {want.size} outputs differ, first at {wrong[0]}: "
                f"got {result.output[wrong[0]]}, expected {want[wrong[0]]}: {_describe(case)}"
            )
    assert not failures, f"seed {SEED}, {core}: {len(failures)} of {len(cases)} cases wrong; " + "; ".join(
        failures[:3]
    )


# --- the numpy reference against kernels_py (no QEMU) ------------------------------------------


def _kernels_py(module: str, name: str):
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as error:
        pytest.skip(f"{module}.{name} not available yet: {error}")


def _elementwise_kwargs(case: Case) -> dict:
    return {k: v for k, v in case.params.items() if k != "block_size"}


def _kernels_py_add(case: Case) -> np.ndarray:
    add = _kernels_py("kernels_py.elementwise", "elementwise_add_s8")
    return add(case.arrays["input_1"], case.arrays["input_2"], **_elementwise_kwargs(case))


def _kernels_py_mul(case: Case) -> np.ndarray:
    mul = _kernels_py("kernels_py.elementwise", "elementwise_mul_s8")
    return mul(case.arrays["input_1"], case.arrays["input_2"], **_elementwise_kwargs(case))


def _kernels_py_fc(case: Case) -> np.ndarray:
    fc = _kernels_py("kernels_py.fully_connected", "fully_connected_s8")
    from kernels_py.types import Activation, FcParams, PerTensorQuantParams

    p = case.params
    n, k, c = p["input_dims.n"], p["filter_dims.n"], p["output_dims.c"]
    bias = case.arrays["bias"]
    fc_params = FcParams(
        p["input_offset"],
        p["filter_offset"],
        p["output_offset"],
        Activation(p["activation.min"], p["activation.max"]),
    )
    return fc(
        case.arrays["input"].reshape(n, k),
        case.arrays["filter"].reshape(c, k),
        bias if bias.size else None,
        fc_params,
        PerTensorQuantParams(p["multiplier"], p["shift"]),
    ).ravel()


KERNELS_PY = {
    "arm_elementwise_add_s8": _kernels_py_add,
    "arm_elementwise_mul_s8": _kernels_py_mul,
    "arm_fully_connected_s8": _kernels_py_fc,
}


@pytest.mark.parametrize("function", list(GENERATORS))
def test_numpy_reference_matches_kernels_py(function: str) -> None:
    golden = KERNELS_PY[function]
    differ = [
        case
        for case, want in zip(base_cases(function), expected_outputs(function), strict=True)
        if not np.array_equal(golden(case), want)
    ]
    # requant(acc) + output_offset wraps in int32 in CMSIS-NN, kernels_c and kernels_py alike.
    assert not differ, f"seed {SEED}: kernels_py differs from the numpy reference: {_describe(differ[0])}"

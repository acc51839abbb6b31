"""Differential testing of kernels_c against kernels_py: golden cases, one QEMU start per core.

A :class:`Golden` is one kernel call in conformance-vector form (the arrays and flattened params
of shared VECTORS.md) turned into a harness :class:`~refsim.qemu.Case`, with the output kernels_py
computes for it (``refsim.conformance.registry``), or the ``arm_cmsis_nn_status`` the C kernel
must return. :func:`run_on_core` runs every golden case through the public function and every
tier variant the core has in one batch; :func:`failures` lists what differs, bit for bit.

Seed: ``REFSIM_QEMU_SEED`` (printed with every failure).
"""

from __future__ import annotations

import dataclasses
import os
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from refsim.conformance import registry
from refsim.qemu import CORES, FUNCTIONS, Case, CaseResult, run_batch

SEED = int(os.environ.get("REFSIM_QEMU_SEED", "20250101"))

ARM_CMSIS_NN_SUCCESS = 0
ARM_CMSIS_NN_ARG_ERROR = -1


@dataclasses.dataclass(frozen=True)
class Golden:
    """A harness case and what it must give on every variant it runs as."""

    label: str
    case: Case
    #: The expected output (int8, or int32 for functions whose output is int32); None when only
    #: the status is checked, or when the variants need only agree with each other.
    output: np.ndarray | None
    status: int = ARM_CMSIS_NN_SUCCESS
    #: None: the public function and every tier the core has; else exactly these variants.
    variants: tuple[str, ...] | None = None
    #: Variants must agree bit for bit even where no golden output exists.
    agree: bool = True


def rng_for(name: str) -> np.random.Generator:
    """A generator seeded by SEED and the name, so each function's cases are stable on their own."""
    return np.random.default_rng([SEED, zlib.crc32(name.encode())])


def harness_case(function: str, arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]) -> Case:
    """A conformance case as a harness case: params in the harness order (``ctx.size`` -1 = the
    variant's own scratch, ``permutations[k]`` from the list, padded with k), arrays flattened,
    an optional array empty when the vector says it is NULL (``bias_is_null``)."""
    spec = FUNCTIONS[function]
    values: dict[str, int] = {}
    for name in spec.params:
        if name in params:
            values[name] = int(params[name])
        elif name == "ctx.size":
            values[name] = -1
        elif name.startswith("permutations["):
            k = int(name[len("permutations[") : -1])
            perm = list(params["permutations"])
            values[name] = int(perm[k]) if k < len(perm) else k
        else:
            raise KeyError(f"{function}: conformance params lack {name!r}")
    flat = {}
    for array in spec.arrays:
        data = np.ascontiguousarray(arrays[array.name]).reshape(-1)
        if array.optional and params.get("bias_is_null", False):
            data = data[:0]
        flat[array.name] = data.astype(array.dtype, copy=False)
    return Case(function, values, flat)


def golden(function: str, arrays: Mapping[str, np.ndarray], params: Mapping[str, Any], label: str) -> Golden:
    """The kernels_py output of a conformance case, as a Golden."""
    expected = registry.get(function).run(arrays, params)
    return Golden(label, harness_case(function, arrays, params), np.asarray(expected).reshape(-1))


def generated(function: str, count: int) -> list[Golden]:
    """``count`` cases from refsim's conformance generator of ``function``."""
    rng = rng_for(function)
    vector = registry.get(function)
    return [golden(function, *vector.generate(rng), label=f"generated {i}") for i in range(count)]


def variants_on(core: str, g: Golden) -> tuple[str, ...]:
    everything = ("default", *CORES[core].tiers)
    return everything if g.variants is None else tuple(v for v in g.variants if v in everything)


def run_on_core(core: str, goldens: Sequence[Golden]) -> list[tuple[Golden, str, CaseResult]]:
    """Every golden case on every variant it runs as on ``core``, in one batch."""
    plan = [(g, v) for g in goldens for v in variants_on(core, g)]
    run = run_batch(core, [dataclasses.replace(g.case, variant=v) for g, v in plan])
    return [(g, v, r) for (g, v), r in zip(plan, run.results, strict=True)]


def _describe(g: Golden, variant: str) -> str:
    sizes = {name: a.size for name, a in g.case.arrays.items()}
    return f"{g.case.function} [{g.label}] variant={variant} params={dict(g.case.params)} sizes={sizes}"


def _as_expected(result: CaseResult, expected: np.ndarray) -> np.ndarray:
    return result.output.view(expected.dtype) if expected.dtype != np.int8 else result.output


def failures(results: Sequence[tuple[Golden, str, CaseResult]], function: str | None = None) -> list[str]:
    """What differs: status, golden output, or (agree) the variants among themselves."""
    problems = []
    by_golden: dict[int, list[tuple[str, CaseResult]]] = {}
    for g, variant, result in results:
        if function is not None and g.case.function != function:
            continue
        by_golden.setdefault(id(g), []).append((variant, result))
        if result.kernel_status != g.status:
            problems.append(f"status {result.kernel_status}, expected {g.status}: {_describe(g, variant)}")
        elif g.output is not None and g.status == ARM_CMSIS_NN_SUCCESS:
            got = _as_expected(result, g.output)
            if got.shape != g.output.shape or not np.array_equal(got, g.output):
                wrong = np.flatnonzero(got != g.output) if got.shape == g.output.shape else np.array([0])
                problems.append(
                    f"{wrong.size} of {g.output.size} outputs differ, first at {wrong[0]}: got "
                    f"{got[wrong[0]] if got.size else '-'}, expected {g.output[wrong[0]]}: {_describe(g, variant)}"
                )
    goldens = {id(g): g for g, _, _ in results}
    for key, runs in by_golden.items():
        g = goldens[key]
        if g.agree and g.status == ARM_CMSIS_NN_SUCCESS and len(runs) > 1:
            first_variant, first = runs[0]
            for variant, result in runs[1:]:
                if not np.array_equal(result.output, first.output):
                    problems.append(
                        f"variants {first_variant} and {variant} disagree: {_describe(g, variant)}"
                    )
    return problems


def assert_no_failures(core: str, results: list[tuple[Golden, str, CaseResult]], function: str) -> None:
    count = sum(1 for g, _, _ in results if g.case.function == function)
    assert count, f"no {function} cases ran on {core}"
    problems = failures(results, function)
    assert not problems, (
        f"seed {SEED}, {core}: {len(problems)} of {count} {function} runs wrong; " + "; ".join(problems[:3])
    )

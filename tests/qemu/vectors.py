"""Conformance-vector cases (shared VECTORS.md form) as kernels_c harness cases, run one batch per core.

A :class:`VectorCase` is what ``refsim.conformance.registry.get(fn).generate(rng)`` gives (arrays and
flattened params), plus what the C kernel must return: the golden output (``.run``) or a status
code. :func:`harness_case` maps it onto the harness's parameter list (``refsim.qemu.FUNCTIONS``),
:class:`CoreBatches` runs every case of a test module in ONE QEMU start per core, on the public
function and on every tier variant the core has, and keeps the results for the module's tests.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from refsim.qemu import CORES, FUNCTIONS, Case, CaseResult, run_batch

SEED = int(os.environ.get("REFSIM_QEMU_SEED", "20250101"))

#: ARM_CMSIS_NN_SUCCESS / ARM_CMSIS_NN_ARG_ERROR.
SUCCESS = 0
ARG_ERROR = -1


@dataclass(frozen=True)
class VectorCase:
    """One call: arrays and params in conformance-vector form, and what the kernel must give.

    ``expected``: the golden int8 output, or one per tier (``"scalar"``, ``"dsp"``, ``"mve"``), or
    None (not compared). ``status``: the kernel status per tier (missing tiers expect SUCCESS).
    ``variants``: which variants run (default: the public function and every tier the core has).
    """

    name: str
    function: str
    arrays: Mapping[str, np.ndarray]
    params: Mapping[str, object]
    expected: np.ndarray | Mapping[str, np.ndarray] | None = None
    status: Mapping[str, int] = field(default_factory=dict)
    variants: tuple[str, ...] | None = None

    def expected_status(self, tier: str) -> int:
        return self.status.get(tier, SUCCESS)

    def expected_output(self, tier: str) -> np.ndarray | None:
        want = self.expected[tier] if isinstance(self.expected, Mapping) else self.expected
        return None if want is None else np.asarray(want, np.int8).ravel()


def harness_case(case: VectorCase, variant: str) -> Case:
    """The harness call of a vector case: params picked by the harness's names (``ctx.size`` -1,
    the variant's own scratch, unless the case sets it), ``bias`` empty (NULL) when ``bias_is_null``."""
    spec = FUNCTIONS[case.function]
    params = {name: int(case.params.get(name, -1 if name == "ctx.size" else 0)) for name in spec.params}
    missing = [name for name in spec.params if name != "ctx.size" and name not in case.params]
    if missing:
        raise KeyError(f"{case.name}: params {missing} missing for {case.function}")
    arrays = {}
    for array_spec in spec.arrays:
        data = np.ascontiguousarray(case.arrays[array_spec.name]).ravel().astype(array_spec.dtype)
        if array_spec.name == "bias" and case.params.get("bias_is_null"):
            data = data[:0]
        arrays[array_spec.name] = data
    return Case(case.function, params, arrays, variant)


def variant_tier(core: str, variant: str) -> str:
    """The ISA tier a variant runs on `core` ("default" is the core's own)."""
    return CORES[core].tier if variant == "default" else variant


@dataclass(frozen=True)
class Outcome:
    case: VectorCase
    variant: str
    tier: str
    result: CaseResult


class CoreBatches:
    """Every case of a module, one QEMU start per core, run on first use and kept."""

    def __init__(self, cases: Callable[[], Sequence[VectorCase]]) -> None:
        self._cases = cases
        self._outcomes: dict[str, list[Outcome]] = {}

    def outcomes(self, core: str) -> list[Outcome]:
        if core not in self._outcomes:
            plan = []
            for case in self._cases():
                for variant in case.variants or ("default", *CORES[core].tiers):
                    plan.append((case, variant))
            run = run_batch(core, [harness_case(case, variant) for case, variant in plan])
            self._outcomes[core] = [
                Outcome(case, variant, variant_tier(core, variant), result)
                for (case, variant), result in zip(plan, run.results, strict=True)
            ]
        return self._outcomes[core]


def describe(outcome: Outcome) -> str:
    shown = {k: v for k, v in outcome.case.params.items() if not k.startswith(("route_", "buffer_size_"))}
    return f"{outcome.case.name} ({outcome.case.function}, variant {outcome.variant}): params={shown}"


def failures(outcomes: Sequence[Outcome]) -> list[str]:
    """Every outcome whose status or output differs from the case's expectation, described."""
    found = []
    for o in outcomes:
        want_status = o.case.expected_status(o.tier)
        if o.result.kernel_status != want_status:
            found.append(f"status {o.result.kernel_status}, expected {want_status}: {describe(o)}")
        elif want_status == SUCCESS and o.case.expected_output(o.tier) is not None:
            want = o.case.expected_output(o.tier)
            if not np.array_equal(o.result.output, want):
                wrong = np.flatnonzero(o.result.output != want) if o.result.output.size == want.size else [0]
                found.append(
                    f"{len(wrong)} of {want.size} outputs differ (first at {wrong[0]}): {describe(o)}"
                )
    return found


def assert_all_match(core: str, outcomes: Sequence[Outcome]) -> None:
    """np.testing.assert_array_equal-strength check of every outcome, reporting all at once."""
    found = failures(outcomes)
    assert not found, f"seed {SEED}, {core}: {len(found)} of {len(outcomes)} calls wrong:\n" + "\n".join(
        found[:5]
    )
    for o in outcomes:
        want = o.case.expected_output(o.tier)
        if want is not None and o.case.expected_status(o.tier) == SUCCESS:
            np.testing.assert_array_equal(o.result.output, want)


def with_params(case: VectorCase, name: str, **changes: object) -> VectorCase:
    """A copy of `case` with some params changed (and a new name)."""
    return dataclasses.replace(case, name=name, params={**case.params, **changes})


def size_bytes(size: int) -> np.ndarray:
    """What a *_get_buffer_size entry outputs for `size`: the int32 as 4 little-endian bytes."""
    return np.array([size], "<i4").view(np.int8)


#: The sizers' variants: the build's function, a scalar build's answer, the host-callable _dsp/_mve.
SIZE_VARIANTS = ("default", "scalar", "dsp", "mve")

"""Conformance cases through C kernels on one Cortex-M core under QEMU (``refsim conformance --isa``).

    target = resolve_target(isa="dsp", cpu=None)              # cortex-m4, the public functions
    cases = generate_cases(kernel_functions(), count=10, seed=0)
    report = run_cases(target, cases, count=True)           # one QEMU start per batch
    report.failed, report.kernels["arm_fully_connected_s8"].per_mac

Cases are conformance vectors (shared VECTORS.md): drawn by the conformance generators
(``registry.get(fn).generate(default_rng([seed, i]))``, expected output from the golden model)
or read from a vector directory, then turned into harness cases (the parameter names are the
same). The kernels are refsim's kernels_c, or a user's CMSIS-NN-API library built in their place
(:func:`build_library_harness`). Which functions run is asked of ``refsim.qemu.batch.FUNCTIONS``
at run time, so kernels added to kernels_c are included without a change here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from refsim.conformance import vectors as vec
from refsim.errors import VectorError
from refsim.qemu import batch
from refsim.qemu.build import Harness, build_harness
from refsim.qemu.cores import CORES, TIERS, Core, get_core
from refsim.qemu.counting import InstructionCount, run_batch_counted
from refsim.qemu.errors import QemuError, QemuFaultError
from refsim.qemu.library import build_library_harness, library_layout
from refsim.qemu.run import run_batch

#: The core each tier runs on when ``--cpu`` is not given.
DEFAULT_CPU: dict[str, str] = {"scalar": "cortex-m3", "dsp": "cortex-m4", "mve": "cortex-m55"}

#: arm_cmsis_nn_status values.
KERNEL_STATUS = {
    0: "ARM_CMSIS_NN_SUCCESS",
    -1: "ARM_CMSIS_NN_ARG_ERROR",
    -2: "ARM_CMSIS_NN_NO_IMPL_ERROR",
    -3: "ARM_CMSIS_NN_FAILURE",
}

#: JSON written by ``--count-instructions`` (docs/conformance.md).
COUNTS_FORMAT = "refsim-instruction-counts"
COUNTS_VERSION = 1

Progress = Callable[[int], None]


# --- what runs where ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """Where cases run: a core, the tier asked for, the batch variant that gives it, the harness.

    ``variant`` is ``default`` (the public CMSIS-NN function, as a deployment calls it) when the
    tier is the core's own, else that tier's variant (refsim's library only). ``available``: the
    functions the harness can run (a user's library may lack some). ``model``: the core model
    whose build runs on ``core``'s board when QEMU has no machine of its own for it
    (cortex-m0plus, cortex-m85; refsim.qemu.timing_cli.model_target), else None.
    """

    core: Core
    isa: str
    variant: str
    harness: Harness
    library: Path | None = None
    available: frozenset[str] | None = None
    model: str | None = None

    @property
    def library_name(self) -> str:
        return str(self.library) if self.library else "kernels_c"

    @property
    def cpu(self) -> str:
        """The ``--cpu`` that resolves to this target: the core model, or the QEMU core."""
        return self.model or self.core.name

    def describe(self) -> str:
        """What runs where: ``kernels_c on cortex-m4 (mps2-an386)``, or for a core model run on
        another core's board ``kernels_c for cortex-m0plus (-mcpu=cortex-m0plus) on cortex-m3
        (mps2-an385)``."""
        board = f"{self.core.name} ({self.core.machine})"
        if self.model is None:
            return f"{self.library_name} on {board}"
        mcpu = " ".join(f for f in self.harness.core.gcc_flags if f.startswith("-mcpu="))
        return f"{self.library_name} for {self.model} ({mcpu}) on {board}"


def resolve_core(isa: str | None, cpu: str | None) -> tuple[Core, str]:
    """The core and tier from ``--isa``/``--cpu``: the tier's default core, or the named core
    (whose own tier is the default tier). A core runs its tier and every poorer one."""
    if isa is not None and isa not in TIERS:
        raise QemuError(f"--isa must be one of {', '.join(TIERS)}, got {isa!r}")
    if cpu is None and isa is None:
        raise QemuError("running C kernels needs --isa (scalar, dsp, mve) or --cpu")
    core = get_core(cpu) if cpu is not None else CORES[DEFAULT_CPU[isa]]  # type: ignore[index]
    isa = isa or core.tier
    if isa not in core.tiers:
        raise QemuError(
            f"--isa {isa} needs a core with that tier; {core.name} runs {', '.join(core.tiers)} "
            f"(try --cpu {DEFAULT_CPU[isa]})"
        )
    return core, isa


def resolve_target(isa: str | None, cpu: str | None, kernels_dir: Path | None = None) -> Target:
    """Resolve the core and tier and build (or find in the cache) the harness that runs them."""
    core, isa = resolve_core(isa, cpu)
    return build_target(core, isa, kernels_dir)


def build_target(
    core: Core,
    isa: str,
    kernels_dir: Path | None = None,
    *,
    kernels_c: Callable[[Core], Harness] = build_harness,
    model: str | None = None,
) -> Target:
    """The target of a resolved core and tier: kernels_c's harness (built by ``kernels_c``) or the
    library's. ``core`` may carry another ``-mcpu`` than its board's own and ``model`` name that
    core model (refsim.qemu.timing_cli.model_target)."""
    if kernels_dir is None:
        variant = "default" if isa == core.tier else isa
        return Target(core, isa, variant, kernels_c(core), model=model)
    if isa != core.tier:
        raise QemuError(
            f"--kernels-dir runs the library's public functions, which pick the core's own tier: "
            f"--isa must be {core.tier} on {model or core.name}, got {isa}"
        )
    harness, available = build_library_harness(core, kernels_dir)
    return Target(core, isa, "default", harness, kernels_dir, available, model)


def kernel_functions(names: list[str] | None = None) -> list[str]:
    """CMSIS-NN functions both the harness (``batch.FUNCTIONS``) and the conformance registry know,
    in registry order; ``names`` (``--kernel`` values: functions, families, ``all``) narrows them."""
    runnable = set(batch.FUNCTIONS)
    return [f for f in vec.resolve_functions(names) if f in runnable]


# --- cases ----------------------------------------------------------------------------------------


def generate_cases(
    functions: Iterable[str], count: int, seed: int, *, progress: Progress | None = None
) -> list[vec.Case]:
    """``count`` golden cases per function; case ``i`` from ``default_rng([seed, i])``."""
    cases = []
    for function in functions:
        for case in vec.generate_cases(function, count, seed):
            cases.append(case)
            if progress:
                progress(1)
    return cases


def _list_item(name: str, params: Mapping[str, Any]) -> int | None:
    """``permutations[k]`` from the list param ``permutations``, padded with k."""
    match = re.fullmatch(r"(\w+)\[(\d+)\]", name)
    if match is None or match.group(1) not in params:
        return None
    items, k = list(params[match.group(1)]), int(match.group(2))
    return int(items[k]) if k < len(items) else k


def to_batch_case(case: vec.Case, variant: str = "default") -> batch.Case:
    """A conformance vector as a harness case: params in the harness order (``ctx.size`` -1, the
    variant's own scratch size; list params by index), arrays flattened, an optional array
    empty (NULL) when the vector says so (``bias_is_null``)."""
    spec = batch.FUNCTIONS[case.function]
    params: dict[str, int] = {}
    for name in spec.params:
        if name in case.params:
            params[name] = int(case.params[name])
        elif name == "ctx.size":
            params[name] = -1
        elif (item := _list_item(name, case.params)) is not None:
            params[name] = item
        else:
            raise VectorError(f"{case.label}: params lack {name!r}, which the C harness needs")
    arrays: dict[str, np.ndarray] = {}
    for array in spec.arrays:
        if array.name not in case.arrays:
            if not array.optional:
                raise VectorError(f"{case.label}: case lacks array {array.name!r}")
            arrays[array.name] = np.zeros(0, array.dtype)
            continue
        data = np.ascontiguousarray(case.arrays[array.name]).reshape(-1)
        if data.dtype != array.dtype:
            raise VectorError(f"{case.label}: array {array.name!r} must be {array.dtype}, got {data.dtype}")
        if array.optional and case.params.get(
            f"{array.name}_is_null", case.params.get("bias_is_null", False)
        ):
            data = data[:0]
        arrays[array.name] = data
    return batch.Case(case.function, params, arrays, variant)


def compare_result(case: vec.Case, result: batch.CaseResult) -> str:
    """Empty when the C kernel gave the expected output; else one line saying what differs."""
    if result.harness_status != 0:
        return f"harness: {batch.HARNESS_STATUS.get(result.harness_status, result.harness_status)}"
    if result.kernel_status != 0:
        name = KERNEL_STATUS.get(result.kernel_status, "unknown status")
        return f"kernel returned {result.kernel_status} ({name}), expected 0 (ARM_CMSIS_NN_SUCCESS)"
    expected = np.asarray(case.output)
    raw = result.output
    if raw.nbytes != expected.nbytes:
        return f"output size: expected {expected.nbytes} bytes, got {raw.nbytes}"
    actual = raw.view(expected.dtype.newbyteorder("<")).astype(expected.dtype).reshape(expected.shape)
    return vec.compare(expected, actual)


# --- running ----------------------------------------------------------------------------------


@dataclass
class KernelSummary:
    """Per kernel: cases run, passed, failed; instructions and MACs of the counted cases."""

    function: str
    cases: int = 0
    passed: int = 0
    failed: int = 0
    counted: int = 0
    instructions: int = 0
    macs: int = 0

    @property
    def per_mac(self) -> float | None:
        return self.instructions / self.macs if self.macs else None

    @property
    def per_case(self) -> float | None:
        return self.instructions / self.counted if self.counted else None


@dataclass(frozen=True)
class Failure:
    case: vec.Case
    message: str


@dataclass(frozen=True)
class CountRecord:
    """One counted case: its label and the count."""

    case: str
    count: InstructionCount

    def record(self) -> dict[str, Any]:
        return {**self.count.record(), "case": self.case}


@dataclass
class Report:
    """What a conformance run on one core found."""

    target: Target
    kernels: dict[str, KernelSummary] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)
    counts: list[CountRecord] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)  # function → cases not run
    skip_reason: dict[str, str] = field(default_factory=dict)
    emulator_starts: int = 0

    @property
    def passed(self) -> int:
        return sum(k.passed for k in self.kernels.values())

    @property
    def failed(self) -> int:
        return sum(k.failed for k in self.kernels.values())

    def closing_line(self) -> str:
        return f"{self.passed} passed, {self.failed} failed"


def _batches(cases: Sequence[batch.Case], outputs: Sequence[int], core: Core) -> list[range]:
    """Split cases into batches whose input and results fit the core's bulk region."""
    limit = core.bulk.length // 2 - 4096
    spans, start, used = [], 0, 0
    for i, (case, out) in enumerate(zip(cases, outputs, strict=True)):
        size = len(batch.encode_case(case)) + out + 64
        if i > start and used + size > limit:
            spans.append(range(start, i))
            start, used = i, 0
        used += size
    if start < len(cases):
        spans.append(range(start, len(cases)))
    return spans


def _timeout(cases: int) -> float:
    return 120.0 + 0.2 * cases


def run_cases(
    target: Target,
    cases: Sequence[vec.Case],
    *,
    count: bool = False,
    progress: Progress | None = None,
) -> Report:
    """Run ``cases`` through the target's C kernels (one QEMU start per batch; a batch is all the
    cases that fit the board's bulk region) and compare with their expected outputs bit for bit.

    A case whose function the target cannot run is skipped (:attr:`Report.skipped`). A CPU fault
    fails the faulting case and the rest of its batch runs in a new QEMU start.
    """
    report = Report(target)
    runnable: list[vec.Case] = []
    for case in cases:
        reason = _skip_reason(target, case.function)
        if reason:
            report.skipped[case.function] = report.skipped.get(case.function, 0) + 1
            report.skip_reason[case.function] = reason
            if progress:
                progress(1)
        else:
            runnable.append(case)
    batch_cases = [to_batch_case(c, target.variant) for c in runnable]
    outputs = [np.asarray(c.output).nbytes for c in runnable]
    for span in _batches(batch_cases, outputs, target.core):
        pending = list(span)
        while pending:
            pending = _run_span(
                target, runnable, batch_cases, pending, report, count=count, progress=progress
            )
    return report


def _skip_reason(target: Target, function: str) -> str:
    if function not in batch.FUNCTIONS:
        return "kernels_c has no harness entry for it"
    if target.available is not None and function not in target.available:
        return f"{target.library_name} does not define it"
    return ""


def _run_span(
    target: Target,
    cases: Sequence[vec.Case],
    batch_cases: Sequence[batch.Case],
    indices: list[int],
    report: Report,
    *,
    count: bool,
    progress: Progress | None,
) -> list[int]:
    """Run one batch; the indices still to run (after a faulting case), or []."""
    chosen = [batch_cases[i] for i in indices]
    report.emulator_starts += 1
    try:
        if count:
            counted = run_batch_counted(
                target.core, chosen, harness=target.harness, check=False, timeout=_timeout(len(chosen))
            )
            results, counts = counted.run.results, counted.counts
        else:
            run = run_batch(
                target.core, chosen, harness=target.harness, check=False, timeout=_timeout(len(chosen))
            )
            results, counts = run.results, (None,) * len(chosen)
    except QemuFaultError as fault:
        if not 0 <= fault.case_index < len(indices):
            raise
        faulting = cases[indices[fault.case_index]]
        summary = report.kernels.setdefault(faulting.function, KernelSummary(faulting.function))
        summary.cases += 1
        summary.failed += 1
        report.failures.append(Failure(faulting, f"CPU fault: {fault}"))
        if progress:
            progress(fault.case_index + 1)
        # The cases before the fault ran but their results were lost with QEMU: run them again.
        before, after = indices[: fault.case_index], indices[fault.case_index + 1 :]
        if before:
            rest = _run_span(target, cases, batch_cases, before, report, count=count, progress=None)
            assert not rest
        return after
    for i, result, counted_case in zip(indices, results, counts, strict=True):
        case = cases[i]
        summary = report.kernels.setdefault(case.function, KernelSummary(case.function))
        summary.cases += 1
        message = compare_result(case, result)
        if message:
            summary.failed += 1
            report.failures.append(Failure(case, message))
        else:
            summary.passed += 1
        if counted_case is not None:
            macs = case.params.get("macs")
            macs = int(macs) if isinstance(macs, int) else counted_case.macs
            counted_case = replace(counted_case, macs=macs)
            summary.counted += 1
            summary.instructions += counted_case.total
            summary.macs += macs or 0
            report.counts.append(CountRecord(case.label, counted_case))
    if progress:
        progress(len(indices))
    return []


# --- outputs ------------------------------------------------------------------------------------


def save_reproducer(report: Report, failure: Failure, directory: Path) -> Path:
    """Write the failing case as a vector directory (VECTORS.md) that fails the same way when run
    with the same ``--isa``/``--cpu``; informational params say where it failed. Returns the file."""
    target = report.target
    params = dict(
        failure.case.params,
        failed_on=target.cpu,
        failed_isa=target.isa,
        failed_variant=target.variant,
        failed_library=target.library_name,
        failure=failure.message,
    )
    case = vec.Case(
        failure.case.function, failure.case.case_id, dict(failure.case.arrays), params, failure.case.output
    )
    return vec.write_case(directory, case)


def failure_kind(message: str) -> str:
    """The kind of a failure message: ``CPU fault``, ``kernel status``, ``harness``, ``output size``
    or ``wrong values`` (what :func:`compare_result` and :func:`run_cases` write)."""
    if message.startswith("CPU fault"):
        return "CPU fault"
    if message.startswith("kernel returned"):
        return "kernel status " + message.split()[2]
    if message.startswith("harness:"):
        return message
    if message.startswith("output size"):
        return "output size"
    return "wrong values"


def mismatch_classes(report: Report) -> dict[tuple[str, str], list[Failure]]:
    """The failures by class (function, :func:`failure_kind`), in order of first appearance."""
    classes: dict[tuple[str, str], list[Failure]] = {}
    for failure in report.failures:
        classes.setdefault((failure.case.function, failure_kind(failure.message)), []).append(failure)
    return classes


def save_reproducers(report: Report, directory: Path) -> dict[tuple[str, str], Path]:
    """The first failing case of every mismatch class, written into one vector directory (so
    ``--vectors directory`` reruns one case per class); the file of each class."""
    return {
        key: save_reproducer(report, failures[0], directory)
        for key, failures in mismatch_classes(report).items()
    }


def counts_document(report: Report) -> dict[str, Any]:
    """The ``--count-instructions`` JSON: one record per counted case."""
    target = report.target
    return {
        "format": COUNTS_FORMAT,
        "version": COUNTS_VERSION,
        "core": target.cpu,
        "isa": target.isa,
        "variant": target.variant,
        "library": target.library_name,
        "records": [record.record() for record in report.counts],
    }


def write_counts(path: Path, report: Report) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(counts_document(report), indent=1) + "\n")


__all__ = [
    "DEFAULT_CPU",
    "CountRecord",
    "Failure",
    "KernelSummary",
    "Report",
    "Target",
    "build_library_harness",
    "build_target",
    "compare_result",
    "counts_document",
    "failure_kind",
    "generate_cases",
    "kernel_functions",
    "library_layout",
    "mismatch_classes",
    "resolve_core",
    "resolve_target",
    "run_cases",
    "save_reproducer",
    "save_reproducers",
    "to_batch_case",
    "write_counts",
]

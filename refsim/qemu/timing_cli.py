"""``refsim conformance --count-cycles FILE [--system NAME]``: instruction-timed cycles per case.

The conformance run checks the cases first; the cases of functions the harness runs are then
timed (refsim/qemu/timing.py) in batches, one QEMU start each, and written as

    {"format": "refsim-instruction-cycles", "version": 1, "core": ..., "system": ...,
     "qemu_core": ..., "library": ..., "llvm_mca": ..., "records": [
        {"case": "<function>/<id>", "kernel", "variant", "shape", "core", "system",
         "instructions", "cycles", "by_component": {...}, "macs"}, ...]}
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from isa_models.cortex_m.cores import CORE_MODELS, get_core_model
from refsim.conformance import vectors as vec
from refsim.qemu import batch
from refsim.qemu.build import Harness
from refsim.qemu.conformance import (
    Target,
    build_library_harness,
    build_target,
    resolve_core,
    resolve_target,
    to_batch_case,
)
from refsim.qemu.cores import CORES
from refsim.qemu.mca import llvm_version
from refsim.qemu.timing import CaseTiming, TimingError, default_system, harness_for, qemu_core_for, time_cases

CYCLES_FORMAT = "refsim-instruction-cycles"


def model_target(isa: str | None, cpu: str | None, kernels_dir: Path | None = None) -> Target:
    """:func:`~refsim.qemu.conformance.resolve_target` for any ``--cpu``, the core models QEMU has
    no machine for included: that model's own build (:func:`~refsim.qemu.timing.qemu_core_for`:
    its board with its ``-mcpu``; kernels_c's harness by :func:`~refsim.qemu.timing.harness_for`,
    or the library) on its board, named by the model (:attr:`Target.model`). cortex-m0plus: the
    ARMv6-M build on the M3 board; cortex-m85: its code path's MVE build on the M55 board."""
    if cpu is None or cpu in CORES or cpu not in CORE_MODELS:
        return resolve_target(isa, cpu, kernels_dir)
    model = get_core_model(cpu)
    _, isa = resolve_core(isa, model.qemu_core)  # the tiers of the board's core
    return build_target(
        qemu_core_for(model), isa, kernels_dir, kernels_c=lambda _: harness_for(model), model=model.name
    )


def _harness(model_name: str, target: Target) -> Harness:
    model = get_core_model(model_name)
    qcore = qemu_core_for(model)
    if qcore == target.core:  # a target of model_target, or a core QEMU runs
        return target.harness
    if target.library is not None:  # cortex-m0plus: ARMv6-M library and harness, the M3 board's startup
        return build_library_harness(qcore, target.library)[0]
    return harness_for(model)


def _batches(cases: Sequence[batch.Case], limit: int) -> list[list[batch.Case]]:
    out: list[list[batch.Case]] = []
    size = 0
    for case in cases:
        n = len(batch.encode_case(case))
        if out and size + n <= limit and len(out[-1]) < 256:
            out[-1].append(case)
            size += n
        else:
            out.append([case])
            size = n
    return out


def count_cycles(
    target: Target,
    cases: Sequence[vec.Case],
    *,
    cpu: str | None,
    system: str | None,
    runnable: frozenset[str],
) -> tuple[list[tuple[str, CaseTiming]], dict[str, Any]]:
    """Time every case whose function is in ``runnable``; (label, timing) pairs and the JSON header."""
    model = get_core_model(cpu or target.core.name)
    harness = _harness(model.name, target)
    chosen = [c for c in cases if c.function in runnable]
    if not chosen:
        raise TimingError("--count-cycles: no case of a function the harness runs")
    batch_cases = [to_batch_case(c, target.variant) for c in chosen]
    timings: list[CaseTiming] = []
    for part in _batches(batch_cases, harness.core.bulk.length // 4):
        timings += time_cases(model.name, part, system=system, harness=harness, timeout=300.0)
    header = {
        "format": CYCLES_FORMAT,
        "version": 1,
        "core": model.name,
        "system": system or default_system(model).name,
        "qemu_core": harness.core.name,
        "gcc_flags": list(harness.core.gcc_flags),
        "library": str(target.library) if target.library else "kernels_c",
        "llvm_mca": llvm_version(),
    }
    return list(zip((c.label for c in chosen), timings, strict=True)), header


def write_cycles(path: Path, labelled: Sequence[tuple[str, CaseTiming]], header: dict[str, Any]) -> None:
    document = {**header, "records": [{"case": label, **t.record()} for label, t in labelled]}
    path.write_text(json.dumps(document, indent=1) + "\n")


__all__ = ["CYCLES_FORMAT", "count_cycles", "model_target", "write_cycles"]

"""Conformance campaigns sharded into engine tasks (``refsim conformance --isa ... --workers N --ray ADDR``).

    spec = TargetSpec(isa="dsp", cpu=None, kernels_dir=None)
    tasks = generated_tasks(functions, count=1000, seed=0, per_task=50)
    with make_engine(workers=2, ray=None) as engine:
        report = run_campaign(engine, resolve(spec), spec, tasks, count=False)

A task is a slice of the campaign: ``per_task`` generated cases of one function (the payload is its
function, seed and index range, so the worker draws the cases and computes their golden outputs
itself), or a list of cases read from a vector directory. The worker resolves the target from the
:class:`TargetSpec` (once per worker process), which finds the harness in the node's build cache or
builds it there, once per node (:func:`refsim.qemu.build.build_once` takes a lock), and runs its
cases with :func:`refsim.qemu.conformance.run_cases`: one QEMU start per batch of its own cases.

The shard reports are merged in task order, and the tasks are in the serial path's case order, so
the merged :class:`~refsim.qemu.conformance.Report` lists the same kernels, failures (same order,
same messages), instruction counts and skips as one ``run_cases`` over every case; only
``emulator_starts`` grows (a batch never spans two tasks).
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from refsim.conformance import vectors as vec
from refsim.engine import Engine, Task
from refsim.errors import RefsimError
from refsim.qemu import conformance as qc
from refsim.qemu.timing_cli import model_target

#: Cases per task by default. A QEMU start (and the batch's fixed cost) is ~0.1-0.2 s and a small
#: case a few ms, so a task of 500 spends most of its time on cases (benchmarks/campaigns.py,
#: docs/scaling.md); a larger campaign wants larger tasks only to keep the driver's task count low.
PER_TASK = 500


@dataclass(frozen=True)
class TargetSpec:
    """What a worker needs to rebuild the target on its own node: ``--isa``, ``--cpu`` (a QEMU core
    or a core model such as cortex-m0plus, whose own build every worker makes:
    :func:`refsim.qemu.timing_cli.model_target`), ``--kernels-dir`` (a path that must exist on
    every node)."""

    isa: str | None
    cpu: str | None
    kernels_dir: str | None = None
    harness_key: str | None = None  # the driver's build key; None: not checked
    golden: str | None = None  # the driver's golden_fingerprint(); None: not checked

    def pinned(self, target: qc.Target) -> TargetSpec:
        """This spec with the driver's harness key and golden model, which every worker must match."""
        return replace(self, harness_key=target.harness.key, golden=golden_fingerprint())


@functools.lru_cache(maxsize=8)
def resolve(spec: TargetSpec) -> qc.Target:
    """The spec's target, resolved (and its harness built or found) once per process; a worker
    whose build or golden model differs from the driver's is refused (one line naming the node)."""
    kernels_dir = Path(spec.kernels_dir) if spec.kernels_dir is not None else None
    target = model_target(spec.isa, spec.cpu, kernels_dir)
    node = os.uname().nodename
    if spec.harness_key is not None and target.harness.key != spec.harness_key:
        raise CampaignError(
            f"worker {node} builds {target.library_name} for {target.cpu} as {target.harness.key}, "
            f"the campaign's driver as {spec.harness_key}: install the same refsim, toolchain "
            f"(gcc-arm-none-eabi) and library sources on every node"
        )
    if spec.golden is not None and golden_fingerprint() != spec.golden:
        raise CampaignError(
            f"worker {node} has golden model {golden_fingerprint()}, the campaign's driver {spec.golden}: "
            f"install the same refsim on every node"
        )
    return target


class CampaignError(RefsimError):
    """A worker cannot take part in the campaign (another build or golden model than the driver's)."""


@functools.cache
def golden_fingerprint() -> str:
    """refsim's version and a hash of the golden model's sources (kernels_py, refsim/conformance):
    what the expected outputs of generated cases depend on."""
    import kernels_py
    import refsim
    import refsim.conformance

    digest = hashlib.sha256(f"refsim {refsim.__version__}".encode())
    for package in (kernels_py, refsim.conformance):
        root = Path(package.__file__).parent
        for path in sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts):
            digest.update(f"\0{package.__name__}/{path.relative_to(root).as_posix()}\0".encode())
            digest.update(path.read_bytes())
    return f"{refsim.__version__}+{digest.hexdigest()[:16]}"


def generated_tasks(
    functions: Sequence[str], count: int, seed: int, *, per_task: int = PER_TASK
) -> list[Task]:
    """``count`` cases of each function (case ``i`` from ``default_rng([seed, i])``), ``per_task``
    to a task, in the order :func:`refsim.qemu.conformance.generate_cases` gives them."""
    if per_task < 1:
        raise ValueError(f"per_task must be at least 1, got {per_task}")
    return [
        Task(
            key=f"{function}/{seed}/{start}",
            payload=("generate", function, seed, start, min(per_task, count - start)),
        )
        for function in functions
        for start in range(0, count, per_task)
    ]


def case_tasks(cases: Sequence[vec.Case], *, per_task: int = PER_TASK) -> list[Task]:
    """Cases already at hand (a vector directory), ``per_task`` to a task, in their order."""
    return [
        Task(key=f"cases/{start}", payload=("cases", tuple(cases[start : start + per_task])))
        for start in range(0, len(cases), per_task)
    ]


def _cases(payload: tuple) -> list[vec.Case]:
    kind = payload[0]
    if kind == "generate":
        _, function, seed, start, count = payload
        return list(vec.generate_cases(function, count, seed, start=start))
    return list(payload[1])


def task_cases(task: Task) -> int:
    """How many cases a task runs (for progress bars)."""
    payload = task.payload
    return payload[4] if payload[0] == "generate" else len(payload[1])


def shard_task(payload: tuple[TargetSpec, bool, tuple], blobs: dict[str, Any]) -> qc.Report:
    """The engine task: one slice of the campaign run on this worker's node."""
    spec, count, cases = payload
    report = qc.run_cases(resolve(spec), _cases(cases), count=count)
    return report


def merge(target: qc.Target, shards: Iterable[qc.Report]) -> qc.Report:
    """One report from shard reports given in task order (as ``run_cases`` over all their cases)."""
    merged = qc.Report(target)
    for shard in shards:
        for function, s in shard.kernels.items():
            into = merged.kernels.setdefault(function, qc.KernelSummary(function))
            into.cases += s.cases
            into.passed += s.passed
            into.failed += s.failed
            into.counted += s.counted
            into.instructions += s.instructions
            into.macs += s.macs
        merged.failures += shard.failures
        merged.counts += shard.counts
        for function, n in shard.skipped.items():
            merged.skipped[function] = merged.skipped.get(function, 0) + n
        merged.skip_reason.update(shard.skip_reason)
        merged.emulator_starts += shard.emulator_starts
    return merged


def run_campaign(
    engine: Engine,
    target: qc.Target,
    spec: TargetSpec,
    tasks: Sequence[Task],
    *,
    count: bool = False,
    progress: Callable[[int], None] | None = None,
) -> qc.Report:
    """Every task on ``engine``; the merged report (module docstring). Workers check that they
    build the driver's harness (``target``) and compute its golden model."""
    spec = spec.pinned(target)
    wrapped = [Task(t.key, (spec, count, t.payload), t.needs) for t in tasks]
    order = {t.key: i for i, t in enumerate(wrapped)}
    if len(order) != len(wrapped):
        raise ValueError("campaign tasks need distinct keys")
    shards: list[qc.Report | None] = [None] * len(wrapped)
    for task, shard in engine.map(shard_task, wrapped, {}):
        shards[order[task.key]] = shard
        if progress:
            progress(task_cases(Task(task.key, task.payload[2])))
    return merge(target, [s for s in shards if s is not None])


__all__ = [
    "PER_TASK",
    "CampaignError",
    "TargetSpec",
    "case_tasks",
    "generated_tasks",
    "golden_fingerprint",
    "merge",
    "resolve",
    "run_campaign",
    "shard_task",
    "task_cases",
]

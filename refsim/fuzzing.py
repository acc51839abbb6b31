"""Fuzz campaigns sharded into engine tasks (benchmarks/fuzz_pte.py, benchmarks/tflite_fuzz.py).

    worker = WorkerSpec(argv=(script, "--worker", "--seed", "0"), cwd=str(root), hang_seconds=5.0)
    tasks = index_tasks("tflite/0", range(30_000), worker, per_task=1000)
    with make_engine(workers=2, ray=None) as engine:       # or ray="auto" | "local" | ADDRESS
        results = run_indexed(engine, tasks)               # one dict per case, in index order

Case ``i`` of a campaign is drawn from its own stream, :func:`case_rng` ``(seed, i)`` (as a
conformance case is from ``default_rng([seed, i])``), so any case replays alone and a campaign
splits into shards of case indices that need nothing from each other. A shard is a
:mod:`refsim.engine` task: in this process (``--workers 1``), on a local process pool
(``--workers N``) or on Ray (``--ray ADDRESS``).

A shard runs its cases in a guarded worker subprocess of its own (:class:`CaseWorker`), the
campaign's script started with ``--worker``:

- the worker imports, warms up (compiled kernels, seed models) and caps its own address space
  when asked, then says it is ready; a case's hang clock starts only after that (the warm-up has
  ``STARTUP_SECONDS``);
- a case is one JSON line in (``{"index": i}``: the worker draws case ``i`` itself) and one JSON
  line out (:func:`serve` keeps stdout for answers alone);
- a case that does not answer within the shard's ``hang_seconds`` is a ``hang`` (the worker is
  killed), a worker that dies is a ``crash`` (its last line of stderr is the message); either way
  the next case gets a fresh, warmed-up worker, as the serial campaign did;
- a worker whose parent is gone (the engine stopped the job) leaves by itself.

The shards' results come back in completion order and are put in task order, which is index
order: the merged list is the serial one whatever the engine, and so is every count made from it;
only the seconds each case took differ. A worker that cannot start at all is an error that stops
the campaign (:class:`FuzzError`), not a finding.

The scripts stay thin: each holds its worker's request handler and its report.
:func:`measure_engines` runs one campaign on several engines for the cases/min table of
docs/scaling.md and stops if any report differs from the first.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import platform
import random
import select
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from refsim.engine import Engine, Task, make_engine
from refsim.errors import RefsimError

#: How long a worker may take to import and warm up before its first case (a loaded machine).
STARTUP_SECONDS = 300.0


class FuzzError(RefsimError):
    """A campaign's worker program cannot start (the message has the last line it wrote)."""


def case_rng(seed: int, index: int) -> random.Random:
    """Case ``index``'s own stream: a ``random.Random`` seeded with 128 bits of
    ``SeedSequence([seed, index])``, the entropy ``default_rng([seed, index])`` starts from."""
    state = np.random.SeedSequence([seed, index]).generate_state(4, np.uint32)
    return random.Random(int.from_bytes(state.tobytes(), "little"))


# -- the guarded worker subprocess -------------------------------------------------------------


@dataclass(frozen=True)
class WorkerSpec:
    """How a shard starts its worker: ``sys.executable`` with ``argv`` (the script and its
    ``--worker`` options) in ``cwd``, which must be the same path on every node; a case that gives
    no answer within ``hang_seconds`` is a hang."""

    argv: tuple[str, ...]
    cwd: str
    hang_seconds: float
    startup_seconds: float = STARTUP_SECONDS


class CaseWorker:
    """One worker subprocess, ready for its first case when the constructor returns."""

    def __init__(self, spec: WorkerSpec) -> None:
        self.spec = spec
        # A file, not a pipe: nobody need drain it. Closed by close().
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, *spec.argv],
            cwd=spec.cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
        )
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], spec.startup_seconds)
        line = self.proc.stdout.readline() if ready else ""
        with contextlib.suppress(ValueError):
            if json.loads(line).get("ready"):
                return
        tail = self._stderr_tail() if ready else f"no answer in {spec.startup_seconds:.0f} s"
        self.close()
        raise FuzzError(f"the fuzz worker {' '.join(spec.argv[:1])} did not start: {tail}")

    def _stderr_tail(self) -> str:
        if self.proc.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
        self.stderr.seek(0)
        lines = self.stderr.read().decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else f"exit status {self.proc.poll()}"

    def _died(self) -> dict:
        code = self.proc.wait()
        return {"outcome": "crash", "message": f"worker exited with {code}: {self._stderr_tail()}"}

    def run(self, request: dict, seconds: float | None = None) -> dict:
        """The worker's answer to ``request``; ``{"outcome": "crash"|"hang", "message": ...}``
        when it died or overran ``seconds`` (default: the spec's ``hang_seconds``)."""
        limit = self.spec.hang_seconds if seconds is None else seconds
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            return self._died()
        ready, _, _ = select.select([self.proc.stdout], [], [], limit)
        if not ready:
            self.close()
            return {"outcome": "hang", "message": f"no answer in {limit:g} s", "seconds": limit}
        line = self.proc.stdout.readline()
        if not line:
            return self._died()
        return json.loads(line)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                if pipe is not None:
                    pipe.close()
        self.stderr.close()

    def __enter__(self) -> CaseWorker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def serve(handle: Callable[[dict], dict]) -> None:
    """The worker's side, called after its warm-up: says it is ready, then answers each request
    line with ``handle(request)`` as one JSON line. Anything else the cases print goes to stderr,
    so stdout carries answers alone. Leaves when stdin closes or its parent is gone."""
    out = sys.stdout
    sys.stdout = sys.stderr
    parent = os.getppid()

    def orphaned() -> None:  # a case stuck in compiled code would otherwise outlive the campaign
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=orphaned, name="refsim-fuzz-orphan-watch", daemon=True).start()
    print(json.dumps({"ready": True}), file=out, flush=True)
    for line in sys.stdin:
        print(json.dumps(handle(json.loads(line))), file=out, flush=True)


# -- shards on the engine ----------------------------------------------------------------------

#: Cases per shard by default (a script may set its own). A worker's start (interpreter, imports,
#: warm-up) is ~1-2 s and a .pte case ~20 ms, so a shard of 500 spends ~90 % of its time on cases
#: (docs/scaling.md, "Fuzz campaigns").
PER_TASK = 500


def index_tasks(
    name: str, indices: Sequence[int], worker: WorkerSpec, *, per_task: int = PER_TASK
) -> list[Task]:
    """``indices`` (a range, or any list), ``per_task`` to a shard, in their order; ``name``
    (campaign and seed) prefixes the keys."""
    if per_task < 1:
        raise ValueError(f"per_task must be at least 1, got {per_task}")
    return [
        Task(key=f"{name}/{k}", payload=(worker, indices[k : k + per_task]))
        for k in range(0, len(indices), per_task)
    ]


def shard_task(payload: tuple[WorkerSpec, Sequence[int]], blobs: dict[str, Any]) -> list[dict]:
    """The engine task: each case of the shard through a guarded worker (module docstring); one
    answer per case, ``"index"`` added."""
    spec, indices = payload
    results = []
    worker: CaseWorker | None = None
    try:
        for index in indices:
            if worker is None or not worker.alive:
                worker = CaseWorker(spec)
            results.append({**worker.run({"index": index}), "index": index})
    finally:
        if worker is not None:
            worker.close()
    return results


def run_indexed(
    engine: Engine, tasks: Sequence[Task], progress: Callable[[int], None] | None = None
) -> list[dict]:
    """Every shard on ``engine``; their answers merged in task order. ``progress(n)`` after each
    shard with the cases done so far."""
    order = {t.key: k for k, t in enumerate(tasks)}
    if len(order) != len(tasks):
        raise ValueError("shard tasks need distinct keys")
    shards: list[list[dict]] = [[] for _ in tasks]
    done = 0
    for task, results in engine.map(shard_task, tasks, {}):
        shards[order[task.key]] = results
        done += len(results)
        if progress is not None:
            progress(done)
    return [r for shard in shards for r in shard]


def case_digest(lines: Iterable[str]) -> str:
    """sha256 of the per-case lines (index, case, outcome: no times): equal digests mean every case
    ended the same way."""
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line.encode() + b"\n")
    return digest.hexdigest()


def run_record(engine_name: str, tasks: int, per_task: int, cases: int, elapsed: float) -> dict:
    """A campaign report's ``run`` entry: where it ran, in how many shards, how fast."""
    return {
        "engine": engine_name,
        "tasks": tasks,
        "per_task": per_task,
        "cases": cases,
        "elapsed_seconds": round(elapsed, 1),
        "cases_per_minute": round(60 * cases / max(elapsed, 1e-9)),
    }


# -- cases/min against engines -----------------------------------------------------------------

#: ``--scaling`` ways: workers and Ray address for :func:`refsim.engine.make_engine`.
WAYS = {"1": (1, None), "2": (2, None), "ray1": (1, "local"), "ray2": (2, "local")}


def measure_engines(
    campaign: Callable[[Engine], dict], ways: Sequence[str], same: Callable[[dict], dict]
) -> tuple[dict, list[dict]]:
    """``campaign(engine)`` on each way's engine (:data:`WAYS`); the first report and one row per
    way (the report's ``run`` holds its ``cases`` and ``tasks``): wall time from the engine's start to the merged report, the engine's start alone (a local
    Ray instance's), cases/min. A report whose ``same(report)`` differs from the first stops it."""
    first: dict | None = None
    rows = []
    for way in ways:
        if way not in WAYS:
            raise ValueError(f"--scaling: unknown way {way!r}, expected some of {', '.join(WAYS)}")
        workers, ray = WAYS[way]
        t0 = time.perf_counter()
        with make_engine(workers, ray) as engine:
            started = time.perf_counter() - t0
            report = campaign(engine)
            name = engine.name
        wall = time.perf_counter() - t0
        if first is None:
            first = report
        elif same(report) != same(first):
            ours, theirs = same(report), same(first)
            parts = [k for k in ours if ours[k] != theirs[k]]
            raise FuzzError(
                f"--scaling: the report on {name} differs from the one on {rows[0]['engine']} in {parts}: "
                + "; ".join(f"{k}: {_first_difference(ours[k], theirs[k])}" for k in parts)
            )
        cases, tasks = report["run"]["cases"], report["run"]["tasks"]
        rows.append(
            {
                "way": way,
                "engine": name,
                "workers": workers,
                "cases": cases,
                "tasks": tasks,
                "wall_s": round(wall, 1),
                "engine_start_s": round(started, 1),
                "cases_per_min": round(60 * cases / wall),
                "same_report": True,
                "load_average_after": round(os.getloadavg()[0], 2),
            }
        )
        print(
            f"{way:5} {name:36} {cases} cases {tasks:4} tasks {wall:7.1f} s "
            f"(start {started:4.1f} s) {rows[-1]['cases_per_min']:8,} cases/min",
            flush=True,
        )
    assert first is not None, "no ways"
    return first, rows


def worker_start_seconds(spec: WorkerSpec, times: int = 3) -> float:
    """A worker's start, to ready (interpreter, imports, warm-up): the median of ``times``, the
    fixed cost every shard pays once."""
    seconds = []
    for _ in range(times):
        t0 = time.perf_counter()
        CaseWorker(spec).close()
        seconds.append(time.perf_counter() - t0)
    return round(sorted(seconds)[len(seconds) // 2], 2)


def _first_difference(ours: Any, theirs: Any) -> str:
    """Where two values of a report part first differ (for the message)."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        k = next(k for k in sorted(set(ours) | set(theirs), key=str) if ours.get(k) != theirs.get(k))
        return f"{k!r}: {ours.get(k)!r} here, {theirs.get(k)!r} there"
    if isinstance(ours, list) and isinstance(theirs, list):
        extra = [x for x in ours if x not in theirs][:1] + [x for x in theirs if x not in ours][:1]
        return f"{len(ours)} here, {len(theirs)} there; first not in both: {extra}"
    return f"{ours!r} here, {theirs!r} there"


def provenance(root: Path, note: str = "") -> dict:
    """Who measured what, where: the command, the commit, the date, the machine and its load."""
    commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True)
    return {
        "command": "python " + " ".join(shlex.quote(a) for a in sys.argv),
        "commit": commit.stdout.strip(),
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        **({"note": note} if note else {}),
    }


__all__ = [
    "PER_TASK",
    "STARTUP_SECONDS",
    "WAYS",
    "CaseWorker",
    "FuzzError",
    "WorkerSpec",
    "case_digest",
    "case_rng",
    "index_tasks",
    "measure_engines",
    "provenance",
    "run_indexed",
    "run_record",
    "serve",
    "shard_task",
    "worker_start_seconds",
]

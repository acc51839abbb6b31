"""Cases per minute of a conformance campaign against workers: the serial path, the engine in process,
a local pool and a local Ray instance (1 and 2 workers), plus the costs docs/scaling.md extrapolates
from (a QEMU start, a harness build, the engine's per-task overhead).

    python benchmarks/campaigns.py [--isa dsp] [--cases 30] [--per-task 15] [--ways serial,inproc,pool1,...]
                                   [--out benchmarks/results/campaigns.json]

Every way runs the same campaign (generated cases of a few kernels_c functions on one core; each
task draws its own cases and runs them in one QEMU start) and must report the same thing as the
serial path (kernels, pass/fail, failure messages, instruction counts are compared; a way that
differs stops the benchmark). Wall time includes the engine's start (spawning the pool, starting
Ray) and generating the cases. Then:

- **per-task overhead**: 200 tasks that do nothing on each engine (ms per task, round trip);
- **QEMU start**: one case in one QEMU start, five times (median), against the same case in a
  batch of 20 (the per-case share);
- **build**: the harness built from nothing into an empty cache (what a fresh node pays once).

Table printed, JSON saved with the commit, command, date and load average. The machine is shared
(2 cores, other jobs): compare ratios, not seconds.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from refsim.engine import Engine, PoolEngine, RayEngine, Task  # noqa: E402
from refsim.qemu import campaign  # noqa: E402
from refsim.qemu import conformance as qc  # noqa: E402

FUNCTIONS = ["arm_fully_connected_s8", "arm_convolve_s8", "arm_depthwise_conv_s8", "arm_elementwise_add_s8"]
WAYS = ("serial", "inproc", "pool1", "pool2", "ray1", "ray2")


def _noop(payload, blobs):
    return payload


def _summary(report: qc.Report) -> dict:
    return {
        "kernels": {f: (s.cases, s.passed, s.failed) for f, s in report.kernels.items()},
        "failures": [(f.case.label, f.message) for f in report.failures],
        "skipped": report.skipped,
    }


def _engine(way: str):
    if way == "inproc":
        return Engine()
    if way.startswith("pool"):
        return PoolEngine(int(way[4:]))
    return RayEngine(int(way[3:]), address="local")


def run_way(way: str, spec: campaign.TargetSpec, cases: int, seed: int, per_task: int) -> tuple[dict, dict]:
    target = campaign.resolve(spec)
    t0 = time.perf_counter()
    if way == "serial":
        todo = qc.generate_cases(FUNCTIONS, cases, seed)
        report = qc.run_cases(target, todo)
        tasks, started = 0, 0.0
    else:
        tasks_list = campaign.generated_tasks(FUNCTIONS, cases, seed, per_task=per_task)
        tasks = len(tasks_list)
        with _engine(way) as engine:
            started = time.perf_counter() - t0  # Ray's start; a pool spawns its workers on first use
            report = campaign.run_campaign(engine, target, spec, tasks_list)
    wall = time.perf_counter() - t0
    ran = sum(k.cases for k in report.kernels.values())
    row = {
        "way": way,
        "workers": 1 if way in ("serial", "inproc") else int(way[-1]),
        "cases": ran,
        "tasks": tasks,
        "qemu_starts": report.emulator_starts,
        "wall_s": round(wall, 2),
        "engine_start_s": round(started, 2),
        "cases_per_min": round(60 * ran / wall, 1),
    }
    return row, _summary(report)


def task_overhead(way: str, n: int = 200) -> dict:
    tasks = [Task(str(i), i) for i in range(n)]
    with _engine(way) as engine:
        list(engine.map(_noop, tasks[:4], {}))  # warm: workers started, functions imported
        t0 = time.perf_counter()
        got = list(engine.map(_noop, tasks, {}))
        wall = time.perf_counter() - t0
    assert sorted(r for _, r in got) == list(range(n))
    return {"way": way, "tasks": n, "ms_per_task": round(1000 * wall / n, 2)}


def qemu_start(spec: campaign.TargetSpec, seed: int) -> dict:
    target = campaign.resolve(spec)
    (one,) = qc.generate_cases(["arm_elementwise_add_s8"], 1, seed)
    alone = []
    for _ in range(5):
        t0 = time.perf_counter()
        qc.run_cases(target, [one])
        alone.append(time.perf_counter() - t0)
    twenty = qc.generate_cases(["arm_elementwise_add_s8"], 20, seed)
    t0 = time.perf_counter()
    report = qc.run_cases(target, twenty)
    batch = time.perf_counter() - t0
    assert report.emulator_starts == 1
    per_case = batch / 20
    return {
        "one_case_one_start_s": round(statistics.median(alone), 3),
        "batch_of_20_s": round(batch, 3),
        "per_case_in_batch_s": round(per_case, 4),
        "start_s": round(statistics.median(alone) - per_case, 3),
    }


def build_from_nothing(core: str) -> float:
    from refsim.qemu.build import build_harness

    with tempfile.TemporaryDirectory() as cache:
        old = os.environ.get("REFSIM_CACHE")
        os.environ["REFSIM_CACHE"] = cache
        try:
            t0 = time.perf_counter()
            build_harness(core)
            return round(time.perf_counter() - t0, 2)
        finally:
            if old is None:
                del os.environ["REFSIM_CACHE"]
            else:
                os.environ["REFSIM_CACHE"] = old


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--isa", default="dsp")
    parser.add_argument("--cases", type=int, default=30, help="cases per function")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-task", type=int, default=15)
    parser.add_argument("--ways", default=",".join(WAYS))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "campaigns.json")
    args = parser.parse_args()

    spec = campaign.TargetSpec(args.isa, None)
    target = campaign.resolve(spec)  # built (or found) before any timing
    spec = campaign.TargetSpec(target.isa, target.core.name)
    run_way("serial", spec, 1, args.seed + 1, args.per_task)  # warm: golden model's kernels compiled
    load_before = os.getloadavg()
    rows, reference = [], None
    for way in args.ways.split(","):
        row, summary = run_way(way, spec, args.cases, args.seed, args.per_task)
        if reference is None:
            reference = summary
        elif summary != reference:
            raise SystemExit(f"{way}: the campaign's report differs from the {rows[0]['way']} one")
        row["same_report"] = True
        rows.append(row)
        print(
            f"{way:8} workers {row['workers']}  {row['cases']} cases  {row['tasks']:3} tasks  "
            f"{row['qemu_starts']:3} QEMU starts  {row['wall_s']:7.1f} s (start {row['engine_start_s']:4.1f})  {row['cases_per_min']:8.1f} cases/min",
            flush=True,
        )
    overhead = [task_overhead(w) for w in ("inproc", "pool2", "ray2")]
    for o in overhead:
        print(f"per-task overhead {o['way']:8} {o['ms_per_task']:7.2f} ms", flush=True)
    start = qemu_start(spec, args.seed)
    print(f"QEMU: {start}", flush=True)
    build_s = build_from_nothing(target.core.name)
    print(f"harness build from nothing ({target.core.name}): {build_s} s", flush=True)
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout
    doc = {
        "provenance": {
            "command": "python " + " ".join(shlex.quote(a) for a in sys.argv),
            "commit": commit.strip(),
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "host": platform.node(),
            "cpus": os.cpu_count(),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
            "note": "shared machine (2 cores, other jobs running): compare ratios, not seconds",
        },
        "campaign": {
            "core": target.core.name,
            "isa": target.isa,
            "functions": FUNCTIONS,
            "cases_per_function": args.cases,
            "seed": args.seed,
            "per_task": args.per_task,
        },
        "ways": rows,
        "per_task_overhead": overhead,
        "qemu": start,
        "harness_build_s": build_s,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

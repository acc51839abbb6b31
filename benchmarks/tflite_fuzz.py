"""A corruption campaign against refsim's .tflite reader (issue 15, item 1).

    python benchmarks/tflite_fuzz.py [--cases 500] [--seed 0] [--seconds 5] [--memory-mb 256]
                                     [--workers N | --ray auto|ADDRESS] [--per-task 2000]
                                     [--only I,J,...] [--json benchmarks/results/tflite_fuzz.json] [--quiet]
    python benchmarks/tflite_fuzz.py --cases 5000 --scaling 1,2,ray2

Seeds: the models of tests/tflite/test_corruption.py (a conv + relu6 + add built by the writer,
its weights inline and after the flatbuffer, and the four MLPerf Tiny reference models).
Each seed gets ``--cases`` mutated files, 1-4 mutations each, drawn by the engine of
tests/pte/test_corruption.py (bit flips, 2/4/8-byte words set to boundary or random values,
truncation). Case ``i`` (seed model ``i // --cases``, in name order) is drawn from its own seed
(`refsim.fuzzing.case_rng` of ``(--seed, i)``), so a printed case replays alone with ``--only
i`` and the campaign splits into shards of ``--per-task`` cases that run as engine tasks: in
this process (``--workers 1``, the default), on a local process pool (``--workers N``) or on Ray
(``--ray auto|ADDRESS``, the optional ``cluster`` extra). The report is the same whichever runs
it (``case_digest`` hashes every case's outcome).

Every case is loaded by `load_model` and, when it loads, used as code that trusts a loaded
model would use it (described, every constant read, written and read again:
tests/tflite/test_corruption.py's ``exercise``), in the shard's worker subprocess (this script
with ``--worker``, `refsim.fuzzing.CaseWorker`) whose address space is capped (RLIMIT_AS at its
size after imports and warm-up plus ``--memory-mb``) and which is killed when a case overruns
``--seconds`` (the clock starts after the warm-up). Outcomes: ``loaded``, ``ModelError`` (the
only refusal allowed), ``traceback`` (any other exception, MemoryError included, or any
exception after a load), ``crash`` (the worker died) and ``hang`` (it overran); after a crash or
a hang the next case gets a fresh worker. Prints a table per seed and writes it as JSON; exit
status 1 unless crashes, hangs and tracebacks are all 0. ``--scaling`` runs the same campaign on
each engine named (``1``, ``2``: pool workers; ``ray1``, ``ray2``: a local Ray instance) and adds
cases/min per engine and the provenance to the report. Like benchmarks/fuzz_pte.py for .pte
programs, but one reader.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: the engine lives in the tests package
    sys.path.insert(0, str(ROOT))

from refsim.engine import Engine, make_engine  # noqa: E402
from refsim.errors import RefsimError  # noqa: E402
from refsim.fuzzing import (  # noqa: E402
    WorkerSpec,
    case_digest,
    case_rng,
    index_tasks,
    measure_engines,
    provenance,
    run_indexed,
    run_record,
    serve,
    worker_start_seconds,
)

RESULTS = ROOT / "benchmarks" / "results" / "tflite_fuzz.json"
OUTCOMES = ("loaded", "ModelError", "traceback", "crash", "hang")
FAILURES = ("traceback", "crash", "hang")
#: Cases per shard by default: a case is a few ms and a worker's start ~1.5 s (imports, every
#: seed model warmed up), so a shard of 2000 spends ~90 % of its time on cases.
PER_TASK = 2000


def seeds() -> dict[str, bytes]:
    from tests.tflite.test_corruption import FILES

    return dict(FILES)


def draw_mutations(rng: random.Random) -> list[tuple[str, int, int]]:
    from tests.pte.test_corruption import INTERESTING, KINDS

    return [
        (
            rng.choice(KINDS),
            rng.getrandbits(20),
            rng.choice(INTERESTING) if rng.random() < 0.6 else rng.getrandbits(64),
        )
        for _ in range(rng.randint(1, 4))
    ]


def draw(seed: int, index: int, names: list[str], cases_per_seed: int) -> dict:
    """Case ``index``: its seed model and mutations (a JSON-ready request a worker also runs as is)."""
    return {
        "seed": names[index // cases_per_seed],
        "mutations": [list(m) for m in draw_mutations(case_rng(seed, index))],
    }


# -- the worker: loads one case per request --------------------------------------------------------


def worker(args: argparse.Namespace) -> None:
    from refsim.tflite import ModelError, load_model
    from tests.pte.test_corruption import _mutate
    from tests.tflite.test_corruption import exercise  # importing it warms up every seed model

    files = seeds()
    names = sorted(files)
    if args.memory_mb:
        with open("/proc/self/status") as f:
            size_kb = next(int(line.split()[1]) for line in f if line.startswith("VmSize:"))
        limit = (size_kb << 10) + (args.memory_mb << 20)
        resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))

    def handle(request: dict) -> dict:
        # {"index": i} draws case i; {"seed": name, "mutations": [...]} runs that case as given.
        case = draw(args.seed, request["index"], names, args.cases) if "index" in request else request
        data = bytearray(files[case["seed"]])
        for kind, where, value in case["mutations"]:
            data = _mutate(data, kind, where, value)
        start = time.perf_counter()
        stage = "load"
        try:
            try:
                mf = load_model(bytes(data))
            except ModelError as exc:
                result = {"outcome": "ModelError", "message": str(exc)}
            else:
                stage = "use"  # describe, read every constant, write and read again
                exercise(mf)
                result = {"outcome": "loaded"}
        except Exception as exc:  # anything else (a ModelError after a load too) is a finding
            result = {
                "outcome": "traceback",
                "message": f"{stage}: {type(exc).__name__}: {exc}",
                "tb": traceback.format_exc(),
            }
        result["seconds"] = time.perf_counter() - start
        return result

    serve(handle)


def worker_spec(seed: int, cases: int, seconds: float, memory_mb: int) -> WorkerSpec:
    argv = [str(Path(__file__).resolve()), "--worker", "--seed", str(seed), "--cases", str(cases)]
    argv += ["--memory-mb", str(memory_mb)]
    return WorkerSpec(tuple(argv), str(ROOT), seconds)


# -- the campaign --------------------------------------------------------------------------------


def campaign(
    engine: Engine,
    cases: int,
    seed: int,
    seconds: float,
    memory_mb: int,
    *,
    per_task: int = PER_TASK,
    only: list[int] | None = None,
    progress=None,
) -> dict:
    """``cases`` per seed model (or the cases ``only`` names), sharded on ``engine``; the report."""
    names = sorted(seeds())
    indices = only if only is not None else range(cases * len(names))
    tasks = index_tasks(
        f"tflite/{seed}", indices, worker_spec(seed, cases, seconds, memory_mb), per_task=per_task
    )
    started = time.perf_counter()
    results = run_indexed(engine, tasks, progress)
    elapsed = time.perf_counter() - started
    table = {name: Counter() for name in names}
    slowest = {name: 0.0 for name in names}
    failures: list[dict] = []
    messages: Counter = Counter()
    lines = []
    for result in results:
        index = result.pop("index")
        case = draw(seed, index, names, cases)
        name = case["seed"]
        table[name][result["outcome"]] += 1
        slowest[name] = max(slowest[name], result.get("seconds", seconds))
        if result["outcome"] == "ModelError":
            messages[_shape(result["message"])] += 1
        if result["outcome"] in FAILURES:
            failures.append({"index": index, **case, **result})
        said = (
            result["message"] if result["outcome"] in ("ModelError", "traceback") else ""
        )  # a crash's stderr varies
        lines.append(f"{index}\t{json.dumps(case)}\t{result['outcome']}\t{said}")
    total = sum(table.values(), Counter())
    return {
        "cases_per_seed": cases,
        "seed": seed,
        "seconds_limit": seconds,
        "memory_mb": memory_mb,
        "elapsed_seconds": round(elapsed, 1),
        "seeds": {
            name: {**{o: table[name][o] for o in OUTCOMES}, "max_seconds": round(slowest[name], 4)}
            for name in names
        },
        "total": {o: total[o] for o in OUTCOMES},
        "errors_by_kind": dict(messages.most_common(30)),
        "failures": failures,
        "case_digest": case_digest(lines),
        "run": run_record(engine.name, len(tasks), per_task, len(results), elapsed),
    }


def same_outcomes(report: dict) -> dict:
    """What must not depend on the engine: every case's outcome and message, the counts."""
    return {
        "case_digest": report["case_digest"],
        "seeds": {name: {o: row[o] for o in OUTCOMES} for name, row in report["seeds"].items()},
        **{k: report[k] for k in ("total", "errors_by_kind")},
        "failures": [(f["index"], f["outcome"]) for f in report["failures"]],
    }


def _shape(message: str) -> str:
    """A ModelError message with numbers and indices folded, to count kinds of refusal."""
    return re.sub(r"\d+", "N", message.split(": ", 1)[-1])[:90]


def print_table(report: dict) -> None:
    print(f"{'seed model':32s} " + " ".join(f"{o:>10s}" for o in OUTCOMES) + f" {'max s':>8s}")
    for name, row in report["seeds"].items():
        print(f"{name:32s} " + " ".join(f"{row[o]:10d}" for o in OUTCOMES) + f" {row['max_seconds']:8.4f}")
    total = report["total"]
    print(f"{'total':32s} " + " ".join(f"{total[o]:10d}" for o in OUTCOMES))
    run = report["run"]
    print(
        f"{sum(total.values())} cases in {report['elapsed_seconds']} s on {run['engine']} ({run['tasks']} tasks), "
        f"seed {report['seed']}; case digest {report['case_digest'][:16]}"
    )
    for f in report["failures"][:10]:
        print(
            f"FAILURE {f['outcome']} #{f['index']} {f['seed']} {f['mutations']}: {f.get('message', '')}\n"
            f"{f.get('tb', '')}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=500, help="mutated files per seed model")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=5.0, help="a case slower than this is a hang")
    parser.add_argument(
        "--memory-mb", type=int, default=256, help="address space the worker may add (0: no cap)"
    )
    parser.add_argument("--workers", type=int, default=1, help="local worker processes (default 1: this one)")
    parser.add_argument("--ray", metavar="auto|ADDRESS", help="run the shards on Ray (refsim[cluster])")
    parser.add_argument("--per-task", type=int, default=PER_TASK, help="cases per shard (engine task)")
    parser.add_argument("--only", help="comma-separated case indices: replay these cases alone")
    parser.add_argument("--scaling", help="comma-separated engines to time the campaign on: 1,2,ray1,ray2")
    parser.add_argument("--json", type=Path, default=RESULTS, help="write the report here")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args)
        return 0

    only = [int(i) for i in args.only.split(",")] if args.only else None
    total = args.cases * len(seeds())
    if only is not None and not all(0 <= i < total for i in only):
        parser.error(f"--only: case indices run from 0 to {total - 1} with --cases {args.cases}")
    total = len(only) if only is not None else total
    progress = None if args.quiet else (lambda n: print(f"  {n}/{total} cases", flush=True))

    def run(engine: Engine) -> dict:
        return campaign(
            engine,
            args.cases,
            args.seed,
            args.seconds,
            args.memory_mb,
            per_task=args.per_task,
            only=only,
            progress=progress,
        )

    try:
        if args.scaling:
            report, rows = measure_engines(run, args.scaling.split(","), same_outcomes)
            report["scaling"] = rows
            report["worker_start_s"] = worker_start_seconds(
                worker_spec(args.seed, args.cases, args.seconds, args.memory_mb)
            )
            report["provenance"] = provenance(ROOT, "shared machine (2 cores, other jobs): compare ratios")
        else:
            with make_engine(args.workers, args.ray) as engine:
                report = run(engine)
    except RefsimError as exc:
        print(f"tflite_fuzz: {exc}", file=sys.stderr)
        return 2
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1) + "\n")
    if not args.quiet:
        print_table(report)
    return 1 if any(report["total"][o] for o in FAILURES) else 0


if __name__ == "__main__":
    sys.exit(main())

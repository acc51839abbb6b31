"""A long corruption campaign against refsim's loader and runtime (issue 3, hostile input).

    python benchmarks/fuzz_pte.py [--files 20000] [--seed 0] [--corpus full|tests]
                                  [--semantic-share 0.5] [--headroom-mb N] [--max-seconds S]
                                  [--workers N | --ray auto|ADDRESS] [--per-task 500]
                                  [--only I,J,...] [--json out.json] [--quiet]
    python benchmarks/fuzz_pte.py --files-from a.pte b.pte ...   # run given files once each
    python benchmarks/fuzz_pte.py --files 6000 --scaling 1,2,ray2 --json benchmarks/results/fuzz_pte.json

Each file is a valid program (every bundled model and fixture with ``--corpus full``, the
default) corrupted by 1-4 byte-level or semantic mutations. File ``i`` is drawn from its own seed
(`refsim.fuzzing.case_rng` of ``(--seed, i)``: the program, the mutations, and the inputs from
``default_rng([seed, i])``), so a printed case ``#i`` replays alone with ``--only i`` and the
campaign splits into shards of ``--per-task`` files that run as engine tasks: in this process
(``--workers 1``, the default), on a local process pool (``--workers N``) or on Ray (``--ray
auto|ADDRESS``, the optional ``cluster`` extra). The report is the same whichever runs it
(``case_digest`` hashes every file's outcome). The corruption engine and the list of mutations
are in tests/runtime/test_hostile.py (which runs a short campaign of this script under a memory
cap).

Each case goes through `Program.load`, ``program.method()`` (with the reports `refsim run`
makes) and ``execute`` with random valid inputs, in the shard's worker subprocess (this script
with ``--worker``). It must end in a `RefsimError` or run; anything else, or a case slower than
``--max-seconds`` (default 30 s: a jump loop runs up to the interpreter's instruction bound, 1000
passes of the chain, ~5 s for ic), is a failure, printed with its reproducer. ``--headroom-mb``
caps the worker's address space (RLIMIT_AS) at its size after warm-up plus that much, so an
unbounded allocation shows up as a MemoryError. A SIGALRM timer per case in the worker is the
safety net against hangs (60 s: a CaseTimeout traceback); a case the alarm cannot stop (stuck in
compiled code) gets no answer within ``HANG_SECONDS`` and is a ``hang``, a worker that dies a
``crash``; the next case gets a fresh worker (`refsim.fuzzing`).

Prints the files tried, the outcomes by stage and exception type and by first words, the
slowest case and the failures; exit status 1 if there are failures. ``--scaling`` runs the same
campaign on each engine named (``1``, ``2``: pool workers; ``ray1``, ``ray2``: a local Ray
instance) and adds cases/min per engine and the provenance to the JSON report.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: the engine lives in the tests package
    sys.path.insert(0, str(ROOT))

from refsim.engine import Engine, make_engine  # noqa: E402
from refsim.errors import RefsimError  # noqa: E402
from refsim.fuzzing import (  # noqa: E402
    PER_TASK,
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
from tests.runtime.test_hostile import (  # noqa: E402
    ALARM_SECONDS,
    FULL_CORPUS,
    MODELS_DIR,
    SECONDS_PER_CASE,
    TEST_CORPUS,
    Outcome,
    apply_mutations,
    random_mutations,
    run_case,
)

#: The campaign's default failure bound per file (the tests use SECONDS_PER_CASE on a smaller corpus).
CAMPAIGN_SECONDS = 30.0
#: No answer from the worker for this long is a hang: the SIGALRM net fires first in Python code.
HANG_SECONDS = ALARM_SECONDS + 30.0
CORPORA = {"full": FULL_CORPUS, "tests": TEST_CORPUS}


@dataclass(frozen=True)
class Settings:
    """What draws the campaign's files and judges them (the command line's options)."""

    seed: int = 0
    corpus: str = "full"
    semantic_share: float = 0.5
    headroom_mb: int = 0
    max_seconds: float = CAMPAIGN_SECONDS

    @classmethod
    def of(cls, args: argparse.Namespace) -> Settings:
        return cls(args.seed, args.corpus, args.semantic_share, args.headroom_mb, args.max_seconds)


def draw(seed: int, index: int, names: list[str], semantic_share: float) -> tuple[str, list]:
    """File ``index`` of the campaign: which program, which mutations."""
    rng = case_rng(seed, index)
    name = rng.choice(names)
    return name, random_mutations(rng, semantic_share)


@dataclass
class Tally:
    """Files tried, outcomes by label, the slowest case and every unexpected one."""

    max_seconds: float = SECONDS_PER_CASE
    tried: int = 0
    outcomes: Counter = field(default_factory=Counter)
    kinds: Counter = field(default_factory=Counter)
    slowest: tuple[float, str] = (0.0, "")
    failures: list[tuple[str, dict]] = field(default_factory=list)

    def add(self, case: str, outcome: dict) -> None:
        """``outcome``: the worker's answer (`answer`) or a hang or crash (`worker_failure`)."""
        unexpected = outcome["unexpected"]
        self.tried += 1
        self.outcomes["UNEXPECTED " + outcome["label"] if unexpected else outcome["label"]] += 1
        self.kinds["UNEXPECTED " + outcome["kind"] if unexpected else outcome["kind"]] += 1
        if outcome["seconds"] > self.slowest[0]:
            self.slowest = (outcome["seconds"], case)
        if unexpected or outcome["seconds"] > self.max_seconds:
            self.failures.append((case, outcome))


def answer(outcome: Outcome) -> dict:
    """What a worker sends back for a case (JSON)."""
    return {
        "label": outcome.label,
        "kind": outcome.kind,
        "seconds": outcome.seconds,
        "unexpected": outcome.unexpected,
    }


def worker_failure(result: dict) -> dict:
    """A hang or a crash as an unexpected outcome."""
    kind = result["outcome"]
    words = re.sub(r"(?<![A-Za-z_])\d+", "N", " ".join(result["message"].split()[:4]))  # as Outcome.label
    return {
        "label": f"{kind}: {words}",
        "kind": kind,
        "seconds": result.get("seconds", 0.0),
        "unexpected": result["message"],
    }


# -- the worker: runs file ``index`` for each request ------------------------------------------


def worker(settings: Settings) -> None:
    corpus = CORPORA[settings.corpus]
    originals = {name: path.read_bytes() for name, path in sorted(corpus.items())}
    names = sorted(originals)
    run_case((MODELS_DIR / "kws.pte").read_bytes())  # numba loads its cached kernels before the cap
    if settings.headroom_mb:
        cap_address_space(settings.headroom_mb)

    def handle(request: dict) -> dict:
        index = request["index"]
        name, mutations = draw(settings.seed, index, names, settings.semantic_share)
        data = apply_mutations(originals[name], mutations)
        return answer(run_case(data, seed=(settings.seed, index)))

    serve(handle)


def worker_spec(settings: Settings) -> WorkerSpec:
    argv = [
        str(Path(__file__).resolve()),
        "--worker",
        "--seed",
        str(settings.seed),
        "--corpus",
        settings.corpus,
    ]
    argv += ["--semantic-share", repr(settings.semantic_share), "--headroom-mb", str(settings.headroom_mb)]
    return WorkerSpec(tuple(argv), str(ROOT), HANG_SECONDS)


# -- the campaign --------------------------------------------------------------------------------


def campaign(
    engine: Engine, settings: Settings, indices: Sequence[int], *, per_task: int = PER_TASK, progress=None
) -> dict:
    """Files ``indices`` of the campaign, sharded on ``engine``; the report."""
    names = sorted(CORPORA[settings.corpus])
    tasks = index_tasks(f"pte/{settings.seed}", indices, worker_spec(settings), per_task=per_task)
    started = time.perf_counter()
    results = run_indexed(engine, tasks, progress)
    elapsed = time.perf_counter() - started
    tally, lines = Tally(settings.max_seconds), []
    for result in results:
        index = result["index"]
        name, mutations = draw(settings.seed, index, names, settings.semantic_share)
        case = f"#{index} {name} {mutations}"
        outcome = worker_failure(result) if result.get("outcome") in ("hang", "crash") else result
        tally.add(case, outcome)
        lines.append(f"{case}\t{outcome['label']}\t{bool(outcome['unexpected'])}")
    return {
        **report(tally),
        "seed": settings.seed,
        "corpus": settings.corpus,
        "semantic_share": settings.semantic_share,
        "case_digest": case_digest(lines),
        "run": run_record(engine.name, len(tasks), per_task, len(results), elapsed),
    }


def same_outcomes(report: dict) -> dict:
    """What must not depend on the engine: every file's outcome, the counts, the unexpected
    failures. A file slower than ``--max-seconds`` is a failure too, but time depends on the
    machine's load (file #4351 of seed 0, a jump loop in fp32/conv2d_deep, took 17 s in one
    process and over 30 s on a 2-worker pool, on two busy cores)."""
    return {
        "case_digest": report["case_digest"],
        **{k: report[k] for k in ("files", "by_stage", "by_exception", "outcomes")},
        "failures": [(f["case"], f["label"]) for f in report["failures"] if f["traceback"]],
    }


# -- command line ------------------------------------------------------------------------------


def cap_address_space(headroom_mb: int) -> None:
    """RLIMIT_AS = this process's current size + ``headroom_mb`` (after imports and warm-up)."""
    with open("/proc/self/status") as f:
        size_kb = next(int(line.split()[1]) for line in f if line.startswith("VmSize:"))
    limit = (size_kb << 10) + (headroom_mb << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))


def report(tally: Tally, cases: list[dict] | None = None) -> dict:
    return {
        "files": tally.tried,
        "by_stage": dict(Counter(label.split(":")[0] for label in tally.outcomes.elements())),
        "by_exception": dict(tally.kinds.most_common()),
        "outcomes": dict(tally.outcomes.most_common()),
        "max_seconds": tally.slowest[0],
        "slowest": tally.slowest[1],
        "failures": [
            {"case": case, "label": o["label"], "seconds": o["seconds"], "traceback": o["unexpected"]}
            for case, o in tally.failures
        ],
        **({"cases": cases} if cases is not None else {}),
    }


def print_report(result: dict, elapsed: float, seed: int) -> None:
    print(
        f"{result['files']} files tried in {elapsed:.1f} s ({result['files'] / max(elapsed, 1e-9):.0f}/s), seed {seed}"
    )
    if "run" in result:
        print(
            f"on {result['run']['engine']}, {result['run']['tasks']} tasks; case digest {result['case_digest'][:16]}"
        )
    print(f"by stage: {result['by_stage']}")
    print(f"max time per file: {result['max_seconds']:.3f} s ({result['slowest']})")
    print("outcomes by stage and exception type:")
    for kind, count in result["by_exception"].items():
        print(f"  {count:6d}  {kind}")
    print("outcomes by first words (numbers as N):")
    outcomes = list(result["outcomes"].items())
    for label, count in outcomes[:40]:
        print(f"  {count:6d}  {label}")
    if len(outcomes) > 40:
        rest = sum(count for _, count in outcomes[40:])
        print(f"  {rest:6d}  ... in {len(outcomes) - 40} more distinct outcomes")
    for f in result["failures"][:20]:
        print(f"FAILURE {f['case']} ({f['seconds']:.2f} s)\n{f['traceback'] or f['label']}")


def run_files(paths: list[Path], args: argparse.Namespace) -> dict:
    """Given files once each, in this process (capped like a worker)."""
    run_case((MODELS_DIR / "kws.pte").read_bytes())  # numba loads its cached kernels before the cap
    if args.headroom_mb:
        cap_address_space(args.headroom_mb)
    tally, cases = Tally(max_seconds=args.max_seconds), []
    for path in paths:
        outcome = run_case(path.read_bytes())
        tally.add(str(path), answer(outcome))
        cases.append({"case": str(path), "label": outcome.label, "seconds": outcome.seconds})
    return report(tally, cases)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=20_000, help="corrupted files to try")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--corpus", choices=tuple(CORPORA), default="full")
    parser.add_argument("--semantic-share", type=float, default=0.5, help="share of semantic mutations")
    parser.add_argument("--max-seconds", type=float, default=CAMPAIGN_SECONDS, help="slower is a failure")
    parser.add_argument("--headroom-mb", type=int, default=0, help="cap RLIMIT_AS at size + this (0: no cap)")
    parser.add_argument("--workers", type=int, default=1, help="local worker processes (default 1: this one)")
    parser.add_argument("--ray", metavar="auto|ADDRESS", help="run the shards on Ray (refsim[cluster])")
    parser.add_argument("--per-task", type=int, default=PER_TASK, help="files per shard (engine task)")
    parser.add_argument("--only", help="comma-separated file indices: replay these cases alone")
    parser.add_argument("--scaling", help="comma-separated engines to time the campaign on: 1,2,ray1,ray2")
    parser.add_argument("--json", type=Path, help="write the report as JSON")
    parser.add_argument("--files-from", nargs="+", type=Path, help="run these files instead")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(Settings.of(args))
        return 0

    started = time.perf_counter()
    if args.files_from:
        result = run_files(args.files_from, args)
    else:
        settings = Settings.of(args)
        indices = [int(i) for i in args.only.split(",")] if args.only else range(args.files)
        total = len(indices)
        progress = None if args.quiet else (lambda n: print(f"  {n}/{total} files", flush=True))
        try:
            if args.scaling:
                result, rows = measure_engines(
                    lambda engine: campaign(
                        engine, settings, indices, per_task=args.per_task, progress=progress
                    ),
                    args.scaling.split(","),
                    same_outcomes,
                )
                result["scaling"] = rows
                result["worker_start_s"] = worker_start_seconds(worker_spec(settings))
                result["provenance"] = provenance(
                    ROOT, "shared machine (2 cores, other jobs): compare ratios"
                )
            else:
                with make_engine(args.workers, args.ray) as engine:
                    result = campaign(engine, settings, indices, per_task=args.per_task, progress=progress)
        except RefsimError as exc:
            print(f"fuzz_pte: {exc}", file=sys.stderr)
            return 2
    elapsed = time.perf_counter() - started

    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    if not args.quiet:
        print_report(result, elapsed, args.seed)
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())

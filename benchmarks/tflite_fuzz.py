"""A corruption campaign against refsim's .tflite reader (issue 15, item 1).

    python benchmarks/tflite_fuzz.py [--cases 500] [--seed 0] [--seconds 5] [--memory-mb 256]
                                     [--json benchmarks/results/tflite_fuzz.json] [--quiet]

Seeds: the models of tests/tflite/test_corruption.py (a conv + relu6 + add built by the writer,
its weights inline and after the flatbuffer, and the four MLPerf Tiny reference models).
Each seed gets ``--cases`` mutated files, 1-4 mutations each, drawn from ``--seed`` by the
engine of tests/pte/test_corruption.py (bit flips, 2/4/8-byte words set to boundary or random
values, truncation), so a case replays from its printed description.

Every case is loaded by `load_model` and, when it loads, used as code that trusts a loaded
model would use it (described, every constant read, written and read again:
tests/tflite/test_corruption.py's ``exercise``), in a worker subprocess whose address space
is capped (RLIMIT_AS at its size after imports plus ``--memory-mb``) and which the campaign
kills after ``--seconds``. Outcomes: ``loaded``, ``ModelError`` (the only refusal allowed),
``traceback`` (any other exception, MemoryError included, or any exception after a load),
``crash`` (the worker died) and ``hang`` (it overran). Prints a table per seed and writes it as JSON; exit status 1 unless crashes, hangs
and tracebacks are all 0. Like benchmarks/fuzz_pte.py for .pte programs, but one reader.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import select
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: the engine lives in the tests package
    sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "benchmarks" / "results" / "tflite_fuzz.json"
OUTCOMES = ("loaded", "ModelError", "traceback", "crash", "hang")
FAILURES = ("traceback", "crash", "hang")


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


# -- the worker: loads one case per line of stdin --------------------------------------------------


def worker(memory_mb: int) -> None:
    from refsim.tflite import ModelError, load_model
    from tests.pte.test_corruption import _mutate
    from tests.tflite.test_corruption import exercise  # importing it warms up every seed model

    files = seeds()
    if memory_mb:
        with open("/proc/self/status") as f:
            size_kb = next(int(line.split()[1]) for line in f if line.startswith("VmSize:"))
        limit = (size_kb << 10) + (memory_mb << 20)
        resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    print(json.dumps({"ready": True}), flush=True)  # start-up is not a case's time
    for line in sys.stdin:
        case = json.loads(line)
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
        print(json.dumps(result), flush=True)


STARTUP_SECONDS = 300.0


class Worker:
    def __init__(self, memory_mb: int) -> None:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--memory-mb", str(memory_mb)]
        # a file, not a pipe: nobody need drain it; closed by close()
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True
        )
        # The worker's imports and warm-up can take seconds on a loaded machine: wait for it to say
        # it is ready, so that a case's time limit measures only that case.
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], STARTUP_SECONDS)
        line = self.proc.stdout.readline() if ready else ""
        if not line or not json.loads(line).get("ready"):
            self.close()
            raise SystemExit(f"tflite_fuzz: the worker did not start within {STARTUP_SECONDS} s")

    def _died(self) -> dict:
        code = self.proc.wait()
        self.stderr.seek(0)
        tail = self.stderr.read().decode(errors="replace").strip().splitlines()[-1:]
        return {"outcome": "crash", "message": f"worker exited with {code}: {' '.join(tail)}"}

    def run(self, case: dict, seconds: float) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(json.dumps(case) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            return self._died()
        ready, _, _ = select.select([self.proc.stdout], [], [], seconds)
        if not ready:
            self.close()
            return {"outcome": "hang", "message": f"no answer in {seconds} s"}
        line = self.proc.stdout.readline()
        if not line:
            return self._died()
        return json.loads(line)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.alive:
            self.proc.kill()
        self.proc.wait()
        self.stderr.close()


def campaign(cases: int, seed: int, seconds: float, memory_mb: int, progress=None) -> dict:
    rng = random.Random(seed)
    names = sorted(seeds())
    table = {name: Counter() for name in names}
    slowest = {name: 0.0 for name in names}
    failures: list[dict] = []
    messages: Counter = Counter()
    w = Worker(memory_mb)
    started = time.perf_counter()
    try:
        for name in names:
            for k in range(cases):
                case = {"seed": name, "mutations": draw_mutations(rng)}
                if not w.alive:
                    w = Worker(memory_mb)
                result = w.run(case, seconds)
                table[name][result["outcome"]] += 1
                slowest[name] = max(slowest[name], result.get("seconds", seconds))
                if result["outcome"] == "ModelError":
                    messages[_shape(result["message"])] += 1
                if result["outcome"] in FAILURES:
                    failures.append({**case, **result})
                if progress is not None and (k + 1) % 500 == 0:
                    progress(f"  {name}: {k + 1} cases, {dict(table[name])}")
    finally:
        w.close()
    elapsed = time.perf_counter() - started
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
    }


def _shape(message: str) -> str:
    """A ModelError message with numbers and indices folded, to count kinds of refusal."""
    import re

    return re.sub(r"\d+", "N", message.split(": ", 1)[-1])[:90]


def print_table(report: dict) -> None:
    print(f"{'seed model':32s} " + " ".join(f"{o:>10s}" for o in OUTCOMES) + f" {'max s':>8s}")
    for name, row in report["seeds"].items():
        print(f"{name:32s} " + " ".join(f"{row[o]:10d}" for o in OUTCOMES) + f" {row['max_seconds']:8.4f}")
    total = report["total"]
    print(f"{'total':32s} " + " ".join(f"{total[o]:10d}" for o in OUTCOMES))
    print(f"{sum(total.values())} cases in {report['elapsed_seconds']} s, seed {report['seed']}")
    for f in report["failures"][:10]:
        print(
            f"FAILURE {f['outcome']} {f['seed']} {f['mutations']}: {f.get('message', '')}\n{f.get('tb', '')}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=500, help="mutated files per seed model")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=5.0, help="a case slower than this is a hang")
    parser.add_argument(
        "--memory-mb", type=int, default=256, help="address space the worker may add (0: no cap)"
    )
    parser.add_argument("--json", type=Path, default=RESULTS, help="write the report here")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.memory_mb)
        return 0
    report = campaign(args.cases, args.seed, args.seconds, args.memory_mb, None if args.quiet else print)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1) + "\n")
    if not args.quiet:
        print_table(report)
    return 1 if any(report["total"][o] for o in FAILURES) else 0


if __name__ == "__main__":
    sys.exit(main())

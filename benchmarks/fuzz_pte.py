"""A long corruption campaign against refsim's loader and runtime (issue 3, hostile input).

    python benchmarks/fuzz_pte.py [--files 20000] [--seed 0] [--corpus full|tests]
                                  [--semantic-share 0.5] [--headroom-mb N] [--max-seconds S]
                                  [--json out.json] [--quiet]
    python benchmarks/fuzz_pte.py --files-from a.pte b.pte ...   # run given files once each

Each file is a valid program (every bundled model and fixture with ``--corpus full``, the
default) corrupted by 1-4 byte-level or semantic mutations, seeded, so any case replays from
its printed description. The corruption engine and the list of mutations are in
tests/runtime/test_hostile.py (which runs a short campaign of this script under a memory cap).

Each case goes through `Program.load`, ``program.method()`` (with the reports `refsim run`
makes) and ``execute`` with random valid inputs. It must end in a `RefsimError` or run;
anything else, or a case slower than ``--max-seconds`` (default 30 s: a jump loop runs up to
the interpreter's instruction bound, 1000 passes of the chain, ~5 s for ic), is a failure,
printed with its reproducer. ``--headroom-mb`` caps the address space (RLIMIT_AS) at the
process's size after warm-up plus that much, so an unbounded allocation shows up as a
MemoryError. A SIGALRM timer per case is the safety net against hangs.

Prints the files tried, the outcomes by stage and exception type and by first words, the
slowest case and the failures; exit status 1 if there are failures.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: the engine lives in the tests package
    sys.path.insert(0, str(ROOT))

from tests.runtime.test_hostile import (  # noqa: E402
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


@dataclass
class Tally:
    """Files tried, outcomes by label, the slowest case and every unexpected one."""

    max_seconds: float = SECONDS_PER_CASE
    tried: int = 0
    outcomes: Counter = field(default_factory=Counter)
    kinds: Counter = field(default_factory=Counter)
    slowest: tuple[float, str] = (0.0, "")
    failures: list[tuple[str, Outcome]] = field(default_factory=list)

    def add(self, case: str, outcome: Outcome) -> None:
        self.tried += 1
        self.outcomes["UNEXPECTED " + outcome.label if outcome.unexpected else outcome.label] += 1
        self.kinds["UNEXPECTED " + outcome.kind if outcome.unexpected else outcome.kind] += 1
        if outcome.seconds > self.slowest[0]:
            self.slowest = (outcome.seconds, case)
        if outcome.unexpected or outcome.seconds > self.max_seconds:
            self.failures.append((case, outcome))

    def summary(self) -> str:
        stages = Counter(label.split(":")[0] for label in self.outcomes.elements())
        return (
            f"{self.tried} files tried: {dict(stages)}; slowest {self.slowest[0]:.2f} s ({self.slowest[1]}); "
            f"{len(self.failures)} failures"
        )


def campaign(
    files: int,
    seed: int,
    corpus: dict[str, Path],
    semantic_share: float = 0.5,
    progress=None,
    max_seconds: float = SECONDS_PER_CASE,
) -> Tally:
    """``files`` corrupted files from ``corpus``, reproducible from ``seed``."""
    rng = random.Random(seed)
    originals = {name: path.read_bytes() for name, path in sorted(corpus.items())}
    names = sorted(originals)
    tally = Tally(max_seconds)
    for k in range(files):
        name = rng.choice(names)
        mutations = random_mutations(rng, semantic_share)
        case = f"{name} {mutations}"
        tally.add(case, run_case(apply_mutations(originals[name], mutations), seed=k))
        if progress is not None and (k + 1) % 1000 == 0:
            progress(tally)
    return tally


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
            {"case": case, "label": o.label, "seconds": o.seconds, "traceback": o.unexpected}
            for case, o in tally.failures
        ],
        **({"cases": cases} if cases is not None else {}),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=20_000, help="corrupted files to try")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--corpus", choices=("full", "tests"), default="full")
    parser.add_argument("--semantic-share", type=float, default=0.5, help="share of semantic mutations")
    parser.add_argument("--max-seconds", type=float, default=CAMPAIGN_SECONDS, help="slower is a failure")
    parser.add_argument("--headroom-mb", type=int, default=0, help="cap RLIMIT_AS at size + this (0: no cap)")
    parser.add_argument("--json", type=Path, help="write the report as JSON")
    parser.add_argument("--files-from", nargs="+", type=Path, help="run these files instead")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)

    run_case((MODELS_DIR / "kws.pte").read_bytes())  # numba loads its cached kernels before the cap
    if args.headroom_mb:
        cap_address_space(args.headroom_mb)
    started = time.perf_counter()
    cases = None
    if args.files_from:
        tally, cases = Tally(max_seconds=args.max_seconds), []
        for path in args.files_from:
            outcome = run_case(path.read_bytes())
            tally.add(str(path), outcome)
            cases.append({"case": str(path), "label": outcome.label, "seconds": outcome.seconds})
    else:
        corpus = FULL_CORPUS if args.corpus == "full" else TEST_CORPUS
        progress = None if args.quiet else (lambda t: print(f"  {t.summary()}", flush=True))
        tally = campaign(args.files, args.seed, corpus, args.semantic_share, progress, args.max_seconds)
    elapsed = time.perf_counter() - started

    result = report(tally, cases)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    if not args.quiet:
        print(
            f"{tally.tried} files tried in {elapsed:.1f} s ({tally.tried / max(elapsed, 1e-9):.0f}/s), seed {args.seed}"
        )
        print(f"by stage: {result['by_stage']}")
        print(f"max time per file: {tally.slowest[0]:.3f} s ({tally.slowest[1]})")
        print("outcomes by stage and exception type:")
        for kind, count in tally.kinds.most_common():
            print(f"  {count:6d}  {kind}")
        print("outcomes by first words (numbers as N):")
        for label, count in tally.outcomes.most_common(40):
            print(f"  {count:6d}  {label}")
        if len(tally.outcomes) > 40:
            rest = sum(count for _, count in tally.outcomes.most_common()[40:])
            print(f"  {rest:6d}  ... in {len(tally.outcomes) - 40} more distinct outcomes")
        for case, o in tally.failures[:20]:
            print(f"FAILURE {case} ({o.seconds:.2f} s)\n{o.unexpected or o.label}")
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""The real CMSIS-NN through generated conformance cases on each core model, sharded on the engine
(refsim/qemu/campaign.py), every failure classified by the recorded CMSIS-NN defect classes.

    python benchmarks/cmsis_nn_campaign.py --kernels-dir /work/ext/cmsis-nn-et \\
        [--cores cortex-m55,cortex-m4,...] [--cases 4000] [--seed 100] [--workers 2 | --ray local]
        [--per-task 500] [--failures-dir DIR] [--out benchmarks/results/cmsis_nn_campaign.json]
        [--merge]

Cores are the seven core models; cortex-m0plus and cortex-m85 run their own builds on the M3 and
M55 boards (refsim.qemu.timing_cli.model_target).

Per core: cases run, passed, failed, wall time and cases/min, and every mismatch class (function ×
kind, refsim.qemu.conformance.failure_kind) with the recorded defect each of its failures belongs
to (the predicates of tests/qemu/test_cmsis_nn.py, which docs/numerics.md describes) or
``UNEXPLAINED``; the first case of each unexplained group is saved as a reproducer vector in
``--failures-dir`` (rerun it with ``refsim conformance --vectors DIR --cpu CORE --kernels-dir ...``).
The JSON is rewritten after every core, so a run stopped early keeps the cores it finished. Each
core's row carries its own provenance (command, refsim commit, library, date, cases, seed);
``--merge`` keeps the rows of the cores this run does not measure (a row of the file's older
format, without one, is given the file's top-level provenance).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from isa_models.cortex_m.cores import CORE_MODELS  # noqa: E402
from refsim.engine import make_engine  # noqa: E402
from refsim.qemu import campaign  # noqa: E402
from refsim.qemu import conformance as qc  # noqa: E402
from tests.qemu.test_cmsis_nn import KNOWN_DEFECTS  # noqa: E402


def defect_of(core: str, failure: qc.Failure) -> str:
    for name, applies in KNOWN_DEFECTS.items():
        if applies(core, failure.case.function, failure.case.params):
            return name
    return "UNEXPLAINED"


def run_core(core: str, args: argparse.Namespace) -> dict:
    spec = campaign.TargetSpec(None, core, str(args.kernels_dir.resolve()))
    target = campaign.resolve(spec)
    tasks = campaign.generated_tasks(qc.kernel_functions(), args.cases, args.seed, per_task=args.per_task)
    t0 = time.perf_counter()
    with make_engine(args.workers, args.ray) as engine:
        report = campaign.run_campaign(engine, target, spec, tasks)
        where = engine.name
    wall = time.perf_counter() - t0
    ran = sum(k.cases for k in report.kernels.values())
    classes: dict[str, dict] = {}
    for (function, kind), failures in qc.mismatch_classes(report).items():
        by_defect: dict[str, list[qc.Failure]] = {}
        for failure in failures:
            by_defect.setdefault(defect_of(core, failure), []).append(failure)
        entry = {}
        for defect, group in by_defect.items():
            entry[defect] = {"cases": len(group), "first": group[0].case.label, "message": group[0].message}
            if defect == "UNEXPLAINED":
                path = qc.save_reproducer(report, group[0], args.failures_dir / core)
                entry[defect]["reproducer"] = str(path)
                entry[defect]["params"] = {
                    k: (list(map(int, v)) if isinstance(v, (list, tuple)) else v)
                    for k, v in group[0].case.params.items()
                    if isinstance(v, (int, str, bool, list, tuple))
                }
        classes[f"{function}: {kind}"] = entry
    return {
        "engine": where,
        "cases": ran,
        "passed": report.passed,
        "failed": report.failed,
        "skipped": report.skipped,
        "tasks": len(tasks),
        "qemu_starts": report.emulator_starts,
        "wall_s": round(wall, 1),
        "cases_per_min": round(60 * ran / wall),
        "classes": classes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels-dir", type=Path, required=True)
    parser.add_argument("--library-commit", default="")
    parser.add_argument("--cores", default=",".join(CORE_MODELS))
    parser.add_argument("--cases", type=int, default=4000, help="cases per function")
    parser.add_argument("--seed", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--ray", default=None)
    parser.add_argument("--per-task", type=int, default=campaign.PER_TASK)
    parser.add_argument("--failures-dir", type=Path, default=Path("/tmp/refsim-cmsis-nn-campaign"))
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "results" / "cmsis_nn_campaign.json"
    )
    parser.add_argument("--merge", action="store_true", help="keep the other cores' rows of --out")
    args = parser.parse_args()
    cores = args.cores.split(",")
    unknown = [c for c in cores if c not in CORE_MODELS]
    if unknown:
        parser.error(f"--cores: not core models: {', '.join(unknown)} (known: {', '.join(CORE_MODELS)})")
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout
    provenance = {
        "command": "python " + " ".join(shlex.quote(a) for a in sys.argv),
        "commit": commit.strip(),
        "library": str(args.kernels_dir),
        "library_commit": args.library_commit,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "note": "shared machine (2 cores, other jobs running)",
    }
    kept = _kept_rows(args.out, cores) if args.merge else []
    rows: list[dict] = []
    for core in cores:
        row = {
            "core": core,
            "provenance": {**provenance, "load_average_before": [round(x, 2) for x in os.getloadavg()]},
            "cases_per_function": args.cases,
            "seed": args.seed,
            **run_core(core, args),
        }
        row["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
        rows.append(row)
        _write(args.out, kept + rows)
        unexplained = {k: v["UNEXPLAINED"]["cases"] for k, v in row["classes"].items() if "UNEXPLAINED" in v}
        print(
            f"{core}: {row['cases']} cases, {row['failed']} failed, {len(row['classes'])} mismatch classes, "
            f"unexplained {unexplained or 'none'}; {row['wall_s']} s, {row['cases_per_min']} cases/min",
            flush=True,
        )


def _kept_rows(path: Path, replaced: list[str]) -> list[dict]:
    """The rows of ``path`` for cores not in ``replaced``, each with its own provenance."""
    if not path.exists():
        return []
    old = json.loads(path.read_text())
    shared = {k: old[k] for k in ("provenance", "cases_per_function", "seed") if k in old}
    return [{**shared, **row} for row in old["cores"] if row["core"] not in replaced]


def _write(path: Path, rows: list[dict]) -> None:
    order = list(CORE_MODELS)
    doc = {
        "about": "the real CMSIS-NN through generated conformance cases, per core model; each row "
        "says how it was made (provenance, cases_per_function, seed)",
        "known_defects": list(KNOWN_DEFECTS),
        "cores": sorted(rows, key=lambda r: order.index(r["core"])),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()

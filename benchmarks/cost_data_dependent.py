"""Data-dependent work and early exits against the real CMSIS-NN: prints a table and saves
benchmarks/results/cost_data_dependent.json.

    CMSIS_NN_DIR=/work/ext/cmsis-nn-et .venv/bin/python benchmarks/cost_data_dependent.py \
        [--cpu cortex-m4 ...] [--cases 100] [--seed 7]

Random conformance cases (refsim.conformance.vectors.generate_cases, as ``refsim conformance
--export-vectors`` draws them; not the calibration sweep) of ``arm_softmax_s8`` (whose
exponentials follow the values) and ``arm_vector_sum_s8`` (whose ``lhs_offset`` 0 call is an early
exit), instruction-timed under QEMU with the CMSIS-NN checkout at ``CMSIS_NN_DIR`` (the
calibrated commit), priced by the cost model: softmax on the counts its golden kernel reports
for the case's own input ("data") and at its shape-only bound ("shape"); vector sum as priced.
Per function x core: the median, 90th percentile and worst relative cycle error, and the share
within ±15% and ±25%.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "cost_data_dependent.json"
FUNCTIONS = ("arm_softmax_s8", "arm_vector_sum_s8")
CORES = ("cortex-m0plus", "cortex-m4", "cortex-m55")


def _stats(errors: list[float]) -> dict:
    a = sorted(abs(e) for e in errors)
    return {
        "cases": len(errors),
        "median": round(statistics.median(errors), 4),
        "p90_abs": round(a[min(len(a) - 1, int(0.9 * len(a)))], 4),
        "worst": round(max(errors, key=abs), 4),
        "within_15": round(sum(x <= 0.15 for x in a) / len(a), 3),
        "within_25": round(sum(x <= 0.25 for x in a) / len(a), 3),
    }


def measure(core: str, cases: int, seed: int, kernels_dir: Path) -> list[dict]:
    from isa_models.cortex_m.calibration import CalibrationSet
    from isa_models.cortex_m.formulas import estimate_call
    from refsim.commands.conformance_estimate import _measure
    from refsim.conformance import vectors as vec
    from refsim.ops.data_work import call_counts

    drawn = [c for f in FUNCTIONS for c in vec.generate_cases(f, cases, seed)]
    timed = _measure(drawn, core, kernels_dir, None)
    calibrations = CalibrationSet(core, "cmsis-nn")
    rows = []
    for case in drawn:
        if case.label not in timed:
            continue
        params = {k: v for k, v in case.params.items() if isinstance(v, int) and not isinstance(v, bool)}
        counts = call_counts(case.function, case.params, case.arrays)
        _, cycles = timed[case.label]
        row = {
            "case": case.label,
            "function": case.function,
            "measured_cycles": cycles,
            "counts": counts or None,
        }
        for basis, p in (("data", {**params, **counts}), ("shape", params)):
            est = estimate_call(case.function, p, core, calibrations=calibrations).cycles
            row[f"{basis}_cycles"] = round(est)
            row[f"{basis}_error"] = round(est / cycles - 1, 5)
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cpu", action="append", help="core (repeatable; default m0plus, m4, m55)")
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    kernels_dir = os.environ.get("CMSIS_NN_DIR")
    if not kernels_dir:
        sys.exit("set CMSIS_NN_DIR to a CMSIS-NN checkout (the calibrated commit)")
    sys.path.insert(0, str(ROOT))
    summary, records = [], {}
    for core in args.cpu or CORES:
        rows = measure(core, args.cases, args.seed, Path(kernels_dir))
        records[core] = rows
        for function in FUNCTIONS:
            mine = [r for r in rows if r["function"] == function]
            for basis in ("data", "shape") if function == "arm_softmax_s8" else ("data",):
                s = _stats([r[f"{basis}_error"] for r in mine])
                summary.append({"core": core, "function": function, "priced": basis, **s})
    print(f"{'core':14s} {'function':18s} {'priced':6s} {'cases':>5s} {'median':>8s} {'p90|e|':>8s} "
          f"{'worst':>9s} {'±15%':>6s} {'±25%':>6s}")  # fmt: skip
    for s in summary:
        print(f"{s['core']:14s} {s['function']:18s} {s['priced']:6s} {s['cases']:5d} {100 * s['median']:+7.1f}% "
              f"{100 * s['p90_abs']:7.1f}% {100 * s['worst']:+8.1f}% {100 * s['within_15']:5.0f}% "
              f"{100 * s['within_25']:5.0f}%")  # fmt: skip
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({
        "provenance": {"refsim_commit": commit.strip(), "cmsis_nn_dir": kernels_dir, "date": datetime.date.today().isoformat(),
                       "command": "CMSIS_NN_DIR=... python benchmarks/cost_data_dependent.py " + " ".join(sys.argv[1:]),
                       "cases": args.cases, "seed": args.seed},
        "summary": summary,
        "records": records,
    }, indent=1) + "\n")  # fmt: skip


if __name__ == "__main__":
    main()

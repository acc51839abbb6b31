"""A long differential campaign: mutated .pte files through ExecuTorch's loader and refsim's.

    .venv-interop/bin/python benchmarks/loader_differential.py [--cases 20000] [--seed 1]
                                                               [--json benchmarks/results/loader_differential.json]

Needs ExecuTorch 1.5.1 (``make venv-interop``). The engine (mutations, the ExecuTorch loader
server, the verdicts) is tests/interop/loader_differential.py; the interop suite runs a
short campaign of it (tests/interop/test_loader_differential.py). Prints a table of
outcomes (both load, both reject, refsim stricter by reason, ExecuTorch crashes, and the
disagreements that must not exist), the ExecuTorch load_method checks behind refsim's
stricter verdicts, and saves the summary and every disagreement (with its reproducer:
program and case seed) as JSON. Exit status 1 if there is a disagreement.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: the engine lives in the tests package
    sys.path.insert(0, str(ROOT))

from tests.interop.loader_differential import (  # noqa: E402
    et_load_method_reason,
    et_reason,
    run_campaign,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--json", type=Path, default=ROOT / "benchmarks" / "results" / "loader_differential.json"
    )
    args = parser.parse_args()

    t0 = time.perf_counter()
    campaign = run_campaign(args.cases, seed=args.seed)
    seconds = time.perf_counter() - t0
    summary = campaign.summary()
    later = Counter(
        re.sub(r"\d+", "N", et_load_method_reason(v.et, v.kernels_missing) or "")
        for v in campaign.verdicts
        if v.kind.endswith("at load_method")
    )
    crashes = [
        {"program": v.program, "seed": v.seed, "stage": v.et.get("stage"), "exit": v.et.get("exit")}
        for v in campaign.verdicts
        if v.et_crashes
    ]
    disagreements = [
        {
            "program": v.program,
            "seed": v.seed,
            "kind": v.kind,
            "executorch": et_reason(v.et),
            "refsim": v.refsim.get("error", ""),
        }
        for v in campaign.disagreements()
    ]
    print(f"{summary['cases']} mutants in {seconds:.0f} s (seed {args.seed})")
    print(f"{'outcome':<100} {'cases':>7}")
    for kind, n in summary["outcomes"].items():
        print(f"{kind:<100} {n:>7}")
    print("\nExecuTorch's load_method checks behind 'refsim stricter: ExecuTorch rejects at load_method':")
    for line, n in later.most_common():
        print(f"  {n:>6}  {line[:110]}")
    for d in disagreements[:20]:
        print("DISAGREE", d)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps(
            {
                "seed": args.seed,
                "seconds": round(seconds, 1),
                **summary,
                "executorch_load_method_checks": dict(later.most_common()),
                "executorch_crashes": crashes,
                "disagreement_cases": disagreements,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"saved {args.json}")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())

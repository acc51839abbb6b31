"""Executed instructions of kernels_c beside the real CMSIS-NN, per function x core, as ratios.

    python benchmarks/kernels_c_vs_cmsis_nn.py --cmsis-nn ~/src/CMSIS-NN [--cases 6] [--seed 0]
        [--cpu cortex-m4 ...] [--out benchmarks/results/kernels_c_vs_cmsis_nn.json]

The same conformance cases (``refsim.qemu.conformance.generate_cases``: small layers, seed
``--seed``) run through each public function of kernels_c and of CMSIS-NN (``--kernels-dir``
build: its own CMake project, ``-Ofast``) on each core, under QEMU's instruction-counting plugin
(``refsim.qemu.counting``: instructions between the harness markers around the kernel call).
``ratio`` = kernels_c instructions / CMSIS-NN instructions, summed over the cases both ran;
``<= 1.0`` means kernels_c executes no more instructions. Cases either library fails are counted
too (the instruction count does not depend on the bits) and reported in ``fail``. Functions the
library lacks are listed as skipped. Results print as a table and are saved as JSON.
"""

from __future__ import annotations

import argparse
import json
import platform
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from refsim.qemu import CORES
from refsim.qemu import conformance as qc


@dataclass
class Row:
    core: str
    function: str
    cases: int
    kernels_c_instructions: int
    cmsis_nn_instructions: int
    kernels_c_fail: int
    cmsis_nn_fail: int

    @property
    def ratio(self) -> float:
        return self.kernels_c_instructions / self.cmsis_nn_instructions


def measure(core: str, library: Path, cases: int, seed: int) -> tuple[list[Row], dict[str, str]]:
    todo = qc.generate_cases(qc.kernel_functions(), cases, seed)
    ours = qc.run_cases(qc.resolve_target(None, core), todo, count=True)
    theirs = qc.run_cases(qc.resolve_target(None, core, library), todo, count=True)
    rows = []
    for function, summary in theirs.kernels.items():
        mine = ours.kernels.get(function)
        if mine is None or not summary.instructions or mine.counted != summary.counted:
            continue
        rows.append(
            Row(
                core,
                function,
                summary.counted,
                mine.instructions,
                summary.instructions,
                mine.failed,
                summary.failed,
            )
        )
    return rows, dict(theirs.skip_reason)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cmsis-nn", type=Path, required=True, help="a CMSIS-NN checkout (Include/, Source/)"
    )
    parser.add_argument("--cases", type=int, default=6, help="cases per function")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cpu", action="append", choices=list(CORES), help="cores (default: all five)")
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "kernels_c_vs_cmsis_nn.json"
    )
    args = parser.parse_args()
    console = Console()
    rows: list[Row] = []
    skipped: dict[str, dict[str, str]] = {}
    for core in args.cpu or list(CORES):
        with console.status(f"{core}: kernels_c and CMSIS-NN"):
            found, skips = measure(core, args.cmsis_nn, args.cases, args.seed)
        rows += found
        skipped[core] = skips
    table = Table(
        "core", "function", "cases", "kernels_c", "CMSIS-NN", "ratio", "fail kc/cm",
        title=f"executed instructions, kernels_c / CMSIS-NN ({args.cmsis_nn}), seed {args.seed}",
    )  # fmt: skip
    for row in rows:
        table.add_row(
            row.core,
            row.function,
            str(row.cases),
            f"{row.kernels_c_instructions:,}",
            f"{row.cmsis_nn_instructions:,}",
            f"{row.ratio:.3f}",
            f"{row.kernels_c_fail}/{row.cmsis_nn_fail}",
            style="red" if row.ratio > 1.0 else None,
        )
    console.print(table)
    over = [r for r in rows if r.ratio > 1.0]
    console.print(f"{len(rows) - len(over)} of {len(rows)} rows <= 1.0")
    for core, skips in skipped.items():
        for function, reason in skips.items():
            console.print(f"skipped on {core}: {function}: {reason}")
    payload = {
        "benchmark": "kernels_c_vs_cmsis_nn",
        "cmsis_nn": str(args.cmsis_nn),
        "cases_per_function": args.cases,
        "seed": args.seed,
        "machine": platform.machine(),
        "rows": [{**asdict(r), "ratio": round(r.ratio, 4)} for r in rows],
        "skipped": skipped,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2) + "\n")
    console.print(f"saved {args.out}")


if __name__ == "__main__":
    main()

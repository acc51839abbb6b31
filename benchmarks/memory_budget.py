"""Whole-device RAM and flash of the bundled programs on each core (refsim inspect --memory).

    python benchmarks/memory_budget.py [--models kws,vww,ic,ad,kws_m4] [--cpus cortex-m55,cortex-m4]
                                       [--out benchmarks/results/memory_budget.json]

Per program × core: the RAM lines (planned arena, of it CMSIS-NN scratch and planned I/O, the
ExecuTorch method and temp allocator pools replayed from Method::load with the probed 32-bit
struct sizes, the runtime objects) and the flash lines (the .pte, CMSIS-NN kernel code: the real
CMSIS-NN as ExecuTorch builds it, refsim/memory/cmsis_nn_code.json, the default of
``inspect --memory``; ExecuTorch's own operator code and runtime core measured on
ExecuTorch built from source for the core: refsim/memory/executorch_code.json). The table prints
with rich; the JSON keeps every line with its source.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from refsim.memory.report import memory_report
from refsim.runtime import Program

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "examples" / "models"


def _line(budget: dict, name: str) -> int | None:
    return next((ln["bytes"] for ln in budget["lines"] if ln["name"] == name), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="kws,vww,ic,ad,kws_m4")
    parser.add_argument("--cpus", default="cortex-m55,cortex-m4")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "memory_budget.json")
    args = parser.parse_args()
    rows = []
    for name in args.models.split(","):
        path = MODELS / f"{name}.pte"
        program = Program.load(path)
        for cpu in args.cpus.split(","):
            rows.append({"model": name, **memory_report(program, path, "forward", cpu)})
    columns = {
        "arena": "planned arena 1",
        "scratch": "CMSIS-NN scratch (memory-planned)",
        "method pool": "ExecuTorch method allocator",
        "temp pool": "ExecuTorch temp allocator",
        "objects": "runtime objects (application storage)",
        ".pte": "program (.pte)",
        "kernels": "CMSIS-NN kernel code",
        "ET ops": "ExecuTorch operator code",
        "runtime": "ExecuTorch runtime core",
    }
    table = Table("model", "cpu", *columns, "RAM", "flash", title="bytes; RAM = arena + pools + objects")
    for r in rows:
        cells = [_line(r, line) for line in columns.values()]
        table.add_row(
            r["model"],
            r["cpu"],
            *("-" if c is None else f"{c:,}" for c in cells),
            f"{r['ram_total']:,}",
            f"{r['flash_total']:,}" + (" +?" if r["flash_unmeasured"] else ""),
        )
    Console(width=160).print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

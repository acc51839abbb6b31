"""The ``refsim inspect --memory / --plot-memory`` face: add the budget to the report, print it, plot it."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from refsim.errors import RefsimError
from refsim.memory.report import memory_report
from refsim.runtime.describe import scratch_values
from refsim.runtime.program import Program


class MemoryFaceError(RefsimError):
    """A bad --plot-memory / --kernels-dir argument."""


def add_memory(
    report: dict, program: Program, model: Path, cpu: str, kernels_dir: Path | None, library: str = "cmsis-nn"
) -> None:
    """Put ``memory_budget`` (lines + totals) on every runnable method entry of the inspect report."""
    if kernels_dir is not None and not kernels_dir.is_dir():
        raise MemoryFaceError(f"memory: --kernels-dir {kernels_dir} is not a directory")
    for entry in report["methods"]:
        if "constant" in entry or "error" in entry:
            continue
        entry["memory_budget"] = memory_report(program, model, entry["name"], cpu, kernels_dir, library)


def plot_methods(report: dict, program: Program, out: Path) -> list[Path]:
    """One PNG per runnable method (``out`` itself for ``forward`` or a single method)."""
    from refsim.memory.plot import plot_memory  # imports matplotlib

    if out.suffix.lower() != ".png":
        raise MemoryFaceError(f"memory: --plot-memory wants a .png file name, got {out}")
    if not out.parent.is_dir():
        raise MemoryFaceError(f"memory: --plot-memory directory {out.parent} does not exist")
    names = [e["name"] for e in report["methods"] if "constant" not in e and "error" not in e]
    written = []
    for name in names:
        path = out if len(names) == 1 or name == "forward" else out.with_name(f"{out.stem}.{name}.png")
        method = program.method(name)
        plot_memory(
            method.plan,
            method.placements,
            scratch_values(method),
            path,
            f"{Path(report['file']).name} {name}",
        )
        written.append(path)
    return written


def print_memory(report: dict, console: Console) -> None:
    for entry in report["methods"]:
        budget = entry.get("memory_budget")
        if budget is None:
            continue
        table = Table(
            "",
            "bytes",
            "source",
            title=f"method {entry['name']} on {budget['cpu']}: RAM and flash",
            title_justify="left",
        )
        for section in ("ram", "flash"):
            for ln in budget["lines"]:
                if ln["section"] != section:
                    continue
                name = f"  {ln['name']}" if ln["part_of"] else f"{section.upper()}  {ln['name']}"
                nbytes = "not measured" if ln["bytes"] is None else f"{ln['bytes']:,}"
                table.add_row(name, nbytes, ln["source"], style="dim" if ln["part_of"] else None)
            missing = budget[f"{section}_unmeasured"]
            note = f" (+ unmeasured: {', '.join(missing)})" if missing else ""
            table.add_row(
                f"[bold]{section.upper()} total[/]", f"[bold]{budget[f'{section}_total']:,}[/]", note
            )
        console.print(table)
        console.print(f"struct sizes: {budget['struct_sizes']}")
        console.print(f"CMSIS-NN code sizes: {budget['kernel_library']} (--library cmsis-nn | kernels_c)")

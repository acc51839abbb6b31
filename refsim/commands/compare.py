"""``refsim compare A B``: two programs of one network (typically an ExecuTorch .pte and a
.tflite) side by side on one core: latency, RAM, flash, per-layer cycles (refsim/comparison.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from refsim.cli import app, console
from refsim.commands._json import emit_json
from refsim.errors import RefsimError


def _num(value, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.3f}{unit}"
    return f"{value:,}{unit}"


def _pct(p: float | None) -> str:
    return "-" if p is None else f"{p:+.1f}%"


@app.command()
def compare(
    a: Annotated[Path, typer.Argument(help="First program (.pte or .tflite).")],
    b: Annotated[Path, typer.Argument(help="Second program (.pte or .tflite).")],
    cpu: Annotated[str, typer.Option("--cpu", help="Core (cortex-m0plus ... m85).")] = "cortex-m55",
    system: Annotated[
        str | None, typer.Option("--system", help="System preset (default: the core's ideal).")
    ] = None,
    clock_mhz: Annotated[float | None, typer.Option("--clock-mhz", help="Clock for the latency.")] = None,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="Write the report as JSON ('-': stdout).")
    ] = None,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Grouped bar chart of the three totals (PNG).")
    ] = None,
) -> None:
    """Latency, RAM and flash of two programs of one network on the same core and system."""
    from refsim.comparison import compare as run_compare

    for p in (a, b):
        if not p.exists():
            raise RefsimError(f"{p}: no such file")
    report = run_compare(a, b, cpu, system, clock_mhz)
    if emit_json(report, json_path):
        return
    if plot is not None:
        from refsim.commands.compare_plot import plot_totals

        plot_totals(report, plot)
    _print(report)


def _print(report: dict) -> None:
    a, b, diff = report["a"], report["b"], report["diff"]
    for w in report["warnings"]:
        console.print(f"[yellow]warning:[/] {w}")
    totals = Table(title=f"{report['cpu']} ({report['system'] or 'ideal system'})")
    totals.add_column("")
    totals.add_column(f"A: {Path(a['path']).name} ({a['runtime']})", justify="right")
    totals.add_column(f"B: {Path(b['path']).name} ({b['runtime']})", justify="right")
    totals.add_column("B vs A", justify="right")
    totals.add_column("smaller")
    for key, label, unit in (
        ("latency_ms", "latency", " ms"),
        ("cycles_total", "cycles", ""),
        ("ram_bytes", "RAM", " B"),
        ("flash_bytes", "flash", " B"),
    ):
        d = diff[key]
        totals.add_row(
            label, _num(a[key], unit), _num(b[key], unit), _pct(d["b_vs_a_percent"]), d["smaller"] or "-"
        )
    totals.add_row("CMSIS-NN profile", a["library"], b["library"], "", "")
    console.print(totals)
    for side, name in ((a, "A"), (b, "B")):
        if not side["estimate_complete"]:
            console.print(f"{name}: some rows have no estimate: its latency is a lower bound")
        if side.get("memory_note"):
            console.print(f"{name}: {side['memory_note']}")
        if side.get("estimate_basis") == "shape only":
            console.print(
                f"{name}: shape-only estimate: data-dependent rows (softmax) at their bound; "
                "refsim run --estimate-cycles prices a run's own inputs"
            )
    layers = Table(title="layers (matched by CMSIS-NN family and MACs)")
    for col in ("A op", "A function", "A cycles", "B op", "B function", "B cycles", "MACs", "B vs A"):
        layers.add_column(col, justify="right" if "cycles" in col or col in ("MACs", "B vs A") else "left")
    for pair in report["layers"]:
        ra, rb = pair["a"], pair["b"]
        ca = None if ra is None else ra["cycles"]
        cb = None if rb is None else rb["cycles"]
        from refsim.comparison import percent

        layers.add_row(
            "" if ra is None else ra["name"],
            "" if ra is None else ra["function"],
            _num(ca),
            "" if rb is None else rb["name"],
            "" if rb is None else rb["function"],
            _num(cb),
            _num((ra or rb)["macs"]),
            _pct(percent(ca, cb)),
        )
    console.print(layers)
    for side, name in (("a", "A"), ("b", "B")):
        outside = report["outside_cmsis_nn"][side]
        if outside:
            console.print(f"{name} outside CMSIS-NN: {', '.join(outside)}")

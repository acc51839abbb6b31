"""``refsim sweep MODEL...``: every model on every core, system and clock given; latency, cycles, RAM,
flash and CMSIS-NN coverage of each, against a RAM and latency budget (refsim/sweep.py), run on
refsim/engine.py (in process, a process pool or Ray) with every result cached as it finishes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from refsim.cli import app, console, err_console


@app.command()
def sweep(
    models: Annotated[list[Path], typer.Argument(help="Models to estimate (.pte and/or .tflite).")],
    cpus: Annotated[
        str | None, typer.Option("--cpus", help="Cores, comma-separated (cortex-m4,cortex-m55), or 'all'.")
    ] = None,
    systems: Annotated[
        str | None,
        typer.Option(
            "--systems",
            help="System presets, comma-separated, or 'all' (every preset of each core). "
            "Default: each core's ideal system.",
        ),
    ] = None,
    clock_mhz: Annotated[
        str | None,
        typer.Option("--clock-mhz", help="Clocks (MHz), comma-separated (default: each preset's)."),
    ] = None,
    budget_ram: Annotated[
        str | None, typer.Option("--budget-ram", help="RAM budget: 256KiB, 256kB, 1.5MiB, 262144.")
    ] = None,
    budget_ms: Annotated[
        str | None, typer.Option("--budget-ms", help="Latency budget: 50, 50ms, 0.05s.")
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Results file: .json, .csv or .parquet.")] = None,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Pareto plot, latency vs RAM per model (PNG).")
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option("--workers", help="Local worker processes (default: one per CPU; 1: in process)."),
    ] = None,
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray", help="Run the tasks on Ray: 'local' (a private instance), 'auto' or a cluster ADDRESS."
        ),
    ] = None,
    cache_dir: Annotated[
        Path | None,
        typer.Option(
            "--cache-dir", help="Result cache (default: $XDG_CACHE_HOME/refsim/sweep or ~/.cache/...)."
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No table; only the closing line.")] = False,
) -> None:
    """Estimate every MODEL on every core/system/clock combination; table, file and Pareto plot."""
    from refsim.engine import ResultCache, make_engine, run_cached
    from refsim.sweep import (
        check_out,
        default_cache_dir,
        estimate_task,
        make_rows,
        make_tasks,
        parse_clocks,
        parse_ms,
        parse_size,
        read_models,
        report,
        split_list,
        targets,
        write_out,
    )

    # every argument checked before any work starts: a bad one is one line, exit 2
    ram = None if budget_ram is None else parse_size(budget_ram)
    ms = None if budget_ms is None else parse_ms(budget_ms)
    pairs = targets(split_list(cpus), split_list(systems))
    clocks = parse_clocks(clock_mhz)
    check_out(out)
    found, blobs = read_models(models)
    tasks = make_tasks(found, pairs, clocks)
    cache = ResultCache(cache_dir or default_cache_dir())

    t0 = time.perf_counter()
    results: dict[str, dict] = {}
    hits = 0
    with make_engine(workers, ray) as engine:
        from rich.progress import Progress

        with Progress(console=err_console, transient=True, disable=not err_console.is_terminal) as bar:
            job = bar.add_task("estimating", total=len(tasks))
            for done in run_cached(engine, estimate_task, tasks, blobs, cache):
                results[done.task.key] = done.result
                hits += done.cached
                bar.advance(job)
        where = engine.name
    wall = time.perf_counter() - t0

    rows = make_rows(tasks, results, ram, ms)
    doc = report(rows, ram, ms)
    if out is not None:
        write_out(doc, out)
    if plot is not None:
        from refsim.commands.sweep_plot import plot_pareto

        plot_pareto(rows, plot, ram, ms)
    if not quiet:
        _print(rows, ram, ms)
    console.print(
        f"{len(rows)} estimates: {hits} from the cache, {len(tasks) - hits} computed on {where} "
        f"in {wall:.1f} s"
        + (f"; {sum(r['meets_budget'] for r in rows)} meet the budget" if ram or ms else ""),
        highlight=False,
    )


def _kib(n: int | None) -> str:
    return "-" if n is None else f"{n / 1024:,.1f}"


def _print(rows: list[dict], ram: int | None, ms: float | None) -> None:
    table = Table(title="refsim sweep" + (f" (budget: {_budget_text(ram, ms)})" if ram or ms else ""))
    for col, right in (
        ("model", False), ("runtime", False), ("cpu", False), ("system", False), ("MHz", True),
        ("latency ms", True), ("cycles", True), ("RAM KiB", True), ("flash KiB", True),
        ("CMSIS-NN", True), ("budget", False), ("front", False),
    ):  # fmt: skip
        table.add_column(col, justify="right" if right else "left")
    errors: dict[str, list[str]] = {}
    for r in rows:
        head = [Path(r["model"]).name, r["runtime"] or "-", r["cpu"], r["system"], f"{r['clock_mhz']:g}"]
        if r["error"] is not None:
            errors.setdefault(r["error"], []).append(f"{Path(r['model']).name} on {r['system']}")
            table.add_row(*head, f"[red]cannot run ({len(errors)})[/]", "", "", "", "", "", "")
            continue
        latency = f"{r['latency_ms']:,.3f}" + ("" if r["estimate_complete"] else " ≥")
        coverage = "-" if r["cmsis_nn_macs_percent"] is None else f"{r['cmsis_nn_macs_percent']:.1f}% MACs"
        verdict = "" if not (ram or ms) else ("[green]✓[/]" if r["meets_budget"] else "✗")
        table.add_row(
            *head, latency, f"{r['cycles_total']:,}", _kib(r["ram_bytes"]), _kib(r["flash_bytes"]),
            coverage, verdict, "★" if r["pareto"] else "",
        )  # fmt: skip
    console.print(table)
    for k, (message, where) in enumerate(errors.items(), 1):
        console.print(f"({k}) {', '.join(where)}: {message}", highlight=False, markup=False)


def _budget_text(ram: int | None, ms: float | None) -> str:
    parts = []
    if ram is not None:
        parts.append(f"RAM ≤ {ram / 1024:g} KiB")
    if ms is not None:
        parts.append(f"latency ≤ {ms:g} ms")
    return ", ".join(parts)

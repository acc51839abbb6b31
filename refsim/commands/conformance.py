"""``refsim conformance``: check or produce conformance vectors (docs/conformance.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from refsim.cli import app, console


@app.command()
def conformance(
    vectors: Annotated[
        Path | None, typer.Option("--vectors", help="Check the golden model against this vector directory.")
    ] = None,
    export_vectors: Annotated[
        Path | None, typer.Option("--export-vectors", help="Write golden-model cases to this directory.")
    ] = None,
    kernel: Annotated[
        list[str] | None,
        typer.Option("--kernel", help="CMSIS-NN function or family to export (repeatable; default all)."),
    ] = None,
    cases: Annotated[int, typer.Option("--cases", min=1, help="Cases per function to export.")] = 10,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the case generator.")] = 0,
    list_functions: Annotated[
        bool, typer.Option("--list", help="List the known functions and exit.")
    ] = False,
) -> None:
    """Check or produce CMSIS-NN conformance vectors (format: docs/conformance.md)."""
    from refsim.conformance import registry
    from refsim.conformance import vectors as vec

    if list_functions:
        table = Table("function", "family", "arrays", "params")
        for name, fn in registry.functions().items():
            table.add_row(name, fn.family, ", ".join(fn.arrays), str(len(fn.params)))
        console.print(table)
        return
    if (vectors is None) == (export_vectors is None):
        raise typer.BadParameter("give exactly one of --vectors DIR or --export-vectors DIR")
    if export_vectors is not None:
        total = 0
        for function in vec.resolve_functions(kernel):
            for case in vec.generate_cases(function, cases, seed):
                vec.write_case(export_vectors, case)
                total += 1
        console.print(f"wrote {total} cases to {export_vectors}")
        return
    assert vectors is not None
    summary = vec.Summary()
    for case in vec.iter_directory(vectors):
        result = vec.check_case(case)
        summary.results.append(result)
        if not result.passed:
            console.print(f"FAIL {case.label}: {result.message}", markup=False, highlight=False)
    print(summary.closing_line())
    if summary.failed:
        raise typer.Exit(1)

"""The ``refsim`` command line.

Subcommands live here except those contributed by other packages through the
``refsim.commands`` entry-point group (``compiler`` contributes ``compile`` that way, so
the runtime never imports torch). A :data:`~refsim.errors.USER_ERRORS` exception becomes
one line on stderr and exit status 2; a conformance mismatch is exit status 1.
"""

from __future__ import annotations

import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from refsim.errors import USER_ERRORS

app = typer.Typer(
    name="refsim",
    help="Golden model for int8 inference on Arm Cortex-M and Ethos-U.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()


@app.callback()
def _root() -> None:
    """Golden model for int8 inference on Arm Cortex-M and Ethos-U."""


err_console = Console(stderr=True)


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


def _load_plugins() -> None:
    """Let installed packages add subcommands: ``register(app)`` per ``refsim.commands`` entry."""
    for ep in entry_points(group="refsim.commands"):
        try:
            ep.load()(app)
        except ImportError as exc:  # e.g. torch missing for `compile`: keep the runtime usable
            err_console.print(f"[yellow]refsim: plugin {ep.name!r} unavailable: {exc}[/]")


def main(argv: list[str] | None = None) -> int:
    _load_plugins()
    try:
        # standalone mode: click reports usage errors itself (status 2) and ends every run
        # with SystemExit; turn that into a return value so main() is callable in-process.
        app(args=argv, prog_name="refsim")
    except USER_ERRORS as exc:
        err_console.print(f"refsim: error: {exc}", markup=False, highlight=False, soft_wrap=True)
        return 2
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

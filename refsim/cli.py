"""The ``refsim`` command line.

Subcommands live in refsim.commands (one module each), plus those contributed by other packages through the
``refsim.commands`` entry-point group (``compiler`` contributes ``compile`` that way, so
the runtime never imports torch). A :data:`~refsim.errors.USER_ERRORS` exception becomes
one line on stderr and exit status 2; a conformance mismatch is exit status 1.
"""

from __future__ import annotations

import sys
from importlib.metadata import entry_points

import typer
from rich.console import Console

from refsim.errors import USER_ERRORS

app = typer.Typer(
    name="refsim",
    help="Golden model for int8 inference on Arm Cortex-M and Ethos-U.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# Piped output (CI logs, files) gets a wide console so tables of op names stay readable.
console = Console() if sys.stdout.isatty() else Console(width=160)


@app.callback()
def _root() -> None:
    """Golden model for int8 inference on Arm Cortex-M and Ethos-U."""


err_console = Console(stderr=True)


#: Built-in subcommands: command name -> its module under refsim.commands (which registers it on import).
BUILTINS = {name: name for name in ("calibrate", "compare", "conformance", "eval", "inspect", "run", "sweep")}


def _load_commands(only: str | None = None) -> None:
    """Built-in subcommands, one module each under refsim.commands: all of them, or ``only`` one (a
    ``refsim run`` need not import what ``refsim calibrate`` needs; start-up time is paid per process)."""
    from importlib import import_module

    for name in [only] if only in BUILTINS else BUILTINS:
        import_module(f"refsim.commands.{BUILTINS[name]}")


def _load_plugins() -> None:
    """Let installed packages add subcommands: ``register(app)`` per ``refsim.commands`` entry."""
    for ep in entry_points(group="refsim.commands"):
        try:
            ep.load()(app)
        except ImportError as exc:  # e.g. torch missing for `compile`: keep the runtime usable
            err_console.print(f"[yellow]refsim: plugin {ep.name!r} unavailable: {exc}[/]")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    command = args[0] if args else None
    if command in BUILTINS:  # one built-in command: import it alone, and no plugin
        _load_commands(command)
    else:
        _load_commands()
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
    # Run through the importable module so subcommands register on the same `app`.
    from refsim.cli import main as _main

    sys.exit(_main())

"""The ``refsim`` command line.

Subcommands live in refsim.commands (one module each), plus those contributed by other packages through the
``refsim.commands`` entry-point group (``compiler`` contributes ``compile`` that way, so
the runtime never imports torch). A :data:`~refsim.errors.USER_ERRORS` exception becomes
one line on stderr and exit status 2; a conformance mismatch is exit status 1.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from refsim.errors import USER_ERRORS

#: The typer app, built (and typer imported, ~40 ms) on first use: a plain `refsim run` needs neither.
_app: Any = None
#: Commands registered with `command` before the app was built.
_deferred: list[tuple[Callable[..., Any], dict[str, Any]]] = []


def _root() -> None:
    """Golden model for int8 inference on Arm Cortex-M and Ethos-U."""


def _get_app() -> Any:
    global _app
    if _app is None:
        import typer

        app = typer.Typer(
            name="refsim",
            help="Golden model for int8 inference on Arm Cortex-M and Ethos-U.",
            no_args_is_help=True,
            add_completion=False,
            pretty_exceptions_enable=False,
        )
        app.callback()(_root)
        _app = app
        for fn, kwargs in _deferred:
            _register(fn, kwargs)
        _deferred.clear()
    return _app


def _register(fn: Callable[..., Any], kwargs: dict[str, Any]) -> None:
    import typer

    # the command's annotations name `typer`: strings until typer evaluates them (see `command`)
    fn.__globals__.setdefault("typer", typer)
    _app.command(**kwargs)(fn)


def command(**kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``@app.command(**kwargs)``, deferred until the app is built. A module that registers this way
    declares its options with ``typer.Option`` in string annotations (``from __future__ import
    annotations``) and imports typer only under TYPE_CHECKING, so that importing it costs no typer."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        if _app is not None:
            _register(fn, kwargs)
        else:
            _deferred.append((fn, kwargs))
        return fn

    return wrap


def _console(name: str) -> Any:
    """``console`` (stdout) or ``err_console``: rich consoles, made on first use (importing rich
    costs ~40 ms, which ``refsim run -q`` does not need)."""
    value = globals().get(name)
    if value is None:
        from rich.console import Console

        if name == "err_console":
            value = Console(stderr=True)
        else:  # piped output (CI logs, files) gets a wide console so tables of op names stay readable
            value = Console() if sys.stdout.isatty() else Console(width=160)
        globals()[name] = value
    return value


def __getattr__(name: str) -> Any:
    if name == "app":
        return _get_app()
    if name in ("console", "err_console"):
        return _console(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    from importlib.metadata import entry_points

    for ep in entry_points(group="refsim.commands"):
        try:
            ep.load()(_get_app())
        except ImportError as exc:  # e.g. torch missing for `compile`: keep the runtime usable
            _console("err_console").print(f"[yellow]refsim: plugin {ep.name!r} unavailable: {exc}[/]")


#: Built-in commands whose plain command lines skip typer's parsing (refsim.commands._argv): the
#: function to call, filled when the command's module registers it.
DIRECT: dict[str, Any] = {}


def _direct(command: str, argv: list[str]) -> dict[str, Any] | None:
    from refsim.commands._argv import direct_kwargs

    return direct_kwargs(DIRECT[command], argv)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    command = args[0] if args else None
    if command in BUILTINS:  # one built-in command: import it alone, and no plugin
        _load_commands(command)
    else:
        _load_commands()
        _load_plugins()
    try:
        kwargs = _direct(command, args[1:]) if command in DIRECT else None
        if kwargs is not None:
            DIRECT[command](**kwargs)
        else:
            # standalone mode: click reports usage errors itself (status 2) and ends every run
            # with SystemExit; turn that into a return value so main() is callable in-process.
            _get_app()(args=argv, prog_name="refsim")
    except USER_ERRORS as exc:
        _console("err_console").print(f"refsim: error: {exc}", markup=False, highlight=False, soft_wrap=True)
        return 2
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


if __name__ == "__main__":
    # Run through the importable module so subcommands register on the same `app`.
    from refsim.cli import main as _main

    sys.exit(_main())

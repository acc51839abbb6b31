"""Call a typer command function straight from argv, without typer's per-parameter coercion.

typer (0.2x) coerces every parameter of the invoked command through a pydantic ``TypeAdapter`` it
builds on first use: importing pydantic and building 17 adapters is ~130 ms of ``refsim run``'s
start-up, for parameters that are paths, ints, floats, strings and flags; importing typer itself
~40 ms more. `direct_kwargs` reads the command's own typer declarations (the
``Annotated[..., typer.Option("--seed", ...)]`` of its signature: one source of truth), evaluated
against a stub that records what ``typer.Option`` was given (so typer is not imported), and parses
argv for exactly those simple cases; anything else — an option it does not know, ``--help``, a
repeated option, a value that does not convert, a missing argument, a declaration with anything but
help text (a callback, an environment variable, bounds, a parser) — returns None and typer parses
the command line as always (so every usage error is still typer's).
tests/runtime/test_cli_direct.py holds the two parses equal.
"""

from __future__ import annotations

import inspect
import re
import typing
from pathlib import Path
from types import NoneType, UnionType
from typing import Any


def _strict(kind: type, pattern: str) -> Any:
    """``kind(text)`` for text in the plain form (no spaces, underscores, ``inf``: typer's own rules
    decide those), else ValueError."""
    form = re.compile(pattern)

    def convert(text: str) -> Any:
        if not form.fullmatch(text):
            raise ValueError(text)
        return kind(text)

    return convert


#: Value types parsed here (else typer parses): the callable converts one argv string.
_CONVERT: dict[Any, Any] = {
    Path: Path,
    str: str,
    int: _strict(int, r"[+-]?[0-9]+"),
    float: _strict(float, r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?"),
}
#: Keyword arguments of ``typer.Option``/``typer.Argument`` that change only the help: any other
#: (a callback, an environment variable, bounds, a parser, a prompt...) leaves the command to typer.
_HELP_ONLY = frozenset({"help", "metavar", "show_default", "hidden", "rich_help_panel"})


class _Declared:
    """What ``typer.Option(...)`` / ``typer.Argument(...)`` was given, recorded without importing
    typer (the annotations are evaluated against `_STUB_TYPER`)."""

    def __init__(self, kind: str, args: tuple, kwargs: dict) -> None:
        self.kind, self.args, self.kwargs = kind, args, kwargs


class _StubTyper:
    @staticmethod
    def Option(*args: Any, **kwargs: Any) -> _Declared:
        return _Declared("option", args, kwargs)

    @staticmethod
    def Argument(*args: Any, **kwargs: Any) -> _Declared:
        return _Declared("argument", args, kwargs)


_specs: dict[Any, Any] = {}


def _spec(fn: Any) -> tuple[list, dict] | None:
    """(positional params, {option string: param}) of ``fn``; None when it is not plain."""
    if fn in _specs:
        return _specs[fn]
    positional: list = []
    options: dict = {}
    result: tuple[list, dict] | None = (positional, options)
    try:
        hints = typing.get_type_hints(fn, localns={"typer": _StubTyper}, include_extras=True)
    except Exception:  # an annotation this stub cannot evaluate: typer's business
        hints = {}
        result = None
    for name, param in inspect.signature(fn).parameters.items():
        if result is None:
            break
        hint = hints.get(name)
        if typing.get_origin(hint) is not typing.Annotated:
            result = None
            break
        base, *meta = typing.get_args(hint)
        info = next((m for m in meta if isinstance(m, _Declared)), None)
        if info is None or set(info.kwargs) - _HELP_ONLY:
            result = None
            break
        optional = False
        if typing.get_origin(base) in (typing.Union, UnionType):
            members = [a for a in typing.get_args(base) if a is not NoneType]
            optional = len(members) == 1 and len(typing.get_args(base)) == 2
            base = members[0] if optional else None
        required = param.default is inspect.Parameter.empty
        entry = (name, base, required, param.default)
        if info.kind == "argument":
            if base not in _CONVERT or optional or info.args:  # typer refuses a default in Annotated
                result = None
                break
            positional.append(entry)
        else:
            if base is bool and not optional and param.default is False:
                entry = (name, bool, False, False)
            elif base not in _CONVERT:
                result = None
                break
            # in Annotated, Option's positionals are all option names (typer.utils: its `default`
            # is taken as the first); with none typer derives `--name` (`--x/--no-x` for a bool)
            decls = list(info.args)
            if not decls or any(not isinstance(d, str) or not d.startswith("-") or "/" in d for d in decls):
                result = None
                break
            for decl in decls:
                options[decl] = entry
    _specs[fn] = result
    return result


def direct_kwargs(fn: Any, argv: list[str]) -> dict[str, Any] | None:
    """The keyword arguments typer would call ``fn`` with for ``argv`` (the command's own arguments,
    without its name), or None where this parser leaves the command line to typer."""
    spec = _spec(fn)
    if spec is None:
        return None
    positional, options = spec
    kwargs: dict[str, Any] = {}
    free: list[str] = []
    k = 0
    while k < len(argv):
        token = argv[k]
        k += 1
        if token.startswith("-") and token != "-":
            flag, eq, inline = token.partition("=")
            entry = options.get(flag)
            if entry is None:
                return None  # --help, --, an unknown option, combined short flags: typer's
            name, kind = entry[0], entry[1]
            if name in kwargs:
                return None
            if kind is bool:
                if eq:
                    return None
                kwargs[name] = True
                continue
            if not eq:
                if k >= len(argv):
                    return None
                inline = argv[k]
                k += 1
            try:
                kwargs[name] = _CONVERT[kind](inline)
            except ValueError:
                return None
        else:
            free.append(token)
    if len(free) != len(positional):
        return None
    for (name, kind, _, _), token in zip(positional, free, strict=True):
        try:
            kwargs[name] = _CONVERT[kind](token)
        except ValueError:
            return None
    for name, _, required, default in [*positional, *options.values()]:
        if name not in kwargs:
            if required:
                return None
            kwargs[name] = default
    return kwargs

"""Call a typer command function straight from argv, without typer's per-parameter coercion.

typer (0.2x) coerces every parameter of the invoked command through a pydantic ``TypeAdapter`` it
builds on first use: importing pydantic and building 17 adapters is ~130 ms of ``refsim run``'s
start-up, for parameters that are paths, ints, floats, strings and flags. `direct_kwargs` reads the
command's own typer declarations (the ``Annotated[..., typer.Option("--seed", ...)]`` of its
signature: one source of truth) and parses argv for exactly those simple cases; anything else — an
option it does not know, ``--help``, a repeated option, a value that does not convert, a missing
argument, a declaration with a callback, an environment variable, bounds, a parser — returns None
and typer parses the command line as always (so every usage error is still typer's).
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
#: Declaration attributes that change parsing or validation beyond the above: when any differs
#: from its default the command is left to typer.
_PLAIN = {
    "callback": None, "envvar": None, "parser": None, "min": None, "max": None, "exists": False,
    "prompt": False, "count": False, "is_eager": False, "resolve_path": False, "default_factory": None,
    "file_okay": True, "dir_okay": True, "writable": False, "allow_dash": False, "is_flag": None,
    "flag_value": None, "expose_value": True, "formats": None, "mode": None, "clamp": False,
}  # fmt: skip

_specs: dict[Any, Any] = {}


def _spec(fn: Any) -> tuple[list, dict] | None:
    """(positional params, {option string: param}) of ``fn``; None when it is not plain."""
    if fn in _specs:
        return _specs[fn]
    from typer.models import ArgumentInfo, OptionInfo

    positional: list = []
    options: dict = {}
    result: tuple[list, dict] | None = (positional, options)
    hints = typing.get_type_hints(fn, include_extras=True)
    for name, param in inspect.signature(fn).parameters.items():
        hint = hints.get(name)
        if typing.get_origin(hint) is not typing.Annotated:
            result = None
            break
        base, *meta = typing.get_args(hint)
        info = next((m for m in meta if isinstance(m, ArgumentInfo | OptionInfo)), None)
        if info is None or any(getattr(info, k, v) != v for k, v in _PLAIN.items()):
            result = None
            break
        optional = False
        if typing.get_origin(base) in (typing.Union, UnionType):
            members = [a for a in typing.get_args(base) if a is not NoneType]
            optional = len(members) == 1 and len(typing.get_args(base)) == 2
            base = members[0] if optional else None
        required = param.default is inspect.Parameter.empty
        entry = (name, base, required, param.default)
        if isinstance(info, ArgumentInfo):
            if base not in _CONVERT or optional:
                result = None
                break
            positional.append(entry)
        else:
            if base is bool and not optional and param.default is False:
                entry = (name, bool, False, False)
            elif base not in _CONVERT:
                result = None
                break
            # in Annotated, Option's first positional (its `default`) is the first option name (typer.utils)
            decls = [info.default] if isinstance(info.default, str) else []
            decls += list(info.param_decls or ())
            if not decls or any(not d.startswith("-") or "/" in d for d in decls):
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

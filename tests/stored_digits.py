"""Comparing a refit with the rounded numbers a shipped data file stores (issue 14).

A least-squares fit (``numpy.linalg.lstsq``: LAPACK over the machine's BLAS) returns the same
coefficients on every machine only to ~1e-12 relative, not to the last bit: OpenBLAS picks its
kernels by CPU (SkylakeX, Haswell, Zen, ...) and each blocks its dot products differently. A data
file that stores such coefficients rounded (``round(v, 3)`` ...) therefore holds, for a value
whose unrounded fit lies within that noise of a rounding boundary, the digit of the machine that
wrote it; another machine rounds to the neighbouring digit and ``==`` fails there. One unit in
the stored digit is that flip; anything larger (a changed formula, a changed measurement) is a
real difference and still fails.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: Slack over one unit: the difference of two rounded decimals is itself a float.
_SLACK = 1 + 1e-9


def assert_equal_to_stored_digits(
    got: Any, stored: Any, unit: Callable[[tuple], float], path: tuple = ()
) -> None:
    """``got`` equals ``stored`` in structure, keys, strings, booleans and integers exactly, and in
    every float to within ``unit(path)``: the rounding unit of that field's stored digit."""
    if isinstance(stored, dict):
        assert isinstance(got, dict) and got.keys() == stored.keys(), (path, got, stored)
        for key in stored:
            assert_equal_to_stored_digits(got[key], stored[key], unit, (*path, key))
    elif isinstance(stored, list):
        assert isinstance(got, list) and len(got) == len(stored), (path, got, stored)
        for k, (g, s) in enumerate(zip(got, stored, strict=True)):
            assert_equal_to_stored_digits(g, s, unit, (*path, k))
    elif isinstance(stored, float) or isinstance(got, float):
        assert isinstance(got, (int, float)) and not isinstance(got, bool), (path, got, stored)
        assert abs(got - stored) <= unit(path) * _SLACK, (path, got, stored, unit(path))
    else:  # int (a count, a measured window), bool, str, None: exact
        assert type(got) is type(stored) and got == stored, (path, got, stored)


def dispatch_fit_unit(path: tuple) -> float:
    """Rounding units of the dispatch measurement's ``fit`` (``dispatch_measure.fit``: lstsq over
    every measured call): coefficients to 3 decimals, ``execute`` and ``execute_range`` (means and
    extremes of windows minus the unrounded model) to 1, ``max_call_error`` to 4."""
    if "execute_range" in path or path[-1] == "execute":
        return 0.1
    if "max_call_error" in path:
        return 1e-4
    return 1e-3

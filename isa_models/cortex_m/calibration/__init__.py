"""Calibration files: measured calls and the coefficients fitted to them, per library and core.

``isa_models/cortex_m/calibration/<library>/<core>.json`` (written by ``refsim calibrate``)::

    {"library", "core", "tier", "provenance": {library, library_commit, gcc, qemu, llvm_mca, flags,
     command, date, cycles_source},
     "functions": {"<cmsis function>[/<variant>]": {
         "features": [...], "coefficients": {"instructions": {...}, "cycles": {...}},
         "fit": [records], "held_out": [records],
         "error": {"instructions": {"max_abs", "mean_abs"}, "cycles": {...}}}}}

with records ``{"shape": {params}, "features": {...}, "instructions": int, "cycles": int}``.
The coefficients are fitted on ``fit`` only (:mod:`isa_models.fit`); ``error`` is measured on
``held_out``, shapes the fit never saw. Nothing here runs QEMU: refsim's ``calibrate`` command
measures and hands the records to :func:`build_document`, which with :class:`Measurement` and
:func:`fit_function` lives in :mod:`isa_models.cortex_m.calibration.build` (an estimate only reads files;
the names are importable from here too).
"""

# No ``from __future__ import annotations`` here: typing.NamedTuple compiles every string
# annotation into a ForwardRef at import (~10 µs a field), which the estimate's cold start pays.
import functools
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from isa_models.errors import IsaModelError

CALIBRATION_DIR = Path(__file__).resolve().parent
FORMAT = "refsim-calibration"
VERSION = 1

#: Libraries in the order an estimate without ``--library`` tries them: the real CMSIS-NN
#: (what a device links) first, refsim's kernels_c when no CMSIS-NN file is shipped for a core.
LIBRARY_PREFERENCE = ("cmsis-nn", "kernels_c")
DEFAULT_LIBRARY = LIBRARY_PREFERENCE[0]

QUANTITIES = ("instructions", "cycles")


class CalibrationError(IsaModelError):
    """A calibration file is missing or malformed."""


class FunctionFit(NamedTuple):
    """One function's fitted coefficients on one core."""

    key: str
    features: tuple[str, ...]
    coefficients: Mapping[str, Mapping[str, float]]
    error: Mapping[str, Mapping[str, float]]

    def evaluate(self, quantity: str, features: Mapping[str, float]) -> float:
        """``Σ_f coefficient_f · feature_f`` (:func:`isa_models.fit.predict`, written out here so
        that an estimate does not import the fitting code)."""
        coefficients = self.coefficients[quantity]
        return float(sum(coefficients.get(k, 0.0) * v for k, v in features.items()))


class Calibration(NamedTuple):
    """One calibration file: library, core, tier, provenance and the fitted functions."""

    library: str
    core: str
    tier: str
    provenance: Mapping[str, Any]
    functions: Mapping[str, FunctionFit]
    path: Path | None = None


def path_for(library: str, core: str, root: Path | None = None) -> Path:
    return (root or CALIBRATION_DIR) / library / f"{core}.json"


def available(root: Path | None = None) -> dict[str, tuple[str, ...]]:
    """Library → cores with a calibration file."""
    base = root or CALIBRATION_DIR
    return {
        d.name: tuple(sorted(p.stem for p in d.glob("*.json")))
        for d in sorted(base.iterdir())
        if d.is_dir() and any(d.glob("*.json"))
    }


def parse(document: Mapping[str, Any], path: Path | None = None) -> Calibration:
    where = path or "calibration"
    try:
        if document.get("format") != FORMAT:
            raise CalibrationError(f"{where}: format must be {FORMAT!r}, got {document.get('format')!r}")
        functions = {}
        for key, entry in document["functions"].items():
            coefficients = {q: {k: float(v) for k, v in entry["coefficients"][q].items()} for q in QUANTITIES}
            functions[key] = FunctionFit(key, tuple(entry["features"]), coefficients, entry.get("error", {}))
        return Calibration(
            library=str(document["library"]),
            core=str(document["core"]),
            tier=str(document["tier"]),
            provenance=dict(document["provenance"]),
            functions=functions,
            path=path,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CalibrationError(f"{where}: malformed calibration file ({exc!r})") from None


#: A record list as :func:`write` lays one out (``json.dumps(indent=1)``): the key at indent 3 —
#: a function entry's ``fit`` or ``held_out`` — then its items one per line, deeper. JSON strings
#: hold no raw newline, so the first ``"\n   ]"`` after the opening is that list's own end.
_RECORD_LIST = re.compile(r'\n   "(?:fit|held_out)": \[\n')


def _without_records(text: str) -> str:
    """``text`` with every record list of :data:`_RECORD_LIST`'s layout emptied. The records are
    ~95% of a file and an estimate reads none of them (:func:`parse` keeps the coefficients), so
    loading decodes a few tens of kB instead of ~460; a file in any other layout is unchanged."""
    pieces, pos = [], 0
    while (match := _RECORD_LIST.search(text, pos)) is not None:
        end = text.find("\n   ]", match.end())
        if end < 0:
            return text
        pieces.append(text[pos : match.end() - 1])
        pos = end
    pieces.append(text[pos:])
    return "".join(pieces)


@functools.cache
def _load_path(path: Path) -> Calibration:
    try:
        text = path.read_text()
    except OSError as exc:
        raise CalibrationError(f"{path}: cannot read calibration ({exc})") from None
    try:
        return parse(json.loads(_without_records(text)), path)
    except (json.JSONDecodeError, CalibrationError):
        pass  # not write()'s layout after all: decode the file whole, which names the error
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CalibrationError(f"{path}: cannot read calibration ({exc})") from None
    return parse(document, path)


def load(core: str, library: str | None = None, *, root: Path | None = None) -> Calibration:
    """The calibration of ``library`` (default: the first of :data:`LIBRARY_PREFERENCE` shipped
    for ``core``) on ``core``."""
    candidates = (library,) if library else LIBRARY_PREFERENCE
    for name in candidates:
        path = path_for(name, core, root)
        if path.exists():
            return _load_path(path)
    shipped = ", ".join(f"{lib}: {', '.join(cores)}" for lib, cores in available(root).items()) or "none"
    raise CalibrationError(
        f"no calibration for core {core!r} from library {library or ' or '.join(LIBRARY_PREFERENCE)} "
        f"(shipped: {shipped}); make one with `refsim calibrate --cpu {core}`"
    )


class CalibrationSet:
    """The calibrations one estimate prices its calls with, each loaded once: ``chosen`` (what
    :func:`load` gives for ``core`` and ``library``) and, when a call has no fit there, the next
    libraries of :data:`LIBRARY_PREFERENCE` (:meth:`fallback`, loaded on first need). An estimate
    makes one and hands it to every call (``estimate_call(..., calibrations=...)``). A plain
    class, not a dataclass: it is built once per estimate and a dataclass costs ~1 ms at import."""

    def __init__(self, core: str, library: str | None = None, *, root: Path | None = None) -> None:
        self.core = core
        self.root = root
        self.chosen = load(core, library, root=root)
        self._fallbacks: dict[str, Calibration | None] = {}

    def __repr__(self) -> str:
        return f"CalibrationSet({self.core!r}, {self.chosen.library!r})"

    def fallback(self, library: str) -> Calibration | None:
        """``library``'s calibration for the same core, or None when none is shipped."""
        if library not in self._fallbacks:
            try:
                self._fallbacks[library] = load(self.core, library, root=self.root)
            except CalibrationError:
                self._fallbacks[library] = None
        return self._fallbacks[library]


_BUILD = ("Measurement", "build_document", "fit_function")


def __getattr__(name: str):
    """:data:`_BUILD` names from :mod:`isa_models.cortex_m.calibration.build`, imported on first use
    (PEP 562)."""
    if name in _BUILD:
        from isa_models.cortex_m.calibration import build

        return getattr(build, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def write(document: Mapping[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1, sort_keys=False) + "\n")
    _load_path.cache_clear()


__all__ = [
    "CALIBRATION_DIR",
    "DEFAULT_LIBRARY",
    "LIBRARY_PREFERENCE",
    "Calibration",
    "CalibrationError",
    "CalibrationSet",
    "FunctionFit",
    "available",
    "load",
    "parse",
    "path_for",
    "write",
]

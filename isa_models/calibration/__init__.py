"""Calibration files: measured calls and the coefficients fitted to them, per library and core.

``isa_models/calibration/<library>/<core>.json`` (written by ``refsim calibrate``)::

    {"library", "core", "tier", "provenance": {library, library_commit, gcc, qemu, llvm_mca, flags,
     command, date, cycles_source},
     "functions": {"<cmsis function>[/<variant>]": {
         "features": [...], "coefficients": {"instructions": {...}, "cycles": {...}},
         "fit": [records], "held_out": [records],
         "error": {"instructions": {"max_abs", "mean_abs"}, "cycles": {...}}}}}

with records ``{"shape": {params}, "features": {...}, "instructions": int, "cycles": int}``.
The coefficients are fitted on ``fit`` only (:mod:`isa_models.fit`); ``error`` is measured on
``held_out``, shapes the fit never saw. Nothing here runs QEMU: refsim's ``calibrate`` command
measures and hands the records to :func:`build_document`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from isa_models.errors import IsaModelError
from isa_models.fit import fit_coefficients, predict, relative_errors

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


@dataclass(frozen=True)
class FunctionFit:
    """One function's fitted coefficients on one core."""

    key: str
    features: tuple[str, ...]
    coefficients: Mapping[str, Mapping[str, float]]
    error: Mapping[str, Mapping[str, float]]

    def evaluate(self, quantity: str, features: Mapping[str, float]) -> float:
        return predict(self.coefficients[quantity], features)


@dataclass(frozen=True)
class Calibration:
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


@functools.cache
def _load_path(path: Path) -> Calibration:
    try:
        document = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
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


# --- building a file from measurements --------------------------------------------------------------


@dataclass(frozen=True)
class Measurement:
    """One measured call: its formula key, shape params, features and measured counts."""

    key: str
    shape: Mapping[str, Any]
    features: Mapping[str, float]
    instructions: int
    cycles: int
    held_out: bool

    def record(self) -> dict[str, Any]:
        return {
            "shape": dict(self.shape),
            "features": {k: v for k, v in self.features.items()},
            "instructions": int(self.instructions),
            "cycles": int(self.cycles),
        }


def _error_summary(errors: Sequence[float]) -> dict[str, float]:
    if not errors:
        return {"max_abs": 0.0, "mean_abs": 0.0, "count": 0}
    absolute = [abs(e) for e in errors]
    return {
        "max_abs": round(max(absolute), 5),
        "mean_abs": round(sum(absolute) / len(absolute), 5),
        "count": len(absolute),
    }


def fit_function(key: str, measurements: Sequence[Measurement]) -> dict[str, Any]:
    """The ``functions[key]`` entry: coefficients fitted on the non-held-out measurements."""
    train = [m for m in measurements if not m.held_out]
    held = [m for m in measurements if m.held_out]
    if not train:
        raise CalibrationError(f"{key}: every measurement is held out; nothing to fit")
    names = sorted({n for m in measurements for n in m.features})
    coefficients: dict[str, dict[str, float]] = {}
    error: dict[str, dict[str, float]] = {}
    for q in QUANTITIES:
        rows, ys = [m.features for m in train], [float(getattr(m, q)) for m in train]
        coefficients[q] = {k: round(v, 6) for k, v in fit_coefficients(names, rows, ys).items()}
        error[q] = _error_summary(
            relative_errors(coefficients[q], [m.features for m in held], [float(getattr(m, q)) for m in held])
        )
        error[q]["fit_max_abs"] = _error_summary(relative_errors(coefficients[q], rows, ys))["max_abs"]
    return {
        "features": names,
        "coefficients": coefficients,
        "fit": [m.record() for m in train],
        "held_out": [m.record() for m in held],
        "error": error,
    }


def build_document(
    library: str, core: str, tier: str, provenance: Mapping[str, Any], measurements: Sequence[Measurement]
) -> dict[str, Any]:
    by_key: dict[str, list[Measurement]] = {}
    for m in measurements:
        by_key.setdefault(m.key, []).append(m)
    return {
        "format": FORMAT,
        "version": VERSION,
        "library": library,
        "core": core,
        "tier": tier,
        "provenance": dict(provenance),
        "functions": {key: fit_function(key, ms) for key, ms in sorted(by_key.items())},
    }


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
    "FunctionFit",
    "Measurement",
    "available",
    "build_document",
    "fit_function",
    "load",
    "parse",
    "path_for",
    "write",
]

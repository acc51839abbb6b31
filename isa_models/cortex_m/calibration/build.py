"""Building a calibration file from measured calls: the coefficients fitted on the ``fit``
records, the errors on the ``held_out`` ones (file layout: :mod:`isa_models.cortex_m.calibration`).
``refsim calibrate`` measures and hands the records to :func:`build_document`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from isa_models.cortex_m.calibration import FORMAT, QUANTITIES, VERSION, CalibrationError
from isa_models.fit import fit_coefficients, relative_errors


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


__all__ = ["Measurement", "build_document", "fit_function"]

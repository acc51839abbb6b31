"""What "a refit gives the shipped calibration file back" means, machine-independently.

A calibration file stores exact integer measurements and coefficients fitted to them by
non-negative least squares (:mod:`isa_models.fit`), rounded to 6 decimals. The measurement, the
routing, the features (pure-Python arithmetic on integer shapes) and the held-out choice are
the same bits on every machine; the fit is not: LAPACK's least squares runs different kernels
(and summation orders) on another CPU, BLAS build or thread count, so the unrounded coefficients
differ by a few ulps times the problem's conditioning, and the 6-decimal rounding can then flip
the last stored digit (seen: an AMD EPYC with OpenBLAS's Haswell kernels vs the Xeon that wrote
the files). So :func:`differences` compares

- exactly: the function keys (routing), each function's feature names, and every fit and
  held-out record (shape, features, measured instructions and cycles: which shapes were held
  out);
- each coefficient within ``1e-6`` (one unit of the stored digit: two roundings of values that
  differ by ``δ`` differ by at most ``δ`` plus one unit) plus the forward-error bound of the
  least-squares solve that produced it (:func:`coefficient_tolerance`);
- each estimate on every shipped shape (fit and held out) within the same bounds carried
  through the formula (``Σ_f tol_f · |feature_f|``), and equal after the formula's own
  rounding — a report prints whole instructions and cycles — except where the shipped
  estimate lies within that bound of a rounding boundary;
- the recorded errors (rounded to 5 decimals) within two units of that digit: one for the
  rounding, one for what the coefficient bounds move them (far below 1e-5 relative on every
  shipped shape).

A changed formula, feature, routing, held-out choice or measurement changes a record or moves a
coefficient far outside these bounds (tests/isa_models/test_calibration.py shows each).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

QUANTITIES = ("instructions", "cycles")

#: One unit of the stored digit: build.fit_function rounds coefficients to 6 decimals.
COEFFICIENT_UNIT = 1e-6
#: One unit of the stored error summaries (rounded to 5 decimals).
ERROR_UNIT = 1e-5
EPS = float(np.finfo(float).eps)


def _design(names: Sequence[str], records: Sequence[Mapping[str, Any]], quantity: str):
    """The scaled, weighted matrix and right-hand side that :func:`isa_models.fit.fit_coefficients`
    hands to NNLS, with the column scales."""
    a = np.array([[float(r["features"].get(n, 0.0)) for n in names] for r in records])
    y = np.array([float(r[quantity]) for r in records])
    weight = 1.0 / np.maximum(y, 1.0)
    scale = np.maximum(np.abs(a).max(axis=0), 1e-12)
    return a * weight[:, None] / scale, y * weight, scale


def coefficient_tolerance(
    names: Sequence[str],
    records: Sequence[Mapping[str, Any]],
    quantity: str,
    shipped: Mapping[str, float],
    refitted: Mapping[str, float],
) -> dict[str, float]:
    """Per coefficient, how far two correctly rounded solves of the same fit may lie apart.

    NNLS ends with a least-squares solve on its passive columns ``P`` (those with a positive
    coefficient, in either file). LAPACK's solver is backward stable, so its forward error obeys
    (Golub & Van Loan, Matrix Computations, 4th ed., Theorem 5.3.1)

        ||δz|| / ||z|| <= c · ε · (κ + κ² · tan θ),     sin θ = ||r|| / ||b||

    where ``κ`` is the condition number of the scaled matrix restricted to ``P``, as ``lstsq``
    (``rcond=None``) sees it: singular values below ``ε · max(m, n) · σ_max`` are cut, so exactly
    collinear columns split their coefficient by the minimum-norm rule on every machine. ``c`` is
    ``10 · max(m, n)``: a few flops per element in the QR/SVD and NNLS's own update of the passive
    solution. The shipped fits have ``κ`` up to ~1e5 with residuals ``tan θ`` below 1e-2, so the bound is
    ~1e-8 of ``||z||``: a coefficient may move in its last stored digit, not more.
    """
    a, b, scale = _design(names, records, quantity)
    z = np.array([shipped.get(n, 0.0) for n in names]) * scale
    passive = np.array([shipped.get(n, 0.0) > 0.0 or refitted.get(n, 0.0) > 0.0 for n in names])
    bound = 0.0
    if passive.any():
        s = np.linalg.svd(a[:, passive], compute_uv=False)
        kept = s[s > EPS * max(a.shape) * s[0]]
        kappa = float(s[0] / kept[-1]) if kept.size else 1.0
        sin = min(float(np.linalg.norm(b - a @ z) / max(np.linalg.norm(b), 1e-300)), 1.0 - 1e-12)
        tan = sin / np.sqrt(1.0 - sin * sin)
        relative = 10 * max(a.shape) * EPS * (kappa + kappa * kappa * tan)
        bound = relative * float(np.linalg.norm(z))
    return {n: COEFFICIENT_UNIT + bound / s_n for n, s_n in zip(names, scale, strict=True)}


def _estimate(coefficients: Mapping[str, float], features: Mapping[str, float]) -> float:
    return float(sum(coefficients.get(k, 0.0) * v for k, v in features.items()))


def differences(shipped: Mapping[str, Any], refitted: Mapping[str, Any]) -> list[str]:
    """Every way ``refitted`` (a refit of ``shipped``'s measurements) departs from ``shipped``
    beyond what another machine's floating point explains (module docstring); empty if none."""
    found: list[str] = []
    if list(refitted["functions"]) != list(shipped["functions"]):
        return [f"routing: functions {sorted(refitted['functions'])} != {sorted(shipped['functions'])}"]
    for key, old in shipped["functions"].items():
        new = refitted["functions"][key]
        records = [
            f"{key}: {part} differ" for part in ("features", "fit", "held_out") if new[part] != old[part]
        ]
        if records:  # coefficients of other features or shapes are not comparable
            found += records
            continue
        for q in QUANTITIES:
            was, now = old["coefficients"][q], new["coefficients"][q]
            if set(was) != set(now):
                found.append(f"{key} {q}: coefficient names {sorted(now)} != {sorted(was)}")
                continue
            tol = coefficient_tolerance(old["features"], old["fit"], q, was, now)
            for name in was:
                if abs(now[name] - was[name]) > tol[name]:
                    found.append(f"{key} {q}: {name} {now[name]} != {was[name]} (tolerance {tol[name]:.3g})")
            for record in old["fit"] + old["held_out"]:
                feats = record["features"]
                bound = sum(tol.get(k, COEFFICIENT_UNIT) * abs(v) for k, v in feats.items())
                before, after = _estimate(was, feats), _estimate(now, feats)
                if abs(after - before) > bound:
                    found.append(
                        f"{key} {q}: estimate {after} != {before} on {record['shape']} (bound {bound:.3g})"
                    )
                elif round(after) != round(before) and abs(abs(before - np.floor(before)) - 0.5) > bound:
                    found.append(
                        f"{key} {q}: rounded estimate {round(after)} != {round(before)} on {record['shape']}"
                    )
            for stat in ("max_abs", "mean_abs", "fit_max_abs"):
                if (
                    stat in old["error"][q]
                    and abs(new["error"][q][stat] - old["error"][q][stat]) > 2 * ERROR_UNIT
                ):
                    found.append(
                        f"{key} {q}: error {stat} {new['error'][q][stat]} != {old['error'][q][stat]}"
                    )
            if new["error"][q].get("count") != old["error"][q].get("count"):
                found.append(f"{key} {q}: error count differs")
    return found


__all__ = ["coefficient_tolerance", "differences"]

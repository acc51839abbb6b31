"""Fitting formula coefficients to measurements: non-negative least squares on relative error.

For one function on one core, the measured calls give rows ``(features_i, y_i)``; the fit finds
coefficients ``a >= 0`` minimising ``Σ_i ((features_i · a - y_i) / y_i)²`` — every shape counts
by its relative error, so small and large layers weigh the same, and non-negativity keeps each
coefficient a cost per loop trip (a negative one would be an artefact of collinear features).
Solved by Lawson–Hanson active-set NNLS (numpy only).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


def nnls(a: np.ndarray, b: np.ndarray, *, max_iterations: int | None = None) -> np.ndarray:
    """``argmin_x ||a x - b||₂`` subject to ``x >= 0`` (Lawson & Hanson, 1974, ch. 23)."""
    m, n = a.shape
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    w = a.T @ (b - a @ x)
    tol = 10 * np.finfo(float).eps * np.linalg.norm(a, 1) * max(m, n)
    for _ in range(max_iterations or 3 * n + 10):
        if passive.all() or w[~passive].max(initial=-np.inf) <= tol:
            break
        j = int(np.argmax(np.where(passive, -np.inf, w)))
        passive[j] = True
        while True:
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(a[:, passive], b, rcond=None)[0]
            if (z[passive] > 0).all():
                x = z
                break
            mask = passive & (z <= 0)
            alpha = np.min(x[mask] / (x[mask] - z[mask]))
            x = x + alpha * (z - x)
            passive &= x > tol
            x[~passive] = 0.0
        w = a.T @ (b - a @ x)
    return x


def fit_coefficients(
    names: Sequence[str], rows: Sequence[Mapping[str, float]], measured: Sequence[float]
) -> dict[str, float]:
    """Coefficients for ``names`` fitting ``measured`` (see the module docstring). Features that
    are zero in every row get coefficient 0."""
    if not rows:
        raise ValueError("fitting needs at least one measurement")
    a = np.array([[float(r.get(n, 0.0)) for n in names] for r in rows])
    y = np.asarray(measured, dtype=float)
    weight = 1.0 / np.maximum(y, 1.0)
    scale = np.maximum(np.abs(a).max(axis=0), 1e-12)  # column scaling: a well-conditioned NNLS
    x = nnls(a * weight[:, None] / scale, y * weight) / scale
    return {n: float(v) for n, v in zip(names, x, strict=True)}


def predict(coefficients: Mapping[str, float], features: Mapping[str, float]) -> float:
    return float(sum(coefficients.get(k, 0.0) * v for k, v in features.items()))


def relative_errors(
    coefficients: Mapping[str, float], rows: Sequence[Mapping[str, float]], measured: Sequence[float]
) -> list[float]:
    """``(predicted - measured) / measured`` per row."""
    return [(predict(coefficients, r) - y) / y if y else 0.0 for r, y in zip(rows, measured, strict=True)]


__all__ = ["fit_coefficients", "nnls", "predict", "relative_errors"]

"""Fitting formula coefficients to measurements: non-negative least squares on relative error.

For one function on one core, the measured calls give rows ``(features_i, y_i)``; the fit finds
coefficients ``a >= 0`` minimising ``Σ_i ((features_i · a - y_i) / y_i)²`` — every shape counts
by its relative error, so small and large layers weigh the same, and non-negativity keeps each
coefficient a cost per loop trip (a negative one would be an artefact of collinear features).
Solved by Lawson–Hanson active-set NNLS (numpy only), on a path made the same on every machine:
where features are collinear on the sweep (several minimisers), which one carries the cost is
decided by index, not by the last bits of another machine's BLAS (:func:`nnls`). The remaining
machine dependence is the final solve's forward error, far below the 6 decimals a calibration
file stores (tests/isa_models/refit_check.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

#: Two columns whose gradients ``w_j`` agree within this fraction of the first gradient's
#: scale (``max |aᵀb|``) are a tie: the lower index enters. Collinear features (``im2col_cols``
#: and ``tap_rows`` equal on every sweep shape, or one in the span of the passive ones and
#: another) have gradients equal in exact arithmetic; late in the path a gradient is ~1e-8 of
#: that scale, computed by cancellation, so rounding (~1e-16 of the scale, in a machine-dependent
#: direction) separates the two by a relative 1e-8, not by a few ulps of their own size.
TIE = 1e-9
#: A column whose part outside the passive columns' span is below this fraction of its norm is
#: dependent on them and never enters: the passive matrix stays of full rank, so every solve
#: has one solution (a rank-deficient solve would spread a coefficient over collinear columns
#: by whatever the SVD's cut-off keeps on that machine).
DEPENDENT = 1e-9


def _dependent(a: np.ndarray, passive: np.ndarray, j: int) -> bool:
    column = a[:, j]
    norm = float(np.linalg.norm(column))
    if norm == 0.0:
        return True
    if not passive.any():
        return False
    q, _ = np.linalg.qr(a[:, passive])
    return float(np.linalg.norm(column - q @ (q.T @ column))) <= DEPENDENT * norm


def nnls(a: np.ndarray, b: np.ndarray, *, max_iterations: int | None = None) -> np.ndarray:
    """``argmin_x ||a x - b||₂`` subject to ``x >= 0`` (Lawson & Hanson, 1974, ch. 23).

    Made reproducible across machines (CPU, BLAS kernels, thread counts change the last bits of
    every product): the entering column is the lowest index among the gradients within
    :data:`TIE` (of the gradients' scale) of the largest, a column dependent on the passive ones (:data:`DEPENDENT`) is
    never entered, and the stopping test uses a gradient threshold far above rounding. So the
    sequence of passive sets, and with it which of two collinear features carries the cost, is
    the same everywhere; the coefficients then differ only by the solve's forward error."""
    m, n = a.shape
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    excluded = np.zeros(n, dtype=bool)  # dependent on the passive columns when last tried
    w = a.T @ (b - a @ x)
    tol = 10 * np.finfo(float).eps * np.linalg.norm(a, 1) * max(m, n)
    scale = float(np.abs(w).max(initial=0.0))
    gradient_floor = max(tol, TIE * scale)
    entries = 0
    while entries < (max_iterations or 3 * n + 10):
        candidates = ~passive & ~excluded & (w > gradient_floor)
        if not candidates.any():
            break
        best = w[candidates].max()
        j = int(np.flatnonzero(candidates & (w >= best - TIE * scale))[0])
        if _dependent(a, passive, j):
            excluded[j] = True
            continue
        passive[j] = True
        entries += 1
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
        excluded[:] = False  # the passive set changed: dependence is re-tested on entry
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

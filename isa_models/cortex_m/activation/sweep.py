"""The designed calibration sweep of the activation family (:mod:`isa_models.cortex_m.activation`): tensor sizes for every activation function.
Loaded by ``refsim calibrate`` and the tests only (:func:`isa_models.cortex_m.formulas.sweep`), never by
an estimate. Shapes appended later go last, so the earlier ones keep their fit / held-out roles
(refsim's ``sweep_calls`` holds out every 4th shape of a route).
"""

from __future__ import annotations

from isa_models.cortex_m.activation import FORMULAS

_SIZES = (64, 256, 1000, 1024, 4096, 37, 513, 2048, 129, 3000)


def sweep() -> list[tuple[str, dict[str, int]]]:
    return [(fn, {"size": n}) for fn in FORMULAS for n in _SIZES]


__all__ = ["sweep"]

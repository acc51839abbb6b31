"""The designed calibration sweep of the softmax family (:mod:`isa_models.cortex_m.softmax`): rows x row sizes.
Loaded by ``refsim calibrate`` and the tests only (:func:`isa_models.cortex_m.formulas.sweep`), never by
an estimate. Shapes appended later go last, so the earlier ones keep their fit / held-out roles
(refsim's ``sweep_calls`` holds out every 4th shape of a route).
"""

from __future__ import annotations


def sweep() -> list[tuple[str, dict[str, int]]]:
    shapes = ((1, 12), (1, 10), (4, 64), (1, 1000), (8, 256), (2, 33), (16, 16), (1, 2), (3, 100), (1, 512))
    return [("arm_softmax_s8", {"num_rows": r, "row_size": s}) for r, s in shapes]


__all__ = ["sweep"]

"""The designed calibration sweep of the activation family (:mod:`isa_models.cortex_m.activation`): tensor sizes for every activation function.
Loaded by ``refsim calibrate`` and the tests only (:func:`isa_models.cortex_m.formulas.sweep`), never by
an estimate. Shapes appended later go last, so the earlier ones keep their fit / held-out roles
(refsim's ``sweep_calls`` holds out every 4th shape of a route).
"""

from __future__ import annotations

from isa_models.cortex_m.activation import FORMULAS

_SIZES = (64, 256, 1000, 1024, 4096, 37, 513, 2048, 129, 3000)
#: Short calls and every remainder mod 16 (issue 18: GCC vectorizes CMSIS-NN's relu6 loop on
#: MVE with a scalar epilogue, so a 14-element call costs more than a 32-element one).
_SHORT = (1, 2, 3, 5, 7, 10, 14, 15, 16, 17, 19, 25, 28, 32, 33, 46, 54, 63)


def sweep() -> list[tuple[str, dict[str, int]]]:
    return [(fn, {"size": n}) for fn in FORMULAS for n in _SIZES]


def cmsis_nn_sweep() -> list[tuple[str, dict[str, int]]]:
    """Shapes measured on CMSIS-NN builds only (:func:`isa_models.cortex_m.formulas.sweep`)."""
    return [("arm_relu6_s8", {"size": n}) for n in _SHORT]


__all__ = ["cmsis_nn_sweep", "sweep"]

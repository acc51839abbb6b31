"""The designed calibration sweep of the pooling family (:mod:`isa_models.cortex_m.pooling`): the same windows for every pooling function.
Loaded by ``refsim calibrate`` and the tests only (:func:`isa_models.cortex_m.formulas.sweep`), never by
an estimate. Shapes appended later go last, so the earlier ones keep their fit / held-out roles
(refsim's ``sweep_calls`` holds out every 4th shape of a route).
"""

from __future__ import annotations

from isa_models.cortex_m.pooling import FORMULAS, pool_params

_SHAPES = (
    ((1, 25, 5, 64), (25, 5), (1, 1)),
    ((1, 16, 16, 16), (2, 2), (2, 2)),
    ((1, 8, 8, 64), (8, 8), (1, 1)),
    ((1, 12, 12, 13), (3, 3), (2, 2), (1, 1)),
    ((1, 10, 10, 32), (3, 3), (1, 1), (1, 1)),
    ((1, 6, 6, 128), (2, 2), (2, 2)),
    ((1, 9, 9, 7), (3, 3), (3, 3)),
    ((1, 16, 8, 24), (2, 2), (2, 2)),
    ((1, 3, 3, 256), (3, 3), (1, 1)),
    ((1, 14, 14, 20), (5, 5), (2, 2), (2, 2)),
    # channel tails of 4 and 16 lanes, padded windows, batches
    ((1, 10, 10, 5), (2, 2), (2, 2)),
    ((1, 8, 12, 17), (3, 3), (1, 2), (1, 1)),
    ((2, 7, 7, 33), (3, 3), (2, 2), (1, 1)),
    ((1, 20, 20, 3), (4, 4), (4, 4)),
    ((1, 6, 10, 48), (3, 5), (1, 1), (1, 2)),
    ((1, 12, 6, 10), (2, 3), (2, 3)),
)


#: issue 18: single pixels, one to three channels, batches, windows as large as the input,
#: strides over the window, padded edges that leave one tap (CMSIS-NN builds only).
_CMSIS_NN_SHAPES = (
    ((1, 1, 1, 1), (1, 1), (1, 1)),
    ((2, 3, 3, 2), (3, 3), (1, 1), (1, 1)),
    ((1, 5, 5, 3), (2, 2), (3, 3)),
    ((3, 4, 4, 1), (1, 1), (2, 2)),
    ((1, 7, 7, 5), (7, 7), (1, 1)),
    ((1, 6, 6, 9), (4, 4), (1, 1), (1, 1)),
    ((2, 5, 7, 2), (2, 3), (3, 2)),
    ((1, 2, 9, 4), (1, 3), (1, 4)),
    ((1, 3, 3, 31), (3, 3), (1, 1), (1, 1)),
    ((1, 8, 8, 1), (5, 5), (3, 3), (2, 2)),
    ((3, 2, 2, 6), (2, 2), (1, 1)),
    ((1, 4, 3, 19), (4, 3), (1, 1)),
    # windows mostly outside the input (scalar avgpool tests every window row and tap)
    ((2, 1, 9, 4), (4, 1), (1, 2), (2, 0)),
    ((1, 2, 6, 5), (5, 3), (1, 2), (2, 1)),
    ((3, 1, 4, 3), (3, 2), (2, 1), (1, 0)),
    ((1, 13, 1, 3), (4, 3), (1, 1), (1, 1)),
    ((2, 6, 1, 5), (3, 5), (3, 1), (0, 2)),
)


def sweep() -> list[tuple[str, dict[str, int]]]:
    return [(fn, pool_params(*s)) for fn in FORMULAS for s in _SHAPES]


def cmsis_nn_sweep() -> list[tuple[str, dict[str, int]]]:
    """Shapes measured on CMSIS-NN builds only (:func:`isa_models.cortex_m.formulas.sweep`)."""
    return [(fn, pool_params(*s)) for fn in FORMULAS for s in _CMSIS_NN_SHAPES]


__all__ = ["cmsis_nn_sweep", "sweep"]

"""The designed calibration sweep of the elementwise family (:mod:`isa_models.cortex_m.elementwise`): block sizes for add/mul, broadcast pairs for maximum/minimum.
Loaded by ``refsim calibrate`` and the tests only (:func:`isa_models.cortex_m.formulas.sweep`), never by
an estimate. Shapes appended later go last, so the earlier ones keep their fit / held-out roles
(refsim's ``sweep_calls`` holds out every 4th shape of a route).
"""

from __future__ import annotations

from isa_models.cortex_m.elementwise import minmax_params

_SIZES = (64, 256, 1000, 1024, 4096, 37, 513, 2048, 3200, 129)


def sweep() -> list[tuple[str, dict[str, int]]]:
    out = [
        (fn, {"block_size": n}) for fn in ("arm_elementwise_add_s8", "arm_elementwise_mul_s8") for n in _SIZES
    ]
    pairs = (
        ((1, 8, 8, 16), (1, 8, 8, 16)),
        ((1, 16, 16, 8), (1, 1, 1, 8)),
        ((1, 4, 4, 33), (1, 4, 4, 33)),
        ((1, 10, 10, 24), (1, 10, 10, 1)),
        ((1, 1, 1, 1000), (1, 1, 1, 1000)),
        ((2, 6, 6, 12), (2, 6, 6, 12)),
        ((1, 12, 12, 64), (1, 1, 1, 64)),
        ((1, 8, 16, 5), (1, 8, 16, 5)),
    )
    out += [(fn, minmax_params(a, b)) for fn in ("arm_maximum_s8", "arm_minimum_s8") for a, b in pairs]
    return out


__all__ = ["sweep"]

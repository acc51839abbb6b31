"""The designed calibration sweep of the elementwise family (:mod:`isa_models.cortex_m.elementwise`): block sizes for add/mul, broadcast pairs for maximum/minimum.
Loaded by ``refsim calibrate`` and the tests only (:func:`isa_models.cortex_m.formulas.sweep`), never by
an estimate. Shapes appended later go last, so the earlier ones keep their fit / held-out roles
(refsim's ``sweep_calls`` holds out every 4th shape of a route).
"""

from __future__ import annotations

from isa_models.cortex_m.elementwise import minmax_params

_SIZES = (64, 256, 1000, 1024, 4096, 37, 513, 2048, 3200, 129)
#: Short calls (issue 18: random cases of 1-63 elements were off by 25-35% where the sweep
#: started at 37): each SIMD tail length, a call below one pass, odd sizes.
_SHORT = (1, 2, 3, 4, 5, 6, 7, 9, 11, 14, 17, 23, 31, 46, 63, 90)


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


def cmsis_nn_sweep() -> list[tuple[str, dict[str, int]]]:
    """Shapes measured on CMSIS-NN builds only (:func:`isa_models.cortex_m.formulas.sweep`)."""
    out = [
        (fn, {"block_size": n}) for fn in ("arm_elementwise_add_s8", "arm_elementwise_mul_s8") for n in _SHORT
    ]
    # mul with a left output shift (GCC -Ofast's other loop version; the shapes above shift right)
    out += [
        ("arm_elementwise_mul_s8", {"block_size": n, "out_shift": 3})
        for n in (1, 4, 7, 16, 37, 63, 256, 1000)
    ]
    walks = (
        # every level of CMSIS-NN's broadcast walk (arm_maximum_s8.c) with small blocks: one
        # input a single value; per batch equal blocks / a single-value block; per row; per pixel
        ((1, 1, 1, 1), (1, 3, 4, 5)),
        ((1, 2, 3, 7), (1, 1, 1, 1)),
        ((1, 1, 1, 3), (1, 1, 1, 3)),
        ((3, 2, 2, 3), (1, 2, 2, 3)),
        ((1, 3, 1, 7), (4, 3, 1, 7)),
        ((3, 1, 1, 1), (3, 2, 2, 5)),
        ((2, 3, 2, 4), (2, 1, 1, 1)),
        ((1, 1, 4, 3), (1, 5, 4, 3)),
        ((2, 3, 5, 2), (2, 1, 5, 2)),
        ((1, 4, 1, 1), (1, 4, 3, 2)),
        ((1, 3, 5, 6), (1, 3, 1, 1)),
        ((1, 3, 1, 6), (1, 3, 4, 6)),
        ((1, 2, 5, 9), (1, 2, 1, 9)),
        ((1, 2, 3, 1), (1, 2, 3, 8)),
        ((1, 3, 4, 16), (1, 3, 4, 1)),
        ((1, 1, 4, 3), (1, 5, 1, 3)),
        ((2, 4, 6, 20), (2, 4, 1, 20)),
        ((1, 6, 8, 33), (1, 6, 8, 1)),
        ((2, 1, 1, 5), (2, 1, 1, 5)),
        ((1, 5, 2, 1), (3, 1, 2, 1)),
        ((2, 2, 6, 1), (2, 2, 1, 1)),
        ((1, 1, 1, 40), (1, 1, 1, 1)),
        ((2, 5, 3, 1), (1, 5, 3, 2)),
        ((1, 4, 2, 2), (2, 4, 2, 1)),
        # the top-level single-value loop over many vectors (MVE: its own inlined copy)
        ((1, 1, 1, 1), (2, 8, 8, 12)),
        ((1, 6, 5, 6), (1, 1, 1, 1)),
        ((3, 4, 5, 7), (1, 1, 1, 1)),
    )
    out += [(fn, minmax_params(a, b)) for fn in ("arm_maximum_s8", "arm_minimum_s8") for a, b in walks]
    return out


__all__ = ["cmsis_nn_sweep", "sweep"]

"""The designed calibration sweep of the softmax family (:mod:`isa_models.cortex_m.softmax`): rows x row sizes.
Loaded by ``refsim calibrate`` and the tests only (:func:`isa_models.cortex_m.formulas.sweep`), never by
an estimate. Shapes appended later go last, so the earlier ones keep their fit / held-out roles
(refsim's ``sweep_calls`` holds out every 4th shape of a route).
"""

from __future__ import annotations


def sweep() -> list[tuple[str, dict[str, int]]]:
    shapes = ((1, 12), (1, 10), (4, 64), (1, 1000), (8, 256), (2, 33), (16, 16), (1, 2), (3, 100), (1, 512))
    calls = [("arm_softmax_s8", {"num_rows": r, "row_size": s}) for r, s in shapes]
    # CMSIS-NN computes an exponential only where x - max(row) >= diff_min: on the uniform int8
    # data of a sweep case the default diff_min (-248) passes ~97% of the elements, so these
    # shapes narrow diff_min to pass from ~1% to ~50% of them, and the fit can tell the
    # per-element loop trips from the per-exponential work.
    narrow = ((1, 64, -16), (4, 100, -32), (2, 500, -8), (8, 48, -64), (1, 300, -2), (3, 20, -128),
              (16, 30, -24), (1, 1000, -40))  # fmt: skip
    calls += [("arm_softmax_s8", {"num_rows": r, "row_size": s, "diff_min": d}) for r, s, d in narrow]
    # An exponential whose scaled input MUL_SAT(diff · 2^shift, mult) is 0 returns early in GCC's
    # build: with shift 31 (30) every even diff (every fourth) wraps to 0, as in a model whose
    # input scale is large (TFLM's shift 28-31).
    wraps = ((4, 100, -255, 31), (1, 300, -255, 31), (8, 30, -100, 31), (2, 200, -32, 31), (3, 150, -255, 30))
    calls += [("arm_softmax_s8", {"num_rows": r, "row_size": s, "diff_min": d, "shift": sh})
              for r, s, d, sh in wraps]  # fmt: skip
    # Rows of one element skip the max loop (and its MVE set-up) altogether; rows of a few elements.
    calls += [
        ("arm_softmax_s8", {"num_rows": r, "row_size": s})
        for r, s in ((4, 1), (1, 1), (16, 1), (3, 3), (8, 2))
    ]
    return calls


__all__ = ["sweep"]

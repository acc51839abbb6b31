"""The designed calibration sweep of the layout family (:mod:`isa_models.cortex_m.layout`): pads and transposes (unit-stride rows, word tails) and a seeded draw of both.
Loaded by ``refsim calibrate`` and the tests only (:func:`isa_models.cortex_m.formulas.sweep`), never by
an estimate. Shapes appended later go last, so the earlier ones keep their fit / held-out roles
(refsim's ``sweep_calls`` holds out every 4th shape of a route).
"""

from __future__ import annotations

import numpy as np

from isa_models.cortex_m.layout import pad_params, transpose_params


def sweep() -> list[tuple[str, dict[str, int]]]:
    pads = [pad_params(*s) for s in (
        ((1, 49, 10, 1), (0, 4, 1, 0), (0, 5, 2, 0)), ((1, 16, 16, 16), (0, 1, 1, 0), (0, 1, 1, 0)),
        ((1, 8, 8, 32), (0, 0, 0, 0), (0, 0, 0, 0)), ((1, 1, 1, 4096), (0, 0, 0, 0), (0, 0, 0, 0)),
        ((1, 12, 12, 3), (0, 2, 2, 0), (0, 2, 2, 0)), ((1, 24, 24, 8), (0, 0, 0, 0), (0, 1, 1, 0)),
        ((1, 5, 7, 64), (0, 1, 0, 0), (0, 1, 0, 0)), ((1, 32, 32, 1), (0, 0, 0, 0), (0, 0, 0, 0)),
        ((1, 6, 6, 100), (0, 0, 0, 4), (0, 0, 0, 4)), ((2, 10, 10, 12), (0, 1, 1, 0), (0, 1, 1, 0)),
    )]  # fmt: skip
    transposes = [transpose_params(s, perm) for s, perm in (
        ((16, 32), (1, 0)), ((1, 8, 8, 16), (0, 3, 1, 2)), ((1, 16, 4, 4), (0, 2, 3, 1)), ((64, 10), (1, 0)),
        ((4, 12, 20), (2, 0, 1)), ((1, 10, 10, 24), (0, 3, 1, 2)), ((2, 6, 8, 5), (0, 2, 1, 3)),
        ((100, 7), (1, 0)), ((3, 5, 40), (0, 2, 1)), ((1, 32, 8, 8), (0, 2, 3, 1)),
        # the last axis stays last (unit-stride rows, runs above and below 7 bytes, word tails) ..
        ((3, 5, 12), (1, 0, 2)), ((4, 6, 5), (1, 0, 2)), ((2, 3, 4, 9), (0, 2, 1, 3)),
        ((3, 4, 2, 3), (1, 0, 2, 3)), ((2, 4, 6, 14), (2, 0, 1, 3)), ((1, 6, 10, 32), (0, 2, 1, 3)),
        ((5, 7, 11), (0, 1, 2)), ((2, 3, 4, 6), (0, 1, 2, 3)), ((4, 9, 7), (1, 0, 2)),
        ((6, 2, 5, 20), (1, 0, 2, 3)), ((8, 30), (0, 1)), ((2, 50, 3), (0, 1, 2)),
        ((1, 4, 6, 24), (0, 2, 1, 3)), ((2, 3, 5, 40), (1, 0, 2, 3)), ((3, 4, 4, 16), (2, 1, 0, 3)),
        ((6, 4, 30), (1, 0, 2)), ((3, 8, 19), (1, 0, 2)), ((2, 2, 3, 64), (0, 2, 1, 3)),
        ((2, 5, 3, 48), (1, 0, 2, 3)), ((3, 2, 4, 27), (0, 2, 1, 3)), ((4, 3, 2, 33), (2, 0, 1, 3)),
        ((2, 6, 17), (1, 0, 2)), ((5, 3, 40), (1, 0, 2)), ((1, 3, 8, 96), (0, 2, 1, 3)),
        ((2, 4, 2, 15), (1, 2, 0, 3)), ((3, 3, 70), (1, 0, 2)),
        ((2, 3, 100), (1, 0, 2)), ((4, 2, 64), (1, 0, 2)), ((3, 2, 50), (0, 1, 2)), ((2, 2, 2, 80), (1, 0, 2, 3)),
        ((2, 2, 56), (1, 0, 2)), ((2, 3, 2, 120), (0, 2, 1, 3)),
        # .. and the two outer axes stay (MVE: per-plane column gathers)
        ((2, 3, 10, 12), (0, 1, 3, 2)), ((1, 4, 20, 6), (0, 1, 3, 2)), ((3, 2, 7, 17), (0, 1, 3, 2)),
    )]  # fmt: skip
    rng = np.random.default_rng(31)
    for _ in range(20):
        x = (1, int(rng.choice([1, 4, 8, 12, 25, 49])), int(rng.choice([1, 5, 8, 10, 16])),
             int(rng.choice([1, 3, 8, 16, 32, 64])))  # fmt: skip
        pre = tuple(int(v) * int(rng.random() < 0.5) for v in (0, *rng.integers(0, 3, 3)))
        post = tuple(int(v) * int(rng.random() < 0.5) for v in (0, *rng.integers(0, 3, 3)))
        pads.append(pad_params(x, pre, post))
        shape = tuple(int(v) for v in rng.choice([2, 3, 4, 6, 8, 12, 16], size=int(rng.integers(2, 5))))
        transposes.append(transpose_params(shape, tuple(int(v) for v in rng.permutation(len(shape)))))
    return [("arm_pad_s8", s) for s in pads] + [("arm_transpose_s8", s) for s in transposes]


def cmsis_nn_sweep() -> list[tuple[str, dict[str, int]]]:
    """Shapes measured on CMSIS-NN builds only (:func:`isa_models.cortex_m.formulas.sweep`)."""
    # issue 18: batch padding, batches, single pixels and channels, odd sizes (the random cases
    # of `refsim conformance` pad all four axes of 1-3 element tensors; the sweep had no N pad)
    pads = [pad_params(*s) for s in (
        ((3, 1, 1, 2), (2, 0, 1, 0), (0, 0, 2, 0)), ((2, 2, 1, 3), (0, 1, 0, 1), (2, 1, 0, 0)),
        ((1, 1, 1, 1), (1, 1, 1, 1), (1, 1, 1, 1)), ((2, 3, 2, 5), (1, 0, 0, 0), (1, 0, 0, 0)),
        ((3, 2, 3, 1), (2, 2, 2, 1), (2, 2, 0, 0)), ((1, 3, 3, 3), (2, 2, 0, 0), (2, 0, 2, 0)),
        ((2, 1, 2, 2), (1, 0, 2, 0), (1, 0, 0, 0)), ((1, 2, 3, 7), (0, 1, 1, 2), (0, 0, 1, 1)),
        ((4, 2, 2, 4), (0, 0, 0, 0), (1, 1, 1, 0)), ((1, 4, 5, 1), (0, 0, 0, 3), (0, 0, 0, 0)),
        ((2, 2, 2, 9), (1, 1, 0, 0), (0, 0, 1, 3)), ((1, 1, 7, 6), (3, 0, 0, 0), (0, 3, 0, 0)),
        ((3, 3, 1, 2), (0, 2, 0, 2), (1, 0, 1, 0)), ((2, 1, 3, 3), (2, 1, 2, 0), (0, 2, 1, 2)),
        ((1, 3, 2, 1), (1, 0, 2, 2), (2, 1, 0, 1)), ((3, 1, 2, 3), (0, 0, 1, 1), (1, 1, 2, 2)),
    )]  # fmt: skip
    # .. and transposes of every rank (1-D: one memcpy, never swept before), extent-1 axes, short
    # and single-byte rows
    transposes = [transpose_params(s, perm) for s, perm in (
        ((4,), (0,)), ((37,), (0,)), ((2,), (0,)), ((100,), (0,)), ((1,), (0,)), ((17,), (0,)),
        ((1, 2), (1, 0)), ((3, 1), (1, 0)), ((2, 5), (1, 0)), ((4, 3), (0, 1)),
        ((3, 3, 1), (1, 0, 2)), ((2, 4, 1), (1, 0, 2)), ((3, 1, 2), (0, 1, 2)), ((2, 1, 1), (0, 2, 1)),
        ((1, 2, 1), (2, 0, 1)), ((2, 3, 2), (2, 1, 0)), ((4, 1, 3), (1, 2, 0)), ((1, 4, 4), (0, 2, 1)),
        ((2, 1, 3, 1), (0, 2, 3, 1)), ((1, 1, 4, 3), (2, 3, 0, 1)), ((1, 2, 1, 3), (2, 1, 3, 0)),
        ((1, 1, 3, 2), (3, 1, 0, 2)), ((2, 2, 1, 1), (1, 0, 2, 3)), ((3, 1, 2, 2), (0, 1, 3, 2)),
        ((1, 3, 2, 4), (3, 2, 1, 0)), ((2, 2, 2, 1), (0, 1, 2, 3)), ((4, 1, 1, 3), (0, 3, 1, 2)),
        ((1, 2, 3, 1), (1, 0, 2, 3)), ((2, 3, 1, 4), (0, 2, 1, 3)), ((3, 2, 4, 1), (2, 0, 3, 1)),
    )]  # fmt: skip
    return [("arm_pad_s8", s) for s in pads] + [("arm_transpose_s8", s) for s in transposes]


__all__ = ["cmsis_nn_sweep", "sweep"]

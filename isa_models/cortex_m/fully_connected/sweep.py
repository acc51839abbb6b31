"""The designed calibration sweep of the fully_connected family (:mod:`isa_models.cortex_m.fully_connected`): FC, batch mat-mult and vector-sum shapes (K tails, odd columns, real layers).
Loaded by ``refsim calibrate`` and the tests only (:func:`isa_models.cortex_m.formulas.sweep`), never by
an estimate. Shapes appended later go last, so the earlier ones keep their fit / held-out roles
(refsim's ``sweep_calls`` holds out every 4th shape of a route).
"""

from __future__ import annotations

from isa_models.cortex_m.fully_connected import bmm_params, fc_params

_FC_SHAPES = (
    (1, 64, 12),
    (1, 640, 128),
    (1, 128, 128),
    (1, 128, 8),
    (1, 8, 128),
    (1, 256, 16),
    (2, 100, 30),
    (1, 1024, 64),
    (4, 33, 17),
    (1, 512, 10),
    (1, 77, 45),
    (3, 64, 64),
    (1, 45, 7),
    (2, 250, 3),
    (1, 19, 33),
    (5, 96, 20),
)


def sweep() -> list[tuple[str, dict[str, int]]]:
    out: list[tuple[str, dict[str, int]]] = []
    for fn in ("arm_fully_connected_s8", "arm_fully_connected_per_channel_s8"):
        out += [(fn, fc_params(*s)) for s in _FC_SHAPES]
    out += [("arm_batch_matmul_s8", bmm_params(*s)) for s in (
        (1, 1, 16, 16, 32), (1, 2, 8, 12, 64), (2, 1, 10, 6, 20), (1, 4, 8, 8, 16), (1, 1, 4, 32, 128),
        (1, 1, 24, 8, 7), (1, 2, 16, 16, 48), (2, 2, 5, 9, 33),
        # K tails of 4 and 16 lanes, odd column counts, one-row and many-head shapes
        (1, 1, 12, 5, 18), (1, 3, 6, 10, 40), (1, 1, 1, 64, 64), (2, 3, 3, 7, 9), (1, 1, 32, 3, 24),
        (1, 6, 4, 4, 30), (1, 1, 9, 17, 96), (3, 1, 7, 12, 50),
    )]  # fmt: skip
    out += [("arm_vector_sum_s8", {"vector_rows": r, "vector_cols": c}) for r, c in (
        (12, 64), (128, 640), (16, 256), (64, 33), (10, 512), (128, 128), (45, 77), (8, 128),
    )]  # fmt: skip
    # CMSIS-NN's early exit (lhs_offset 0: the bias copy only) and its rhs_offset term per row.
    out += [("arm_vector_sum_s8", {"vector_rows": r, "vector_cols": c, "lhs_offset": lo, "rhs_offset": ro})
            for r, c, lo, ro in ((30, 255, 0, 0), (8, 17, 0, 5), (128, 640, 0, 0), (3, 40, 0, 0), (64, 33, 0, -7),
                                 (17, 100, 128, -47), (40, 16, -3, 60), (5, 300, 7, 1), (1, 50, 0, 0),
                                 (2, 8, 0, 3))]  # fmt: skip
    return out


def cmsis_nn_sweep() -> list[tuple[str, dict[str, int]]]:
    """Shapes measured on CMSIS-NN builds only (:func:`isa_models.cortex_m.formulas.sweep`).

    issue 18: batch matmuls with a filter (RHS) offset, whose vec-mat runs CMSIS-NN's other loop
    nest (the shared sweep's offset was 0 throughout, the random cases' almost never), small
    ones among them (one column, K of 1-3, single rows); fully connected calls over a short K."""
    shapes = [(1, 1, 16, 16, 32, -97), (1, 2, 8, 12, 64, 31), (2, 1, 10, 6, 20, 128), (1, 1, 12, 5, 18, -2),
              (1, 3, 6, 10, 40, -127), (2, 3, 3, 7, 9, 5), (1, 1, 32, 3, 24, 77), (1, 1, 9, 17, 96, -20),
              (3, 3, 1, 1, 1, -97), (1, 1, 8, 3, 16, 128), (2, 2, 4, 1, 16, -127), (1, 1, 2, 9, 31, -3),
              (1, 3, 5, 3, 64, 31), (2, 1, 6, 2, 3, -1), (1, 2, 1, 6, 70, 64), (3, 1, 7, 12, 50, -55),
              (1, 1, 3, 1, 1, 0), (2, 2, 4, 1, 16, 0), (1, 1, 2, 9, 31, 0), (2, 1, 6, 2, 3, 0)]  # fmt: skip
    out = [
        ("arm_batch_matmul_s8", {**bmm_params(b, h, r, c, k), "fc_params.filter_offset": off})
        for b, h, r, c, k, off in shapes
    ]
    # fully connected calls of a few rows over a short K (1-9: the tail loop only, or one block)
    # and 1-17 output channels; the shared sweep's shortest K was 8 over 128 channels
    fc = [(2, 1, 1), (4, 3, 17), (4, 16, 3), (3, 2, 5), (1, 5, 2), (2, 9, 4), (3, 6, 11), (5, 1, 6),
          (1, 4, 1), (2, 7, 9), (4, 2, 13), (1, 3, 8)]  # fmt: skip
    for fn in ("arm_fully_connected_s8", "arm_fully_connected_per_channel_s8"):
        out += [(fn, fc_params(*s)) for s in fc]
    return out


def _mve_shapes() -> list[tuple[str, dict[str, int]]]:
    """Shapes measured on CMSIS-NN's MVE builds only (:func:`isa_models.cortex_m.formulas.sweep`).

    issue 18: ``arm_vector_sum_s8`` calls of 1-13 rows (the five-row passes and the single-row
    tail loop apart: the shared sweep's smallest summed call had 5 rows), 1-100 columns (one to
    seven 16-lane trips), and a NULL bias (a memset of the buffer instead of the bias copy)."""
    shapes = [(1, 3, 0, 0), (2, 16, 0, 0), (3, 33, 0, 5), (4, 7, 0, 0), (6, 3, 0, 0), (7, 20, 0, -9),
              (9, 1, 0, 0), (11, 48, 0, 0), (13, 5, 0, 3), (2, 100, 0, 0), (1, 64, 1, 0), (3, 3, 1, 0),
              (6, 16, 1, 0), (8, 40, 1, 11), (4, 1, 1, 0), (12, 17, 1, 0), (5, 9, 1, 0), (1, 20, 0, 2),
              (2, 5, 1, -3), (10, 2, 0, 0)]  # fmt: skip
    return [("arm_vector_sum_s8", {"vector_rows": r, "vector_cols": c, "rhs_offset": ro,
                                   **({"bias_is_null": 1} if null else {})})
            for r, c, null, ro in shapes]  # fmt: skip


def cmsis_nn_tier_sweep(tier: str) -> list[tuple[str, dict[str, int]]]:
    """Shapes measured on one tier's CMSIS-NN files only (:func:`isa_models.cortex_m.formulas.sweep`).

    DSP: batch matmuls of one weight row (the vec-mat's odd row alone) or a pair and an odd
    row, K with and without a 1-3 tail and under 4 (no K/4 loop), with and without a filter
    offset: the K/4 and tail loops' entries per pass apart from their trips (issue 18: one
    weight row over K 31 priced +35%, eight over K 1 +28%; the sweep's one-row calls had K 1
    or 16, its K < 4 calls one or two weight rows). On MVE: `_mve_shapes`."""
    if tier == "mve":
        return _mve_shapes()
    if tier != "dsp":
        return []
    shapes = [(1, 1, 6, 1, 7, -5), (1, 2, 4, 1, 13, 40), (2, 1, 3, 1, 22, -128), (1, 1, 9, 1, 45, 3),
              (1, 3, 2, 1, 64, -17), (2, 2, 5, 1, 5, 0), (1, 1, 7, 1, 30, 0), (1, 2, 3, 1, 51, 0),
              (1, 1, 10, 1, 40, 0), (3, 1, 2, 1, 2, 90), (1, 1, 4, 3, 11, -9), (1, 2, 3, 5, 26, 0),
              (2, 1, 2, 3, 33, 70), (1, 1, 5, 7, 6, 0), (1, 1, 3, 2, 19, -33), (1, 2, 2, 4, 45, 0),
              # K < 4 over several weight rows: the pair passes that skip the K/4 loop
              (1, 1, 5, 6, 1, 0), (2, 1, 3, 4, 2, -7), (1, 2, 4, 8, 3, 0), (1, 1, 6, 5, 2, 25)]  # fmt: skip
    return [
        ("arm_batch_matmul_s8", {**bmm_params(b, h, r, c, k), "fc_params.filter_offset": off})
        for b, h, r, c, k, off in shapes
    ]


__all__ = ["cmsis_nn_sweep", "cmsis_nn_tier_sweep", "sweep"]

"""Cost formulas for CMSIS-NN's s8 fully connected, batch matmul and vector sum (kernels_py/fully_connected.py).

No routing inside CMSIS-NN here: the function named is the one that runs (per-tensor or
per-channel requantization is the caller's choice, kernels_py/fully_connected.py). On MVE,
ExecuTorch precomputes the kernel sums (``arm_vector_sum_s8``) ahead of time; the runtime
call then only runs the mat-vec.

Features: ``call``, ``batches`` = N rows (a batch matmul: per (batch, head, lhs row)),
``outputs`` = N·C requantized, ``groups`` = batch · head pairs (batch matmul), and the vec-mat
passes of the library that runs: CMSIS-NN's ``arm_nn_vec_mat_mult_t_s8`` groups output
channels by 3/2/4 (scalar/DSP/MVE) then runs the rest one by one (``_vec_mat_cmsis``; its
batch matmul adds a vector sum of the RHS per group), kernels_c groups by 4/2/4 with its own K
steps (``_vec_mat_kernels_c``)::

    instructions = Σ a_f · f          cycles = Σ b_f · f                (per core, fitted)

arm_vector_sum_s8 (rows × cols): ``call``, ``outputs`` = rows, ``blocks`` = rows·⌊cols/L⌋
(MVE: rows·⌈cols/16⌉), ``k_tail`` = rows·(cols mod L) off MVE; CMSIS-NN's MVE loop sums five
rows per pass, then one: ``tail_blocks`` = (rows mod 5)·⌈cols/16⌉ (:func:`_vsum_features`).
"""

from __future__ import annotations

from isa_models.cortex_m.formula import Features, Formula
from isa_models.shapes import BLOCKING, Params, ceil_div, dims, value

FAMILY = "fully_connected"


def _vec_mat_cmsis(tier: str, rows: int, channels: int, depth: int) -> dict[str, float]:
    """CMSIS-NN's ``arm_nn_vec_mat_mult_t_s8`` per LHS row: output channels in groups of G
    (scalar 3, DSP 2, MVE 4), then the C mod G left one at a time, each a pass over K
    (scalar: K MACs; DSP: ⌊K/4⌋ SMLAD blocks + K mod 4; MVE: ⌈K/16⌉ predicated VMLADAVs):
    group_rows/odd_rows (pass set-ups), group_blocks/odd_blocks, group_tail/odd_tail, and the
    passes that enter the DSP's K/4 loop (group_block_rows/odd_block_rows: CMSIS-NN builds this
    file with ``unroll-loops`` off MVE, so a loop's entry, not only its trips, costs)."""
    group = {"scalar": 3, "dsp": 2, "mve": 4}[tier]
    full, odd = divmod(channels, group)
    if tier == "mve":
        per, tail = ceil_div(depth, 16), 0
    elif tier == "dsp":
        per, tail = depth // 4, depth % 4
    else:
        per, tail = depth, 0
    return {"group_rows": float(rows * full), "odd_rows": float(rows * odd),
            "group_blocks": float(rows * full * per), "odd_blocks": float(rows * odd * per),
            "group_tail": float(rows * full * tail), "odd_tail": float(rows * odd * tail),
            # DSP (built with GCC's unroll-loops: each loop entered through its unrolled
            # prologue): the passes that enter the K/4 loop
            "group_block_rows": float(rows * full * (per != 0) if tier == "dsp" else 0),
            "odd_block_rows": float(rows * odd * (per != 0) if tier == "dsp" else 0)}  # fmt: skip


def _vec_mat_kernels_c(
    tier: str, rows: int, channels: int, depth: int, *, dsp_unroll8: bool
) -> dict[str, float]:
    """kernels_c's vec-mat per LHS row (src/fully_connected_s8.c, support/nn_vec_mat.h): output
    channels in groups of 4 (scalar, MVE) or 2 (DSP), then one by one; K by 1 (scalar), by 4
    with a 1-byte tail (DSP; batch matmul's pairs step 8 first), by 16 with one predicated tail
    (MVE, which also sums each weight row once per call: ksum_blocks)."""
    group = 2 if tier == "dsp" else 4
    full, odd = divmod(channels, group)
    if tier == "mve":
        per, step, tail = depth // 16, 0, int(depth % 16 != 0)
        single_per, single_tail = per, tail
    elif tier == "dsp":
        per = depth // 8 if dsp_unroll8 else depth // 4
        step = (depth % 8) // 4 if dsp_unroll8 else 0
        tail, single_per, single_tail = depth % 4, depth // 4, depth % 4
    else:
        per, step, tail, single_per, single_tail = depth, 0, 0, depth, 0
    f = {"group_rows": float(rows * full), "odd_rows": float(rows * odd),
         "group_blocks": float(rows * full * per), "group_steps": float(rows * full * step),
         "group_tail": float(rows * full * tail), "odd_blocks": float(rows * odd * single_per),
         "odd_tail": float(rows * odd * single_tail)}  # fmt: skip
    if tier == "mve":
        f["ksum_blocks"] = float(channels * (per + tail))
    return f


def _fc_kernels_c_features(p: Params, tier: str) -> Features:
    n, k, c = _fc_shape(p)
    return {"call": 1.0, "batches": float(n), "outputs": float(n * c),
            **_vec_mat_kernels_c(tier, n, c, k, dsp_unroll8=False)}  # fmt: skip


def _bmm_kernels_c_features(p: Params, tier: str) -> Features:
    groups, rows, c, k = _bmm_shape(p)
    mat = _vec_mat_kernels_c(tier, rows, c, k, dsp_unroll8=True)
    return {"call": 1.0, "groups": float(groups), "batches": float(groups * rows),
            "outputs": float(groups * rows * c), **{key: groups * v for key, v in mat.items()}}  # fmt: skip


def _fc_cmsis_features(p: Params, tier: str) -> Features:
    """CMSIS-NN's FC: per batch row one :func:`_vec_mat_cmsis`; outputs = N·C requantized."""
    n, k, c = _fc_shape(p)
    return {"call": 1.0, "batches": float(n), "outputs": float(n * c), **_vec_mat_cmsis(tier, n, c, k)}


def _fc_shape(p: Params) -> tuple[int, int, int]:
    return value(p, "input_dims.n"), value(p, "filter_dims.n"), value(p, "output_dims.c")


def _fc_macs(p: Params) -> int:
    n, k, c = _fc_shape(p)
    return n * k * c


def _fc_bytes(p: Params) -> tuple[int, int]:
    n, k, c = _fc_shape(p)
    return n * k + k * c + 12 * c, n * c


def _bmm_shape(p: Params) -> tuple[int, int, int, int]:
    o = dims(p, "output_dims")
    return o.n * o.h, o.w, o.c, value(p, "input_lhs_dims.c")


def _bmm_cmsis_features(p: Params, tier: str, *, tflm_build: bool = False) -> Features:
    """CMSIS-NN's arm_batch_matmul_s8: on MVE per (batch, head) group ``arm_vector_sum_s8``
    over the RHS (vsum_rows = C, vsum_blocks = C·⌈K/16⌉; none off MVE) and per LHS row one
    :func:`_vec_mat_cmsis` over the C RHS rows; DSP: :func:`_bmm_dsp_features` (``tflm_build``:
    the features TFLM's -O2 file was fitted with, :func:`_bmm_zero_offset_features`)."""
    groups, rows, c, k = _bmm_shape(p)
    lanes = BLOCKING[tier].reduce_lanes
    # the vector sum is MVE's only (`#if defined(ARM_MATH_MVEI)`): off MVE no vsum features
    vsum = c * ceil_div(k, lanes) if tier == "mve" else 0
    summed = tier == "mve" and value(p, "fc_params.input_offset", 1) != 0
    if tier == "mve" and not summed:
        vsum = 0  # arm_vector_sum_s8's early exit (lhs_offset 0): the buffer zeroed, no sums
    rhs_offset = value(p, "fc_params.filter_offset", 0) != 0
    # DSP: per-pass loop entries, the offset splitting only the K/4 blocks (_bmm_dsp_features);
    # elsewhere the loop-entry features stay FC's (with every feature split by the offset they
    # outnumbered what the batch-matmul sweep could tell apart: held-out 22-32% on the DSP cores)
    if tier == "dsp" and not tflm_build:
        return _bmm_dsp_features(groups, rows, c, k, rhs_offset)
    mat = {key: v for key, v in _vec_mat_cmsis(tier, rows, c, k).items() if not key.endswith("block_rows")}
    # arm_nn_vec_mat_mult_t_s8 runs another loop nest when its rhs_offset (the filter offset) is
    # not 0 (`if (rhs_offset)`: the offset added to each weight, SXTAB16 / an add per MAC; MVE:
    # the LHS summed per pass): the same groups, blocks and tails, priced apart (``off_*``)
    prefix = "off_" if rhs_offset else ""
    features = {"call": 1.0, "groups": float(groups), "batches": float(groups * rows),
                "outputs": float(groups * rows * c),
                "vsum_rows": float(groups * c if tier == "mve" else 0), "vsum_blocks": float(groups * vsum),
                "vsum_tail": 0.0,
                # MVE: arm_vector_sum_s8's cols·rhs_offset term per row
                "vsum_offset_rows": float(groups * c if summed and rhs_offset else 0)}  # fmt: skip
    for key, v in mat.items():
        features[key] = 0.0
        features["off_" + key] = 0.0
        features[prefix + key] = float(groups * v)
    return features


def _bmm_dsp_features(groups: int, rows: int, c: int, k: int, rhs_offset: bool) -> Features:
    """The DSP batch matmul (:func:`_bmm_cmsis_features`): per LHS row, the vec-mat's pair
    loop set-up when C >= 2 (pair_loops), its pair passes (group_rows) and odd row (odd_rows), each requantizing its outputs, entering the K/4
    SMLAD loop when K >= 4 (group_block_rows / odd_block_rows: its unrolled prologue picks the
    trip count mod 4; K < 4 branches past it), running it (group_blocks / odd_blocks) and,
    when K has a tail, entering the K mod 4 tail
    loop (group_tail_rows / odd_tail_rows) for its 1-3 scalar MACs (group_tail / odd_tail).
    With a filter offset the vec-mat runs its other loop nest, whose K/4 loop adds the offset
    to each weight (SXTAB16): only its blocks are priced apart (``off_*``); the pass set-up,
    requantization and tail loop are the same instructions in both nests, so they share
    coefficients. (issue 18: one weight row over K 31 was priced +35%; with rows, tails and
    tail entries split by the offset, the sweep's one-row and tail shapes could not pin them
    apart and the tail MACs came out 5 cycles in one nest and 23 in the other.)"""
    full, odd = divmod(c, 2)
    blocks, tail = divmod(k, 4)
    prefix = "off_" if rhs_offset else ""
    f = {"call": 1.0, "groups": float(groups), "batches": float(groups * rows),
         # the pair loop's set-up (its offsets packed, pointers and counts spilled: ~40
         # instructions) runs per vec-mat call only when there is a pair (C >= 2)
         "pair_loops": float(groups * rows * (full != 0)),
         "group_rows": float(groups * rows * full), "odd_rows": float(groups * rows * odd),
         "group_block_rows": float(groups * rows * full * (blocks != 0)),
         "odd_block_rows": float(groups * rows * odd * (blocks != 0)),
         "group_tail_rows": float(groups * rows * full * (tail != 0)),
         "odd_tail_rows": float(groups * rows * odd * (tail != 0)),
         "group_tail": float(groups * rows * full * tail), "odd_tail": float(groups * rows * odd * tail),
         "group_blocks": 0.0, "odd_blocks": 0.0, "off_group_blocks": 0.0, "off_odd_blocks": 0.0}  # fmt: skip
    f[prefix + "group_blocks"] = float(groups * rows * full * blocks)
    f[prefix + "odd_blocks"] = float(groups * rows * odd * blocks)
    return f


def _bmm_zero_offset_features(p: Params, tier: str) -> Features:
    """TFLM's -O2 build of the batch matmul, fitted (and measured) on filter offset 0 only: the
    features without the rhs_offset loop nest (:func:`_bmm_cmsis_features`)."""
    features = _bmm_cmsis_features({**p, "fc_params.filter_offset": 0}, tier, tflm_build=True)
    return {k: v for k, v in features.items() if not k.startswith("off_") and k != "vsum_offset_rows"}


def _bmm_macs(p: Params) -> int:
    groups, rows, c, k = _bmm_shape(p)
    return groups * rows * c * k


def _bmm_bytes(p: Params) -> tuple[int, int]:
    lhs, rhs = dims(p, "input_lhs_dims"), dims(p, "input_rhs_dims")
    groups, rows, c, _ = _bmm_shape(p)
    return lhs.n * lhs.h * lhs.w * lhs.c + rhs.n * rhs.h * rhs.w * rhs.c, groups * rows * c


def _vsum_features_kernels_c(p: Params, tier: str, arch: str | None = None) -> Features:
    rows, cols = value(p, "vector_rows"), value(p, "vector_cols")
    lanes = BLOCKING[tier].reduce_lanes
    blocks = rows * (ceil_div(cols, lanes) if tier == "mve" else cols // lanes)
    tail = 0 if tier == "mve" else rows * (cols % lanes)
    return {"call": 1.0, "outputs": float(rows), "blocks": float(blocks), "k_tail": float(tail)}


def _vsum_features(p: Params, tier: str, arch: str | None = None, *, passes: bool = True) -> Features:
    """CMSIS-NN's arm_vector_sum_s8: the bias copied first (``memcpy``/``memset`` of the rows'
    int32: ``copied`` = rows), then, only when ``lhs_offset`` is not 0, kernels_c's features, and on
    MVE the rows five at a time (one 16-column trip loads and sums five rows), then the
    ``rows mod 5`` rows one at a time, each of their ⌈cols/16⌉ trips a whole loop pass for one row:
    tail_blocks = (rows mod 5)·⌈cols/16⌉; ``offset_rows`` = rows when ``rhs_offset`` is not 0 too
    (its ``cols · rhs_offset`` term per row). With ``lhs_offset`` 0 the call returns after the copy
    (a sum times 0 adds nothing): the early exit ExecuTorch's per-tensor linear with input zero
    point 0 takes. On ARMv6-M newlib's generic ``memcpy`` copies fewer than 16 bytes (3 rows or
    fewer) in its byte loop: ``copy_bytes`` = 4·rows there, in place of ``copied`` and of the
    word path's set-up (``copy_long`` = 1 for the longer copies).

    MVE (``passes``; TFLM's -O2 file keeps the features above, which it was fitted with): a
    five-row pass and a single-row pass cost apart from their rows, and the single rows' loop
    apart from its trips: ``five_passes`` = ⌊rows/5⌋, ``five_blocks`` = ⌊rows/5⌋·⌈cols/16⌉
    (one trip loads and sums five rows), ``five_loop`` = 1 when there is a five-row pass (the
    loop's entry), ``tail_rows`` = rows mod 5, ``tail_blocks`` as above, ``tail_loop`` = 1 when
    rows mod 5 is not 0, in place of the per-row ``outputs`` and
    ``blocks``; a NULL bias is a ``memset`` of the buffer, not a ``memcpy`` (``null_bias``). The
    random-case tail (issue 18): calls of 1-8 rows, priced -27% with the per-row terms of a
    sweep whose smallest call had 5 rows."""
    rows = value(p, "vector_rows")
    v6m = arch == "armv6-m"
    short = v6m and 4 * rows < 16
    f = {
        "copied": float(0 if short else rows),
        "copy_bytes": float(4 * rows if short else 0),
        "copy_long": float(v6m and not short),
        **_vsum_features_kernels_c(p, tier),
    }
    if tier == "mve":
        trips = ceil_div(value(p, "vector_cols"), 16)
        f["tail_blocks"] = float((rows % 5) * trips)
        if passes:
            del f["outputs"], f["blocks"], f["k_tail"]
            f.update({"five_passes": float(rows // 5), "five_blocks": float(rows // 5 * trips),
                      "five_loop": float(rows >= 5), "tail_rows": float(rows % 5),
                      "tail_loop": float(rows % 5 != 0)})  # fmt: skip
    summed = value(p, "lhs_offset", 1) != 0
    f["offset_rows"] = float(rows if summed and value(p, "rhs_offset", 0) != 0 else 0)
    if not summed:
        f.update({k: 0.0 for k in f if k not in ("call", "copied", "copy_bytes", "copy_long")})
    if tier == "mve" and passes:
        f["null_bias"] = float(bool(value(p, "bias_is_null", 0)))
    return f


def _vsum_macs(p: Params) -> int:
    return value(p, "vector_rows") * value(p, "vector_cols")


def _vsum_bytes(p: Params) -> tuple[int, int]:
    return _vsum_macs(p), 4 * value(p, "vector_rows")


FORMULAS: dict[str, Formula] = {
    f.key: f
    for f in (
        Formula("arm_fully_connected_s8", "arm_fully_connected_s8", _fc_cmsis_features, _fc_macs, _fc_bytes,
                "per-tensor requantization", library_features=(("kernels_c", _fc_kernels_c_features),)),
        Formula("arm_fully_connected_per_channel_s8", "arm_fully_connected_per_channel_s8", _fc_cmsis_features,
                _fc_macs, _fc_bytes, "per-channel requantization", library_features=(("kernels_c", _fc_kernels_c_features),)),
        Formula("arm_batch_matmul_s8", "arm_batch_matmul_s8", _bmm_cmsis_features, _bmm_macs, _bmm_bytes,
                "LHS · RHSᵀ per (batch, head), broadcast", library_features=(("kernels_c", _bmm_kernels_c_features),
                                                     ("cmsis-nn-tflm", _bmm_zero_offset_features))),
        Formula("arm_vector_sum_s8", "arm_vector_sum_s8", _vsum_features, _vsum_macs, _vsum_bytes,
                "kernel sums (ahead of time in ExecuTorch's MVE linear)",
                library_features=(("kernels_c", _vsum_features_kernels_c),
                                  ("cmsis-nn-tflm", lambda p, t, arch=None: _vsum_features(p, t, arch, passes=False))),
                by_arch=True),
    )
}  # fmt: skip


def route(function: str, p: Params, tier: str) -> str:
    return function


def fc_params(n: int, k: int, c: int) -> dict[str, int]:
    p = {"input_dims.n": n, "input_dims.h": 1, "input_dims.w": 1, "input_dims.c": k}
    p.update({"filter_dims.n": k, "filter_dims.h": 1, "filter_dims.w": 1, "filter_dims.c": c})
    p.update({"output_dims.n": n, "output_dims.h": 1, "output_dims.w": 1, "output_dims.c": c})
    return p


def bmm_params(batch: int, heads: int, rows: int, cols: int, k: int) -> dict[str, int]:
    p: dict[str, int] = {}
    for name, dd in (("input_lhs_dims", (batch, heads, rows, k)), ("input_rhs_dims", (batch, heads, cols, k)),
                     ("output_dims", (batch, heads, rows, cols))):  # fmt: skip
        for key, v in zip("nhwc", dd, strict=True):
            p[f"{name}.{key}"] = v
    return p


__all__ = ["FAMILY", "FORMULAS", "bmm_params", "fc_params", "route"]

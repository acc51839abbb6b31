"""The designed calibration sweep of the depthwise family (:mod:`isa_models.cortex_m.depthwise`): designed shapes per route (3x3, _opt, generic, MVE one-channel inputs) and seeded draws between them.
Loaded by ``refsim calibrate`` and the tests only (:func:`isa_models.cortex_m.formulas.sweep`), never by
an estimate. Shapes appended later go last, so the earlier ones keep their fit / held-out roles
(refsim's ``sweep_calls`` holds out every 4th shape of a route).
"""

from __future__ import annotations

import numpy as np

from isa_models.cortex_m.depthwise import PUBLIC_WRAPPER
from isa_models.shapes import ceil_div


def _shape(x, k, ch_mult=1, stride=(1, 1), padding=None, dilation=(1, 1)) -> dict[str, int]:
    n, h, w, c = x
    kh, kw = k
    out, pads = [], []
    for size, kk, st, dd, pd in zip((h, w), (kh, kw), stride, dilation, padding or (None, None), strict=True):
        extent = dd * (kk - 1) + 1
        if pd is None:
            o = ceil_div(size, st)
            pd = max((o - 1) * st + extent - size, 0) // 2
        else:
            o = (size + 2 * pd - extent) // st + 1
        out.append(o)
        pads.append(pd)
    oc = c * ch_mult
    p: dict[str, int] = {"ch_mult": ch_mult}
    for name, dd in (("input_dims", (n, h, w, c)), ("filter_dims", (1, kh, kw, oc)),
                     ("output_dims", (n, out[0], out[1], oc))):  # fmt: skip
        for key, v in zip("nhwc", dd, strict=True):
            p[f"{name}.{key}"] = v
    p.update({"stride.h": stride[0], "stride.w": stride[1], "padding.h": pads[0], "padding.w": pads[1]})
    p.update({"dilation.h": dilation[0], "dilation.w": dilation[1]})
    return p


def sweep() -> list[tuple[str, dict[str, int]]]:
    """Designed shapes per route: 3x3 (KWS/VWW-like), opt (other windows), generic (ch_mult,
    dilation, batch) and, for MVE, one-channel inputs that become convolutions."""
    w = PUBLIC_WRAPPER
    three = [_shape(x, (3, 3), stride=s) for x, s in (
        ((1, 25, 5, 64), (1, 1)), ((1, 12, 12, 32), (1, 1)), ((1, 24, 24, 16), (2, 2)), ((1, 10, 10, 13), (1, 1)),
        ((1, 6, 6, 128), (1, 1)), ((1, 16, 16, 8), (2, 2)), ((1, 8, 8, 36), (1, 1)), ((1, 12, 12, 64), (2, 2)),
        ((1, 5, 5, 7), (1, 1)), ((1, 20, 20, 24), (1, 1)),
    )]  # fmt: skip
    opt = [_shape(x, k, stride=s, padding=pd) for x, k, s, pd in (
        ((1, 12, 12, 16), (5, 5), (1, 1), None), ((1, 10, 10, 32), (3, 3), (1, 1), (2, 2)),
        ((1, 16, 16, 12), (2, 2), (2, 2), (0, 0)), ((1, 9, 9, 20), (4, 4), (1, 1), None),
        ((1, 8, 8, 64), (5, 5), (2, 2), None), ((1, 14, 14, 9), (3, 1), (1, 1), None),
        ((1, 6, 6, 48), (7, 7), (1, 1), None), ((1, 12, 12, 24), (3, 5), (2, 1), None),
    )]  # fmt: skip
    generic = [_shape(x, k, ch_mult=m, stride=s, dilation=d) for x, k, m, s, d in (
        ((1, 10, 10, 8), (3, 3), 2, (1, 1), (1, 1)), ((1, 8, 8, 4), (3, 3), 4, (1, 1), (1, 1)),
        ((2, 8, 8, 16), (3, 3), 1, (1, 1), (1, 1)), ((1, 12, 12, 16), (3, 3), 1, (1, 1), (2, 2)),
        ((1, 9, 9, 6), (5, 5), 3, (2, 2), (1, 1)), ((1, 12, 12, 3), (3, 3), 8, (2, 2), (1, 1)),
        ((2, 6, 6, 10), (2, 2), 2, (1, 1), (1, 1)), ((1, 16, 8, 12), (3, 3), 2, (1, 2), (1, 1)),
        # dilated windows (integer divisions per output and dilated axis), ch_mult 1 and more
        ((1, 10, 10, 8), (3, 3), 1, (1, 1), (1, 2)), ((1, 12, 8, 6), (3, 3), 2, (1, 1), (2, 1)),
        ((1, 14, 14, 4), (3, 3), 4, (1, 1), (3, 3)), ((1, 9, 12, 10), (2, 3), 1, (2, 1), (2, 2)),
        ((1, 16, 10, 6), (3, 2), 2, (2, 2), (2, 3)), ((1, 8, 16, 12), (2, 2), 1, (1, 2), (1, 4)),
        ((1, 11, 11, 5), (3, 3), 3, (1, 1), (2, 2)), ((1, 7, 9, 16), (5, 3), 1, (1, 1), (1, 2)),
    )]  # fmt: skip
    three += [
        _shape(x, (3, 3), stride=st) for x, st in _drawn_dw(21, 14, channels=(4, 8, 13, 16, 32, 64, 96))
    ]
    opt += [_shape(x, k, stride=st) for (x, st), k in zip(
        _drawn_dw(22, 14, channels=(4, 8, 12, 16, 24, 32, 48)), _kernels(23, 14), strict=True)]  # fmt: skip
    rng = np.random.default_rng(24)
    for x, st in _drawn_dw(25, 14, channels=(2, 3, 4, 6, 8, 12)):
        generic.append(_shape(x, (3, 3), ch_mult=int(rng.choice([2, 3, 4, 8])), stride=st))
    # ch_mult 1 on the generic route (dilated or batched): its loops are not the ch_mult > 1 ones
    # (kernels_c: the chunked 4/8-channel passes; CMSIS-NN: one output per input channel), so it
    # needs shapes of its own that vary window width, channel tails and clipping. Appended last,
    # so the shapes above keep their fit / held-out roles.
    generic_ch1 = [_shape(x, k, stride=s, dilation=d) for x, k, s, d in (
        ((1, 10, 10, 12), (3, 1), (1, 1), (2, 1)), ((2, 6, 6, 20), (3, 3), (1, 1), (1, 1)),
        ((1, 12, 10, 8), (5, 5), (1, 1), (2, 1)), ((1, 9, 9, 13), (3, 3), (2, 2), (2, 2)),
        ((2, 5, 7, 24), (2, 4), (1, 1), (1, 1)), ((1, 14, 8, 6), (4, 2), (1, 1), (3, 1)),
        ((1, 8, 12, 32), (1, 3), (1, 2), (1, 2)), ((2, 8, 6, 9), (3, 5), (1, 1), (1, 1)),
        ((1, 11, 11, 4), (2, 2), (1, 1), (3, 3)), ((1, 10, 14, 18), (3, 4), (2, 1), (1, 2)),
        ((2, 7, 7, 40), (2, 1), (2, 2), (1, 1)), ((1, 12, 12, 11), (5, 3), (1, 1), (2, 2)),
    )]  # fmt: skip
    # More one-channel inputs (MVE: the route to a convolution, 6 shapes were too few to fit the
    # convolution's features); appended last for the same reason.
    to_conv_more = [_shape(x, k, ch_mult=m, stride=s, padding=pd) for x, k, m, s, pd in (
        ((1, 12, 12, 1), (3, 3), 8, (1, 1), None), ((1, 16, 10, 1), (3, 2), 12, (2, 2), None),
        ((1, 9, 9, 1), (5, 5), 16, (1, 1), (0, 0)), ((1, 20, 8, 1), (4, 3), 6, (1, 1), None),
        ((1, 10, 14, 1), (2, 2), 40, (2, 2), (0, 0)), ((1, 8, 8, 1), (3, 3), 96, (1, 1), None),
        ((1, 14, 10, 1), (3, 5), 10, (2, 1), None), ((1, 6, 12, 1), (2, 4), 28, (1, 1), None),
    )]  # fmt: skip
    return [(w, s) for s in three + opt + generic + [s for _f, s in sweep_mve()] + generic_ch1 + to_conv_more]


def _drawn_dw(seed: int, count: int, *, channels) -> list[tuple[tuple[int, int, int, int], tuple[int, int]]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        x = (1, int(rng.choice([5, 6, 8, 10, 12, 16, 24])), int(rng.choice([5, 6, 8, 10, 12, 16])),
             int(rng.choice(channels)))  # fmt: skip
        out.append((x, (int(rng.choice([1, 1, 2])),) * 2))
    return out


def _kernels(seed: int, count: int) -> list[tuple[int, int]]:
    rng = np.random.default_rng(seed)
    return [(int(rng.choice([2, 4, 5, 7])), int(rng.choice([1, 3, 4, 5]))) for _ in range(count)]


def sweep_mve() -> list[tuple[str, dict[str, int]]]:
    """One-channel inputs with many outputs: the MVE wrapper's route to a convolution."""
    return [(PUBLIC_WRAPPER, _shape(x, k, ch_mult=m)) for x, k, m in (
        ((1, 16, 16, 1), (3, 3), 16), ((1, 12, 12, 1), (5, 5), 24), ((1, 20, 10, 1), (3, 3), 32),
        ((1, 8, 8, 1), (3, 3), 64), ((1, 10, 10, 1), (4, 4), 20), ((1, 14, 14, 1), (3, 3), 48),
    )]  # fmt: skip


def cmsis_nn_sweep() -> list[tuple[str, dict[str, int]]]:
    """Shapes measured on CMSIS-NN builds only (:func:`isa_models.cortex_m.formulas.sweep`).

    issue 18: ``arm_depthwise_conv_3x3_s8`` called directly (as ``refsim conformance`` calls
    it; the MVE build never routes to it, so its files skip these) on the small shapes the
    random-case table (d) found the sweep lacked: single pixels, one output row or column,
    strides up to 3, channel counts 1-9 (all-leftover and odd tails), a padded top of 2 rows."""
    three = [_shape(x, (3, 3), stride=s, padding=pd) for x, s, pd in (
        ((1, 1, 1, 2), (1, 1), None), ((1, 3, 3, 5), (3, 3), (0, 0)), ((1, 4, 5, 1), (2, 2), (0, 1)),
        ((1, 2, 4, 1), (1, 3), (1, 1)), ((1, 4, 3, 9), (2, 2), (0, 0)), ((1, 1, 12, 2), (3, 3), (1, 0)),
        ((1, 1, 6, 7), (1, 3), (1, 0)), ((1, 3, 1, 9), (3, 2), (2, 1)), ((1, 3, 11, 1), (3, 2), (0, 1)),
        ((1, 1, 2, 8), (3, 3), (1, 1)), ((1, 2, 2, 3), (1, 1), None), ((1, 5, 4, 6), (2, 1), (1, 1)),
        ((1, 1, 1, 13), (1, 1), None), ((1, 6, 2, 4), (1, 2), (2, 1)), ((1, 2, 7, 11), (2, 2), None),
        ((1, 4, 4, 3), (3, 1), (1, 0)), ((1, 7, 3, 10), (1, 1), (0, 0)), ((1, 2, 9, 5), (1, 2), (1, 1)),
        ((1, 9, 9, 2), (2, 3), None), ((1, 1, 4, 17), (1, 1), None),
    )]  # fmt: skip
    # ``arm_depthwise_conv_s8_opt`` called directly: odd channel counts (the 2·C-byte memsets of
    # padded taps end in newlib's byte loop; the channel tail's tap loop) and inputs narrower
    # than the window, padded left and right (the DSP column buffer's per-tap memsets), where
    # the shared sweep's channels were multiples of 4 but one
    opt = [_shape(x, k, stride=s, padding=pd) for x, k, s, pd in (
        ((1, 9, 1, 9), (5, 5), (3, 2), (2, 3)), ((1, 8, 1, 9), (4, 5), (1, 1), (1, 2)),
        ((1, 12, 3, 5), (4, 5), (2, 1), (3, 4)), ((1, 10, 2, 3), (2, 4), (3, 1), (0, 1)),
        ((1, 11, 2, 7), (2, 5), (3, 2), (1, 3)), ((1, 6, 2, 9), (3, 4), (3, 1), (0, 1)),
        ((1, 7, 5, 1), (3, 5), (1, 1), (1, 2)), ((1, 5, 4, 11), (5, 3), (1, 2), (2, 1)),
        ((1, 6, 6, 6), (4, 4), (2, 2), (1, 2)), ((1, 3, 9, 2), (2, 6), (1, 1), (0, 3)),
        ((1, 8, 3, 13), (3, 3), (2, 1), (2, 2)), ((1, 4, 4, 10), (7, 7), (1, 1), (3, 3)),
        ((1, 1, 7, 5), (1, 4), (1, 2), (0, 2)), ((1, 9, 2, 15), (5, 2), (2, 1), (2, 1)),
        ((1, 6, 4, 4), (2, 5), (1, 3), (1, 4)), ((1, 7, 7, 3), (5, 5), (2, 2), None),
    )]  # fmt: skip
    return [("arm_depthwise_conv_3x3_s8", s) for s in three] + [("arm_depthwise_conv_s8_opt", s) for s in opt]


def _mve_shapes() -> list[tuple[str, dict[str, int]]]:
    """Shapes measured on CMSIS-NN's MVE builds only (:func:`isa_models.cortex_m.formulas.sweep`):
    off MVE a one-channel depthwise is not a convolution."""
    # One-channel inputs (MVE: the route to arm_convolve_wrapper_s8 after a transpose of the
    # filter), small: batches of 1-3, 1-9 output pixels an image, 2-24 output channels, 1x1 to
    # 5x5 windows, strides up to 3 and dilation; the shared sweep's were layer-sized single
    # images, so its fit put the work of small calls in a per-call term of ~1,900 cycles
    to_conv = [_shape(x, k, ch_mult=m, stride=s, padding=pd, dilation=d) for x, k, m, s, pd, d in (
        ((2, 4, 4, 1), (2, 2), 3, (2, 2), (0, 0), (1, 1)), ((1, 3, 3, 1), (3, 3), 2, (1, 1), (0, 0), (1, 1)),
        ((3, 5, 2, 1), (2, 1), 5, (2, 1), (0, 0), (1, 1)), ((1, 6, 6, 1), (1, 1), 9, (2, 3), (0, 0), (1, 1)),
        ((2, 7, 3, 1), (3, 2), 4, (3, 2), (1, 0), (1, 1)), ((1, 2, 9, 1), (1, 4), 7, (1, 3), (0, 1), (1, 1)),
        ((1, 5, 5, 1), (5, 5), 3, (3, 3), (2, 2), (1, 1)), ((2, 3, 6, 1), (2, 3), 16, (1, 2), (0, 0), (1, 1)),
        ((1, 8, 3, 1), (4, 2), 11, (2, 1), None, (1, 1)), ((3, 2, 2, 1), (2, 2), 6, (1, 1), (0, 0), (1, 1)),
        ((1, 9, 7, 1), (2, 2), 8, (2, 2), (0, 0), (3, 3)), ((2, 4, 5, 1), (1, 1), 13, (1, 2), (0, 0), (1, 1)),
        ((1, 3, 8, 1), (3, 3), 24, (2, 2), None, (1, 1)), ((2, 6, 2, 1), (4, 1), 9, (1, 1), (0, 0), (1, 1)),
        ((1, 12, 1, 1), (5, 1), 4, (2, 1), (2, 0), (1, 1)), ((3, 3, 4, 1), (1, 3), 2, (2, 1), (0, 1), (1, 1)),
    )]  # fmt: skip
    # .. and a seeded space-filling draw of small ones between them (the convolution's features
    # and the filter transpose's are more than 16 shapes pin apart)
    rng = np.random.default_rng(21)
    while len(to_conv) < 48:
        k = (int(rng.integers(1, 6)), int(rng.integers(1, 6)))
        d = (int(rng.choice([1, 1, 1, 2, 3])),) * 2
        st = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
        x = (int(rng.integers(1, 4)), int(rng.integers(1, 11)), int(rng.integers(1, 11)), 1)
        pd = tuple(int(rng.integers(0, kk)) for kk in k)
        shape = _shape(
            x,
            k,
            ch_mult=int(rng.choice([2, 3, 4, 5, 7, 8, 9, 12, 16, 20])),
            stride=st,
            padding=pd,
            dilation=d,
        )
        if min(shape["output_dims.h"], shape["output_dims.w"]) > 0:
            to_conv.append(shape)
    return [(PUBLIC_WRAPPER, s) for s in to_conv]


def cmsis_nn_tier_sweep(tier: str) -> list[tuple[str, dict[str, int]]]:
    """Shapes measured on one tier's CMSIS-NN files only (:func:`isa_models.cortex_m.formulas.sweep`).

    Scalar: the generic kernel dilated over inputs wide enough for window-bound quotients from
    16, the one branch of ARMv6-M's software division (:func:`isa_models.cortex_m.depthwise._v6m_divisions`)
    that the shared sweep never took (issue 18: the M0+'s dilated random cases, priced up to +44%
    with one cost per division). Ten small dilated calls (1-3 output pixels, strides over the
    window) were tried too: one of them, with no MAC at all, held out at +12.6% on the M0+ (its
    requantization and clamps branch on the data; the shared sweep's shapes held out at 0.2%). On MVE: `_mve_shapes`."""
    if tier == "mve":
        return _mve_shapes()
    if tier != "scalar":
        return []
    generic = [_shape(x, k, ch_mult=m, stride=s, padding=pd, dilation=d) for x, k, m, s, pd, d in (
        ((1, 2, 40, 3), (1, 3), 2, (1, 1), None, (1, 2)), ((1, 36, 2, 2), (3, 1), 2, (1, 1), None, (2, 1)),
    )]  # fmt: skip
    return [(PUBLIC_WRAPPER, s) for s in generic]


__all__ = ["cmsis_nn_sweep", "cmsis_nn_tier_sweep", "sweep"]

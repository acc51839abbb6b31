"""The designed calibration sweep of the convolution family (:mod:`isa_models.cortex_m.conv`): per route,
hand-picked shapes that pin the corners (odd tails, padding, strides, real layers) and a seeded
space-filling draw between them. Shapes appended later go last, so the earlier ones keep their
fit / held-out roles (refsim's ``sweep_calls`` holds out every 4th shape of a route).
"""

from __future__ import annotations

import numpy as np

from isa_models.shapes import ceil_div
from kernels_py import conv


def _shape(
    x: tuple[int, int, int, int],
    f: tuple[int, int, int],
    stride: tuple[int, int] = (1, 1),
    padding: tuple[int, int] | None = None,
    dilation: tuple[int, int] = (1, 1),
    groups: int = 1,
) -> dict[str, int]:
    """A conv call's params (VECTORS.md names); ``padding`` None = TFLite SAME."""
    n, h, w, c = x
    oc, kh, kw = f
    p: dict[str, int] = {}
    out = []
    pads = []
    for size, k, st, d, pd in zip((h, w), (kh, kw), stride, dilation, padding or (None, None), strict=True):
        extent = d * (k - 1) + 1
        if pd is None:
            o = ceil_div(size, st)
            pd = max((o - 1) * st + extent - size, 0) // 2
        else:
            o = conv.conv_output_size(size, k, st, pd, d)
        out.append(o)
        pads.append(pd)
    for name, dd in (("input_dims", (n, h, w, c)), ("filter_dims", (oc, kh, kw, c // groups)),
                     ("output_dims", (n, out[0], out[1], oc))):  # fmt: skip
        for k_, v in zip("nhwc", dd, strict=True):
            p[f"{name}.{k_}"] = v
    p.update({"stride.h": stride[0], "stride.w": stride[1], "padding.h": pads[0], "padding.w": pads[1]})
    p.update({"dilation.h": dilation[0], "dilation.w": dilation[1]})
    return p


def sweep() -> list[tuple[str, dict[str, int]]]:
    """The designed calibration shapes: (public function, params). Each route gets shapes that
    vary pixels, channels and depth independently, including odd tails and real layers."""
    w = "arm_convolve_wrapper_s8"
    general = [
        _shape((1, 12, 12, 8), (16, 3, 3)),
        _shape((1, 16, 16, 3), (16, 3, 3), stride=(2, 2)),
        _shape((1, 10, 10, 16), (8, 3, 3), padding=(0, 0)),
        _shape((1, 8, 8, 5), (7, 5, 5)),
        _shape((1, 25, 5, 1), (64, 10, 4), stride=(2, 2)),  # KWS first layer, shrunk
        _shape((1, 9, 9, 12), (13, 3, 3), dilation=(2, 2)),
        _shape((2, 6, 6, 4), (9, 3, 2)),
        _shape((1, 16, 16, 16), (16, 3, 3)),  # IC conv
        _shape((1, 12, 12, 32), (32, 3, 3), stride=(2, 2)),
        _shape((1, 7, 7, 3), (5, 3, 3)),
        _shape((1, 8, 8, 16), (16, 3, 3), groups=2),
        _shape((1, 14, 14, 6), (24, 3, 3)),
    ]
    fast = [_shape((1, h, wd, c), (oc, 1, 1)) for h, wd, c, oc in (
        (8, 8, 16, 16), (12, 12, 32, 32), (6, 6, 64, 24), (5, 5, 7, 9), (10, 10, 24, 48),
        (4, 4, 128, 64), (25, 5, 64, 64), (3, 7, 33, 17), (12, 12, 8, 64), (6, 6, 96, 96),
    )]  # fmt: skip
    strided = [_shape((1, h, wd, c), (oc, 1, 1), stride=s) for h, wd, c, oc, s in (
        (16, 16, 16, 32, (2, 2)), (12, 12, 32, 64, (2, 2)), (9, 9, 12, 8, (3, 3)), (8, 8, 64, 32, (2, 2)),
        (10, 10, 24, 24, (2, 1)), (14, 14, 7, 13, (2, 2)), (16, 16, 32, 16, (2, 2)), (6, 6, 48, 48, (2, 2)),
    )]  # fmt: skip
    one_x_n = [_shape((1, 1, wd, c), (oc, 1, k), padding=(0, pad)) for wd, c, oc, k, pad in (
        (64, 32, 32, 5, 2), (40, 16, 24, 3, 1), (100, 8, 16, 7, 0), (32, 64, 64, 3, 1),
        (50, 4, 12, 9, 4), (24, 20, 20, 5, 0), (80, 12, 8, 3, 1), (16, 96, 48, 4, 0),
    )]  # fmt: skip
    t = "arm_transpose_conv_wrapper_s8"
    transposed = []
    for x, f, s in (
        ((1, 4, 4, 8), (8, 3, 3), (2, 2)), ((1, 6, 6, 4), (6, 2, 2), (2, 2)), ((1, 5, 5, 12), (4, 3, 3), (3, 3)),
        ((1, 8, 8, 6), (10, 3, 3), (1, 1)), ((1, 3, 7, 16), (8, 4, 4), (2, 2)), ((1, 6, 6, 10), (16, 3, 3), (3, 3)),
        ((1, 8, 8, 3), (5, 5, 5), (2, 2)), ((1, 4, 6, 8), (12, 2, 2), (2, 2)),
    ):  # fmt: skip
        transposed.append(_transpose_shape(x, f, s))
    reverse = [_transpose_shape(x, f, s) for x, f, s in (
        ((1, 4, 4, 24), (8, 3, 3), (2, 2)), ((1, 6, 6, 32), (16, 3, 3), (2, 2)), ((1, 5, 5, 20), (12, 2, 2), (2, 2)),
        ((1, 8, 8, 17), (8, 3, 3), (1, 1)), ((1, 4, 8, 48), (16, 4, 4), (2, 2)), ((1, 6, 6, 64), (8, 3, 3), (2, 2)),
        ((1, 3, 3, 32), (32, 3, 3), (2, 2)), ((1, 7, 5, 24), (6, 3, 3), (1, 2)),
    )]  # fmt: skip
    general += _drawn(11, 40, _draw_general)
    fast += _drawn(12, 16, _draw_fast)
    strided += _drawn(13, 16, _draw_strided)
    one_x_n += _drawn(14, 16, _draw_1_x_n)
    transposed += _drawn(15, 24, lambda r: _draw_transpose(r, reverse=False))
    reverse += _drawn(16, 12, lambda r: _draw_transpose(r, reverse=True))
    # More reverse-route shapes (15 fit shapes could not pin its im2col, mat-mult and filter
    # reversal loops apart): C_IN with and without 16-lane tails, strides 1/2 per axis, 1-5 taps.
    # Appended last, so the shapes above keep their fit / held-out roles.
    reverse_more = [_transpose_shape(x, f, s) for x, f, s in (
        ((1, 5, 5, 33), (8, 3, 3), (2, 2)), ((1, 6, 4, 20), (12, 3, 2), (1, 1)), ((1, 4, 4, 40), (4, 5, 5), (2, 2)),
        ((1, 3, 6, 18), (16, 2, 3), (2, 1)), ((1, 6, 6, 24), (8, 1, 3), (1, 2)), ((1, 4, 5, 48), (6, 3, 3), (2, 2)),
        ((1, 7, 3, 32), (10, 4, 2), (1, 1)), ((1, 3, 4, 17), (24, 3, 4), (2, 2)), ((1, 5, 3, 64), (4, 2, 1), (2, 2)),
        ((1, 4, 7, 28), (8, 3, 3), (1, 2)), ((1, 2, 5, 96), (8, 3, 3), (2, 2)), ((1, 6, 5, 21), (5, 2, 2), (2, 2)),
    )]  # fmt: skip
    return [(w, s) for s in general + fast + strided + one_x_n] + [
        (t, s) for s in transposed + reverse + reverse_more
    ]


def cmsis_nn_sweep() -> list[tuple[str, dict[str, int]]]:
    """Shapes measured on CMSIS-NN builds only (:func:`isa_models.cortex_m.formulas.sweep`)."""
    # issue 18: arm_transpose_conv_s8 called directly (the row-buffer route for every shape, as
    # `refsim conformance` calls it) with C_IN over 16 (MVE: several 16-lane passes per tap,
    # where the shapes above had one), unequal strides, batches and single pixels. One stride is 3
    # where C_IN > 16 (the wrapper's size query gives the row buffer) and stride.w <= max(KW,
    # stride.h) (CMSIS-NN's get_buffer_size undersizes the buffer otherwise: docs/numerics.md).
    direct = [_transpose_shape(x, f, s) for x, f, s in (
        ((1, 2, 4, 24), (4, 4, 3), (3, 1)), ((1, 4, 2, 21), (8, 2, 5), (3, 1)), ((1, 1, 3, 22), (6, 4, 4), (3, 3)),
        ((1, 5, 3, 17), (7, 3, 4), (3, 2)), ((2, 3, 4, 21), (4, 3, 4), (3, 2)), ((1, 2, 3, 33), (8, 2, 4), (3, 1)),
        ((1, 3, 5, 40), (3, 3, 3), (3, 3)), ((2, 2, 2, 20), (5, 2, 3), (3, 3)), ((1, 4, 4, 48), (2, 3, 3), (3, 1)),
        ((1, 2, 1, 1), (1, 1, 2), (1, 1)), ((2, 2, 1, 5), (3, 2, 1), (3, 1)), ((1, 3, 3, 18), (9, 2, 3), (3, 3)),
        ((1, 3, 2, 7), (5, 3, 2), (1, 2)), ((2, 1, 3, 3), (4, 2, 2), (2, 1)), ((1, 2, 2, 64), (4, 2, 2), (3, 3)),
        ((1, 3, 3, 32), (6, 3, 3), (3, 3)),
    )]  # fmt: skip
    # .. and with a NULL bias (its buffer is reset by memset, not a bias copy per pixel)
    direct += [{**_transpose_shape(x, f, s), "bias_is_null": 1} for x, f, s in (
        ((1, 1, 3, 4), (1, 5, 3), (1, 2)), ((1, 2, 4, 6), (3, 3, 3), (2, 2)), ((2, 2, 2, 20), (4, 2, 3), (3, 3)),
        ((1, 3, 5, 1), (8, 4, 4), (2, 2)), ((1, 4, 3, 9), (2, 3, 2), (1, 1)),
    )]  # fmt: skip
    # ``arm_convolve_1x1_s8`` called directly on small strided calls: one mat-mult per output
    # row, so rows of 1-3 columns (the odd column each row), 1-5 output channels (the odd
    # channel), depths with a tail; the shared sweep's smallest call was ~5,000 cycles and a
    # per-call term absorbed the per-row work (issue 18: up to +240% on 300-cycle calls)
    one_by_one = [_shape(x, (oc, 1, 1), stride=s, padding=(0, 0)) for x, oc, s in (
        ((1, 3, 1, 3), 1, (2, 2)), ((1, 1, 2, 29), 2, (3, 3)), ((1, 1, 7, 4), 4, (2, 3)), ((1, 1, 2, 10), 5, (2, 1)),
        ((1, 1, 7, 16), 3, (1, 3)), ((1, 8, 2, 25), 1, (2, 3)), ((1, 2, 2, 1), 3, (2, 2)), ((2, 3, 3, 6), 2, (2, 2)),
        ((1, 5, 1, 9), 7, (2, 1)), ((1, 4, 5, 2), 1, (3, 2)), ((1, 1, 1, 33), 6, (2, 2)), ((1, 6, 3, 5), 3, (3, 1)),
        ((1, 2, 9, 12), 2, (1, 4)), ((1, 7, 4, 3), 9, (2, 2)), ((2, 2, 5, 19), 4, (1, 2)), ((1, 3, 3, 7), 11, (3, 3)),
    )]  # fmt: skip
    # .. many short rows (the per-row mat-mult call apart from the call's set-up)
    one_by_one += [_shape(x, (oc, 1, 1), stride=s, padding=(0, 0)) for x, oc, s in (
        ((1, 15, 2, 8), 2, (2, 2)), ((2, 8, 3, 5), 3, (1, 2)), ((1, 16, 1, 4), 1, (2, 1)), ((3, 5, 4, 6), 2, (2, 3)),
        ((1, 12, 5, 10), 4, (3, 2)), ((2, 9, 2, 3), 5, (3, 1)), ((1, 20, 3, 2), 2, (2, 3)), ((2, 6, 6, 7), 1, (1, 2)),
    )]  # fmt: skip
    # ``arm_convolve_1_x_n_s8`` called directly, small: valid padding whose stride leaves the
    # last input columns unread (C's asym_pad -1: the three mat-mults with a 0-row left call)
    # and SAME padding over 1-6 output columns (MVE's three mat-mults of 0-4 rows each; off MVE
    # it is arm_convolve_s8, whose fit on the shared sweep's long 1-image rows alone priced
    # single pixels, batches and strides 2-3 up to ±47%: measured on every core since issue 18's
    # 1xN row). stride.w * C_IN is a multiple of 4.
    one_by_n = [_shape(x, (oc, 1, kw), stride=(1, sw), padding=pd) for x, oc, kw, sw, pd in (
        ((1, 1, 16, 4), 3, 5, 2, (0, 0)), ((1, 1, 9, 4), 2, 4, 2, (0, 0)), ((1, 1, 3, 4), 1, 2, 3, (0, 0)),
        ((1, 1, 9, 8), 5, 2, 3, (0, 0)), ((1, 1, 4, 2), 4, 1, 2, (0, 0)), ((2, 1, 10, 4), 2, 3, 3, (0, 0)),
        ((1, 1, 5, 4), 4, 4, 3, None), ((2, 1, 4, 4), 4, 6, 1, None), ((1, 1, 1, 4), 2, 2, 2, None),
        ((1, 1, 7, 12), 8, 5, 3, None), ((1, 1, 12, 6), 1, 5, 2, None), ((1, 1, 2, 6), 3, 1, 2, None),
        ((2, 1, 11, 2), 3, 4, 2, None), ((1, 1, 6, 16), 7, 3, 1, None), ((1, 1, 4, 8), 2, 3, 2, None),
        ((1, 1, 8, 4), 5, 7, 1, None),
    )]  # fmt: skip
    return (
        [("arm_transpose_conv_s8", s) for s in direct]
        + [("arm_convolve_1x1_s8", s) for s in one_by_one]
        + [("arm_convolve_1_x_n_s8", s) for s in one_by_n]
    )


def _mve_shapes() -> list[tuple[str, dict[str, int]]]:
    """Shapes measured on CMSIS-NN's MVE builds only (:func:`isa_models.cortex_m.formulas.sweep`)."""
    # ``arm_convolve_s8`` through the wrapper, small: MVE collects its im2col columns per
    # (image, group), so batches of 2-3 images of 1-9 output pixels each (0-2 full 4-column
    # sets and 1-3 leftover columns per image), 1-3 groups, 1-13 output channels per group (the
    # C mod 4 scalar requantization of each leftover column), depths from 4 to 180 (1-12 16-lane
    # trips), strides larger than the kernel, a 7x7 kernel, a single padded pixel; the shared
    # sweep's batch was 1 (and once 2 images of 36 pixels), its output channels 4-64 a group
    general = [_shape(x, f, stride=s, padding=pd, dilation=d, groups=g) for x, f, s, pd, d, g in (
        ((2, 4, 4, 4), (5, 2, 2), (2, 2), (0, 0), (1, 1), 1), ((3, 3, 3, 2), (3, 2, 2), (1, 1), (0, 0), (1, 1), 1),
        ((2, 3, 5, 4), (2, 3, 3), (2, 2), (0, 0), (1, 1), 1), ((3, 6, 2, 1), (4, 2, 2), (2, 2), (0, 0), (1, 1), 1),
        ((1, 5, 5, 6), (7, 3, 3), (3, 3), (0, 0), (1, 1), 1), ((2, 7, 3, 8), (3, 3, 2), (2, 1), (0, 0), (1, 1), 1),
        ((1, 4, 4, 6), (6, 2, 2), (2, 2), (0, 0), (1, 1), 3), ((2, 5, 3, 6), (9, 3, 3), (2, 2), (1, 1), (1, 1), 3),
        ((3, 2, 2, 4), (2, 2, 2), (1, 1), (0, 0), (1, 1), 2), ((1, 9, 2, 3), (12, 4, 1), (3, 1), (0, 0), (1, 1), 1),
        ((2, 6, 6, 1), (1, 3, 3), (2, 2), (1, 1), (1, 1), 1), ((1, 3, 7, 20), (5, 3, 3), (2, 2), (1, 1), (1, 1), 1),
        ((2, 2, 9, 5), (10, 2, 3), (1, 3), (0, 0), (1, 1), 1), ((3, 4, 4, 3), (6, 2, 2), (1, 1), (0, 0), (2, 2), 1),
        ((1, 10, 10, 2), (3, 2, 2), (4, 4), (0, 0), (1, 1), 1), ((2, 3, 3, 12), (4, 3, 3), (1, 1), (1, 1), (1, 1), 2),
        ((1, 1, 1, 9), (11, 3, 3), (1, 1), (1, 1), (1, 1), 1), ((3, 5, 4, 7), (1, 2, 3), (2, 2), (0, 0), (1, 1), 1),
        ((1, 8, 8, 3), (8, 7, 7), (1, 1), (3, 3), (1, 1), 1), ((2, 4, 6, 10), (13, 3, 2), (3, 2), (1, 1), (1, 1), 1),
    )]  # fmt: skip
    return [("arm_convolve_wrapper_s8", s) for s in general]


def cmsis_nn_tier_sweep(tier: str) -> list[tuple[str, dict[str, int]]]:
    """Shapes measured on one tier's CMSIS-NN files only (:func:`isa_models.cortex_m.formulas.sweep`).

    Off MVE: the transpose-conv wrapper's reverse route with odd C_IN (17-23), so the filter
    reversal's and the im2col's memcpy/memset run newlib's misaligned heads and tails, and
    strides 1 on one or both axes, whose im2col sets each padded tap with its own memset
    (the shared sweep's C_IN were mostly multiples of 4, its stride-1 shapes 3: issue 18's
    reverse-conv cases, C_IN 17-24, up to +27%). MVE's copies are alignment-blind WLSTP loops.
    And small ``arm_convolve_1x1_s8_fast`` calls (below). On MVE: `_mve_shapes`."""
    if tier == "mve":
        return _mve_shapes()
    t = "arm_transpose_conv_wrapper_s8"
    reverse = [_transpose_shape(x, f, s) for x, f, s in (
        ((1, 3, 4, 21), (2, 4, 1), (1, 1)), ((1, 3, 3, 19), (6, 2, 4), (1, 1)), ((1, 3, 2, 23), (5, 5, 2), (1, 2)),
        ((2, 2, 4, 17), (3, 3, 3), (1, 1)), ((1, 4, 2, 22), (2, 2, 5), (2, 1)), ((1, 3, 3, 18), (7, 4, 4), (1, 1)),
        ((2, 3, 2, 21), (4, 3, 2), (2, 1)), ((1, 5, 3, 17), (1, 2, 3), (1, 2)), ((1, 2, 6, 23), (6, 3, 1), (1, 1)),
        ((1, 4, 4, 19), (2, 1, 4), (1, 2)), ((2, 2, 2, 22), (8, 4, 3), (1, 1)), ((1, 3, 5, 20), (3, 5, 5), (2, 1)),
    )]  # fmt: skip
    # arm_convolve_1x1_s8_fast over few pixels, batches, C_IN 1-21 (K under 4: no K/4 loop, the
    # tail alone; odd K: the tail after the blocks) and 1-24 output channels: the shared sweep's
    # smallest call was 3,000 cycles with C_IN >= 7 (issue 18: C_IN 2-6 priced up to +28% on the M7)
    fast = [_shape(x, (oc, 1, 1)) for x, oc in (
        ((1, 3, 5, 3), 6), ((2, 2, 4, 2), 16), ((1, 4, 4, 1), 8), ((3, 1, 3, 5), 4), ((2, 3, 3, 6), 2),
        ((1, 1, 7, 9), 3), ((2, 2, 5, 13), 5), ((1, 5, 2, 4), 1), ((3, 2, 2, 2), 12), ((1, 6, 1, 17), 2),
        ((2, 1, 5, 11), 7), ((1, 2, 6, 3), 24), ((2, 4, 3, 1), 10), ((1, 3, 3, 21), 9), ((2, 2, 2, 7), 1),
        ((1, 7, 2, 5), 6),
    )]  # fmt: skip
    return [(t, s) for s in reverse] + [("arm_convolve_wrapper_s8", s) for s in fast]


#: Largest drawn shape, in MACs: keeps a whole sweep to seconds under QEMU.
MAX_DRAWN_MACS = 400_000


def _drawn(seed: int, count: int, draw) -> list[dict[str, int]]:
    """``count`` shapes from ``draw`` with a fixed seed (a space-filling part of the designed
    sweep: the hand-picked shapes above pin the corners, these fill the space between)."""
    from isa_models.cortex_m.conv import conv_macs, transpose_macs  # the formulas module imports this one

    rng = np.random.default_rng(seed)
    out: list[dict[str, int]] = []
    while len(out) < count:
        p = draw(rng)
        if (
            p is not None
            and min(p["output_dims.h"], p["output_dims.w"]) > 0
            and (transpose_macs(p) if "padding_offsets.h" in p else conv_macs(p)) <= MAX_DRAWN_MACS
        ):
            out.append(p)
    return out


def _pick(rng, values):
    return int(rng.choice(values))


def _draw_general(rng) -> dict[str, int] | None:
    groups = _pick(rng, [1, 1, 1, 1, 2])
    c = _pick(rng, [1, 3, 4, 8, 12, 16, 24, 32]) * groups
    oc = _pick(rng, [4, 8, 13, 16, 24, 32, 48, 64]) * groups
    k = (_pick(rng, [1, 2, 3, 3, 5]), _pick(rng, [2, 3, 3, 4, 5]))
    stride = (_pick(rng, [1, 1, 2]),) * 2
    dilation = (2, 2) if rng.random() < 0.1 else (1, 1)
    x = (1, _pick(rng, [5, 8, 10, 12, 16, 20]), _pick(rng, [5, 8, 10, 12, 16]), c)
    padding = None if rng.random() < 0.7 else (0, 0)
    return _shape(x, (oc, *k), stride=stride, padding=padding, dilation=dilation, groups=groups)


def _draw_fast(rng) -> dict[str, int]:
    x = (1, _pick(rng, [2, 4, 5, 7, 8, 10, 12]), _pick(rng, [3, 4, 5, 8, 10, 12]),
         _pick(rng, [3, 8, 15, 16, 24, 32, 64, 96, 128]))  # fmt: skip
    return _shape(x, (_pick(rng, [5, 8, 16, 17, 24, 32, 64, 128]), 1, 1))


def _draw_strided(rng) -> dict[str, int]:
    x = (1, _pick(rng, [6, 8, 10, 12, 16]), _pick(rng, [6, 8, 9, 12, 16]), _pick(rng, [4, 8, 15, 16, 32, 64]))
    s = (_pick(rng, [2, 2, 3]), _pick(rng, [1, 2, 2]))
    return _shape(x, (_pick(rng, [8, 16, 17, 32, 64]), 1, 1), stride=s)


def _draw_1_x_n(rng) -> dict[str, int]:
    c = _pick(rng, [4, 8, 12, 16, 32, 64])
    k = _pick(rng, [2, 3, 4, 5, 7])
    return _shape((1, 1, _pick(rng, [16, 24, 32, 49, 64, 100]), c), (_pick(rng, [8, 16, 24, 32, 64]), 1, k),
                  padding=(0, 0))  # fmt: skip


def _draw_transpose(rng, *, reverse: bool) -> dict[str, int]:
    c = _pick(rng, [17, 20, 24, 32, 48, 64]) if reverse else _pick(rng, [1, 3, 4, 8, 12, 16])
    s = (_pick(rng, [1, 2, 2]),) * 2 if reverse else (_pick(rng, [1, 2, 3]),) * 2
    x = (1, _pick(rng, [2, 3, 4, 5, 6, 8]), _pick(rng, [2, 3, 4, 6, 8]), c)
    return _transpose_shape(x, (_pick(rng, [4, 8, 12, 16]), _pick(rng, [2, 3, 4]), _pick(rng, [2, 3, 4])), s)


def _transpose_shape(
    x: tuple[int, int, int, int], f: tuple[int, int, int], s: tuple[int, int]
) -> dict[str, int]:
    """A TFLite SAME transpose convolution (output = input · stride), padding as TFLM sets it."""
    n, h, w, c = x
    oc, kh, kw = f
    p: dict[str, int] = {}
    out, pads, offsets = [], [], []
    for size, k, st in ((h, kh, s[0]), (w, kw, s[1])):
        o = size * st
        total = max((size - 1) * st + k - o, 0)
        out.append(o)
        pads.append(total // 2)
        offsets.append(total // 2 + total % 2)
    for name, dd in (("input_dims", (n, h, w, c)), ("filter_dims", (oc, kh, kw, c)),
                     ("output_dims", (n, out[0], out[1], oc))):  # fmt: skip
        for k_, v in zip("nhwc", dd, strict=True):
            p[f"{name}.{k_}"] = v
    p.update({"stride.h": s[0], "stride.w": s[1], "padding.h": pads[0], "padding.w": pads[1]})
    p.update({"padding_offsets.h": offsets[0], "padding_offsets.w": offsets[1]})
    p.update({"dilation.h": 1, "dilation.w": 1})
    return p


__all__ = ["MAX_DRAWN_MACS", "cmsis_nn_sweep", "cmsis_nn_tier_sweep", "sweep"]

"""Cost formulas for CMSIS-NN's s8 layout functions (kernels_py/layout.py) and the byte copies
of portable layout ops (view, clone, cat, slice), which move memory the same way.

arm_pad_s8 copies each input row (``arm_memcpy_s8``) and fills the padding (``arm_memset_s8``);
arm_transpose_s8 walks the output element by element (2-D: a strided gather). A plain copy of
``b`` bytes in ``r`` contiguous runs is costed as arm_pad_s8 with no padding: ``r`` rows of
``b / r`` bytes (the same memcpy loop). Features::

    arm_pad_s8:        call, rows = N·H input rows (one copy each, with the W padding fills
                       around it), pixel_runs = N·H·W when C is padded (then a copy and two fills
                       per pixel), copied_words / copied_bytes = input bytes
                       copied word-aligned / otherwise (memcpy), filled = padding bytes
    arm_transpose_s8:  axes merged as the kernel merges them; rows = output runs of the innermost
                       merged axis, copied_words/copied_bytes = elements when that run is contiguous
                       in the input (aligned runs / not),
                       gathered = elements when strided (4 per pass, 8 on MVE), gather_tail

    instructions = Σ a_f · f          cycles = Σ b_f · f                (per core, fitted)
"""

from __future__ import annotations

import numpy as np

from isa_models.formula import Features, Formula
from isa_models.shapes import Params, dims, value

FAMILY = "layout"


def _pad_out(p: Params) -> tuple[int, int, int, int]:
    i, a, b = dims(p, "input_size"), dims(p, "pre_pad"), dims(p, "post_pad")
    return (i.n + a.n + b.n, i.h + a.h + b.h, i.w + a.w + b.w, i.c + a.c + b.c)


def _copy_split(total: int, run: int, aligned: bool) -> tuple[float, float]:
    """(word-aligned bytes, other bytes) of copying ``total`` bytes in runs of ``run``: memcpy
    moves words only when source and destination stay word aligned from run to run."""
    if aligned and run % 4 == 0:
        return float(total), 0.0
    return 0.0, float(total)


def _pad_features(p: Params, tier: str) -> Features:
    i, a, b = dims(p, "input_size"), dims(p, "pre_pad"), dims(p, "post_pad")
    n, h, w, c = _pad_out(p)
    copied = i.n * i.h * i.w * i.c
    rows = i.n * i.h
    c_padded = bool(a.c or b.c)
    run = i.c if c_padded else i.w * i.c
    aligned = (a.w * c) % 4 == 0 and (c % 4 == 0 if c_padded else (w * c) % 4 == 0 or i.n * i.h == 1)
    words, other = _copy_split(copied, run, aligned)
    return {"call": 1.0, "rows": float(rows), "pixel_runs": float(rows * i.w if c_padded else 0),
            "copied_words": words, "copied_bytes": other, "filled": float(n * h * w * c - copied)}  # fmt: skip


def _pad_macs(p: Params) -> int:
    n, h, w, c = _pad_out(p)
    return n * h * w * c


def _pad_bytes(p: Params) -> tuple[int, int]:
    i = dims(p, "input_size")
    return i.n * i.h * i.w * i.c, _pad_macs(p)


def _transpose_plan(p: Params) -> tuple[int, int, int]:
    """(elements, innermost run, its input stride) after merging: output axes innermost first,
    extent-1 axes dropped, an axis merged into the one inside it when the input continues
    linearly across both (as the kernels do, kernels_c/src/layout_s8.c)."""
    nd = value(p, "num_dims")
    shape = dims(p, "input_dims").shape[:nd]
    perm = [value(p, f"permutations[{k}]", k) for k in range(nd)] if nd > 1 else [0]
    strides = [1] * nd
    for k in range(nd - 2, -1, -1):
        strides[k] = strides[k + 1] * shape[k + 1]
    extents: list[int] = []
    steps: list[int] = []
    for k in range(nd - 1, -1, -1):
        e, st = shape[perm[k]], strides[perm[k]]
        if e == 1:
            continue
        if extents and st == steps[-1] * extents[-1]:
            extents[-1] *= e
            continue
        extents.append(e)
        steps.append(st)
    total = 1
    for e in shape:
        total *= e
    if not extents:
        return total, 1, 1
    return total, extents[0], steps[0]


def _transpose_shape(p: Params) -> tuple[int, int]:
    total, run, _stride = _transpose_plan(p)
    return total, run


def _transpose_features(p: Params, tier: str) -> Features:
    total, run, stride = _transpose_plan(p)
    rows = total // run
    lanes = 4 if tier != "mve" else 8
    gathered = stride != 1
    words, other = (0.0, 0.0) if gathered else _copy_split(total, run, True)
    return {
        "call": 1.0,
        "rows": float(rows),
        "copied_words": words,
        "copied_bytes": other,
        "gathered": float(total if gathered else 0),
        "gather_tail": float(rows * (run % lanes) if gathered else 0),
    }


def _transpose_macs(p: Params) -> int:
    return _transpose_shape(p)[0]


FORMULAS: dict[str, Formula] = {
    f.key: f
    for f in (
        Formula("arm_pad_s8", "arm_pad_s8", _pad_features, _pad_macs, _pad_bytes, "row memcpy + memset"),
        Formula("arm_transpose_s8", "arm_transpose_s8", _transpose_features, _transpose_macs,
                lambda p: (_transpose_macs(p), _transpose_macs(p)), "element gather in output order"),
    )
}  # fmt: skip


def route(function: str, p: Params, tier: str) -> str:
    return function


def pad_params(x, pre, post) -> dict[str, int]:
    p: dict[str, int] = {}
    for name, dd in (("input_size", x), ("pre_pad", pre), ("post_pad", post)):
        for key, v in zip("nhwc", dd, strict=True):
            p[f"{name}.{key}"] = v
    return p


def copy_params(nbytes: int, runs: int = 1) -> dict[str, int]:
    """A copy of ``nbytes`` in ``runs`` equal contiguous runs, as arm_pad_s8 without padding."""
    runs = max(1, min(runs, nbytes))
    return pad_params((1, 1, runs, max(nbytes // runs, 1)), (0, 0, 0, 0), (0, 0, 0, 0))


def transpose_params(shape, perm) -> dict[str, int]:
    nd = len(shape)
    out = tuple(shape[k] for k in perm)
    p: dict[str, int] = {"num_dims": nd}
    for k in range(4):
        p[f"permutations[{k}]"] = perm[k] if k < nd else k
    for name, dd in (("input_dims", shape), ("output_dims", out)):
        for key, v in zip("nhwc", tuple(dd) + (1,) * (4 - nd), strict=True):
            p[f"{name}.{key}"] = int(v)
    return p


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


__all__ = ["FAMILY", "FORMULAS", "copy_params", "pad_params", "route", "sweep", "transpose_params"]

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

import math

from isa_models.cortex_m.formula import Features, Formula
from isa_models.shapes import ByteOps, Params, ceil_div, dims, value

FAMILY = "layout"


def _pad_out(p: Params) -> tuple[int, int, int, int]:
    i, a, b = dims(p, "input_size"), dims(p, "pre_pad"), dims(p, "post_pad")
    return (i.n + a.n + b.n, i.h + a.h + b.h, i.w + a.w + b.w, i.c + a.c + b.c)


def _pad_walk(p: Params, tier: str, skip_empty: bool, arch: str | None) -> dict[str, float]:
    """The memcpy/memset calls of arm_pad_s8 (CMSIS-NN's loop nest, which kernels_c follows):
    fills for pre/post N and H blocks, per input row a pre-W and post-W fill and either one
    copy of the row (C unpadded) or, per pixel, a pre-C fill, a C copy and a post-C fill."""
    i, a, b = dims(p, "input_size"), dims(p, "pre_pad"), dims(p, "post_pad")
    _n, h, w, c = _pad_out(p)
    ops = ByteOps(tier, skip_empty, arch)
    batch, row = h * w * c, w * c
    out = src = 0
    ops.fill(batch * a.n, out)
    out += batch * a.n
    c_padded = i.c != c
    for _b in range(i.n):
        ops.fill(row * a.h, out)
        out += row * a.h
        for _y in range(i.h):
            ops.fill(c * a.w, out)
            out += c * a.w
            if not c_padded:
                ops.copy(i.w * i.c, out, src)
                out += i.w * i.c
                src += i.w * i.c
            else:
                # the pixels' offsets repeat with period 4 (mod-4 alignment): count each class once
                for r in range(min(4, i.w)):
                    times = len(range(r, i.w, 4))
                    o, s = out + r * c, src + r * i.c
                    ops.fill(a.c, o, times)
                    ops.copy(i.c, o + a.c, s, times)
                    ops.fill(b.c, o + a.c + i.c, times)
                out += i.w * c
                src += i.w * i.c
            ops.fill(c * b.w, out)
            out += c * b.w
        ops.fill(row * b.h, out)
        out += row * b.h
    ops.fill(batch * b.n, out)
    return ops.f


def _pad_features(p: Params, tier: str, skip_empty: bool = False, arch: str | None = None) -> Features:
    i = dims(p, "input_size")
    c_padded = i.c != _pad_out(p)[3]
    rows = i.n * i.h
    return {"call": 1.0, "rows": float(rows), "pixel_runs": float(rows * i.w if c_padded else 0),
            **_pad_walk(p, tier, skip_empty, arch)}  # fmt: skip


def _pad_features_kernels_c(p: Params, tier: str, arch: str | None = None) -> Features:
    return _pad_features(p, tier, skip_empty=True, arch=arch)


def _pad_macs(p: Params) -> int:
    n, h, w, c = _pad_out(p)
    return n * h * w * c


def _pad_bytes(p: Params) -> tuple[int, int]:
    i = dims(p, "input_size")
    return i.n * i.h * i.w * i.c, _pad_macs(p)


def _transpose_axes(p: Params) -> tuple[int, list[int], list[int]]:
    nd = value(p, "num_dims")
    shape = list(dims(p, "input_dims").shape[:nd])
    perm = [value(p, f"permutations[{k}]", k) for k in range(nd)] if nd > 1 else [0]
    return nd, shape, perm


def _transpose_plan(p: Params) -> tuple[int, int, int]:
    total, extents, steps = _transpose_merge(p)
    return (total, extents[0], steps[0]) if extents else (total, 1, 1)


def _transpose_merge(p: Params) -> tuple[int, list[int], list[int]]:
    """kernels_c's plan: (elements, innermost run, its input stride) after merging: output axes
    innermost first, extent-1 axes dropped, an axis merged into the one inside it when the input
    continues linearly across both (kernels_c/src/layout_s8.c)."""
    nd, shape, perm = _transpose_axes(p)
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
    return total, extents, steps


_TRANSPOSE_KEYS = ("call", "rows_2d", "elements_2d", "columns", "gathers",
                   *(f"{k}{r}" for r in ("_3d", "") for k in ("planes", "rows", "elements", "unit_rows",
                                                             "unit_long", "unit_vector_rows", "unit_vectors", "unit_words", "unit_bytes")),
                   "route_2d", "route_3d", "route_4d", "batches",
                   "unit_nest_3d", "unit_planes_3d", "unit_nest", "unit_planes", "unit_batches")  # fmt: skip
_V6M_KEYS = tuple(f"unit_tails{r}" for r in ("_3d", ""))
_MVE_KEYS = (*_V6M_KEYS, *(f"unit_short_rest{r}" for r in ("_3d", "")))
_V7M_KEYS = (*_V6M_KEYS, *(f"unit_tail_rows{r}" for r in ("_3d", "")))


def _offset_classes(extents: list[int], src: list[int], dst: list[int]) -> dict[tuple[int, int], int]:
    """Rows of a loop nest (index i_k < extents[k]) by (input offset mod 4, output offset mod
    4), the offsets being Σ i_k·src[k] and Σ i_k·dst[k] from word-aligned buffers. An offset
    mod 4 depends on each index mod 4 only, so the count runs over residue classes (at most 4
    per loop), not rows."""
    classes = {(0, 0): 1}
    for e, s_k, d_k in zip(extents, src, dst, strict=True):
        nxt: dict[tuple[int, int], int] = {}
        for (s, d), count in classes.items():
            for r in range(min(4, e)):
                key = ((s + r * s_k) % 4, (d + r * d_k) % 4)
                nxt[key] = nxt.get(key, 0) + count * len(range(r, e, 4))
        classes = nxt
    return classes


def _aligned_rows(shape: list[int], perm: list[int]) -> int:
    """Rows of CMSIS-NN's element nest (every index of the input's leading axes, the last axis
    the unit-stride run) whose input and output offsets are both multiples of 4."""
    nd = len(shape)
    out = [shape[a] for a in perm]
    out_stride = [0] * nd
    for k in range(nd):  # input axis perm[k] is output position k
        s = 1
        for e in out[k + 1 :]:
            s *= e
        out_stride[perm[k]] = s
    in_stride = [1] * nd
    for k in range(nd - 2, -1, -1):
        in_stride[k] = in_stride[k + 1] * shape[k + 1]
    return _offset_classes(shape[:-1], in_stride[:-1], out_stride[:-1]).get((0, 0), 0)


def _transpose_features(p: Params, tier: str, arch: str | None = None) -> Features:
    """CMSIS-NN's arm_transpose_s8 routes by rank, without merging axes: 1-D memcpy (``memcpy_copy_*``: ByteOps); 2-D
    [rows, cols] ``nhcw`` (scalar: per input row a loop over its columns; MVE: per column
    ceil(rows/8) predicated 8-lane byte gathers); 3-D the element loop nest over (n, h, w)
    (planes = n, rows = n·h inner loops); 4-D the element nest over (n, h, w, c) (planes =
    n·h, rows = n·h·w), except on MVE with permutation (0, 1, ..) the ``nhcw`` gathers per
    (n, h) plane: columns = n·h·c, gathers = n·h·c·ceil(w/8). The element nest's inner loop
    has a unit-stride version when the last input axis stays last (GCC -O3's loop versioning
    for strides, read from the -Ofast build): a row of ``r > 6`` bytes copies ``r // 4`` words
    and ``r % 4`` unrolled tail bytes (``unit_tails``, ``unit_tail_rows`` the rows with one), a
    shorter row ``r`` bytes in a byte loop (``unit_rows`` rows, ``unit_long``, ``unit_words``,
    ``unit_bytes``). On MVE a row of ``r >= 8`` bytes (``unit_long``) runs
    ``⌊r/16⌋`` 16-byte vector trips (``unit_vectors``, their loop set-up ``unit_vector_rows``),
    one 8-byte step when ``r mod 16 >= 8`` (``unit_words``), then ``r mod 8`` unrolled bytes
    (``unit_tails``); after vector trips a remainder of 1-7 bytes branches past the 8-byte step
    (``unit_short_rest``); a row of ``r <= 7`` is a low-overhead byte loop (``unit_bytes``
    = r per row). ARMv6-M has no unaligned
    LDR/STR, so its build takes the word version only for a row of ``r >= 8`` bytes whose input
    and output addresses are both word aligned (``unit_long`` = A such rows,
    :func:`_aligned_rows`): ``unit_words`` = A·⌊r/4⌋, the unrolled tail ``unit_tails`` =
    A·(r mod 4), every other row a byte loop, ``unit_bytes`` = (rows − A)·r. The 3-D and 4-D
    nests are compiled separately: their features carry ``_3d`` and no suffix. Each rank's route
    has its own set-up (strides, permutation checks: ``route_2d``/``_3d``/``_4d``, 1 for the
    rank that runs; the 1-D memcpy is ``call`` alone), and the 4-D nests also step their
    outermost loop once per input batch (``batches`` = n; read from the -Ofast disassembly:
    about 13 instructions a trip, which single-element batches of random cases expose). The
    unit-stride version has its own set-up and outer-loop trips (``unit_nest``,
    ``unit_planes``, ``unit_batches``, with the rank suffix), about twice the strided one's."""
    nd, shape, perm = _transpose_axes(p)
    n, h, w, c = (*shape, 1, 1, 1)[:4]
    v6m = arch == "armv6-m" and tier != "mve"
    f = dict.fromkeys(
        _TRANSPOSE_KEYS + (_MVE_KEYS if tier == "mve" else _V6M_KEYS if v6m else _V7M_KEYS), 0.0
    )
    f.update(
        {f"memcpy_{k}": 0.0 for k in ByteOps(tier, skip_empty=False, arch=arch).f if k.startswith("copy")}
    )
    f["call"] = 1.0
    total = n * h * w * c
    mve = tier == "mve"
    unit = nd >= 3 and _unit_stride(shape, perm)
    aligned = _aligned_rows(shape, perm) if v6m and unit else None
    if nd > 1:
        f[f"route_{min(nd, 4)}d"] = 1.0
    if nd == 4:
        f["batches"] = float(n)
    if nd == 1:  # arm_memcpy_s8 of n bytes between word-aligned buffers (newlib's memcpy off MVE)
        ops = ByteOps(tier, skip_empty=False, arch=arch)
        ops.copy(n, 0, 0)
        f.update({f"memcpy_{k}": v for k, v in ops.f.items() if k.startswith("copy")})
    elif nd == 2 and mve:
        f["columns"], f["gathers"] = float(h), float(h * ceil_div(n, 8))
    elif nd == 2:
        f["rows_2d"], f["elements_2d"] = float(n), float(total)
    elif nd == 3:
        f["planes_3d"] = float(n)
        _element_rows(f, n * h, w, unit, "_3d", mve, aligned)
    elif mve and perm[0] == 0 and perm[1] == 1:
        f["planes"], f["columns"], f["gathers"] = (
            float(n * h),
            float(n * h * c),
            float(n * h * c * ceil_div(w, 8)),
        )
    else:
        f["planes"] = float(n * h)
        _element_rows(f, n * h * w, c, unit, "", mve, aligned)
    if unit and nd >= 3 and not f["columns"]:  # the unit-stride version: its own set-up and outer loops
        rank = "_3d" if nd == 3 else ""
        f["unit_nest" + rank] = 1.0
        f["unit_planes" + rank], f["planes" + rank] = f["planes" + rank], 0.0
        if nd == 4:
            f["unit_batches"], f["batches"] = f["batches"], 0.0
    return f


def _unit_stride(shape: list[int], perm: list[int]) -> bool:
    """Whether the element nest's innermost input axis steps the output by 1: CMSIS-NN tests the
    computed ``out_strides[3] == 1`` (GCC's unit-stride loop version), which holds when the last
    input axis stays last, and also when every output axis after it has extent 1 (random cases
    with extent-1 axes take the unit version with a permutation that moves the axis)."""
    last = len(shape) - 1
    position = perm.index(last)
    stride = 1
    for axis in perm[position + 1 :]:
        stride *= shape[axis]
    return stride == 1


def _element_rows(
    f: dict[str, float],
    rows: int,
    run: int,
    unit: bool,
    rank: str = "",
    mve: bool = False,
    aligned: int | None = None,
) -> None:
    """The element nest's features; ``aligned``: ARMv6-M's word-aligned rows (None elsewhere)."""
    if not unit:
        f["rows" + rank], f["elements" + rank] = float(rows), float(rows * run)
        return
    f["unit_rows" + rank] = float(rows)
    if aligned is not None:  # ARMv6-M: the word version needs r >= 8 and aligned addresses
        long = aligned if run >= 8 else 0
        f["unit_long" + rank] = float(long)
        f["unit_words" + rank] = float(long * (run // 4))
        f["unit_tails" + rank] = float(long * (run % 4))
        f["unit_bytes" + rank] = float((rows - long) * run)
        return
    if mve:  # GCC's MVE version (rows of 8 bytes or more): 16-byte vector trips, an 8-byte
        # step when 8 or more bytes remain, then up to 7 unrolled bytes; shorter rows a byte loop
        long = run >= 8
        vectors = run // 16
        f["unit_long" + rank] = float(rows if long else 0)
        f["unit_vectors" + rank] = float(rows * vectors)
        f["unit_vector_rows" + rank] = float(rows if vectors else 0)
        f["unit_words" + rank] = float(rows if long and run % 16 >= 8 else 0)
        # a remainder of 1-7 bytes after the vector trips branches past the 8-byte step
        f["unit_short_rest" + rank] = float(rows if vectors and 0 < run % 16 < 8 else 0)
        f["unit_tails" + rank] = float(rows * (run % 8) if long else 0)
        f["unit_bytes" + rank] = float(0 if long else rows * run)
        return
    # ARMv7-M: a row of 7+ bytes runs the word loop, then its 1-3 tail bytes unrolled (a row with
    # a tail: unit_tail_rows); a shorter row is a byte loop (4 instructions a byte)
    long = run > 6
    f["unit_long" + rank] = float(rows if long else 0)  # the word version's set-up
    f["unit_words" + rank] = float(rows * (run // 4) if long else 0)
    f["unit_tails" + rank] = float(rows * (run % 4) if long else 0)
    f["unit_tail_rows" + rank] = float(rows if long and run % 4 else 0)
    f["unit_bytes" + rank] = float(0 if long else rows * run)


def _transpose_features_kernels_c(p: Params, tier: str, arch: str | None = None) -> Features:
    """kernels_c's planned transpose: the output in runs of the innermost merged axis, each a
    copy (input stride 1: memcpy, or the MVE copy loop; each run's alignment from its input
    and output offsets, :func:`_offset_classes`) or a strided gather (scalar: 4 per pass, the
    4-pass loop's set-up gather_long on runs of 4 or more, + tail bytes; MVE: 8 per VLDRB
    gather with 16-bit offsets + a predicated tail, or 4 per gather with 32-bit offsets for
    strides over 9362); the plan's loops per input axis (rank) and merged axis (axes), the
    outer loops' steps (planes)."""
    total, run, stride = _transpose_plan(p)
    _total, extents, _steps = _transpose_merge(p)
    rows = total // run
    planes = rows // extents[1] if len(extents) > 1 else 1  # the i0·i1 loop steps
    ops = ByteOps(tier, skip_empty=False, arch=arch)
    f = {"call": 1.0, "rank": float(value(p, "num_dims")), "axes": float(len(extents)),
         "planes": float(planes), "rows": float(rows), "gathers": 0.0, "gather_tails": 0.0,
         "gather_long": 0.0, "gather_bytes": 0.0}  # fmt: skip
    if stride == 1:  # the runs' input offsets: i0·s0 + i1·s1 + i2·s2 (the plan's outer axes)
        outer, outer_steps = extents[:0:-1], _steps[:0:-1]
        written = [run * math.prod(outer[k + 1 :]) for k in range(len(outer))]
        for (s, d), times in _offset_classes(outer, outer_steps, written).items():
            ops.copy(run, d, s, times)
    elif tier == "mve":
        lanes = 8 if stride <= 0xFFFF // 7 else 4
        f["gathers"] = float(rows * (run // lanes))
        f["gather_tails"] = float(rows * (run % lanes != 0))
    else:
        f["gathers"] = float(rows * (run // 4))
        f["gather_long"] = float(rows if run >= 4 else 0)
        f["gather_bytes"] = float(rows * (run % 4))
    return {**f, **{k: v for k, v in ops.f.items() if k.startswith("copy")}}


def _transpose_macs(p: Params) -> int:
    total = 1
    for e in _transpose_axes(p)[1]:
        total *= e
    return total


FORMULAS: dict[str, Formula] = {
    f.key: f
    for f in (
        Formula("arm_pad_s8", "arm_pad_s8", _pad_features, _pad_macs, _pad_bytes, "row memcpy + memset",
                library_features=(("kernels_c", _pad_features_kernels_c),), by_arch=True),
        Formula("arm_transpose_s8", "arm_transpose_s8", _transpose_features, _transpose_macs,
                lambda p: (_transpose_macs(p), _transpose_macs(p)), "element loops / gathers by rank",
                library_features=(("kernels_c", _transpose_features_kernels_c),), by_arch=True),
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


__all__ = ["FAMILY", "FORMULAS", "copy_params", "pad_params", "route", "transpose_params"]

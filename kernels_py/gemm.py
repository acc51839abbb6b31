"""Convolution as an integer GEMM on the float32 BLAS, exact by construction.

``arm_convolve_s8`` computes, per output pixel and channel, ``Σ_k (x_k + input_offset)·w_k`` in an
int32 accumulator, adds the bias (wrapping), requantizes with ``arm_nn_requantize`` and clamps.
This module computes the same sum as a matrix product ``col · Wᵀ`` where ``col`` is the im2col
matrix of ``x + input_offset`` (0 at padding taps, as CMSIS-NN skips them) and ``W`` the OHWI filter
as [C_OUT, KH·KW·C_IN], both held in float32, and hands it to ``numpy.matmul`` (OpenBLAS sgemm).

Why not a bit can move. ``x + input_offset`` is in [-255, 255] and ``w`` in [-128, 127], so every
product is an integer of magnitude at most 255·128 = 32,640 < 2^15, exactly representable. A
float32 holds every integer of magnitude up to 2^24 exactly, so a sum of at most
``K_CHUNK = 512`` such products (at most 512·32,640 = 16,711,680 < 2^24 = 16,777,216 in magnitude,
and so is every partial sum, in whatever order and blocking the BLAS chooses, fused multiply-add
or not) is computed without a single rounding: the float32 result *is* the integer sum. A deeper
product is split into chunks of at most ``K_CHUNK`` columns, each exact, and the chunks are added in
int32 modulo 2^32 by `_requantize_rows`: CMSIS-NN's int32 accumulator is the true sum modulo 2^32,
so ``wrap_int32(total + bias)`` computed that way is the accumulator C computes, and
from there ``arm_nn_requantize`` is kernels_py.fixedpoint's integer arithmetic, step for step
(`_requantize_rows`, written without branches so it vectorises). No
``fastmath`` anywhere; BLAS rounding modes do not matter because nothing is ever rounded.

The BLAS runs single-threaded (`single_threaded_blas`): refsim spreads samples over the cores
itself (refsim.runtime.batch), and OpenBLAS's own threads on a small product, on a shared
machine, cost more than they give.

**An integer product instead** (`set_integer_matmul`). A caller may install an exact integer
matrix product, ``matmul(a, zero_point, weight_t)`` → int32 ``Σ_k (a[m, k] - zero_point)·W[k, n]``
with ``a`` uint8 and the int32 sums wrapping modulo 2^32 (refsim.runtime.igemm: ONNX Runtime's
``MatMulInteger``). The operand is then ``x + 128`` (``x ^ 0x80`` as uint8) with the zero point
``128 - input_offset``, so ``a - zero_point = x + input_offset``, the same integers, and the padding
taps hold the zero point itself (they add 0, as CMSIS-NN skips them). The int32 sums are the
accumulator modulo 2^32, which `_requantize_rows` takes as it takes the float32 parts; nothing is
rounded on either path. Used only when the zero point fits uint8 (``input_offset`` in [-127, 128],
CMSIS-NN's documented range); otherwise, and when none is installed, the float32 product above.
"""

from __future__ import annotations

import numpy as np

from kernels_py._jit import jit
from kernels_py.fully_connected import _vec_mat_mult

#: Largest depth summed in one float32 product (512·255·128 < 2^24: see the module docstring).
K_CHUNK = 512

_blas_limited = False

#: The installed exact integer product (see the module docstring), or None: the float32 BLAS.
_integer_matmul = None
#: Rows per integer product: one call per block, whose fixed cost is ~10 us, so blocks are larger.
INTEGER_BLOCK_ROWS = 8192


def set_integer_matmul(matmul) -> None:
    """Install ``matmul(a, zero_point, weight_t)`` (module docstring) for every later product, or None."""
    global _integer_matmul
    _integer_matmul = matmul


def _integer_zero_point(input_offset: int):
    """The installed integer product and the uint8 zero point of ``input_offset``, or (None, 0)."""
    zero_point = 128 - int(input_offset)
    if _integer_matmul is None or not 0 <= zero_point <= 255:
        return None, 0
    return _integer_matmul, zero_point


def single_threaded_blas() -> None:
    """Limit the BLAS that numpy uses to one thread (once per process; threadpoolctl)."""
    global _blas_limited
    if _blas_limited:
        return
    _blas_limited = True
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # a dependency of refsim; without it the BLAS keeps its default threads
        return
    threadpool_limits(limits=1, user_api="blas")


def conv_filter_matrix(filter: np.ndarray) -> np.ndarray:
    """An OHWI int8 filter as the float32 [KH·KW·C_IN, C_OUT] right-hand side of the product."""
    return np.ascontiguousarray(filter.reshape(filter.shape[0], -1).T, dtype=np.float32)


@jit
def _padded(input, input_offset, pad_top, pad_left, height, width):
    """``x + input_offset`` as float32 (exact) in an image of ``height`` x ``width`` whose border,
    ``pad_top``/``pad_left`` and whatever lies past the input at the bottom/right, is 0: the padding
    taps CMSIS-NN skips contribute 0 to the sum, as here."""
    n_batch, in_h, in_w, in_c = input.shape
    image = np.zeros((n_batch, height, width, in_c), np.float32)
    for b in range(n_batch):
        for y in range(in_h):
            for x in range(in_w):
                for c in range(in_c):
                    image[b, pad_top + y, pad_left + x, c] = np.float32(
                        np.int32(input[b, y, x, c]) + input_offset
                    )
    return image


@jit
def _padded_u8(input, zero_point, pad_top, pad_left, height, width):
    """`_padded` for the integer product: ``x + 128`` as uint8 (``x ^ 0x80``), and ``zero_point`` in the
    border, so that ``pixel - zero_point`` is ``x + input_offset`` inside and 0 at every padding tap."""
    n_batch, in_h, in_w, in_c = input.shape
    image = np.full((n_batch, height, width, in_c), np.uint8(zero_point), np.uint8)
    for b in range(n_batch):
        for y in range(in_h):  # an input row is one contiguous run of the image row: one vector loop
            src = input[b, y].reshape(-1)
            dst = image[b, pad_top + y].reshape(-1)[pad_left * in_c : (pad_left + in_w) * in_c]
            for j in range(in_w * in_c):
                dst[j] = np.uint8(np.int32(src[j]) + 128)
    return image


def _biased_u8(x: np.ndarray) -> np.ndarray:
    """int8 ``x`` as the uint8 ``x + 128`` (flipping the sign bit is adding 128 to two's complement)."""
    return np.bitwise_xor(x.view(np.uint8), np.uint8(0x80))


@jit
def _im2col(image, k_h, k_w, stride_h, stride_w, dil_h, dil_w, out_h, out_w, row0, col):
    """Rows ``row0 ...`` of the im2col matrix of the padded image: ``col[r, (ky·k_w + kx)·C + c]`` is the
    tap (ky, kx) of output pixel ``row0 + r = (b·out_h + oy)·out_w + ox``. Without dilation the k_w taps
    of a kernel row are one contiguous run of the image row.

    A segment of an output row at a time, per kernel row: one view of the image row it reads and one
    of the rows of ``col`` it fills, indexed inside with unsigned offsets. numba checks a signed index
    for wrap-around (``a[-1]``), which keeps LLVM from vectorising the copy; views per run (six per
    output pixel of a 3x3 layer) cost 1.4-1.7x this, 2-D indexing recomputed per element 3x."""
    height, width, in_c = image.shape[1], image.shape[2], image.shape[3]
    rows, depth = col.shape
    pixels = image.reshape(-1)
    flat = col.reshape(-1)
    run = k_w * in_c if dil_w == 1 else in_c  # words copied together
    u_run, u_runs = np.uint64(run), np.uint64(k_w)
    u_step, u_depth, u_tap = np.uint64(stride_w * in_c), np.uint64(depth), np.uint64(dil_w * in_c)
    span = (k_w - 1) * dil_w * in_c + in_c  # the words one output pixel's kernel row reads
    b, rest = divmod(row0, out_h * out_w)
    oy, ox = divmod(rest, out_w)
    r = 0
    while r < rows:
        n = min(out_w - ox, rows - r)  # the output row's pixels left in this block
        for ky in range(k_h):
            s0 = ((b * height + oy * stride_h + ky * dil_h) * width + ox * stride_w) * in_c
            src = pixels[s0 : s0 + (n - 1) * stride_w * in_c + span]
            d0 = r * depth + ky * k_w * in_c
            dst = flat[d0 : d0 + (n - 1) * depth + k_w * in_c]
            if dil_w == 1:  # one run per pixel (a loop over one run here ran at half the speed)
                for x in range(np.uint64(n)):
                    at, to = x * u_step, x * u_depth
                    for i in range(u_run):
                        dst[to + i] = src[at + i]
            else:
                for x in range(np.uint64(n)):
                    at, to = x * u_step, x * u_depth
                    for kx in range(u_runs):
                        for i in range(u_run):
                            dst[to + kx * u_run + i] = src[at + kx * u_tap + i]
        r += n
        ox += n
        if ox == out_w:
            ox = 0
            oy += 1
            if oy == out_h:
                oy = 0
                b += 1


def requantize_table(bias, multiplier, shift) -> np.ndarray:
    """Per output channel, the int64 constants `_requantize_rows` reads: bias (0 for None), multiplier,
    ``max(shift, 0)``, ``max(-shift, 0)``, the remainder mask ``2^right - 1`` and its half ``mask >> 1``
    (arm_nn_requantize's split of the shift and arm_nn_divide_by_power_of_two's threshold), computed once."""
    multiplier = np.asarray(multiplier, np.int64).reshape(-1)
    shift = np.asarray(shift, np.int64).reshape(-1)
    bias = np.zeros_like(multiplier) if bias is None else np.asarray(bias, np.int64).reshape(-1)
    right = np.maximum(-shift, 0)
    mask = (np.int64(1) << right) - 1
    return np.ascontiguousarray(np.stack([bias, multiplier, np.maximum(shift, 0), right, mask, mask >> 1]))


#: `_requantize_rows` runs over whole rows at least this many lanes at a time (its docstring).
REQUANTIZE_LANES = 256


@jit
def _requantize_rows(parts, table, output_offset, act_min, act_max, out):
    """``out[m, n]`` from the exact partial sums ``parts[p, m, n]`` (integers held in float32, or the
    int32 sums of the integer product): ``arm_nn_requantize`` per channel of their total plus the
    bias, plus the output offset, clamped. ``parts`` and ``out`` are C-contiguous.

    The steps of kernels_py.fixedpoint in int32 lanes, without branches, so that LLVM vectorises them
    with the CPU's native 32-bit operations (tests/ops/test_gemm.py checks them against
    ``fixedpoint.requantize`` over the whole int32 range and every shift). The int32 steps are NumPy
    ufuncs on int32 scalars (``np.add``, ``np.left_shift``, ...), which numba types as int32 -> int32:
    a plain ``a + b`` of two int32 is int64 in numba, and 64-bit lanes cost ~40% more here. Each is
    C's int32 operation: ``np.add`` wraps modulo 2^32, so the parts, and the bias added to their total,
    are exactly CMSIS-NN's int32 accumulator (the true sum, wrapped); ``np.left_shift`` is C's
    ``val * (1 << left)``; the 32x32-bit product in 64 bits, ``+ 2^30``, ``>> 31``, truncated
    (``np.int32``), is ``doubling_high_mult_no_sat``; the arithmetic shift and the remainder
    ``h & mask`` against ``half + (h < 0)`` (``h >> 31`` is -1 or 0; the quotient has h's sign) is
    ``divide_by_power_of_two``. Table values (see `requantize_table`) all fit in int32.

    Rows go through several at a time, as one run of at least `REQUANTIZE_LANES` values with the
    channel constants repeated along it: a loop over one row of 8 or 16 channels is shorter than
    LLVM's vectorised body (vector width times its unrolling) and ran scalar (~1.3 ns a value; now
    ~0.2 on a Zen 5 core)."""
    n_parts, rows, cols = parts.shape
    total = rows * cols
    span = -(-REQUANTIZE_LANES // cols) * cols  # whole rows: lane j is channel j % cols
    t = lane_table(table)
    lanes = np.empty((6, span), np.int32)
    for i in range(6):  # row by row: a division per lane cost more than a narrow layer's whole call
        for r in range(0, span, cols):
            lanes[i, r : r + cols] = t[i]
    bias, mult, left, right, mask, half = lanes[0], lanes[1], lanes[2], lanes[3], lanes[4], lanes[5]
    sums = parts.reshape(n_parts, total)
    flat = out.reshape(total)
    acc = np.empty(span, np.int32)
    offset, low, high = np.int32(output_offset), np.int32(act_min), np.int32(act_max)
    for base in range(0, total, span):
        # views indexed from 0 with int32 constants: LLVM vectorises these loops (indexing the
        # whole arrays at base + j, with the constants as int64, ran ~5x slower)
        n = min(span, total - base)
        run = acc[:n]
        first = sums[0, base : base + n]
        for j in range(n):
            run[j] = np.int32(first[j])  # exact: an integer below 2^24 in magnitude, or int32
        for p in range(1, n_parts):
            part = sums[p, base : base + n]
            for j in range(n):
                run[j] = np.add(run[j], np.int32(part[j]))
        dst = flat[base : base + n]
        for j in range(n):  # inlined: a kernel call per run costs more than it on narrow layers
            v = np.left_shift(np.add(run[j], bias[j]), left[j])
            h = np.int32((np.int64(v) * np.int64(mult[j]) + (np.int64(1) << 30)) >> 31)
            r = np.right_shift(h, right[j])
            threshold = np.subtract(half[j], np.right_shift(h, np.int32(31)))  # half + (h < 0)
            r = np.add(r, np.int32(np.greater(np.bitwise_and(h, mask[j]), threshold)))
            dst[j] = np.minimum(np.maximum(np.add(r, offset), low), high)


@jit
def lane_table(table):
    """`requantize_table`'s rows as int32 (every value fits), what `_requantize_rows` reads."""
    t = np.empty(table.shape, np.int32)
    for i in range(table.shape[0]):
        for n in range(table.shape[1]):
            t[i, n] = np.int32(table[i, n])
    return t


@jit
def shift_lanes(multiplier, shift):
    """The `lane_table` of a zero bias, from per-channel ``multiplier`` and ``shift`` (inside a kernel: the
    depthwise loop requantizes with it, steps as in `_requantize_rows`)."""
    t = np.zeros((6, multiplier.shape[0]), np.int32)
    for n in range(multiplier.shape[0]):
        left, right = max(np.int64(shift[n]), 0), max(-np.int64(shift[n]), 0)
        mask = (np.int64(1) << right) - 1
        t[1, n], t[2, n], t[3, n] = np.int32(multiplier[n]), np.int32(left), np.int32(right)
        t[4, n], t[5, n] = np.int32(mask), np.int32(mask >> 1)
    return t


def _gemm_rows(col, weight_t, table, output_offset, act_min, act_max, out) -> None:
    """``out = requantize(col · weight_t)`` for one block of rows, the depth split at `K_CHUNK`."""
    depth = weight_t.shape[0]
    n_parts = -(-depth // K_CHUNK)
    parts = np.empty((n_parts, col.shape[0], weight_t.shape[1]), np.float32)
    for p in range(n_parts):
        k0, k1 = p * K_CHUNK, min(depth, (p + 1) * K_CHUNK)
        np.matmul(col[:, k0:k1], weight_t[k0:k1], out=parts[p])
    _requantize_rows(parts, table, output_offset, act_min, act_max, out)


def block_rows(depth: int, out_c: int) -> int:
    """Rows per block: the im2col block and its partial sums stay within about 256 KiB (L2)."""
    return max(16, (1 << 16) // max(depth + out_c, 1))


def convolve_gemm(input, weight_t, table, input_offset, output_offset,
                  stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, act_min, act_max,
                  k_h, k_w, out_h, out_w, output=None):  # fmt: skip
    """``arm_convolve_s8`` (groups = 1) on [N, H, W, C_IN] int8, with ``weight_t`` from `conv_filter_matrix`
    and ``table`` from `requantize_table`: the int8 [N, out_h, out_w, C_OUT] ``conv._convolve_kernel`` gives,
    written into ``output`` when given (C-contiguous, not overlapping ``input``: a prepared call's arena
    view, saving a copy), else into a new array. Output pixels (rows) are independent, so they go
    through in blocks that stay in cache."""
    n_batch = input.shape[0]
    depth, out_c = weight_t.shape
    rows = n_batch * out_h * out_w
    if output is None:
        output = np.empty((n_batch, out_h, out_w, out_c), np.int8)
    flat = output.reshape(rows, out_c)
    matmul, zero_point = _integer_zero_point(input_offset)
    if matmul is not None:
        _convolve_integer(matmul, zero_point, input, weight_t, table, output_offset, stride_h, stride_w,
                          pad_h, pad_w, dil_h, dil_w, act_min, act_max, k_h, k_w, out_h, out_w, flat)  # fmt: skip
        return output
    step = block_rows(depth, out_c)
    col = np.empty((min(step, rows), depth), np.float32)
    extent = _padded_extent(input, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, k_h, k_w, out_h, out_w)
    pixels = input.reshape(rows, depth) if extent is None else None  # 1x1: the input already is the matrix
    if extent is not None:
        image = _padded(input, input_offset, pad_h, pad_w, *extent)
    for r0 in range(0, rows, step):
        r1 = min(rows, r0 + step)
        block = col[: r1 - r0]
        if pixels is not None:
            np.add(
                pixels[r0:r1], np.float32(input_offset), out=block, dtype=np.float32
            )  # exact: |x + off| <= 255
        else:
            _im2col(image, k_h, k_w, stride_h, stride_w, dil_h, dil_w, out_h, out_w, r0, block)
        _gemm_rows(block, weight_t, table, output_offset, act_min, act_max, flat[r0:r1])
    return output


def _padded_extent(input, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, k_h, k_w, out_h, out_w):
    """None for a 1x1 convolution whose input already is the im2col matrix; else the (height, width)
    of the padded image, tall and wide enough for every tap of every output pixel."""
    if k_h == k_w == stride_h == stride_w == 1 and pad_h == pad_w == 0 and input.shape[1:3] == (out_h, out_w):
        return None
    height = max(input.shape[1] + pad_h, (out_h - 1) * stride_h + (k_h - 1) * dil_h + 1)
    width = max(input.shape[2] + pad_w, (out_w - 1) * stride_w + (k_w - 1) * dil_w + 1)
    return height, width


def _integer_rows(matmul, a, zero_point, weight_t, table, output_offset, act_min, act_max, out) -> None:
    """``out`` from one block of uint8 rows ``a`` on the integer product, requantized (int32 sums: one part)."""
    sums = matmul(a, zero_point, weight_t)
    _requantize_rows(sums.reshape(1, *sums.shape), table, output_offset, act_min, act_max, out)


def _convolve_integer(matmul, zero_point, input, weight_t, table, output_offset, stride_h, stride_w,
                      pad_h, pad_w, dil_h, dil_w, act_min, act_max, k_h, k_w, out_h, out_w, flat) -> None:  # fmt: skip
    """`convolve_gemm` on the installed integer product (module docstring), into ``flat`` [rows, C_OUT]."""
    rows, depth = flat.shape[0], weight_t.shape[0]
    extent = _padded_extent(input, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, k_h, k_w, out_h, out_w)
    # no padding anywhere (a 1x1 stride-2 shortcut): im2col reads the input itself and the block is
    # biased after it, instead of biasing a copy of the whole input of which it reads a part
    unpadded = extent is not None and pad_h == pad_w == 0 and extent == tuple(input.shape[1:3])
    if extent is None:
        pixels = input.reshape(rows, depth)
    else:
        image = input.view(np.uint8) if unpadded else _padded_u8(input, zero_point, pad_h, pad_w, *extent)
        col = np.empty((min(INTEGER_BLOCK_ROWS, rows), depth), np.uint8)
        # im2col moves whole channel runs: as 2-, 4- or 8-byte words when C_IN allows (the same bytes)
        word = next(
            w
            for w in (np.uint64, np.uint32, np.uint16, np.uint8)
            if input.shape[3] % np.dtype(w).itemsize == 0
        )
        image_words, col_words = image.view(word), col.view(word)
    for r0 in range(0, rows, INTEGER_BLOCK_ROWS):
        r1 = min(rows, r0 + INTEGER_BLOCK_ROWS)
        if extent is None:
            block = _biased_u8(pixels[r0:r1])
        else:
            block = col[: r1 - r0]
            _im2col(
                image_words,
                k_h,
                k_w,
                stride_h,
                stride_w,
                dil_h,
                dil_w,
                out_h,
                out_w,
                r0,
                col_words[: r1 - r0],
            )
            if unpadded:
                np.bitwise_xor(block, np.uint8(0x80), out=block)  # x + 128, as _padded_u8 gives it
        _integer_rows(
            matmul, block, zero_point, weight_t, table, output_offset, act_min, act_max, flat[r0:r1]
        )


@jit
def _offset_rows(x, input_offset, col):
    for r in range(x.shape[0]):
        for k in range(x.shape[1]):
            col[r, k] = np.float32(np.int32(x[r, k]) + input_offset)


#: Below this many rows a fully connected layer is a matrix-vector product: the int32 loop is faster.
FC_GEMM_ROWS = 4


def fully_connected_rows(input, weight, weight_t, table, base, input_offset, output_offset,
                         multipliers, shifts, act_min, act_max, out) -> None:  # fmt: skip
    """``arm_fully_connected_s8`` with ``filter_offset = 0`` on [rows, K] int8, into ``out`` [rows, C_OUT]:
    ``Σ (x + input_offset)·w + base`` (``base`` the bias, or the MVE kernel sum with ``input_offset = 0``),
    requantized per tensor. Below `FC_GEMM_ROWS` rows fully_connected's int32 vector loop (the same
    integers: it folds the offset out of the sum, equal modulo 2^32); from there the exact GEMM (the
    installed integer product, or float32) in blocks of rows (``table`` from `requantize_table` of ``base``; ``weight_t`` from
    `conv_filter_matrix`). Rows are independent."""
    if input.shape[0] < FC_GEMM_ROWS:
        _vec_mat_mult(
            *vector_loop_operands(
                input, weight, weight_t, table, base, input_offset, output_offset,
                multipliers, shifts, act_min, act_max, out,
            )
        )  # fmt: skip
        return
    _fully_connected_gemm_into(input, weight_t, table, input_offset, output_offset, act_min, act_max, out)


def vector_loop_operands(input, weight, weight_t, table, base, input_offset, output_offset,
                         multipliers, shifts, act_min, act_max, out) -> tuple:  # fmt: skip
    """`fully_connected_rows`' operands as fully_connected's vector loop takes them (what it calls below
    `FC_GEMM_ROWS` rows; a one-row plan calls the loop directly with these)."""
    return (input, weight, base, input_offset, 0, multipliers, shifts, output_offset, act_min, act_max, out)


def _fully_connected_gemm_into(
    input, weight_t, table, input_offset, output_offset, act_min, act_max, out
) -> None:
    """The GEMM of `fully_connected_rows`: the installed integer product, or the float32 one in blocks."""
    rows, depth = input.shape
    matmul, zero_point = _integer_zero_point(input_offset)
    if matmul is not None:
        for r0 in range(0, rows, INTEGER_BLOCK_ROWS):
            r1 = min(rows, r0 + INTEGER_BLOCK_ROWS)
            block = _biased_u8(input[r0:r1])
            _integer_rows(
                matmul, block, zero_point, weight_t, table, output_offset, act_min, act_max, out[r0:r1]
            )
        return
    step = block_rows(depth, weight_t.shape[1])
    col = np.empty((min(step, rows), depth), np.float32)
    for r0 in range(0, rows, step):
        r1 = min(rows, r0 + step)
        block = col[: r1 - r0]
        _offset_rows(input[r0:r1], input_offset, block)
        _gemm_rows(block, weight_t, table, output_offset, act_min, act_max, out[r0:r1])


def fully_connected_gemm(input, weight_t, table, input_offset, output_offset, act_min, act_max):
    """`fully_connected_rows`' GEMM on any number of rows, into a new array (what the tests compare)."""
    out = np.empty((input.shape[0], weight_t.shape[1]), np.int8)
    _fully_connected_gemm_into(input, weight_t, table, input_offset, output_offset, act_min, act_max, out)
    return out

"""Size of a layer's weight stream once encoded for the Ethos-U (an estimate, not the encoder).

Vela compresses weights losslessly (its ``mlw_codec``, regor ``mlw_encode.cpp``). The int8
values, zero point removed, are mapped to unsigned codes (``palval``: |w| << 1 | sign, so 0, -1,
1, -2 ... -> 0, 1, 2, 3 ...) and coded with a Golomb-Rice code (GRC) whose divisor 2^k is
chosen per stretch of values. Two features of the codec decide most of the size and are
restated here from ``update_palette`` / ``create_palette``:

- **zero runs**: when runs of at least ``MIN_ZERO_RUN_LENGTH`` zeros hold half the zeros and
  zero is over ``ZERO_FREQ_THRESHOLD`` times as frequent as the commonest other value, the zeros
  leave the value stream: each non-zero value carries the length of the zero run before it in a
  second GRC stream (divisor 2^0 .. 2^3). A pruned layer (98% zeros) then costs about a bit per
  zero run instead of a bit per zero;
- **palette**: the (up to) 32 commonest values become indices 0..31 in frequency order when
  they cover at least half the values; the rest are coded past the palette.

The estimate prices each chunk of :data:`CHUNK` codes with its best divisor (plain GRC
``(u >> k) + 1 + k`` bits, the truncated variant ``min(q + 1, 2) + k`` for q <= 2, or the
values themselves uncompressed at the width of the largest — what a full-range layer gets:
Vela encodes ExecuTorch's 128x128 1x1 layers of VWW in 16,400 bytes for 16,384 weights),
the zero-run stream likewise, a :data:`HEADER_BITS` slice header per chunk and the palette::

    encoded = ⌈(Σ value bits + Σ run bits + headers + palette) / 8⌉ rounded up to STREAM_ALIGN

and, beside it, ``BIAS_BYTES_PER_CHANNEL`` (isa_models.ethos_u.layers) per output channel for the
40-bit bias and 32-bit scale. Not modelled: Vela's stream order (OFM-depth bricks per core,
which changes run lengths a little), its greedy slice-boundary search. Without the weight
values (a Work item carries only their byte count) the stream is taken as uncompressed:
``encoded = bytes + STREAM_ALIGN``.
"""

from __future__ import annotations

import numpy as np

CHUNK = 512
HEADER_BITS = 16
STREAM_ALIGN = 16
MAX_K = 5  # value-stream divisors 2^0 .. 2^5 (mlw w_grc_params)
MAX_ZK = 3  # zero-run divisors 2^0 .. 2^3 (mlw z_grc_params)
PALETTE_MAX = 32
MIN_ZERO_RUN_LENGTH = 2
ZERO_FREQ_THRESHOLD = 5


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _align(nbytes: int) -> int:
    return _ceil(nbytes, STREAM_ALIGN) * STREAM_ALIGN


def _grc_bits(u: np.ndarray, max_k: int, truncated: bool, raw_bits: int = 0) -> int:
    """Σ over chunks of the cheapest GRC coding of ``u`` (one divisor per chunk), or of
    ``raw_bits`` per value uncompressed when that is cheaper (``raw_bits`` > 0)."""
    if u.size == 0:
        return 0
    pad = (-u.size) % CHUNK
    chunks = np.concatenate([u, np.zeros(pad, np.int64)]).reshape(-1, CHUNK)
    valid = np.concatenate([np.ones(u.size, bool), np.zeros(pad, bool)]).reshape(-1, CHUNK)
    costs = []
    for k in range(max_k + 1):
        q = chunks >> k
        costs.append(np.where(valid, q + 1 + k, 0).sum(axis=1))
        if truncated:  # q <= 2 only: at most 2 bits of quotient
            ok = np.where(valid, q <= 2, True).all(axis=1)
            t = np.where(valid, np.minimum(q + 1, 2) + k, 0).sum(axis=1)
            costs.append(np.where(ok, t, np.iinfo(np.int64).max))
    if raw_bits:
        costs.append(valid.sum(axis=1) * raw_bits)
    return int(np.stack(costs).min(axis=0).sum()) + HEADER_BITS * chunks.shape[0]


def _zero_runs(v: np.ndarray) -> tuple[bool, np.ndarray]:
    """Whether the codec codes zeros as runs (``update_palette``), and the run before each
    non-zero value plus the trailing run."""
    zero = v == 0
    total = int(zero.sum())
    nonzero = v[~zero]
    common = int(np.unique(nonzero, return_counts=True)[1].max()) if nonzero.size else 0
    idx = np.flatnonzero(~zero)
    runs = np.diff(np.concatenate([[-1], idx, [v.size]])) - 1  # zeros before each non-zero, + tail
    in_runs = int(runs[runs >= MIN_ZERO_RUN_LENGTH].sum())
    use = in_runs >= total // 2 and total > ZERO_FREQ_THRESHOLD * common
    return use, runs.astype(np.int64)


def encoded_weight_bytes(weights: np.ndarray | None, nbytes: int) -> int:
    """Estimated encoded size of ``weights`` (int8 values, zero point 0) or of ``nbytes``
    uncompressed weights when the values are not known (see the module docstring)."""
    if weights is None or weights.size == 0:
        return _align(nbytes) + STREAM_ALIGN if nbytes else 0
    v = weights.astype(np.int64).ravel()
    zruns, runs = _zero_runs(v)
    values = v[v != 0] if zruns else v
    palval = (np.abs(values) << 1) | (values < 0)
    bits = 0
    if palval.size:
        codes, counts = np.unique(palval, return_counts=True)
        order = np.argsort(-counts, kind="stable")
        palette = codes[order][:PALETTE_MAX]
        if counts[order][:PALETTE_MAX].sum() * 2 >= palval.size and palette.size > 1:
            index = np.full(int(codes.max()) + 1, -1, np.int64)
            index[palette] = np.arange(palette.size)
            u = np.where(index[palval] >= 0, index[palval], palval + palette.size)
            bits += palette.size * max(2, int(palette.max()).bit_length())
        else:
            u = palval - int(np.flatnonzero(np.bincount(palval, minlength=32)[:31] == 0)[:1].sum())
        # uncompressed mode codes the value itself (palval), at the width of the largest
        raw = max(2, int(palval.max()).bit_length())
        bits += _grc_bits(np.maximum(u, 0), MAX_K, truncated=True, raw_bits=raw)
    if zruns:
        bits += _grc_bits(runs, MAX_ZK, truncated=False)
    return _align(_ceil(bits, 8))


__all__ = ["CHUNK", "encoded_weight_bytes"]

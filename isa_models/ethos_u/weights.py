"""Size of a layer's weight stream once encoded for the Ethos-U (an estimate, not the encoder).

Vela compresses weights losslessly (its ``mlw_codec``): the int8 values, zero point removed, are
mapped to unsigned codes (zig-zag: 0, -1, 1, -2 ... -> 0, 1, 2, 3 ...) and coded with a
Golomb-Rice code whose divisor 2^k is chosen per chunk, with zero runs coded apart. The
estimate here prices each chunk of :data:`CHUNK` values with its best ``k``::

    bits(chunk) = min_k Σ_u ((u >> k) + 1 + k) + HEADER_BITS      (k = 0 ... 7)
    encoded     = ⌈Σ bits / 8⌉ rounded up to STREAM_ALIGN bytes

and, beside it, ``BIAS_BYTES_PER_CHANNEL`` (isa_models.ethos_u.layers) per output channel for the
40-bit bias and 32-bit scale. Without the weight values (a Work item carries only their byte
count) the stream is taken as uncompressed: ``encoded = bytes + STREAM_ALIGN``.
"""

from __future__ import annotations

import numpy as np

CHUNK = 512
HEADER_BITS = 16
STREAM_ALIGN = 16
MAX_K = 7


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _align(nbytes: int) -> int:
    return _ceil(nbytes, STREAM_ALIGN) * STREAM_ALIGN


def encoded_weight_bytes(weights: np.ndarray | None, nbytes: int) -> int:
    """Estimated encoded size of ``weights`` (int8 values, zero point 0) or of ``nbytes``
    uncompressed weights when the values are not known (see the module docstring)."""
    if weights is None or weights.size == 0:
        return _align(nbytes) + STREAM_ALIGN if nbytes else 0
    v = weights.astype(np.int64).ravel()
    u = np.where(v >= 0, 2 * v, -2 * v - 1)
    pad = (-u.size) % CHUNK
    chunks = np.concatenate([u, np.zeros(pad, np.int64)]).reshape(-1, CHUNK)
    valid = np.concatenate([np.ones(u.size, bool), np.zeros(pad, bool)]).reshape(-1, CHUNK)
    costs = np.stack([np.where(valid, (chunks >> k) + 1 + k, 0).sum(axis=1) for k in range(MAX_K + 1)])
    bits = int(costs.min(axis=0).sum()) + HEADER_BITS * chunks.shape[0]
    return _align(_ceil(bits, 8))


__all__ = ["CHUNK", "encoded_weight_bytes"]

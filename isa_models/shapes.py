"""Shape helpers every formula module shares: CMSIS-NN params (VECTORS.md names) → numbers.

A call is described the way conformance vectors describe it (shared VECTORS.md): the CMSIS-NN
function name and a flat mapping of its scalar parameters under CMSIS-NN's struct field names
(``input_dims.h``, ``stride.w``, ``filter_dims.c`` ...). The formula modules compute their
features from that mapping only, so the same code serves the calibration sweep (harness
cases), ``refsim conformance --estimate`` (vector files) and whole programs (op arguments).

Per-tier blocking factors (how many elements one pass of the innermost loop handles) are data
here, read from CMSIS-NN's kernels: DSP kernels pair two 16-bit lanes per SMLAD and read the
reduction dimension 4 int8 at a time (``arm_nn_mat_mult_kernel_s8_s16``: 2 columns x 2 output
channels); MVE kernels take 16 int8 lanes per VMLADAV (``arm_nn_mat_mult_nt_t_s8``: 4 columns
per pass) and 4 int32 lanes for per-channel work (depthwise, pooling).
"""

# No ``from __future__ import annotations`` here: typing.NamedTuple compiles every string
# annotation into a ForwardRef at import (~10 µs a field), which the estimate's cold start pays.
from collections.abc import Mapping
from typing import Any, NamedTuple

from kernels_py.types import Dims, Tile

Params = Mapping[str, Any]

TIERS = ("scalar", "dsp", "mve")


class Blocking(NamedTuple):
    """How one tier's kernels block their loops (see the module docstring)."""

    reduce_lanes: int  # int8 elements of the reduction (K) per inner-loop pass
    columns: int  # output pixels (matrix columns) per mat-mult pass
    channels: int  # output channels (matrix rows) per mat-mult pass
    channel_lanes: int  # channels per pass of channel-parallel kernels (depthwise, pooling)
    element_lanes: int  # elements per pass of elementwise kernels


BLOCKING: Mapping[str, Blocking] = {
    "scalar": Blocking(reduce_lanes=1, columns=1, channels=1, channel_lanes=1, element_lanes=1),
    "dsp": Blocking(reduce_lanes=4, columns=2, channels=2, channel_lanes=4, element_lanes=4),
    "mve": Blocking(reduce_lanes=16, columns=4, channels=1, channel_lanes=4, element_lanes=16),
}


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def value(p: Params, key: str, default: int | None = None) -> int:
    if key in p:
        return int(p[key])
    if default is None:
        raise KeyError(key)
    return default


def dims(p: Params, prefix: str) -> Dims:
    return Dims(*(value(p, f"{prefix}.{k}", 1) for k in "nhwc"))


def tile(p: Params, prefix: str, default: int = 0) -> Tile:
    return Tile(w=value(p, f"{prefix}.w", default), h=value(p, f"{prefix}.h", default))


def valid_taps(size: int, out: int, kernel: int, stride: int, pad: int, dilation: int = 1) -> int:
    """Σ over the ``out`` output positions of the filter taps that fall inside the input
    (``0 <= o·stride - pad + k·dilation < size``): the taps a kernel that skips padding runs."""
    total = 0
    for o in range(out):
        base = o * stride - pad
        for k in range(kernel):
            if 0 <= base + k * dilation < size:
                total += 1
    return total


# --- memcpy / memset as the library runs them -------------------------------------------------------


class ByteOps:
    """Accumulates the loop trips of the memcpy / memset calls of one kernel call.

    Non-MVE (newlib's Thumb-2 ``memcpy``/``memset``, read from its disassembly): memcpy with
    ``n >= 8`` or both pointers word aligned copies 64-byte blocks, then 16-byte (copy_quads),
    then 4-byte steps (copy_steps) and a 1-3 byte tail; a misaligned ``n < 8`` copy is a byte loop. memset stores bytes
    up to a word-aligned destination, then 16-byte blocks, then 4-byte steps, then tail bytes.
    (``set_empty``: 0-byte calls, which return early; ``set_long``: the 16-byte loop's set-up.)
    ARMv6-M (``arch="armv6-m"``: newlib's ``thumb/v6-m`` memcpy is its generic C one): an
    ``n < 16`` or misaligned copy is a byte loop of ``n`` trips (copy_bytes); an aligned one
    (copy_long) copies 16-byte blocks (copy_blocks), then words (copy_steps, the word loop's
    set-up copy_step_loops when it runs), then ``n mod 4`` bytes through the same byte loop.
    Its memset has the Thumb-2 one's shape (byte head to alignment, 16-byte blocks, words,
    bytes) with its own loops: head bytes (set_head, a 7-instruction loop) apart from the tail
    bytes (set_bytes, 4 instructions each), the fill word built once 4+ bytes remain
    (set_words), the word loop's set-up when it runs (set_step_loops).
    MVE (``arm_memcpy_s8`` / ``arm_memset_s8``, kernels_c's ``nn_copy_s8_mve``): one tail-
    predicated WLSTP loop of 16 bytes per trip. ``skip_empty``: the caller skips 0-byte calls
    (kernels_c) rather than making them (CMSIS-NN calls arm_memset_s8 with 0 bytes too).
    """

    def __init__(self, tier: str, skip_empty: bool, arch: str | None = None) -> None:
        self.mve = tier == "mve"
        self.v6m = arch == "armv6-m" and not self.mve
        self.skip_empty = skip_empty
        copies = (
            ("copy_calls", "copy_long", "copy_blocks", "copy_step_loops", "copy_steps", "copy_bytes")
            if self.v6m
            else (
                "copy_calls",
                "copy_short",
                "copy_blocks",
                "copy_quads",
                "copy_steps",
                "copy_tails",
                "copy_small",
            )
        )
        sets = ("set_calls", "set_empty", "set_long", "set_blocks", "set_steps", "set_bytes")
        if self.v6m:
            sets = (*sets, "set_head", "set_words", "set_step_loops")
        self.f: dict[str, float] = dict.fromkeys((*copies, *sets), 0.0)

    def copy(self, n: int, dst: int, src: int, times: int = 1) -> None:
        if n <= 0 and self.skip_empty:
            return
        f = self.f
        f["copy_calls"] += times
        if self.mve:
            f["copy_blocks"] += times * ceil_div(max(n, 0), 16)
            return
        if self.v6m:
            self._copy_v6m(max(n, 0), dst, src, times)
            return
        if n < 8 and (dst | src) % 4:  # 1-3 bytes: a byte and a halfword; 4-7: n - 3 loop trips
            f["copy_short"] += times
            f["copy_small"] += times * max(n - 3, 0)
            return
        head = 0 if (dst | src) % 4 == 0 or src % 4 == 0 else (4 - dst % 4) % 4
        m = n - head
        f["copy_small"] += times * head
        f["copy_blocks"] += times * (m // 64)
        f["copy_quads"] += times * ((m % 64) // 16)
        f["copy_steps"] += times * ((m % 16) // 4)
        f["copy_tails"] += times * (m % 4 != 0)

    def _copy_v6m(self, n: int, dst: int, src: int, times: int) -> None:
        f = self.f
        if n < 16 or (dst | src) % 4:
            f["copy_bytes"] += times * n
            return
        words = (n % 16) // 4
        for name, v in (("copy_long", 1), ("copy_blocks", n // 16), ("copy_step_loops", int(words > 0)),
                        ("copy_steps", words), ("copy_bytes", n % 4)):  # fmt: skip
            f[name] += times * v

    def fill(self, n: int, dst: int, times: int = 1) -> None:
        if n <= 0 and self.skip_empty:
            return
        f = self.f
        f["set_calls"] += times
        if self.mve:
            f["set_blocks"] += times * ceil_div(max(n, 0), 16)
            return
        if n <= 0:
            f["set_empty"] += times
            return
        head = min((4 - dst % 4) % 4, n)
        m = n - head
        if self.v6m:  # a 7-instruction head loop, a 4-instruction tail loop
            words = (m % 16) // 4 if m >= 4 else 0
            for name, v in (("set_head", head), ("set_words", int(m >= 4)), ("set_long", int(m >= 16)),
                            ("set_blocks", m // 16), ("set_step_loops", int(words > 0)), ("set_steps", words),
                            ("set_bytes", m % 4 if m >= 4 else m)):  # fmt: skip
                f[name] += times * v
            return
        if m < 4:
            f["set_bytes"] += times * n
            return
        f["set_long"] += times * (m >= 16)
        f["set_blocks"] += times * (m // 16)
        f["set_steps"] += times * ((m % 16) // 4)
        f["set_bytes"] += times * (head + m % 4)


__all__ = [
    "BLOCKING",
    "TIERS",
    "Blocking",
    "ByteOps",
    "Params",
    "ceil_div",
    "dims",
    "tile",
    "valid_taps",
    "value",
]

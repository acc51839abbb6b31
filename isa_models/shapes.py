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

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kernels_py.types import Dims, Tile

Params = Mapping[str, Any]

TIERS = ("scalar", "dsp", "mve")


@dataclass(frozen=True)
class Blocking:
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


__all__ = ["BLOCKING", "TIERS", "Blocking", "Params", "ceil_div", "dims", "tile", "valid_taps", "value"]

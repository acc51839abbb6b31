"""Hypothesis strategies shared by the kernel tests: the CMSIS-NN parameter extremes.

Every strategy leans on its edges on purpose: offsets at -128/127 (input) and ±128,
multipliers near 2^30 and 2^31 - 1, shifts across [-31, 30], narrow and single-value
activation ranges.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from kernels_py.types import Activation

INT8 = st.integers(-128, 127)

#: input_offset = -input_zero_point, zero point in [-128, 127]
input_offsets = st.one_of(st.sampled_from([-127, 128, 0, 1, -1]), st.integers(-127, 128))
#: output_offset = output_zero_point
output_offsets = st.one_of(st.sampled_from([-128, 127, 0]), st.integers(-128, 127))
#: Q0.31 multipliers as quantize_multiplier makes them: [2^30, 2^31 - 1] (0 for a zero scale)
multipliers = st.one_of(
    st.sampled_from([1 << 30, (1 << 31) - 1, (1 << 31) - 2, (1 << 30) + 1]),
    st.integers(1 << 30, (1 << 31) - 1),
)
#: any legal shift; realistic conv shifts are in [-12, 0], the extremes exercise the rounding
shifts = st.one_of(st.sampled_from([-31, -30, 0, 1, 30]), st.integers(-31, 30), st.integers(-14, 2))


@st.composite
def activations(draw) -> Activation:
    """Full, ReLU-like, narrow and single-value clamp ranges."""
    kind = draw(st.sampled_from(["full", "relu", "narrow", "single", "any"]))
    if kind == "full":
        return Activation(-128, 127)
    if kind == "relu":
        return Activation(draw(st.integers(-128, 0)), 127)
    if kind == "single":
        v = draw(INT8)
        return Activation(v, v)
    lo = draw(INT8)
    hi = draw(st.integers(lo, min(127, lo + (8 if kind == "narrow" else 255))))
    return Activation(lo, hi)


def int8_arrays(shape) -> st.SearchStrategy[np.ndarray]:
    """int8 arrays whose elements favour -128, 127 and 0."""
    return hnp.arrays(np.int8, shape, elements=st.one_of(st.sampled_from([-128, 127, 0]), INT8))


def int32_arrays(shape, lo: int = -(2**20), hi: int = 2**20) -> st.SearchStrategy[np.ndarray]:
    return hnp.arrays(np.int32, shape, elements=st.integers(lo, hi))


def per_channel(channels: int) -> st.SearchStrategy[tuple[np.ndarray, np.ndarray]]:
    """(multiplier, shift) int32 arrays for ``channels`` output channels."""
    return st.tuples(
        hnp.arrays(np.int32, (channels,), elements=multipliers),
        hnp.arrays(np.int32, (channels,), elements=shifts),
    )

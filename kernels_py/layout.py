"""Data movement on int8 tensors: CMSIS-NN's ``arm_pad_s8`` and ``arm_transpose_s8``.

Neither kernel does arithmetic, so neither rounds. Shapes follow the C API:

* pad: ``cmsis_nn_dims input_size, pre_pad, post_pad`` in NHWC; a tensor of rank below 4 is
  right-aligned (``[w, c]`` is ``{1, 1, w, c}``), as ExecuTorch's cortex_m ``pad_out`` does.
* transpose: ``cmsis_nn_transpose_params {num_dims, permutations}`` with ``input_dims`` and
  ``output_dims`` *left*-aligned (a ``[rows, cols]`` matrix is ``{n=rows, h=cols}``), as TFLM's
  and ExecuTorch's callers fill them. ``permutations[k]`` is the input axis that becomes output
  axis ``k`` (numpy's ``transpose`` convention).
"""

from __future__ import annotations

import numpy as np

from kernels_py._jit import jit
from kernels_py.errors import KernelArgumentError
from kernels_py.types import INT8_MAX, INT8_MIN, Dims, check_int8

_AXES = ("n", "h", "w", "c")


# --- pad --------------------------------------------------------------------------------------


def _check_pad(
    input: np.ndarray, pre_pad: Dims, post_pad: Dims, pad_value: int
) -> tuple[np.ndarray, tuple[int, ...], tuple[int, ...]]:
    function = "pad_s8"
    data = check_int8(function, "input", input)
    if not 1 <= data.ndim <= 4:
        raise KernelArgumentError(function, "input", "1- to 4-D (NHWC, right-aligned)", f"shape {data.shape}")
    pads = []
    for name, pad in (("pre_pad", pre_pad), ("post_pad", post_pad)):
        if not isinstance(pad, Dims):
            raise KernelArgumentError(function, name, "a kernels_py.types.Dims", type(pad).__name__)
        values = pad.shape
        if any(isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 0 for v in values):
            raise KernelArgumentError(function, name, "non-negative integers", values)
        absent = values[: 4 - data.ndim]
        if any(absent):
            # Padding an axis the tensor does not have would change its rank.
            raise KernelArgumentError(
                function,
                name,
                f"zero on the axes a {data.ndim}-D input lacks ({_AXES[: 4 - data.ndim]})",
                values,
            )
        pads.append(tuple(int(v) for v in values))
    if isinstance(pad_value, bool) or not isinstance(pad_value, int | np.integer):
        raise KernelArgumentError(function, "pad_value", "an integer", type(pad_value).__name__)
    if not INT8_MIN <= pad_value <= INT8_MAX:
        raise KernelArgumentError(function, "pad_value", f"in [{INT8_MIN}, {INT8_MAX}]", pad_value)
    return data.reshape(Dims.of(data.shape).shape), pads[0], pads[1]


def _padded_shape(in4: tuple[int, ...], pre: tuple[int, ...], post: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(p + s + q for p, s, q in zip(pre, in4, post, strict=True))


def pad_s8_reference(input: np.ndarray, pre_pad: Dims, post_pad: Dims, pad_value: int) -> np.ndarray:
    """TFLM ``reference_ops::Pad`` order: every output position is pad_value or the input value."""
    data, pre, post = _check_pad(input, pre_pad, post_pad, pad_value)
    shape = _padded_shape(data.shape, pre, post)
    out = np.empty(shape, np.int8)
    for n in range(shape[0]):
        for h in range(shape[1]):
            for w in range(shape[2]):
                for c in range(shape[3]):
                    index = (n - pre[0], h - pre[1], w - pre[2], c - pre[3])
                    inside = all(0 <= i < s for i, s in zip(index, data.shape, strict=True))
                    out[n, h, w, c] = int(data[index]) if inside else int(pad_value)
    return out.reshape(shape[4 - input.ndim :])


@jit
def _pad_s8_kernel(data, pre_n, pre_h, pre_w, pre_c, pad_value, out):
    out[...] = pad_value
    n_in, h_in, w_in, c_in = data.shape
    for n in range(n_in):
        for h in range(h_in):
            for w in range(w_in):
                for c in range(c_in):
                    out[pre_n + n, pre_h + h, pre_w + w, pre_c + c] = data[n, h, w, c]


def pad_s8(input: np.ndarray, pre_pad: Dims, post_pad: Dims, pad_value: int) -> np.ndarray:
    """``arm_pad_s8`` (``Source/PadFunctions/arm_pad_s8.c``): constant padding, no rounding.

    Output dims are ``pre_pad + input_size + post_pad`` per NHWC axis; every new element is
    ``pad_value`` (TFLM passes the constant input or the output zero point). ``input`` may be 1-
    to 4-D, right-aligned to NHWC; the output keeps its rank, so pads on absent axes must be 0.
    """
    data, pre, post = _check_pad(input, pre_pad, post_pad, pad_value)
    shape = _padded_shape(data.shape, pre, post)
    out = np.empty(shape, np.int8)
    _pad_s8_kernel(data, pre[0], pre[1], pre[2], pre[3], int(pad_value), out)
    return out.reshape(shape[4 - input.ndim :])


# --- transpose --------------------------------------------------------------------------------


def _check_transpose(input: np.ndarray, permutation) -> tuple[np.ndarray, tuple[int, ...]]:
    function = "transpose_s8"
    data = check_int8(function, "input", input)
    if not 1 <= data.ndim <= 4:
        raise KernelArgumentError(function, "input", "1- to 4-D", f"shape {data.shape}")
    try:
        perm = tuple(int(p) for p in permutation)
    except (TypeError, ValueError):
        raise KernelArgumentError(function, "permutation", "a sequence of integers", permutation) from None
    if len(perm) != data.ndim:
        raise KernelArgumentError(function, "permutation", f"{data.ndim} entries (one per input axis)", perm)
    if sorted(perm) != list(range(data.ndim)):
        # CMSIS-NN only rejects entries above num_dims - 1; a repeated axis would leave output
        # elements unwritten, so we reject it too.
        raise KernelArgumentError(function, "permutation", f"a permutation of 0..{data.ndim - 1}", perm)
    return data, perm


def transpose_s8_reference(input: np.ndarray, permutation) -> np.ndarray:
    """TFLM ``reference_ops::Transpose``: ``out[i_0, ..] = in[j]`` with ``j[perm[k]] = i_k``."""
    data, perm = _check_transpose(input, permutation)
    out_shape = tuple(data.shape[p] for p in perm)
    out = np.empty(out_shape, np.int8)
    for out_index in np.ndindex(*out_shape):
        in_index = [0] * data.ndim
        for k, p in enumerate(perm):
            in_index[p] = out_index[k]
        out[out_index] = int(data[tuple(in_index)])
    return out


@jit
def _transpose_s8_kernel(data, out_strides, out_flat):
    n_in, h_in, w_in, c_in = data.shape
    for n in range(n_in):
        for h in range(h_in):
            for w in range(w_in):
                base = n * out_strides[0] + h * out_strides[1] + w * out_strides[2]
                for c in range(c_in):
                    out_flat[base + c * out_strides[3]] = data[n, h, w, c]


def transpose_s8(input: np.ndarray, permutation: tuple[int, ...]) -> np.ndarray:
    """``arm_transpose_s8`` (``Source/TransposeFunctions/arm_transpose_s8.c``), 1- to 4-D; no rounding.

    Output axis ``k`` is input axis ``permutation[k]`` (``np.transpose`` semantics). Like
    ``arm_transpose_s8_default`` this walks the input in order and scatters with output strides
    indexed by input axis (``out_strides[perm[k]] = stride of output axis k``). One deliberate
    difference: CMSIS-NN's 2-D branch ignores ``permutations`` and always transposes, so a 2-D
    identity ``(0, 1)`` transposes on the device; here it is the identity.
    """
    data, perm = _check_transpose(input, permutation)
    rank = data.ndim
    out_shape = tuple(data.shape[p] for p in perm)
    full_perm = perm + tuple(range(rank, 4))
    full_out_shape = out_shape + (1,) * (4 - rank)
    out_axis_strides = [1, 1, 1, 1]
    for k in range(2, -1, -1):
        out_axis_strides[k] = out_axis_strides[k + 1] * full_out_shape[k + 1]
    out_strides = np.zeros(4, np.int64)
    for k, p in enumerate(full_perm):
        out_strides[p] = out_axis_strides[k]
    out = np.empty(out_shape, np.int8)
    _transpose_s8_kernel(data.reshape(data.shape + (1,) * (4 - rank)), out_strides, out.reshape(-1))
    return out


# --- NCHW to channels-last --------------------------------------------------------------------


@jit
def channels_last_from_nchw(src, dst):
    """``dst[n, y, x, c] = src[n, c, y, x]``: an NCHW int8 array into NHWC memory, one image row at a
    time (each channel's row read contiguously, stored every C bytes). A runtime input's copy, not a
    CMSIS-NN kernel: the logical NCHW input of a channels-last program lands in its arena this way."""
    n, c, h, w = src.shape
    for b in range(n):
        for y in range(h):
            row = dst[b, y].reshape(-1)
            for ch in range(c):
                line = src[b, ch, y]
                for x in range(w):
                    row[x * c + ch] = line[x]

"""An independent evaluation of a lowered program: the compiler's IR (`compiler.ir.Graph`) run
with plain numpy/torch integer arithmetic, never through the .pte, refsim's runtime or
kernels_py's conv/FC/pool kernels.

Each op is its textbook integer definition (TFLM reference kernels): accumulate in int64
(torch float64 convolutions are exact here: every |term| < 2^16 and every sum < 2^40), then
CMSIS-NN's ``arm_nn_requantize`` written out below, then the output offset and the clamp.
Softmax alone uses kernels_py's readable reference (``softmax_s8_reference``, no numba), whose
fixed-point exp and reciprocal are tested against CMSIS-NN elsewhere.
"""

from __future__ import annotations

import numpy as np
import torch

from compiler.ir import Graph, TensorArg
from kernels_py.softmax import softmax_s8_reference


def requantize(acc: np.ndarray, multiplier, shift) -> np.ndarray:
    """``arm_nn_requantize``: ``v << max(s, 0)``, ``(v·m + 2^30) >> 31`` in int64, then a
    rounding divide by ``2^max(-s, 0)`` (remainder against ``mask >> 1``, +1 when negative)."""
    acc = np.asarray(acc, np.int64)
    m = np.asarray(multiplier, np.int64)
    s = np.asarray(shift, np.int64)
    left, right = np.maximum(s, 0), np.maximum(-s, 0)
    v = (acc << left).astype(np.int64)
    v = ((v * m + (1 << 30)) >> 31).astype(np.int64)
    mask = (np.int64(1) << right) - 1
    remainder = v & mask
    threshold = (mask >> 1) + (v < 0)
    return (v >> right) + (remainder > threshold)


def _physical(info, logical: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(logical.transpose(info.dim_order))


def _logical(info, physical: np.ndarray) -> np.ndarray:
    return physical.transpose(np.argsort(info.dim_order))


class Oracle:
    def __init__(self, graph: Graph) -> None:
        self.g = graph
        self.store: dict[str, np.ndarray] = {}  # name -> bytes in physical order (flat)

    def get(self, name: str) -> np.ndarray:
        """Logical-shape array of tensor ``name``."""
        info = self.g.tensors[name]
        if info.data is not None:
            return info.data
        base = self.g.storage(name)
        physical_shape = tuple(info.sizes[d] for d in info.dim_order)
        return _logical(info, self.store[base].reshape(physical_shape))

    def put(self, name: str, logical: np.ndarray) -> None:
        info = self.g.tensors[name]
        assert tuple(logical.shape) == tuple(info.sizes), (name, logical.shape, info.sizes)
        self.store[self.g.storage(name)] = _physical(info, logical.astype(info.dtype.numpy_dtype)).reshape(-1)

    def run(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        for name, x in zip(self.g.inputs, inputs, strict=True):
            self.put(name, x)
        for call in self.g.calls:
            args = [
                None
                if isinstance(a, TensorArg) and a.name in call.scratch
                else self.get(a.name)
                if isinstance(a, TensorArg)
                else a
                for a in call.args
            ]
            op = call.op.split("::")[1]
            self.put(call.out, getattr(self, op)(call, *args))
        return [self.get(n).copy() for n in self.g.outputs]

    # --- ops (arguments as the schema lists them) ---------------------------------------------

    def pad(self, call, x, pre, post, value):
        info = self.g.tensors[call.args[0].name]
        physical = _physical(info, x)
        padded = np.pad(physical, list(zip(pre, post, strict=True)), constant_values=value)
        return _logical(self.g.tensors[call.out], padded)

    @staticmethod
    def _finish(acc, mult, shift, out_off, lo, hi):
        return np.clip(requantize(acc, mult, shift) + out_off, lo, hi).astype(np.int8)

    def quantized_conv2d(self, call, x, w, b, stride, padding, dilation, in_off, out_off, m, s, lo, hi, _):
        weight = torch.from_numpy(w.transpose(0, 3, 1, 2).astype(np.float64))  # OHWI -> OIHW
        groups = x.shape[1] // w.shape[3]
        return self._conv(x, weight, b, stride, padding, dilation, groups, in_off, out_off, m, s, lo, hi)

    def quantized_depthwise_conv2d(
        self, call, x, w, b, stride, padding, dilation, mult, in_off, out_off, m, s, lo, hi, _
    ):
        weight = torch.from_numpy(w[0].transpose(2, 0, 1)[:, None].astype(np.float64))  # [C_OUT, 1, KH, KW]
        return self._conv(x, weight, b, stride, padding, dilation, x.shape[1], in_off, out_off, m, s, lo, hi)

    def _conv(self, x, weight, b, stride, padding, dilation, groups, in_off, out_off, m, s, lo, hi):
        xs = torch.from_numpy(x.astype(np.float64) + in_off)
        acc = torch.nn.functional.conv2d(
            xs, weight, None, tuple(stride), tuple(padding), tuple(dilation), groups
        )
        acc = acc.numpy().astype(np.int64)
        if b is not None:
            acc = acc + b.astype(np.int64)[None, :, None, None]
        mult = m.astype(np.int64)[None, :, None, None]
        shift = s.astype(np.int64)[None, :, None, None]
        return self._finish(acc, mult, shift, out_off, lo, hi)

    def quantized_linear(self, call, x, w, b, ksum, in_off, w_off, out_off, m, s, hi, lo):
        assert w_off == 0
        xi = x.astype(np.int64)
        if ksum is not None:  # MVE form: Σ x·w + (in_off·Σw + bias)
            acc = xi @ w.astype(np.int64).T + ksum.astype(np.int64).reshape(1, -1)
        else:
            acc = (xi + in_off) @ w.astype(np.int64).T + (0 if b is None else b.astype(np.int64))
        return self._finish(acc, m[0], s[0], out_off, lo, hi)

    def quantized_add(self, call, a, za, ma, sa, b, zb, mb, sb, zo, mo, so, lo, hi):
        left = 20
        x = requantize((a.astype(np.int64) - za) << left, ma, sa)
        y = requantize((b.astype(np.int64) - zb) << left, mb, sb)
        return self._finish(x + y, mo, so, zo, lo, hi)

    def quantized_avg_pool2d(self, call, x, kernel, stride, padding, ceil_mode, zp, m, s, _):
        assert tuple(padding) == (0, 0) and not ceil_mode
        out_shape = self.g.tensors[call.out].sizes
        xi = x.astype(np.int64)
        out = np.empty(out_shape, np.int64)
        for i in range(out_shape[2]):
            for j in range(out_shape[3]):
                window = xi[
                    :, :, i * stride[0] : i * stride[0] + kernel[0], j * stride[1] : j * stride[1] + kernel[1]
                ]
                total = window.sum(axis=(2, 3))
                count = window.shape[2] * window.shape[3]
                # round half away from zero, C division
                rounded = np.where(
                    total > 0, (total + count // 2) // count, -((-total + count // 2) // count)
                )
                out[:, :, i, j] = rounded
        return np.clip(out, -128, 127).astype(np.int8)

    def quantized_max_pool2d(self, call, x, kernel, stride, padding, dilation, ceil_mode, zi, zo, lo, hi):
        t = torch.from_numpy(x.astype(np.float64))
        t = torch.nn.functional.pad(t, (padding[1], padding[1], padding[0], padding[0]), value=-1e9)
        out = torch.nn.functional.max_pool2d(t, tuple(kernel), tuple(stride))
        return np.clip(out.numpy(), lo, hi).astype(np.int8)

    def softmax(self, call, x, dim, zi, zo, mult, shift, diff_min):
        rows = x.reshape(-1, x.shape[-1])
        return softmax_s8_reference(rows, mult, shift, diff_min).reshape(x.shape)

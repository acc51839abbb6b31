"""The exact integer matrix product that batched runs install in kernels_py.gemm: ONNX Runtime's
``MatMulInteger`` (its MLAS int8 GEMM: on a host with VNNI, vpdpbusd, several times the float32 BLAS).

kernels_py.gemm computes every convolution and fully connected layer as a product of int8 operands
(its module docstring); by default in float32, exact below 2^24. This module gives it the same
integer sums from an integer GEMM, installed for the duration of a batch by `batch_product`
(refsim.runtime.batch; ``refsim run`` never imports ONNX Runtime). Why the sums are exact, not merely close:

- ``MatMulInteger`` is specified as ``Σ_k (a[m, k] - a_zero_point)·(b[k, n] - b_zero_point)`` in
  int32, with no rounding anywhere; its int32 additions wrap, and the caller takes the sum modulo
  2^32, as CMSIS-NN's int32 accumulator does (kernels_py.gemm).
- One instruction family could break that: on x86 without VNNI, MLAS multiplies uint8 by int8 with
  ``vpmaddubsw``, which saturates the sum of two adjacent products to int16 (255·127·2 > 2^15; ONNX
  Runtime's quantization guide names this and prescribes uint8 x uint8 against it). So the weights
  are given as int8 only where the CPU has VNNI (``vpdpbusd`` accumulates in int32 without
  saturating); elsewhere as uint8 ``w + 128`` with the zero point 128, which MLAS widens to 16 bits
  before multiplying (``255·255`` products, exact). tests/ops/test_gemm.py drives both forms with
  the extreme operands that would saturate.

**Narrow products in groups of rows** (`group_rows`). MLAS is slow on a product whose depth and width
are both small (VWW's first convolution, K = 27 and N = 8: 36 GMAC/s; its first pointwise layer,
K = 8 and N = 16: 20 GMAC/s, against 170-370 from N = 32 and K = 32 up). Such a product takes g
consecutive rows as one: ``a`` [M, K] row-major *is* ``a'`` [M/g, g·K] without a copy, its product with
the block-diagonal matrix of g copies of W (g·K x g·N, zero elsewhere) is ``a'·W'`` [M/g, g·N], which
*is* ``a·W`` [M, N] row-major: each output row sums its own K products plus g·K - K products by a
zero weight (weight minus its zero point: 0 as int8, 128 - 128 as uint8), which add 0. The same
integers; VWW's two layers 2x faster.

One session per weight matrix, zero point and grouping, built on first use and kept (a few ms each);
one intra-op thread (refsim.runtime.batch spreads samples over the cores); ``run`` releases the GIL,
and a session serves every thread at once.
"""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import threading
from pathlib import Path
from typing import Any

import numpy as np

#: ``REFSIM_INTEGER_GEMM=0`` keeps batched runs on the float32 product (for A/B measurements).
ENV = "REFSIM_INTEGER_GEMM"
#: Sessions kept at most (one per weight matrix and zero point: a few programs' layers).
MAX_SESSIONS = 512


def group_rows(depth: int, out_c: int) -> int:
    """Rows taken as one (module docstring): doubled, up to 4, while the grouped product stays narrower
    than 32 columns and shallower than 64 (measured on a Zen 5 core, 8,192 rows: K=27/N=8 best at 4
    (16.0 -> 10.2 us a VWW sample), K=8/N=16 at 2 (13.5 -> 6.9), K=27/N=16 at 2 (7.3 -> 5.7); 8 lost
    on every shape, and from N = 32 or K = 40 grouping only lost)."""
    group = 1
    while group < 4 and group * out_c < 32 and group * depth < 64:
        group *= 2
    return group


def cpu_has_vnni(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether this x86 CPU has AVX512-VNNI or AVX-VNNI (read from ``/proc/cpuinfo``; False when unknown)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return False
    for line in text.splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            return bool(flags & {"avx512_vnni", "avx_vnni"})
    return False


def signed_weights_exact() -> bool:
    """Whether MLAS's uint8 x int8 GEMM cannot saturate here (module docstring): VNNI on x86, and
    every other architecture (Arm's dot-product and widening multiplies accumulate in 32 bits)."""
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64", "i386", "i686"):
        return cpu_has_vnni()
    return True


class IntegerMatmul:
    """``matmul(a, zero_point, weight_t)`` for kernels_py.gemm: int32 ``Σ_k (a[m, k] - zero_point)·W[k, n]``
    with ``a`` uint8 [M, K] and ``weight_t`` the float32 [K, N] of kernels_py.gemm.conv_filter_matrix
    (integers in [-128, 127])."""

    def __init__(self, signed_weights: bool | None = None) -> None:
        import onnxruntime

        self._ort = onnxruntime
        self.signed_weights = signed_weights_exact() if signed_weights is None else signed_weights
        self._sessions: dict[tuple[int, int], tuple[np.ndarray, Any]] = {}
        self._lock = threading.Lock()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._options = options
        self.calls = 0  # products computed (approximate under threads; what the tests look at)

    def __call__(self, a: np.ndarray, zero_point: int, weight_t: np.ndarray) -> np.ndarray:
        self.calls += 1
        a = np.ascontiguousarray(a)
        rows, (depth, out_c) = a.shape[0], weight_t.shape
        group = group_rows(depth, out_c)
        if rows % group:
            group = 1
        key = (id(weight_t), zero_point, group)
        entry = self._sessions.get(key)
        if entry is None or entry[0] is not weight_t:  # the id of a freed matrix may come back
            with self._lock:
                if len(self._sessions) >= MAX_SESSIONS:  # a session keeps its matrix alive: bounded
                    self._sessions.clear()
                entry = (weight_t, self._session(weight_t, zero_point, group))
                self._sessions[key] = entry
        grouped = a.reshape(rows // group, group * depth)  # a view: the same bytes
        return entry[1].run(None, {"A": grouped})[0].reshape(rows, out_c)

    def _session(self, weight_t: np.ndarray, zero_point: int, group: int = 1) -> Any:
        from onnx import TensorProto, helper, numpy_helper

        w = np.asarray(weight_t).astype(np.int8)
        depth, out_c = group * w.shape[0], group * w.shape[1]
        if group > 1:  # g copies of W on the diagonal, 0 elsewhere (module docstring)
            blocks = np.zeros((depth, out_c), np.int8)
            for g in range(group):
                blocks[g * w.shape[0] : (g + 1) * w.shape[0], g * w.shape[1] : (g + 1) * w.shape[1]] = w
            w = blocks
        if self.signed_weights:
            weight, w_zero = w, np.int8(0)
        else:
            weight, w_zero = (w.view(np.uint8) ^ np.uint8(0x80)), np.uint8(128)
        graph = helper.make_graph(
            [helper.make_node("MatMulInteger", ["A", "W", "AZ", "WZ"], ["Y"])],
            "refsim_integer_gemm",
            [helper.make_tensor_value_info("A", TensorProto.UINT8, ["M", depth])],
            [helper.make_tensor_value_info("Y", TensorProto.INT32, ["M", out_c])],
            [
                numpy_helper.from_array(weight, "W"),
                numpy_helper.from_array(np.array(zero_point, np.uint8), "AZ"),
                numpy_helper.from_array(np.array(w_zero), "WZ"),
            ],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 8
        return self._ort.InferenceSession(
            model.SerializeToString(), self._options, providers=["CPUExecutionProvider"]
        )


_users = 0
_saved = None
_state = threading.Lock()


@functools.cache
def product() -> IntegerMatmul | None:
    """This process's integer product, made on first use; None when ONNX Runtime is not installed (the
    ``fast`` extra) or ``REFSIM_INTEGER_GEMM=0``."""
    if os.environ.get(ENV, "1") == "0":
        return None
    try:
        return IntegerMatmul()
    except ImportError:
        return None


@contextlib.contextmanager
def batch_product():
    """kernels_py.gemm on the integer product for the duration of a batch (refsim.runtime.batch), and
    on what it was before afterwards: single runs and the conformance kernels outside a batch keep the
    float32 product (the same bits; it keeps each path's compiled specializations where they were)."""
    global _users, _saved
    matmul = product()
    if matmul is None:
        yield None
        return
    from kernels_py import gemm

    with _state:
        if _users == 0:
            _saved = gemm._integer_matmul
            gemm.set_integer_matmul(matmul)
        _users += 1
    try:
        yield matmul
    finally:
        with _state:
            _users -= 1
            if _users == 0:
                gemm.set_integer_matmul(_saved)


__all__ = ["ENV", "IntegerMatmul", "batch_product", "cpu_has_vnni", "product", "signed_weights_exact"]

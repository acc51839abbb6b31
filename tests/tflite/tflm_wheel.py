"""The tflite-micro wheel (TFLM's x86-64 build, reference kernels) as an oracle for single-op models.

`run_single_op` builds a one-operator model with `ModelBuilder`, runs it in TFLM's interpreter
with every tensor preserved and returns the outputs, or raises `Rejected` with TFLM's message
when its Prepare refuses the model. Tests import `tflm_runtime()` and skip with its reason when
the wheel is not importable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pytest

from refsim.tflite import schema as s
from refsim.tflite.writer import ModelBuilder, write_model

_WHEEL = "tflite-micro==0.dev20261023182759 (pip install it, or the test extra)"

NP_OF = {
    s.TensorType.INT8: np.int8,
    s.TensorType.INT16: np.int16,
    s.TensorType.INT32: np.int32,
    s.TensorType.FLOAT32: np.float32,
    s.TensorType.UINT8: np.uint8,
    s.TensorType.INT64: np.int64,
    s.TensorType.BOOL: np.bool_,
}


def _importable() -> bool:
    try:
        from tflite_micro.python.tflite_micro import runtime  # noqa: F401
    except ImportError:
        return False
    return True


#: Mark a test (or ``pytestmark`` a module) that needs the wheel.
requires_wheel = pytest.mark.skipif(
    not _importable(), reason=f"tflite_micro is not importable; install {_WHEEL}"
)


def tflm_runtime():
    """The wheel's ``runtime`` module; skips the calling test when it is missing."""
    try:
        from tflite_micro.python.tflite_micro import runtime
    except ImportError as exc:  # pragma: no cover - depends on the environment
        pytest.skip(f"tflite_micro is not importable ({exc}); install {_WHEEL}")
    return runtime


class Rejected(Exception):
    """TFLM's AllocateTensors (a kernel's Prepare) refused the model."""


@dataclass
class T:
    """One tensor of a single-op model: shape, type, quantization, and constant data if any."""

    shape: tuple[int, ...]
    dtype: s.TensorType = s.TensorType.INT8
    scale: float | None = None
    zero_point: int = 0
    data: np.ndarray | None = None


@dataclass
class Run:
    model: bytes
    outputs: list[np.ndarray] = field(default_factory=list)
    interpreter: object = None

    def tensor(self, index: int) -> np.ndarray:
        """Tensor ``index`` of subgraph 0 as TFLM holds it after the run."""
        d = self.interpreter.GetTensor(index, 0)
        return np.array(d["tensor_data"]).reshape(d["shape"])


def build_single_op(
    code: s.BuiltinOperator, inputs: Sequence[T], outputs: Sequence[T], **options
) -> tuple[bytes, list[int], list[int]]:
    """The model bytes and the indices of its variable inputs and of its outputs."""
    b = ModelBuilder()
    ins, graph_inputs = [], []
    for t in inputs:
        k = b.tensor(t.shape, t.dtype, data=t.data, scale=t.scale, zero_point=t.zero_point)
        ins.append(k)
        if t.data is None:
            graph_inputs.append(k)
    outs = [b.tensor(t.shape, t.dtype, scale=t.scale, zero_point=t.zero_point) for t in outputs]
    b.op(code, ins, outs, **options)
    return write_model(b.build(graph_inputs, outs)), graph_inputs, outs


def run_model(
    data: bytes, inputs: Sequence[np.ndarray], n_outputs: int = 1, arena_size: int = 1 << 20
) -> Run:
    """Run ``data`` once with ``inputs``; returns its ``n_outputs`` outputs."""
    runtime = tflm_runtime()
    try:
        it = runtime.Interpreter.from_bytes(
            data, arena_size=arena_size, intrepreter_config=runtime.InterpreterConfig.kPreserveAllTensors
        )
    except RuntimeError as exc:
        raise Rejected(str(exc)) from None
    for k, x in enumerate(inputs):
        it.set_input(x, k)
    it.invoke()
    run = Run(data)
    run.outputs = [np.array(it.get_output(k)) for k in range(n_outputs)]
    run.interpreter = it
    return run


def run_single_op(
    code: s.BuiltinOperator,
    inputs: Sequence[T],
    outputs: Sequence[T],
    values: Sequence[np.ndarray],
    **options,
) -> list[np.ndarray]:
    """Build, run (``values`` for the non-constant inputs, in order) and return the outputs."""
    data, _, _ = build_single_op(code, inputs, outputs, **options)
    return run_model(data, values).outputs

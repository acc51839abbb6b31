"""Run a .tflite on the tflite-micro wheel (TFLM's x86-64 interpreter, reference kernels) and on
refsim, every tensor of the subgraph side by side.

The wheel is the oracle of the float32 kernel tests; it keeps every intermediate tensor
(``kPreserveAllTensors``) so ``tensors`` can read each one with ``GetTensor``.
"""

from __future__ import annotations

import numpy as np
import pytest

from refsim.runtime.program import Program

try:
    from tflite_micro.python.tflite_micro import runtime as tflm_runtime
except ImportError:  # pragma: no cover - the test extra installs it
    tflm_runtime = None


def require_wheel() -> None:
    if tflm_runtime is None:
        pytest.skip("the tflite-micro wheel (the TFLM oracle) is not importable; pip install '.[test]'")


def wheel_tensors(data: bytes, inputs: list[np.ndarray], indices: list[int]) -> dict[int, np.ndarray]:
    """Tensor index -> its value after TFLM's Invoke. The arena is sized generously (the wheel's
    default, ten times the file, is too small for a tiny model with large activations, and an
    interpreter whose AllocateTensors failed crashes on invoke)."""
    it = tflm_runtime.Interpreter.from_bytes(
        data,
        arena_size=len(data) * 10 + (1 << 20),
        intrepreter_config=tflm_runtime.InterpreterConfig.kPreserveAllTensors,
    )
    for k, x in enumerate(inputs):
        it.set_input(x, k)
    it.invoke()
    out = {}
    for i in indices:
        t = it.GetTensor(i, 0)
        out[i] = np.asarray(t["tensor_data"]).reshape(t["shape"])
    return out


def refsim_tensors(data: bytes, inputs: list[np.ndarray], indices: list[int]) -> dict[int, np.ndarray]:
    """Tensor index -> its value after refsim runs the lowered model (value i is tensor i)."""
    method = Program.load(data).method("forward")
    method.execute(list(inputs))
    return {i: method.values[i].logical.copy() for i in indices}


def bits(x: np.ndarray) -> np.ndarray:
    """The float32 bit patterns: signed zeros and infinities compared exactly. A NaN is compared
    as a NaN only: its sign and payload follow the host FPU's NaN rules (x86 makes 0xffc00000,
    a Cortex-M 0x7fc00000) and LLVM may swap a commutative operation's operands."""
    return np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)


def assert_bit_exact(data: bytes, inputs: list[np.ndarray], indices: list[int]) -> None:
    ours = refsim_tensors(data, inputs, indices)
    theirs = wheel_tensors(data, inputs, indices)
    for i in indices:
        a, b = ours[i], theirs[i]
        assert a.shape == b.shape, f"tensor {i}: shape {a.shape} vs the wheel's {b.shape}"
        both_nan = np.isnan(a) & np.isnan(b)
        diff = np.flatnonzero((bits(a) != bits(b)) & ~both_nan)
        if diff.size:
            k = diff[0]
            pytest.fail(
                f"tensor {i}: {diff.size} of {a.size} values differ from the wheel's bits; first at flat "
                f"{k}: refsim {a.reshape(-1)[k]!r} ({bits(a).reshape(-1)[k]:#010x}) vs "
                f"wheel {b.reshape(-1)[k]!r} ({bits(b).reshape(-1)[k]:#010x})"
            )

"""TFLM's interpreter in a process of its own, for tests/tflite/oracle.py.

The ``tflite-micro`` wheel segfaults now and then in ``LinearMemoryPlanner``'s constructor
(kPreserveAllTensors) when it shares a process with refsim's Numba kernels, depending on the
heap the process has built up (seen with a 1x1 conv that runs fine in a fresh process; gdb puts
the crash in ``MicroAllocator::Create``). So the oracle runs here, in a spawned process that
imports nothing but numpy and the wheel.
"""

from __future__ import annotations

import numpy as np

#: TFLM's arena in the oracle runs: every test model fits with every tensor preserved.
ARENA_BYTES = 8 << 20


def run(
    data: bytes, inputs: list[np.ndarray], tensors: list[int]
) -> tuple[dict[int, np.ndarray], list[np.ndarray]]:
    """One Invoke of ``data`` on ``inputs``: copies of tensors ``tensors`` and of the outputs."""
    from tflite_micro.python.tflite_micro import runtime

    it = runtime.Interpreter.from_bytes(
        data, arena_size=ARENA_BYTES, intrepreter_config=runtime.InterpreterConfig.kPreserveAllTensors
    )
    for k, x in enumerate(inputs):
        it.set_input(x, k)
    it.invoke()
    found = {}
    for i in tensors:  # the wheel's GetTensor does not check the index: the caller does
        t = it.GetTensor(i, 0)
        found[i] = np.array(t["tensor_data"], copy=True).reshape(t["shape"])
    outputs = []
    k = 0
    while True:
        try:
            outputs.append(np.array(it.get_output(k), copy=True))
        except (IndexError, ValueError, RuntimeError):
            break
        k += 1
    return found, outputs

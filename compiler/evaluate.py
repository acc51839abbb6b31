"""How well a compiled program tracks its float model: run it in refsim, compare.

``snr_db = 10 log10(Σ ref² / Σ (ref - deq)²)`` over all outputs of all inputs, where ``deq`` is
the program's int8 output dequantized with its output quantization; ``top1`` is the share of
inputs whose arg-max agrees (classifiers). Inputs are quantized with the program's input
quantization by ExecuTorch's portable ``quantize_per_tensor`` rule (float32, half to even).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kernels_py.quantize import quantize_per_tensor
from refsim.runtime import Program


@dataclass(frozen=True)
class Agreement:
    snr_db: float
    top1: float
    max_abs_error: float
    samples: int


def run_float_inputs(pte: bytes, inputs: np.ndarray) -> np.ndarray:
    """The program's (dequantized) outputs for a batch of float inputs, one inference each."""
    program = Program.load(pte)
    method = program.method("forward")
    in_q = _io(program, "input0")
    out_q = _io(program, "output0")
    outputs = []
    for x in inputs:
        x = x[None].astype(np.float32)
        if in_q is not None:
            x = quantize_per_tensor(x, in_q[0], in_q[1], -128, 127, np.int8)
        (y,) = method.execute([x])
        if out_q is not None:
            y = (y.astype(np.float64) - out_q[1]) * out_q[0]
        outputs.append(y[0])
    return np.stack(outputs)


def _io(program: Program, name: str) -> tuple[float, int] | None:
    methods = program.method_names
    if f"forward_{name}_scale" not in methods:
        return None
    return float(program.constant_method(f"forward_{name}_scale")), int(
        program.constant_method(f"forward_{name}_zp")
    )


def agreement(reference: np.ndarray, test: np.ndarray) -> Agreement:
    ref = reference.astype(np.float64).reshape(len(reference), -1)
    out = test.astype(np.float64).reshape(len(test), -1)
    noise = float(np.sum((ref - out) ** 2))
    signal = float(np.sum(ref**2))
    snr = math.inf if noise == 0 else 10 * math.log10(signal / noise)
    top1 = float(np.mean(ref.argmax(axis=1) == out.argmax(axis=1))) if ref.shape[1] > 1 else 1.0
    return Agreement(snr, top1, float(np.max(np.abs(ref - out))), len(ref))

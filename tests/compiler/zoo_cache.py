"""Shared by the compiler tests: each zoo model is compiled once per target per session.

Imported only after the test module's own ``pytest.importorskip("torch")`` (the compiler tests
need torch and torchao, the ``compile`` extra; ``make test`` runs them in the interop venv; the
planner's tests in this folder need neither and run everywhere).
"""

from __future__ import annotations

import functools

import torch

from compiler import zoo
from compiler.api import CompileResult, compile

TARGETS = ("cortex-m55", "cortex-m4")
EVALUATION_SAMPLES = 256


@functools.cache
def compiled(name: str, target: str, observers: str = "cmsis") -> CompileResult:
    spec = zoo.MODELS[name]
    samples = zoo.calibration(spec, channels_last=False)
    return compile(
        zoo.build(spec, channels_last=False),
        (samples[0],),
        target=target,
        calibration=samples,
        observers=observers,
    )


@functools.cache
def float_outputs(name: str):
    spec = zoo.MODELS[name]
    xs = zoo.evaluation_set(spec, EVALUATION_SAMPLES)
    with torch.no_grad():
        return xs.numpy(), zoo.build(spec, channels_last=False)(xs).numpy()

"""Shared fixtures of the compiler tests: each zoo model is compiled once per target per session.

These tests need torch and torchao (the ``compile`` extra); ``make test`` runs them in the
interop venv. In an environment without torch every module here is skipped at collection.
"""

from __future__ import annotations

import functools

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchao")

from compiler import zoo  # noqa: E402
from compiler.api import CompileResult, compile  # noqa: E402

TARGETS = ("cortex-m55", "cortex-m4")
EVALUATION_SAMPLES = 256


@functools.cache
def compiled(name: str, target: str, observers: str = "cmsis") -> CompileResult:
    spec = zoo.MODELS[name]
    samples = zoo.calibration(spec, channels_last=False)
    return compile(
        zoo.build(spec, channels_last=False), (samples[0],), target=target, calibration=samples, observers=observers
    )


@functools.cache
def float_outputs(name: str):
    spec = zoo.MODELS[name]
    xs = zoo.evaluation_set(spec, EVALUATION_SAMPLES)
    with torch.no_grad():
        return xs.numpy(), zoo.build(spec, channels_last=False)(xs).numpy()

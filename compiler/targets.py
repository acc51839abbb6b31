"""Compile targets: a Cortex-M core and the CMSIS-NN tier (``isa``) its build uses.

The tier decides two things in the emitted program: the scratch sizes (CMSIS-NN's
``*_get_buffer_size`` for that tier) and, for MVE, the linear layers' precomputed kernel sums.
``executorch_cpu`` names the same core in ExecuTorch's ``CortexM`` enum (interop tests).
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.errors import CompileError


@dataclass(frozen=True)
class Target:
    name: str
    isa: str  # "scalar" | "dsp" | "mve"
    executorch_cpu: str


TARGETS = {
    t.name: t
    for t in (
        Target("cortex-m0plus", "scalar", "M0PLUS"),
        Target("cortex-m3", "scalar", "M3"),
        Target("cortex-m4", "dsp", "M4"),
        Target("cortex-m7", "dsp", "M7"),
        Target("cortex-m33", "dsp", "M33"),
        Target("cortex-m55", "mve", "M55"),
        Target("cortex-m85", "mve", "M85"),
    )
}


def get_target(name: str | Target) -> Target:
    if isinstance(name, Target):
        return name
    try:
        return TARGETS[name.lower()]
    except KeyError:
        raise CompileError(f"unknown target {name!r}: expected one of {', '.join(TARGETS)}") from None

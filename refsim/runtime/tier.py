"""The ISA tier a program was exported for, read from the file (no cost model needed).

A ``cortex_m::quantized_linear.out`` carrying ``kernel_sum`` (the MVE form of
arm_fully_connected_s8) is an MVE export; a linear without one a DSP export; a program without
linears shows nothing (None). ``refsim run`` picks its kernels by this tier when ``--isa`` is not
given, so it lives apart from refsim.runtime.estimate: a run without ``--estimate-cycles`` never
imports isa_models.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from refsim.runtime.program import Method


def exported_tier(method: Method) -> str | None:
    """The tier the file shows ``method`` was exported for (see the module docstring)."""
    seen = None
    for call in method.calls:
        if call is None or call.op.name != "cortex_m::quantized_linear.out":
            continue
        if call.args.kernel_sum is not None:
            return "mve"
        seen = "dsp"
    return seen


__all__ = ["exported_tier"]

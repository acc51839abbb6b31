"""TFLM's own cycles around CMSIS-NN, measured per core (``tflm_dispatch.json``, written by
``python -m refsim.lab.tflm.dispatch --write`` from the real TFLM's per-op Invoke windows under
QEMU; the file's ``provenance`` says how)::

    per inference  = invoke                      MicroInterpreter::Invoke's entry and exit
    per operator   = per_op                      TFLM's loop between two ops
                   + kernels[op](output bytes)   the op's TFLM kernel outside CMSIS-NN
                                                 (a reference kernel's whole work, RESHAPE's copy)

An op the file has no kernel fit for, or a core it was not measured on, has no estimate here
(:func:`kernel_cost` / :func:`loop_cost` return None and the caller says so)."""

# No ``from __future__ import annotations``: NamedTuple (see isa_models.cortex_m.program).
import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from isa_models.cost import Cost
from isa_models.errors import IsaModelError

DATA = Path(__file__).with_name("tflm_dispatch.json")
FORMAT = "refsim-tflm-dispatch"


class KernelFit(NamedTuple):
    """One builtin op's TFLM kernel work: coefficients per quantity over ``const`` (and ``bytes``)."""

    op: str
    coefficients: Mapping[str, Mapping[str, float]]
    error: Mapping[str, Mapping[str, float]]

    def evaluate(self, quantity: str, output_bytes: int) -> float:
        c = self.coefficients[quantity]
        return float(c.get("const", 0.0) + c.get("bytes", 0.0) * output_bytes)


class TflmDispatch(NamedTuple):
    """One core's measured TFLM overheads."""

    core: str
    invoke: Cost
    per_op: Cost
    kernels: Mapping[str, KernelFit]
    source: str


@functools.cache
def measured(path: Path = DATA) -> Mapping[str, TflmDispatch]:
    """Per core the measured overheads ({} when the file is absent)."""
    if not path.is_file():
        return {}
    try:
        document = json.loads(path.read_text())
        if document.get("format") != FORMAT:
            raise IsaModelError(f"{path}: format must be {FORMAT!r}, got {document.get('format')!r}")
        prov = document["provenance"]
        source = f"tflm_dispatch.json (TFLM {prov['tflm'].split()[1][:8]} under QEMU, {prov['date']})"
        out = {}
        for core, entry in document["cores"].items():

            def cost(part: Mapping[str, float]) -> Cost:
                return Cost(instructions=part["instructions"], cycles=part["cycles"], sources=(source,))

            kernels = {
                op: KernelFit(op, {q: dict(v) for q, v in k["coefficients"].items()}, k.get("error", {}))
                for op, k in entry["kernels"].items()
            }
            out[core] = TflmDispatch(core, cost(entry["invoke"]), cost(entry["per_op"]), kernels, source)
        return out
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise IsaModelError(f"{path}: malformed TFLM dispatch file ({exc!r})") from None


def loop_cost(core: str, operators: int) -> Cost | None:
    """Invoke's own work for ``operators`` ops on ``core`` (None: not measured on that core)."""
    found = measured().get(core)
    if found is None:
        return None
    return found.invoke + found.per_op.scaled(operators)


def kernel_cost(core: str, op: str, output_bytes: int) -> Cost | None:
    """The TFLM kernel's own work of builtin ``op`` (None: not measured)."""
    found = measured().get(core)
    fit = None if found is None else found.kernels.get(op)
    if fit is None:
        return None
    return Cost(
        instructions=round(fit.evaluate("instructions", output_bytes)),
        cycles=fit.evaluate("cycles", output_bytes),
        sources=(f"{found.source}: {op} kernel",),
    )


def measured_cores() -> tuple[str, ...]:
    return tuple(sorted(measured()))


__all__ = ["DATA", "KernelFit", "TflmDispatch", "kernel_cost", "loop_cost", "measured", "measured_cores"]

"""``compiler.compile``: a PyTorch module → a cortex_m ``.pte`` (torch only; no executorch).

torch.export → fold BatchNorm → PT2E prepare (our quantizer and observers) → calibrate →
PT2E convert → lower to cortex_m calls → plan memory → serialize with refsim's writer
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

from compiler.emit import Planned, plan_memory, serialize
from compiler.errors import CompileError
from compiler.ir import Graph, Layer
from compiler.lower import lower
from compiler.quantizer import CortexMQuantizer, fold_batch_norm
from compiler.targets import Target, get_target


@dataclass
class CompileResult:
    """What ``compile`` made: the file's bytes and everything the summary reports."""

    pte: bytes
    target: Target
    graph: Graph
    planned: Planned
    layers: list[Layer]
    seconds: dict[str, float] = field(default_factory=dict)
    quantized_module: torch.fx.GraphModule | None = None

    @property
    def arena_bytes(self) -> int:
        return self.planned.plan.arena_bytes

    @property
    def constant_bytes(self) -> int:
        return self.graph.constant_bytes()

    def io_quantization(self) -> dict[str, tuple[float, int] | None]:
        out = {}
        for kind, names in (("input", self.graph.inputs), ("output", self.graph.outputs)):
            for k, name in enumerate(names):
                t = self.graph.tensors[name]
                out[f"{kind}{k}"] = None if t.scale is None else (t.scale, t.zero_point)
        return out


def _as_tuple(x) -> tuple:
    return tuple(x) if isinstance(x, tuple | list) else (x,)


def compile(
    model: torch.nn.Module,
    example_inputs: Sequence[torch.Tensor] | torch.Tensor,
    *,
    target: str | Target = "cortex-m55",
    calibration: Iterable | None = None,
    planner: str = "best",
    observers: str = "cmsis",
    reorder: bool = False,
    path=None,
    progress: Callable[[int], None] | None = None,
) -> CompileResult:
    """Compile ``model`` for ``target`` and return the .pte (also written to ``path`` if given).

    ``calibration``: an iterable of inputs (each a tensor or a tuple of tensors) run through the
    observed model; default: the example inputs alone (a poor calibration, but a valid one).
    ``progress(k)`` is called after each calibration sample. ``planner``: a name of
    ``compiler.planner.ALGORITHMS`` or ``"best"``. ``observers``: ``"cmsis"`` (ours) or
    ``"executorch"`` (ExecuTorch's CortexMQuantizer observers, for comparisons). ``reorder``:
    let the planner reorder independent calls to lower the peak before planning.
    """
    tgt = get_target(target)
    example = _as_tuple(example_inputs)
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    model = model.eval()
    try:
        exported = torch.export.export(model, example)
    except Exception as exc:  # torch.export's own errors are long; keep the first line
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CompileError(f"torch.export failed: {first}") from exc
    gm = exported.module(check_guards=False) if _accepts_check_guards(exported) else exported.module()
    folded = fold_batch_norm(gm)
    seconds["export"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    prepared = prepare_pt2e(gm, CortexMQuantizer(observers))
    samples = [example] if calibration is None else calibration
    count = 0
    with torch.no_grad():
        for sample in samples:
            prepared(*_as_tuple(sample))
            count += 1
            if progress is not None:
                progress(count)
    if count == 0:
        raise CompileError("calibration data is empty")
    converted = convert_pt2e(prepared)
    seconds["quantize"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    graph = lower(converted, tgt)
    graph.layers[:0] = [
        Layer(name, "batch_norm", "folded", "into the conv/linear before it") for name in folded
    ]
    seconds["lower"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    planned = plan_memory(graph, planner, reorder=reorder)
    seconds["plan"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    data = serialize(graph, planned, path)
    seconds["serialize"] = time.perf_counter() - t0
    return CompileResult(data, tgt, graph, planned, graph.layers, seconds, converted)


def _accepts_check_guards(exported) -> bool:
    import inspect

    return "check_guards" in inspect.signature(exported.module).parameters


def float_reference(model: torch.nn.Module, inputs: torch.Tensor) -> np.ndarray:
    """The float model's output for a batch (for SNR/top-1 checks)."""
    with torch.no_grad():
        return model.eval()(inputs).numpy()

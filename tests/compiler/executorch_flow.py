"""ExecuTorch 1.5.1's own cortex_m flow on a zoo model (the interop reference; needs executorch).

REFERENCE.md §1's recipe with examples/models/make_models.py's two corrections (the graph output
shares its producer's quantization; constants left unused by the cortex_m passes are dropped),
on the same module, weights and calibration data that ``compiler.compile`` gets.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "models"))
import make_models

from compiler import zoo


def export(name: str, cpu: str, samples: list[torch.Tensor]) -> bytes:
    """The ExecuTorch .pte of ``zoo:name`` for ``cpu`` ("M55", "M4", ...), calibrated on
    ``samples`` (NCHW; made channels-last here, as the legacy cortex_m layout wants)."""
    from executorch.backends.cortex_m.edge_compile_config import cortex_m_edge_compile_config
    from executorch.backends.cortex_m.passes.cortex_m_pass_manager import CortexMPassManager
    from executorch.backends.cortex_m.target_config import CortexM, CortexMTargetConfig
    from executorch.exir import to_edge_transform_and_lower
    from executorch.exir.passes.quantize_io_pass import QuantizeInputs, QuantizeOutputs
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    spec = zoo.MODELS[name]
    model = zoo.build(spec, channels_last=True)
    cl = [x.to(memory_format=torch.channels_last) if spec.image else x for x in samples]
    example = (cl[0],)
    exported = torch.export.export(model, example).module(check_guards=False)
    prepared = prepare_pt2e(exported, make_models.output_sharing_quantizer())
    with torch.no_grad():
        for x in cl:
            prepared(x)
    converted = convert_pt2e(prepared)
    edge = to_edge_transform_and_lower(
        torch.export.export(converted, example), compile_config=cortex_m_edge_compile_config()
    )
    edge = edge.transform(
        [QuantizeInputs(edge, [0], method_name="forward"), QuantizeOutputs(edge, [0], method_name="forward")]
    )
    target = CortexMTargetConfig(cpu=getattr(CortexM, cpu))
    lowered = CortexMPassManager(edge.exported_program(), target_config=target).transform()
    make_models.drop_unused_constants(lowered)
    edge._edge_programs["forward"] = lowered
    return edge.to_executorch().buffer

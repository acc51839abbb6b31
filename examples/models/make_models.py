"""Export the four MLPerf Tiny models as int8 cortex_m ExecuTorch programs (the bundled models).

Needs torch==2.13.0 and ``executorch[ethos-u]==1.5.1`` (the interop venv, never refsim's .venv):

    .venv-interop/bin/python examples/models/make_models.py            # writes the bundled files
    .venv-interop/bin/python examples/models/make_models.py --only kws # one model
    .venv-interop/bin/python examples/models/make_models.py --fp32 DIR # fp32 programs, into DIR

Writes, next to this script:

- ``kws.pte``, ``vww.pte``, ``ic.pte``, ``ad.pte``: the MLPerf Tiny reference architectures
  (REFERENCE.md §5) with deterministic random weights, quantized with ExecuTorch's
  CortexMQuantizer (per-channel conv weights, per-tensor activations) on deterministic random
  calibration inputs and lowered by the cortex_m passes for Cortex-M55 (MVE). Inputs and
  outputs are int8 (QuantizeInputs/QuantizeOutputs: the programs carry ``forward_input0_*``
  and ``forward_output0_*`` constant methods with the quantization parameters).
- ``kws_m4.pte``, ``vww_m4.pte``, ``ic_m4.pte``, ``ad_m4.pte``: the same models, weights and
  calibration lowered for Cortex-M4 (DSP): the same graphs, but every fully connected layer
  keeps the bias argument where the MVE lowering precomputes ``kernel_sum = -zp·Σw + bias``,
  and the scratch buffers are sized for the DSP kernels.
- ``<name>.io.npz``: ``input0`` (one int8 input in logical NCHW / [N, F] shape) and
  ``output0``, what ExecuTorch's own Python evaluation of the lowered graph (the cortex_m
  ops' Python reference implementations, not CMSIS-NN exact) computes for it.
- ``models.json``: per program, the operator list, MACs (per layer and total), the arena
  sizes (``non_const_buffer_sizes``), live-bytes bounds with and without CMSIS-NN scratch,
  and the I/O quantization, for README.md, the tests and the benchmarks.

The flow is REFERENCE.md §1's recipe with two corrections (README.md, "Export flow"): the
graph output shares its producer's quantization (`output_sharing_quantizer`), and constants
left without users by the cortex_m passes are dropped (`drop_unused_constants`).
Layout: the legacy cortex_m layout mode with a channels-last model and channels-last inputs
(ExecuTorch 1.5.1's default; its experimental explicit-layout mode fails on KWS and gives VWW
a larger arena).

``--fp32 DIR`` writes ``<name>_fp32.pte`` (the same modules and weights, not quantized, NCHW,
on ExecuTorch's portable kernels, or delegated to XNNPACK with ``--fp32-backend xnnpack``) for
timing ExecuTorch's runtime. benchmarks/runtime.py calls `export_fp32` itself. They are not
bundled (about 4× the int8 size).

Everything is seeded: the same versions produce byte-identical files.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # the repository root, for compiler.zoo

# The architectures, seeds, weights and data live in compiler/zoo.py (``refsim compile zoo:NAME``
# starts from the same modules); the bundled programs keep BatchNorm shifts around 0.1.
from compiler import zoo  # noqa: E402
from compiler.zoo import CALIBRATION_SAMPLES, MODELS, SEED, Spec, calibration, evaluation_input, sample  # noqa: E402, F401

BUNDLED_BN_BETA = 0.1


def build(spec: Spec) -> nn.Module:
    """``compiler.zoo.build`` with the bundled programs' BatchNorm shifts (β≈0.1), channels-last."""
    return zoo.build(spec, channels_last=True, bn_beta=BUNDLED_BN_BETA)


# --- export ------------------------------------------------------------------------------------


def output_sharing_quantizer():
    """CortexMQuantizer, except that the graph output shares the quantization of its producer.

    CortexMQuantizer gives the graph output a fresh observer. After a softmax (fixed output
    quantization 1/256, -128 for CMSIS-NN) that observer calibrates another scale, and the
    lowered program ends in a float dequantize → quantize requantization, which turns one LSB
    of the softmax into three or four of the output. Sharing the producer's quantization
    makes the softmax output the program output, as in TFLite models.
    """
    from executorch.backends.cortex_m.quantizer.quantizer import CortexMQuantizer
    from torchao.quantization.pt2e.quantizer import SharedQuantizationSpec

    class Quantizer(CortexMQuantizer):
        def annotate(self, model):
            model = super().annotate(model)
            for node in model.graph.find_nodes(op="output"):
                annotation = node.meta.get("quantization_annotation")
                if annotation is None:
                    continue
                for producer in list(annotation.input_qspec_map):
                    produced = producer.meta.get("quantization_annotation")
                    if produced is not None and produced.output_qspec is not None:
                        annotation.input_qspec_map[producer] = SharedQuantizationSpec(producer)
            return model

    return Quantizer()


def lower(spec: Spec, cpu: str = "M55"):
    """The cortex_m flow of REFERENCE.md §1 up to the lowered edge program.

    Returns the EdgeProgramManager, the lowered ``forward`` ExportedProgram (not yet in it)
    and the int8 test input, quantized with the parameters QuantizeInputs chose.
    """
    from executorch.backends.cortex_m.edge_compile_config import cortex_m_edge_compile_config
    from executorch.backends.cortex_m.passes.cortex_m_pass_manager import CortexMPassManager
    from executorch.backends.cortex_m.target_config import CortexM, CortexMTargetConfig
    from executorch.exir import to_edge_transform_and_lower
    from executorch.exir.passes.quantize_io_pass import QuantizeInputs, QuantizeOutputs
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    model = build(spec)
    samples = calibration(spec)
    example = (samples[0],)
    exported = torch.export.export(model, example).module(check_guards=False)
    prepared = prepare_pt2e(exported, output_sharing_quantizer())
    with torch.no_grad():
        for x in samples:
            prepared(x)
    converted = convert_pt2e(prepared)
    edge = to_edge_transform_and_lower(
        torch.export.export(converted, example), compile_config=cortex_m_edge_compile_config()
    )
    quantize_inputs = QuantizeInputs(edge, [0], method_name="forward")
    edge = edge.transform([quantize_inputs, QuantizeOutputs(edge, [0], method_name="forward")])
    target = CortexMTargetConfig(cpu=getattr(CortexM, cpu))
    lowered = CortexMPassManager(edge.exported_program(), target_config=target).transform()
    drop_unused_constants(lowered)
    scale, zp, qmin, qmax, dtype = quantize_inputs.quant_args[0]
    x = torch.ops.quantized_decomposed.quantize_per_tensor(
        evaluation_input(spec), scale, zp, qmin, qmax, dtype
    )
    return edge, lowered, x


def export_cortex_m(spec: Spec, cpu: str = "M55") -> tuple[bytes, np.ndarray, np.ndarray]:
    """Program bytes, the int8 test input (logical shape) and what ExecuTorch's Python
    evaluation of the lowered graph (the cortex_m ops' reference implementations, not CMSIS-NN
    exact) outputs for it."""
    edge, lowered, x = lower(spec, cpu)
    with torch.no_grad():
        reference = lowered.module()(x)
    if isinstance(reference, tuple | list):
        (reference,) = reference
    edge._edge_programs["forward"] = lowered
    program = edge.to_executorch()  # rewrites `lowered` in place (out variants, memory plan)
    return program.buffer, x.contiguous().numpy(), reference.contiguous().numpy()


def drop_unused_constants(ep) -> None:
    """Remove constant placeholders nothing reads any more.

    The cortex_m passes replace conv/linear weights by re-laid-out copies (OHWI, kernel sums,
    per-channel multiplier/shift tensors) but leave the originals, and the dequantize
    parameters, as placeholders without users; `to_executorch` would serialize them all,
    about doubling the constant data. ExecuTorch's own `remove_unused_parameters_pass` only
    looks at parameters, and these are buffers and lifted constants.
    """
    from torch.export.graph_signature import ExportGraphSignature, InputKind

    constant_kinds = (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)
    nodes = {n.name: n for n in ep.graph_module.graph.nodes if n.op == "placeholder"}
    kept = []
    for spec in ep.graph_signature.input_specs:
        node = nodes.get(spec.arg.name)
        if spec.kind in constant_kinds and node is not None and not node.users:
            ep.graph_module.graph.erase_node(node)
            ep._state_dict.pop(spec.target, None)
            ep._constants.pop(spec.target, None)
        else:
            kept.append(spec)
    ep._graph_signature = ExportGraphSignature(kept, ep.graph_signature.output_specs)
    ep.graph_module.recompile()


def export_fp32(spec: Spec, backend: str = "portable") -> bytes:
    """The same module and weights, not quantized, in NCHW: on ExecuTorch's portable kernels
    (``backend="portable"``) or delegated to XNNPACK (``"xnnpack"``)."""
    from executorch.exir import to_edge, to_edge_transform_and_lower

    model = build(spec).to(memory_format=torch.contiguous_format)
    exported = torch.export.export(model, (fp32_input(spec),))
    if backend == "portable":
        return to_edge(exported).to_executorch().buffer
    if backend == "xnnpack":
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

        return (
            to_edge_transform_and_lower(exported, partitioner=[XnnpackPartitioner()]).to_executorch().buffer
        )
    raise ValueError(f"backend must be portable or xnnpack, got {backend!r}")


def fp32_input(spec: Spec) -> torch.Tensor:
    """The test input in NCHW with standard strides (for C=1 a channels-last tensor's strides
    are ambiguous and ExecuTorch would read dim order [0, 2, 1, 3] from them)."""
    return evaluation_input(spec).clone(memory_format=torch.contiguous_format)


# --- what the programs hold --------------------------------------------------------------------


def macs(spec: Spec) -> list[tuple[str, int]]:
    """Nominal MACs per conv/linear layer of the float model (padded taps included)."""
    model = build(spec)
    rows: list[tuple[str, int]] = []

    def hook(module: nn.Module, inputs, output) -> None:
        if isinstance(module, nn.Conv2d):
            kh, kw = module.kernel_size
            n = output.numel() * kh * kw * module.in_channels // module.groups
        else:
            n = output.numel() * module.in_features
        rows.append((names[module], n))

    names = {m: n for n, m in model.named_modules() if isinstance(m, nn.Conv2d | nn.Linear)}
    for module in names:
        module.register_forward_hook(hook)
    with torch.no_grad():
        model(evaluation_input(spec))
    return rows


def describe(path: Path) -> dict:
    """Operators (in order), arena sizes and live-bytes lower bounds, read with refsim's reader."""
    sys.path.insert(0, str(HERE.parents[1]))
    from refsim.pte import KernelCall, ScalarType, load_program
    from refsim.runtime.plan import placements

    pf = load_program(path)
    plan = pf.program.plan("forward")
    ops = [
        plan.operators[ins.op_index].qualified_name
        for ins in plan.chains[0].instructions
        if isinstance(ins, KernelCall)
    ]
    items = placements(plan)
    steps = range(-1, len(plan.chains[0].instructions) + 1)

    def peak(select) -> int:
        best = 0
        for step in steps:
            ranges = {
                (p.memory_id, p.start, p.end)
                for p in items
                if p.first_use <= step <= p.last_use and select(p)
            }
            best = max(best, sum(end - start for _, start, end in ranges))
        return best

    # CMSIS-NN scratch buffers are the uint8 tensors the cortex_m passes allocate
    is_scratch = {p.value: plan.values[p.value].scalar_type == ScalarType.UINT8 for p in items}
    constants = pf.constants()
    return {
        "bytes": path.stat().st_size,
        "constant_bytes": sum(len(c) for c in constants),
        "operators": ops,
        "arena_bytes": list(plan.non_const_buffer_sizes[1:]),
        "live_bytes_bound": peak(lambda p: True),
        "activation_bytes_bound": peak(lambda p: not is_scratch[p.value]),
        "largest_scratch_bytes": max((p.end - p.start for p in items if is_scratch[p.value]), default=0),
        "io_quantization": {
            p.name.removeprefix("forward_"): getattr(p.values[p.outputs[0]], "value", None)
            for p in pf.program.execution_plan
            if p.name.startswith("forward_")
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=sorted(MODELS), action="append", help="export only this model")
    parser.add_argument("--fp32", type=Path, metavar="DIR", help="write <name>_fp32.pte into DIR instead")
    parser.add_argument("--fp32-backend", choices=("portable", "xnnpack"), default="portable")
    args = parser.parse_args(argv)
    names = args.only or list(MODELS)
    if args.fp32 is not None:
        args.fp32.mkdir(parents=True, exist_ok=True)
        for name in names:
            path = args.fp32 / f"{name}_fp32.pte"
            path.write_bytes(export_fp32(MODELS[name], args.fp32_backend))
            print(f"{path}: {path.stat().st_size:,} bytes")
        return 0

    summary_path = HERE / "models.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    jobs = [(name, name, "M55") for name in names] + [(f"{name}_m4", name, "M4") for name in names]
    for out_name, name, cpu in jobs:
        spec = MODELS[name]
        data, x, reference = export_cortex_m(spec, cpu)
        path = HERE / f"{out_name}.pte"
        path.write_bytes(data)
        np.savez(path.with_suffix(".io.npz"), input0=x, output0=reference)
        layers = macs(spec)
        summary[out_name] = {
            "model": spec.title,
            "cpu": f"cortex-{cpu.lower()}",
            "input_shape": list(spec.shape),
            "macs": sum(n for _, n in layers),
            "layer_macs": dict(layers),
            **describe(path),
        }
        print(f"{path.name}: {path.stat().st_size:,} bytes, {summary[out_name]['macs']:,} MACs")
    summary_path.write_text(json.dumps(dict(sorted(summary.items())), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

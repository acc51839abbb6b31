"""What ``refsim inspect`` reports of a .tflite: operators with their options, tensors with
shape, type and quantization, I/O quantization and constant bytes, as a JSON-ready dict."""

from __future__ import annotations

from collections import Counter
from enum import Enum

from refsim.tflite import model as m
from refsim.tflite.options import TABLES
from refsim.tflite.reader import ModelFile


def _plain(value):
    if isinstance(value, Enum):
        return value.name
    if isinstance(value, tuple):
        return list(value)
    return value


def quantization(q: m.Quantization | None) -> dict | None:
    if q is None or not q.scale:
        return None
    out = {"scale": list(q.scale), "zero_point": list(q.zero_point)}
    if q.per_channel:
        out["quantized_dimension"] = q.quantized_dimension
    return out


def options(op: m.Operator) -> dict | None:
    if op.builtin_options is None:
        return None
    return {k: _plain(v) for k, v in op.builtin_options.items()}


def changed_options(op: m.Operator) -> dict:
    """The options that differ from the schema's defaults (what a short listing shows)."""
    if op.builtin_options is None:
        return {}
    defaults = {f.name: f.default for f in TABLES[op.builtin_options_name]}
    return {k: _plain(v) for k, v in op.builtin_options.items() if v != defaults.get(k)}


def tensor_summary(mf: ModelFile, t: m.Tensor, index: int) -> dict:
    constant = mf.constant_bytes(t)
    return {
        "index": index,
        "name": t.name,
        "shape": list(t.shape),
        "dtype": t.type.name.lower(),
        "buffer": t.buffer,
        "constant_bytes": 0 if constant is None else len(constant),
        "quantization": quantization(t.quantization),
        **({"variable": True} if t.is_variable else {}),
        **({"sparse": True} if t.sparse else {}),
    }


ISAS = ("scalar", "dsp", "mve")


def execution(mf: ModelFile) -> dict:
    """How refsim runs subgraph 0: per operator index, the registered operators it is lowered to
    and the CMSIS-NN function each calls per ISA tier (``{"runs": {index: [...]}}``), or, when
    refsim cannot run the model, ``{"error": "<the one-line reason>"}``."""
    from refsim.errors import RefsimError
    from refsim.runtime.program import Program
    from refsim.tflite.lower import lower_model

    try:
        lowered = lower_model(mf)
        method = Program(lowered).method()  # type: ignore[arg-type]
    except RefsimError as exc:
        return {"error": str(exc)}
    runs: dict[int, list[dict]] = {}
    for origin, call in zip(lowered.origins, method.calls, strict=True):
        assert call is not None  # a lowered plan holds KernelCalls only
        kernels = {isa: call.op.kernel_name(call.args, isa) for isa in ISAS}
        runs.setdefault(origin.index, []).append({"op": call.op.name, "kernel": kernels})
    return {"runs": runs}


def describe(mf: ModelFile, path: str) -> dict:
    model = mf.model
    report: dict = {
        "file": path,
        "format": "tflite",
        "schema_version": model.version,
        "description": model.description,
        "constant_bytes": sum(len(b.data) for b in model.buffers),
        "external_buffers": sum(1 for b in model.buffers if b.external),
        "metadata": [e.name for e in model.metadata],
        "signature_defs": [d.signature_key for d in model.signature_defs],
        "subgraphs": [],
    }
    for i, g in enumerate(model.subgraphs):
        ops = [
            {
                "index": k,
                "name": model.opcode(op).name,
                "version": model.opcode(op).version,
                "options_type": op.builtin_options_name,
                "options": options(op),
                "inputs": list(op.inputs),
                "outputs": list(op.outputs),
            }
            for k, op in enumerate(g.operators)
        ]
        tensors = [tensor_summary(mf, t, k) for k, t in enumerate(g.tensors)]
        report["subgraphs"].append(
            {
                "index": i,
                "name": g.name,
                "operators": dict(Counter(o["name"] for o in ops)),
                "ops": ops,
                "tensors": tensors,
                "inputs": [tensors[k] for k in g.inputs],
                "outputs": [tensors[k] for k in g.outputs],
            }
        )
    return report

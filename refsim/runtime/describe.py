"""Facts about a loaded program for reports: operators, memory, I/O quantization.

Shared by ``refsim inspect`` and ``refsim run --json``; nothing here executes the program.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from refsim.ops.registry import OpError
from refsim.pte import model as m
from refsim.runtime.program import Method, Program
from refsim.runtime.tensor import TensorRef


@dataclass(frozen=True)
class IOQuant:
    """``forward_input0_scale`` ... constant methods (ExecuTorch's QuantizeInputs/Outputs)."""

    scale: float
    zero_point: int
    quant_min: int | None
    quant_max: int | None
    dtype: int | None


def io_quantization(program: Program, method: str, kind: str, index: int) -> IOQuant | None:
    """The quantization of ``{method}_{kind}{index}`` (kind "input"/"output"), if exported.

    None as well when the zero point is not an integer (a NaN or infinite Double in a corrupt
    or hand-made file): there is no quantization to report or apply. A lowered .tflite has no
    constant methods: its subgraph input or output tensor's own (per-tensor) quantization is it."""
    if program.runtime == "tflm":
        graph = program.file.file.model.subgraphs[program.file.subgraph]
        tensors = graph.inputs if kind == "input" else graph.outputs
        if not 0 <= index < len(tensors):
            return None
        q = graph.tensors[tensors[index]].quantization
        if q is None or len(q.scale) != 1:
            return None
        return IOQuant(float(q.scale[0]), int(q.zero_point[0]) if q.zero_point else 0, -128, 127, None)
    prefix = f"{method}_{kind}{index}"
    scale = program.constant_method(f"{prefix}_scale")
    zp = program.constant_method(f"{prefix}_zp")
    if scale is None or zp is None or (isinstance(zp, float) and not zp.is_integer()):
        return None
    return IOQuant(
        float(scale),
        int(zp),
        program.constant_method(f"{prefix}_quant_min"),
        program.constant_method(f"{prefix}_quant_max"),
        program.constant_method(f"{prefix}_dtype"),
    )


def tensor_summary(t: TensorRef | object) -> dict:
    if isinstance(t, TensorRef):
        meta = t.meta
        planned = meta.allocation
        return {
            "shape": list(meta.sizes),
            "dtype": str(t.dtype),
            "dim_order": list(meta.dim_order),
            "memory": (
                {"mem_id": planned.memory_id, "offset": planned.offset, "bytes": meta.nbytes}
                if planned is not None
                else None
            ),
        }
    return {"value": t}


def operator_counts(plan: m.ExecutionPlan) -> Counter:
    names = [
        plan.operators[ins.op_index].qualified_name
        for c in plan.chains
        for ins in c.instructions
        if isinstance(ins, m.KernelCall)
    ]
    return Counter(names)


def constant_bytes(program: Program) -> int:
    return sum(len(b) for b in program.file.constants())


def scratch_values(method: Method) -> set[int]:
    """Value indices of the tensors ops take as CMSIS-NN scratch (``scratch`` arguments)."""
    found: set[int] = set()
    for call in method.calls:
        if call is None:
            continue
        for name, value in call.args.items():
            if "scratch" in name and isinstance(value, TensorRef):
                found.add(value.index)
    return found


def scratch_bytes(method: Method) -> int:
    """Bytes of memory-planned tensors that ops use as CMSIS-NN scratch (``scratch`` args)."""
    return sum(method.values[i].meta.nbytes for i in scratch_values(method))


def method_ops(method: Method, isa: str) -> list[dict]:
    """Per KernelCall: index, op name, kernel chosen for ``isa``, MACs, portable or not."""
    rows = []
    for call in method.calls:
        if call is None:
            continue
        op = call.op
        try:
            macs = op.macs(call.args) if op.macs else 0
        except (OpError, ValueError):
            macs = 0
        rows.append(
            {
                "index": call.instruction,
                "name": op.name,
                "kernel": op.kernel_name(call.args, isa),
                "macs": int(macs),
                "portable": op.portable_fallback or op.kernel is None,
            }
        )
    return rows


def divergences(method: Method, isa: str) -> list[dict]:
    """`Method.divergences` as report entries: op, instruction, kind, arguments, reason."""
    return [d.as_dict() for d in method.divergences(isa)]

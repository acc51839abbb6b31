"""`compiler.ir.Graph` → memory plan → ExecuTorch ``Program`` → .pte bytes (refsim's writer).

The program is laid out as ExecuTorch 1.5.1's emitter lays out its own: one ``forward`` plan,
one chain, one ``KernelCall`` per call with every schema argument (a fresh EValue each; int
lists hold indices of Int EValues; ``None`` is a Null), then ``out``, then ``out`` again as
the return value; constants in the constant segment (``data_buffer_idx`` from 1); every
activation and scratch tensor memory-planned in arena 1 (``non_const_buffer_sizes = [0,
arena]``); a view shares its base tensor's offset. Int8 graph inputs/outputs get the
``forward_input<k>_*``/``forward_output<k>_*`` constant methods of ExecuTorch's
QuantizeInputs/QuantizeOutputs passes, so ``refsim run`` can quantize float inputs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from compiler import planner
from compiler.ir import Graph, TensorArg
from refsim.pte import model as m
from refsim.pte.writer import write_program


@dataclass(frozen=True)
class Planned:
    """The memory plan of a graph: the chosen plan, every algorithm's for the report, the
    planner's view of the program."""

    plan: planner.Plan
    plans: dict[str, planner.Plan]
    steps: list[planner.Step]
    buffers: list[planner.Buffer]


def plan_memory(graph: Graph, algorithm: str = "best", *, reorder: bool = False) -> Planned:
    """Plan every activation and scratch buffer of ``graph``. ``reorder``: first let
    ``planner.reorder`` pick a topological order of the calls with a lower peak (the calls of
    ``graph`` are then put in that order)."""
    io = {
        "graph_inputs": [graph.storage(n) for n in graph.inputs],
        "graph_outputs": [graph.storage(n) for n in graph.outputs],
    }
    steps, sizes = _steps(graph)
    if reorder:
        order = planner.reorder(steps, sizes, **io)
        graph.calls[:] = [graph.calls[int(step.name.split(":")[0])] for step in order]
        steps, sizes = _steps(graph)
    buffers = planner.lifetimes(steps, sizes, **io)
    plans = planner.plan_all(buffers)
    # The report shows every algorithm; "best" is chosen from those plans, not planned again.
    chosen = planner.best_of(plans) if algorithm == "best" else plans.get(algorithm)
    if chosen is None:
        chosen = planner.plan(buffers, algorithm=algorithm)  # raises PlanError naming the planners
    return Planned(chosen, plans, steps, buffers)


def _steps(graph: Graph) -> tuple[list[planner.Step], dict[str, int]]:
    """The planner's view of the calls: per call the planned buffers read and written."""
    planned = {name for name, t in graph.tensors.items() if t.planned}
    steps = []
    for k, call in enumerate(graph.calls):
        reads = []
        for a in _tensor_args(call.args):
            base = graph.storage(a.name)
            if base in planned and a.name not in call.scratch and base not in reads:
                reads.append(base)
        writes = (graph.storage(call.out), *(graph.storage(x) for x in call.extra_outs), *call.scratch)
        steps.append(planner.Step(f"{k}:{call.op}", tuple(reads), writes))
    return steps, {name: graph.tensors[name].nbytes for name in planned}


def _tensor_args(args: tuple):
    for a in args:
        if isinstance(a, TensorArg):
            yield a
        elif isinstance(a, tuple | list):
            yield from (x for x in a if isinstance(x, TensorArg))


def _container_meta(n_inputs: int, n_outputs: int) -> m.ContainerMetadata:
    """The pytree specs torch.export records for ``forward(*inputs) -> output(s)``."""
    leaf = {"type": None, "context": None, "children_spec": []}
    args = {"type": "builtins.tuple", "context": "null", "children_spec": [leaf] * n_inputs}
    kwargs = {"type": "builtins.dict", "context": "[]", "children_spec": []}
    inputs = [1, {"type": "builtins.tuple", "context": "null", "children_spec": [args, kwargs]}]
    out = (
        leaf
        if n_outputs == 1
        else {"type": "builtins.tuple", "context": "null", "children_spec": [leaf] * n_outputs}
    )
    return m.ContainerMetadata(json.dumps(inputs), json.dumps([1, out]))


class _Values:
    def __init__(self) -> None:
        self.values: list = []

    def add(self, value) -> int:
        self.values.append(value)
        return len(self.values) - 1


def build_program(graph: Graph, offsets: dict[str, int], arena_bytes: int) -> tuple[m.Program, list[bytes]]:
    """The ``Program`` and its constant blobs (entry 0 reserved)."""
    values = _Values()
    constants: list[bytes] = [b""]
    tensor_index: dict[str, int] = {}
    for name, t in graph.tensors.items():
        data_idx, allocation = 0, None
        if t.data is not None:
            constants.append(t.data.tobytes())
            data_idx = len(constants) - 1
        else:
            allocation = m.Allocation(1, offsets[graph.storage(name)])
        tensor_index[name] = values.add(
            m.Tensor(
                t.dtype, tuple(t.sizes), tuple(t.dim_order), data_buffer_idx=data_idx, allocation=allocation
            )
        )

    def arg_value(a) -> int:
        if isinstance(a, TensorArg):
            return tensor_index[a.name]
        if a is None:
            return values.add(m.Null())
        if isinstance(a, bool):
            return values.add(m.Bool(a))
        if isinstance(a, int):
            return values.add(m.Int(int(a)))
        if isinstance(a, float):
            return values.add(m.Double(float(a)))
        if isinstance(a, str):
            return values.add(m.String(a))
        if isinstance(a, tuple | list) and a and all(isinstance(x, TensorArg) for x in a):
            return values.add(m.TensorList(tuple(tensor_index[x.name] for x in a)))
        if isinstance(a, tuple | list):
            return values.add(m.IntList(tuple(values.add(m.Int(int(x))) for x in a)))
        raise TypeError(f"cannot serialize argument {a!r}")

    operators: list[m.Operator] = []
    instructions = []
    for call in graph.calls:
        op = m.Operator(call.op, call.overload)
        if op not in operators:
            operators.append(op)
        args = [arg_value(a) for a in call.args]
        outs = [tensor_index[name] for name in (call.out, *call.extra_outs)]
        # the return: the out tensor again, or a TensorList of every output (ExecuTorch's emitter)
        ret = outs[0] if len(outs) == 1 else values.add(m.TensorList(tuple(outs)))
        instructions.append(m.KernelCall(operators.index(op), (*args, *outs, ret)))

    forward = m.ExecutionPlan(
        name="forward",
        values=tuple(values.values),
        inputs=tuple(tensor_index[n] for n in graph.inputs),
        outputs=tuple(tensor_index[n] for n in graph.outputs),
        chains=(m.Chain(instructions=tuple(instructions)),),
        operators=tuple(operators),
        non_const_buffer_sizes=(0, arena_bytes),
        container_meta_type=_container_meta(len(graph.inputs), len(graph.outputs)),
    )
    plans = [forward, *_io_methods(graph)]
    return m.Program(execution_plan=tuple(plans), version=0), constants


def _io_methods(graph: Graph) -> list[m.ExecutionPlan]:
    """ExecuTorch's QuantizeInputs/QuantizeOutputs constant methods for int8 graph I/O."""
    methods = []
    for kind, names in (("input", graph.inputs), ("output", graph.outputs)):
        for k, name in enumerate(names):
            t = graph.tensors[name]
            if t.scale is None:
                continue
            fields = (
                ("scale", m.Double(float(t.scale))),
                ("zp", m.Int(int(t.zero_point))),
                ("quant_min", m.Int(-128)),
                ("quant_max", m.Int(127)),
                ("dtype", m.Int(int(m.ScalarType.INT8))),
            )
            for field_name, value in fields:
                methods.append(
                    m.ExecutionPlan(name=f"forward_{kind}{k}_{field_name}", values=(value,), outputs=(0,))
                )
    return methods


def serialize(graph: Graph, planned: Planned, path=None) -> bytes:
    program, constants = build_program(graph, dict(planned.plan.offsets), planned.plan.arena_bytes)
    return write_program(program, constants, path)

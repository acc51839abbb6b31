"""Planner problems from real .pte programs, and plans written back into them.

`read_program` rebuilds the steps and buffers of one method with the lifetimes refsim's
runtime verifier uses (``refsim/runtime/plan.py``: a tensor is live from the first
instruction naming it to the last; method inputs from the start, outputs to the end).

*Written* tensors are the ``out`` arguments and the ``scratch``/``output_scratch`` arguments
of the op's schema (a kernel overwrites its scratch). A memory-planned tensor whose first use
reads it and that is no method input is a *view*: ExecuTorch gives a ``view``/``flatten``
the same bytes as its base and no instruction of its own (IC's flatten before the FC is
one). Its base is the tensor with exactly the same arena bytes whose last use comes latest
before the view's first use; the two become one buffer, live over both, and share an offset
in every plan. Tensors with no bytes, and tensors no instruction names, need no storage.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from compiler.planner.model import Buffer, Plan, PlanError, Step, lifetimes
from refsim.errors import RefsimError
from refsim.pte import ProgramFile, load_program
from refsim.pte import model as m
from refsim.pte.writer import write_program

#: Schema argument names that a kernel writes although they are not ``out`` (its scratch).
SCRATCH_ARGS = frozenset({"scratch", "output_scratch"})


@dataclass(frozen=True)
class ProgramBuffers:
    """One method's planner problem and how its buffers map back to the program's values."""

    steps: tuple[Step, ...]
    buffers: tuple[Buffer, ...]
    members: Mapping[str, tuple[int, ...]]  # buffer name -> value indices sharing its bytes
    scratch: frozenset[str]  # buffers only ever passed as a scratch argument
    graph_inputs: tuple[str, ...]
    graph_outputs: tuple[str, ...]
    original_offsets: Mapping[str, int]  # where the file put each buffer
    original_arenas: tuple[int, ...]  # the file's non_const_buffer_sizes
    constant_bytes: int

    @property
    def sizes(self) -> dict[str, int]:
        return {b.name: b.size for b in self.buffers}

    @property
    def mem_ids(self) -> dict[str, int]:
        return {b.name: b.mem_id for b in self.buffers}

    def original_plan(self) -> Plan:
        """The file's own plan (its arenas as declared, the bound of its order)."""
        from compiler.planner.model import lower_bound

        arenas = {k: size for k, size in enumerate(self.original_arenas) if k > 0}
        return Plan(dict(self.original_offsets), arenas.get(1, 0), "file", lower_bound(self.buffers), arenas)


def _method_plan(source: Any, method: str) -> tuple[m.ExecutionPlan, ProgramFile | None]:
    if isinstance(source, m.ExecutionPlan):
        return source, None
    if isinstance(source, ProgramFile):
        return source.program.plan(method), source
    if hasattr(source, "plan") and isinstance(source.plan, m.ExecutionPlan):  # a refsim Method
        return source.plan, getattr(getattr(source, "program", None), "file", None)
    if isinstance(source, str | os.PathLike | bytes | bytearray | memoryview):
        pf = load_program(source)
        return pf.program.plan(method), pf
    raise PlanError(
        f"expected a .pte path, bytes, ProgramFile, Method or ExecutionPlan, got {type(source).__name__}"
    )


def _written_positions(plan: m.ExecutionPlan, ins: m.KernelCall) -> set[int]:
    """Argument positions the kernel writes: by the op's schema when refsim knows the op, else
    ExecuTorch's convention that the ``out`` argument (and its return) come last."""
    from refsim.ops.registry import lookup

    try:
        op = lookup(plan.operators[ins.op_index].qualified_name)
    except RefsimError:
        return {len(ins.args) - 1}
    specs = op.schema.args
    written = {k for k, spec in enumerate(specs) if spec.is_out or spec.name in SCRATCH_ARGS}
    written |= set(range(len(specs), len(ins.args)))  # the returned out value
    return written


def _tensors_of(plan: m.ExecutionPlan, index: int) -> list[int]:
    v = plan.values[index]
    if isinstance(v, m.Tensor):
        return [index]
    if isinstance(v, m.TensorList | m.OptionalTensorList):
        return [i for i in v.items if i >= 0 and isinstance(plan.values[i], m.Tensor)]
    return []


def read_program(source: Any, method: str = "forward") -> ProgramBuffers:
    """Steps, buffers (views merged into their base) and the file's plan of one method."""
    plan, pf = _method_plan(source, method)
    if len(plan.chains) != 1:
        raise PlanError(f"method {plan.name!r} has {len(plan.chains)} chains; the planner handles one")
    values = plan.values

    def planned(i: int) -> bool:
        t = values[i]
        return isinstance(t, m.Tensor) and t.allocation is not None and not t.is_constant and t.nbytes > 0

    accesses: list[list[tuple[int, bool]]] = []  # per instruction: (value, written)
    for ins in plan.chains[0].instructions:
        acc: list[tuple[int, bool]] = []
        if isinstance(ins, m.KernelCall):
            written = _written_positions(plan, ins)
            for pos, a in enumerate(ins.args):
                acc += [(t, pos in written) for t in _tensors_of(plan, a)]
        elif isinstance(ins, m.MoveCall):
            acc += [(t, False) for t in _tensors_of(plan, ins.move_from)]
            acc += [(t, True) for t in _tensors_of(plan, ins.move_to)]
        elif isinstance(ins, m.JumpFalseCall):
            acc += [(t, False) for t in _tensors_of(plan, ins.cond_value_index)]
        elif isinstance(ins, m.DelegateCall):
            acc += [(t, True) for a in ins.args for t in _tensors_of(plan, a)]
        accesses.append([(t, w) for t, w in acc if planned(t)])

    inputs = {t for i in plan.inputs for t in _tensors_of(plan, i) if planned(t)}
    outputs = {t for i in plan.outputs for t in _tensors_of(plan, i) if planned(t)}
    first: dict[int, int] = {t: -1 for t in inputs}
    last: dict[int, int] = {t: -1 for t in inputs}
    first_written: dict[int, bool] = {}
    for k, acc in enumerate(accesses):
        for t, w in acc:
            if t not in first:
                first[t] = k
                first_written[t] = w
            elif first[t] == k and w:
                first_written[t] = True
            last[t] = k
    n = len(accesses)
    for t in outputs:
        first.setdefault(t, n)
        last[t] = n

    def place(t: int) -> tuple[int, int, int]:
        a = values[t].allocation
        return (a.memory_id, a.offset, values[t].nbytes)

    base_of: dict[int, int] = {}
    for t in sorted(first, key=lambda t: (first[t], t)):
        if t in inputs or first_written.get(t, True):
            continue
        candidates = [
            u for u in first if u != t and place(u) == place(t) and last[u] < first[t] and u not in base_of
        ]
        if candidates:
            base_of[t] = max(candidates, key=lambda u: (last[u], -u))

    def root(t: int) -> int:
        while t in base_of:
            t = base_of[t]
        return t

    members: dict[int, list[int]] = {}
    for t in sorted(first):
        members.setdefault(root(t), []).append(t)
    name_of = {t: f"v{r}" for r, group in members.items() for t in group}

    steps = []
    scratch_only: dict[str, bool] = {}
    for k, (ins, acc) in enumerate(zip(plan.chains[0].instructions, accesses, strict=True)):
        ins_name = (
            plan.operators[ins.op_index].qualified_name
            if isinstance(ins, m.KernelCall)
            else type(ins).__name__
        )
        reads = tuple(dict.fromkeys(name_of[t] for t, w in acc if not w))
        writes = tuple(dict.fromkeys(name_of[t] for t, w in acc if w))
        steps.append(Step(f"{k}:{ins_name}", reads, writes))
        if isinstance(ins, m.KernelCall):
            scratch_pos = _scratch_positions(plan, ins)
            for pos, a in enumerate(ins.args):
                for t in _tensors_of(plan, a):
                    if planned(t):
                        name = name_of[t]
                        scratch_only[name] = scratch_only.get(name, True) and pos in scratch_pos
    sizes = {f"v{r}": values[r].nbytes for r in members}
    mem_ids = {f"v{r}": values[r].allocation.memory_id for r in members}
    graph_inputs = tuple(dict.fromkeys(name_of[t] for t in sorted(inputs)))
    graph_outputs = tuple(dict.fromkeys(name_of[t] for t in sorted(outputs)))
    buffers = lifetimes(steps, sizes, graph_inputs=graph_inputs, graph_outputs=graph_outputs, mem_ids=mem_ids)
    constant_bytes = 0
    if pf is not None:
        seen = set()
        for v in values:
            if isinstance(v, m.Tensor) and v.is_constant and v.data_buffer_idx not in seen:
                seen.add(v.data_buffer_idx)
                constant_bytes += v.nbytes
    return ProgramBuffers(
        tuple(steps),
        tuple(buffers),
        {f"v{r}": tuple(group) for r, group in members.items()},
        frozenset(n for n, only in scratch_only.items() if only),
        graph_inputs,
        graph_outputs,
        {f"v{r}": values[r].allocation.offset for r in members},
        tuple(plan.non_const_buffer_sizes),
        constant_bytes,
    )


def _scratch_positions(plan: m.ExecutionPlan, ins: m.KernelCall) -> set[int]:
    from refsim.ops.registry import lookup

    try:
        op = lookup(plan.operators[ins.op_index].qualified_name)
    except RefsimError:
        return set()
    return {k for k, spec in enumerate(op.schema.args) if spec.name in SCRATCH_ARGS}


def buffers_from_program(source: Any, method: str = "forward") -> tuple[list[Step], list[Buffer]]:
    """Steps and buffers of one method of a .pte (path, bytes, ProgramFile, Method or plan)."""
    pb = read_program(source, method)
    return list(pb.steps), list(pb.buffers)


def apply_plan(
    source: Any, plan: Plan, method: str = "forward", path: str | os.PathLike | None = None
) -> bytes:
    """The program again (refsim's writer) with ``plan``'s offsets in every planned tensor's
    ``allocation_info`` and its arena sizes in ``non_const_buffer_sizes``; ``path`` also
    writes it. Tensors that need no storage keep offset 0 of their arena."""
    pf = source if isinstance(source, ProgramFile) else load_program(source)
    pb = read_program(pf, method)
    old = pf.program.plan(method)
    new_offset: dict[int, int] = {}
    for name, group in pb.members.items():
        if name not in plan.offsets:
            raise PlanError(f"plan {plan.algorithm!r} has no offset for buffer {name!r}")
        for t in group:
            new_offset[t] = plan.offsets[name]
    values = list(old.values)
    for i, v in enumerate(values):
        if isinstance(v, m.Tensor) and v.allocation is not None and not v.is_constant:
            offset = new_offset.get(i, 0)
            values[i] = dataclasses.replace(v, allocation=m.Allocation(v.allocation.memory_id, offset))
    sizes = list(old.non_const_buffer_sizes)
    for mem_id, size in plan.arenas.items():
        while len(sizes) <= mem_id:
            sizes.append(0)
        sizes[mem_id] = size
    new_plan = dataclasses.replace(old, values=tuple(values), non_const_buffer_sizes=tuple(sizes))
    program = dataclasses.replace(
        pf.program,
        execution_plan=tuple(new_plan if p.name == method else p for p in pf.program.execution_plan),
    )
    cs = pf.constant_segment
    if pf.segments and (cs is None or cs.segment_index != 0):
        raise PlanError("rewriting a file whose segment 0 is not its constant segment")
    extra = [pf.segment_data(i) for i in range(1, len(pf.segments))]
    return write_program(program, pf.constants(), path, segments=extra)

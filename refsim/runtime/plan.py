"""The plan verifier: no two tensors that are live at the same time may overlap.

Lifetimes come from the instruction chain, flattened in order: a tensor is live from the
first instruction that names it (as a KernelCall argument, directly or inside a tensor list,
a MoveCall end or a JumpFalse condition) to the last; method inputs are live from the start
(step -1), outputs to the end.

Two memory-planned tensors in the same arena whose byte ranges intersect and whose lifetimes
intersect are a broken plan, unless they are one storage. ExecuTorch 1.5.1 gives two values
one storage in exactly two ways, and only these are accepted here:

* **An elided view** (``exir/passes/replace_view_copy_with_view_pass.py`` turns a
  ``view_copy`` that is not a graph output into ``memory.view``; its ``_ViewSpec`` shares
  the base's mem_id, offset and lifetime; ``exir/emit/_emitter.py`` ``_emit_view`` emits no
  instruction for a static, memory-planned view). Recognised as: a value no instruction
  writes and that is no method input or output, with the base's exact bytes, its dtype, a
  contiguous dim order, read only after the base was written (or is a method input). Its
  base is the latest such writer before its first read.
* **An in-place result** (``exir/passes/reinplace.py`` sets ``_share_alloc_with_arg_idx``
  to an op's first tensor argument, which ``memory_planning_pass.py`` turns into the out
  spec's ``storage_base``): the out of a KernelCall on the exact bytes of that call's first
  tensor argument, with its dtype, sizes and dim order, where that argument is not used
  after the call (reinplace's ``_is_safe_to_reinplace``) and the op computes each output
  element from the same element of its inputs (`OpDef.in_place_safe`), so writing in place
  gives what the device gives out of place. For any other op the device would read bytes
  it has already overwritten.

"Writes" are an op's out arguments and its scratch buffers (`OpDef.written_args`); for an
operator refsim does not know, ExecuTorch's convention says the trailing argument (the
return value) is the out; every tensor a delegate is handed counts as written.

Everything else on the same bytes, equal sizes included, is an overlap: a fully-connected
layer's output moved onto its own live input loads as a `PlanError`.
"""

from __future__ import annotations

from dataclasses import dataclass

from refsim.errors import RefsimError
from refsim.pte import model as m


class PlanError(RefsimError):
    """The memory plan places two live tensors on the same bytes."""


@dataclass(frozen=True)
class Placement:
    value: int
    memory_id: int
    start: int
    end: int  # exclusive
    first_use: int
    last_use: int
    #: The value whose storage this one shares (an elided view's base, an in-place result's
    #: input), or None for a storage of its own.
    alias_of: int | None = None


def _tensor_items(values: tuple[m.EValue, ...], index: int) -> list[int]:
    """``index`` itself if it is a tensor, the tensors of a tensor list, else nothing."""
    if not 0 <= index < len(values):
        return []
    v = values[index]
    if isinstance(v, m.Tensor):
        return [index]
    if isinstance(v, m.TensorList | m.OptionalTensorList):
        return [i for i in v.items if 0 <= i < len(values) and isinstance(values[i], m.Tensor)]
    return []


def _instructions(plan: m.ExecutionPlan) -> list[m.Instruction]:
    return [ins for chain in plan.chains for ins in chain.instructions]


def _tensor_uses(plan: m.ExecutionPlan) -> dict[int, list[int]]:
    uses: dict[int, list[int]] = {}
    values = plan.values

    def touch(index: int, when: int) -> None:
        for item in _tensor_items(values, index):
            uses.setdefault(item, []).append(when)

    step = 0
    for ins in _instructions(plan):
        if isinstance(ins, m.KernelCall | m.DelegateCall):
            for a in ins.args:
                touch(a, step)
        elif isinstance(ins, m.MoveCall):
            touch(ins.move_from, step)
            touch(ins.move_to, step)
        elif isinstance(ins, m.JumpFalseCall):
            touch(ins.cond_value_index, step)
        step += 1
    for i in plan.inputs:
        touch(i, -1)
    for o in plan.outputs:
        touch(o, step)
    return uses


def _written_positions(plan: m.ExecutionPlan, ins: m.KernelCall) -> list[int]:
    """Positions in ``ins.args`` whose tensors the call writes."""
    from refsim.errors import UnsupportedError
    from refsim.ops.registry import lookup

    if not 0 <= ins.op_index < len(plan.operators):
        return list(range(len(ins.args)))
    try:
        op = lookup(plan.operators[ins.op_index].qualified_name)
    except UnsupportedError:
        return [len(ins.args) - 1] if ins.args else []
    n = len(op.schema.args)
    return [p for p in op.written_args if p < len(ins.args)] + list(range(n, len(ins.args)))


def _writes(plan: m.ExecutionPlan) -> dict[int, list[int]]:
    """Steps at which each tensor is written (-1: a method input, written by the caller)."""
    values = plan.values
    writes: dict[int, list[int]] = {}
    for i in plan.inputs:
        for item in _tensor_items(values, i):
            writes.setdefault(item, []).append(-1)
    for step, ins in enumerate(_instructions(plan)):
        if isinstance(ins, m.KernelCall):
            positions = _written_positions(plan, ins)
            targets = [ins.args[p] for p in positions]
        elif isinstance(ins, m.DelegateCall):
            targets = list(ins.args)
        elif isinstance(ins, m.MoveCall):
            targets = [ins.move_to]
        else:
            continue
        for t in targets:
            for item in _tensor_items(values, t):
                writes.setdefault(item, []).append(step)
    return writes


def _own_placements(plan: m.ExecutionPlan) -> list[Placement]:
    uses = _tensor_uses(plan)
    out = []
    for index, when in uses.items():
        t = plan.values[index]
        assert isinstance(t, m.Tensor)
        if t.allocation is None or t.nbytes == 0:
            continue
        start = t.allocation.offset
        out.append(Placement(index, t.allocation.memory_id, start, start + t.nbytes, min(when), max(when)))
    return out


class _Storages:
    """Union-find of values that share one storage, with the lifetime of each storage."""

    def __init__(self, items: list[Placement]) -> None:
        self.parent = {p.value: p.value for p in items}
        self.span = {p.value: (p.first_use, p.last_use) for p in items}

    def find(self, v: int) -> int:
        while self.parent[v] != v:
            self.parent[v] = self.parent[self.parent[v]]
            v = self.parent[v]
        return v

    def join(self, alias: int, base: int) -> None:
        a, b = self.find(alias), self.find(base)
        if a != b:
            (f1, l1), (f2, l2) = self.span[a], self.span[b]
            self.parent[a] = b
            self.span[b] = (min(f1, f2), max(l1, l2))

    def lifetime(self, v: int) -> tuple[int, int]:
        return self.span[self.find(v)]


def _is_contiguous(t: m.Tensor) -> bool:
    return tuple(t.dim_order) == tuple(range(len(t.dim_order)))


def _find_aliases(plan: m.ExecutionPlan, items: list[Placement]) -> dict[int, int]:
    """{alias value: base value} for the elided views and in-place results of the plan."""
    from refsim.ops.registry import UnsupportedError, lookup

    values = plan.values
    by_bytes: dict[tuple[int, int, int], list[Placement]] = {}
    for p in items:
        by_bytes.setdefault((p.memory_id, p.start, p.end), []).append(p)
    writes = _writes(plan)
    outputs = {i for o in plan.outputs for i in _tensor_items(values, o)}
    storages = _Storages(items)
    aliases: dict[int, int] = {}

    # Elided views: never written, read after a same-bytes writer of the same dtype.
    for group in by_bytes.values():
        if len(group) < 2:
            continue
        for v in group:
            view = values[v.value]
            assert isinstance(view, m.Tensor)
            if v.value in writes or v.value in outputs or not _is_contiguous(view):
                continue
            bases = [
                (max(w for w in writes[b.value] if w < v.first_use), b.value)
                for b in group
                if b.value in writes
                and values[b.value].scalar_type == view.scalar_type  # type: ignore[union-attr]
                and min(writes[b.value]) < v.first_use
            ]
            if bases:
                base = max(bases)[1]
                aliases[v.value] = base
                storages.join(v.value, base)

    # In-place results: the out of an in-place-safe op on its dying first tensor argument.
    for step, ins in enumerate(_instructions(plan)):
        if not isinstance(ins, m.KernelCall) or not 0 <= ins.op_index < len(plan.operators):
            continue
        try:
            op = lookup(plan.operators[ins.op_index].qualified_name)
        except UnsupportedError:
            continue
        n = len(op.schema.args)
        if not op.in_place_safe or len(ins.args) < n or len(op.schema.outputs) != 1:
            continue
        out_pos = next(k for k, a in enumerate(op.schema.args) if a.is_out)
        first = next((ins.args[k] for k in range(n) if isinstance(values[ins.args[k]], m.Tensor)), None)
        out = ins.args[out_pos]
        if first is None or first == out or first not in storages.parent or out not in storages.parent:
            continue
        src, dst = values[first], values[out]
        assert isinstance(src, m.Tensor) and isinstance(dst, m.Tensor)
        if src.allocation != dst.allocation or (src.scalar_type, src.sizes, src.dim_order) != (
            dst.scalar_type,
            dst.sizes,
            dst.dim_order,
        ):
            continue
        if storages.lifetime(first)[1] == step and storages.lifetime(out)[0] == step and out not in aliases:
            aliases[out] = first
            storages.join(out, first)
    return aliases


def placements(plan: m.ExecutionPlan) -> list[Placement]:
    """Every memory-planned tensor that the chain uses, with its bytes, lifetime and alias."""
    items = _own_placements(plan)
    aliases = _find_aliases(plan, items)
    return [Placement(**{**p.__dict__, "alias_of": aliases.get(p.value)}) for p in items]


def verify_plan(plan: m.ExecutionPlan) -> list[Placement]:
    """Raise `PlanError` naming both tensors if two live tensors share bytes."""
    items = sorted(placements(plan), key=lambda p: (p.memory_id, p.start))
    storages = _Storages(items)
    for p in items:
        if p.alias_of is not None:
            storages.join(p.value, p.alias_of)
    for i, a in enumerate(items):
        for b in items[i + 1 :]:
            if b.memory_id != a.memory_id or b.start >= a.end:
                break
            if storages.find(a.value) == storages.find(b.value):
                continue
            (fa, la), (fb, lb) = storages.lifetime(a.value), storages.lifetime(b.value)
            if fa <= lb and fb <= la:
                same = (
                    " (the same bytes, but neither an elided view nor an in-place result)"
                    if (a.start == b.start and a.end == b.end)
                    else ""
                )
                raise PlanError(
                    f"method {plan.name!r}: values[{a.value}] (arena {a.memory_id} bytes [{a.start}, {a.end}), "
                    f"live at instructions {fa}..{la}) overlaps values[{b.value}] "
                    f"(bytes [{b.start}, {b.end}), live {fb}..{lb}){same}"
                )
    return items

"""The plan verifier: no two tensors that are live at the same time may overlap.

Lifetimes come from the instruction chain, flattened in order: a tensor is live from the
first instruction that names it (as a KernelCall argument, directly or inside a tensor list,
a MoveCall end or a JumpFalse condition) to the last; method inputs are live from the start,
outputs to the end. Two memory-planned tensors in the same arena whose byte ranges intersect
and whose lifetimes intersect are a broken plan, except when both views cover exactly the
same bytes (ExecuTorch aliases a tensor and its ``view``/``flatten`` that way).
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


def _tensor_uses(plan: m.ExecutionPlan) -> dict[int, list[int]]:
    uses: dict[int, list[int]] = {}
    values = plan.values

    def touch(index: int, when: int) -> None:
        v = values[index]
        if isinstance(v, m.Tensor):
            uses.setdefault(index, []).append(when)
        elif isinstance(v, m.TensorList | m.OptionalTensorList):
            for item in v.items:
                if item >= 0 and isinstance(values[item], m.Tensor):
                    uses.setdefault(item, []).append(when)

    step = 0
    for chain in plan.chains:
        for ins in chain.instructions:
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


def placements(plan: m.ExecutionPlan) -> list[Placement]:
    """Every memory-planned tensor that the chain uses, with its bytes and lifetime."""
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


def verify_plan(plan: m.ExecutionPlan) -> list[Placement]:
    """Raise `PlanError` naming both tensors if two live tensors share bytes."""
    items = sorted(placements(plan), key=lambda p: (p.memory_id, p.start))
    for i, a in enumerate(items):
        for b in items[i + 1 :]:
            if b.memory_id != a.memory_id or b.start >= a.end:
                break
            same_bytes = a.start == b.start and a.end == b.end
            live_together = a.first_use <= b.last_use and b.first_use <= a.last_use
            if live_together and not same_bytes:
                raise PlanError(
                    f"method {plan.name!r}: values[{a.value}] (arena {a.memory_id} bytes [{a.start}, {a.end}), "
                    f"live at instructions {a.first_use}..{a.last_use}) overlaps values[{b.value}] "
                    f"(bytes [{b.start}, {b.end}), live {b.first_use}..{b.last_use})"
                )
    return items

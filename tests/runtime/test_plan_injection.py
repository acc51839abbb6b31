"""The plan verifier against injected overlaps in every bundled and fixture program.

Injection: for every pair of storages (a tensor with its elided views or in-place results,
as ExecuTorch plans them) in one arena whose lifetimes intersect, the smaller storage is
moved onto the start of the larger one (in both directions when their sizes are equal, so
equal-sized pairs land on exactly the same bytes). Every such plan reads or writes bytes
another live tensor holds; `verify_plan` must reject it. The one kind of injected plan it
may accept is an in-place result that ExecuTorch's reinplace pass would plan itself (an
in-place-safe op's out moved onto its dying first input); each of those must compute,
through the whole runtime, exactly what the untouched program computes.

Untouched programs must all load. Counts print with ``pytest -s``.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from refsim.pte import load_program, write_program
from refsim.pte import model as m
from refsim.runtime import PlanError, Program, TensorRef
from refsim.runtime.plan import Placement, placements, verify_plan

ROOT = Path(__file__).resolve().parents[2]
CORPUS = sorted((ROOT / "examples" / "models").glob("*.pte")) + sorted(
    (ROOT / "tests" / "fixtures" / "pte").rglob("*.pte")
)
#: How many caught injections per program also go through a written file and `Program.load`.
THROUGH_THE_FILE = 2

COUNTS: dict[str, Counter] = {}


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def storages(plan: m.ExecutionPlan) -> list[list[Placement]]:
    """The plan's storages: each a list of placements on the same bytes (root first)."""
    items = placements(plan)
    root = {p.value: p.value for p in items}

    def find(v: int) -> int:
        while root[v] != v:
            v = root[v]
        return v

    for p in items:
        if p.alias_of is not None:
            root[p.value] = p.alias_of
    groups: dict[int, list[Placement]] = {}
    for p in items:
        groups.setdefault(find(p.value), []).append(p)
    return list(groups.values())


def _span(group: list[Placement]) -> tuple[int, int]:
    return min(p.first_use for p in group), max(p.last_use for p in group)


def _move(plan: m.ExecutionPlan, group: list[Placement], offset: int) -> m.ExecutionPlan:
    values = list(plan.values)
    for p in group:
        t = values[p.value]
        assert isinstance(t, m.Tensor) and t.allocation is not None
        values[p.value] = dataclasses.replace(t, allocation=m.Allocation(t.allocation.memory_id, offset))
    return dataclasses.replace(plan, values=tuple(values))


def injections(plan: m.ExecutionPlan):
    """(description, plan) for every overlap injected between two live storages."""
    groups = storages(plan)
    for i, a in enumerate(groups):
        for b in groups[i + 1 :]:
            pa, pb = a[0], b[0]
            if pa.memory_id != pb.memory_id:
                continue
            (fa, la), (fb, lb) = _span(a), _span(b)
            if not (fa <= lb and fb <= la):
                continue
            size_a, size_b = pa.end - pa.start, pb.end - pb.start
            pairs = []
            if size_b <= size_a:
                pairs.append((b, pa))
            if size_a <= size_b:
                pairs.append((a, pb))
            for moved, onto in pairs:
                what = (
                    f"values{[p.value for p in moved]} ({moved[0].end - moved[0].start} B) moved onto "
                    f"values[{onto.value}] ({onto.end - onto.start} B) at {onto.start}"
                )
                yield (
                    what,
                    _move(plan, moved, onto.start),
                    moved[0].end - moved[0].start == onto.end - onto.start,
                )


def _aliases(plan: m.ExecutionPlan) -> set[tuple[int, int]]:
    return {(p.value, p.alias_of) for p in placements(plan) if p.alias_of is not None}


def _is_in_place(plan: m.ExecutionPlan, out: int, base: int) -> bool:
    """``out`` is the out of a KernelCall whose first tensor argument is ``base``."""
    for ins in plan.chains[0].instructions:
        if isinstance(ins, m.KernelCall) and ins.args and ins.args[-1] == out:
            tensors = [a for a in ins.args if isinstance(plan.values[a], m.Tensor)]
            return tensors[0] == base
    return False


def _inputs(method, seed: int) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for slot in method.inputs:
        if not isinstance(slot, TensorRef):
            out.append(slot)
        elif slot.dtype.kind == "f":
            out.append(rng.standard_normal(tuple(slot.sizes)).astype(slot.dtype))
        else:
            out.append(rng.integers(-128, 128, tuple(slot.sizes)).astype(slot.dtype))
    return out


def _replace_plan(pf, index: int, plan: m.ExecutionPlan) -> bytes:
    plans = list(pf.program.execution_plan)
    plans[index] = plan
    extra = [pf.segment_data(i) for i in range(1, len(pf.segments))]
    program = dataclasses.replace(pf.program, execution_plan=tuple(plans))
    return write_program(program, pf.constants(), segments=extra, validate=False)


def _same_results(pf, original: Program, index: int, plan: m.ExecutionPlan) -> bool:
    injected = Program.load(_replace_plan(pf, index, plan))
    a, b = original.method(plan.name), injected.method(plan.name)
    for seed in range(3):
        x = _inputs(a, seed)
        for u, v in zip(a.execute(x), b.execute(x), strict=True):
            if not np.array_equal(np.asarray(u), np.asarray(v)):
                return False
    return True


@pytest.mark.parametrize("path", CORPUS, ids=_name)
def test_untouched_program_loads(path):
    program = Program.load(path)
    for name in program.method_names:
        program.method(name)


@pytest.mark.filterwarnings("ignore")  # LayoutWarnings of the fixtures that show device divergences
@pytest.mark.parametrize("path", CORPUS, ids=_name)
def test_every_injected_overlap_is_caught(path):
    pf = load_program(path)
    original = Program.load(path)
    counts = COUNTS.setdefault(_name(path), Counter())
    holes = []
    for index, plan in enumerate(pf.program.execution_plan):
        if not any(c.instructions for c in plan.chains):
            continue
        through_file = 0
        for what, injected, equal in injections(plan):
            counts["injected"] += 1
            counts["equal_size"] += equal
            try:
                verify_plan(injected)
            except PlanError:
                counts["caught"] += 1
                if through_file < THROUGH_THE_FILE:
                    through_file += 1
                    with pytest.raises(PlanError):
                        Program.load(_replace_plan(pf, index, injected))
                continue
            # Accepted: only as a new in-place result, and then it must compute the same.
            new = _aliases(injected) - _aliases(plan)
            if (
                new
                and all(_is_in_place(injected, v, b) for v, b in new)
                and _same_results(pf, original, index, injected)
            ):
                counts["in_place_same_result"] += 1
            else:
                holes.append(what)
    assert not holes, f"{len(holes)} injected overlaps loaded: {holes[:5]}"


def test_fully_connected_output_onto_its_live_input_is_rejected():
    """The plan in issue 10: a linear layer's output on the bytes of its own input (equal
    size), which the device computes as garbage, must not load."""
    path = ROOT / "examples" / "models" / "ad.pte"
    pf = load_program(path)
    plan = pf.program.plan("forward")
    index = pf.program.execution_plan.index(plan)
    x, out = next(
        (ins.args[0], ins.args[-1])
        for ins in plan.chains[0].instructions
        if isinstance(ins, m.KernelCall)
        and plan.operators[ins.op_index].name == "cortex_m::quantized_linear"
        and plan.values[ins.args[0]].nbytes == plan.values[ins.args[-1]].nbytes
    )
    group = [p for p in placements(plan) if p.value == out]
    with pytest.raises(PlanError, match="neither an elided view nor an in-place result"):
        Program.load(_replace_plan(pf, index, _move(plan, group, plan.values[x].allocation.offset)))


@pytest.fixture(scope="module", autouse=True)
def _print_counts():
    yield
    if not COUNTS:
        return
    total = sum(COUNTS.values(), Counter())
    print(f"\nplan injection: {len(COUNTS)} programs")
    for name, c in sorted(COUNTS.items()):
        print(
            f"  {name}: {c['injected']} injected ({c['equal_size']} equal-sized), {c['caught']} caught, "
            f"{c['in_place_same_result']} accepted in-place results computing the same"
        )
    print(
        f"  total: {total['injected']} injected ({total['equal_size']} equal-sized), {total['caught']} caught, "
        f"{total['in_place_same_result']} accepted in-place results"
    )

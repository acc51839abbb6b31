"""`plan` and `plan_all`: run a named algorithm per arena, or the suite that keeps the smallest."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from compiler.planner import greedy, search
from compiler.planner.greedy import Problem
from compiler.planner.model import (
    ALIGNMENT,
    Buffer,
    Plan,
    PlanError,
    Step,
    check_buffers,
    lifetimes,
    lower_bound,
    make_plan,
    verify,
)

#: An algorithm maps one arena's problem (and a time budget in seconds) to offsets per buffer.
Algorithm = Callable[[Problem, float], list[int]]


def _one_pass(fn: Callable[[Problem], list[int]]) -> Algorithm:
    return lambda problem, _budget: fn(problem)


ALGORITHMS: dict[str, Algorithm] = {
    "greedy_by_size": _one_pass(greedy.greedy_by_size),
    "executorch_greedy": _one_pass(greedy.executorch_greedy),
    "first_fit": _one_pass(greedy.first_fit),
    "local_search": search.local_search,
    "exact": search.exact,
}


def _groups(buffers: Sequence[Buffer]) -> dict[int, list[Buffer]]:
    groups: dict[int, list[Buffer]] = {}
    for b in buffers:
        if b.size > 0:
            groups.setdefault(b.mem_id, []).append(b)
    return dict(sorted(groups.items()))


def _run(buffers: Sequence[Buffer], algorithm: str, alignment: int, time_limit_s: float) -> Plan:
    fn = ALGORITHMS[algorithm]
    start = time.perf_counter()
    offsets = {b.name: 0 for b in buffers}  # empty buffers take no bytes: offset 0
    for group in _groups(buffers).values():
        problem = Problem.build(group, alignment)
        for b, off in zip(group, fn(problem, time_limit_s), strict=True):
            offsets[b.name] = off
    return make_plan(buffers, offsets, algorithm, alignment, time.perf_counter() - start)


def _check_alignment(alignment: int) -> None:
    if alignment <= 0 or alignment & (alignment - 1):
        raise PlanError(f"alignment must be a power of two, got {alignment}")


def plan(
    buffers: Sequence[Buffer],
    *,
    algorithm: str = "best",
    alignment: int = ALIGNMENT,
    time_limit_s: float = 2.0,
) -> Plan:
    """Plan ``buffers`` with one algorithm (see ``ALGORITHMS``) or ``"best"``: every algorithm,
    keeping the smallest arena (ties: the first in ``ALGORITHMS`` order); ``time_limit_s`` bounds
    the searching algorithms. The plan is verified before it is returned."""
    _check_alignment(alignment)
    check_buffers(buffers)
    if algorithm == "best":
        return best_of(plan_all(buffers, alignment=alignment, time_limit_s=time_limit_s))
    if algorithm not in ALGORITHMS:
        names = ", ".join([*ALGORITHMS, "best"])
        raise PlanError(f"unknown planner {algorithm!r}; expected one of {names}")
    result = _run(buffers, algorithm, alignment, time_limit_s)
    verify(buffers, result, alignment)
    return result


def plan_all(
    buffers: Sequence[Buffer], *, alignment: int = ALIGNMENT, time_limit_s: float = 2.0
) -> dict[str, Plan]:
    """Every algorithm's verified plan, by name (for reports)."""
    return {
        name: plan(buffers, algorithm=name, alignment=alignment, time_limit_s=time_limit_s)
        for name in ALGORITHMS
    }


def best_of(plans: Mapping[str, Plan]) -> Plan:
    """The suite's choice among ``plan_all``'s plans: the smallest arena (ties: the first in
    ``ALGORITHMS`` order), named ``best:<algorithm>``, with the time of every algorithm run."""
    chosen = min(plans.values(), key=lambda p: (sum(p.arenas.values()), list(plans).index(p.algorithm)))
    total = sum(p.seconds for p in plans.values())
    return Plan(
        chosen.offsets,
        chosen.arena_bytes,
        f"best:{chosen.algorithm}",
        chosen.lower_bound,
        chosen.arenas,
        total,
    )


@dataclass(frozen=True)
class Schedule:
    """A step order with its plan and the live-bytes bounds of the given and chosen orders."""

    steps: tuple[Step, ...]  # the chosen order
    buffers: tuple[Buffer, ...]  # lifetimes in the chosen order
    plan: Plan
    given_bound: int  # live-bytes bound (arena 1) of the order the caller gave
    chosen_bound: int  # the same for ``steps`` (== plan.lower_bound)


def plan_steps(
    steps: Sequence[Step],
    sizes: Mapping[str, int],
    *,
    graph_inputs: Iterable[str] = (),
    graph_outputs: Iterable[str] = (),
    mem_ids: Mapping[str, int] | None = None,
    algorithm: str = "best",
    alignment: int = ALIGNMENT,
    time_limit_s: float = 2.0,
    reorder: bool = True,
) -> Schedule:
    """Reorder (unless ``reorder=False``), take lifetimes, plan: the whole pipeline in one call."""
    from compiler.planner.reorder import reorder as reorder_steps

    graph_inputs, graph_outputs = tuple(graph_inputs), tuple(graph_outputs)
    io = {"graph_inputs": graph_inputs, "graph_outputs": graph_outputs, "mem_ids": mem_ids}
    given = lower_bound(lifetimes(steps, sizes, **io), alignment)
    order = reorder_steps(steps, sizes, alignment=alignment, **io) if reorder else list(steps)
    buffers = lifetimes(order, sizes, **io)
    result = plan(buffers, algorithm=algorithm, alignment=alignment, time_limit_s=time_limit_s)
    return Schedule(tuple(order), tuple(buffers), result, given, result.lower_bound)

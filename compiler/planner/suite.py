"""`plan` and `plan_all`: run a named algorithm per arena, or the suite that keeps the smallest."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from compiler.planner import greedy
from compiler.planner.greedy import Problem
from compiler.planner.model import ALIGNMENT, Buffer, Plan, PlanError, check_buffers, make_plan

#: An algorithm maps one arena's problem (and a time budget in seconds) to offsets per buffer.
Algorithm = Callable[[Problem, float], list[int]]


def _one_pass(fn: Callable[[Problem], list[int]]) -> Algorithm:
    return lambda problem, _budget: fn(problem)


ALGORITHMS: dict[str, Algorithm] = {
    "greedy_by_size": _one_pass(greedy.greedy_by_size),
    "executorch_greedy": _one_pass(greedy.executorch_greedy),
    "first_fit": _one_pass(greedy.first_fit),
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
    from compiler.planner.model import verify

    _check_alignment(alignment)
    check_buffers(buffers)
    if algorithm == "best":
        plans = plan_all(buffers, alignment=alignment, time_limit_s=time_limit_s)
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

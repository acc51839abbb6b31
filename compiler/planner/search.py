"""The searching planners: local search over first-fit orders, and an exact branch and bound.

**Local search** (``local_search``). Every order of the buffers gives a plan by first fit
(`greedy.decode`); the search walks over orders. It starts from the best of a few
orders (first use, size descending, lifetime length descending, size × length descending)
and repeats: take a buffer that reaches the top of the arena (or, one time in four, any
buffer) and move it to a random earlier position, or swap two buffers; keep the new order if
its (arena, sum of buffer ends) is no worse — sideways moves let it cross plateaus. It
stops at the live-bytes bound (nothing can be smaller), after ``iterations`` moves or at
the time limit. The random generator is seeded, so a run is deterministic as long as the
time limit does not cut it short (1,000 moves of a dense 50-buffer problem take about half a second).

**Branch and bound** (``exact``). Any plan can be pushed down until every buffer rests on
offset 0 or on the top of a buffer live at the same time, without growing; such a plan,
read by increasing offset, is built by placing buffers one at a time at non-decreasing
offsets, each at 0 or on the top of a placed buffer it conflicts with. The search enumerates
exactly these placements (equal offsets in index order, so each plan is built once), in
depth-first order, lowest candidate first. A node at level ``L`` (the offset of the last
buffer placed) is cut when

    max over steps t of  L + (bytes of placed buffers live at t above L)
                           + (bytes of unplaced buffers live at t)   >=   best so far

(at step t everything still unplaced and every placed byte above L must fit between L
and the top). The incumbent starts as the local search's plan; the search ends when it
proves the incumbent optimal (the tree is exhausted, or the incumbent meets the live-bytes
bound), or at the node budget (20,000 nodes, about half a second here) or the time limit,
returning the best plan found; the budget, not the clock, normally ends it, so the result
does not depend on the machine's load. On the bundled
programs the incumbent already meets the bound; the tree search decides small random cases,
which the tests check against brute force.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence

from compiler.planner.greedy import Problem, decode, greedy_by_size_order


def _bound(problem: Problem) -> int:
    horizon = max((b.last for b in problem.buffers), default=-1) + 2
    diff = [0] * horizon
    for b, size in zip(problem.buffers, problem.sizes, strict=True):
        diff[b.first] += size
        diff[b.last + 1] -= size
    best = running = 0
    for d in diff:
        running += d
        best = max(best, running)
    return best


def start_orders(problem: Problem) -> list[list[int]]:
    """Orders the local search starts from (the best one wins)."""
    bufs, sizes = problem.buffers, problem.sizes
    idx = range(len(problem))
    span = [b.last - b.first + 1 for b in bufs]
    return [
        sorted(idx, key=lambda i: (bufs[i].first, -sizes[i], i)),
        greedy_by_size_order(problem),
        sorted(idx, key=lambda i: (-sizes[i], bufs[i].first, i)),
        sorted(idx, key=lambda i: (-span[i], -sizes[i], i)),
        sorted(idx, key=lambda i: (-span[i] * sizes[i], bufs[i].first, i)),
    ]


def _score(problem: Problem, order: Sequence[int]) -> tuple[tuple[int, int], list[int]]:
    offsets, top = decode(problem, order)
    ends = sum(o + s for o, s in zip(offsets, problem.sizes, strict=True))
    return (top, ends), offsets


def local_search(
    problem: Problem, time_limit_s: float, *, iterations: int = 3000, seed: int = 0
) -> list[int]:
    """First-fit orders improved by moves and swaps (see the module docstring)."""
    n = len(problem)
    if n == 0:
        return []
    deadline = time.perf_counter() + time_limit_s
    floor = _bound(problem)
    scored = [(_score(problem, o), o) for o in start_orders(problem)]
    (score, offsets), order = min(scored, key=lambda item: item[0][0])
    order = list(order)
    rng = random.Random(seed)
    sizes = problem.sizes
    for _ in range(iterations):
        if score[0] <= floor or n < 2 or time.perf_counter() > deadline:
            break
        cand = list(order)
        if rng.random() < 0.75:
            top = score[0]
            high = [p for p, i in enumerate(cand) if offsets[i] + sizes[i] == top]
            src = rng.choice(high) if high and rng.random() < 0.75 else rng.randrange(n)
            if src == 0:
                src = rng.randrange(1, n)
            dst = rng.randrange(src)
            cand.insert(dst, cand.pop(src))
        else:
            a, b = rng.sample(range(n), 2)
            cand[a], cand[b] = cand[b], cand[a]
        new_score, new_offsets = _score(problem, cand)
        if new_score <= score:
            score, offsets, order = new_score, new_offsets, cand
    return offsets


class _Search:
    """State of one branch-and-bound run."""

    def __init__(self, problem: Problem, incumbent: list[int], deadline: float, node_budget: int) -> None:
        self.p = problem
        self.n = len(problem)
        self.sizes = problem.sizes
        self.horizon = max((b.last for b in problem.buffers), default=-1) + 1
        self.live = [range(b.first, b.last + 1) for b in problem.buffers]
        self.best = list(incumbent)
        self.best_top = max((o + s for o, s in zip(incumbent, self.sizes, strict=True)), default=0)
        self.floor = _bound(problem)
        self.deadline = deadline
        self.budget = node_budget
        self.nodes = 0
        self.complete = True  # False when a limit cut the search
        self.offsets = [-1] * self.n
        self.unplaced_live = [0] * self.horizon  # bytes of unplaced buffers per step
        for i in range(self.n):
            for t in self.live[i]:
                self.unplaced_live[t] += self.sizes[i]

    def cut(self, level: int) -> bool:
        above = list(self.unplaced_live)
        for i, off in enumerate(self.offsets):
            if off >= 0:
                part = off + self.sizes[i] - max(off, level)
                if part > 0:
                    for t in self.live[i]:
                        above[t] += part
        return level + max(above, default=0) >= self.best_top

    def candidates(self, i: int, level: int, last: int) -> list[int]:
        placed = [
            (self.offsets[j], self.offsets[j] + self.sizes[j])
            for j in self.p.neighbours[i]
            if self.offsets[j] >= 0
        ]
        want = self.sizes[i]
        out = set()
        for x in [0, *(end for _, end in placed)]:
            if x < level or (x == level and i < last):
                continue
            if all(x + want <= start or x >= end for start, end in placed):
                out.add(x)
        return sorted(out)

    def run(self, level: int, last: int, top: int, remaining: int) -> None:
        if self.best_top <= self.floor:
            return
        self.nodes += 1
        if self.nodes > self.budget or (self.nodes & 255 == 0 and time.perf_counter() > self.deadline):
            self.complete = False
            return
        if remaining == 0:
            if top < self.best_top:
                self.best_top, self.best = top, list(self.offsets)
            return
        if self.cut(level):
            return
        branches = []
        for i in range(self.n):
            if self.offsets[i] < 0:
                for x in self.candidates(i, level, last):
                    branches.append((x, -self.sizes[i], i))
        for x, _, i in sorted(branches):
            if max(top, x + self.sizes[i]) >= self.best_top:
                continue
            self.offsets[i] = x
            for t in self.live[i]:
                self.unplaced_live[t] -= self.sizes[i]
            self.run(x, i, max(top, x + self.sizes[i]), remaining - 1)
            for t in self.live[i]:
                self.unplaced_live[t] += self.sizes[i]
            self.offsets[i] = -1
            if not self.complete or self.best_top <= self.floor:
                return


def branch_and_bound(
    problem: Problem, time_limit_s: float, *, node_budget: int = 20_000, incumbent: list[int] | None = None
) -> tuple[list[int], bool]:
    """The smallest plan found and whether it is proven optimal."""
    start = time.perf_counter()
    if incumbent is None:
        incumbent = local_search(problem, time_limit_s / 4)
    search = _Search(problem, incumbent, start + time_limit_s, node_budget)
    if search.best_top > search.floor:
        search.run(0, -1, 0, search.n)
    return search.best, search.complete or search.best_top <= search.floor


def exact(problem: Problem, time_limit_s: float) -> list[int]:
    """Branch and bound, started from the local search's plan (see the module docstring)."""
    return branch_and_bound(problem, time_limit_s)[0]

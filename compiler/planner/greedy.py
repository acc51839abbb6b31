"""The one-pass planners: TFLM's greedy-by-size, ExecuTorch 1.5.1's greedy, first-fit.

All of them work on one arena at a time, on buffers with aligned sizes and at least one
byte (the caller gives empty buffers offset 0). `Problem` holds that view once: aligned
sizes and, per buffer, the buffers it conflicts with.

*First fit in an order* (`decode`) places each buffer, in the given order, at the lowest
offset where it overlaps no buffer already placed that is live at the same time: walk the
placed conflicting buffers by offset and take the first gap that holds it, else the top.
TFLM's ``GreedyMemoryPlanner::CalculateOffsetsIfNeeded`` is exactly this decoder applied to
the buffers sorted by size, largest first; our ``first_fit`` applies it in order of first use.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from compiler.planner.model import Buffer, align


@dataclass(frozen=True)
class Problem:
    """One arena's buffers (all non-empty), aligned sizes and the conflict lists."""

    buffers: tuple[Buffer, ...]
    sizes: tuple[int, ...]  # aligned
    neighbours: tuple[tuple[int, ...], ...]  # indices of buffers live at the same time

    @classmethod
    def build(cls, buffers: Sequence[Buffer], alignment: int) -> Problem:
        bufs = tuple(buffers)
        sizes = tuple(align(b.size, alignment) for b in bufs)
        # sweep by first use: a buffer conflicts with every earlier-starting one still live
        order = sorted(range(len(bufs)), key=lambda i: (bufs[i].first, i))
        adj: list[list[int]] = [[] for _ in bufs]
        for pos, i in enumerate(order):
            for j in order[pos + 1 :]:
                if bufs[j].first > bufs[i].last:
                    break
                adj[i].append(j)
                adj[j].append(i)
        return cls(bufs, sizes, tuple(tuple(sorted(a)) for a in adj))

    def __len__(self) -> int:
        return len(self.buffers)


def decode(problem: Problem, order: Sequence[int]) -> tuple[list[int], int]:
    """First fit in ``order``: offsets per buffer index and the arena size (highest end)."""
    n = len(problem)
    offsets = [-1] * n
    sizes, neighbours = problem.sizes, problem.neighbours
    top = 0
    for i in order:
        placed = sorted((offsets[j], offsets[j] + sizes[j]) for j in neighbours[i] if offsets[j] >= 0)
        want, candidate = sizes[i], 0
        for start, end in placed:
            if start - candidate >= want:
                break
            if end > candidate:
                candidate = end
        offsets[i] = candidate
        top = max(top, candidate + want)
    return offsets, top


def greedy_by_size_order(problem: Problem) -> list[int]:
    """TFLM's order: size descending. TFLM fills its sort array from the tail (the buffer added
    last first) and bubble-sorts it stably, so equal sizes go latest-added first; buffers are
    added in tensor order, which for a chain is the order of first use."""
    n = len(problem)
    return sorted(reversed(range(n)), key=lambda i: -problem.sizes[i])


def greedy_by_size(problem: Problem) -> list[int]:
    """TFLM's ``GreedyMemoryPlanner``: first fit, largest buffer first."""
    return decode(problem, greedy_by_size_order(problem))[0]


def first_fit(problem: Problem) -> list[int]:
    """First fit in order of first use (ties: larger first)."""
    order = sorted(range(len(problem)), key=lambda i: (problem.buffers[i].first, -problem.sizes[i], i))
    return decode(problem, order)[0]


@dataclass
class _SharedObject:
    size: int
    allocations: list[tuple[int, int]]  # (buffer index, offset inside the object)


def executorch_greedy(problem: Problem) -> list[int]:
    """ExecuTorch 1.5.1's ``exir.memory_planning.greedy`` (with overlapping allocations allowed).

    Buffers largest first (``bisect.insort`` by size, then reversed, so equal sizes go in
    reverse insertion order; ExecuTorch inserts from a set of specs, we in order of first
    use). Each goes into the first *shared object* where no allocation is
    live at the same time (at offset 0 inside it); else into the first object where it fits
    on top of the highest allocation live at the same time; else into a new object of its
    size. Objects are then laid end to end in creation order (``_compute_total_sizes``).
    """
    bufs, sizes = problem.buffers, problem.sizes
    ascending: list[int] = []
    for i in range(len(problem)):
        bisect.insort(ascending, i, key=lambda k: sizes[k])
    objects: list[_SharedObject] = []
    where: dict[int, tuple[int, int]] = {}  # buffer -> (object, offset in object)

    def live_together(i: int, j: int) -> bool:
        return not (bufs[i].last < bufs[j].first or bufs[i].first > bufs[j].last)

    for i in reversed(ascending):
        chosen = None
        for k, obj in enumerate(objects):
            if not any(live_together(i, j) for j, _ in obj.allocations):
                chosen = (k, 0)
                break
        if chosen is None:
            for k, obj in enumerate(objects):
                top = max(
                    (off + sizes[j] for j, off in obj.allocations if live_together(i, j)),
                    default=0,
                )
                if top > 0 and top + sizes[i] <= obj.size:
                    chosen = (k, top)
                    break
        if chosen is None:
            objects.append(_SharedObject(sizes[i], []))
            chosen = (len(objects) - 1, 0)
        objects[chosen[0]].allocations.append((i, chosen[1]))
        where[i] = chosen
    base, running = [], 0
    for obj in objects:
        base.append(running)
        running += obj.size
    return [base[where[i][0]] + where[i][1] for i in range(len(problem))]

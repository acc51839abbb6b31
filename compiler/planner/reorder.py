"""Operator reordering: a topological order of the steps with a lower live-bytes peak.

Where the graph has independent branches (ResNet's shortcut beside its two convolutions)
the order decides which tensors are live together, so it moves the bound itself, not just
the packing. Dependencies: step ``j`` must follow step ``i < j`` when both touch a buffer
and either writes it (read after write, and no write may pass a read or write of the same
bytes); reads alone commute.

The search is exact: a bottleneck shortest path over the *done sets* (downward-closed sets
of steps, as bitmasks). Running step ``s`` after the done set ``D`` needs

    cost(D, s) = sum of align(size(b)) over buffers b with
                 (b is a graph input or some step of D ∪ {s} touches b) and
                 (b is a graph output or some step outside D touches b)

(and, as `lifetimes` has it, a graph input no step reads is live at position 0, a graph
output no step writes at the last position)

bytes (exactly what `lower_bound` counts at that step in the final order), and the peak of
an order is the largest cost along it. Done sets are expanded by size, keeping per set the
smallest peak to reach it (ties: the first found, steps tried in the given order), so the
result is the minimum peak over all topological orders. A chain has ``n + 1`` done sets,
ResNet-8 a few dozen; past ``max_states`` (or the time limit, a safety for very wide graphs)
the search stops and a greedy order (among the ready steps the cheapest, ties in the given
order) is used instead. The given order is
returned whenever nothing beats it, so reordering never raises the peak.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence

from compiler.planner.model import ALIGNMENT, PlanError, Step, align, lifetimes, lower_bound


def dependencies(steps: Sequence[Step]) -> list[int]:
    """Per step, the bitmask of steps that must run before it."""
    preds = [0] * len(steps)
    history: dict[str, list[tuple[int, bool]]] = {}  # buffer -> earlier (step, wrote)
    for j, step in enumerate(steps):
        written = set(step.outputs)
        for name in dict.fromkeys((*step.inputs, *step.outputs)):
            w = name in written
            for i, wrote in history.get(name, ()):
                if wrote or w:
                    preds[j] |= 1 << i
            history.setdefault(name, []).append((j, w))
    return preds


def peak(
    steps: Sequence[Step],
    sizes: Mapping[str, int],
    *,
    graph_inputs: Iterable[str] = (),
    graph_outputs: Iterable[str] = (),
    mem_ids: Mapping[str, int] | None = None,
    alignment: int = ALIGNMENT,
) -> int:
    """The live-bytes bound (arena 1) of running ``steps`` in this order."""
    buffers = lifetimes(steps, sizes, graph_inputs=graph_inputs, graph_outputs=graph_outputs, mem_ids=mem_ids)
    return lower_bound(buffers, alignment)


def is_topological(order: Sequence[Step], steps: Sequence[Step]) -> bool:
    """True when ``order`` runs every step of ``steps`` once, each after its dependencies."""
    index = {id(s): k for k, s in enumerate(steps)}
    if sorted(index.get(id(s), -1) for s in order) != list(range(len(steps))):
        return False
    preds = dependencies(steps)
    done = 0
    for s in order:
        k = index[id(s)]
        if preds[k] & ~done:
            return False
        done |= 1 << k
    return True


def reorder(
    steps: Sequence[Step],
    sizes: Mapping[str, int],
    *,
    graph_inputs: Iterable[str] = (),
    graph_outputs: Iterable[str] = (),
    mem_ids: Mapping[str, int] | None = None,
    alignment: int = ALIGNMENT,
    max_states: int = 20_000,
    time_limit_s: float = 2.0,
) -> list[Step]:
    """A topological order of ``steps`` whose peak live bytes (arena 1) is smallest."""
    steps = list(steps)
    n = len(steps)
    if n <= 1:
        return steps
    graph_inputs, graph_outputs = tuple(graph_inputs), tuple(graph_outputs)
    mem = mem_ids or {}
    names = list(
        dict.fromkeys([*(x for s in steps for x in (*s.inputs, *s.outputs)), *graph_inputs, *graph_outputs])
    )
    for name in names:
        if name not in sizes:
            raise PlanError(f"buffer {name!r} has no size")
    touched = {name: 0 for name in names}
    for k, s in enumerate(steps):
        for name in (*s.inputs, *s.outputs):
            touched[name] |= 1 << k
    inputs, outputs = set(graph_inputs), set(graph_outputs)
    tracked = [
        (touched[name], name in inputs, name in outputs, align(sizes[name], alignment))
        for name in names
        if mem.get(name, 1) == 1 and sizes[name] > 0
    ]
    preds = dependencies(steps)
    full = (1 << n) - 1

    def cost(done: int, s: int) -> int:
        after = done | (1 << s)
        rest = full & ~done
        # as `lifetimes` counts them: graph inputs are live at position 0 even when no step
        # reads them, graph outputs at the last position even when no step writes them
        first_pos, last_pos = done == 0, after == full
        return sum(
            size
            for mask, is_in, is_out, size in tracked
            if (is_in or mask & after or (is_out and last_pos))
            and (is_out or mask & rest or (is_in and first_pos))
        )

    def original_peak() -> int:
        done, worst = 0, 0
        for s in range(n):
            worst = max(worst, cost(done, s))
            done |= 1 << s
        return worst

    given = original_peak()
    deadline = time.perf_counter() + time_limit_s
    order = _exact(n, preds, cost, max_states, deadline) or _greedy(n, preds, cost)
    done, worst = 0, 0
    for s in order:
        worst = max(worst, cost(done, s))
        done |= 1 << s
    if worst >= given:
        return steps
    return [steps[s] for s in order]


def _exact(n: int, preds: list[int], cost, max_states: int, deadline: float) -> list[int] | None:
    """The minimum-peak order by bottleneck search over done sets, or None past max_states
    or the deadline."""
    best: dict[int, tuple[int, int, int]] = {0: (0, -1, -1)}  # done -> (peak, parent, step)
    layer = [0]
    states = 1
    for _ in range(n):
        nxt: dict[int, None] = {}
        for done in layer:
            if time.perf_counter() > deadline:
                return None
            reach = best[done][0]
            for s in range(n):
                bit = 1 << s
                if done & bit or preds[s] & ~done:
                    continue
                new = done | bit
                value = max(reach, cost(done, s))
                old = best.get(new)
                if old is None:
                    states += 1
                    if states > max_states:
                        return None
                    nxt[new] = None
                if old is None or value < old[0]:
                    best[new] = (value, done, s)
        layer = list(nxt)
    order = []
    done = (1 << n) - 1
    while done:
        _, parent, s = best[done]
        order.append(s)
        done = parent
    return order[::-1]


def _greedy(n: int, preds: list[int], cost) -> list[int]:
    """Among the ready steps, the cheapest next (ties: the given order)."""
    done, order = 0, []
    for _ in range(n):
        ready = [s for s in range(n) if not done & (1 << s) and not preds[s] & ~done]
        s = min(ready, key=lambda s: cost(done, s))
        order.append(s)
        done |= 1 << s
    return order

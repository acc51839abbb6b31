"""The planner's data: buffers with lifetimes, steps, plans; lifetimes, the bound, the verifier.

A buffer is live over the inclusive step range ``[first, last]``. Two buffers *conflict* when
their ranges intersect and both have bytes; a plan must give conflicting buffers of one
``mem_id`` disjoint byte ranges ``[offset, offset + align(size))``.

The live-bytes lower bound of an order is ``max over steps t of sum(align(size(b)) for b
live at t)``: at step t every live buffer needs its own bytes, so no plan of that order fits
in less. (It is not always reachable: interval packing is NP-hard, and the peak can need
more when a buffer that spans two peaks must sit in one place for both.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from refsim.runtime.plan import PlanError as RuntimePlanError

#: Every offset and every size is rounded up to this many bytes (ExecuTorch's and CMSIS-NN's
#: 16-byte alignment for MVE loads).
ALIGNMENT = 16


class PlanError(RuntimePlanError):
    """A memory plan is broken (two live buffers share bytes, an offset is misaligned, a buffer
    is missing) or the planner's input is inconsistent (a step names an unknown buffer). One family
    with the runtime's plan verifier: catching refsim's PlanError catches both."""


@dataclass(frozen=True)
class Buffer:
    """One memory-planned storage (views/aliases of it are not separate buffers)."""

    name: str
    size: int  # bytes, before alignment
    first: int  # index of the first step that writes or reads it (graph inputs: 0)
    last: int  # index of the last step that reads it (graph outputs: len(steps)-1), inclusive
    mem_id: int = 1


@dataclass(frozen=True)
class Step:
    """One instruction of the chain, in execution order."""

    name: str
    inputs: tuple[str, ...]  # buffer names read
    outputs: tuple[str, ...]  # buffer names written (scratch buffers listed here too)


@dataclass(frozen=True)
class Plan:
    """Byte offsets per buffer; ``arena_bytes`` is the size of arena ``mem_id`` 1 (aligned)."""

    offsets: Mapping[str, int]
    arena_bytes: int
    algorithm: str
    lower_bound: int  # live-bytes lower bound (mem_id 1) of the order planned
    arenas: Mapping[int, int] = field(default_factory=dict)  # every mem_id -> arena size
    seconds: float = 0.0  # planning time

    @property
    def optimal(self) -> bool:
        """True when the arena equals the live-bytes bound (no plan of this order is smaller)."""
        return self.arena_bytes == self.lower_bound


def align(n: int, alignment: int = ALIGNMENT) -> int:
    """``n`` rounded up to a multiple of ``alignment``."""
    return -(-n // alignment) * alignment


def lifetimes(
    steps: Sequence[Step],
    sizes: Mapping[str, int],
    *,
    graph_inputs: Iterable[str] = (),
    graph_outputs: Iterable[str] = (),
    mem_ids: Mapping[str, int] | None = None,
) -> list[Buffer]:
    """Buffers with the step range from the first to the last step naming them.

    Graph inputs are live from step 0 (they are written before the first step runs), graph
    outputs to the last step (they are read after it). Buffers are returned in order of first
    use, then of their first mention; names in ``sizes`` that no step and no graph input or
    output names need no storage and are left out.
    """
    n = len(steps)
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for k, step in enumerate(steps):
        for name in (*step.inputs, *step.outputs):
            if name not in sizes:
                raise PlanError(f"step {k} ({step.name}) names buffer {name!r}, which has no size")
            first.setdefault(name, k)
            last[name] = k
    for name in graph_inputs:
        if name not in sizes:
            raise PlanError(f"graph input {name!r} has no size")
        first[name] = 0
        last.setdefault(name, 0)
    for name in graph_outputs:
        if name not in sizes:
            raise PlanError(f"graph output {name!r} has no size")
        first.setdefault(name, max(n - 1, 0))
        last[name] = max(n - 1, 0)
    mem = mem_ids or {}
    order = sorted(first, key=lambda b: first[b])  # stable: ties keep first mention
    out = []
    for name in order:
        size = sizes[name]
        if size < 0:
            raise PlanError(f"buffer {name!r} has a negative size ({size})")
        out.append(Buffer(name, int(size), first[name], last[name], mem.get(name, 1)))
    return out


def conflicts(a: Buffer, b: Buffer) -> bool:
    """True when ``a`` and ``b`` need disjoint bytes (same arena, both non-empty, both live at
    some step)."""
    return a.mem_id == b.mem_id and a.size > 0 and b.size > 0 and a.first <= b.last and b.first <= a.last


def live_profile(buffers: Sequence[Buffer], alignment: int = ALIGNMENT, mem_id: int = 1) -> list[int]:
    """Aligned bytes live at each step (index 0 .. last step of any buffer) in arena ``mem_id``."""
    horizon = max((b.last for b in buffers), default=-1) + 1
    diff = [0] * (horizon + 1)
    for b in buffers:
        if b.mem_id == mem_id and b.size > 0:
            diff[b.first] += align(b.size, alignment)
            diff[b.last + 1] -= align(b.size, alignment)
    profile, running = [], 0
    for t in range(horizon):
        running += diff[t]
        profile.append(running)
    return profile


def lower_bound(buffers: Sequence[Buffer], alignment: int = ALIGNMENT, mem_id: int = 1) -> int:
    """The live-bytes lower bound: the largest sum of aligned sizes live at one step."""
    return max(live_profile(buffers, alignment, mem_id), default=0)


def check_buffers(buffers: Sequence[Buffer]) -> None:
    """Reject duplicate names, negative sizes and empty or negative lifetimes."""
    seen: set[str] = set()
    for b in buffers:
        if b.name in seen:
            raise PlanError(f"buffer {b.name!r} is listed twice")
        seen.add(b.name)
        if b.size < 0:
            raise PlanError(f"buffer {b.name!r} has a negative size ({b.size})")
        if b.first < 0 or b.last < b.first:
            raise PlanError(
                f"buffer {b.name!r} has the lifetime [{b.first}, {b.last}]; expected 0 <= first <= last"
            )


def verify(buffers: Sequence[Buffer], plan: Plan, alignment: int = ALIGNMENT) -> None:
    """Raise `PlanError` if a buffer has no offset, an offset is misaligned, a buffer leaves its
    arena, or two lifetime-overlapping buffers of one arena share bytes (an obvious sweep:
    sort by offset, compare each buffer with those that start before it ends)."""
    check_buffers(buffers)
    arenas = dict(plan.arenas) or {1: plan.arena_bytes}
    placed = []
    for b in buffers:
        if b.name not in plan.offsets:
            raise PlanError(f"{plan.algorithm}: buffer {b.name!r} has no offset")
        off = plan.offsets[b.name]
        if off < 0 or off % alignment:
            raise PlanError(
                f"{plan.algorithm}: buffer {b.name!r} at offset {off}, not a multiple of {alignment}"
            )
        if b.size == 0:
            continue
        end = off + align(b.size, alignment)
        if end > arenas.get(b.mem_id, 0):
            raise PlanError(
                f"{plan.algorithm}: buffer {b.name!r} ends at byte {end}, beyond arena {b.mem_id} "
                f"({arenas.get(b.mem_id, 0)} bytes)"
            )
        placed.append((b.mem_id, off, end, b))
    placed.sort(key=lambda p: (p[0], p[1]))
    for i, (mem, off, end, a) in enumerate(placed):
        for mem2, off2, end2, b in placed[i + 1 :]:
            if mem2 != mem or off2 >= end:
                break
            if conflicts(a, b):
                raise PlanError(
                    f"{plan.algorithm}: buffers {a.name!r} (bytes [{off}, {end}), steps {a.first}..{a.last}) "
                    f"and {b.name!r} (bytes [{off2}, {end2}), steps {b.first}..{b.last}) overlap"
                )


def make_plan(
    buffers: Sequence[Buffer],
    offsets: Mapping[str, int],
    algorithm: str,
    alignment: int = ALIGNMENT,
    seconds: float = 0.0,
) -> Plan:
    """A `Plan` from offsets: arena sizes are the highest aligned end per mem_id."""
    arenas: dict[int, int] = {}
    for b in buffers:
        end = offsets[b.name] + align(b.size, alignment) if b.size else 0
        arenas[b.mem_id] = max(arenas.get(b.mem_id, 0), end)
    return Plan(
        dict(offsets),
        arenas.get(1, 0),
        algorithm,
        lower_bound(buffers, alignment),
        dict(sorted(arenas.items())),
        seconds,
    )

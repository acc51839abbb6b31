"""TFLM's head plan: the buffers' lifetimes and the GreedyMemoryPlanner's offsets.

Re-implements (our code, same rules) two pieces of tensorflow/tflite-micro @ 90b983c2:

- ``micro_allocation_info.cc`` ``AllocationInfoBuilder``: one entry per tensor of every subgraph,
  then one per scratch request. A tensor needs the arena when it has no constant data (its buffer's
  ``data`` vector is empty), is not a variable and has a nonzero size; an ``OfflineMemoryAllocation``
  offset other than -1 makes a variable planned too. Lifetimes count *allocation scopes*: the
  subgraph inputs are created and used at the current scope, every operator opens a new one
  (its outputs are created there; its inputs, outputs and scratch buffers are used there; IF/WHILE/
  CALL_ONCE walk their subgraphs inside it), and the subgraph outputs live to the final scope.
- ``memory_planner/greedy_memory_planner.cc`` ``GreedyMemoryPlanner``: sizes rounded up to 16
  bytes (``CreatePlan``, ``MicroArenaBufferAlignment``); offline-planned buffers first at their
  offsets, in the order added; the rest ordered by size, largest first, by TFLM's bubble sort
  (``ReverseSortInPlace``, stable) over the list it fills *backwards* — so of two equal sizes the one
  added later is placed first; each buffer goes into the first gap, walking the placed buffers in
  offset order, that is at least as large as it among those live at the same time, else after the
  last of them. The head is the largest ``offset + size``.
"""

from __future__ import annotations

from dataclasses import dataclass

from refsim.errors import RefsimError

#: TFLM's kOnlinePlannedBuffer (micro_memory_planner.h).
ONLINE = -1
ARENA_ALIGNMENT = 16  # MicroArenaBufferAlignment() (micro_arena_constants.h)


@dataclass
class AllocationInfo:
    """One entry of TFLM's AllocationInfo array (micro_allocation_info.h)."""

    label: str
    bytes: int
    needs_allocating: bool
    offline_offset: int = ONLINE
    first_created: int = -1
    last_used: int = -1


@dataclass(frozen=True)
class Placement:
    label: str
    size: int  # rounded to 16
    offset: int
    first: int
    last: int


def align_up(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def greedy_plan(buffers: list[tuple[int, int, int, int]]) -> list[int]:
    """Offsets for ``(size, first, last, offline_offset)`` in the order added, as GreedyMemoryPlanner
    ``CalculateOffsetsIfNeeded`` computes them."""
    count = len(buffers)
    if count == 0:
        return []
    offsets = [ONLINE] * count
    order: list[int] = [0] * count
    sizes: list[int] = [0] * count
    head, tail = 0, count
    for i, (size, _, _, offline) in enumerate(buffers):
        if offline == ONLINE:
            tail -= 1
            order[tail], sizes[tail] = i, size
        else:
            order[head], sizes[head] = i, size
            offsets[i] = offline
            head += 1
    # ReverseSortInPlace: bubble sort, descending, swapping only on a strict "<" (stable).
    swapped = True
    while swapped:
        swapped = False
        for k in range(head + 1, count):
            if sizes[k - 1] < sizes[k]:
                sizes[k - 1], sizes[k] = sizes[k], sizes[k - 1]
                order[k - 1], order[k] = order[k], order[k - 1]
                swapped = True
    first_id = order[0]
    if buffers[first_id][3] == ONLINE:
        offsets[first_id] = 0
    placed: list[int] = [first_id]  # buffer ids in offset order (ties: insertion after equals)
    for k in range(1, count):
        bid = order[k]
        size, first, last, offline = buffers[bid]
        if offline == ONLINE:
            candidate = 0
            for other in placed:
                _, o_first, o_last, _ = buffers[other]
                if o_first > last or first > o_last:
                    continue  # not live at the same time
                if offsets[other] - candidate >= size:
                    break  # the gap before this live buffer fits
                candidate = max(candidate, offsets[other] + buffers[other][0])
        else:
            candidate = offline
        offsets[bid] = candidate
        # Insert in offset order: before the first entry whose offset is strictly greater (TFLM
        # replaces the list head only when the new offset is strictly smaller than the head's).
        pos = len(placed)
        for j, other in enumerate(placed):
            if offsets[other] > candidate:
                pos = j
                break
        placed.insert(pos, bid)
    return offsets


def head_size(buffers: list[tuple[int, int, int, int]], offsets: list[int]) -> int:
    """GreedyMemoryPlanner::GetMaximumMemorySize."""
    return max((off + b[0] for b, off in zip(buffers, offsets, strict=True)), default=0)


def offline_offsets(raw: bytes | None, tensor_count: int) -> list[int] | None:
    """The ``OfflineMemoryAllocation`` metadata (micro_allocation_info.cc GetOfflinePlannedOffsets):
    uint32 words ``[version, subgraph, nbr_tensors, offsets...]``, one int32 offset per tensor."""
    if raw is None:
        return None
    if len(raw) < 12:
        raise RefsimError("OfflineMemoryAllocation metadata: shorter than its 12-byte header")
    words = int.from_bytes(raw[8:12], "little")
    if words != tensor_count:
        raise RefsimError(
            f"OfflineMemoryAllocation metadata: {words} offsets for {tensor_count} tensors "
            "(TFLM rejects the model: micro_allocation_info.cc GetOfflinePlannedOffsets)"
        )
    if len(raw) < 12 + 4 * words:
        raise RefsimError(
            f"OfflineMemoryAllocation metadata: {len(raw)} bytes hold fewer than {words} offsets"
        )
    return [int.from_bytes(raw[12 + 4 * i : 16 + 4 * i], "little", signed=True) for i in range(words)]

"""The TFLM arena report: the three figures and every allocation, each line naming its source."""

from __future__ import annotations

from refsim.memory.tflm.predict import Prediction


def report_dict(p: Prediction) -> dict:
    """The ``tflm`` object of ``refsim inspect MODEL.tflite --memory --json``."""
    s, k = p.setup, p.setup.kernels
    events = p.replay.arena.events
    return {
        "arena_used_bytes": p.arena_used_bytes,
        "arena_min_bytes": p.arena_min_bytes,
        "slack_bytes": p.slack_bytes,
        "head_bytes": p.head_bytes,
        "tail_bytes": p.tail_bytes,
        "word_size": s.sizes.word_size,
        "cpu": p.cpu,
        "kernels": k.kernel_set,
        "isa": k.isa if k.kernel_set == "cmsis_nn" else None,
        "allocator": "RecordingMicroAllocator" if s.recording else "MicroAllocator",
        "min_bound_by": p.failing_step,
        "sizes_source": s.sizes.source,
        "tail": [
            {"what": e.what, "bytes": e.size, "align": e.align, "arena_bytes": e.cost, "source": e.source}
            for e in events
            if e.region == "tail"
        ],
        "plan": [
            {
                "buffer": a.label,
                "bytes": a.bytes,
                "planned_bytes": b[0],
                "offset": off,
                "first": b[1],
                "last": b[2],
            }
            for a, b, off in p.replay.plan
        ],
        "sources": {
            "arena_used_bytes": "micro_allocator.cc:MicroAllocator::used_bytes (head + tail after AllocateTensors)",
            "arena_min_bytes": "the replay of micro_interpreter.cc:AllocateTensors bisected over the arena size",
            "head_bytes": "memory_planner/greedy_memory_planner.cc:GetMaximumMemorySize",
        },
    }


def report_lines(p: Prediction) -> list[tuple[str, int, str]]:
    """``(what, bytes, source)`` rows: the figures first, then the tail allocation by allocation."""
    k = p.setup.kernels
    build = f"{p.setup.sizes.word_size}-bit, TFLM {k.kernel_set} kernels" + (
        f" ({k.isa} CMSIS-NN tier of {p.cpu})" if k.kernel_set == "cmsis_nn" else " (the tflite-micro wheel)"
    )
    rows = [
        (
            f"arena_used_bytes() [{build}]",
            p.arena_used_bytes,
            "micro_allocator.cc:MicroAllocator::used_bytes",
        ),
        (
            "smallest arena AllocateTensors accepts",
            p.arena_min_bytes,
            "micro_interpreter.cc:AllocateTensors (replayed, bisected)",
        ),
        (f"slack (bound by: {p.failing_step})", p.slack_bytes, "arena_min_bytes - arena_used_bytes"),
        (
            f"head: {len(p.replay.plan)} planned buffers",
            p.head_bytes,
            "memory_planner/greedy_memory_planner.cc:GetMaximumMemorySize",
        ),
        ("tail", p.tail_bytes, "arena_allocator/single_arena_buffer_allocator.cc:GetPersistentUsedBytes"),
    ]
    rows += [(f"  tail: {e.what}", e.cost, e.source) for e in p.replay.arena.events if e.region == "tail"]
    return rows

"""The memory planner: a byte offset for every activation and scratch buffer of a program.

Pure Python, no torch (the contract with the compiler is briefs/planner_api.md)::

    buffers = lifetimes(steps, sizes, graph_inputs=..., graph_outputs=...)
    p = plan(buffers)                 # "best": every algorithm, the smallest arena kept
    verify(buffers, p)                # PlanError on overlap, misalignment, overflow
    s = plan_steps(steps, sizes, ...) # reorder + lifetimes + plan, with both bounds

**The problem.** A buffer is live over an inclusive range of steps; buffers live at the
same step need disjoint bytes; sizes and offsets are rounded to 16 bytes. The *live-bytes
lower bound* of an order is the largest sum of aligned sizes live at one step: no plan of
that order is smaller, and every `Plan` carries it beside its arena (``Plan.optimal`` when
they are equal). Packing intervals this way is NP-hard in general, so the suite combines
fast one-pass planners with two searches.

**One pass** (`compiler.planner.greedy`). All of them place a buffer at the lowest offset
that no buffer live at the same time covers ("first fit"), in different orders:

- ``greedy_by_size`` — TFLM's GreedyMemoryPlanner: largest buffer first.
- ``executorch_greedy`` — ExecuTorch 1.5.1's ``greedy``: largest first into "shared
  objects" (at offset 0 if nothing in the object is live at the same time, else on top of
  what is) laid end to end. On the bundled programs it reproduces the arena in the file.
- ``first_fit`` — in order of first use: on chains (MobileNet) it keeps each buffer next to
  its producer's free bytes, which is where the size order fragments (VWW: 73,728 B by size,
  55,296 B, the bound, by first use).

**Search** (`compiler.planner.search`).

- ``local_search`` — walks over orders of the first-fit decoder: moves buffers that reach the
  top of the arena earlier, swaps pairs, keeps changes that do not make (arena, sum of ends)
  worse; seeded, bounded by a move count and the time limit, stops at the bound.
- ``exact`` — branch and bound over "gravity" plans (every buffer on offset 0 or on a
  buffer live with it), built by increasing offset, cut by a per-step bound of what must
  still fit above the current level; started from the local search's plan; proves
  optimality on small problems, and stops at the bound, a node budget or the time limit.
- ``best`` — runs all of the above and keeps the smallest total (ties: the earlier one).

**Reordering** (`compiler.planner.reorder`). Where the graph has independent branches (a
ResNet shortcut beside its convolutions) the step order decides what is live together.
``reorder`` finds the topological order with the smallest peak exactly, by a bottleneck
shortest path over the sets of steps already run (a greedy order past a state budget), and
returns the given order unless it lowers the peak.

**Programs** (`compiler.planner.program`). ``read_program`` rebuilds steps and buffers
from a .pte as refsim's runtime verifier sees them (views share their base's buffer;
``scratch`` names the CMSIS-NN scratch buffers); ``apply_plan`` writes a plan back into
the file's ``allocation_info`` with refsim's writer, so refsim's runtime checks and runs it.
"""

from compiler.planner.model import (
    ALIGNMENT,
    Buffer,
    Plan,
    PlanError,
    Step,
    align,
    lifetimes,
    live_profile,
    lower_bound,
    verify,
)
from compiler.planner.program import ProgramBuffers, apply_plan, buffers_from_program, read_program
from compiler.planner.reorder import dependencies, is_topological, peak, reorder
from compiler.planner.suite import ALGORITHMS, Schedule, best_of, plan, plan_all, plan_steps

__all__ = [
    "ALGORITHMS",
    "ALIGNMENT",
    "Buffer",
    "Plan",
    "PlanError",
    "ProgramBuffers",
    "Schedule",
    "Step",
    "align",
    "apply_plan",
    "best_of",
    "buffers_from_program",
    "dependencies",
    "is_topological",
    "lifetimes",
    "live_profile",
    "lower_bound",
    "peak",
    "plan",
    "plan_all",
    "plan_steps",
    "read_program",
    "reorder",
    "verify",
]

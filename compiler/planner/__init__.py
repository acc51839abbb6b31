"""The memory planner: byte offsets for every activation and scratch buffer of a program.

Pure Python (no torch). The contract with the compiler is /work/briefs/planner_api.md:
`lifetimes` → `plan` (or `plan_all`) → `verify`; `reorder` changes the order of the steps
first; `buffers_from_program` reads a .pte so that planners can be compared on real exports.

Algorithms (all in 16-byte units; see each module's docstring):

- ``greedy_by_size`` — TFLM's GreedyMemoryPlanner: buffers largest first, each at the lowest
  offset not taken by a buffer live at the same time.
- ``executorch_greedy`` — ExecuTorch 1.5.1's ``greedy``: buffers largest first into shared
  objects laid end to end.
- ``first_fit`` — the same lowest-offset placement in order of first use.
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
from compiler.planner.suite import ALGORITHMS, plan, plan_all

__all__ = [
    "ALGORITHMS",
    "ALIGNMENT",
    "Buffer",
    "Plan",
    "PlanError",
    "ProgramBuffers",
    "Step",
    "align",
    "apply_plan",
    "buffers_from_program",
    "lifetimes",
    "live_profile",
    "lower_bound",
    "plan",
    "plan_all",
    "read_program",
    "verify",
]

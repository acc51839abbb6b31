"""Costs of whole programs: what each op does (its ``Work``), priced on one core and system.

An op's cost hook (refsim/ops/cost.py) describes the op as work items; this module prices them:

- :class:`KernelWork` — a CMSIS-NN call (function + VECTORS.md params), priced by the
  calibrated formulas (:func:`isa_models.formulas.estimate_call`); ``repeat`` for calls made
  once per image or row.
- :class:`CopyWork` — bytes a portable layout op moves (view/clone/cat/slice copies: runs of
  contiguous bytes), priced as arm_pad_s8 without padding (the same memcpy loops) from the
  same calibration.
- :class:`FloatWork` — fp32 work of a portable float op: ``adds``/``muls`` (a MAC is one of
  each), ``divs``, ``transcendentals`` (exp, tanh, erf, sqrt...) and ``elements`` loaded and
  stored, priced by :data:`FLOAT_CYCLES` for the core's FPU (soft-float on M0+/M3).
- :class:`NoEstimate` — an op the model cannot price; it shows as "no estimate", never 0.

Plus :func:`dispatch_cost` per KernelCall (ExecuTorch's Method::execute loop and the op's
argument unboxing) and the memory-system penalty of :func:`memory_penalty` for a system
whose weights or code sit in flash.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from isa_models.cores import get_core_model
from isa_models.cost import NO_ESTIMATE, Cost
from isa_models.formulas import estimate_call


@dataclass(frozen=True)
class KernelWork:
    """A CMSIS-NN call: function, VECTORS.md params, calls per op and constant bytes read."""

    function: str
    params: Mapping[str, int]
    repeat: int = 1
    weights_bytes: int = 0  # constant bytes the call reads (for a system with weights in flash)


@dataclass(frozen=True)
class CopyWork:
    """Bytes a portable layout op copies, in ``runs`` contiguous runs."""

    nbytes: int
    runs: int = 1


@dataclass(frozen=True)
class FloatWork:
    """fp32 operations and elements of a portable float op."""

    adds: int = 0
    muls: int = 0
    divs: int = 0
    transcendentals: int = 0
    elements: int = 0  # values loaded and stored (one each)
    macs: int = 0  # multiply-accumulates among the adds/muls (a float conv or matmul), for reports


@dataclass(frozen=True)
class NoEstimate:
    """Work the model cannot price, and why (shown as "no estimate", never 0)."""

    reason: str


Work = KernelWork | CopyWork | FloatWork | NoEstimate


@dataclass(frozen=True)
class FloatTable:
    """Cycles per fp32 operation on one kind of FPU (named fields, see :data:`FLOAT_CYCLES`)."""

    add: float
    mul: float
    div: float
    transcendental: float
    element: float
    source: str


#: Cycles per fp32 operation by FPU kind (isa_models.cores ``fpu``). Hardware FPUs: VADD/VMUL/
#: VFMA issue in 1 cycle and VDIV/VSQRT take 14 (Cortex-M4 TRM r0p1, table 7-1; M7/M33/M55
#: alike), a loop-carried dependency exposes the 3-cycle latency, so 2 cycles per add or mul in
#: a portable kernel loop; transcendentals are libm calls of ~20 FPU operations. Soft float
#: (M0+/M3): libgcc's __aeabi_fadd/fmul/fdiv take roughly 40 / 50 / 120 cycles and expf ~1,500
#: on a Cortex-M3 (rule of thumb: routine lengths in libgcc's ieee754-sf.S). These are not
#: calibrated: no bundled program's time is dominated by fp32 ops.
FLOAT_CYCLES: Mapping[str, FloatTable] = {
    "none": FloatTable(add=40.0, mul=50.0, div=120.0, transcendental=1500.0, element=4.0,
                       source="soft-float rule of thumb (libgcc ieee754-sf), uncalibrated"),
    "sp": FloatTable(add=2.0, mul=2.0, div=14.0, transcendental=60.0, element=3.0,
                     source="FPv4/FPv5 issue and latency (Cortex-M4 TRM table 7-1), uncalibrated"),
    "dp": FloatTable(add=2.0, mul=2.0, div=14.0, transcendental=60.0, element=3.0,
                     source="FPv5 issue and latency (Cortex-M7 TRM), uncalibrated"),
}  # fmt: skip


@dataclass(frozen=True)
class Dispatch:
    """Instructions of one KernelCall outside the kernel: ExecuTorch's ``Method::execute`` loop
    and ``execute_instruction`` (instruction-count check, flatbuffer instruction and union-tag
    reads, switch, KernelRuntimeContext, the args span, the indirect call, failure-state check,
    next index: ~60 instructions), the generated wrapper unboxing each argument EValue (tag check
    and load: ~6 per argument), and the cortex_m op's own set-up before it calls CMSIS-NN
    (building cmsis_nn_dims/params structs and its checks: ~120). Read from method.cpp and
    ExecuTorch's cortex_m op sources, not measured; cycles = instructions x ``cpi`` (branchy
    pointer-chasing code on a single-issue core)."""

    loop: int = 60
    per_argument: int = 6
    cortex_m_setup: int = 120
    portable_setup: int = 40
    cpi: float = 1.4


DISPATCH = Dispatch()


def dispatch_cost(arguments: int, *, cortex_m: bool, dispatch: Dispatch = DISPATCH) -> Cost:
    instructions = dispatch.loop + dispatch.per_argument * arguments
    instructions += dispatch.cortex_m_setup if cortex_m else dispatch.portable_setup
    return Cost(instructions=float(instructions), cycles=instructions * dispatch.cpi, sources=("dispatch",))


def memory_penalty(cost: Cost, weights_bytes: int, system) -> Cost:
    """Extra cycles of a system (isa_models.systems preset) whose weights or code are in flash
    or MRAM, on top of the zero-wait-state calibration: weights read through a data cache /
    line buffer cost ``⌈bytes / line⌉ · ws`` (each line fetched once), without one a wait per
    word read (``bytes / 4 · ws`` per pass); code in flash without an accelerator waits
    ``ws`` per fetched line of straight-line code (``2 · instructions / line``)."""
    extra = 0.0
    ws = system.data_wait_states
    if ws and weights_bytes:
        if system.data_cache:
            extra += -(-weights_bytes // system.flash_line_bytes) * ws
        else:
            extra += weights_bytes / 4 * ws
    iws = system.ifetch_wait_states
    if iws and not system.instruction_accelerator:
        extra += 2.0 * cost.instructions / system.flash_line_bytes * iws
    if not extra:
        return cost
    return cost + Cost(cycles=extra, sources=(f"system {system.name}",))


def _float_cost(work: FloatWork, fpu: str) -> Cost:
    t = FLOAT_CYCLES[fpu]
    cycles = (
        work.adds * t.add + work.muls * t.mul + work.divs * t.div
        + work.transcendentals * t.transcendental + work.elements * t.element
    )  # fmt: skip
    return Cost(
        macs=work.macs,
        instructions=cycles,  # no instruction model for fp32: reported equal to cycles
        cycles=cycles,
        bytes_read={"sram": 4 * work.elements},
        bytes_written={"sram": 4 * work.elements},
        sources=(t.source,),
    )


def cost_of(works: Sequence[Work], core: str, *, library: str | None = None, system=None) -> Cost:
    """The Cost of an op's work items on ``core`` (NO_ESTIMATE-flagged if any item has none)."""
    model = get_core_model(core)
    total = Cost()
    for w in works:
        if isinstance(w, NoEstimate):
            total = total + NO_ESTIMATE
        elif isinstance(w, KernelWork):
            c = estimate_call(w.function, w.params, core, library=library)
            if system is not None:
                c = memory_penalty(c, w.weights_bytes, system)
            total = total + (c.scaled(w.repeat) if w.repeat != 1 else c)
        elif isinstance(w, CopyWork):
            if w.nbytes:
                from isa_models import layout  # imported only by a program with copies

                total = total + estimate_call(
                    "arm_pad_s8", layout.copy_params(w.nbytes, w.runs), core, library=library
                )
        elif isinstance(w, FloatWork):
            total = total + _float_cost(w, model.fpu)
    return total


__all__ = [
    "DISPATCH",
    "FLOAT_CYCLES",
    "CopyWork",
    "Dispatch",
    "FloatTable",
    "FloatWork",
    "KernelWork",
    "NoEstimate",
    "Work",
    "cost_of",
    "dispatch_cost",
    "memory_penalty",
]

"""Costs of whole programs: what each op does (its ``Work``), priced on one core and system.

An op's cost hook (refsim/ops/cost.py) describes the op as work items; this module prices them:

- :class:`KernelWork` — a CMSIS-NN call (function + VECTORS.md params), priced by the
  calibrated formulas (:func:`isa_models.cortex_m.formulas.estimate_call`); ``repeat`` for calls made
  once per image or row.
- :class:`CopyWork` — bytes a portable layout op moves (view/clone/cat/slice copies: runs of
  contiguous bytes), priced as arm_pad_s8 without padding (the same memcpy loops) from the
  same calibration.
- :class:`FloatWork` — fp32 work of a portable float op: ``adds``/``muls`` (a MAC is one of
  each), ``divs``, ``transcendentals`` (exp, tanh, erf, sqrt...) and ``elements`` loaded and
  stored, priced by the core's measured fp32 table (:func:`float_table`: ExecuTorch's portable
  kernels timed per element; the rule of thumb :data:`FLOAT_CYCLES` without a measurement).
- :class:`NoEstimate` — an op the model cannot price; it shows as "no estimate", never 0.

Plus :func:`dispatch_cost` per KernelCall (ExecuTorch's Method::execute loop and the op's
argument unboxing, measured per core: isa_models/cortex_m/dispatch.json) and :func:`execute_cost` once per
inference, and the memory-system penalty of :func:`memory_penalty` for a system
whose weights or code sit in flash.
"""

# No ``from __future__ import annotations`` here: typing.NamedTuple compiles every string
# annotation into a ForwardRef at import (~10 µs a field), which the estimate's cold start pays.
import functools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

from isa_models.cortex_m.cores import get_core_model
from isa_models.cortex_m.formulas import estimate_call
from isa_models.cost import NO_ESTIMATE, Cost

if TYPE_CHECKING:
    from isa_models.cortex_m.calibration import CalibrationSet


class KernelWork(NamedTuple):
    """A CMSIS-NN call: function, VECTORS.md params, calls per op and constant bytes read."""

    function: str
    params: Mapping[str, int]
    repeat: int = 1
    weights_bytes: int = 0  # constant bytes the call reads (for a system with weights in flash)


class CopyWork(NamedTuple):
    """Bytes a portable layout op copies, in ``runs`` contiguous runs."""

    nbytes: int
    runs: int = 1


class FloatWork(NamedTuple):
    """fp32 operations and elements of a portable float op."""

    adds: int = 0
    muls: int = 0
    divs: int = 0
    transcendentals: int = 0
    elements: int = 0  # values loaded and stored (one each)
    macs: int = 0  # multiply-accumulates among the adds/muls (a float conv or matmul), for reports
    portable: bool = True  # an ExecuTorch portable op (False: the application's own loop)
    #: The portable kernel (a name in float_ops.json "ops", e.g. "tanh") when it was measured
    #: whole: priced by its own measurement, the counts above only where the core has none.
    kernel: str = ""


class NoEstimate(NamedTuple):
    """Work the model cannot price, and why (shown as "no estimate", never 0)."""

    reason: str


Work = KernelWork | CopyWork | FloatWork | NoEstimate


class FloatTable(NamedTuple):
    """Cycles per fp32 operation (named fields). An application loop (``FloatWork.portable``
    False) of n elements costs ``n · (adds·add + muls·mul + divs·div +
    transcendentals·transcendental + element)``, MACs at ``mac`` each instead of an add and a mul;
    a portable op adds ``call`` once and ``portable_element`` per element (elementwise_util's
    generic loads, conversions and stores), its MACs at ``portable_mac``
    (refsim/lab/executorch/float_probe.py derives every field)."""

    add: float
    mul: float
    div: float
    transcendental: float
    element: float
    source: str
    mac: float | None = None  # None: add + mul
    portable_element: float = 0.0
    portable_mac: float | None = None  # None: mac
    call: float = 0.0


#: The old rule-of-thumb rates by FPU kind (isa_models.cortex_m.cores ``fpu``), for a core without a
#: measurement (:data:`FLOAT_DATA`). Hardware FPUs: VADD/VMUL/VFMA issue in 1 cycle and
#: VDIV/VSQRT take 14 (Cortex-M4 TRM r0p1, table 7-1; M7/M33/M55 alike), a loop-carried
#: dependency exposes the 3-cycle latency, so 2 cycles per add or mul; transcendentals ~20 FPU
#: operations. Soft float (M0+/M3): libgcc's __aeabi_fadd/fmul/fdiv roughly 40 / 50 / 120 cycles
#: and expf ~1,500 (routine lengths in libgcc's ieee754-sf.S). Not measured.
FLOAT_CYCLES: Mapping[str, FloatTable] = {
    "none": FloatTable(add=40.0, mul=50.0, div=120.0, transcendental=1500.0, element=4.0,
                       source="soft-float rule of thumb (libgcc ieee754-sf), uncalibrated"),
    "sp": FloatTable(add=2.0, mul=2.0, div=14.0, transcendental=60.0, element=3.0,
                     source="FPv4/FPv5 issue and latency (Cortex-M4 TRM table 7-1), uncalibrated"),
    "dp": FloatTable(add=2.0, mul=2.0, div=14.0, transcendental=60.0, element=3.0,
                     source="FPv5 issue and latency (Cortex-M7 TRM), uncalibrated"),
}  # fmt: skip

#: ExecuTorch's portable fp32 kernels measured per core (refsim/lab/executorch/float_probe.py).
FLOAT_DATA = Path(__file__).with_name("float_ops.json")


@functools.cache
def _float_document() -> Mapping:
    return json.loads(FLOAT_DATA.read_text()) if FLOAT_DATA.is_file() else {}


class MeasuredFloatKernel(NamedTuple):
    """One portable fp32 kernel measured whole on a core (refsim/lab/executorch/float_probe.py: 1-D
    tensors of 16/64/256 elements, no broadcasting): ``call + element · n`` for n output elements."""

    call_instructions: float
    call_cycles: float
    element_instructions: float
    element_cycles: float


@functools.cache
def measured_float_kernels() -> Mapping[str, Mapping[str, MeasuredFloatKernel]]:
    """Per core, per measured portable kernel (float_ops.json "ops"), its own cost line."""
    data = _float_document()
    out: dict[str, dict[str, MeasuredFloatKernel]] = {}
    for core, entry in data.get("cores", {}).items():
        table = entry["table"]
        out[core] = {
            op: MeasuredFloatKernel(
                call_instructions=float(table["per_call"]["instructions"][op]),
                call_cycles=float(table["per_call"]["cycles"][op]),
                element_instructions=float(table["per_element"]["instructions"][op]),
                element_cycles=float(table["per_element"]["cycles"][op]),
            )
            for op in data["ops"]
            if op in table["per_element"]["cycles"] and op != "mm"  # mm: per MAC, see FloatTable
        }
    return out


@functools.cache
def measured_float() -> Mapping[str, FloatTable]:
    """Per core, the measured fp32 table of :data:`FLOAT_DATA` (empty if the file is absent)."""
    data = _float_document()
    if not data:
        return {}
    source = f"fp32 portable kernels measured (ExecuTorch {data['provenance']['executorch'].split(' (')[0]})"
    names = (
        "add",
        "mul",
        "div",
        "transcendental",
        "element",
        "mac",
        "portable_element",
        "portable_mac",
        "call",
    )
    return {
        core: FloatTable(**{k: float(entry["table"]["cycles"][k]) for k in names}, source=source)
        for core, entry in data["cores"].items()
    }


def float_table(core: str) -> FloatTable:
    """The measured fp32 table of ``core``, else the rule of thumb for its FPU."""
    return measured_float().get(core) or FLOAT_CYCLES[get_core_model(core).fpu]


class Dispatch(NamedTuple):
    """The old reading-based dispatch (kept for comparison; cores without a measurement fall back
    to it): ExecuTorch's ``Method::execute`` loop and ``execute_instruction`` (~60 instructions),
    the generated wrapper unboxing each argument EValue (~6 per argument), read from method.cpp,
    cycles = instructions x ``cpi``. ``cortex_m_setup`` / ``portable_setup``: the op's own set-up
    before it calls CMSIS-NN (building cmsis_nn_dims/params structs and its checks: ~120; a
    portable op's ~40), read from ExecuTorch's cortex_m op sources. The set-up is still this
    reading: the measurement (:class:`MeasuredDispatch`) runs empty kernel bodies."""

    loop: int = 60
    per_argument: int = 6
    cortex_m_setup: int = 120
    portable_setup: int = 40
    cpi: float = 1.4


READING_BASED = Dispatch()
DISPATCH = READING_BASED

#: ExecuTorch's measured dispatch (refsim/lab/executorch/dispatch_probe.py, benchmarks/dispatch.py).
DISPATCH_DATA = Path(__file__).with_name("dispatch.json")


class DispatchRate(NamedTuple):
    """One core's measured dispatch in one unit (instructions or cycles), fitted on per-call
    counting windows of ExecuTorch's runtime built from source and run under QEMU::

        per call    = call + argument · arguments + list · list arguments + list_element · elements
        per execute = execute   (Method::execute's entry and exit, once per inference)

    ``arguments``: the schema's arguments, out included; ``list arguments``: the int[]/float[]/
    bool[]/Tensor[] among them (each a BoxedEvalueList to unbox), ``elements`` their total length
    (each element unboxed from its own EValue)."""

    call: float
    argument: float
    list: float
    list_element: float
    execute: float

    def per_call(self, arguments: int, lists: int, list_elements: int) -> float:
        return self.call + self.argument * arguments + self.list * lists + self.list_element * list_elements


class OpSetup(NamedTuple):
    """A cortex_m op's own code around its CMSIS-NN call (argument checks, building the CMSIS-NN
    structs, the scratch buffer), measured per op."""

    instructions: float
    cycles: float


class MeasuredDispatch(NamedTuple):
    core: str
    instructions: DispatchRate
    cycles: DispatchRate
    source: str
    setup: Mapping[str, OpSetup] = MappingProxyType({})

    def setup_of(self, op: str | None) -> OpSetup | None:
        """The op's measured set-up; another cortex_m op: the mean of the measured ones."""
        if not self.setup:
            return None
        if op in self.setup:
            return self.setup[op]
        n = len(self.setup)
        return OpSetup(
            sum(s.instructions for s in self.setup.values()) / n,
            sum(s.cycles for s in self.setup.values()) / n,
        )


def _members(text: str, names: tuple[str, ...]) -> dict:
    """The top-level members ``names`` of the JSON object ``text``, decoding only their values
    when the file is laid out as ``json.dumps(indent=1)`` writes it (``\n "name": `` starts each
    member; dispatch.json's ``programs`` are half the file and the estimate reads none of them);
    any other layout is decoded whole."""
    decoder = json.JSONDecoder()
    out = {}
    for name in names:
        start = text.find(f'\n "{name}": ')
        if start < 0:
            return json.loads(text)
        out[name] = decoder.raw_decode(text, start + len(name) + 6)[0]
    return out


@functools.cache
def measured_dispatch() -> Mapping[str, MeasuredDispatch]:
    """Per core, the measured dispatch of :data:`DISPATCH_DATA` (empty if the file is absent)."""
    if not DISPATCH_DATA.is_file():
        return {}
    data = _members(DISPATCH_DATA.read_text(), ("cores", "provenance"))
    source = f"dispatch measured (ExecuTorch {data['provenance']['executorch'].split(' (')[0]})"
    fields = DispatchRate._fields
    return {
        core: MeasuredDispatch(
            core,
            DispatchRate(**{k: float(entry["fit"]["instructions"][k]) for k in fields}),
            DispatchRate(**{k: float(entry["fit"]["cycles"][k]) for k in fields}),
            source,
            {
                op: OpSetup(float(v["instructions"]), float(v["cycles"]))
                for op, v in entry.get("setup", {}).items()
            },
        )
        for core, entry in data["cores"].items()
    }


def _setup(cortex_m: bool, dispatch: Dispatch) -> float:
    return float(dispatch.cortex_m_setup if cortex_m else dispatch.portable_setup)


def dispatch_cost(
    arguments: int,
    *,
    cortex_m: bool,
    core: str | None = None,
    lists: int = 0,
    list_elements: int = 0,
    op: str | None = None,
    dispatch: Dispatch = READING_BASED,
) -> Cost:
    """One KernelCall's cost outside its kernel: the measured per-call dispatch of ``core``
    (:class:`DispatchRate`) plus the op's set-up: a cortex_m op's measured one (``op`` by name,
    else the mean of the measured ops), a portable op's reading-based ``portable_setup``; without
    a measurement for ``core`` (or without ``core``) the reading-based :class:`Dispatch`."""
    measured = measured_dispatch().get(core) if core else None
    if measured is None:
        instructions = dispatch.loop + dispatch.per_argument * arguments + _setup(cortex_m, dispatch)
        return Cost(
            instructions=float(instructions), cycles=instructions * dispatch.cpi, sources=("dispatch",)
        )
    ins = measured.instructions.per_call(arguments, lists, list_elements)
    cyc = measured.cycles.per_call(arguments, lists, list_elements)
    setup = measured.setup_of(op) if cortex_m else None
    if setup is None:
        reading = _setup(cortex_m, dispatch)
        return Cost(
            instructions=ins + reading,
            cycles=cyc + reading * dispatch.cpi,
            sources=(measured.source, "op set-up (reading-based)"),
        )
    return Cost(instructions=ins + setup.instructions, cycles=cyc + setup.cycles, sources=(measured.source,))


def execute_cost(core: str) -> Cost:
    """Method::execute's own entry and exit, once per inference (measured; 0 without a measurement,
    where the reading-based model had no per-execute term)."""
    measured = measured_dispatch().get(core)
    if measured is None:
        return Cost()
    return Cost(
        instructions=measured.instructions.execute, cycles=measured.cycles.execute, sources=(measured.source,)
    )


def memory_penalty(cost: Cost, weights_bytes: int, system) -> Cost:
    """Extra cycles of a system (isa_models.cortex_m.systems preset) whose weights or code are in flash
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


def _float_cost(work: FloatWork, t: FloatTable, core: str) -> Cost:
    measured = measured_float_kernels().get(core, {}).get(work.kernel) if work.portable else None
    if measured is not None:
        return Cost(
            instructions=measured.call_instructions + measured.element_instructions * work.elements,
            cycles=measured.call_cycles + measured.element_cycles * work.elements,
            bytes_read={"sram": 4 * work.elements},
            bytes_written={"sram": 4 * work.elements},
            sources=(f"{t.source}: portable {work.kernel} measured whole",),
        )
    mac = t.add + t.mul if t.mac is None else t.mac
    call, element = 0.0, t.element
    if work.portable:
        mac = mac if t.portable_mac is None else t.portable_mac
        call, element = t.call, t.element + t.portable_element
    cycles = (
        call + work.macs * mac + (work.adds - work.macs) * t.add + (work.muls - work.macs) * t.mul
        + work.divs * t.div + work.transcendentals * t.transcendental + work.elements * element
    )  # fmt: skip
    return Cost(
        macs=work.macs,
        instructions=cycles,  # no instruction model for fp32: reported equal to cycles
        cycles=cycles,
        bytes_read={"sram": 4 * work.elements},
        bytes_written={"sram": 4 * work.elements},
        sources=(t.source,),
    )


def cost_of(
    works: Sequence[Work],
    core: str,
    *,
    library: str | None = None,
    system=None,
    calibrations: "CalibrationSet | None" = None,
) -> Cost:
    """The Cost of an op's work items on ``core`` (NO_ESTIMATE-flagged if any item has none).
    ``calibrations``: the estimate's loaded
    :class:`~isa_models.cortex_m.calibration.CalibrationSet`, handed to every call
    (:func:`~isa_models.cortex_m.formulas.estimate_call`)."""
    get_core_model(core)  # an unknown core is an error here, not at the first float op
    total = Cost()
    for w in works:
        if isinstance(w, NoEstimate):
            total = total + NO_ESTIMATE
        elif isinstance(w, KernelWork):
            c = estimate_call(w.function, w.params, core, library=library, calibrations=calibrations)
            if system is not None:
                c = memory_penalty(c, w.weights_bytes, system)
            total = total + (c.scaled(w.repeat) if w.repeat != 1 else c)
        elif isinstance(w, CopyWork):
            if w.nbytes:
                from isa_models.cortex_m import layout  # imported only by a program with copies

                total = total + estimate_call(
                    "arm_pad_s8",
                    layout.copy_params(w.nbytes, w.runs),
                    core,
                    library=library,
                    calibrations=calibrations,
                )
        elif isinstance(w, FloatWork):
            total = total + _float_cost(w, float_table(core), core)
    return total


__all__ = [
    "DISPATCH",
    "DISPATCH_DATA",
    "FLOAT_CYCLES",
    "FLOAT_DATA",
    "READING_BASED",
    "CopyWork",
    "Dispatch",
    "DispatchRate",
    "FloatTable",
    "FloatWork",
    "KernelWork",
    "MeasuredDispatch",
    "MeasuredFloatKernel",
    "NoEstimate",
    "OpSetup",
    "Work",
    "cost_of",
    "dispatch_cost",
    "execute_cost",
    "float_table",
    "measured_dispatch",
    "measured_float",
    "memory_penalty",
]

"""Cycle estimate of a loaded method on one core and system (``refsim run --estimate-cycles``).

    est = estimate_method(program, method, cpu="cortex-m55")
    est.cycles_total, est.latency_ms, [r.cycles for r in est.rows]

Per KernelCall the op's cost hook (refsim/ops/cost.py) describes its work and isa_models prices
it from the core's calibration; each call adds ExecuTorch's dispatch cost
(isa_models.cortex_m.program.dispatch_cost); a program exported with QuantizeInputs/QuantizeOutputs adds
the application's float→int8 input and int8→float output steps. An op the model cannot price
is a row marked "no estimate" and the total says it is a lower bound, never a silent 0.

Data-dependent work (softmax's exponentials: refsim.ops.data_work) is priced on the values a
run saw when ``counts`` (instruction → counts, from a ``CountingTrace`` over the run) are given;
without them such a row is priced at its shape-only bound and marked so (``Row.basis``), and the
estimate says it is shape-only (:attr:`Estimate.basis`).

Target resolution (:func:`resolve_target`): ``--cpu`` names the core, ``--isa`` the tier (its
default core: scalar cortex-m3, dsp cortex-m4, mve cortex-m55), ``--system`` a preset (its core,
clock and memories); without any, the tier the file shows it was exported for: a linear with
``kernel_sum`` is an MVE export, a linear without one a DSP export; otherwise MVE.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

from isa_models.cost import Cost
from refsim.errors import RefsimError
from refsim.runtime.program import Method, Program
from refsim.runtime.tier import exported_tier

if TYPE_CHECKING:
    from isa_models.cortex_m.calibration import CalibrationSet

DEFAULT_CPU = {"scalar": "cortex-m3", "dsp": "cortex-m4", "mve": "cortex-m55"}
#: :attr:`Estimate.basis` values.
BASIS_SHAPE_ONLY, BASIS_DATA, BASIS_SHAPE = "shape only", "run inputs", "shape"
TIER_ORDER = ("scalar", "dsp", "mve")


class EstimateError(RefsimError):
    """The cost model cannot estimate this program on this target (the message says why)."""


class Target(NamedTuple):
    """The core, tier, system preset and clock an estimate is made for (:func:`resolve_target`)."""

    cpu: str
    isa: str
    system: object | None
    clock_mhz: float
    clock_note: str
    exported_for: str | None


def resolve_target(
    method: Method, *, isa: str | None, cpu: str | None, system: str | None, clock_mhz: float | None
) -> Target:
    from isa_models.cortex_m.cores import get_core_model
    from isa_models.cortex_m.systems import get_system
    from isa_models.errors import IsaModelError

    try:
        preset = get_system(system) if system else None
        if preset is not None and cpu is not None and get_core_model(cpu).name != preset.core:
            raise EstimateError(f"--system {system} has a {preset.core}, not the --cpu {cpu}")
        exported = exported_tier(method)
        name = cpu or (preset.core if preset else None) or DEFAULT_CPU[isa or exported or "mve"]
        core = get_core_model(name)
    except IsaModelError as exc:
        raise EstimateError(str(exc)) from None
    tier = isa or core.tier
    if tier != core.tier:
        raise EstimateError(
            f"--isa {tier} on {core.name}: the calibrations cover each core's own tier ({core.name}: "
            f"{core.tier}); use --cpu {DEFAULT_CPU[tier]} for {tier}"
        )
    if preset is None:
        preset = get_system(f"ideal-{core.name.removeprefix('cortex-')}")
    if clock_mhz is not None:
        if not clock_mhz > 0:
            raise EstimateError(f"--clock-mhz must be positive, got {clock_mhz}")
        clock, note = float(clock_mhz), "--clock-mhz"
    else:
        clock, note = float(preset.clock_mhz), f"system {preset.name}"
    return Target(core.name, tier, preset, clock, note, exported)


class Row(NamedTuple):
    """One line of the estimate table: a KernelCall, the runtime's dispatch or an application step."""

    index: int | None  # the KernelCall's instruction, None for runtime / application rows
    name: str
    variant: str
    cost: Cost
    note: str = ""
    #: "" (the shape decides the work), "data" (data-dependent work priced on the run's values) or
    #: "shape" (data-dependent work priced at its shape-only bound: no values given).
    basis: str = ""

    @property
    def estimated(self) -> bool:
        return self.cost.estimated


class Estimate:
    """A method's estimate on one target: its rows, their total and the dispatch cost (filled by
    :func:`estimate_method`; a plain class, not a dataclass: it is built once per estimate and a
    dataclass costs ~1 ms to create at import)."""

    def __init__(self, target: Target, library: str, profile: str = "") -> None:
        self.target = target
        self.library = library
        self.profile = profile  # how the priced CMSIS-NN was built (the calibration's build profile)
        self.rows: list[Row] = []
        self.dispatch = Cost()
        self.calls = 0
        self.calibrations: CalibrationSet | None = None  # what the rows were priced with
        self.counts: Mapping[int, Mapping[str, int]] | None = None  # the run's counts, if priced on them

    def __repr__(self) -> str:
        return f"Estimate({self.target!r}, {self.library!r}, rows={len(self.rows)}, calls={self.calls})"

    @property
    def total(self) -> Cost:
        return sum((r.cost for r in self.rows), Cost())

    @property
    def cycles_total(self) -> int:
        return round(self.total.cycles)

    @property
    def complete(self) -> bool:
        return all(r.estimated for r in self.rows)

    @property
    def latency_ms(self) -> float:
        return self.cycles_total / (self.target.clock_mhz * 1e3)

    @property
    def basis(self) -> str:
        """``shape only`` when a data-dependent row was priced without values (its bound),
        ``run inputs`` when every data-dependent row was priced on the run's values, ``shape``
        when no row's work depends on the values (the shape decides it all)."""
        kinds = {r.basis for r in self.rows}
        if "shape" in kinds:
            return BASIS_SHAPE_ONLY
        return BASIS_DATA if "data" in kinds else BASIS_SHAPE


def _variant(works, tier: str) -> str:
    from isa_models.cortex_m.formulas import route
    from isa_models.cortex_m.program import CopyWork, FloatWork, KernelWork

    names = []
    for w in works:
        if isinstance(w, KernelWork):
            names.append(route(w.function, w.params, tier))
        elif isinstance(w, CopyWork):
            names.append("copy")
        elif isinstance(w, FloatWork):
            names.append("fp32")
    return ", ".join(dict.fromkeys(names)) or "-"


def _io_rows(program: Program, method: Method, target: Target, calibrations: CalibrationSet) -> list[Row]:
    from isa_models.cortex_m.program import FloatWork, cost_of
    from refsim.runtime.describe import io_quantization
    from refsim.runtime.tensor import TensorRef

    rows: list[Row] = []
    if program.runtime == "tflm":
        # a .tflite's quantization of its int8 inputs/outputs is the application's own code, not
        # TFLM's (no float crosses MicroInterpreter's I/O); ExecuTorch's QuantizeInputs/Outputs
        # put it in the exported program, priced below
        return rows
    for kind, slots in (("input", method.inputs), ("output", method.outputs)):
        for k, slot in enumerate(slots):
            if not isinstance(slot, TensorRef) or io_quantization(program, method.name, kind, k) is None:
                continue
            n = int(slot.meta.numel)
            step = "quantize" if kind == "input" else "dequantize"
            work = [FloatWork(muls=n, adds=2 * n, elements=n, portable=False)]
            cost = cost_of(work, target.cpu, system=target.system, calibrations=calibrations)
            rows.append(Row(None, f"{kind}{k} {step} (application)", "fp32", cost))
    return rows


def estimate_method(
    program: Program,
    method: Method,
    *,
    isa: str | None = None,
    cpu: str | None = None,
    system: str | None = None,
    clock_mhz: float | None = None,
    library: str | None = None,
    foreign_exports: bool = False,
    counts: Mapping[int, Mapping[str, int]] | None = None,
) -> Estimate:
    """Estimate ``method`` (see the module docstring). ``foreign_exports``: cost an op exported
    for another tier (an MVE linear on a DSP core) as the same CMSIS-NN call on this tier
    instead of refusing it; for benchmarks only, the device could not run that file.
    ``counts``: per instruction, the data-dependent counts a run saw
    (``refsim.ops.data_work.CountingTrace.counts``); None: a shape-only estimate."""
    from isa_models.cortex_m.calibration import CalibrationError, CalibrationSet
    from refsim.ops.cost import FOREIGN_EXPORTS

    target = resolve_target(method, isa=isa, cpu=cpu, system=system, clock_mhz=clock_mhz)
    tflm = program.runtime == "tflm"
    fallback_note = ""
    if tflm and library is None:  # the CMSIS-NN TFLM links: its own build (refsim calibrate --profile tflm)
        library, fallback_note = _tflm_library(target.cpu)
    try:  # loaded once: every call below is priced against this set (and its fallbacks, once each)
        calibrations = CalibrationSet(target.cpu, library)
    except CalibrationError as exc:
        raise EstimateError(str(exc)) from None
    est = Estimate(target, calibrations.chosen.library, _profile(calibrations.chosen) + fallback_note)
    est.calibrations = calibrations
    est.counts = counts
    token = FOREIGN_EXPORTS.set(foreign_exports)
    try:
        if tflm:
            _estimate_tflm_ops(est, program, method, target, calibrations, counts)
        else:
            _estimate_calls(est, method, target, calibrations, counts=counts)
    finally:
        FOREIGN_EXPORTS.reset(token)
    est.rows.extend(_io_rows(program, method, target, calibrations))
    if est.calls and tflm:
        from isa_models.cortex_m.program import NO_ESTIMATE
        from isa_models.cortex_m.tflm_dispatch import loop_cost, measured_cores

        loop = loop_cost(target.cpu, est.calls)
        name = f"runtime dispatch ({est.calls} ops)"
        if loop is None:
            reason = (
                f"TFLM's Invoke loop is measured on {', '.join(measured_cores()) or 'no core'}, "
                f"not {target.cpu} (python -m refsim.lab.tflm.dispatch)"
            )
            est.rows.append(Row(None, name, "MicroInterpreter::Invoke", NO_ESTIMATE, reason))
        else:
            est.dispatch = loop
            est.rows.append(Row(None, name, "MicroInterpreter::Invoke", loop))
    elif est.calls:
        est.rows.append(
            Row(None, f"runtime dispatch ({est.calls} KernelCalls)", "Method::execute", est.dispatch)
        )
    return est


#: Calibration library of the CMSIS-NN each runtime links (refsim calibrate --profile).
TFLM_LIBRARY = "cmsis-nn-tflm"


def _tflm_library(core: str) -> tuple[str | None, str]:
    """TFLM's CMSIS-NN build for ``core``, or the default (with a note) when it is not calibrated there."""
    from isa_models.cortex_m.calibration import path_for

    if path_for(TFLM_LIBRARY, core).is_file():
        return TFLM_LIBRARY, ""
    return None, f"; no {TFLM_LIBRARY} calibration for {core}: CMSIS-NN's own -Ofast build priced instead"


def _profile(calibration) -> str:
    """How the calibrated CMSIS-NN was built, for the report."""
    prov = calibration.provenance
    if prov.get("build_profile") == "tflm":
        return "TFLM's Makefile build of CMSIS-NN (-O2, TFLM's flags)"
    if calibration.library == "cmsis-nn":
        return "CMSIS-NN's own CMake build (-Ofast), as ExecuTorch links it"
    return f"{calibration.library} as calibrated ({prov.get('flags', 'flags not recorded')})"


def _estimate_tflm_ops(
    est: Estimate,
    program: Program,
    method: Method,
    target: Target,
    calibrations: CalibrationSet,
    counts: Mapping[int, Mapping[str, int]] | None = None,
) -> None:
    """A .tflite's rows, one per TFLM operator: its CMSIS-NN calls priced with the calibration,
    plus its TFLM kernel's own work (isa_models.cortex_m.tflm_dispatch), measured as the op's
    Invoke window minus its CMSIS-NN calls; so any other work item of the op (RESHAPE's copy) is
    that measured kernel work, not a model of ExecuTorch's. An op whose kernel was not measured
    keeps its priced calls and is marked no estimate (a lower bound), never a silent 0."""
    from isa_models.cortex_m.program import NO_ESTIMATE
    from isa_models.cortex_m.tflm_dispatch import kernel_cost

    origins = program.file.origins
    graph = program.file.file.model.subgraphs[program.file.subgraph]
    rows: dict[int, Row] = {}
    for call in method.calls:
        if call is None:
            continue
        origin = origins[call.instruction]
        one = Estimate(est.target, est.library)
        _estimate_calls(one, _OneCall(call), target, calibrations, kernel_only=True, counts=counts)
        row = one.rows[0]
        if origin.index not in rows:
            tensor = graph.tensors[graph.operators[origin.index].outputs[0]]
            itemsize = {"int8": 1, "uint8": 1, "int16": 2, "float32": 4, "int32": 4}.get(
                tensor.type.numpy_dtype or "", 1
            )
            nbytes = itemsize * math.prod(tensor.shape)
            kernel = kernel_cost(target.cpu, origin.name, nbytes)
            note = row.note
            if kernel is None:
                kernel = NO_ESTIMATE
                note = "; ".join(
                    x for x in (note, f"TFLM's {origin.name} kernel not measured on {target.cpu}") if x
                )
            rows[origin.index] = Row(call.instruction, f"{origin.name} ({_short_op(call.op.name)})", row.variant,
                                     row.cost + kernel, note, row.basis)  # fmt: skip
            est.calls += 1
        else:
            first = rows[origin.index]
            basis = "shape" if "shape" in (first.basis, row.basis) else (first.basis or row.basis)
            rows[origin.index] = first._replace(cost=first.cost + row.cost, basis=basis)
    est.rows.extend(rows.values())


def _short_op(name: str) -> str:
    return name.removesuffix(".out").split("::")[-1]


class _OneCall:
    """A method view holding one call (to price it alone)."""

    def __init__(self, call) -> None:
        self.calls = [call]


def _with_counts(works: list, tier: str, found: Mapping[str, int] | None) -> tuple[list, str, str]:
    """``works`` with the run's data-dependent counts in the params of the calls whose formula
    takes them; the row's basis ("", "data", "shape") and what to say about it."""
    from isa_models.cortex_m.formulas import data_params
    from isa_models.cortex_m.program import KernelWork

    basis, notes, out = "", [], []
    for w in works:
        keys = data_params(w.function, w.params, tier) if isinstance(w, KernelWork) else ()
        if not keys:
            out.append(w)
            continue
        given = {k: int(found[k]) for k in keys if found is not None and k in found}
        if len(given) == len(keys):
            out.append(w._replace(params={**w.params, **given}))
            basis = basis if basis == "shape" else "data"
            notes.append("data-dependent, this run: " + ", ".join(f"{k} {v:,}" for k, v in given.items()))
        else:
            out.append(w)
            basis = "shape"
            notes.append("data-dependent, shape-only bound: every " + ", ".join(keys))
    return out, basis, "; ".join(notes)


def _estimate_calls(
    est: Estimate,
    method: Method,
    target: Target,
    calibrations: CalibrationSet,
    *,
    kernel_only: bool = False,
    counts: Mapping[int, Mapping[str, int]] | None = None,
) -> None:
    from isa_models.cortex_m.calibration import CalibrationError
    from isa_models.cortex_m.formulas import CostModelError
    from isa_models.cortex_m.program import KernelWork, cost_of, dispatch_cost, execute_cost
    from isa_models.errors import IsaModelError
    from refsim.ops.cost import cost_hook
    from refsim.ops.registry import OpError

    for call in method.calls:
        if call is None:
            continue
        op = call.op
        try:
            works = cost_hook(op)(call.args, target.isa)
            if kernel_only:  # TFLM: the rest of the op is its measured kernel work
                works = [w for w in works if isinstance(w, KernelWork)]
            works, basis, data_note = _with_counts(
                works, target.isa, None if counts is None else counts.get(call.instruction)
            )
            cost = cost_of(works, target.cpu, system=target.system, calibrations=calibrations)
            variant = _variant(works, target.isa)
            notes = [getattr(w, "reason", "") for w in works if getattr(w, "reason", "")]
            notes += [data_note] if data_note else []
            notes += [
                src.split(" (", 1)[1].rstrip(")") + ": " + src.split("/", 1)[0] + " fit"
                for src in cost.sources
                if " has none" in src
            ]
            note = "; ".join(notes)
        except OpError as exc:
            raise EstimateError(str(exc)) from None
        except (CostModelError, CalibrationError, IsaModelError) as exc:
            raise EstimateError(f"{op.name} (instruction {call.instruction}): {exc}") from None
        est.rows.append(Row(call.instruction, op.name, variant, cost, note, basis))
        lists = [v for v in call.args._values if isinstance(v, tuple)]
        est.dispatch = est.dispatch + dispatch_cost(
            len(call.args._values),
            cortex_m=op.name.startswith("cortex_m::"),
            core=target.cpu,
            lists=len(lists),
            list_elements=sum(len(v) for v in lists),
            op=op.name,
        )
        est.calls += 1
    if est.calls:
        est.dispatch = est.dispatch + execute_cost(target.cpu)


def report_fields(est: Estimate) -> dict:
    """The DESIGN.md report fields the estimate fills."""
    return {
        "cpu": est.target.cpu,
        "isa": est.target.isa,
        "clock_mhz": est.target.clock_mhz,
        "system": getattr(est.target.system, "name", None),
        "library": est.library,
        "cmsis_nn_build": getattr(est, "profile", ""),
        "cycles_total": est.cycles_total,
        "latency_ms": round(est.latency_ms, 6),
        "estimate_complete": est.complete,
        "estimate_basis": getattr(est, "basis", BASIS_SHAPE),
    }


def reprice(est: Estimate, method: Method, counts: Mapping[int, Mapping[str, int]]) -> float:
    """The cycles of ``est`` (made by :func:`estimate_method` for ``method``) with its
    data-dependent rows priced on ``counts`` instead; the other rows as they are. What
    ``refsim eval`` computes per sample: only the rows whose work the values decide change."""
    from isa_models.cortex_m.program import cost_of
    from refsim.ops.cost import cost_hook

    target, calibrations = est.target, est.calibrations
    calls = {c.instruction: c for c in method.calls if c is not None}
    total = est.total.cycles
    for r in est.rows:
        if not r.basis or r.index is None:
            continue
        call = calls[r.index]
        works, _, _ = _with_counts(cost_hook(call.op)(call.args, target.isa), target.isa, counts.get(r.index))
        old, _, _ = _with_counts(
            cost_hook(call.op)(call.args, target.isa), target.isa, (est.counts or {}).get(r.index)
        )
        total += cost_of(works, target.cpu, system=target.system, calibrations=calibrations).cycles
        total -= cost_of(old, target.cpu, system=target.system, calibrations=calibrations).cycles
    return total


def op_cycles(est: Estimate) -> dict[int, Row]:
    return {r.index: r for r in est.rows if r.index is not None}


__all__ = [
    "BASIS_DATA",
    "BASIS_SHAPE",
    "BASIS_SHAPE_ONLY",
    "Estimate",
    "EstimateError",
    "Row",
    "Target",
    "estimate_method",
    "exported_tier",
    "reprice",
    "resolve_target",
]

"""``refsim conformance --vectors DIR --cpu X --estimate [--json FILE]``: the cost model on a
user's vectors, beside instruction-timed measurements of the same cases when QEMU is available.

JSON (``--json``): ``{"format": "refsim-estimates", "version": 1, "core", "library", "system",
"records": [{"case": "<function>/<id>", "function", "variant", "macs", "instructions", "cycles",
"measured_instructions", "measured_cycles", "cycles_error", "instructions_error", "data"}]}``; the
measured fields are null when QEMU did not run (toolchain missing, or a function the harness lacks).
A function whose work depends on the values (softmax's exponentials, refsim.ops.data_work) is priced
on the case's own arrays, as the golden kernel counts them; ``data`` holds those counts (null for
the others).
"""

from __future__ import annotations

import json
from pathlib import Path

from rich import box
from rich.table import Table

from refsim.cli import console
from refsim.errors import RefsimError, VectorError

ESTIMATES_FORMAT = "refsim-estimates"


def _measure(cases, cpu: str, kernels_dir: Path | None, system: str | None) -> dict[str, tuple[int, int]]:
    """Instruction-timed (instructions, cycles) per case label, or {} without a toolchain."""
    from refsim.qemu import batch, missing_toolchain

    if missing_toolchain() is not None:
        return {}
    from isa_models.cortex_m.cores import get_core_model
    from refsim.qemu import timing_cli

    model = get_core_model(cpu)
    target = timing_cli.model_target(None, model.name, kernels_dir)
    runnable = frozenset(f for f in batch.FUNCTIONS if target.available is None or f in target.available)
    chosen = [c for c in cases if c.function in runnable]
    if not chosen:
        return {}
    labelled, _header = timing_cli.count_cycles(
        target, chosen, cpu=model.name, system=system, runnable=runnable
    )
    return {label: (t.instructions, t.cycles) for label, t in labelled}


def case_params(case) -> dict[str, int | float]:
    """The scalar params of a vector as the formulas read them (list params by index)."""
    params = {k: v for k, v in case.params.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    if case.params.get("bias_is_null") is True:  # a NULL bias changes what some kernels run
        params["bias_is_null"] = 1
    if "permutations" in case.params:
        params.update({f"permutations[{k}]": int(p) for k, p in enumerate(case.params["permutations"])})
    if case.function == "arm_relu6_s8" or case.function == "refsim_lut_s8":
        params.setdefault("size", int(case.arrays["input"].size))
    return params


def estimate_records(
    cases, cpu: str, *, library: str | None, measured: dict[str, tuple[int, int]]
) -> tuple[list[dict], str]:
    """Per case: the estimate from ``library``'s calibration (None: the core's default) beside
    ``measured`` (label → (instructions, cycles)), and the calibration's library."""
    from isa_models.cortex_m.calibration import CalibrationError, CalibrationSet
    from isa_models.cortex_m.cores import get_core_model
    from isa_models.cortex_m.formulas import CostModelError, estimate_call, route
    from isa_models.errors import IsaModelError
    from refsim.ops.data_work import call_counts

    try:
        model = get_core_model(cpu)
        calibrations = CalibrationSet(model.name, library)  # loaded once, for every case
    except (IsaModelError, CalibrationError) as exc:
        raise RefsimError(str(exc)) from None
    records = []
    for case in cases:
        params = case_params(case)
        try:
            counts = call_counts(case.function, case.params, case.arrays)
        except (KeyError, ValueError) as exc:
            raise VectorError(f"{case.label}: {exc}") from None
        params.update(counts)
        try:
            cost = estimate_call(case.function, params, model.name, calibrations=calibrations)
            variant = route(case.function, params, model.tier)
        except (CostModelError, CalibrationError, KeyError) as exc:
            records.append({"case": case.label, "function": case.function, "variant": None, "macs": None,
                            "instructions": None, "cycles": None, "note": f"no estimate: {exc}"})  # fmt: skip
            continue
        mi, mc = measured.get(case.label, (None, None))
        records.append(
            {
                "case": case.label, "function": case.function, "variant": variant, "macs": cost.macs,
                "instructions": round(cost.instructions), "cycles": round(cost.cycles),
                "measured_instructions": mi, "measured_cycles": mc,
                "cycles_error": round(cost.cycles / mc - 1, 5) if mc else None,
                "instructions_error": round(cost.instructions / mi - 1, 5) if mi else None,
                "data": counts or None,
            }
        )  # fmt: skip
    return records, calibrations.chosen.library


def estimate_vectors(
    vectors: Path, cpu: str, kernel: list[str] | None, json_path: Path | None, *, kernels_dir: Path | None,
    system: str | None,
) -> None:  # fmt: skip
    from isa_models.cortex_m.cores import get_core_model
    from isa_models.errors import IsaModelError
    from refsim.conformance import vectors as vec

    try:
        model = get_core_model(cpu)
    except IsaModelError as exc:
        raise RefsimError(str(exc)) from None
    chosen = set(vec.resolve_functions(kernel))
    cases = [c for c in vec.iter_directory(vectors) if c.function in chosen]
    if not cases:
        raise VectorError(f"{vectors}: no vector of the chosen functions")
    measured = _measure(cases, model.name, kernels_dir, system)
    library = "cmsis-nn" if kernels_dir is not None else None  # a --kernels-dir is a CMSIS-NN build
    records, library = estimate_records(cases, model.name, library=library, measured=measured)
    table = Table("case", "variant", "MACs", "instr (model)", "cycles (model)", "cycles (timed)", "error",
                  box=box.SIMPLE_HEAD, title=f"{model.name}, {library} calibration")  # fmt: skip
    for r in records:
        table.add_row(
            r["case"], r["variant"] or "-", f"{r['macs']:,}" if r["macs"] else "-",
            f"{r['instructions']:,}" if r["instructions"] is not None else "no estimate",
            f"{r['cycles']:,}" if r["cycles"] is not None else "-",
            f"{r['measured_cycles']:,}" if r.get("measured_cycles") else "-",
            f"{100 * r['cycles_error']:+.1f}%" if r.get("cycles_error") is not None else "-",
        )  # fmt: skip
    console.print(table)
    errors = [abs(r["cycles_error"]) for r in records if r.get("cycles_error") is not None]
    summary = f"{len(records)} cases estimated on {model.name}"
    if errors:
        summary += f"; vs instruction-timed cycles: mean |error| {100 * sum(errors) / len(errors):.1f}%, max {100 * max(errors):.1f}%"
    console.print(summary, highlight=False)
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        document = {"format": ESTIMATES_FORMAT, "version": 1, "core": model.name, "library": library,
                    "system": system, "records": records}  # fmt: skip
        json_path.write_text(json.dumps(document, indent=1) + "\n")

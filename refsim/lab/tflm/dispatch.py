"""TFLM's own work per Invoke, per operator and per kernel, split off the CMSIS-NN calls: the data
behind ``isa_models/cortex_m/tflm_dispatch.json``.

    python -m refsim.lab.tflm.dispatch --write        # needs CMSIS_NN_DIR (CMSIS-NN at TFLM's pin)

Input: the per-op Invoke windows the TFLM lab measured on the real TFLM + CMSIS-NN under QEMU
(refsim/memory/tflm_measured.json ``invoke``, refsim/lab/tflm/measure.py ``--invoke``): per model
and core, Invoke's entry up to op 0, each op's invoke, and TFLM's loop after each op.

Each op's window holds TFLM's kernel code (the cmsis_nn/ kernel's Eval: reading the node, filling
CMSIS-NN's structs, the scratch buffer; or a whole reference kernel such as RESHAPE's copy) and
the CMSIS-NN call(s) it makes. The calls are measured here on their own: every CMSIS-NN call refsim
lowers the op to (its cost hook's KernelWork, the same function and shape), in refsim's harness
linked with CMSIS-NN at TFLM's pin built with TFLM's flags (``refsim calibrate --profile tflm``'s
build, refsim.lab.tflm.build.cmsis_nn_profile), timed by refsim.qemu.timing on the core's ideal
system like the windows. The data-dependent calls (arm_elementwise_add_s8, arm_softmax_s8) get the
operator's own quantization parameters and the very input bytes the op reads on the lab's input
(refsim's bit-exact execution of the model on measure.model_input); the others, random data
(their counts do not depend on it). The kernel's own work is the window minus the calls.

Output (:func:`build_document`), per core:

- ``invoke``: MicroInterpreter::Invoke's entry (up to op 0) plus its exit (the loop's last step,
  after the last op), once per inference;
- ``per_op``: TFLM's loop between two ops (ResetTempAllocations, the next node);
- ``kernels``: per builtin op, its kernel's own work, fitted (isa_models.fit) on the op instances
  not held out: a constant, plus a per-byte term for RESHAPE (TFLM's reference kernel copies the
  tensor when input and output differ). Every fourth instance of an op is held out (the
  calibration files' rule) and the fit's relative error on them is ``error``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from refsim.lab.build import LabError

ROOT = Path(__file__).resolve().parents[3]
MEASURED = ROOT / "refsim" / "memory" / "tflm_measured.json"
OUT = ROOT / "isa_models" / "cortex_m" / "tflm_dispatch.json"
FIXTURES = ROOT / "tests" / "fixtures" / "tflite"
FORMAT = "refsim-tflm-dispatch"
HELD_OUT_EVERY = 4
#: Ops whose kernel's own work grows with the tensor: the per-byte feature.
PER_BYTE = frozenset({"RESHAPE"})


class TflmDispatchError(LabError):
    """The split cannot be made (names the model, core or op)."""


def _kernel_works(method, tier: str) -> list[tuple[int, Any, Any]]:
    """(TFLM op index, KernelCall, work) for every work item of every call, in order."""
    from refsim.ops.cost import cost_hook

    origins = method.program.file.origins
    out = []
    for call in method.calls:
        if call is None:
            continue
        for work in cost_hook(call.op)(call.args, tier):
            out.append((origins[call.instruction].index, call, work))
    return out


def _captured_inputs(method, inputs: Sequence[np.ndarray]) -> dict[int, dict[str, np.ndarray]]:
    """Per instruction, the tensor arguments' bytes (memory order) as the call reads them."""
    from refsim.runtime.tensor import TensorRef

    seen: dict[int, dict[str, np.ndarray]] = {}

    def trace(pc: int, call, phase: str) -> None:
        if phase != "before" or call is None:
            return
        seen[call.instruction] = {
            name: value.storage.copy() for name, value in call.args.items() if isinstance(value, TensorRef)
        }

    method.execute(list(inputs), trace=trace)
    return seen


def _case(work, call, captured: Mapping[str, np.ndarray], seed: int):
    """The harness case of one CMSIS-NN call (module docstring: real data where it matters)."""
    from refsim.commands.calibrate import _shape_seed, make_case
    from refsim.qemu import batch

    rng = np.random.default_rng([seed, _shape_seed(work.function, work.params)])
    case = make_case(work.function, work.params, rng)
    a = call.args
    if work.function == "arm_elementwise_add_s8":
        from refsim.ops.tflm_cmsis_nn import _add_kwargs

        params = {**case.params, **_add_kwargs(a)}
        arrays = {"input_1": captured["input1"].reshape(-1), "input_2": captured["input2"].reshape(-1)}
        return batch.Case(case.function, params, arrays, case.variant)
    if work.function == "arm_softmax_s8":
        params = {**case.params, "mult": int(a.input_multiplier), "shift": int(a.input_shift)}
        params["diff_min"] = int(a.diff_min)
        return batch.Case(case.function, params, {"input": captured["input"].reshape(-1)}, case.variant)
    return case


def split_model(path: Path, core: str, harness, windows: Mapping[str, Any]) -> list[dict]:
    """Per TFLM op of ``path`` on ``core``: its window, its CMSIS-NN calls measured alone, the rest."""
    from isa_models.cortex_m.cores import get_core_model
    from isa_models.cortex_m.program import KernelWork
    from refsim.lab.tflm.measure import model_input
    from refsim.qemu.timing import time_cases
    from refsim.runtime.program import Program

    model = get_core_model(core)
    program = Program.load(path)
    method = program.method(program.method_names[0])
    works = _kernel_works(method, model.tier)
    captured = _captured_inputs(method, [model_input(path)])
    cases, owners = [], []
    for index, call, work in works:
        if isinstance(work, KernelWork):
            cases.append(_case(work, call, captured.get(call.instruction, {}), 0))
            owners.append(index)
    timed = time_cases(core, cases, harness=harness, timeout=900.0) if cases else []
    calls: dict[int, list[int]] = {}
    for index, t in zip(owners, timed, strict=True):
        calls.setdefault(index, [0, 0])
        calls[index][0] += t.instructions
        calls[index][1] += t.cycles
    ops = windows["ops"]
    graph = program.file.file.model.subgraphs[0]
    out = []
    for i, op in enumerate(ops):
        ins, cyc = calls.get(i, (0, 0))
        tensor = graph.tensors[graph.operators[i].outputs[0]]
        nbytes = int(np.prod(tensor.shape)) if len(tensor.shape) else 1
        out.append(
            {
                "model": path.name,
                "index": i,
                "op": op["op"],
                "output_bytes": nbytes,
                "window": {"instructions": op["instructions"], "cycles": op["cycles"]},
                "cmsis_nn": {"instructions": ins, "cycles": cyc},
                "kernel": {"instructions": op["instructions"] - ins, "cycles": op["cycles"] - cyc},
            }
        )
    return out


def _features(op: str, record: Mapping[str, Any]) -> dict[str, float]:
    return {"const": 1.0, **({"bytes": float(record["output_bytes"])} if op in PER_BYTE else {})}


def _fit(names: Sequence[str], rows: Sequence[Mapping[str, float]], ys: Sequence[float]) -> dict[str, float]:
    """A constant: the median (an instance whose standalone call times a little above its window,
    a negative remainder, does not pull it); with more features, ordinary least squares."""
    if list(names) == ["const"]:
        return {"const": float(statistics.median(ys))}
    a = np.array([[r.get(n, 0.0) for n in names] for r in rows], dtype=float)
    solution = np.linalg.lstsq(a, np.array(ys, dtype=float), rcond=None)[0]
    return {n: float(v) for n, v in zip(names, solution, strict=True)}


def _relative(coefficients: Mapping[str, float], rows, ys) -> list[float]:
    out = []
    for r, y in zip(rows, ys, strict=True):
        predicted = sum(coefficients.get(k, 0.0) * v for k, v in r.items())
        out.append((predicted - y) / abs(y) if y else 0.0)
    return out


def fit_kernels(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per builtin op: its kernel's own work fitted on the instances not held out."""
    fit_coefficients, relative_errors = _fit, _relative

    by_op: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        by_op.setdefault(r["op"], []).append(r)
    out = {}
    for op, rs in sorted(by_op.items()):
        held = {i for i in range(HELD_OUT_EVERY - 1, len(rs), HELD_OUT_EVERY)}
        if op in PER_BYTE and len({r["output_bytes"] for j, r in enumerate(rs) if j not in held}) < 2:
            held = set()  # the per-byte term needs two sizes
        train = [r for j, r in enumerate(rs) if j not in held]
        test = [r for j, r in enumerate(rs) if j in held]
        names = sorted(_features(op, rs[0]))
        entry: dict[str, Any] = {"features": names, "coefficients": {}, "error": {}}
        for q in ("instructions", "cycles"):
            ys = [float(r["kernel"][q]) for r in train]
            coefficients = fit_coefficients(names, [_features(op, r) for r in train], ys)
            entry["coefficients"][q] = {k: round(v, 3) for k, v in coefficients.items()}
            errors = relative_errors(
                coefficients, [_features(op, r) for r in test], [float(r["kernel"][q]) for r in test]
            )
            fit_errors = relative_errors(coefficients, [_features(op, r) for r in train], ys)
            entry["error"][q] = {
                "held_out_max_abs": round(max((abs(e) for e in errors), default=0.0), 4),
                "held_out_count": len(errors),
                "fit_max_abs": round(max(abs(e) for e in fit_errors), 4),
            }
        entry["fit"] = [f"{r['model']}#{r['index']}" for r in train]
        entry["held_out"] = [f"{r['model']}#{r['index']}" for r in test]
        out[op] = entry
    return out


def _loop(invoke: Mapping[str, Any]) -> dict[str, Any]:
    """Invoke's once-per-inference work and TFLM's per-op loop, from the windows of every model."""
    between, exits, entries = [], [], []
    for model in invoke.values():
        ops = model["ops"]
        entries.append(model["invoke_entry"])
        exits.append({"instructions": ops[-1]["after_instructions"], "cycles": ops[-1]["after_cycles"]})
        between += [{"instructions": o["after_instructions"], "cycles": o["after_cycles"]} for o in ops[:-1]]
    out: dict[str, Any] = {}
    for name, rows, plus in (("per_op", between, None), ("invoke", entries, exits)):
        entry = {}
        for q in ("instructions", "cycles"):
            values = [r[q] + (plus[k][q] if plus else 0) for k, r in enumerate(rows)]
            entry[q] = float(statistics.median(values))
            entry.setdefault("spread", {})[q] = [min(values), max(values)]
        out[name] = entry
    return out


def build_document(measured: Mapping[str, Any], cores: Sequence[str], cmsis_nn: Path) -> dict[str, Any]:
    from isa_models.cortex_m.cores import get_core_model
    from refsim.commands.calibrate import _qemu_core, build_profile
    from refsim.qemu.library import build_library_harness

    invoke = measured["invoke"]
    document: dict[str, Any] = {"format": FORMAT, "version": 1, "cores": {}}
    for core in cores:
        per_model = {name: data[core] for name, data in invoke.items() if core in data}
        if not per_model:
            raise TflmDispatchError(f"TFLM dispatch: {MEASURED.name} has no invoke windows on {core}")
        harness, _ = build_library_harness(
            _qemu_core(get_core_model(core)), cmsis_nn, profile=build_profile("tflm")
        )
        records = []
        for name, windows in per_model.items():
            records += split_model(FIXTURES / name, core, harness, windows)
        document["cores"][core] = {**_loop(per_model), "kernels": fit_kernels(records), "records": records}
    return document


def provenance(measured: Mapping[str, Any], command: str) -> dict[str, Any]:
    from refsim.qemu.toolchain import find_toolchain

    prov = measured["provenance"]
    return {
        "windows": f"refsim/memory/tflm_measured.json 'invoke' ({prov.get('date')}): {prov.get('invoke')}",
        "tflm": prov["sources"]["tflm"],
        "cmsis_nn": prov["sources"]["cmsis_nn"],
        "tflm_build": prov.get("tflm_build"),
        "calls": "each op's CMSIS-NN calls (refsim's lowering) measured alone in refsim's harness linked with "
        "CMSIS-NN at TFLM's pin built with TFLM's flags (refsim.lab.tflm.build.cmsis_nn_profile: -O2), "
        "refsim.qemu.timing.time_cases on the ideal system; add and softmax with the op's parameters and the "
        "input bytes it reads on the lab's input (refsim's bit-exact run), the rest random data",
        "kernel": "window minus its calls: the TFLM kernel's own code (a reference kernel's whole work)",
        "fit": f"isa_models.fit least squares per op on instances not held out (every {HELD_OUT_EVERY}th held "
        "out); RESHAPE const + bytes (its copy), the rest const",
        "compiler": find_toolchain().gcc_version,
        "date": datetime.date.today().isoformat(),
        "command": command,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m refsim.lab.tflm.dispatch", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--cmsis-nn-dir", default=os.environ.get("CMSIS_NN_DIR"), help="CMSIS-NN at TFLM's pin"
    )
    parser.add_argument("--cores", nargs="*", default=None)
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--write", action="store_true", help="write --out (else print the kernels' fits)")
    args = parser.parse_args(argv)
    if not args.cmsis_nn_dir:
        print("refsim.lab.tflm.dispatch: set CMSIS_NN_DIR or --cmsis-nn-dir", file=sys.stderr)
        return 2
    measured = json.loads(MEASURED.read_text())
    cores = args.cores or sorted({c for data in measured["invoke"].values() for c in data})
    command = "python -m refsim.lab.tflm.dispatch " + " ".join(argv if argv is not None else sys.argv[1:])
    try:
        document = build_document(measured, cores, Path(args.cmsis_nn_dir))
    except LabError as exc:
        print(f"refsim.lab.tflm.dispatch: {exc}", file=sys.stderr)
        return 2
    document["provenance"] = provenance(measured, command)
    for core, data in document["cores"].items():
        for op, entry in data["kernels"].items():
            print(core, op, entry["coefficients"]["cycles"], entry["error"]["cycles"])
    if args.write:
        Path(args.out).write_text(json.dumps(document, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

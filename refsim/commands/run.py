"""``refsim run MODEL``: execute a .pte method, or a .tflite model as TFLM does, bit-exactly and
report what it did.

Inputs come from ``--inputs in.npz`` (keys ``input0``, ``input1``, ... in logical shape) or
are drawn at random from ``--seed``. A float array given for an int8 input is quantized with
the program's ``<method>_input<k>_*`` constants (ExecuTorch's QuantizeInputs) when present,
with ExecuTorch's portable rounding; an int8 array is taken as it is.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import numpy as np

from refsim.cli import DIRECT, command
from refsim.errors import RefsimError

ISAS = ("scalar", "dsp", "mve")


if TYPE_CHECKING:
    import typer  # the annotations below; refsim.cli gives it to typer when the app is built


@command()
def run(
    model: Annotated[Path, typer.Argument(help="An ExecuTorch .pte program or a .tflite model.")],
    inputs: Annotated[Path | None, typer.Option("--inputs", help="npz with input0, input1, ...")] = None,
    outputs: Annotated[Path | None, typer.Option("--outputs", help="Write output0, ... to this npz.")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the run report as JSON.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed for random inputs.")] = 0,
    method_name: Annotated[str, typer.Option("--method", help="Method to run.")] = "forward",
    isa: Annotated[
        str | None,
        typer.Option(
            "--isa", help="Tier for kernel choice: scalar, dsp or mve (default: as exported, else mve)."
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the outputs line.")] = False,
    estimate_cycles: Annotated[
        bool, typer.Option("--estimate-cycles", help="Estimate cycles per op (isa_models cost formulas).")
    ] = False,
    cpu: Annotated[
        str | None, typer.Option("--cpu", help="Core for the estimate (cortex-m0plus ... m85).")
    ] = None,
    system: Annotated[
        str | None, typer.Option("--system", help="System preset for the estimate (clock, memories).")
    ] = None,
    clock_mhz: Annotated[float | None, typer.Option("--clock-mhz", help="Clock for the latency.")] = None,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="With --estimate-cycles: per-op cycle bar chart (PNG).")
    ] = None,
    shape_only: Annotated[
        bool,
        typer.Option(
            "--shape-only",
            help="With --estimate-cycles: price data-dependent calls (softmax) at their shape-only bound, "
            "not on this run's values.",
        ),
    ] = False,
    strict: Annotated[
        bool,
        typer.Option("--strict", help="Refuse (exit 2) a program whose device result departs from its ops."),
    ] = False,
    dump: Annotated[
        Path | None,
        typer.Option(
            "--dump-tensors",
            help="Write every intermediate tensor to this npz, keyed by value index (a .tflite: tensor "
            "index), in memory order.",
        ),
    ] = None,
) -> None:
    """Run MODEL (.pte or .tflite) in its planned arenas with the golden kernels."""
    from refsim.runtime import Program
    from refsim.runtime.describe import constant_bytes, io_quantization, method_ops, scratch_bytes

    if isa is not None and isa not in ISAS:
        raise RefsimError(f"--isa must be one of {', '.join(ISAS)}, got {isa!r}")
    if not estimate_cycles and (cpu or system or clock_mhz is not None or plot or shape_only):
        raise RefsimError("--cpu, --system, --clock-mhz, --plot and --shape-only need --estimate-cycles")
    program = Program.load(model)  # a .tflite is lowered into the same program (refsim/tflite/lower.py)
    method = program.method(method_name)
    estimate = None
    counting = None  # the data-dependent counts of this run's calls, for a Cortex-M estimate
    estimate_ms = estimate_cpu_ms = 0.0
    if estimate_cycles:
        t_est, cpu_est = time.perf_counter(), time.process_time()  # the estimate's imports included
        if cpu and cpu.lower().startswith("ethos-u"):  # the NPU + its host core (isa_models.ethos_u.program)
            from isa_models.ethos_u.program import estimate_method as estimate_ethos_u
            from refsim.ops.cost import cost_hook

            estimate = estimate_ethos_u(
                method, cost_hook, cpu, system=system, clock_mhz=clock_mhz, runtime=program.runtime
            )
            isa = estimate.target.isa
        else:  # priced after the run, on the values its calls saw (refsim.ops.data_work)
            from refsim.ops.data_work import CountingTrace
            from refsim.runtime.estimate import resolve_target

            isa = resolve_target(method, isa=isa, cpu=cpu, system=system, clock_mhz=clock_mhz).isa
            counting = CountingTrace()
        estimate_ms = (time.perf_counter() - t_est) * 1e3
        estimate_cpu_ms = (time.process_time() - cpu_est) * 1e3
    if isa is None:
        from refsim.runtime.tier import exported_tier  # no isa_models: a plain run skips the cost model

        isa = exported_tier(method) or "mve"
    found = method.divergences(isa)
    if strict and found:
        more = f" (and {len(found) - 1} more; see refsim inspect)" if len(found) > 1 else ""
        raise RefsimError(f"--strict: the device departs from the operator: {found[0]}{more}")
    values = _inputs(program, method, inputs, seed)

    timings: dict[int, float] = {}
    started: dict[int, float] = {}

    def trace(pc, call, phase):
        if phase == "before":
            started[pc] = time.perf_counter()
        else:
            timings[pc] = timings.get(pc, 0.0) + time.perf_counter() - started[pc]

    # One untimed run first: numba loads each kernel's cached machine code on its first call,
    # which would otherwise dominate the per-op times. Execution is deterministic, so the counts
    # of data-dependent work the estimate needs are taken on this run.
    method.execute(values, trace=None if shape_only else counting)
    t0 = time.perf_counter()
    results = method.execute(values, trace=trace)
    wall = time.perf_counter() - t0
    if counting is not None:
        from refsim.runtime.estimate import estimate_method

        t_est, cpu_est = time.perf_counter(), time.process_time()
        estimate = estimate_method(
            program, method, isa=isa, cpu=cpu, system=system, clock_mhz=clock_mhz,
            counts=None if shape_only else counting.counts,
        )  # fmt: skip
        estimate_ms += (time.perf_counter() - t_est) * 1e3
        estimate_cpu_ms += (time.process_time() - cpu_est) * 1e3

    ops = method_ops(method, isa)
    by_index = {r.index: r for r in estimate.rows if r.index is not None} if estimate else {}
    for o in ops:
        row = by_index.get(o["index"])
        o["cycles"] = round(row.cost.cycles) if row is not None and row.estimated else None
        if row is not None:
            o["variant"] = row.variant
            o["instructions"] = round(row.cost.instructions) if row.estimated else None
        o["host_us"] = round(timings.get(o["index"], 0.0) * 1e6, 2)
    report = {
        "file": str(model),
        "method": method_name,
        "isa": isa,
        "cpu": None,
        "clock_mhz": None,
        "cycles_total": None,
        "latency_ms": None,
        "host_ms": round(wall * 1e3, 3),
        "ops": ops,
        "memory": {
            "arena_bytes": {str(i): s for i, s in enumerate(method.plan.non_const_buffer_sizes) if i > 0},
            "scratch_bytes": scratch_bytes(method),
            "constant_bytes": constant_bytes(program),
        },
        "outputs": [],
        "divergences": [d.as_dict() for d in found],
    }
    if estimate is not None:
        from refsim.runtime.estimate import report_fields

        report.update(report_fields(estimate))
        report["estimate_ms"] = round(estimate_ms, 3)
        report["estimate_cpu_ms"] = round(estimate_cpu_ms, 3)
        report["estimate_rows"] = [
            {"index": r.index, "name": r.name, "variant": r.variant, "macs": r.cost.macs,
             "cycles": round(r.cost.cycles) if r.estimated else None, "note": r.note,
             "basis": getattr(r, "basis", "") or None}
            for r in estimate.rows
        ]  # fmt: skip
    arrays = {}
    for k, out in enumerate(results):
        arr = np.asarray(out)
        arrays[f"output{k}"] = arr
        entry = {"shape": list(arr.shape), "dtype": str(arr.dtype)}
        q = io_quantization(program, method_name, "output", k)
        if q is not None:
            entry["quantization"] = {"scale": q.scale, "zero_point": q.zero_point}
        report["outputs"].append(entry)
    if outputs is not None:
        _save_npz(outputs, arrays, "--outputs")
    if dump is not None:
        from refsim.runtime.dump import dump_tensors

        _save_npz(dump, dump_tensors(method, values), "--dump-tensors")
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(report, indent=2) + "\n")
    if estimate is not None and plot is not None:
        from refsim.commands.estimate_view import plot_estimate

        plot_estimate(estimate, plot, title=model.name)
    if quiet:
        print(" ".join(f"output{k}{list(a.shape)}" for k, a in enumerate(arrays.values())))
        return
    from rich.table import Table

    from refsim.cli import console

    if estimate is not None:
        from refsim.commands.estimate_view import print_estimate

        print_estimate(console, estimate, report["memory"], estimate_ms)
    else:
        table = Table("#", "operator", f"kernel ({isa})", "MACs", "host µs")
        for o in ops:
            table.add_row(str(o["index"]), o["name"], o["kernel"], f"{o['macs']:,}", f"{o['host_us']:.1f}")
        console.print(table)
    for k, arr in enumerate(arrays.values()):
        flat = arr.reshape(-1)
        q = io_quantization(program, method_name, "output", k)
        line = f"output{k}: {arr.dtype} {list(arr.shape)} {np.array2string(flat[:12], separator=', ')}"
        if q is not None and arr.dtype.kind == "i":
            deq = (flat[:12].astype(np.float64) - q.zero_point) * q.scale
            line += f"  ≈ {np.array2string(deq, precision=4, separator=', ')}"
        console.print(line, highlight=False)
    console.print(
        f"{sum(o['macs'] for o in ops):,} MACs in {wall * 1e3:.2f} ms on the host (warm)", highlight=False
    )


DIRECT["run"] = run  # `refsim run` start-up: plain command lines skip typer's coercion


def _save_npz(path: Path, arrays: dict, option: str) -> None:
    try:
        np.savez(path, **arrays)
    except OSError as exc:
        raise RefsimError(f"{option} {path}: cannot write ({exc.strerror or exc})") from None


def _inputs(program, method, path: Path | None, seed: int) -> list:
    from kernels_py.quantize import quantize_per_tensor
    from refsim.runtime import TensorRef
    from refsim.runtime.describe import io_quantization

    given: dict[str, np.ndarray] = {}
    if path is not None:
        import zipfile

        if not path.exists():
            raise RefsimError(f"{path}: no such file")
        try:
            with np.load(path, allow_pickle=False) as z:
                given = {k: z[k] for k in z.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise RefsimError(f"{path}: not a readable .npz file ({exc})") from None
        # output* arrays may sit beside the inputs (a saved reference run): they are not inputs.
        given = {k: v for k, v in given.items() if not k.startswith("output")}
        unknown = sorted(set(given) - {f"input{k}" for k in range(len(method.inputs))})
        if unknown:
            raise RefsimError(
                f"{path}: unexpected arrays {unknown}; the method takes input0..input{len(method.inputs) - 1}"
            )
    rng = np.random.default_rng(seed)
    values = []
    for k, slot in enumerate(method.inputs):
        if not isinstance(slot, TensorRef):
            values.append(slot)
            continue
        shape, dtype = tuple(slot.sizes), slot.dtype
        arr = given.get(f"input{k}")
        if arr is None:
            if path is not None:
                raise RefsimError(f"{path}: missing input{k} (shape {list(shape)}, {dtype})")
            try:  # drawn directly in the tensor's dtype: no 8x int64 intermediate
                if dtype.kind == "f":
                    arr = rng.standard_normal(shape, dtype=np.float32).astype(dtype, copy=False)
                elif dtype.kind in "iu":
                    info = np.iinfo(dtype)
                    lo, hi = max(info.min, -128), min(info.max, 127)
                    arr = rng.integers(lo, hi, shape, dtype=dtype, endpoint=True)
                elif dtype == np.bool_:
                    arr = rng.integers(0, 2, shape, dtype=np.uint8).astype(bool)
                else:
                    raise RefsimError(f"input{k}: cannot draw random values of dtype {dtype}")
            except MemoryError:
                raise RefsimError(
                    f"input{k}: cannot allocate a random input of shape {list(shape)}"
                ) from None
        if arr.shape != shape:
            raise RefsimError(f"input{k}: expected shape {list(shape)}, got {list(arr.shape)}")
        if arr.dtype != dtype:
            q = io_quantization(program, method.name, "input", k)
            if arr.dtype.kind == "f" and dtype == np.int8 and q is not None:
                arr = quantize_per_tensor(
                    arr.astype(np.float32),
                    q.scale,
                    q.zero_point,
                    -128 if q.quant_min is None else q.quant_min,
                    127 if q.quant_max is None else q.quant_max,
                )
            else:
                raise RefsimError(f"input{k}: expected dtype {dtype}, got {arr.dtype}")
        values.append(arr)
    return values

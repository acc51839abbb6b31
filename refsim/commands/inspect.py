"""``refsim inspect MODEL``: what a .pte program or a .tflite model holds, without running it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from refsim.cli import app, console
from refsim.commands._json import emit_json
from refsim.errors import RefsimError
from refsim.formats import TFLITE, model_format
from refsim.ops.registry import load_all


@app.command()
def inspect(
    model: Annotated[Path, typer.Argument(help="An ExecuTorch .pte program or a TFLite model.")],
    json_path: Annotated[
        Path | None, typer.Option("--json", help="Write the report as JSON to FILE ('-': print it instead).")
    ] = None,
    isa: Annotated[str, typer.Option("--isa", help="Tier whose CMSIS-NN kernel choice to show.")] = "mve",
    memory: Annotated[
        bool, typer.Option("--memory", help="Whole-device RAM and flash on the 32-bit target, line by line.")
    ] = False,
    cpu: Annotated[
        str, typer.Option("--cpu", help="Core for --memory's kernel code (cortex-m55, cortex-m4, ...).")
    ] = "cortex-m55",
    kernels_dir: Annotated[
        Path | None,
        typer.Option("--kernels-dir", help="A kernel library (*.a/*.o) to measure instead of kernels_c."),
    ] = None,
    library: Annotated[
        str,
        typer.Option(
            "--library",
            help="Whose CMSIS-NN code sizes --memory counts for a .pte: cmsis-nn (the real library as "
            "ExecuTorch builds it) or kernels_c.",
        ),
    ] = "cmsis-nn",
    plot_memory: Annotated[
        Path | None, typer.Option("--plot-memory", help="Draw the arena as a timeline into FILE.png.")
    ] = None,
    word_size: Annotated[
        int,
        typer.Option(
            "--word-size", help="A .tflite's TFLM arena for a 32-bit core (default) or the 64-bit host build."
        ),
    ] = 32,
) -> None:
    """Methods, operators, kernel coverage, constants, arenas, memory plan and I/O quantization."""
    from refsim.runtime import Program
    from refsim.runtime.describe import (
        constant_bytes,
        divergences,
        io_quantization,
        method_ops,
        operator_counts,
        scratch_bytes,
        tensor_summary,
    )

    if model_format(model) == TFLITE:
        from refsim.commands.inspect_tflite import inspect_tflite

        return inspect_tflite(model, json_path, memory, plot_memory, cpu=cpu, word_size=word_size)
    program = Program.load(model)
    report: dict = {"file": str(model), "constant_bytes": constant_bytes(program), "methods": []}
    for plan in program.file.program.execution_plan:
        entry: dict = {"name": plan.name, "instructions": sum(len(c.instructions) for c in plan.chains)}
        if entry["instructions"] == 0 and len(plan.outputs) == 1:
            v = plan.values[plan.outputs[0]]
            entry["constant"] = getattr(v, "value", None)
            report["methods"].append(entry)
            continue
        entry["operators"] = dict(operator_counts(plan))
        try:
            method = program.method(plan.name)
        except RefsimError as exc:  # still describe what the file holds
            entry["error"] = str(exc)
            entry["unsupported"] = sorted(n for n in entry["operators"] if n not in load_all())
            report["methods"].append(entry)
            continue
        ops = method_ops(method, isa)
        cmsis = sum(1 for o in ops if not o["portable"])
        entry.update(
            ops=ops,
            cmsis_nn_ops=cmsis,
            portable_ops=len(ops) - cmsis,
            macs=sum(o["macs"] for o in ops),
            arena_bytes={str(i): size for i, size in enumerate(plan.non_const_buffer_sizes) if i > 0},
            scratch_bytes=scratch_bytes(method),
            divergences=divergences(method, isa),
            memory_plan=[
                {
                    "value": p.value,
                    "mem_id": p.memory_id,
                    "offset": p.start,
                    "bytes": p.end - p.start,
                    "live": [p.first_use, p.last_use],
                    "alias_of": p.alias_of,
                }
                for p in method.placements
            ],
            inputs=[
                {**tensor_summary(t), "quantization": _quant(io_quantization(program, plan.name, "input", k))}
                for k, t in enumerate(method.inputs)
            ],
            outputs=[
                {
                    **tensor_summary(t),
                    "quantization": _quant(io_quantization(program, plan.name, "output", k)),
                }
                for k, t in enumerate(method.outputs)
            ],
        )
        report["methods"].append(entry)
    if memory or plot_memory is not None:
        from refsim.memory.face import add_memory, plot_methods

        if memory:
            add_memory(report, program, model, cpu, kernels_dir, library)
        if plot_memory is not None:
            report["memory_plots"] = [str(p) for p in plot_methods(report, program, plot_memory)]
    if emit_json(report, json_path):
        return
    _print(report, isa)
    if memory:
        from refsim.memory.face import print_memory

        print_memory(report, console)
    for path in report.get("memory_plots", []):
        console.print(f"memory plot: {path}")


def _quant(q) -> dict | None:
    return (
        None
        if q is None
        else {
            "scale": q.scale,
            "zero_point": q.zero_point,
            "quant_min": q.quant_min,
            "quant_max": q.quant_max,
        }
    )


def _print(report: dict, isa: str) -> None:
    console.print(f"[bold]{report['file']}[/]  constants {report['constant_bytes']:,} B")
    constants = [x for x in report["methods"] if "constant" in x]
    for meth in report["methods"]:
        if "constant" in meth:
            continue
        if "error" in meth:
            console.print(
                f"\nmethod [bold]{meth['name']}[/]: {meth['instructions']} instructions; cannot run: {meth['error']}"
            )
            console.print("operators: " + ", ".join(f"{n} ×{c}" for n, c in meth["operators"].items()))
            continue
        total = meth["cmsis_nn_ops"] + meth["portable_ops"]
        share = 100.0 * meth["cmsis_nn_ops"] / total if total else 0.0
        console.print(
            f"\nmethod [bold]{meth['name']}[/]: {meth['instructions']} instructions, {total} kernel calls, "
            f"{share:.0f}% on CMSIS-NN kernels ({meth['portable_ops']} portable), {meth['macs']:,} MACs; "
            f"arenas {meth['arena_bytes']} B, scratch {meth['scratch_bytes']:,} B"
        )
        table = Table("#", "operator", f"kernel ({isa})", "MACs")
        for o in meth["ops"]:
            table.add_row(str(o["index"]), o["name"], o["kernel"], f"{o['macs']:,}")
        console.print(table)
        io = Table("", "shape", "dtype", "dim_order", "quantization", "memory")
        for kind in ("inputs", "outputs"):
            for k, t in enumerate(meth[kind]):
                q = t.get("quantization")
                qtext = f"scale {q['scale']:.6g}, zp {q['zero_point']}" if q else "-"
                mem = t.get("memory")
                mtext = f"arena {mem['mem_id']} @{mem['offset']} ({mem['bytes']} B)" if mem else "-"
                io.add_row(
                    f"{kind[:-1]}{k}",
                    str(t.get("shape", "")),
                    t.get("dtype", ""),
                    str(t.get("dim_order", "")),
                    qtext,
                    mtext,
                )
        console.print(io)
        if meth["divergences"]:
            dv = Table(
                "#", "operator", "kind", "arguments", f"why the device ({isa}) departs from the operator"
            )
            for d in meth["divergences"]:
                dv.add_row(str(d["instruction"]), d["op"], d["kind"], ", ".join(d["arguments"]), d["reason"])
            console.print(
                f"[bold]{len(meth['divergences'])} device divergence(s)[/] (refsim run --strict refuses them):"
            )
            console.print(dv)
        else:
            console.print(f"no device divergences on {isa}")
    if constants:
        console.print("constant methods: " + ", ".join(f"{c['name']}={c['constant']}" for c in constants))

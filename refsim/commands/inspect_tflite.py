"""``refsim inspect MODEL.tflite``: what a TFLite model holds and how refsim runs it."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from refsim.cli import console
from refsim.commands._json import emit_json
from refsim.errors import RefsimError, UnsupportedError


def inspect_tflite(
    model: Path,
    json_path: Path | None,
    memory: bool,
    plot_memory: Path | None,
    cpu: str = "cortex-m55",
    word_size: int = 32,
) -> None:
    from refsim.tflite import load_model
    from refsim.tflite.describe import changed_options, describe, execution

    if plot_memory is not None:
        raise UnsupportedError("--plot-memory is not implemented for a .tflite model yet")
    if word_size not in (32, 64):
        raise RefsimError(f"--word-size must be 32 or 64, got {word_size}")
    mf = load_model(model)
    if memory:
        return _memory(mf, str(model), json_path, cpu, word_size)
    report = describe(mf, str(model))
    report["execution"] = execution(mf)
    if emit_json(report, json_path):
        return
    console.print(
        f"[bold]{report['file']}[/]  TFLite schema {report['schema_version']}, "
        f"constants {report['constant_bytes']:,} B"
        + (
            f" ({report['external_buffers']} buffers after the flatbuffer)"
            if report["external_buffers"]
            else ""
        )
        + (f", metadata: {', '.join(report['metadata'])}" if report["metadata"] else "")
    )
    for g, graph in zip(report["subgraphs"], mf.model.subgraphs, strict=True):
        console.print(
            f"\nsubgraph {g['index']} [bold]{g['name'] or '(unnamed)'}[/]: {len(g['ops'])} operators, "
            f"{len(g['tensors'])} tensors; " + ", ".join(f"{n} ×{c}" for n, c in g["operators"].items())
        )
        runs = report["execution"].get("runs", {}) if g["index"] == 0 else {}
        ops = Table("#", "operator", "options", "inputs", "outputs", "runs as (scalar / dsp / mve)")
        for o, op in zip(g["ops"], graph.operators, strict=True):
            shown = changed_options(op)
            text = " ".join(f"{k}={v}" for k, v in shown.items()) if op.builtin_options is not None else ""
            if op.builtin_options is None and op.builtin_options_type:
                text = f"({o['options_type']})"
            ops.add_row(
                str(o["index"]),
                o["name"],
                text,
                str(o["inputs"]),
                str(o["outputs"]),
                _runs(runs.get(o["index"], [])),
            )
        console.print(ops)
        io = Table("", "tensor", "shape", "dtype", "quantization")
        for kind in ("inputs", "outputs"):
            for k, t in enumerate(g[kind]):
                io.add_row(
                    f"{kind[:-1]}{k}", f"{t['index']} {t['name']}", str(t["shape"]), t["dtype"], _quant(t)
                )
        console.print(io)
        tensors = Table("#", "name", "shape", "dtype", "buffer", "bytes", "quantization")
        for t in g["tensors"]:
            tensors.add_row(
                str(t["index"]),
                t["name"],
                str(t["shape"]),
                t["dtype"],
                str(t["buffer"]),
                f"{t['constant_bytes']:,}" if t["constant_bytes"] else "-",
                _quant(t),
            )
        console.print(tensors)
    if "error" in report["execution"]:
        console.print(f"[yellow]refsim cannot run this model:[/] {report['execution']['error']}")


def _runs(calls: list[dict]) -> str:
    """``arm_convolve_s8 / arm_convolve_s8 / arm_convolve_1x1_s8_fast``-style: the kernel per
    tier, once when the tiers agree."""
    parts = []
    for c in calls:
        kernels = list(dict.fromkeys(c["kernel"].values()))
        parts.append(" / ".join(c["kernel"].values()) if len(kernels) > 1 else kernels[0])
    return "; ".join(parts) or "-"


def _memory(mf, path: str, json_path: Path | None, cpu: str, word_size: int) -> None:
    """``--memory``: TFLM's tensor arena for this model (refsim/memory/tflm/)."""
    from refsim.memory.tflm.budget import SAME_BUILD
    from refsim.memory.tflm.predict import predict, setup_for
    from refsim.memory.tflm.report import report_dict, report_lines

    build = SAME_BUILD.get(cpu, cpu) if word_size == 32 else None  # the M85 links the M55's build
    setup = setup_for(build, word_size)
    prediction = predict(mf.model, setup, build)
    report = {"file": path, "tflm": report_dict(prediction)}
    if build != cpu and build is not None:
        report["tflm"]["build"] = build
    flash = _flash_and_ram(report["tflm"], path, build) if word_size == 32 else None
    if emit_json(report, json_path):
        return
    table = Table("TFLM arena", "bytes", "source", title=f"{path}: TFLM tensor arena")
    for what, nbytes, source in report_lines(prediction):
        table.add_row(what, f"{nbytes:,}", source)
    console.print(table)
    console.print(f"struct sizes: {setup.sizes.source}")
    if "build" in report["tflm"]:
        console.print(
            f"{cpu}: TFLM's {report['tflm']['build']} build (the same code; gcc 12.2 has no -mcpu for it)"
        )
    if flash is not None:
        _print_flash_and_ram(report["tflm"], path)


# --- TFLM flash and RAM outside the arena (refsim/memory/tflm_flash.py) ---------------------------


def _flash_and_ram(tflm: dict, path: str, cpu: str) -> dict:
    """Put ``flash`` (``flash_bytes``, lines) and ``runtime_ram`` on the report's ``tflm`` object;
    a core without measured flash data gets ``flash.error`` naming it instead."""
    from refsim.memory.tflm_flash import tflm_flash_report, tflm_runtime_ram

    try:
        tflm["flash"] = tflm_flash_report(path, cpu)
        tflm["flash_bytes"] = tflm["flash"]["flash_bytes"]
        tflm["runtime_ram"] = tflm_runtime_ram(cpu, tflm["flash"]["ops"])
    except UnsupportedError as error:
        tflm["flash"] = {"error": str(error)}
    return tflm["flash"]


def _print_flash_and_ram(tflm: dict, path: str) -> None:
    flash = tflm["flash"]
    if "error" in flash:
        console.print(f"[yellow]TFLM flash: not predicted:[/] {flash['error']}")
        return
    table = Table("TFLM flash", "bytes", "source", title=f"{path}: TFLM flash on {flash['cpu']}")
    for ln in flash["lines"]:
        name = f"  {ln['name']}" if ln["part_of"] else ln["name"]
        table.add_row(name, f"{ln['bytes']:,}", ln["source"], style="dim" if ln["part_of"] else None)
    table.add_row("[bold]flash total[/]", f"[bold]{flash['flash_bytes']:,}[/]", flash["note"])
    console.print(table)
    ram = tflm["runtime_ram"]
    table = Table("TFLM RAM outside the arena", "bytes", "source")
    for ln in ram["lines"]:
        table.add_row(ln["name"], f"{ln['bytes']:,}", ln["source"])
    table.add_row("[bold]total[/]", f"[bold]{ram['ram_bytes']:,}[/]", "beside the tensor arena")
    console.print(table)


def _quant(t: dict) -> str:
    q = t["quantization"]
    if q is None:
        return "-"
    if "quantized_dimension" in q:
        return f"per channel (dim {q['quantized_dimension']}): {len(q['scale'])} scales"
    return f"scale {q['scale'][0]:.6g}, zp {q['zero_point'][0]}"

"""Activation arenas per memory planner on the bundled programs (and the compiler's zoo models).

    python benchmarks/memory_plan.py [--models kws,vww] [--time-limit 2.0]
                                     [--pte extra.pte ...] [--zoo [--refsim PATH]]
                                     [--out benchmarks/results/memory_plan.json]

Per program, from its buffers as refsim's runtime sees them (``compiler.planner.read_program``:
every memory-planned activation and CMSIS-NN scratch buffer, views merged into their base):

- the arena of every planner in ``compiler.planner.ALGORITHMS`` and of our ``best`` (the
  suite), with its planning time;
- the plan the file declares (``non_const_buffer_sizes[1]``), and ExecuTorch 1.5.1's own
  plan of the same model (the bundled export's; for a bundled program the two are one);
- TFLM's figure (REFERENCE.md §6: its greedy planner, activations only — TFLM's reference
  kernels take no scratch), beside our best of the activations alone;
- the live-bytes lower bound of the given order and of the reordered order
  (``compiler.planner.reorder``), for all buffers and for activations alone; the largest
  scratch buffer; the program's constant bytes; op coverage (KernelCalls and MACs in CMSIS-NN
  kernels vs portable ops).

``--pte`` adds any other .pte files. ``--zoo`` is the hook for the compiler's zoo: it runs
``refsim compile zoo:NAME --target cortex-m55`` for each MLPerf Tiny model into a temporary
directory and measures the result the same way (``--refsim`` names an executable whose
environment has torch, e.g. ``.venv-interop/bin/refsim``); while the compiler is not there,
each zoo row records why it is missing. The table prints with rich; the JSON keeps every number.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compiler.planner import (  # noqa: E402
    ALGORITHMS,
    lifetimes,
    lower_bound,
    plan,
    plan_all,
    read_program,
    reorder,
)

MODELS_DIR = ROOT / "examples" / "models"
MODELS = ("kws", "vww", "ic", "ad", "kws_m4")
ZOO = ("kws", "vww", "ic", "ad")
#: REFERENCE.md §6: TFLM's greedy planner on the same networks, activations only (bytes)
TFLM_ACTIVATION_BYTES = {"kws": 16000, "kws_m4": 16000, "vww": 73728, "ic": 49152, "ad": 768}
HEADERS = {"greedy_by_size": "TFLM greedy", "executorch_greedy": "ET greedy", "local_search": "local search"}
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "memory_plan.json"


def measure(path: Path, name: str, time_limit_s: float) -> dict:
    """Every planner's arena and the bounds for one program."""
    model = name.removeprefix("zoo:").removeprefix("zoo_")
    pb = read_program(path)
    io = {"graph_inputs": pb.graph_inputs, "graph_outputs": pb.graph_outputs, "mem_ids": pb.mem_ids}
    activations = [b for b in pb.buffers if b.name not in pb.scratch]
    scratch = [b for b in pb.buffers if b.name in pb.scratch]
    planners = {}
    for algorithm, p in plan_all(pb.buffers, time_limit_s=time_limit_s).items():
        planners[algorithm] = {"arena_bytes": p.arena_bytes, "seconds": round(p.seconds, 4)}
    start = time.perf_counter()
    best = plan(pb.buffers, time_limit_s=time_limit_s)
    best_seconds = time.perf_counter() - start
    best_activations = plan(activations, time_limit_s=time_limit_s)

    start = time.perf_counter()
    order = reorder(pb.steps, pb.sizes, **io)
    reorder_seconds = time.perf_counter() - start
    reordered = lifetimes(order, pb.sizes, **io)
    reordered_activations = [b for b in reordered if b.name not in pb.scratch]
    moved = [s.name for s, t in zip(order, pb.steps, strict=True) if s != t]
    return {
        "name": name,
        "model": model,
        "file": str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path),
        "steps": len(pb.steps),
        "buffers": len(pb.buffers),
        "scratch_buffers": len(scratch),
        "planners": planners,
        "best": {
            "arena_bytes": best.arena_bytes,
            "algorithm": best.algorithm,
            "seconds": round(best_seconds, 4),
        },
        "file_arena_bytes": pb.original_plan().arena_bytes,
        "executorch_arena_bytes": executorch_arena(model),
        "tflm_activation_bytes": TFLM_ACTIVATION_BYTES.get(model),
        "best_activation_bytes": best_activations.arena_bytes,
        "lower_bound": lower_bound(pb.buffers),
        "lower_bound_activations": lower_bound(activations),
        "lower_bound_reordered": lower_bound(reordered),
        "lower_bound_reordered_activations": lower_bound(reordered_activations),
        "reordered_steps_moved": len(moved),
        "reorder_seconds": round(reorder_seconds, 4),
        "largest_scratch_bytes": max((b.size for b in scratch), default=0),
        "constant_bytes": pb.constant_bytes,
        "op_coverage": op_coverage(path),
    }


def op_coverage(path: Path) -> dict:
    """How much of the program runs in CMSIS-NN kernels: KernelCalls and MACs (the tier the file
    was exported for), as `refsim inspect` counts them."""
    from refsim.runtime import Program
    from refsim.runtime.describe import method_ops
    from refsim.runtime.estimate import exported_tier

    method = Program.load(path).method("forward")
    ops = method_ops(method, exported_tier(method) or "mve")
    cmsis = [o for o in ops if not o["portable"]]
    macs = sum(o["macs"] for o in ops)
    return {
        "ops": len(ops),
        "cmsis_nn_ops": len(cmsis),
        "portable_ops": len(ops) - len(cmsis),
        "cmsis_nn_mac_share": round(sum(o["macs"] for o in cmsis) / macs, 4) if macs else None,
    }


def executorch_arena(model: str) -> int | None:
    """ExecuTorch 1.5.1's own arena for this model: the bundled export (examples/models)."""
    summary = json.loads((MODELS_DIR / "models.json").read_text())
    return summary[model]["arena_bytes"][0] if model in summary else None


def compile_zoo(workdir: Path, refsim: str | None) -> list[tuple[str, Path | None, str]]:
    """(name, .pte or None, why not) per zoo model, compiled for cortex-m55 by ``refsim compile``."""
    refsim = refsim or shutil.which("refsim", path=str(Path(sys.executable).parent)) or shutil.which("refsim")
    summary = json.loads((MODELS_DIR / "models.json").read_text())
    out = []
    for name in ZOO:
        target = workdir / f"zoo_{name}.pte"
        shape = ",".join(str(d) for d in summary[name]["input_shape"])
        cmd = [refsim or "refsim", "compile", f"zoo:{name}", "--input-shape", shape, "--target", "cortex-m55"]
        cmd += ["--calibration-random", "16", "-o", str(target)]
        try:
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as exc:
            out.append((f"zoo:{name}", None, str(exc).splitlines()[0]))
            continue
        if run.returncode != 0 or not target.exists():
            text = [line.strip(" │╭╮╰╯─") for line in (run.stderr + run.stdout).splitlines()]
            lines = [line for line in text if any(c.isalnum() for c in line)] or [
                f"exit code {run.returncode}"
            ]
            out.append((f"zoo:{name}", None, lines[-1][:160]))
        else:
            out.append((f"zoo:{name}", target, ""))
    return out


def render(rows: list[dict], missing: list[dict]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Arena bytes per planner (activations + scratch, 16-byte aligned)")
    table.add_column("program")
    for algorithm in ALGORITHMS:
        table.add_column(HEADERS.get(algorithm, algorithm), justify="right")
    for col in (
        "best",
        "file's plan",
        "ExecuTorch 1.5.1",
        "bound",
        "bound reord.",
        "act. best",
        "act. bound",
        "TFLM act.",
        "scratch max",
        "constants",
        "CMSIS-NN ops",
        "best s",
    ):
        table.add_column(col, justify="right")
    for r in rows:
        cells = [r["name"]]
        for algorithm in ALGORITHMS:
            value = r["planners"][algorithm]["arena_bytes"]
            cells.append(f"{value:,}" + ("" if value > r["lower_bound"] else " *"))
        tflm = r["tflm_activation_bytes"]
        cells += [
            f"{r['best']['arena_bytes']:,}",
            f"{r['file_arena_bytes']:,}",
            "-" if r["executorch_arena_bytes"] is None else f"{r['executorch_arena_bytes']:,}",
            f"{r['lower_bound']:,}",
            f"{r['lower_bound_reordered']:,}",
            f"{r['best_activation_bytes']:,}",
            f"{r['lower_bound_activations']:,}",
            "-" if tflm is None else f"{tflm:,}",
            f"{r['largest_scratch_bytes']:,}",
            f"{r['constant_bytes']:,}",
            f"{r['op_coverage']['cmsis_nn_ops']}/{r['op_coverage']['ops']}",
            f"{r['best']['seconds']:.3f}",
        ]
        table.add_row(*cells)
    for m in missing:
        table.add_row(m["name"], *(["-"] * (len(ALGORITHMS) + 12)))
    console = Console()
    console.print(table)
    console.print("* = equals the live-bytes lower bound of the given order")
    for m in missing:
        console.print(f"{m['name']}: not measured ({m['reason']})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS), help="bundled programs (comma-separated)")
    parser.add_argument("--pte", type=Path, nargs="*", default=[], help="other .pte files to measure")
    parser.add_argument("--zoo", action="store_true", help="also compile and measure the zoo models")
    parser.add_argument(
        "--refsim",
        help="the refsim executable for --zoo (one whose environment has torch; default: this venv's)",
    )
    parser.add_argument("--time-limit", type=float, default=2.0, help="seconds per searching planner")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()

    names = [n for n in args.models.split(",") if n]
    unknown = sorted(set(names) - set(MODELS))
    if unknown:
        print(
            f"error: unknown bundled model(s) {', '.join(unknown)}; expected some of {', '.join(MODELS)}",
            file=sys.stderr,
        )
        return 2
    for path in args.pte:
        if not path.is_file():
            print(f"error: {path}: no such file", file=sys.stderr)
            return 2
    rows, missing = [], []
    for name in names:
        rows.append(measure(MODELS_DIR / f"{name}.pte", name, args.time_limit))
    for path in args.pte:
        rows.append(measure(path.resolve(), path.stem, args.time_limit))
    if args.zoo:
        with tempfile.TemporaryDirectory(prefix="memory_plan_") as tmp:
            for name, path, why in compile_zoo(Path(tmp), args.refsim):
                if path is None:
                    missing.append({"name": name, "reason": why})
                else:
                    rows.append(measure(path, name, args.time_limit))
    render(rows, missing)
    report = {
        "machine": {"python": platform.python_version(), "loadavg": [round(x, 2) for x in os.getloadavg()]},
        "time_limit_s": args.time_limit,
        "programs": rows,
        "not_measured": missing,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"saved {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

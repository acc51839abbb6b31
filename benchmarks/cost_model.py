"""Cost-model accuracy and overhead: prints three tables and saves benchmarks/results/cost_model.json.

    .venv/bin/python benchmarks/cost_model.py

(a) Formulas vs instruction-timed cycles on held-out shapes, per function x core, read from the
    shipped calibration files (isa_models/calibration/<library>/<core>.json: the held-out shapes
    were measured by `refsim calibrate` and never used in the fit).
(b) The bundled MLPerf Tiny programs (examples/models/*.pte) estimated on the published boards'
    system presets against the published silicon latencies (REFERENCE.md section 4; TFLM +
    CMSIS-NN). The published numbers are only compared with, never fitted. On a DSP core (M33)
    the M4 export of each model (examples/models/<model>_m4.pte) is what is estimated; an M55
    export's MVE linears would be costed as the same arm_fully_connected_s8 call on the DSP core
    where no M4 export exists.
(c) What --estimate-cycles adds to `refsim run`: the estimate's own time in-process (cold:
    first call, imports and calibration load included; warm: again), and the wall time of
    `refsim run -q` with and without it (median of a few runs).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "examples" / "models"
RESULTS = ROOT / "benchmarks" / "results" / "cost_model.json"

#: Published MLPerf Tiny latencies (TFLM + CMSIS-NN), REFERENCE.md section 4: (board preset, core,
#: clock MHz, model → ms, source).
PUBLISHED = (
    (
        "ek-ra6m4",
        "cortex-m33",
        200.0,
        {"kws": 50.6, "vww": 162.0, "ic": 246.0, "ad": 4.6},
        "MLPerf Tiny (TFLM + CMSIS-NN), Renesas EK-RA6M4; REFERENCE.md section 4",
    ),
    (
        "ek-ra8d1",
        "cortex-m85",
        480.0,
        {"kws": 3.47, "vww": 13.4, "ic": 8.48, "ad": 0.53},
        "MLPerf Tiny (TFLM + CMSIS-NN), Renesas EK-RA8D1; REFERENCE.md section 4",
    ),
)


def held_out_table() -> list[dict]:
    from isa_models import calibration

    rows = []
    for library, cores in calibration.available().items():
        for core in cores:
            doc = json.loads(calibration.path_for(library, core).read_text())
            for key, entry in doc["functions"].items():
                err = entry["error"]
                rows.append(
                    {
                        "library": library,
                        "core": core,
                        "function": key,
                        "held_out": len(entry["held_out"]),
                        "cycles_max_abs": err["cycles"]["max_abs"],
                        "cycles_mean_abs": err["cycles"]["mean_abs"],
                        "instructions_max_abs": err["instructions"]["max_abs"],
                        "cycles_source": doc["provenance"]["cycles_source"],
                    }
                )
    return rows


def published_table() -> list[dict]:
    from refsim.runtime import Program
    from refsim.runtime.estimate import estimate_method

    rows = []
    for system, core, clock, latencies, source in PUBLISHED:
        for model, published_ms in latencies.items():
            dsp = core != "cortex-m85" and core != "cortex-m55"
            name = f"{model}_m4" if dsp and (MODELS / f"{model}_m4.pte").exists() else model
            program = Program.load(MODELS / f"{name}.pte")
            method = program.method("forward")
            est = estimate_method(
                program, method, cpu=core, system=system, clock_mhz=clock, foreign_exports=True
            )
            ms = est.latency_ms
            rows.append(
                {
                    "board": system,
                    "core": core,
                    "clock_mhz": clock,
                    "model": model,
                    "program": f"{name}.pte",
                    "library": est.library,
                    "estimated_cycles": est.cycles_total,
                    "estimated_ms": round(ms, 4),
                    "published_ms": published_ms,
                    "error": round(ms / published_ms - 1, 4),
                    "source": source,
                }
            )
    return rows


def _wall(args: list[str], repeats: int) -> float:
    times = []
    env = {**os.environ}
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(args, check=True, capture_output=True, env=env)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def overhead_table(repeats: int = 3) -> list[dict]:
    code = (
        "import time, json, sys, os;"
        "from refsim.runtime import Program;"
        "p = Program.load(sys.argv[1]); m = p.method('forward');"
        "t = time.perf_counter(); u = time.process_time();"
        "from refsim.runtime.estimate import estimate_method;"
        "estimate_method(p, m); c = time.perf_counter() - t; cu = time.process_time() - u;"
        "t = time.perf_counter(); estimate_method(p, m); w = time.perf_counter() - t;"
        "print(json.dumps([c * 1e3, w * 1e3, cu * 1e3, os.getloadavg()[0]]))"
    )
    refsim = str(Path(sys.executable).with_name("refsim"))
    rows = []
    for model in ("kws", "vww", "ic", "ad"):
        path = str(MODELS / f"{model}.pte")
        out = subprocess.run([sys.executable, "-c", code, path], check=True, capture_output=True, text=True)
        cold, warm, cold_cpu, load = json.loads(out.stdout)
        plain = _wall([refsim, "run", path, "-q"], repeats)
        with_estimate = _wall([refsim, "run", path, "-q", "--estimate-cycles"], repeats)
        rows.append(
            {
                "model": model,
                "estimate_cold_ms": round(cold, 2),
                "estimate_warm_ms": round(warm, 2),
                "estimate_cold_cpu_ms": round(cold_cpu, 2),
                "load_average": round(load, 1),
                "run_wall_s": round(plain, 3),
                "run_estimate_wall_s": round(with_estimate, 3),
                "added_wall_ms": round((with_estimate - plain) * 1e3, 1),
                "pythondontwritebytecode": os.environ.get("PYTHONDONTWRITEBYTECODE", ""),
            }
        )
    return rows


CORE_ORDER = (
    "cortex-m0plus",
    "cortex-m3",
    "cortex-m4",
    "cortex-m7",
    "cortex-m33",
    "cortex-m55",
    "cortex-m85",
)


def markdown(results: dict) -> str:
    """The accuracy tables of docs/cost-model.md from a results document."""
    out = []
    by_lib: dict[str, dict[str, dict[str, float]]] = {}
    for r in results["held_out"]:
        by_lib.setdefault(r["library"], {}).setdefault(r["function"], {})[r["core"]] = r["cycles_max_abs"]
    for library in sorted(by_lib, key=lambda n: n != "cmsis-nn"):
        table = by_lib[library]
        cores = [c for c in CORE_ORDER if any(c in v for v in table.values())]
        pairs = [e for v in table.values() for e in v.values()]
        within = sum(e <= 0.10 for e in pairs)
        out.append(f"(a) {library}: max |relative error| of the cycle formula on held-out shapes "
                   f"({within} of {len(pairs)} function x core pairs within ±10%)\n")  # fmt: skip
        out.append("| function / variant | " + " | ".join(c.removeprefix("cortex-") for c in cores) + " |")
        out.append("|---|" + "---|" * len(cores))
        for key in sorted(table):
            cells = [f"{100 * table[key][c]:.1f}%" if c in table[key] else "–" for c in cores]
            cells = [f"**{v}**" if v != "–" and float(v[:-1]) > 10 else v for v in cells]
            out.append(f"| {key} | " + " | ".join(cells) + " |")
        out.append("")
    out.append(
        "(b) bundled MLPerf Tiny programs vs published silicon (TFLM + CMSIS-NN), error = estimate / published - 1\n"
    )
    out.append(
        "| board | core | MHz | model | program | calibration | estimated ms | published ms | error | source |"
    )
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    for r in results["published"]:
        out.append(f"| {r['board']} | {r['core']} | {r['clock_mhz']:g} | {r['model']} | {r['program']} | {r['library']} | "
                   f"{r['estimated_ms']:.2f} | {r['published_ms']:.2f} | {100 * r['error']:+.1f}% | {r['source']} |")  # fmt: skip
    out.append("")
    out.append(
        "(c) what --estimate-cycles adds (estimate_method in-process; wall = `refsim run -q`, median)\n"
    )
    out.append(
        "| model | estimate, cold (ms wall) | cold (ms CPU) | warm (ms wall) | load average | run -q (s) | run -q --estimate-cycles (s) |"
    )
    out.append("|---|---|---|---|---|---|---|")
    for r in results["overhead"]:
        out.append(f"| {r['model']} | {r['estimate_cold_ms']:.1f} | {r['estimate_cold_cpu_ms']:.1f} | {r['estimate_warm_ms']:.1f} | "
                   f"{r['load_average']:.1f} | {r['run_wall_s']:.2f} | {r['run_estimate_wall_s']:.2f} |")  # fmt: skip
    return "\n".join(out) + "\n"


def main() -> None:
    if "--markdown" in sys.argv:
        print(markdown(json.loads(RESULTS.read_text())))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console(width=160)
    a = held_out_table()
    table = Table(
        "library",
        "core",
        "function / variant",
        "held out",
        "cycles max |err|",
        "mean |err|",
        title="(a) held out",
    )
    for r in a:
        flag = "" if r["cycles_max_abs"] <= 0.10 else " ✗"
        table.add_row(r["library"], r["core"], r["function"], str(r["held_out"]),
                      f"{100 * r['cycles_max_abs']:.1f}%{flag}", f"{100 * r['cycles_mean_abs']:.1f}%")  # fmt: skip
    console.print(table)
    within = sum(r["cycles_max_abs"] <= 0.10 for r in a)
    console.print(f"{within} of {len(a)} function x core pairs within ±10% on every held-out shape")
    b = published_table()
    table = Table(
        "board",
        "core",
        "MHz",
        "model",
        "program",
        "estimated ms",
        "published ms",
        "error",
        title="(b) silicon",
    )
    for r in b:
        table.add_row(r["board"], r["core"], f"{r['clock_mhz']:g}", r["model"], r["program"],
                      f"{r['estimated_ms']:.2f}", f"{r['published_ms']:.2f}", f"{100 * r['error']:+.1f}%")  # fmt: skip
    console.print(table)
    c = overhead_table()
    table = Table("model", "estimate cold ms", "cold CPU ms", "warm ms", "load", "run -q s",
                  "run -q --estimate-cycles s", title="(c) overhead")  # fmt: skip
    for r in c:
        table.add_row(r["model"], f"{r['estimate_cold_ms']:.1f}", f"{r['estimate_cold_cpu_ms']:.1f}",
                      f"{r['estimate_warm_ms']:.1f}", f"{r['load_average']:.1f}", f"{r['run_wall_s']:.2f}",
                      f"{r['run_estimate_wall_s']:.2f}")  # fmt: skip
    console.print(table)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"held_out": a, "published": b, "overhead": c}, indent=1) + "\n")
    console.print(f"saved {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

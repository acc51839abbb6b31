"""How fast refsim runs the bundled MLPerf Tiny programs, beside ExecuTorch's runtime and TFLM.

    python benchmarks/runtime.py [--repeat 200] [--process-runs 5] [--cold-runs 2]
                                 [--models kws,ic] [--no-process] [--no-executorch]
                                 [--out benchmarks/results/runtime.json]

Per bundled model (examples/models/*.pte):

- **per inference**: `Method.execute` on the program's saved int8 input, warm (one call
  first to load or compile the numba code), median and p90 of ``--repeat`` calls. Beside it
  the TFLM Python interpreter's figure from REFERENCE.md §6 (measured by peers on this
  machine kind) and the ratio. Targets: KWS and IC at least 2× faster than TFLM Python.
- **whole process**: ``refsim run MODEL.pte --quiet`` with ``hyperfine`` when installed (else
  timed subprocesses): cold (``NUMBA_CACHE_DIR`` an empty directory before every run, so every
  kernel compiles) and warm (a cache filled by a first run). Wall and CPU (user + system)
  seconds: on a loaded machine the CPU time is the steadier number. Target: under 1.5 s warm.
- **ExecuTorch**: its runtime (``executorch.runtime``, from the interop venv, in a subprocess:
  this script's ``--executorch-worker`` mode) cannot load cortex_m programs ("Missing
  operator"; recorded per model). It runs the same models exported in fp32 (same modules and
  weights, ``examples/models/make_models.py``), on its portable kernels and delegated to
  XNNPACK: timed the same way.

A model whose operators are not all registered in refsim is reported as
``unsupported: <op>`` rather than timed. Results print as a table and are saved as JSON with
the machine's load average: timings on a shared machine are noisy, compare ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MODELS_DIR = ROOT / "examples" / "models"
MODELS = ("kws", "vww", "ic", "ad", "kws_m4")
#: REFERENCE.md §6: TFLM Python interpreter (reference kernels), ms per inference, this machine kind.
TFLM_PYTHON_MS = {"kws": 2.43, "vww": 6.03, "ic": 7.39, "ad": 0.128, "kws_m4": 2.43}
#: Per-inference targets: at least this many times faster than TFLM Python.
SPEEDUP_TARGETS = {"kws": 2.0, "ic": 2.0}
PROCESS_TARGET_S = 1.5
DEFAULT_INTEROP_PYTHON = ROOT / ".venv-interop" / "bin" / "python"
MARKER = "@@refsim-benchmark"


def percentile(samples: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples), q))


def summarize_ms(samples_s: list[float]) -> dict:
    ms = [s * 1e3 for s in samples_s]
    return {
        "median_ms": statistics.median(ms),
        "p90_ms": percentile(ms, 90),
        "min_ms": min(ms),
        "runs": len(ms),
    }


# --- refsim in this process ----------------------------------------------------------------------


def missing_ops(path: Path) -> list[str]:
    """Operators the program calls that refsim's registry does not know."""
    from refsim.ops.registry import load_all
    from refsim.pte import KernelCall, load_program

    plan = load_program(path).program.plan("forward")
    names = {
        plan.operators[ins.op_index].qualified_name
        for chain in plan.chains
        for ins in chain.instructions
        if isinstance(ins, KernelCall)
    }
    return sorted(names - set(load_all()))


def time_refsim(path: Path, repeat: int) -> dict:
    """Load, first call, then ``repeat`` warm calls of Method.execute on the saved input."""
    from refsim.errors import RefsimError
    from refsim.runtime import Program

    missing = missing_ops(path)
    if missing:
        return {"status": f"unsupported: {', '.join(missing)}"}
    with np.load(path.with_suffix(".io.npz")) as io:
        x, expected = io["input0"], io["output0"]
    try:
        t0 = time.perf_counter()
        method = Program.load(path).method("forward")
        t1 = time.perf_counter()
        (first,) = method.execute([x])
        t2 = time.perf_counter()
        samples = []
        for _ in range(repeat):
            start = time.perf_counter()
            (out,) = method.execute([x])
            samples.append(time.perf_counter() - start)
    except RefsimError as exc:
        return {"status": f"error: {exc}"}
    diff = np.abs(out.astype(np.int32) - expected.astype(np.int32))
    return {
        "status": "ok",
        "load_ms": (t1 - t0) * 1e3,
        "first_call_ms": (t2 - t1) * 1e3,
        **summarize_ms(samples),
        "deterministic": bool(np.array_equal(first, out)),
        "max_lsb_vs_executorch_reference": int(diff.max()),
    }


# --- refsim as a process -------------------------------------------------------------------------


def refsim_command(path: Path) -> list[str]:
    exe = Path(sys.executable).parent / "refsim"
    base = [str(exe)] if exe.exists() else [sys.executable, "-m", "refsim.cli"]
    return [*base, "run", str(path), "--quiet"]


def time_process(path: Path, runs: int, cold: bool) -> dict:
    """Whole-process time of ``refsim run PATH --quiet`` with a private numba cache directory."""
    with tempfile.TemporaryDirectory(prefix="refsim-numba-") as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        command = refsim_command(path)
        if shutil.which("hyperfine"):
            return _hyperfine(command, env, cache, runs, cold)
        return _subprocess_timing(command, env, cache, runs, cold)


def _hyperfine(command: list[str], env: dict, cache: str, runs: int, cold: bool) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        args = ["hyperfine", "--style", "none", "-N", "--runs", str(runs), "--export-json", report.name]
        args += ["--prepare", f"rm -rf {shlex.quote(cache)}"] if cold else ["--warmup", "1"]
        args.append(shlex.join(command))
        done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return {"status": f"error: hyperfine: {done.stderr.strip()[-500:]}"}
        result = json.loads(Path(report.name).read_text())["results"][0]
    cpu = result["user"] + result["system"]
    return {
        "status": "ok",
        "tool": "hyperfine",
        "runs": len(result["times"]),
        "median_s": result["median"],
        "mean_s": result["mean"],
        "min_s": result["min"],
        "cpu_s": cpu,  # mean user + system
    }


def _subprocess_timing(command: list[str], env: dict, cache: str, runs: int, cold: bool) -> dict:
    if not cold:
        subprocess.run(command, env=env, capture_output=True, check=False)  # fill the cache
    walls, cpus = [], []
    for _ in range(runs):
        if cold:
            shutil.rmtree(cache, ignore_errors=True)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if done.returncode != 0:
            return {"status": f"error: {done.stderr.strip()[-500:]}"}
    return {
        "status": "ok",
        "tool": "subprocess",
        "runs": runs,
        "median_s": statistics.median(walls),
        "mean_s": statistics.mean(walls),
        "min_s": min(walls),
        "cpu_s": statistics.mean(cpus),
    }


# --- ExecuTorch (interop venv) -------------------------------------------------------------------


def run_executorch(python: Path, models: list[str], repeat: int) -> dict:
    """Run this script's worker mode in the interop venv; attribute its C++ log lines to models."""
    if not python.exists():
        return {name: {"status": f"not measured: {python} not found"} for name in models}
    args = [
        str(python),
        __file__,
        "--executorch-worker",
        "--repeat",
        str(repeat),
        "--models",
        ",".join(models),
    ]
    done = subprocess.run(args, capture_output=True, text=True, check=False, timeout=1800)
    logs: dict[str, list[str]] = {}
    current = None
    for line in done.stderr.splitlines():
        if line.startswith(MARKER):
            current = line.split()[1]
        elif current is not None:
            logs.setdefault(current, []).append(line)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-5:]
        return {name: {"status": "error: worker failed: " + " | ".join(tail)} for name in models}
    results = json.loads(done.stdout.strip().splitlines()[-1])
    for name, entry in results.items():
        missing = [
            line.split("Missing operator:")[1].strip()
            for line in logs.get(name, [])
            if "Missing operator:" in line
        ]
        if missing and entry["int8"]["status"] != "ok":
            ops = sorted({m.split("]")[-1].strip() for m in missing})
            entry["int8"]["status"] = f"cannot load: Missing operator {', '.join(ops)}"
    return results


def executorch_worker(models: list[str], repeat: int) -> None:
    """Worker mode (interop venv): ExecuTorch's runtime on the int8 programs and fp32 exports."""
    sys.path.insert(0, str(MODELS_DIR))
    import make_models
    from executorch.runtime import Runtime

    runtime = Runtime.get()
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="refsim-fp32-") as tmp:
        for name in models:
            print(f"{MARKER} {name}", file=sys.stderr, flush=True)
            entry: dict[str, dict] = {}
            try:
                runtime.load_program(MODELS_DIR / f"{name}.pte").load_method("forward")
                entry["int8"] = {"status": "ok"}
            except Exception as exc:  # the runtime raises RuntimeError; any failure is the finding
                entry["int8"] = {"status": f"cannot load: {exc}"}
            base = name.removesuffix("_m4")
            if base != name:  # fp32 has no target: measured once, under the base model
                results[name] = entry
                continue
            spec = make_models.MODELS[base]
            x = make_models.fp32_input(spec)
            for backend in ("portable", "xnnpack"):
                path = Path(tmp) / f"{name}_{backend}.pte"
                try:
                    path.write_bytes(make_models.export_fp32(spec, backend))
                    method = runtime.load_program(path).load_method("forward")
                    method.execute([x])
                    samples = []
                    for _ in range(repeat):
                        start = time.perf_counter()
                        method.execute([x])
                        samples.append(time.perf_counter() - start)
                    entry[f"fp32_{backend}"] = {"status": "ok", **summarize_ms(samples)}
                except Exception as exc:  # report, do not abort the other models
                    entry[f"fp32_{backend}"] = {"status": f"error: {type(exc).__name__}: {exc}"}
            results[name] = entry
    print(json.dumps(results))


# --- report ---------------------------------------------------------------------------------------


def _fmt_ms(entry: dict | None) -> str:
    if not entry:
        return "-"
    if entry.get("status") != "ok":
        return entry.get("status", "-")
    return f"{entry['median_ms']:.3f} / {entry['p90_ms']:.3f}"


def _fmt_process(entry: dict | None) -> str:
    if not entry:
        return "-"
    if entry.get("status") != "ok":
        return entry["status"]
    return f"{entry['median_s']:.2f} ({entry['cpu_s']:.2f} CPU)"


def _fmt_target(target: dict | None) -> str:
    if not target:
        return "-"
    verdict = {True: "yes", False: "no"}
    return f"{verdict[target['wall_met']]} / {verdict[target['cpu_met']]}"


def _fmt_executorch_int8(entry: dict | None) -> str:
    status = (entry or {}).get("status", "-")
    prefix = "cannot load: Missing operator "
    if status.startswith(prefix):
        return f"no: {len(status[len(prefix) :].split(', '))} ops missing"
    return status


def print_table(report: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title="refsim runtime on the bundled MLPerf Tiny programs (ms: median / p90; s: wall (CPU))",
        caption=(
            f"TFLM Python: REFERENCE.md §6. ExecuTorch fp32 of kws_m4 = kws. "
            f"Load average {report['machine']['loadavg']} on {report['machine']['cpus']} CPUs."
        ),
    )
    for col in (
        "model",
        "MACs",
        "refsim execute ms",
        "TFLM Py ms",
        "× TFLM",
        "target",
        "refsim run warm s",
        f"< {PROCESS_TARGET_S} s wall/CPU",
        "cold s",
        "ExecuTorch int8",
        "ET fp32 portable ms",
        "ET fp32 XNNPACK ms",
    ):
        table.add_column(col, justify="left" if col in ("model", "ExecuTorch int8", "target") else "right")
    for name, m in report["models"].items():
        r = m["refsim"]
        et = m.get("executorch") or {}
        base = (
            et if name == name.removesuffix("_m4") else report["models"].get("kws", {}).get("executorch", {})
        )
        table.add_row(
            name,
            f"{m['macs']:,}" if m.get("macs") else "-",
            _fmt_ms(r),
            f"{m['tflm_python_ms']:.3f}",
            f"{m['speedup_vs_tflm_python']:.2f}" if m.get("speedup_vs_tflm_python") else "-",
            m.get("target", "-"),
            _fmt_process(m.get("process_warm")),
            _fmt_target(m.get("process_target")),
            _fmt_process(m.get("process_cold")),
            _fmt_executorch_int8(et.get("int8")),
            _fmt_ms(base.get("fp32_portable")),
            _fmt_ms(base.get("fp32_xnnpack")),
        )
    Console(width=max(Console().width, 200)).print(table)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200, help="warm calls per model")
    parser.add_argument("--process-runs", type=int, default=5, help="warm `refsim run` processes per model")
    parser.add_argument("--cold-runs", type=int, default=2, help="cold `refsim run` processes per model")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated subset")
    parser.add_argument("--no-process", action="store_true", help="skip the whole-process timings")
    parser.add_argument("--no-executorch", action="store_true", help="skip ExecuTorch's runtime")
    parser.add_argument("--interop-python", type=Path, default=DEFAULT_INTEROP_PYTHON)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "runtime.json")
    parser.add_argument("--executorch-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    models = [m for m in args.models.split(",") if m]
    unknown = sorted(set(models) - set(MODELS))
    if unknown:
        parser.error(f"unknown models {unknown}; choose from {', '.join(MODELS)}")
    if args.executorch_worker:
        executorch_worker(models, args.repeat)
        return 0

    summary_path = MODELS_DIR / "models.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    report: dict = {
        "machine": {
            "python": platform.python_version(),
            "processor": platform.machine(),
            "cpus": os.cpu_count(),
            "loadavg": [round(x, 2) for x in os.getloadavg()],
        },
        "settings": {
            "repeat": args.repeat,
            "process_runs": args.process_runs,
            "cold_runs": args.cold_runs,
            "process_tool": "hyperfine" if shutil.which("hyperfine") else "subprocess",
        },
        "targets": {
            "speedup_vs_tflm_python": SPEEDUP_TARGETS,
            "process_warm_s": PROCESS_TARGET_S,
        },
        "models": {},
    }
    for name in models:
        path = MODELS_DIR / f"{name}.pte"
        entry: dict = {
            "file": str(path.relative_to(ROOT)),
            "macs": summary.get(name, {}).get("macs"),
            "tflm_python_ms": TFLM_PYTHON_MS[name],
        }
        entry["refsim"] = time_refsim(path, args.repeat)
        if entry["refsim"]["status"] == "ok":
            entry["speedup_vs_tflm_python"] = TFLM_PYTHON_MS[name] / entry["refsim"]["median_ms"]
            if name in SPEEDUP_TARGETS:
                limit = TFLM_PYTHON_MS[name] / SPEEDUP_TARGETS[name]
                met = entry["refsim"]["median_ms"] < limit
                entry["target"] = f"< {limit:.3f} ms: {'met' if met else 'MISSED'}"
            if not args.no_process:
                entry["process_warm"] = time_process(path, args.process_runs, cold=False)
                entry["process_cold"] = time_process(path, args.cold_runs, cold=True)
                warm = entry["process_warm"]
                if warm["status"] == "ok":
                    entry["process_target"] = {
                        "limit_s": PROCESS_TARGET_S,
                        "wall_met": warm["median_s"] < PROCESS_TARGET_S,
                        "cpu_met": warm["cpu_s"] < PROCESS_TARGET_S,
                    }
        report["models"][name] = entry
        print(f"{name}: {entry['refsim']['status']}", file=sys.stderr)
    if not args.no_executorch:
        for name, result in run_executorch(args.interop_python, models, args.repeat).items():
            report["models"][name]["executorch"] = result
    report["machine"]["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    print_table(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"saved {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Start-up: the whole ``refsim run examples/models/kws.pte -q`` process, warm.

    python benchmarks/startup.py [--runs 5] [--checkout DIR] [--label NAME] [--no-aot]
                                 [--model examples/models/kws.pte] [--out benchmarks/results/startup.json]

One warm-up run (fills numba's cache, writes bytecode), then ``--runs`` timed runs of the venv's
``refsim`` console script (``python -m refsim.cli`` when there is none) with ``PYTHONPATH`` at the
checkout measured (this one, or ``--checkout DIR``: e.g. an export of the commit before this work)
and bytecode writing on, as a user's install has it. Per run, from ``os.wait4``: wall seconds, CPU
seconds (user + system) and the child's peak RSS. Then one ``-X importtime`` run: the top-10
packages by their modules' own import time, and the top-10 modules by cumulative time; and one
``cProfile`` run: the calls with the most cumulative time.

``--no-aot`` sets ``REFSIM_AOT=0`` (the JIT path: numba's dispatchers and on-disk cache). The
machine is shared: the load average (1 min) is recorded before and after, and the CPU time is the
steadier number. Results print as a table and are saved (appended under ``--label``) as JSON.
Target (issue 16): at most 0.4 s wall, median of 5 after a warm-up.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 0.4


def command(checkout: Path, model: str) -> list[str]:
    exe = Path(sys.executable).parent / "refsim"
    base = [sys.executable, str(exe)] if exe.exists() else [sys.executable, "-m", "refsim.cli"]
    return [*base, "run", str(checkout / model), "-q"]


def environment(checkout: Path, aot: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(checkout)
    if not aot:
        env["REFSIM_AOT"] = "0"
    return env


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> dict[str, float]:
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err[-400:]}")
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_rss_mib": usage.ru_maxrss / 1024}


def importtime(cmd: list[str], env: dict[str, str], cwd: Path) -> dict:
    done = subprocess.run(
        [cmd[0], "-X", "importtime", *cmd[1:]], env=env, cwd=cwd, capture_output=True, text=True, check=True
    )
    packages: Counter[str] = Counter()
    modules = []
    for line in done.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if m:
            self_us, cumulative_us, name = int(m.group(1)), int(m.group(2)), m.group(4)
            packages[name.split(".")[0]] += self_us
            modules.append((name, cumulative_us, len(m.group(3)) // 2))
    top_level = sorted((m for m in modules if m[2] == 0), key=lambda m: -m[1])[:10]
    return {
        "total_self_ms": round(sum(packages.values()) / 1e3, 1),
        "modules": len(modules),
        "top_packages_self_ms": {k: round(v / 1e3, 1) for k, v in packages.most_common(10)},
        "top_imports_cumulative_ms": {name: round(us / 1e3, 1) for name, us, _ in top_level},
    }


def profile(cmd: list[str], env: dict[str, str], cwd: Path, top: int = 12) -> dict:
    """One run under cProfile: the entries with the most cumulative time (the import machinery's own
    frames left out, so the modules and calls that cost show), and the most own time."""
    import pstats
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run.prof"
        subprocess.run([cmd[0], "-m", "cProfile", "-o", str(out), *cmd[1:]], env=env, cwd=cwd, check=True,
                       capture_output=True)  # fmt: skip
        stats = pstats.Stats(str(out)).stats  # type: ignore[attr-defined]

    def name(fn: tuple) -> str:
        file, line, func = fn
        for marker in ("site-packages/", "/lib/python3"):
            if marker in file:
                file = file.split(marker, 1)[1]
        file = file.replace(str(cwd) + "/", "")
        return f"{file}:{line}({func})"

    # the import machinery's frames, the CLI framework's pass-through frames and the script itself
    skip = ("<frozen", "~:0(<built-in method builtins.exec>)", "~:0(<built-in method builtins.__import__>)",
            "typer/", "bin/refsim:", "refsim/cli.py", "importlib/__init__")  # fmt: skip
    rows = [(name(fn), ct, tt) for fn, (_, _, tt, ct, _) in stats.items()]
    rows = [r for r in rows if not any(r[0].startswith(k) or k in r[0] for k in skip)]
    return {
        "cumulative_s": {n: round(ct, 3) for n, ct, _ in sorted(rows, key=lambda r: -r[1])[:top]},
        "own_s": {n: round(tt, 3) for n, _, tt in sorted(rows, key=lambda r: -r[2])[:top]},
    }


def git_commit(checkout: Path) -> str:
    done = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or "not a git checkout"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--checkout", type=Path, default=ROOT)
    parser.add_argument("--label", default=None, help="key of this measurement in the JSON (default: after)")
    parser.add_argument("--model", default="examples/models/kws.pte")
    parser.add_argument("--no-aot", action="store_true", help="REFSIM_AOT=0: the JIT path")
    parser.add_argument("--commit", help="the commit --checkout holds, when it is not a git checkout")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "startup.json")
    args = parser.parse_args()
    checkout = args.checkout.resolve()
    label = args.label or ("jit" if args.no_aot else "after")
    cmd = command(checkout, args.model)
    env = environment(checkout, aot=not args.no_aot)

    load_before = os.getloadavg()[0]
    timed(cmd, env, checkout)  # warm-up
    runs = [timed(cmd, env, checkout) for _ in range(args.runs)]
    imports = importtime(cmd, env, checkout)
    profiled = profile(cmd, env, checkout)
    load_after = os.getloadavg()[0]

    def med(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    result = {
        "command": " ".join(cmd),
        "checkout": str(checkout),
        "commit": args.commit or git_commit(checkout),
        "aot": not args.no_aot,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, shared",
        "load_avg_1min": [round(load_before, 2), round(load_after, 2)],
        "runs": runs,
        "median_wall_s": round(med("wall_s"), 3),
        "min_wall_s": round(min(r["wall_s"] for r in runs), 3),
        "median_cpu_s": round(med("cpu_s"), 3),
        "median_peak_rss_mib": round(med("peak_rss_mib"), 1),
        "target_wall_s": TARGET_S,
        "importtime": imports,
        "cprofile": profiled,
    }
    print(f"{label}: {result['command']}")
    print(f"  load average {load_before:.2f} -> {load_after:.2f}; {args.runs} runs after a warm-up")
    print(f"  {'median wall s':>14} {'min wall s':>11} {'median CPU s':>13} {'peak RSS MiB':>13}")
    print(f"  {result['median_wall_s']:>14.3f} {result['min_wall_s']:>11.3f} {result['median_cpu_s']:>13.3f} "
          f"{result['median_peak_rss_mib']:>13.1f}")  # fmt: skip
    print(
        f"  importtime: {imports['total_self_ms']} ms in {imports['modules']} modules; top packages (self ms):"
    )
    for name, ms in imports["top_packages_self_ms"].items():
        print(f"    {ms:8.1f}  {name}")
    print("  top-level imports (cumulative ms):")
    for name, ms in imports["top_imports_cumulative_ms"].items():
        print(f"    {ms:8.1f}  {name}")

    print("  cProfile, cumulative s (one run, profiler overhead included):")
    for name, sec in profiled["cumulative_s"].items():
        print(f"    {sec:8.3f}  {name}")
    print("  cProfile, own s:")
    for name, sec in profiled["own_s"].items():
        print(f"    {sec:8.3f}  {name}")

    args.out.parent.mkdir(parents=True, exist_ok=True)
    saved = json.loads(args.out.read_text()) if args.out.exists() else {}
    saved[label] = result
    args.out.write_text(json.dumps(saved, indent=1) + "\n")
    print(f"saved {args.out} [{label}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())

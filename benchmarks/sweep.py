"""Wall time of `refsim sweep` over the bundled programs × every core × its presets, locally
(1 and 2 workers) and on a local Ray instance, with an interrupted-and-resumed run and a cached
re-run; every way must write the same bytes.

    python benchmarks/sweep.py [--ways in-process,pool2,ray2] [--out benchmarks/results/sweep.json]
                               [--plot docs/sweep_pareto.png] [--clock-mhz 25,50,...]

Each way is a whole `refsim sweep` process (the time a user waits: start-up, Ray's start for
--ray local, numba loading its cached kernels in each worker, every estimate) with an empty
cache of its own. Then:

- **resume**: a 1-worker sweep stopped by SIGINT (Ctrl-C) and a 2-worker one by SIGKILL (no
  clean-up at all) once a third of their results are in their caches, each then run again: how
  many results came back from the cache, the re-run's time, and whether its file equals the
  uninterrupted one;
- **cached**: the same sweep again on a full cache (nothing computed), and once more with
  ``--plot`` (the Pareto plot's own cost).

Wall and CPU seconds (the child's user + system, Ray's own processes not counted: they are not
children) are printed as a table and saved as JSON with the commit, command and load average.
The machine is shared (2 cores, other jobs): compare ratios, not seconds.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import resource
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = sorted((ROOT / "examples" / "models").glob("*.pte"))
WAYS = {
    "in-process": ["--workers", "1"],
    "pool2": ["--workers", "2"],
    "ray2": ["--ray", "local", "--workers", "2"],
}
BUDGET = ["--budget-ram", "256KiB", "--budget-ms", "50"]


CLOCKS: list[str] = []  # --clock-mhz of the benchmark, passed to every sweep


def sweep_argv(out: Path, cache: Path, extra: list[str], plot: Path | None = None) -> list[str]:
    argv = [sys.executable, "-m", "refsim.cli", "sweep", *map(str, MODELS), "--cpus", "all", "--systems", "all",
            *BUDGET, "--out", str(out), "--cache-dir", str(cache), "-q", *extra]  # fmt: skip
    argv += ["--clock-mhz", ",".join(CLOCKS)] if CLOCKS else []
    return argv + (["--plot", str(plot)] if plot else [])


def timed(argv: list[str]) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{shlex.join(argv)} failed ({proc.returncode}):\n{proc.stderr}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "said": proc.stdout.strip().splitlines()[-1]}


def interrupted(out: Path, cache: Path, tasks: int, sig: signal.Signals, workers: str) -> dict:
    """A sweep stopped by ``sig`` once a third of the results are cached, then run again."""
    argv = sweep_argv(out, cache, ["--workers", workers])
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while proc.poll() is None and len(list(cache.rglob("*.json"))) < tasks // 3:
        time.sleep(0.2)
    proc.send_signal(sig)
    code = proc.wait()
    kept = len(list(cache.rglob("*.json")))
    resumed = timed(argv)
    return {"signal": sig.name, "workers": int(workers), "exit_status_when_interrupted": code,
            "results_kept": kept, **resumed}  # fmt: skip


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ways", default=",".join(WAYS), help=f"comma-separated subset of {', '.join(WAYS)}")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "sweep.json")
    ap.add_argument("--plot", type=Path, default=ROOT / "docs" / "sweep_pareto.png")
    ap.add_argument("--clock-mhz", default="", help="clocks for every sweep (default: each preset's)")
    args = ap.parse_args()
    CLOCKS.extend(c for c in args.clock_mhz.split(",") if c)
    ways = [w for w in args.ways.split(",") if w]
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    report: dict = {
        "provenance": {
            "commit": commit,
            "command": shlex.join([sys.executable, *sys.argv]),
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "loadavg_before": [round(x, 2) for x in os.getloadavg()],
        },
        "models": [p.name for p in MODELS],
        "clock_mhz": CLOCKS or "each preset's",
        "ways": {},
    }
    with tempfile.TemporaryDirectory(prefix="refsim-sweep-bench-") as tmp:
        tmp = Path(tmp)
        files = {}
        for way in ways:
            out = tmp / f"{way}.json"
            result = timed(sweep_argv(out, tmp / f"cache-{way}", WAYS[way]))
            files[way] = out
            report["ways"][way] = {**result, "sha256": digest(out)}
            print(f"{way}: {result['wall_s']} s", flush=True)
        first = files[ways[0]]
        rows = json.loads(first.read_text())["rows"]
        report["combinations"] = len(rows)
        report["cannot_run"] = sum(r["error"] is not None for r in rows)
        report["meet_budget"] = sum(bool(r["meets_budget"]) for r in rows)
        report["identical"] = len({digest(f) for f in files.values()}) == 1
        report["resume"] = []
        for sig, workers in ((signal.SIGINT, "1"), (signal.SIGKILL, "2")):
            name = f"resumed-{sig.name}"
            cut = interrupted(tmp / f"{name}.json", tmp / f"cache-{name}", len(rows), sig, workers)
            cut["identical"] = digest(tmp / f"{name}.json") == digest(first)
            report["resume"].append(cut)
        report["cached_rerun"] = timed(
            sweep_argv(tmp / "cached.json", tmp / f"cache-{ways[0]}", ["--workers", "1"])
        )
        report["cached_rerun"]["identical"] = digest(tmp / "cached.json") == digest(first)
        plot = ["--workers", "1"]  # drawn from the full cache: the plot's own time
        report["plot"] = timed(sweep_argv(tmp / "plotted.json", tmp / f"cache-{ways[0]}", plot, args.plot))
    report["provenance"]["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]

    print(f"\n{len(MODELS)} programs × every core × its presets = {report['combinations']} estimates "
          f"({report['cannot_run']} targets cannot run their program)")  # fmt: skip
    print(f"{'way':<24}{'wall s':>9}{'cpu s':>9}  output")
    for way, r in report["ways"].items():
        print(f"{way:<24}{r['wall_s']:>9.2f}{r['cpu_s']:>9.2f}  {r['sha256']}")
    for c in report["resume"]:
        label = f"resumed ({c['signal']}, {c['workers']}w)"
        print(
            f"{label:<24}{c['wall_s']:>9.2f}{c['cpu_s']:>9.2f}  {c['results_kept']} kept; same: {c['identical']}"
        )
    r = report["cached_rerun"]
    print(f"{'cached re-run':<24}{r['wall_s']:>9.2f}{r['cpu_s']:>9.2f}  same: {r['identical']}")
    p = report["plot"]
    print(f"{'+ --plot':<24}{p['wall_s']:>9.2f}{p['cpu_s']:>9.2f}  (cached estimates, plot drawn)")
    print(f"all ways identical: {report['identical']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"saved {args.out}; plot {args.plot}")
    resumed_ok = all(c["identical"] for c in report["resume"])
    return 0 if report["identical"] and resumed_ok and r["identical"] else 1


if __name__ == "__main__":
    sys.exit(main())

"""refsim beside LiteRT and TFLM, per inference, on the four MLPerf Tiny networks.

    python benchmarks/peers.py [--repeat 300] [--models kws,vww,ic,ad] [--peers-python PY]
                               [--batches 1,16,256] [--out benchmarks/results/peers.json]
    python benchmarks/peers.py --make-venv .venv-peers     # the peers' own venv (pinned)

Columns, each measured in its own subprocess (one runtime, one model per process, so that the
peak RSS is that runtime's, and so that the peers' pins never touch refsim's venv: LiteRT and
TFLM run from ``--peers-python``, a venv made by ``--make-venv``):

- **refsim single**: `Method.execute` on one input, warm, median of ``--repeat`` calls.
- **refsim batch B** (``--batches``): `Method.execute_batch` on B inputs, wall time / B, median
  of repeated calls (both cores when the machine gives them: threads over samples).
- **LiteRT default**: ``ai_edge_litert`` ``Interpreter`` with its default op resolver (XNNPACK
  delegate), ``num_threads=1`` (REFERENCE.md §6 measured it so); **LiteRT ref**: the same with
  ``OpResolverType.BUILTIN_REF`` (TFLite's reference kernels).
- **TFLM**: the ``tflite-micro`` Python interpreter (x86-64 build, reference kernels).

The peers run the MLPerf Tiny reference ``.tflite`` files (tests/fixtures/tflite/); refsim runs
its bundled ``.pte`` programs of the same architectures (examples/models/: same layers and MAC
counts, random weights, ExecuTorch's lowering). Time per inference does not depend on the weight
values. When ``Program.load`` runs a ``.tflite`` (the TFLite front door), ``--refsim-tflite`` times
refsim on the very same files instead.

Ratios are refsim / LiteRT default (smaller is better; the issue's target is ≤ 2 batched) and
refsim single / LiteRT ref (target ≤ 1). Results print as a table and go to JSON with the load
average and versions: on a shared machine the absolute numbers move, the ratios less.

``--rounds N`` measures every model N times, the workers of a round one after another (refsim,
then LiteRT, ...), so that a burst of the neighbours' load lands on both sides of a ratio; each cell
is the median over the rounds, and the batched/LiteRT column adds the range of the per-round ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TFLITE = {
    "kws": "kws_ref_model.tflite",
    "vww": "vww_96_int8.tflite",
    "ic": "pretrainedResnet_quant.tflite",
    "ad": "ad01_int8.tflite",
}
#: What --make-venv installs (the versions measured here).
PEER_PINS = ("ai-edge-litert==2.3.0", "tflite-micro==0.dev20261023182759")
MARK = "@@peers "


# --- workers (one runtime and one model per process) --------------------------------------------------


#: CPU milliseconds (this process, all threads) per inference of the last `_median_ms`, beside the wall
#: time it returns: on a shared machine the wall time moves with the other tenants' load, the CPU
#: time much less.
LAST_CPU_MS: list[float] = [0.0]


def _median_ms(call, repeat: int, per: int = 1) -> float:
    call()
    samples, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        call()
        samples.append((time.perf_counter() - t0) * 1e3 / per)
        cpu.append((time.process_time() - c0) * 1e3 / per)
    LAST_CPU_MS[0] = statistics.median(cpu)
    return statistics.median(samples)


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def worker_refsim(path: str, repeat: int, batches: list[int]) -> dict:
    import numpy as np

    from refsim.runtime import Program

    t0 = time.perf_counter()
    method = Program.load(path).method("forward")
    load_ms = (time.perf_counter() - t0) * 1e3
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (max(batches, default=1), *method.inputs[0].sizes), dtype=np.int8)
    result = {"load_ms": load_ms, "single_ms": _median_ms(lambda: method.execute([x[0]]), repeat)}
    result["single_cpu_ms"] = LAST_CPU_MS[0]
    for b in batches:
        reps = max(3, min(repeat, 2000 // b))
        result[f"batch{b}_ms"] = _median_ms(lambda b=b: method.execute_batch([x[:b]]), reps, per=b)
        result[f"batch{b}_cpu_ms"] = LAST_CPU_MS[0]
    result["peak_rss_mb"] = _peak_rss_mb()
    return result


def worker_litert(path: str, repeat: int, reference: bool) -> dict:
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    kind = OpResolverType.BUILTIN_REF if reference else OpResolverType.AUTO
    it = Interpreter(model_path=path, num_threads=1, experimental_op_resolver_type=kind)
    it.allocate_tensors()
    detail = it.get_input_details()[0]
    x = np.random.default_rng(0).integers(-128, 128, detail["shape"]).astype(detail["dtype"])
    it.set_tensor(detail["index"], x)
    ms = _median_ms(it.invoke, repeat)
    return {"ms": ms, "cpu_ms": LAST_CPU_MS[0], "peak_rss_mb": _peak_rss_mb()}


def worker_tflm(path: str, repeat: int) -> dict:
    import numpy as np
    from tflite_micro.python.tflite_micro import runtime

    it = runtime.Interpreter.from_bytes(Path(path).read_bytes())
    detail = it.get_input_details(0)
    x = np.random.default_rng(0).integers(-128, 128, detail["shape"]).astype(detail["dtype"])
    it.set_input(x, 0)
    ms = _median_ms(it.invoke, repeat)
    return {"ms": ms, "cpu_ms": LAST_CPU_MS[0], "peak_rss_mb": _peak_rss_mb()}


def run_worker(args: argparse.Namespace) -> None:
    if args.worker == "refsim":
        result = worker_refsim(args.path, args.repeat, [int(b) for b in args.batches.split(",") if b])
    elif args.worker in ("litert", "litert-ref"):
        result = worker_litert(args.path, args.repeat, reference=args.worker == "litert-ref")
    else:
        result = worker_tflm(args.path, args.repeat)
    print(MARK + json.dumps(result), flush=True)


# --- driver ----------------------------------------------------------------------------------------------


def spawn(python: str, worker: str, path: Path, repeat: int, batches: str = "", env=None) -> dict:
    cmd = [
        python,
        __file__,
        "--worker",
        worker,
        "--path",
        str(path),
        "--repeat",
        str(repeat),
        "--batches",
        batches,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    for line in done.stdout.splitlines():
        if line.startswith(MARK):
            return {"status": "ok", **json.loads(line[len(MARK) :])}
    tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return {"status": f"error: {tail[:300]}"}


def make_venv(where: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    subprocess.run([str(where / "bin" / "python"), "-m", "pip", "install", "-q", *PEER_PINS], check=True)
    print(f"{where}: {', '.join(PEER_PINS)}; pass --peers-python {where / 'bin' / 'python'}")


def versions(python: str) -> dict:
    code = (
        "import importlib.metadata as m, json; "
        "print(json.dumps({p: m.version(p) for p in ('ai-edge-litert', 'tflite-micro', 'numpy')}))"
    )
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False)
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError:
        return {"error": done.stderr.strip()[-200:]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=300)
    ap.add_argument(
        "--rounds", type=int, default=1, help="measure each model this many times (module docstring)"
    )
    ap.add_argument("--models", default="kws,vww,ic,ad")
    ap.add_argument("--batches", default="1,16,256")
    ap.add_argument("--peers-python", default=str(ROOT / ".venv-peers" / "bin" / "python"))
    ap.add_argument("--refsim-tflite", action="store_true", help="time refsim on the .tflite files too")
    ap.add_argument(
        "--baseline-root", type=Path, help="another refsim checkout: its single execute, for before/after"
    )
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "peers.json")
    ap.add_argument("--make-venv", type=Path, help="create the peers' venv here and exit")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--path", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        run_worker(args)
        return 0
    if args.make_venv:
        make_venv(args.make_venv)
        return 0
    peers = args.peers_python
    if not Path(peers).exists():
        print(f"peers' python {peers} not found: run --make-venv .venv-peers first", file=sys.stderr)
        return 2
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    load_start = os.getloadavg()
    rows: dict[str, dict] = {}
    batches = [int(b) for b in args.batches.split(",") if b]
    for name in [m for m in args.models.split(",") if m]:
        tflite = ROOT / "tests" / "fixtures" / "tflite" / TFLITE[name]
        pte = ROOT / "examples" / "models" / f"{name}.pte"
        rounds = []
        for _ in range(max(1, args.rounds)):
            row = {
                "refsim": spawn(sys.executable, "refsim", pte, args.repeat, args.batches, env),
                "litert": spawn(peers, "litert", tflite, args.repeat),
                "litert_ref": spawn(peers, "litert-ref", tflite, max(20, args.repeat // 10)),
                "tflm": spawn(peers, "tflm", tflite, max(20, args.repeat // 10)),
            }
            if args.baseline_root:
                base_env = {**os.environ, "PYTHONPATH": str(args.baseline_root)}
                row["refsim_baseline"] = spawn(sys.executable, "refsim", pte, args.repeat, "", base_env)
            if args.refsim_tflite:
                row["refsim_tflite"] = spawn(sys.executable, "refsim", tflite, args.repeat, args.batches, env)
            rounds.append(row)
        rows[name] = median_row(rounds, batches)
        print(f"{name}: done", file=sys.stderr)
    table = render(rows, batches) + "\n\n" + render(rows, batches, cpu=True)
    print(table)
    report = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "commit": _commit(ROOT),
        "command": " ".join(sys.argv),
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "loadavg_start": load_start,
            "loadavg_end": os.getloadavg(),
        },
        "peers": versions(peers),
        "litert_threads": 1,
        "models": rows,
        "table": table,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


def median_row(rounds: list[dict], batches: list[int]) -> dict:
    """One model's rounds as one row: each worker's numbers the median over the rounds where it ran,
    the rounds themselves kept (``rounds``) with each round's best batched / LiteRT ratio."""
    row: dict = {}
    for key in rounds[0]:
        ok = [r[key] for r in rounds if r[key].get("status") == "ok"]
        if not ok:
            row[key] = rounds[0][key]
            continue
        numbers = {k for entry in ok for k, v in entry.items() if isinstance(v, int | float)}
        row[key] = {
            "status": "ok",
            **{k: statistics.median(e[k] for e in ok if k in e) for k in sorted(numbers)},
        }
    ratios = []
    for r in rounds:
        lite = r["litert"].get("ms") if r["litert"].get("status") == "ok" else None
        best = [r["refsim"].get(f"batch{b}_ms") for b in batches] if r["refsim"].get("status") == "ok" else []
        best = [v for v in best if v]
        if lite and best:
            ratios.append(min(best) / lite)
    row["batched_over_litert_per_round"] = ratios
    row["rounds"] = rounds
    return row


def _commit(root: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    )
    return done.stdout.strip() or "unknown"


def render(rows: dict[str, dict], batches: list[int], cpu: bool = False) -> str:
    """The table of wall times, or with ``cpu`` of CPU times (all threads of the process) per inference."""
    suffix = "_cpu_ms" if cpu else "_ms"

    def ms(entry: dict, key: str) -> float | None:
        return entry.get(key) if entry.get("status") == "ok" else None

    def f(v: float | None) -> str:
        return "-" if v is None else (f"{v:.4f}" if v < 0.1 else f"{v:.3f}")

    head = [
        "model",
        "before 1",
        "refsim 1",
        *(f"refsim b{b}" for b in batches),
        "LiteRT",
        "LiteRT ref",
        "TFLM",
    ]
    head += ["best batched/LiteRT", "1/LiteRT ref", "RSS MB (refsim/LiteRT/TFLM)"]
    lines = [
        ("CPU" if cpu else "wall") + " ms per inference",
        " | ".join(head),
        " | ".join("---" for _ in head),
    ]
    for name, row in rows.items():
        r = row["refsim"]
        single = ms(r, "single" + suffix)
        before = ms(row.get("refsim_baseline", {}), "single" + suffix)
        batched = [ms(r, f"batch{b}" + suffix) for b in batches]
        lite, ref, tflm = (ms(row[k], suffix.lstrip("_")) for k in ("litert", "litert_ref", "tflm"))
        best = min([v for v in batched if v is not None], default=None)
        ratio = f"{best / lite:.1f}x" if best and lite else "-"
        spread = row.get("batched_over_litert_per_round", [])
        if len(spread) > 1 and not cpu:  # the rounds' wall-time ratios
            ratio += f" ({min(spread):.1f}-{max(spread):.1f})"
        ratio_ref = f"{single / ref:.2f}x" if single and ref else "-"
        rss = "/".join(
            f"{e['peak_rss_mb']:.0f}" if e.get("status") == "ok" else "-"
            for e in (r, row["litert"], row["tflm"])
        )
        lines.append(
            " | ".join(
                [
                    name,
                    f(before),
                    f(single),
                    *map(f, batched),
                    f(lite),
                    f(ref),
                    f(tflm),
                    ratio,
                    ratio_ref,
                    rss,
                ]
            )
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())

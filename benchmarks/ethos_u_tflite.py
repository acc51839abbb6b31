"""refsim's Ethos-U estimate of the four MLPerf Tiny reference .tflite models beside the real Vela
run on the very same files.

    python -m venv /tmp/velavenv && /tmp/velavenv/bin/pip install ethos-u-vela==5.2.0
    VELA=/tmp/velavenv/bin/vela .venv/bin/python benchmarks/ethos_u_tflite.py [--configs ethos-u55-128 ...]

Vela is run on each tests/fixtures/tflite/ model with ``--accelerator-config C --verbose-performance``
and nothing else: its default system configuration and memory mode for the accelerator (the
summary CSV names them). refsim's estimate (`refsim run X.tflite --estimate-cycles --cpu C`,
isa_models.ethos_u.program) is made for the same system and mode. Compared: Vela's
``cycles_total`` with refsim's NPU cycles (the ops refsim places on the NPU) and refsim's total
(its CPU ops and the hand-over added); per layer, Vela's rows matched to refsim's by MAC count in
order, the MAC-less ops summed in one row. Writes benchmarks/results/ethos_u_tflite.json
(``provenance``: Vela's version, the checkout's commit, the command, the date; ``results``).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

FIXTURES = ROOT / "tests" / "fixtures" / "tflite"
RESULTS = ROOT / "benchmarks" / "results" / "ethos_u_tflite.json"
MODELS = {
    "kws": "kws_ref_model.tflite",
    "vww": "vww_96_int8.tflite",
    "ic": "pretrainedResnet_quant.tflite",
    "ad": "ad01_int8.tflite",
}
CONFIGS = ("ethos-u55-128", "ethos-u55-256", "ethos-u65-256", "ethos-u85-256")


def run_vela(vela: str, model: Path, config: str, out: Path) -> dict:
    done = subprocess.run(
        [vela, str(model), "--accelerator-config", config, "--verbose-performance", "--output-dir", str(out)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"vela on {model.name} ({config}) failed: {done.stderr[-500:]}")
    (summary,) = out.glob(f"{model.stem}_summary_*.csv")
    with summary.open() as f:
        row = next(csv.DictReader(f))
    layers = []
    with (out / f"{model.stem}_per-layer.csv").open() as f:
        for r in csv.DictReader(f):
            layers.append({"operator": r["Original Operator"], "vela_op": r["NNG Operator"], "target": r["Target"],
                           "cycles": float(r["Op Cycles"]), "macs": int(float(r["MAC Count"])), "name": r["Name"]})  # fmt: skip
    version = subprocess.run([vela, "--version"], capture_output=True, text=True).stdout.strip()
    return {"vela": version, "cycles": float(row["cycles_total"]), "system": row["system_config"],
            "memory_mode": row["memory_mode"], "delegates": 1, "layers": layers}  # fmt: skip


def refsim_estimate(model: Path, config: str, system: str, mode: str) -> dict:
    from isa_models.ethos_u.program import estimate_ops, ops_from_method
    from refsim.ops.cost import cost_hook
    from refsim.runtime.program import Program

    program = Program.load(model)
    method = program.method(program.method_names[0])
    est = estimate_ops(ops_from_method(method, cost_hook), config, system=system, memory_mode=mode,
                       runtime=program.runtime)  # fmt: skip
    rows = [{"index": r.index, "op": r.name, "placement": r.placement, "variant": r.variant,
             "cycles": round(r.cost.cycles), "bound": r.bound, "macs": r.cost.macs, "note": r.note}
            for r in est.rows]  # fmt: skip
    return {"npu_cycles": round(est.npu_cycles), "total_cycles": est.total_cycles, "rows": rows}


def markdown(results: list[dict]) -> str:
    from ethos_u import per_layer

    out = ["| model | config | Vela system / memory mode | Vela cycles | refsim NPU cycles | error | refsim total (CPU ops, hand-over) | error | refsim on CPU |",
           "|---|---|---|--:|--:|--:|--:|--:|---|"]  # fmt: skip
    for r in results:
        v, o = r["vela"], r["refsim"]
        cpu = ", ".join(x["op"] for x in o["rows"] if x["placement"] == "CPU") or "-"
        out.append(f"| {r['model']} | {r['config']} | {v['system']} / {v['memory_mode']} | {v['cycles']:,.0f} | "
                   f"{o['npu_cycles']:,} | {r['error_pct']:+.1f}% | {o['total_cycles']:,.0f} | {r['total_error_pct']:+.1f}% | {cpu} |")  # fmt: skip
    for r in results:
        out += ["", f"**{r['model']} on {r['config']}**", "", "| layer | MACs | Vela | refsim | error |",
                "|---|--:|--:|--:|--:|"]  # fmt: skip
        for name, macs, vc, oc in per_layer(r):
            err = f"{100 * (oc - vc) / vc:+.0f}%" if vc else "-"
            out.append(f"| {name} | {macs:,} | {vc:,.0f} | {oc:,.0f} | {err} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--configs", nargs="*", default=list(CONFIGS))
    ap.add_argument("--markdown", action="store_true", help="print the tables of the saved results")
    args = ap.parse_args(argv)
    if args.markdown:
        saved = json.loads(RESULTS.read_text())
        print(markdown(saved["results"] if isinstance(saved, dict) else saved))
        return 0
    vela = os.environ.get("VELA")
    if not vela:
        print(
            "set VELA to the vela executable (pip install ethos-u-vela==5.2.0 in its own venv)",
            file=sys.stderr,
        )
        return 2
    results = []
    with tempfile.TemporaryDirectory(prefix="refsim-vela-") as tmp:
        for config in args.configs:
            for model, file in MODELS.items():
                v = run_vela(vela, FIXTURES / file, config, Path(tmp) / f"{model}_{config}")
                o = refsim_estimate(FIXTURES / file, config, v["system"], v["memory_mode"])
                results.append({"model": model, "config": config, "vela": v, "refsim": o,
                                "error_pct": round(100 * (o["npu_cycles"] - v["cycles"]) / v["cycles"], 2),
                                "total_error_pct": round(100 * (o["total_cycles"] - v["cycles"]) / v["cycles"], 2)})  # fmt: skip
    import datetime

    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout
    provenance = {"vela": results[0]["vela"]["vela"] if results else None, "commit": commit.strip(),
                  "command": "VELA=... python benchmarks/ethos_u_tflite.py " + " ".join(argv or sys.argv[1:]),
                  "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}  # fmt: skip
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"provenance": provenance, "results": results}, indent=1) + "\n")
    print(markdown(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

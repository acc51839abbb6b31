"""refsim's Ethos-U estimate of the four MLPerf Tiny programs beside the real Vela's.

    # in an environment with torch + executorch[ethos-u] (make venv-interop), from the repo root:
    PYTHONPATH=. .venv-interop/bin/python benchmarks/ethos_u.py --export /tmp/vela
    # only refsim's side, against Vela outputs exported before:
    .venv/bin/python benchmarks/ethos_u.py --vela-dir /tmp/vela

``--export DIR`` builds each model of examples/models/make_models.py, quantizes it with
ExecuTorch's EthosUQuantizer (symmetric, per-channel), lowers it with EthosUPartitioner for the
accelerator and lets the backend call Vela with ``--verbose-performance``; every delegate's
Vela output (``out_summary_<system>.csv``, ``out_per-layer.csv``) is kept under
``DIR/<model>_<config>/delegateN``. The system configuration and memory mode are
EthosUCompileSpec's defaults (isa_models.ethos_u_systems.EXECUTORCH_DEFAULTS), passed to
refsim's estimate too.

Vela's total = Σ over delegates of its ``cycles_total`` (NPU only: the ops ExecuTorch's
partitioner leaves to the CPU are not in it). refsim's figure compared with it is the NPU
cycles of the cortex_m program (examples/models/<model>.pte) — the ops refsim's rules place on
the NPU — and its total adds the host ops and hand-over. Prints the table, writes
benchmarks/results/ethos_u.json (totals, per-layer rows of both, errors).
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("kws", "vww", "ic", "ad")
CONFIGS = ("ethos-u55-128", "ethos-u55-256", "ethos-u65-256", "ethos-u85-256")
TARGET_PCT = 15.0


def export(out_root: Path, models=MODELS, configs=CONFIGS) -> None:
    """Run ExecuTorch's Ethos-U flow (and so Vela) per model x config, keeping Vela's output."""
    import torch
    from ethosu.vela import vela
    from executorch.backends.arm.ethosu import EthosUCompileSpec, EthosUPartitioner
    from executorch.backends.arm.quantizer import EthosUQuantizer, get_symmetric_quantization_config
    from executorch.exir import to_edge_transform_and_lower
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    sys.path.insert(0, str(ROOT / "examples" / "models"))
    import make_models

    original = vela.main
    state = {"count": 0, "dir": None}

    def keep_output(argv):  # ExecuTorch reuses one output directory per export
        state["count"] += 1
        rc = original(argv)
        out = [a for a in argv if a.startswith("--output-dir=")][-1].split("=", 1)[1]
        shutil.copytree(out, state["dir"] / f"delegate{state['count']}", dirs_exist_ok=True)
        return rc

    vela.main = keep_output
    try:
        for name in models:
            spec = make_models.MODELS[name]
            model = make_models.build(spec)
            samples = make_models.calibration(spec)
            for config in configs:
                t0 = time.perf_counter()
                d = out_root / f"{name}_{config}"
                shutil.rmtree(d, ignore_errors=True)
                d.mkdir(parents=True)
                state.update(count=0, dir=d)
                cs = EthosUCompileSpec(config, extra_flags=["--verbose-performance"])
                cs.dump_intermediate_artifacts_to(str(d))
                quantizer = EthosUQuantizer(cs)
                quantizer.set_global(get_symmetric_quantization_config(is_per_channel=True))
                exported = torch.export.export(model, (samples[0],)).module(check_guards=False)
                prepared = prepare_pt2e(exported, quantizer)
                with torch.no_grad():
                    for x in samples:
                        prepared(x)
                converted = convert_pt2e(prepared)
                to_edge_transform_and_lower(
                    torch.export.export(converted, (samples[0],)), partitioner=[EthosUPartitioner(cs)]
                )
                print(f"exported {name} {config} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    finally:
        vela.main = original


def read_vela(d: Path) -> dict:
    """Vela's totals and per-layer rows over every delegate of one export."""
    total, layers, delegates, system, mode = 0, [], 0, None, None
    for delegate in sorted(d.glob("delegate*"), key=lambda p: int(p.name.removeprefix("delegate"))):
        (summary,) = delegate.glob("out_summary_*.csv")
        with summary.open() as f:
            row = next(csv.DictReader(f))
        total += float(row["cycles_total"])
        system, mode = row["system_config"], row["memory_mode"]
        delegates += 1
        with (delegate / "out_per-layer.csv").open() as f:
            for r in csv.DictReader(f):
                layers.append({"delegate": delegates, "operator": r["Original Operator"], "vela_op": r["NNG Operator"],
                               "cycles": float(r["Op Cycles"]), "npu": float(r["NPU"]), "sram": float(r["SRAM AC"]),
                               "dram": float(r["DRAM AC"]), "flash": float(r["OffFlash AC"]),
                               "macs": int(float(r["MAC Count"]))})  # fmt: skip
    if not delegates:
        raise SystemExit(f"no Vela output under {d} (run with --export first)")
    return {"cycles": total, "delegates": delegates, "system": system, "memory_mode": mode, "layers": layers}


def refsim_estimate(model: str, config: str, system: str, mode: str) -> dict:
    from isa_models.ethos_u_program import estimate_ops, ops_from_method
    from refsim.ops.cost import cost_hook
    from refsim.runtime.program import Program

    program = Program.load(ROOT / "examples" / "models" / f"{model}.pte")
    est = estimate_ops(ops_from_method(program.method(), cost_hook), config, system=system, memory_mode=mode)
    rows = [{"index": r.index, "op": r.name, "placement": r.placement, "variant": r.variant,
             "cycles": round(r.cost.cycles), "bound": r.bound, "macs": r.cost.macs, "note": r.note}
            for r in est.rows]  # fmt: skip
    return {"npu_cycles": round(est.npu_cycles), "total_cycles": est.total_cycles, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--export", type=Path, help="run ExecuTorch + Vela, keep the outputs in DIR")
    ap.add_argument("--vela-dir", type=Path, help="Vela outputs exported before")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "ethos_u.json")
    a = ap.parse_args(argv)
    models, configs = a.models.split(","), a.configs.split(",")
    vela_dir = a.export or a.vela_dir
    if vela_dir is None:
        ap.error("give --export DIR (needs executorch) or --vela-dir DIR")
    if a.export:
        export(a.export, models, configs)
    results = []
    print(f"{'model':5} {'config':14} {'system / memory mode':45} {'Vela':>10} {'refsim NPU':>11} {'error':>8} "
          f"{'refsim total':>13}")  # fmt: skip
    for model in models:
        for config in configs:
            vela = read_vela(vela_dir / f"{model}_{config}")
            ours = refsim_estimate(model, config, vela["system"], vela["memory_mode"])
            err = 100.0 * (ours["npu_cycles"] - vela["cycles"]) / vela["cycles"]
            results.append(
                {"model": model, "config": config, "vela": vela, "refsim": ours, "error_pct": round(err, 2)}
            )
            sysmode = f"{vela['system']} / {vela['memory_mode']}"
            print(f"{model:5} {config:14} {sysmode:45} {vela['cycles']:10,.0f} {ours['npu_cycles']:11,} "
                  f"{err:+7.1f}% {ours['total_cycles']:13,}")  # fmt: skip
    worst = max(abs(r["error_pct"]) for r in results)
    within = sum(abs(r["error_pct"]) <= TARGET_PCT for r in results)
    print(f"{within}/{len(results)} within ±{TARGET_PCT:g}% of Vela; worst {worst:.1f}%")
    a.json.parent.mkdir(parents=True, exist_ok=True)
    a.json.write_text(json.dumps({"target_pct": TARGET_PCT, "results": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""refsim's Ethos-U estimate of the four MLPerf Tiny programs beside the real Vela's.

    # in an environment with torch + executorch[ethos-u] (make venv-interop), from the repo root:
    PYTHONPATH=. .venv-interop/bin/python benchmarks/ethos_u.py --export /tmp/vela
    # only refsim's side, against Vela outputs exported before:
    .venv/bin/python benchmarks/ethos_u.py --vela-dir /tmp/vela

Vela is the one ExecuTorch's backend imports (``from ethosu.vela import vela``): the interop
venv pins ``ethos-u-vela`` 5.1.0; to hold refsim against the newest release, put 5.2.0 first on
the path (a directory holding links to a 5.2.0 install's ``ethosu`` package and its
``ethos_u_vela-5.2.0.dist-info``):

    PYTHONPATH=/work/ext/vela-h/shim52:. .venv-interop/bin/python benchmarks/ethos_u.py --export DIR

The Vela release an export ran with is written to ``DIR/vela_version.txt`` and carried into the
results. (Vela 5.1.0 prices every ExecuTorch convolution's output unit at
the LUT activation rate: its regor ``EstimateAOCyclesPerElement`` starts the activation index at
0 (LUT) and ExecuTorch's TOSA folds ReLU into the RESCALE, so no activation op follows the
convolution to correct it — 9,288 cycles for KWS's 1x1 convolution on U55-128 where 5.2.0, and
5.1.0 on the reference .tflite, give 5,944. Fixed in 5.2.0, where the index starts at "none".)

``--export DIR`` builds each model of examples/models/make_models.py, quantizes it with
ExecuTorch's EthosUQuantizer (symmetric, per-channel), lowers it with EthosUPartitioner for the
accelerator and lets the backend call Vela with ``--verbose-performance``; every delegate's
Vela output (``out_summary_<system>.csv``, ``out_per-layer.csv``) is kept under
``DIR/<model>_<config>/delegateN``. The system configuration and memory mode are
EthosUCompileSpec's defaults (isa_models.ethos_u.systems.EXECUTORCH_DEFAULTS), passed to
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
# the U55/U65 formula's configurations checked on the synthetic networks (U85: ethos_u85_sweep.py)
ALL_CONFIGS = (
    "ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256", "ethos-u65-256", "ethos-u65-512",
)  # fmt: skip
TARGET_PCT = 15.0


def export(out_root: Path, models=MODELS, configs=CONFIGS) -> None:
    """Run ExecuTorch's Ethos-U flow (and so Vela) per model x config, keeping Vela's output."""
    sys.path.insert(0, str(ROOT / "examples" / "models"))
    import make_models

    for name in models:
        spec = make_models.MODELS[name]
        _export_one(out_root, name, make_models.build(spec), make_models.calibration(spec), configs)


def _export_one(
    out_root: Path, name: str, model, samples, configs, extra_flags=(), system=None, memory_mode=None
) -> None:
    """ExecuTorch's Ethos-U flow for one model on each config, keeping Vela's outputs. A sample
    is one input tensor or a tuple of them; ``extra_flags`` go to Vela after
    ``--verbose-performance``; ``system``/``memory_mode`` override EthosUCompileSpec's defaults
    (the output directory then ends in ``_<memory_mode>``)."""
    from importlib.metadata import version

    import torch
    from ethosu.vela import vela
    from executorch.backends.arm.ethosu import EthosUCompileSpec, EthosUPartitioner
    from executorch.backends.arm.quantizer import EthosUQuantizer, get_symmetric_quantization_config
    from executorch.exir import to_edge_transform_and_lower
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    out_root.mkdir(parents=True, exist_ok=True)
    (out_root / "vela_version.txt").write_text(version("ethos-u-vela") + "\n")
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
        for config in configs:
            t0 = time.perf_counter()
            d = out_root / (f"{name}_{config}" + (f"_{memory_mode}" if memory_mode else ""))
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir(parents=True)
            state.update(count=0, dir=d)
            cs = EthosUCompileSpec(
                config, system_config=system, memory_mode=memory_mode,
                extra_flags=["--verbose-performance", *extra_flags],
            )  # fmt: skip
            cs.dump_intermediate_artifacts_to(str(d))
            quantizer = EthosUQuantizer(cs)
            quantizer.set_global(get_symmetric_quantization_config(is_per_channel=True))
            inputs = [x if isinstance(x, tuple) else (x,) for x in samples]
            exported = torch.export.export(model, inputs[0]).module(check_guards=False)
            prepared = prepare_pt2e(exported, quantizer)
            with torch.no_grad():
                for x in inputs:
                    prepared(*x)
            converted = convert_pt2e(prepared)
            to_edge_transform_and_lower(
                torch.export.export(converted, inputs[0]), partitioner=[EthosUPartitioner(cs)]
            )
            print(f"exported {name} {config} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    finally:
        vela.main = original


# --- the formula on synthetic networks (shapes unlike the four compared models) ---------------


def synthetic_networks():
    """Two networks with shapes unlike the MLPerf Tiny four: kernels 1/3/5, strides 1/2,
    channels 8-120, square and wide-short maps (``--synthetic``: the formula per layer class)."""
    import torch
    from torch import nn

    def cbr(ci, co, k, s=1, g=1):
        return [nn.Conv2d(ci, co, k, s, k // 2, groups=g), nn.BatchNorm2d(co), nn.ReLU()]

    class SynthA(nn.Module):  # 40x40x16
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(
                *cbr(16, 24, 3), *cbr(24, 24, 3, 2, 24), *cbr(24, 48, 1), *cbr(48, 48, 5, 1, 48),
                *cbr(48, 40, 1), *cbr(40, 56, 3, 2), *cbr(56, 56, 3, 1, 56), *cbr(56, 96, 1),
            )  # fmt: skip
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(96, 20)

        def forward(self, x):
            return self.fc(torch.flatten(self.pool(self.body(x)), 1))

    class SynthB(nn.Module):  # 12x60x8
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(
                *cbr(8, 32, 3), *cbr(32, 32, 3, 1, 32), *cbr(32, 80, 1), *cbr(80, 80, 3, 2, 80),
                *cbr(80, 120, 1), *cbr(120, 32, 1), *cbr(32, 48, 5, 2),
            )  # fmt: skip
            self.fc1 = nn.Linear(48 * 3 * 15, 200)
            self.fc2 = nn.Linear(200, 100)

        def forward(self, x):
            return self.fc2(torch.relu(self.fc1(torch.flatten(self.body(x), 1))))

    return {"synth_a": (SynthA, (1, 16, 40, 40)), "synth_b": (SynthB, (1, 8, 12, 60))}


def export_synthetic(out_root: Path, configs) -> None:
    import torch

    for name, (cls, shape) in synthetic_networks().items():
        torch.manual_seed(0)
        model = cls().eval().to(memory_format=torch.channels_last)
        g = torch.Generator().manual_seed(1)
        samples = [
            (torch.rand(shape, generator=g) * 2 - 1).to(memory_format=torch.channels_last) for _ in range(8)
        ]
        _export_one(out_root, name, model, samples, configs)


def synthetic_layers(cls, shape) -> list:
    """The NPU layers of a synthetic network, read from its modules (conv, depthwise, linear)."""
    import torch
    from torch import nn

    from isa_models.ethos_u.arch import Block
    from isa_models.ethos_u.layers import NpuLayer

    torch.manual_seed(0)
    model, layers = cls().eval(), []

    def hook(mod, inputs, y):
        x = inputs[0]
        if isinstance(mod, nn.Conv2d):
            ifm, ofm = Block(x.shape[3], x.shape[2], x.shape[1]), Block(y.shape[3], y.shape[2], y.shape[1])
            kind = "depthwise" if mod.groups > 1 else "conv"
            kernel, stride = (mod.kernel_size[1], mod.kernel_size[0]), (mod.stride[1], mod.stride[0])
            layers.append(
                NpuLayer(
                    kind, ifm, ofm, kernel, stride, weights_bytes=mod.weight.numel(), bias_channels=ofm.d
                )
            )
        elif isinstance(mod, nn.Linear):
            layers.append(NpuLayer("vector_product", Block(1, 1, x.shape[-1]), Block(1, 1, y.shape[-1]),
                                   weights_bytes=mod.weight.numel(), bias_channels=y.shape[-1]))  # fmt: skip

    for mod in model.modules():
        if isinstance(mod, nn.Conv2d | nn.Linear):
            mod.register_forward_hook(hook)
    model(torch.zeros(shape))
    return layers


def synthetic_ratios(vela_dir: Path, configs) -> dict[str, dict[str, float]]:
    """Per configuration and layer class: Σ Vela NPU cycles / Σ this model's compute cycles over
    the synthetic networks' layers (matched to Vela's per-layer rows by MAC count, in order). A
    report, not a fit: nothing is written back into the model."""
    from isa_models.ethos_u.arch import get_accelerator
    from isa_models.ethos_u.layers import NpuContext, choose_block, compute_cycles
    from isa_models.ethos_u.systems import EXECUTORCH_DEFAULTS, resolve

    def layer_class(layer) -> str:
        return ("conv_1x1" if layer.kernel == (1, 1) else "conv") if layer.kind == "conv" else layer.kind

    table: dict[str, dict[str, float]] = {}
    for config in configs:
        acc = get_accelerator(config)
        ctx = NpuContext(acc, *resolve(acc.family, *EXECUTORCH_DEFAULTS[acc.family]))
        sums: dict[str, list[float]] = {}
        for name, (cls, shape) in synthetic_networks().items():
            rows = [r for r in read_vela(vela_dir / f"{name}_{config}")["layers"] if r["macs"] > 0]
            i = 0
            for layer in synthetic_layers(cls, shape):
                while i < len(rows) and rows[i]["macs"] != layer.macs:
                    i += 1
                if i == len(rows):
                    raise SystemExit(f"{name} {config}: no Vela row with {layer.macs} MACs ({layer.kind})")
                s = sums.setdefault(layer_class(layer), [0.0, 0.0, 0])
                s[0] += rows[i]["npu"]
                s[1] += compute_cycles(ctx, layer, choose_block(acc, layer))
                s[2] += 1
                i += 1
        table[config] = {k: round(v[0] / v[1], 4) for k, v in sorted(sums.items())}
        table[config]["layers"] = sum(int(v[2]) for v in sums.values())
    return table


def vela_version(d: Path) -> str:
    """The Vela release an export directory was made with (``unknown`` before it was recorded)."""
    f = d / "vela_version.txt"
    return f.read_text().strip() if f.exists() else "unknown"


def read_vela(d: Path) -> dict:
    """Vela's totals and per-layer rows over every delegate of one export."""
    total, layers, delegates, system, mode, weights = 0, [], 0, None, None, 0
    for delegate in sorted(d.glob("delegate*"), key=lambda p: int(p.name.removeprefix("delegate"))):
        (summary,) = delegate.glob("out_summary_*.csv")
        with summary.open() as f:
            row = next(csv.DictReader(f))
        total += float(row["cycles_total"])
        weights += int(float(row["total_npu_encoded_weights"]))
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
    return {"cycles": total, "delegates": delegates, "system": system, "memory_mode": mode,
            "encoded_weight_bytes": weights, "layers": layers}  # fmt: skip


def refsim_estimate(model: str, config: str, system: str, mode: str) -> dict:
    from isa_models.ethos_u.program import estimate_ops, ops_from_method
    from refsim.ops.cost import cost_hook
    from refsim.runtime.program import Program

    program = Program.load(ROOT / "examples" / "models" / f"{model}.pte")
    est = estimate_ops(ops_from_method(program.method(), cost_hook), config, system=system, memory_mode=mode)
    rows = [{"index": r.index, "op": r.name, "placement": r.placement, "variant": r.variant,
             "cycles": round(r.cost.cycles), "bound": r.bound, "macs": r.cost.macs, "note": r.note}
            for r in est.rows]  # fmt: skip
    # the weight stream alone, as Vela's total_npu_encoded_weights counts it (scales/biases apart)
    encoded = sum(layer.weights_bytes for r in est.rows for layer in r.planned)
    return {"npu_cycles": round(est.npu_cycles), "total_cycles": est.total_cycles,
            "encoded_weight_bytes": encoded, "rows": rows}  # fmt: skip


def per_layer(result: dict) -> list[tuple[str, int, float, float]]:
    """(operator, MACs, Vela cycles, refsim cycles) per MAC-carrying layer, matched by MACs in
    order, then one row for everything else (pooling, elementwise, softmax parts, reshapes)."""
    vela = [r for r in result["vela"]["layers"]]
    ours = [r for r in result["refsim"]["rows"] if r["placement"] in ("NPU", "NPU (no-op)")]
    rows, used = [], set()
    for r in ours:
        if not r["macs"]:
            continue
        match = next((i for i, v in enumerate(vela) if i not in used and v["macs"] == r["macs"]), None)
        if match is None:
            continue
        used.add(match)
        rows.append((vela[match]["operator"], r["macs"], vela[match]["cycles"], float(r["cycles"])))
    matched_ours = {id(r) for r in ours if r["macs"] and any(x[1] == r["macs"] for x in rows)}
    rest_vela = sum(v["cycles"] for i, v in enumerate(vela) if i not in used)
    rest_ours = sum(float(r["cycles"]) for r in ours if id(r) not in matched_ours)
    rows.append(("(other NPU ops)", 0, rest_vela, rest_ours))
    return rows


def markdown(results: list[dict]) -> str:
    out = ["| model | config | system / memory mode | Vela cycles | refsim NPU cycles | error | refsim total (with host) |",
           "|---|---|---|---:|---:|---:|---:|"]  # fmt: skip
    for r in results:
        v, o = r["vela"], r["refsim"]
        out.append(f"| {r['model']} | {r['config']} | {v['system']} / {v['memory_mode']} | {v['cycles']:,.0f} | "
                   f"{o['npu_cycles']:,} | {r['error_pct']:+.1f}% | {o['total_cycles']:,} |")  # fmt: skip
    for r in results:
        out += ["", f"**{r['model']} on {r['config']}** (Vela: {r['vela']['delegates']} delegate(s))", "",
                "| layer | MACs | Vela | refsim | error |", "|---|---:|---:|---:|---:|"]  # fmt: skip
        for name, macs, vc, oc in per_layer(r):
            err = f"{100 * (oc - vc) / vc:+.0f}%" if vc else "-"
            out.append(f"| {name} | {macs:,} | {vc:,.0f} | {oc:,.0f} | {err} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--export", type=Path, help="run ExecuTorch + Vela, keep the outputs in DIR")
    ap.add_argument("--vela-dir", type=Path, help="Vela outputs exported before")
    ap.add_argument("--synthetic", type=Path, help="report Σ Vela / Σ formula per layer class on the "
                    "synthetic networks' Vela outputs in DIR")  # fmt: skip
    ap.add_argument("--export-missing", action="store_true", help="with --synthetic: export the synthetic "
                    "networks for configurations without Vela output in DIR")  # fmt: skip
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--markdown", type=Path, help="also write the tables (totals, per layer) as markdown")
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "ethos_u.json")
    a = ap.parse_args(argv)
    models, configs = a.models.split(","), a.configs.split(",")
    if a.synthetic:
        nets = synthetic_networks()
        missing = [
            c for c in ALL_CONFIGS if not all(any((a.synthetic / f"{n}_{c}").glob("delegate*")) for n in nets)
        ]
        if missing and a.export_missing:
            export_synthetic(a.synthetic, missing)
            missing = []
        print(f"Σ Vela {vela_version(a.synthetic)} NPU cycles / Σ refsim compute, per layer class:")
        for config, row in synthetic_ratios(
            a.synthetic, [c for c in ALL_CONFIGS if c not in missing]
        ).items():
            print(config, row)
        if not (a.export or a.vela_dir):
            return 0
    vela_dir = a.export or a.vela_dir
    if vela_dir is None:
        ap.error("give --export DIR (needs executorch) or --vela-dir DIR")
    if a.export:
        export(a.export, models, configs)
    results = []
    print(f"{'model':5} {'config':14} {'system / memory mode':45} {'Vela':>10} {'refsim NPU':>11} {'error':>8} "
          f"{'refsim total':>13} {'weights Vela':>13} {'refsim':>8}")  # fmt: skip
    for model in models:
        for config in configs:
            vela = read_vela(vela_dir / f"{model}_{config}")
            ours = refsim_estimate(model, config, vela["system"], vela["memory_mode"])
            err = 100.0 * (ours["npu_cycles"] - vela["cycles"]) / vela["cycles"]
            results.append(
                {"model": model, "config": config, "vela": {**vela, "version": vela_version(vela_dir)},
                 "refsim": ours, "error_pct": round(err, 2)}
            )  # fmt: skip
            sysmode = f"{vela['system']} / {vela['memory_mode']}"
            print(f"{model:5} {config:14} {sysmode:45} {vela['cycles']:10,.0f} {ours['npu_cycles']:11,} "
                  f"{err:+7.1f}% {ours['total_cycles']:13,} {vela['encoded_weight_bytes']:13,} "
                  f"{ours['encoded_weight_bytes']:8,}")  # fmt: skip
    worst = max(abs(r["error_pct"]) for r in results)
    within = sum(abs(r["error_pct"]) <= TARGET_PCT for r in results)
    print(f"{within}/{len(results)} within ±{TARGET_PCT:g}% of Vela; worst {worst:.1f}%")
    a.json.parent.mkdir(parents=True, exist_ok=True)
    import datetime
    import subprocess

    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    provenance = {
        "vela": vela_version(vela_dir),
        "commit": commit.stdout.strip(),
        "command": "python benchmarks/ethos_u.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }
    a.json.write_text(
        json.dumps({"provenance": provenance, "target_pct": TARGET_PCT, "results": results}, indent=1) + "\n"
    )
    if a.markdown:
        a.markdown.write_text(markdown(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

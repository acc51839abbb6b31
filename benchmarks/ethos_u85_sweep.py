"""Single-layer networks through ExecuTorch's Ethos-U backend and Vela 5.1, beside refsim's
Ethos-U85 layer model (isa_models.ethos_u.u85): the data that model is checked (and its one
fitted constant, if any, is fitted) on. Never the MLPerf Tiny models or their layers.

    # export + Vela (torch, executorch[ethos-u]; one network at a time), then collect:
    PYTHONPATH=. .venv-interop/bin/python benchmarks/ethos_u85_sweep.py --export /tmp/u85sweep
    PYTHONPATH=. .venv-interop/bin/python benchmarks/ethos_u85_sweep.py --collect /tmp/u85sweep
    # refsim against the committed data (no torch):
    .venv/bin/python benchmarks/ethos_u85_sweep.py

Each case is one PyTorch module (a convolution 1x1/3x3/5x5/7x3 with various channels and
strides, depthwise, linear, average/max pool, add, multiply, sigmoid, a convolution followed
by a residual add) exported exactly as benchmarks/ethos_u.py exports the four models
(EthosUQuantizer per-channel, EthosUPartitioner, Vela ``--verbose-performance``) with
EthosUCompileSpec's default system for the configuration. ``--collect`` writes
benchmarks/results/ethos_u85_sweep.json: provenance, then per case and configuration the
layer as refsim describes it and Vela's per-layer rows. The default run prints, per case, Vela's
cycles of the layer and refsim's (given the encoded weight size Vela reports, so the cycle
model alone is compared) and the error.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "results" / "ethos_u85_sweep.json"
CONFIGS = ("ethos-u85-128", "ethos-u85-256", "ethos-u85-512", "ethos-u85-1024", "ethos-u85-2048")

# name: (kind, NCHW input shape, parameters); shapes unlike the MLPerf Tiny layers
CASES: dict[str, tuple[str, tuple[int, ...], dict]] = {
    "conv1x1_32to48_20x20": ("conv", (1, 32, 20, 20), {"co": 48, "k": 1}),
    "conv1x1_96to24_12x12": ("conv", (1, 96, 12, 12), {"co": 24, "k": 1}),
    "conv1x1_16to128_9x7": ("conv", (1, 16, 9, 7), {"co": 128, "k": 1}),
    "conv1x1_40to40_30x6": ("conv", (1, 40, 30, 6), {"co": 40, "k": 1}),
    "conv1x1_40to40_6x30": ("conv", (1, 40, 6, 30), {"co": 40, "k": 1}),
    "conv1x1_200to72_5x5": ("conv", (1, 200, 5, 5), {"co": 72, "k": 1}),
    "conv3x3_24to32_18x18": ("conv", (1, 24, 18, 18), {"co": 32, "k": 3}),
    "conv3x3s2_16to40_33x33": ("conv", (1, 16, 33, 33), {"co": 40, "k": 3, "s": 2}),
    "conv3x3_3to16_40x40": ("conv", (1, 3, 40, 40), {"co": 16, "k": 3}),
    "conv3x3_80to80_8x8": ("conv", (1, 80, 8, 8), {"co": 80, "k": 3}),
    "conv5x5_8to24_20x14": ("conv", (1, 8, 20, 14), {"co": 24, "k": 5}),
    "conv7x3_12to20_30x12": ("conv", (1, 12, 30, 12), {"co": 20, "k": (7, 3)}),
    "conv7x3s2_1to24_31x12": ("conv", (1, 1, 31, 12), {"co": 24, "k": (7, 3), "s": 2}),
    "conv5x5_1to16_20x20": ("conv", (1, 1, 20, 20), {"co": 16, "k": 5}),
    "dw3x3_48_22x22": ("depthwise", (1, 48, 22, 22), {"k": 3}),
    "dw3x3s2_96_15x15": ("depthwise", (1, 96, 15, 15), {"k": 3, "s": 2}),
    "dw5x5_24_16x12": ("depthwise", (1, 24, 16, 12), {"k": 5}),
    "dw3x3_200_6x6": ("depthwise", (1, 200, 6, 6), {"k": 3}),
    "fc_300to50": ("linear", (1, 300), {"co": 50}),
    "fc_48to200": ("linear", (1, 48), {"co": 200}),
    "fc_1000to10": ("linear", (1, 1000), {"co": 10}),
    "avgpool3x3s2_32_20x20": ("avg_pool", (1, 32, 20, 20), {"k": 3, "s": 2}),
    "maxpool2x2s2_24_24x24": ("max_pool", (1, 24, 24, 24), {"k": 2, "s": 2}),
    "avgpool9x9_80": ("avg_pool", (1, 80, 9, 9), {"k": 9, "s": 1}),
    "add_24_16x16": ("add", (1, 24, 16, 16), {}),
    "mul_16_12x20": ("mul", (1, 16, 12, 20), {}),
    "add_500": ("add", (1, 500), {}),
    "sigmoid_32_10x10": ("sigmoid", (1, 32, 10, 10), {}),
    "conv1x1_add_32_14x14": ("conv_add", (1, 32, 14, 14), {"co": 32, "k": 1}),
    "softmax_20": ("softmax", (1, 20), {}),
    "softmax_3x40": ("softmax", (3, 40), {}),
}


def _pair(v) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else tuple(v)


def build(kind: str, shape: tuple[int, ...], p: dict):
    """The PyTorch module of one case and the number of inputs it takes."""
    import torch
    from torch import nn

    c = shape[1]
    k, s = _pair(p.get("k", 1)), _pair(p.get("s", 1))
    pad = (k[0] // 2, k[1] // 2)
    if kind in ("conv", "depthwise", "conv_add"):
        groups = c if kind == "depthwise" else 1
        co = c if kind == "depthwise" else p["co"]
        conv = nn.Conv2d(c, co, k, s, pad, groups=groups)
        if kind == "conv_add":

            class ConvAdd(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.conv = conv

                def forward(self, x):
                    return torch.relu(self.conv(x) + x)

            return ConvAdd(), 1
        return nn.Sequential(conv, nn.ReLU()), 1
    if kind == "linear":
        return nn.Linear(c, p["co"]), 1
    if kind == "avg_pool":
        return nn.AvgPool2d(k, s), 1
    if kind == "max_pool":
        return nn.MaxPool2d(k, s), 1
    if kind == "sigmoid":
        return nn.Sigmoid(), 1
    if kind == "softmax":
        return nn.Softmax(dim=-1), 1

    class Binary(nn.Module):
        def forward(self, a, b):
            return a + b if kind == "add" else a * b

    return Binary(), 2


def refsim_layers(kind: str, shape: tuple[int, ...], p: dict, encoded_weights: int) -> list:
    """The isa_models.ethos_u.layers NpuLayers refsim makes of the case (OFM shapes as PyTorch gives)."""
    from isa_models.ethos_u.arch import Block
    from isa_models.ethos_u.layers import NpuLayer

    if len(shape) == 2:
        ifm = Block(1, 1, shape[1])
    else:
        ifm = Block(shape[3], shape[2], shape[1])
    k, s = _pair(p.get("k", 1)), _pair(p.get("s", 1))
    kernel, stride = (k[1], k[0]), (s[1], s[0])  # (w, h)
    if kind in ("conv", "depthwise", "conv_add"):
        co = ifm.d if kind == "depthwise" else p["co"]
        ow = (ifm.w + 2 * (kernel[0] // 2) - kernel[0]) // stride[0] + 1
        oh = (ifm.h + 2 * (kernel[1] // 2) - kernel[1]) // stride[1] + 1
        ofm = Block(ow, oh, co)
        layer = NpuLayer("depthwise" if kind == "depthwise" else "conv", ifm, ofm, kernel, stride,
                         weights_bytes=encoded_weights, bias_channels=co, ifm_io=True, ofm_io=kind != "conv_add")  # fmt: skip
        if kind == "conv_add":
            return [layer, NpuLayer("elementwise", ofm, ofm, ifm2=ifm, op="add", ofm_io=True)]
        return [layer]
    if kind == "linear":
        return [NpuLayer("vector_product", ifm, Block(1, 1, p["co"]), weights_bytes=encoded_weights,
                         bias_channels=p["co"], ifm_io=True, ofm_io=True)]  # fmt: skip
    if kind in ("avg_pool", "max_pool"):
        ofm = Block((ifm.w - kernel[0]) // stride[0] + 1, (ifm.h - kernel[1]) // stride[1] + 1, ifm.d)
        return [NpuLayer(kind, ifm, ofm, kernel, stride, activation="none", ifm_io=True, ofm_io=True)]
    if kind == "sigmoid":
        return [NpuLayer("elementwise", ifm, ifm, op="lut", activation="lut", ifm_io=True, ofm_io=True)]
    if kind == "softmax":
        from dataclasses import replace

        from isa_models.ethos_u.program import softmax_layers

        layers = softmax_layers(shape[0], shape[1], "u85")
        return [replace(layers[0], ifm_io=True), *layers[1:-1], replace(layers[-1], ofm_io=True)]
    return [NpuLayer("elementwise", ifm, ifm, ifm2=ifm, op=kind, activation="none", ifm_io=True, ofm_io=True)]


def export(out: Path, names, configs, memory_mode: str | None = None) -> None:
    import torch

    from benchmarks.ethos_u import _export_one

    for name in names:
        kind, shape, p = CASES[name]
        torch.manual_seed(0)
        model, n_inputs = build(kind, shape, p)
        model = model.eval()
        g = torch.Generator().manual_seed(1)
        fmt = torch.channels_last if len(shape) == 4 else torch.contiguous_format
        samples = [
            tuple((torch.rand(shape, generator=g) * 2 - 1).to(memory_format=fmt) for _ in range(n_inputs))
            for _ in range(4)
        ]
        system = "Ethos_U85_SYS_DRAM_Mid" if memory_mode else None
        _export_one(out, name, model, samples, configs, extra_flags=["--enable-debug-db"], system=system,
                    memory_mode=memory_mode)  # fmt: skip


def _debug(path: Path) -> list[dict]:
    """Vela's debug database (``--enable-debug-db``): per NPU op its cycles, the block
    configuration and micro-block regor chose, and the MAC / output-unit / command cycles."""
    import io
    import xml.etree.ElementTree as ET

    tables = {}
    for t in ET.parse(path).getroot().findall("table"):
        rows = list(csv.reader(io.StringIO((t.text or "").strip())))
        tables[t.get("name")] = {r[0]: dict(zip(rows[0], r, strict=False)) for r in rows[1:]} if rows else {}
    out = []
    for op_id, perf in tables.get("perf", {}).items():
        main = tables.get("perf_debug_main", {}).get(op_id, {})
        dbg = tables.get("perf_debug", {}).get(op_id, {})

        def shape(prefix: str, table: dict) -> list[int]:
            return [int(table.get(f"{prefix}_{a}") or 0) for a in "hwc"]

        out.append({"operator": perf["operator"], "op_cycles": int(perf["op_cycles"]),
                    "mac_cycles": int(main.get("mac_cycles") or 0), "ao_cycles": int(main.get("ao_cycles") or 0),
                    "cmd_cycles": int(main.get("cmd_cycles") or 0), "traversal": main.get("traversal", ""),
                    "ifm_block_hwc": shape("ifm_block", main), "ofm_block_hwc": shape("ofm_block", main),
                    "ofm_ublock_hwc": shape("ofm_ublock", main), "ifm_hwc": shape("ifm_shape", dbg),
                    "ofm_hwc": shape("ofm_shape", dbg), "ifm_format": dbg.get("ifm_format", ""),
                    "ofm_format": dbg.get("ofm_format", ""), "weight_format": dbg.get("weight_format", ""),
                    "weight_bytes": int(dbg.get("weight_total_bytes") or 0),
                    "wd_cycles": int(tables.get("perf_debug_wd", {}).get(op_id, {}).get("wd_cycles") or 0)})  # fmt: skip
    return out


def _rows(d: Path) -> tuple[list[dict], int, str, str, list[dict]]:
    rows, weights, system, mode, debug = [], 0, "", "", []
    for delegate in sorted(d.glob("delegate*"), key=lambda p: int(p.name.removeprefix("delegate"))):
        (summary,) = delegate.glob("out_summary_*.csv")
        with summary.open() as f:
            s = next(csv.DictReader(f))
        weights += int(float(s["total_npu_encoded_weights"]))
        system, mode = s["system_config"], s["memory_mode"]
        if (delegate / "out_debug.xml").exists():
            debug += _debug(delegate / "out_debug.xml")
        with (delegate / "out_per-layer.csv").open() as f:
            for r in csv.DictReader(f):
                rows.append({"operator": r["Original Operator"], "vela_op": r["NNG Operator"],
                             "cycles": float(r["Op Cycles"]), "npu": float(r["NPU"]),
                             "sram_ac": float(r["SRAM AC"]), "dram_ac": float(r["DRAM AC"]),
                             "macs": int(float(r["MAC Count"]))})  # fmt: skip
    return rows, weights, system, mode, debug


def collect(out: Path, configs, memory_modes=("",)) -> dict:
    from importlib.metadata import version

    import ethosu.vela
    import executorch  # noqa: F401
    import torch

    data = {
        "provenance": {
            "vela": ethosu.vela.__version__,
            "executorch": version("executorch"),
            "torch": torch.__version__,
            "date": datetime.date.today().isoformat(),
            "command": "PYTHONPATH=. .venv-interop/bin/python benchmarks/ethos_u85_sweep.py --export DIR "
            "&& ... --collect DIR",
            "flow": "benchmarks/ethos_u.py _export_one: EthosUQuantizer (symmetric, per-channel), "
            "EthosUPartitioner, Vela --verbose-performance --enable-debug-db, EthosUCompileSpec defaults "
            "(keys ending @<Memory_Mode>: Ethos_U85_SYS_DRAM_Mid with that mode, --memory-mode)",
        },
        "cases": {},
    }
    for name, (kind, shape, p) in CASES.items():
        for wanted in memory_modes:
            for config in configs:
                d = out / (f"{name}_{config}" + (f"_{wanted}" if wanted else ""))
                if not any(d.glob("delegate*")):
                    continue
                rows, weights, system, mode, debug = _rows(d)
                key = f"{name}@{config}" + (f"@{wanted}" if wanted else "")
                data["cases"][key] = {"kind": kind, "shape": list(shape), "params": p, "config": config,
                                      "system": system, "memory_mode": mode, "encoded_weight_bytes": weights,
                                      "vela": rows, "vela_debug": debug}  # fmt: skip
    return data


def compare(data: dict) -> list[dict]:
    """Per case: Vela's cycles (Σ over its rows) beside refsim's for the same layers."""
    from isa_models.ethos_u import u85
    from isa_models.ethos_u.arch import get_accelerator
    from isa_models.ethos_u.layers import NpuContext, layer_cycles
    from isa_models.ethos_u.systems import resolve

    out = []
    for key, c in data["cases"].items():
        acc = get_accelerator(c["config"])
        ctx = NpuContext(acc, *resolve(acc.family, c["system"], c["memory_mode"]))
        layers = refsim_layers(c["kind"], tuple(c["shape"]), c["params"], c["encoded_weight_bytes"])
        ours, prev = 0.0, None
        for layer in layers:
            if not u85.chained(prev, layer):
                ours += layer_cycles(ctx, layer).total
            prev = layer
        vela = sum(r["cycles"] for r in c["vela"])
        out.append(
            {"case": key, "vela": vela, "refsim": round(ours), "error_pct": 100.0 * (ours - vela) / vela}
        )
    return out


def summary(rows: list[dict]) -> list[dict]:
    """Per configuration: cases, how many within 5% / 15% of Vela, the worst, Σ refsim / Σ Vela."""
    out = []
    for config in dict.fromkeys(r["case"].split("@", 1)[1] for r in rows):
        rs = [r for r in rows if r["case"].split("@", 1)[1] == config]
        errors = [abs(r["error_pct"]) for r in rs]
        out.append({"config": config, "cases": len(rs), "within_5": sum(e <= 5 for e in errors),
                    "within_15": sum(e <= 15 for e in errors), "worst_pct": max(errors),
                    "ratio": sum(r["refsim"] for r in rs) / sum(r["vela"] for r in rs)})  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--export", type=Path, help="export every case and run Vela, outputs in DIR")
    ap.add_argument("--collect", type=Path, help="read the Vela outputs in DIR into the results JSON")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--memory-mode", help="with --export: Ethos_U85_SYS_DRAM_Mid and this Memory_Mode "
                    "instead of EthosUCompileSpec's default (Sram_Only); the case keys end in @MODE")  # fmt: skip
    ap.add_argument("--memory-modes", default=",Shared_Sram", help="with --collect: the memory modes to "
                    "read ('' = the default)")  # fmt: skip
    ap.add_argument("--json", type=Path, default=RESULTS)
    ap.add_argument("--markdown", type=Path, help="also write the table as markdown")
    a = ap.parse_args(argv)
    configs = a.configs.split(",")
    if a.export:
        export(a.export, a.cases.split(","), configs, a.memory_mode)
    if a.collect:
        data = collect(a.collect, configs, tuple(a.memory_modes.split(",")))
        a.json.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {a.json} ({len(data['cases'])} cases)")
    if a.export and not a.collect:
        return 0
    data = json.loads(a.json.read_text())
    rows = compare(data)
    print(f"{'case':40} {'Vela':>9} {'refsim':>9} {'error':>8}")
    for r in rows:
        print(f"{r['case']:40} {r['vela']:9,.0f} {r['refsim']:9,} {r['error_pct']:+7.1f}%")
    worst = max(abs(r["error_pct"]) for r in rows)
    total_v, total_o = sum(r["vela"] for r in rows), sum(r["refsim"] for r in rows)
    print(f"{len(rows)} cases; worst {worst:.1f}%; Σ refsim / Σ Vela {total_o / total_v:.3f}")
    table = summary(rows)
    for t in table:
        print(f"{t['config']:15} {t['cases']} cases, {t['within_5']} within 5%, {t['within_15']} within 15%, "
              f"worst {t['worst_pct']:.1f}%, Σ refsim / Σ Vela {t['ratio']:.3f}")  # fmt: skip
    if a.markdown:
        lines = ["| configuration | cases | within 5% | within 15% | worst | Σ refsim / Σ Vela |",
                 "|---|---:|---:|---:|---:|---:|"]  # fmt: skip
        lines += [f"| {t['config']} | {t['cases']} | {t['within_5']} | {t['within_15']} | {t['worst_pct']:.1f}% | "
                  f"{t['ratio']:.3f} |" for t in table]  # fmt: skip
        lines += [
            "",
            "| case | configuration | Vela cycles | refsim cycles | error |",
            "|---|---|---:|---:|---:|",
        ]
        for r in rows:
            case, config = r["case"].split("@", 1)
            lines.append(
                f"| {case} | {config} | {r['vela']:,.0f} | {r['refsim']:,} | {r['error_pct']:+.1f}% |"
            )
        a.markdown.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

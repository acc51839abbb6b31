"""ExecuTorch or TFLM? The four MLPerf Tiny networks on four cores with their board presets.

    python benchmarks/et_vs_tflm.py [--networks kws,vww,ic,ad] [--cpus cortex-m4,cortex-m33,cortex-m55,cortex-m85]
                                    [--out benchmarks/results/et_vs_tflm.json]

Per network × core, `refsim compare` (refsim/comparison.py) of refsim's bundled ExecuTorch export
(examples/models/<net>.pte for MVE cores, <net>_m4.pte for DSP cores: ExecuTorch 1.5.1's own
cortex_m flow, deterministic random weights) beside the MLPerf Tiny reference .tflite
(tests/fixtures/tflite/, mlcommons/tiny 1afd2c98, trained weights): the same architectures,
not the same weights nor quantization, so a layer can differ in shape where the two definitions
differ (KWS's pooling window, 24x5 vs 25x5) and each side's MACs are shown. Latency on the
board's clock (the system preset: clock and memories), RAM and flash of each runtime's own
memory model. docs/compare.md says where every number comes from.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from refsim.comparison import compare

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "examples" / "models"
TFLITE = ROOT / "tests" / "fixtures" / "tflite"
REFERENCE = {
    "kws": "kws_ref_model.tflite",
    "vww": "vww_96_int8.tflite",
    "ic": "pretrainedResnet_quant.tflite",
    "ad": "ad01_int8.tflite",
}
#: The board preset per core (isa_models/cortex_m/systems.py) and whether the core has MVE.
BOARDS = {
    "cortex-m4": ("nucleo-l4r5zi", False),
    "cortex-m33": ("nucleo-u575zi", False),
    "cortex-m55": ("alif-e8", True),
    "cortex-m85": ("ek-ra8d1", True),
}


def _kib(n: int | None) -> str:
    return "-" if n is None else f"{n / 1024:,.1f}"


def _ratio(a: float | None, b: float | None) -> str:
    return "-" if not a or b is None else f"{b / a:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", default=",".join(REFERENCE))
    parser.add_argument("--cpus", default=",".join(BOARDS))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "et_vs_tflm.json")
    args = parser.parse_args()
    rows = []
    start = time.perf_counter()
    for net in args.networks.split(","):
        for cpu in args.cpus.split(","):
            system, mve = BOARDS[cpu]
            pte = MODELS / (f"{net}.pte" if mve else f"{net}_m4.pte")
            report = compare(pte, TFLITE / REFERENCE[net], cpu, system)
            for side in ("a", "b"):  # repository-relative: the results do not name the checkout
                report[side]["path"] = str(Path(report[side]["path"]).relative_to(ROOT))
            rows.append({"network": net, "cpu": cpu, "system": system, **report})
    table = Table(title="ExecuTorch (A) vs TFLM (B): latency ms, RAM KiB, flash KiB; B/A")
    for col in (
        "net",
        "core",
        "board",
        "A ms",
        "B ms",
        "B/A",
        "A RAM",
        "B RAM",
        "B/A",
        "A flash",
        "B flash",
        "B/A",
    ):
        table.add_column(col, justify="left" if col in ("net", "core", "board") else "right")
    for r in rows:
        a, b = r["a"], r["b"]
        table.add_row(
            r["network"], r["cpu"], r["system"],
            f"{a['latency_ms']:,.2f}" + ("" if a["estimate_complete"] else "+"),
            f"{b['latency_ms']:,.2f}" + ("" if b["estimate_complete"] else "+"),
            _ratio(a["latency_ms"], b["latency_ms"]),
            _kib(a["ram_bytes"]), _kib(b["ram_bytes"]), _ratio(a["ram_bytes"], b["ram_bytes"]),
            _kib(a["flash_bytes"]), _kib(b["flash_bytes"]), _ratio(a["flash_bytes"], b["flash_bytes"]),
        )  # fmt: skip
    console = Console(width=160)
    console.print(table)
    console.print("+: a lower bound (some rows have no estimate)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"elapsed_seconds": round(time.perf_counter() - start, 1), "rows": rows}, indent=1) + "\n"
    )
    console.print(f"saved {args.out}")


if __name__ == "__main__":
    main()

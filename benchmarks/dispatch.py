"""ExecuTorch's measured per-KernelCall dispatch cost per core, against the old reading-based values.

    EXECUTORCH_DIR=/tmp/et FLATBUFFERS_DIR=/tmp/flatbuffers python benchmarks/dispatch.py [--write]
        [--cores cortex-m4,cortex-m55] [--build DIR]

Builds ExecuTorch's runtime from EXECUTORCH_DIR for every core, executes the bundled programs and
synthetic chains with empty kernels under QEMU (refsim/lab/executorch/dispatch_probe.py, dispatch_measure.py), prints per core
the fitted per-execute / per-call / per-argument / per-list-element instructions and cycles and
the dispatch of each bundled program, and saves benchmarks/results/dispatch.json. ``--write``
also refreshes isa_models/cortex_m/dispatch.json, the data isa_models/cortex_m/program.py prices
dispatch with.
With CMSIS_NN_DIR (a CMSIS-NN checkout, for its headers) it also measures each cortex_m op's own
set-up around its CMSIS-NN call (ExecuTorch's backends/cortex_m/ops with CMSIS-NN stubbed).
Write EXECUTORCH_DIR/EXECUTORCH_REVISION (e.g. ``main cff6f4dd... (2026-08-22)``) first so the
provenance names the tree.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "dispatch.json"
DATA = ROOT / "isa_models" / "cortex_m" / "dispatch.json"
FLOAT_DATA = ROOT / "isa_models" / "cortex_m" / "float_ops.json"


def _dumps(data: dict) -> str:
    """JSON with one line per list of numbers (the windows), so the file stays short and diffable."""
    text = json.dumps(data, indent=1, sort_keys=True)
    return (
        re.sub(r"\[\s*([-0-9.,\s]+?)\s*\]", lambda m: "[" + re.sub(r"\s+", " ", m.group(1)) + "]", text)
        + "\n"
    )


def _print_floats(floats: dict) -> None:
    from isa_models.cortex_m.cores import get_core_model
    from isa_models.cortex_m.program import FLOAT_CYCLES

    print(
        "\nfp32 cycles: plain-loop arithmetic per element (old rule of thumb in brackets), portable kernels' extra"
    )
    print(
        f"{'core':14} {'element':>8} {'add':>10} {'mul':>10} {'div':>10} {'transc.':>12} {'mac':>9} "
        f"{'port/elem':>9} {'port/mac':>8} {'port/call':>9}"
    )
    for core, entry in floats["cores"].items():
        t, old = entry["table"]["cycles"], FLOAT_CYCLES[get_core_model(core).fpu]
        print(
            f"{core:14} {t['element']:4.1f}[{old.element:.0f}] {t['add']:5.1f}[{old.add:.0f}] "
            f"{t['mul']:5.1f}[{old.mul:.0f}] {t['div']:5.1f}[{old.div:.0f}] "
            f"{t['transcendental']:6.0f}[{old.transcendental:.0f}] {t['mac']:5.1f}[{old.add + old.mul:.0f}] "
            f"{t['portable_element']:9.1f} {t['portable_mac']:8.1f} {t['call']:9.0f}"
        )
    print("\nportable kernels: cycles per element, table-predicted / measured")
    for core, entry in floats["cores"].items():
        checks = entry["table"]["checks"]
        print(
            f"{core:14} "
            + "  ".join(f"{op} {c['predicted']:.0f}/{c['measured']:.0f}" for op, c in checks.items())
        )


def main(argv: list[str] | None = None) -> int:
    from isa_models.cortex_m.program import READING_BASED
    from refsim.lab.build import LabError
    from refsim.lab.executorch.build import Sources
    from refsim.lab.executorch.dispatch_measure import CORES, measure_all
    from refsim.lab.executorch.float_probe import measure_float_all

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"refresh {DATA.relative_to(ROOT)}")
    parser.add_argument("--cores", default=",".join(CORES))
    parser.add_argument("--no-float", action="store_true", help="skip the fp32 portable kernels")
    parser.add_argument("--build", type=Path, default=None, help="build directory (default: a temporary one)")
    args = parser.parse_args(argv)
    command = "python benchmarks/dispatch.py" + (" --write" if args.write else "")
    try:
        sources = Sources.from_environment()
        with tempfile.TemporaryDirectory(prefix="refsim-dispatch-") as tmp:
            build = args.build or Path(tmp)
            cores = args.cores.split(",")
            cmsis = os.environ.get("CMSIS_NN_DIR")
            cmsis_include = Path(cmsis) / "Include" if cmsis else None
            data = measure_all(sources, ROOT / "examples" / "models", build, cores, command, cmsis_include)
            floats = None if args.no_float else measure_float_all(sources, build, cores, command)
    except LabError as error:
        print(f"refsim: error: {error}", file=sys.stderr)
        return 2
    old = READING_BASED
    print(
        f"reading-based (old): per call {old.loop} + {old.per_argument}/argument instructions, x{old.cpi} cycles"
    )
    print(
        f"{'core':14} {'':6} {'execute':>8} {'call':>7} {'/arg':>6} {'/list':>6} {'/elem':>6} {'maxerr':>7}"
    )
    for core, entry in data["cores"].items():
        fit = entry["fit"]
        for what in ("instructions", "cycles"):
            f = fit[what]
            print(
                f"{core:14} {what[:6]:6} {f['execute']:8.1f} {f['call']:7.1f} {f['argument']:6.2f} "
                f"{f['list']:6.2f} {f['list_element']:6.2f} {fit['max_call_error'][what]:7.1%}"
            )
    if any("setup" in e for e in data["cores"].values()):
        print(
            f"\ncortex_m op set-up around its CMSIS-NN call, instructions/cycles (old {old.cortex_m_setup} x {old.cpi})"
        )
        for core, entry in data["cores"].items():
            cells = [f"{op.split('::')[1].split('.')[0]} {v['instructions']:.0f}/{v['cycles']:.0f}"
                     for op, v in entry.get("setup", {}).items()]  # fmt: skip
            print(f"{core:14} " + "  ".join(cells))
    print(f"\n{'program':10} " + " ".join(f"{c.removeprefix('cortex-'):>12}" for c in data["cores"]))
    for name in (n for n in data["programs"] if not n.startswith(("chain_", "lists_"))):
        cells = []
        for entry in data["cores"].values():
            prog = entry["windows"][name]
            cells.append(f"{sum(prog['instructions']):>5}i/{sum(prog['cycles']):>5}c")
        print(f"{name:10} " + " ".join(cells))
    if floats is not None:
        _print_floats(floats)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    summary = {
        "provenance": data["provenance"],
        "cores": {c: {"fit": e["fit"], "setup": e.get("setup", {})} for c, e in data["cores"].items()},
    }
    if floats is not None:
        summary["fp32"] = {c: e["table"] for c, e in floats["cores"].items()}
    RESULTS.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    if args.write:
        DATA.write_text(_dumps(data))
        print(f"wrote {DATA.relative_to(ROOT)}")
        if floats is not None:
            FLOAT_DATA.write_text(_dumps(floats))
            print(f"wrote {FLOAT_DATA.relative_to(ROOT)}")
    print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

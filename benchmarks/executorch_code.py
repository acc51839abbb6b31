"""ExecuTorch's own flash per core: the runtime core a program needs and each operator's code.

    EXECUTORCH_DIR=/tmp/et FLATBUFFERS_DIR=/tmp/fb CMSIS_NN_DIR=/work/ext/cmsis-nn-main \\
        python benchmarks/executorch_code.py [--write] [--cores cortex-m4,cortex-m55] [--build DIR]

Builds ExecuTorch (EXECUTORCH_DIR: ``git archive <rev> runtime schema extension/data_loader
kernels/portable kernels/quantized backends/cortex_m``; write its revision to
EXECUTORCH_DIR/EXECUTORCH_REVISION) for every core and measures its linked ELFs
(refsim/lab/executorch/code_size.py). Prints per core the runtime core against ExecuTorch's published size
and per op its kernel / wrapper / rodata bytes; ``--write`` refreshes
refsim/memory/executorch_code.json, the data ``refsim inspect --memory`` reads.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "refsim" / "memory" / "executorch_code.json"


def dumps(data: dict) -> str:
    """JSON with each function list on one line (short, diffable)."""
    import re

    text = json.dumps(data, indent=1, sort_keys=True)
    return (
        re.sub(r"\[\s*([^\[\]{}]*?)\s*\]", lambda m: "[" + re.sub(r"\s*\n\s*", " ", m.group(1)) + "]", text)
        + "\n"
    )


def generate(cores: list[str], build: Path | None, command: str) -> dict:
    from refsim.lab.executorch.build import DispatchProbeError, Sources
    from refsim.lab.executorch.code_size import measure_all

    sources = Sources.from_environment()
    cmsis = os.environ.get("CMSIS_NN_DIR")
    if not cmsis:
        raise DispatchProbeError(
            "et code: set CMSIS_NN_DIR to a CMSIS-NN checkout (the cortex_m ops' headers)"
        )
    with tempfile.TemporaryDirectory(prefix="refsim-etcode-") as tmp:
        return measure_all(
            sources, Path(cmsis) / "Include", ROOT / "examples" / "models", build or Path(tmp), cores, command
        )


def main(argv: list[str] | None = None) -> int:
    from refsim.lab.build import LabError
    from refsim.lab.executorch.dispatch_measure import CORES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"refresh {DATA.relative_to(ROOT)}")
    parser.add_argument("--cores", default=",".join(CORES))
    parser.add_argument("--build", type=Path, default=None, help="build directory (default: a temporary one)")
    args = parser.parse_args(argv)
    command = "python benchmarks/executorch_code.py" + (" --write" if args.write else "")
    try:
        data = generate(args.cores.split(","), args.build, command)
    except LabError as error:
        print(f"refsim: error: {error}", file=sys.stderr)
        return 2
    published = data["published"]["bytes"]
    print(f"runtime core, bytes (published {published:,}: {data['published']['config']})")
    print(f"{'core':14} {'total':>8} {'ET objs':>8} {'ET hdrs':>8} {'libs':>8} {'vs publ.':>8}")
    for core, entry in data["cores"].items():
        if "same_build_as" in entry:
            print(f"{core:14} same build as {entry['same_build_as']}")
            continue
        r = entry["runtime"]
        print(
            f"{core:14} {r['bytes']:8,} {r['executorch']:8,} {r['executorch_headers']:8,} "
            f"{r['libraries']:8,} {r['bytes'] / published - 1:+8.1%}"
        )
    measured = [c for c, e in data["cores"].items() if "same_build_as" not in e]
    print("\noperator code, bytes: kernel+wrapper+rodata per core")
    print(f"{'op':48} " + " ".join(f"{c.removeprefix('cortex-'):>15}" for c in measured))
    for op in data["sources"]:
        cells = []
        for c in measured:
            o = data["cores"][c]["ops"][op]
            cells.append(f"{o['kernel_bytes']:>6}+{o['wrapper_bytes']:>4}+{o['rodata_bytes']:>3}")
        print(f"{op:48} " + " ".join(cells))
    if args.write:
        DATA.write_text(dumps(data))
        print(f"wrote {DATA.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

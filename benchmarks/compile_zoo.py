"""`refsim compile` on the zoo: per model and target, how well int8 tracks float, memory, time.

    .venv-interop/bin/python benchmarks/compile_zoo.py [--targets cortex-m55 cortex-m4] [--samples 256]

Needs torch + torchao (the interop venv has them). Per zoo model × target: compile time
in-process (torch imported and warm), SNR and top-1 agreement of refsim's dequantized int8
outputs against the float model on ``--samples`` inputs drawn like the calibration data, the
arena of every planner, our ``best``, ExecuTorch 1.5.1's own export of the architecture
(examples/models/models.json; M55 and KWS on M4 only), the live-bytes lower bound, constant
bytes. Then ``refsim compile zoo:kws`` timed as a whole process, twice (the second warm).
``--interop`` (needs executorch) adds, per model on M55, ExecuTorch's own flow on the same
module and calibration data: its input/output quantization beside ours, the largest output
difference in LSB with our observers and with ExecuTorch's (``observers="executorch"``), and
its SNR. Prints tables; writes benchmarks/results/compile_zoo.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from compiler import zoo  # noqa: E402
from compiler.api import compile  # noqa: E402
from compiler.evaluate import agreement, run_float_inputs  # noqa: E402

BUNDLED = json.loads((ROOT / "examples" / "models" / "models.json").read_text())


def executorch_arena(name: str, target: str) -> int | None:
    key = name if target == "cortex-m55" else f"{name}_m4" if target == "cortex-m4" else None
    entry = BUNDLED.get(key or "")
    return entry["arena_bytes"][0] if entry else None


def measure(name: str, target: str, samples: int) -> dict:
    spec = zoo.MODELS[name]
    model = zoo.build(spec, channels_last=False)
    calibration = zoo.calibration(spec, channels_last=False)
    t0 = time.perf_counter()
    result = compile(model, (calibration[0],), target=target, calibration=calibration)
    seconds = time.perf_counter() - t0
    xs = zoo.evaluation_set(spec, samples)
    with torch.no_grad():
        reference = model(xs).numpy()
    got = agreement(reference, run_float_inputs(result.pte, xs.numpy()))
    plan = result.planned.plan
    return {
        "model": name,
        "target": target,
        "compile_seconds": seconds,
        "snr_db": got.snr_db,
        "top1": got.top1,
        "samples": got.samples,
        "arena_bytes": plan.arena_bytes,
        "planner": plan.algorithm,
        "planners": {k: p.arena_bytes for k, p in result.planned.plans.items()},
        "executorch_arena_bytes": executorch_arena(name, target),
        "lower_bound": plan.lower_bound,
        "constant_bytes": result.constant_bytes,
        "pte_bytes": len(result.pte),
        "fp32_layers": [x.name for x in result.layers if x.status == "fp32"],
    }


def max_lsb(a: bytes, b: bytes, name: str, count: int) -> int:
    import numpy as np

    from kernels_py.quantize import quantize_per_tensor
    from refsim.runtime import Program

    programs = [Program.load(a), Program.load(b)]
    methods = [p.method("forward") for p in programs]
    worst = 0
    for x in zoo.evaluation_set(zoo.MODELS[name], count).numpy():
        outs = []
        for p, method in zip(programs, methods, strict=True):
            s, z = p.constant_method("forward_input0_scale"), p.constant_method("forward_input0_zp")
            outs.append(
                method.execute([quantize_per_tensor(x[None], s, z, -128, 127, np.int8)])[0].astype(np.int32)
            )
        worst = max(worst, int(np.abs(outs[0] - outs[1]).max()))
    return worst


def interop(name: str, samples: int) -> dict:
    from refsim.runtime import Program
    from tests.compiler import executorch_flow

    spec = zoo.MODELS[name]
    calibration = zoo.calibration(spec, channels_last=False)
    theirs = executorch_flow.export(name, "M55", calibration)
    ours = compile(
        zoo.build(spec, channels_last=False), (calibration[0],), target="cortex-m55", calibration=calibration
    ).pte
    cl = zoo.calibration(spec, channels_last=True)
    same = compile(
        zoo.build(spec, channels_last=True),
        (cl[0],),
        target="cortex-m55",
        calibration=cl,
        observers="executorch",
    ).pte
    xs = zoo.evaluation_set(spec, samples)
    with torch.no_grad():
        reference = zoo.build(spec, channels_last=False)(xs).numpy()

    def io(data: bytes) -> dict:
        p = Program.load(data)
        return {
            k: (p.constant_method(f"forward_{k}_scale"), p.constant_method(f"forward_{k}_zp"))
            for k in ("input0", "output0")
        }

    return {
        "model": name,
        "io_ours": io(ours),
        "io_executorch": io(theirs),
        "max_lsb_own_observers": max_lsb(ours, theirs, name, samples),
        "max_lsb_executorch_observers": max_lsb(same, theirs, name, samples),
        "snr_ours": agreement(reference, run_float_inputs(ours, xs.numpy())).snr_db,
        "snr_executorch": agreement(reference, run_float_inputs(theirs, xs.numpy())).snr_db,
    }


def time_cli(refsim: str) -> list[float]:
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(2):
            t0 = time.perf_counter()
            cmd = [refsim, "compile", "zoo:kws", "--target", "cortex-m55", "-o", f"{tmp}/kws.pte", "-q"]
            subprocess.run(cmd, check=True, capture_output=True)
            out.append(time.perf_counter() - t0)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", nargs="+", default=["cortex-m55", "cortex-m4"])
    parser.add_argument("--models", nargs="+", default=sorted(zoo.MODELS))
    parser.add_argument("--samples", type=int, default=256)
    parser.add_argument("--refsim", default=str(Path(sys.executable).parent / "refsim"))
    parser.add_argument(
        "--interop", action="store_true", help="beside ExecuTorch's own flow (needs executorch)"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "compile_zoo.json")
    args = parser.parse_args(argv)
    rows = [measure(n, t, args.samples) for n in args.models for t in args.targets]
    cli = time_cli(args.refsim)
    table = Table(title=f"refsim compile on the zoo ({args.samples} evaluation inputs)")
    for col in (
        "model",
        "target",
        "SNR dB",
        "top-1",
        "arena",
        "ExecuTorch",
        "bound",
        "planners",
        "constants",
        "compile s",
    ):
        table.add_column(col, justify="left" if col in ("model", "target", "planners") else "right")
    for r in rows:
        et = r["executorch_arena_bytes"]
        planners = " ".join(f"{k}={v:,}" for k, v in r["planners"].items())
        table.add_row(
            r["model"], r["target"], f"{r['snr_db']:.1f}", f"{r['top1']:.3f}", f"{r['arena_bytes']:,}",
            "—" if et is None else f"{et:,}", f"{r['lower_bound']:,}", planners, f"{r['constant_bytes']:,}",
            f"{r['compile_seconds']:.1f}",
        )  # fmt: skip
    console = Console(width=200)
    console.print(table)
    console.print(f"`refsim compile zoo:kws` as a process: cold {cli[0]:.1f} s, warm {cli[1]:.1f} s")
    side = [interop(n, min(args.samples, 64)) for n in args.models] if args.interop else []
    if side:
        t = Table(title="beside ExecuTorch 1.5.1's own flow (cortex-m55, same module and calibration)")
        for col in (
            "model",
            "input q ours / ET",
            "output q ours / ET",
            "max LSB own obs.",
            "max LSB ET obs.",
            "SNR ours / ET",
        ):
            t.add_column(col)
        for r in side:
            fmt = lambda q: f"{q[0]:.6g},{q[1]}"  # noqa: E731
            t.add_row(
                r["model"], f"{fmt(r['io_ours']['input0'])} / {fmt(r['io_executorch']['input0'])}",
                f"{fmt(r['io_ours']['output0'])} / {fmt(r['io_executorch']['output0'])}",
                str(r["max_lsb_own_observers"]), str(r["max_lsb_executorch_observers"]),
                f"{r['snr_ours']:.1f} / {r['snr_executorch']:.1f}",
            )  # fmt: skip
        console.print(t)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rows": rows, "cli_kws_seconds": cli, "interop": side}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

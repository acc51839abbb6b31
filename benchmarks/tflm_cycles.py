"""TFLM's cycles: refsim's estimate of the four MLPerf Tiny reference .tflite models against the real
TFLM + CMSIS-NN measured under QEMU, and against the published silicon latencies.

    .venv/bin/python benchmarks/tflm_cycles.py [--markdown]

(a) Per model and core, refsim's `estimate_method` of the reference .tflite (tests/fixtures/tflite/)
    on the core's ideal system against the TFLM lab's instruction-timed cycles of the same model
    built and run the way TFLM builds it (refsim/memory/tflm_measured.json ``invoke``: per op
    the op's invoke window, and the total = Invoke's entry + every op + TFLM's loop after each).
    The estimate prices the CMSIS-NN calls with the calibration of TFLM's own CMSIS-NN build
    (cmsis-nn-tflm: -O2, TFLM's flags; fitted on the calibration sweep, never on these models)
    and TFLM's kernel and loop work with isa_models/cortex_m/tflm_dispatch.json (the same
    windows minus the CMSIS-NN calls: those parts are consistent with the windows by
    construction). Beside it, the same estimate priced with CMSIS-NN's own -Ofast build
    (cmsis-nn, what ExecuTorch links): what ignoring TFLM's build profile would cost.
(b) The published MLPerf Tiny TFLM + CMSIS-NN rows (REFERENCE.md section 4: EK-RA6M4 Cortex-M33
    at 200 MHz, EK-RA8D1 Cortex-M85 at 480 MHz) re-estimated on the same reference .tflite models
    with the boards' system presets (flash wait states, caches). Nothing is fitted to them; each
    row's error is named in docs/tflm-cycles.md.

Results: benchmarks/results/tflm_cycles.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FIXTURES = ROOT / "tests" / "fixtures" / "tflite"
MEASURED = ROOT / "refsim" / "memory" / "tflm_measured.json"
RESULTS = ROOT / "benchmarks" / "results" / "tflm_cycles.json"
MODELS = {
    "kws": "kws_ref_model.tflite",
    "vww": "vww_96_int8.tflite",
    "ic": "pretrainedResnet_quant.tflite",
    "ad": "ad01_int8.tflite",
}
#: REFERENCE.md section 4: (board preset, core, clock MHz, model -> ms).
PUBLISHED = (
    ("ek-ra6m4", "cortex-m33", 200.0, {"kws": 50.6, "vww": 162.0, "ic": 246.0, "ad": 4.6}),
    ("ek-ra8d1", "cortex-m85", 480.0, {"kws": 3.47, "vww": 13.4, "ic": 8.48, "ad": 0.53}),
)


def measured_total(entry: dict) -> int:
    return int(entry["invoke_entry"]["cycles"] + sum(o["cycles"] + o["after_cycles"] for o in entry["ops"]))


def _estimate(path: Path, core: str, **kw):
    from refsim.runtime import Program
    from refsim.runtime.estimate import estimate_method

    program = Program.load(path)
    return estimate_method(program, program.method(program.method_names[0]), cpu=core, **kw)


def measured_table() -> list[dict]:
    invoke = json.loads(MEASURED.read_text())["invoke"]
    rows = []
    for model, file in MODELS.items():
        for core, entry in sorted(invoke[file].items()):
            est = _estimate(FIXTURES / file, core)
            et = _estimate(FIXTURES / file, core, library="cmsis-nn")
            ops = [r for r in est.rows if r.index is not None]
            et_ops = [r for r in et.rows if r.index is not None]
            if len(ops) != len(entry["ops"]):
                raise SystemExit(f"{file} on {core}: {len(ops)} estimated ops, {len(entry['ops'])} measured")
            per_op = []
            for k, (r, m, e) in enumerate(zip(ops, entry["ops"], et_ops, strict=True)):
                per_op.append(
                    {
                        "index": k,
                        "op": m["op"],
                        "variant": r.variant,
                        "measured": m["cycles"],
                        "estimated": round(r.cost.cycles),
                        "error": round(r.cost.cycles / m["cycles"] - 1, 4),
                        "estimated_cmsis_nn_ofast": round(e.cost.cycles),
                    }
                )
            total = measured_total(entry)
            big = [p for p in per_op if p["measured"] >= 0.01 * total]
            rows.append(
                {
                    "model": model,
                    "core": core,
                    "library": est.library,
                    "measured_cycles": total,
                    "estimated_cycles": est.cycles_total,
                    "error": round(est.cycles_total / total - 1, 4),
                    "complete": est.complete,
                    "ofast_estimated_cycles": et.cycles_total,
                    "ofast_error": round(et.cycles_total / total - 1, 4),
                    "op_error_max_abs": max(abs(p["error"]) for p in per_op),
                    "op_error_max_abs_ge_1pct": max((abs(p["error"]) for p in big), default=0.0),
                    "worst_op": max(per_op, key=lambda p: abs(p["error"])),
                    "ops": per_op,
                }
            )
    return rows


def published_table() -> list[dict]:
    rows = []
    for system, core, clock, latencies in PUBLISHED:
        for model, published_ms in latencies.items():
            est = _estimate(FIXTURES / MODELS[model], core, system=system, clock_mhz=clock)
            ideal = _estimate(FIXTURES / MODELS[model], core, clock_mhz=clock)
            rows.append(
                {
                    "board": system,
                    "core": core,
                    "clock_mhz": clock,
                    "model": model,
                    "file": MODELS[model],
                    "library": est.library,
                    "complete": est.complete,
                    "estimated_cycles": est.cycles_total,
                    "estimated_ms": round(est.latency_ms, 4),
                    "ideal_system_ms": round(ideal.latency_ms, 4),
                    "published_ms": published_ms,
                    "error": round(est.latency_ms / published_ms - 1, 4),
                }
            )
    return rows


def markdown(results: dict) -> str:
    out = [
        "(a) refsim vs the real TFLM + CMSIS-NN under QEMU (instruction-timed cycles, ideal system)",
        "",
        "| model | core | measured | estimated | error | worst op (error) | max op error (ops ≥1% of total) "
        "| with CMSIS-NN -Ofast (ExecuTorch's build) | error |",
        "|---|---|--:|--:|--:|---|--:|--:|--:|",
    ]
    for r in results["measured"]:
        w = r["worst_op"]
        out.append(
            f"| {r['model']} | {r['core']} | {r['measured_cycles']:,} | {r['estimated_cycles']:,}"
            f"{'' if r['complete'] else ' (lower bound)'} | {100 * r['error']:+.2f}% | #{w['index']} {w['op']} "
            f"({100 * w['error']:+.1f}%) | {100 * r['op_error_max_abs_ge_1pct']:.2f}% | "
            f"{r['ofast_estimated_cycles']:,} | {100 * r['ofast_error']:+.2f}% |"
        )
    out += [
        "",
        "(b) published MLPerf Tiny TFLM + CMSIS-NN rows, re-estimated on the same reference .tflite models",
        "",
        "| board | core | MHz | model | estimated ms | ideal-system ms | published ms | error |",
        "|---|---|--:|---|--:|--:|--:|--:|",
    ]
    for r in results["published"]:
        out.append(
            f"| {r['board']} | {r['core']} | {r['clock_mhz']:g} | {r['model']} | {r['estimated_ms']:.3f}"
            f"{'' if r['complete'] else ' (lower bound)'} | {r['ideal_system_ms']:.3f} | {r['published_ms']:.2f} | "
            f"{100 * r['error']:+.1f}% |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--markdown", action="store_true", help="print the tables of the saved results")
    args = parser.parse_args(argv)
    if args.markdown:
        print(markdown(json.loads(RESULTS.read_text())))
        return 0
    results = {"measured": measured_table(), "published": published_table()}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    print(markdown(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""TFLM's int8 reference kernels on a Cortex-M under QEMU against refsim's (kernels_py/tflm).

benchmarks/tflm_reference_device/probe.cc runs, per drawn quantization (input and output
float32 scales and int8 zero points), TFLM's Prepare arithmetic (its float and double
expressions, calling TFLM's QuantizeMultiplier, CalculateInputRadius,
DownScaleInt32ToInt16Multiplier, FloatToQuantizedType) and TFLM's Eval templates over every input
byte: QUANTIZE int8->int8, RELU, RELU6, LOGISTIC, TANH, HARD_SWISH, DEQUANTIZE, and QUANTIZE
float32->int8 on a vector of floats including +-inf, NaN, +-3e9 and exact rounding midpoints.
It is built with TFLM's flags (tensorflow/lite/micro/tools/make: -O2 -std=c++17 ...) for each
variant and run under qemu-system-arm; the report counts the bytes (and float bits) that differ
from kernels_py/tflm, and the cases refsim refuses (TFLM's Prepare fails or its arithmetic is
undefined; the device then computes something, which is not compared).

    python benchmarks/tflm_reference_device.py [--variants cortex-m4 ...] [--sets 400] [--json F]

Variants: TFLM's TARGET_ARCH=cortex-m4 default (no FPU: soft float, libgcc's conversions),
cortex-m4+fp (FPv4-SP, hard float), cortex-m55 (hard float, MVE), cortex-m3 (no FPU).
Needs arm-none-eabi-gcc, qemu-system-arm and TFLM's sources with gemmlowp and ruy (``TFLM_SRC``,
default /work/ext/tflite-micro; ``TFLM_DOWNLOADS``, default /work/ext/tflm-downloads).
Results: benchmarks/results/tflm_reference_device.json.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import struct
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from kernels_py.tflm import activations as act
from kernels_py.tflm import quantize as qz
from refsim.qemu.cores import STACK_SIZE, get_core
from refsim.qemu.run import qemu_command

ROOT = Path(__file__).resolve().parents[1]
PROBE = ROOT / "benchmarks" / "tflm_reference_device" / "probe.cc"
BOARDS = ROOT / "kernels_c" / "boards"
TFLM = Path(os.environ.get("TFLM_SRC", "/work/ext/tflite-micro"))
DOWNLOADS = Path(os.environ.get("TFLM_DOWNLOADS", "/work/ext/tflm-downloads"))
TFLM_CXXFLAGS = (
    "-O2", "-std=c++17", "-fno-rtti", "-fno-exceptions", "-fno-threadsafe-statics", "-ffunction-sections",
    "-fdata-sections", "-DTF_LITE_STATIC_MEMORY", "-DNDEBUG", "-mthumb",
)  # fmt: skip
#: TFLM sources the probe links (QuantizeMultiplier, CalculateInputRadius; MultiplyByQuantizedMultiplier).
SOURCES = (
    "tensorflow/lite/kernels/internal/quantization_util.cc",
    "tensorflow/lite/kernels/internal/common.cc",
)
VARIANTS = {
    "cortex-m4": ("cortex-m4", ("-mcpu=cortex-m4+nofp", "-mfloat-abi=soft")),
    "cortex-m4+fp": ("cortex-m4", ("-mcpu=cortex-m4", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard")),
    "cortex-m55": ("cortex-m55", ("-mcpu=cortex-m55", "-mfpu=auto", "-mfloat-abi=hard")),
    "cortex-m3": ("cortex-m3", ("-mcpu=cortex-m3", "-mfloat-abi=soft")),
}
OPS = ("requantize", "relu", "relu6", "logistic", "tanh", "hard_swish")


def _run(cmd: list[str], cwd: Path) -> None:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd[:3])} ... failed:\n{done.stderr[-3000:]}")


def build(variant: str, out: Path) -> Path:
    core = get_core(VARIANTS[variant][0])
    flags = list(VARIANTS[variant][1])
    mem = [f"-DRS_STACK_SIZE={STACK_SIZE:#x}"]
    for name, region in (("CODE", core.code), ("RAM", core.ram), ("BULK", core.bulk)):
        mem += [f"-DRS_{name}_ORIGIN={region.origin:#x}", f"-DRS_{name}_LENGTH={region.length:#x}"]
    _run(
        ["arm-none-eabi-gcc", "-E", "-P", "-x", "c", *mem, str(BOARDS / "cortex_m.ld.in"), "-o", "link.ld"],
        out,
    )
    for c in ("startup.c", "semihost.c"):
        _run(
            ["arm-none-eabi-gcc", *flags, "-mthumb", "-O2", "-std=c11", f"-I{BOARDS}", "-c", str(BOARDS / c)],
            out,
        )
    includes = [f"-I{TFLM}", f"-I{DOWNLOADS / 'gemmlowp'}", f"-I{DOWNLOADS / 'ruy'}", f"-I{BOARDS}"]
    objects = []
    for k, src in enumerate((str(PROBE), *(str(TFLM / s) for s in SOURCES))):
        _run(["arm-none-eabi-g++", *flags, *TFLM_CXXFLAGS, *includes, "-c", src, "-o", f"o{k}.o"], out)
        objects.append(f"o{k}.o")
    _run(
        ["arm-none-eabi-g++", *flags, "-mthumb", "-nostartfiles", "-T", "link.ld", "-Wl,--gc-sections",
         "--specs=nosys.specs", "startup.o", "semihost.o", *objects, "-lm", "-o", "probe.elf"],
        out,
    )  # fmt: skip
    return out / "probe.elf"


def draw_sets(n: int, seed: int) -> list[tuple[float, int, float, int]]:
    """Scales as the hypothesis tests draw them (usual values, powers of two, 2^-30 .. 2^20)."""
    rng = np.random.default_rng(seed)

    def scale() -> float:
        kind = rng.integers(0, 10)
        if kind == 0:
            return float(np.float32(2.0 ** int(rng.integers(-30, 21))))
        if kind <= 5:
            return float(np.float32(rng.uniform(2.0**-12, 1.0)))
        return float(np.float32(math.ldexp(rng.uniform(0.5, 1.0), int(rng.integers(-30, 21)))))

    sets = [(scale(), int(rng.integers(-128, 128)), scale(), int(rng.integers(-128, 128))) for _ in range(n)]
    sets[:3] = [(0.05, 3, 1 / 256, -128), (0.02, -1, 1 / 128, 0), (1.0, 0, 1.0, 0)]
    return sets


def float_inputs(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed + 1)
    special = [np.inf, -np.inf, np.nan, 3e9, -3e9, 2.0**31, -(2.0**31), 0.0, -0.0, 0.5, -0.5, 1.5, -2.5]
    x = np.concatenate([special, rng.normal(0, 50, 1000), rng.uniform(-1e6, 1e6, 500)]).astype(np.float32)
    return x


def _reference_tables(s) -> dict[str, np.ndarray | None]:
    in_scale, in_zp, out_scale, out_zp = s
    tables: dict[str, np.ndarray | None] = dict.fromkeys(OPS)
    m, sh = qz.requantize_params(in_scale, out_scale)
    if sh <= 30:
        tables["requantize"] = qz.requantize_table(m, sh, in_zp, out_zp)
    p = act.relu_params(in_scale, in_zp, out_scale, out_zp)
    if p.output_shift <= 30:
        tables["relu"] = act.relu_table(p)
    tables["relu6"] = act.relu6_table(*act.relu6_bounds(in_scale, in_zp))
    try:
        sp = act.sigmoid_params(in_scale, in_zp)
        tables["logistic"], tables["tanh"] = act.logistic_table(sp), act.tanh_table(sp)
    except ValueError:
        pass
    with contextlib.suppress(ValueError):
        tables["hard_swish"] = act.hard_swish_table(act.hard_swish_params(*s))
    return tables


def measure(variant: str, sets, x: np.ndarray) -> dict:
    core = get_core(VARIANTS[variant][0])
    blob = struct.pack("<I", len(sets)) + b"".join(struct.pack("<fifi", *s) for s in sets)
    blob += struct.pack("<I", x.size) + x.tobytes()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        elf = build(variant, work)
        (work / "in.bin").write_bytes(blob)
        done = subprocess.run(
            qemu_command(core, elf, "in.bin out.bin"), cwd=work, capture_output=True, timeout=900, check=False
        )
        if done.returncode:
            raise SystemExit(f"{variant}: the probe exited {done.returncode}: {done.stderr[-500:]!r}")
        out = (work / "out.bin").read_bytes()
    per_set = 6 * 256 + 1024 + x.size
    assert len(out) == per_set * len(sets), (len(out), per_set * len(sets))
    counts = {
        op: {"compared": 0, "refused": 0, "bytes_differ": 0} for op in (*OPS, "dequantize", "quantize_float")
    }
    finite = np.isfinite(x) & (np.abs(x.astype(np.float64)) < 2.0**31)
    for k, s in enumerate(sets):
        chunk = out[k * per_set : (k + 1) * per_set]
        device = np.frombuffer(chunk[: 6 * 256], np.int8).reshape(6, 256)
        for j, (op, table) in enumerate(_reference_tables(s).items()):
            if table is None:
                counts[op]["refused"] += 1
                continue
            counts[op]["compared"] += 1
            counts[op]["bytes_differ"] += int(np.count_nonzero(device[j] != table))
        deq = np.frombuffer(chunk[6 * 256 : 6 * 256 + 1024], np.float32)
        ours = qz.dequantize(np.arange(-128, 128, dtype=np.int8), s[0], s[1])
        counts["dequantize"]["compared"] += 1
        counts["dequantize"]["bytes_differ"] += int(
            np.count_nonzero(deq.view(np.uint32) != ours.view(np.uint32))
        )
        qf = np.frombuffer(chunk[6 * 256 + 1024 :], np.int8)
        ours_q = qz.quantize_float(x, s[2], s[3])
        counts["quantize_float"]["compared"] += 1
        counts["quantize_float"]["bytes_differ"] += int(np.count_nonzero(qf != ours_q))
        with np.errstate(over="ignore", invalid="ignore"):
            outside = ~(finite & (np.abs(x.astype(np.float64) / np.float32(s[2])) < 2.0**31))
        qf_counts = counts["quantize_float"]
        qf_counts["values_outside_int32_or_nan"] = qf_counts.get("values_outside_int32_or_nan", 0) + int(
            outside.sum()
        )
        qf_counts["bytes_differ_outside_int32_or_nan"] = qf_counts.get(
            "bytes_differ_outside_int32_or_nan", 0
        ) + int(np.count_nonzero((qf != ours_q) & outside))
    return {"qemu_core": core.name, "gcc_flags": [*VARIANTS[variant][1], *TFLM_CXXFLAGS], "ops": counts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--sets", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--json", type=Path, default=ROOT / "benchmarks" / "results" / "tflm_reference_device.json"
    )
    args = parser.parse_args()
    gcc = subprocess.run(
        ["arm-none-eabi-gcc", "--version"], capture_output=True, text=True, check=True
    ).stdout
    qemu = subprocess.run(["qemu-system-arm", "--version"], capture_output=True, text=True, check=True).stdout
    sets, x = draw_sets(args.sets, args.seed), float_inputs(args.seed)
    report = {
        "what": "TFLM's int8 reference kernels (with their Prepare arithmetic) on Cortex-M (QEMU) vs kernels_py/tflm",
        "tflm": "tensorflow/tflite-micro 90b983c2",
        "toolchain": gcc.splitlines()[0],
        "qemu": qemu.splitlines()[0],
        "date": datetime.date.today().isoformat(),
        "seed": args.seed,
        "quantization_sets": len(sets),
        "float_inputs": int(x.size),
        "variants": {},
    }
    for v in args.variants:
        report["variants"][v] = measure(v, sets, x)
        print(v, json.dumps(report["variants"][v]["ops"]))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()

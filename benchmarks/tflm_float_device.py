"""TFLM's float32 kernels on a Cortex-M under QEMU against refsim's (kernels_py/tflm_float): what a
device's FPU contraction (VFMA) and newlib's libm change in the last bits.

benchmarks/tflm_float_device/probe.cc calls TFLM's own reference kernels
(``reference_ops::FullyConnected``, ``Logistic``, ``Softmax``, float) and newlib's ``expf`` /
``tanhf``; it is built with TFLM's flags for an FPU core (tensorflow/lite/micro/tools/make:
``-O2 -std=c++17``, ``-mcpu=... -mfloat-abi=hard``, the FPU of cortex_m_generic_makefile.inc)
and arm-none-eabi-gcc's default ``-ffp-contract=fast``, linked with the toolchain's newlib
``libm``, and run under qemu-system-arm (whose FPU emulation is IEEE exact, VFMA fused). The same
inputs go through refsim's kernels; the report counts values whose bits differ and the largest
difference in ULPs.

    python benchmarks/tflm_float_device.py [--variants cortex-m4 cortex-m4+fp ...] [--json F]

Variants: TFLM's TARGET_ARCH=cortex-m4 (its default: no FPU, soft float), cortex-m4+fp (FPv4-SP,
hard float), the same with -ffp-contract=off (the control: no VFMA), cortex-m55 (hard float).

Needs arm-none-eabi-gcc, qemu-system-arm and TFLM's sources with gemmlowp and ruy
(``TFLM_SRC``, default /work/ext/tflite-micro, and ``TFLM_DOWNLOADS``, default
/work/ext/tflm-downloads). Results: benchmarks/results/tflm_float_device.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import struct
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from kernels_py.tflm_float.activations import expf, logistic_f32, tanh_f32
from kernels_py.tflm_float.conv import conv_2d_f32, depthwise_conv_2d_f32
from kernels_py.tflm_float.fully_connected import fully_connected_f32
from kernels_py.tflm_float.softmax import softmax_f32
from refsim.qemu.cores import STACK_SIZE, get_core
from refsim.qemu.run import qemu_command

ROOT = Path(__file__).resolve().parents[1]
PROBE = ROOT / "benchmarks" / "tflm_float_device" / "probe.cc"
BOARDS = ROOT / "kernels_c" / "boards"
TFLM = Path(os.environ.get("TFLM_SRC", "/work/ext/tflite-micro"))
DOWNLOADS = Path(os.environ.get("TFLM_DOWNLOADS", "/work/ext/tflm-downloads"))
CMSIS_NN = Path(os.environ.get("TFLM_CMSIS_NN", "/work/ext/cmsis-nn-tflm"))
#: TFLM's kernel sources whose float path reaches a multiply-accumulate loop.
TFLM_KERNELS = (
    "cmsis_nn/conv.cc", "cmsis_nn/depthwise_conv.cc", "cmsis_nn/fully_connected.cc", "conv.cc",
    "depthwise_conv.cc", "fully_connected.cc",
)  # fmt: skip
#: TFLM's Makefile: KERNEL_OPTIMIZATION_LEVEL and CXXFLAGS (no -ffp-contract: GCC's default).
TFLM_CXXFLAGS = (
    "-O2", "-std=c++17", "-fno-rtti", "-fno-exceptions", "-fno-threadsafe-statics", "-ffunction-sections",
    "-fdata-sections", "-DTF_LITE_STATIC_MEMORY", "-DNDEBUG", "-mthumb",
)  # fmt: skip
FC_ROWS, FC_DEPTH, N_X = 1536, 64, 1 << 14
#: probe.cc's fixed CONV_2D / DEPTHWISE_CONV_2D: 1x12x12x8 input, 3x3, stride 1, padding 1.
CONV_HW, CONV_C, CONV_OUT, DW_OUT, K = 12, 8, 8, 16, 3
NO_CLAMP = (-3.4028234663852886e38, 3.4028234663852886e38)
#: The builds measured: name -> (the QEMU core it runs on, its -mcpu/-mfloat-abi/-mfpu flags as
#: TFLM's cortex_m_generic_makefile.inc sets them for that TARGET_ARCH, extra flags).
VARIANTS = {
    "cortex-m4": ("cortex-m4", ("-mcpu=cortex-m4+nofp", "-mfpu=fpv4-sp-d16", "-mfloat-abi=soft"), ()),
    "cortex-m4+fp": ("cortex-m4", ("-mcpu=cortex-m4", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard"), ()),
    "cortex-m4+fp -ffp-contract=off": (
        "cortex-m4",
        ("-mcpu=cortex-m4", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard"),
        ("-ffp-contract=off",),
    ),
    "cortex-m55": ("cortex-m55", ("-mcpu=cortex-m55", "-mfpu=auto", "-mfloat-abi=hard"), ()),
}


def _run(cmd: list[str], cwd: Path) -> None:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd[:3])} ... failed:\n{done.stderr[-2000:]}")


def build(variant: str, out: Path) -> Path:
    core_name, target, extra = VARIANTS[variant]
    core = get_core(core_name)
    flags = [*target, *extra]
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
    _run(["arm-none-eabi-g++", *flags, *TFLM_CXXFLAGS, *includes, "-c", str(PROBE), "-o", "probe.o"], out)
    _run(
        ["arm-none-eabi-g++", *flags, "-mthumb", "-nostartfiles", "-T", "link.ld", "-Wl,--gc-sections",
         "--specs=nosys.specs", "startup.o", "semihost.o", "probe.o", "-lm", "-o", "probe.elf"],
        out,
    )  # fmt: skip
    return out / "probe.elf"


def tflm_objects_vfma(variant: str, out: Path) -> dict[str, int]:
    """``vfma.f32`` instructions in each TFLM kernel object compiled as TFLM's Makefile does."""
    _, target, extra = VARIANTS[variant]
    includes = [f"-I{TFLM}", f"-I{DOWNLOADS / 'gemmlowp'}", f"-I{DOWNLOADS / 'ruy'}"]
    includes += [f"-I{DOWNLOADS / 'flatbuffers' / 'include'}", f"-I{CMSIS_NN}", f"-I{CMSIS_NN / 'Include'}"]
    counts = {}
    for source in TFLM_KERNELS:
        obj = out / (source.replace("/", "_") + ".o")
        src = TFLM / "tensorflow/lite/micro/kernels" / source
        # TFLM's OPTIMIZED_KERNEL_DIR=cmsis_nn build defines CMSIS_NN and swaps these files in.
        define = ["-DCMSIS_NN"] if source.startswith("cmsis_nn/") else []
        cmd = ["arm-none-eabi-g++", *target, *extra, *TFLM_CXXFLAGS, *define, *includes, "-c", str(src)]
        _run([*cmd, "-o", str(obj)], out)
        dump = subprocess.run(
            ["arm-none-eabi-objdump", "-d", str(obj)], capture_output=True, text=True, check=True
        )
        counts[source] = dump.stdout.count("vfma.f32")
    return counts


def ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| in units in the last place, by the float32 bit patterns (same-sign values)."""
    ia = a.view(np.int32).astype(np.int64)
    ib = b.view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(ia & 0x7FFFFFFF), ia)
    ib = np.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
    return np.abs(ia - ib)


def compare(ours: np.ndarray, device: np.ndarray) -> dict:
    both_nan = np.isnan(ours) & np.isnan(device)
    differ = (ours.view(np.uint32) != device.view(np.uint32)) & ~both_nan
    d = ulps(ours, device)[~both_nan]
    return {
        "values": int(ours.size),
        "differ": int(differ.sum()),
        "differ_fraction": round(float(differ.mean()), 6),
        "max_ulp": int(d.max()) if d.size else 0,
    }


def _relative(ours: np.ndarray, device: np.ndarray, x: np.ndarray, w: np.ndarray) -> float:
    """The largest |difference| of a dot product relative to the sum of its terms' magnitudes
    (the scale of a summation's rounding error; the ULP count blows up under cancellation)."""
    scale = np.abs(x.astype(np.float64) * w).reshape(FC_ROWS, FC_DEPTH).sum(axis=1)
    return float(np.max(np.abs(ours.astype(np.float64) - device) / scale))


def measure(variant: str, seed: int) -> dict:
    core_name = VARIANTS[variant][0]
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.uniform(-20, 20, N_X // 2), rng.standard_normal(N_X // 2) * 3]).astype(np.float32)
    fc_in = (
        rng.standard_normal(FC_ROWS * FC_DEPTH) * 10.0 ** rng.integers(-2, 3, FC_ROWS * FC_DEPTH)
    ).astype(np.float32)
    fc_w = rng.standard_normal(FC_ROWS * FC_DEPTH).astype(np.float32)
    conv_in = rng.standard_normal((1, CONV_HW, CONV_HW, CONV_C)).astype(np.float32)
    conv_w = rng.standard_normal((CONV_OUT, K, K, CONV_C)).astype(np.float32)
    dw_w = rng.standard_normal((1, K, K, DW_OUT)).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        elf = build(variant, work)
        blob = struct.pack("<I", x.size) + x.tobytes() + struct.pack("<II", FC_ROWS, FC_DEPTH)
        tail = conv_in.tobytes() + conv_w.tobytes() + dw_w.tobytes()
        (work / "in.bin").write_bytes(blob + fc_in.tobytes() + fc_w.tobytes() + tail)
        core = get_core(core_name)
        done = subprocess.run(
            qemu_command(core, elf, "in.bin out.bin"), cwd=work, capture_output=True, timeout=600, check=False
        )
        if done.returncode:
            raise SystemExit(f"{core_name}: the probe exited {done.returncode}: {done.stderr[-500:]!r}")
        out = np.fromfile(work / "out.bin", np.float32)
        objects = tflm_objects_vfma(variant, work)
        vfma = subprocess.run(
            ["arm-none-eabi-objdump", "-d", str(work / "probe.o")], capture_output=True, text=True, check=True
        ).stdout.count("vfma.f32")
    n = x.size
    dev_exp, dev_tanh = out[:n], out[n : 2 * n]
    dev_fc = out[2 * n : 2 * n + FC_ROWS]
    dev_logistic = out[2 * n + FC_ROWS : 3 * n + FC_ROWS]
    dev_softmax = out[3 * n + FC_ROWS : 4 * n + FC_ROWS]
    at = 4 * n + FC_ROWS
    dev_conv = out[at : at + CONV_HW * CONV_HW * CONV_OUT]
    dev_dw = out[at + dev_conv.size : at + dev_conv.size + CONV_HW * CONV_HW * DW_OUT]
    window = {"stride": (1, 1), "padding": (1, 1), "dilation": (1, 1), "activation": NO_CLAMP}
    conv_shape, dw_shape = (1, CONV_HW, CONV_HW, CONV_OUT), (1, CONV_HW, CONV_HW, DW_OUT)

    def fc(fused: bool) -> np.ndarray:
        rows = [
            fully_connected_f32(
                fc_in[r * FC_DEPTH : (r + 1) * FC_DEPTH], fc_w[r * FC_DEPTH : (r + 1) * FC_DEPTH].reshape(1, -1),
                None, 1, activation=NO_CLAMP, fused=fused,
            )[0, 0]
            for r in range(FC_ROWS)
        ]  # fmt: skip
        return np.array(rows, np.float32)

    def conv(fused: bool) -> np.ndarray:
        return conv_2d_f32(conv_in, conv_w, None, conv_shape, fused=fused, **window).reshape(-1)

    def depthwise(fused: bool) -> np.ndarray:
        y = depthwise_conv_2d_f32(conv_in, dw_w, None, dw_shape, depth_multiplier=2, fused=fused, **window)
        return y.reshape(-1)

    return {
        "qemu_core": core_name,
        "gcc_flags": [*VARIANTS[variant][1], *VARIANTS[variant][2], *TFLM_CXXFLAGS],
        "vfma_f32_in_probe": vfma,
        "vfma_f32_in_tflm_kernel_objects": objects,
        "expf": compare(expf(x), dev_exp),
        "tanhf": compare(tanh_f32(x), dev_tanh),
        "fully_connected": compare(fc(False), dev_fc)
        | {
            "depth": FC_DEPTH,
            "max_abs_diff_over_sum_abs_products": _relative(fc(False), dev_fc, fc_in, fc_w),
        },
        "fully_connected_fused": compare(fc(True), dev_fc),
        "conv_2d": compare(conv(False), dev_conv),
        "conv_2d_fused": compare(conv(True), dev_conv),
        "depthwise_conv_2d": compare(depthwise(False), dev_dw),
        "depthwise_conv_2d_fused": compare(depthwise(True), dev_dw),
        "logistic": compare(logistic_f32(x), dev_logistic),
        "softmax": compare(softmax_f32(x.reshape(-1, 16), beta=1.0).reshape(-1), dev_softmax),
    }


KERNELS = (
    "expf", "tanhf", "logistic", "softmax", "fully_connected", "fully_connected_fused", "conv_2d",
    "conv_2d_fused", "depthwise_conv_2d", "depthwise_conv_2d_fused",
)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--json", type=Path, default=ROOT / "benchmarks" / "results" / "tflm_float_device.json"
    )
    args = parser.parse_args()
    gcc = subprocess.run(
        ["arm-none-eabi-gcc", "--version"], capture_output=True, text=True, check=True
    ).stdout
    qemu = subprocess.run(["qemu-system-arm", "--version"], capture_output=True, text=True, check=True).stdout
    report = {
        "what": "TFLM's float32 reference kernels and newlib's expf/tanhf on Cortex-M (QEMU) vs refsim",
        "tflm": "tensorflow/tflite-micro 90b983c2",
        "toolchain": gcc.splitlines()[0],
        "qemu": qemu.splitlines()[0],
        "date": datetime.date.today().isoformat(),
        "seed": args.seed,
        "variants": {v: measure(v, args.seed) for v in args.variants},
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    for name, r in report["variants"].items():
        row = ", ".join(f"{k} {r[k]['differ']}/{r[k]['values']} (max {r[k]['max_ulp']} ulp)" for k in KERNELS)
        objects = sum(r["vfma_f32_in_tflm_kernel_objects"].values())
        print(f"{name}: vfma {r['vfma_f32_in_probe']} (TFLM kernel objects: {objects}); {row}")


if __name__ == "__main__":
    main()

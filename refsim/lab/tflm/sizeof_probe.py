"""Compile the TFLM sizeof probe and read the struct sizes back from the object files.

``sizeof_probe/*.cpp`` define, per TFLM type ``T`` that ``MicroAllocator`` places in the arena, a byte
array ``refsim_sizeof__<name>`` of length ``sizeof(T)`` and ``refsim_alignof__<name>`` of length
``alignof(T)``. Each file is compiled (not linked, not run) against TFLM's own headers
(tensorflow/tflite-micro @ 90b983c2, with the flatbuffers, gemmlowp, ruy and CMSIS-NN commits its
Makefile pins) and ``nm -S`` prints every array's size. The kernels' ``OpData`` are private to their
``.cc`` files (an anonymous namespace), so a probe file includes the kernel's ``.cc`` itself.

Two word sizes:

- ``word32``: arm-none-eabi-g++ for cortex-m3, m4 and m55 with TFLM's Makefile defines
  (``TF_LITE_STATIC_MEMORY``, ``KERNELS_OPTIMIZED_FOR_SPEED``, ``CMSIS_NN``) and the toolchain's default
  short enums (``__ARM_SIZEOF_MINIMAL_ENUM == 1``: a struct of one enum is 1 byte); all three cores
  must agree;
- ``word64``: the host g++ (x86-64) with the Bazel defines the ``tflite-micro`` wheel is built with
  (``TF_LITE_STATIC_MEMORY``; reference kernels, so the CMSIS-NN files are not probed).

The result is committed as refsim/memory/tflm_sizes.json (read by refsim.memory.tflm.sizes) with its
provenance, so refsim needs neither the toolchain nor the sources to use it;
tests/memory/test_tflm_sizeof.py recompiles and fails if the committed numbers drift.

    python -m refsim.lab.tflm.sizeof_probe            # print what the headers give now
    python -m refsim.lab.tflm.sizeof_probe --write    # refresh refsim/memory/tflm_sizes.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from refsim.errors import RefsimError
from refsim.memory.tflm.sizes import DATA

PROBE_DIR = Path(__file__).with_name("sizeof_probe")

#: The sources, each overridable by an environment variable (name, default path, what it is).
SOURCES: dict[str, tuple[str, str]] = {
    "tflite-micro": ("REFSIM_TFLM_SRC", "/work/ext/tflite-micro"),
    "flatbuffers": ("REFSIM_FLATBUFFERS_SRC", "/work/ext/flatbuffers-25.9.23"),
    "gemmlowp": ("REFSIM_GEMMLOWP_SRC", "/work/ext/gemmlowp-719139ce"),
    "ruy": ("REFSIM_RUY_SRC", "/work/ext/ruy-d3712831"),
    "cmsis-nn": ("REFSIM_CMSIS_NN_TFLM_SRC", "/work/ext/cmsis-nn-tflm"),
}
#: What each source is (for the provenance): the commits TFLM 90b983c2's downloads pin.
SOURCE_COMMITS = {
    "tflite-micro": "tensorflow/tflite-micro 90b983c2b3f1480642e040bbd2ddb37b998f3424",
    "flatbuffers": "google/flatbuffers v25.9.23 (187240970746d00bbd26b0f5873ed54d2477f9f3) include/",
    "gemmlowp": "google/gemmlowp 719139ce755a0f31cbf1c37f7f98adcc7fc9f425",
    "ruy": "google/ruy d37128311b445e758136b8602d1bbd2a755e115d",
    "cmsis-nn": "ARM-software/CMSIS-NN 4ab83cc3 (the commit TFLM 90b983c2 pins)",
}

#: 32-bit cores probed, with the -mcpu/-mfpu/-mfloat-abi TFLM's cortex_m_generic_makefile.inc passes.
TARGETS_32: dict[str, tuple[str, ...]] = {
    "cortex-m3": ("-mcpu=cortex-m3", "-mfloat-abi=soft"),
    "cortex-m4": ("-mcpu=cortex-m4", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"),
    "cortex-m55": ("-mcpu=cortex-m55", "-mfloat-abi=hard", "-mfpu=auto"),
}
#: TFLM Makefile: COMMON_FLAGS' -DTF_LITE_STATIC_MEMORY, OPTIMIZE_KERNELS_FOR's default, the
#: OPTIMIZED_KERNEL_DIR=cmsis_nn define; flatbuffers.patch's locale default as a flag.
FLAGS_32: tuple[str, ...] = (
    "-mthumb",
    "-std=c++17",
    "-Os",
    "-fno-exceptions",
    "-fno-rtti",
    "-DTF_LITE_STATIC_MEMORY",
    "-DKERNELS_OPTIMIZED_FOR_SPEED",
    "-DCMSIS_NN",
    "-DFLATBUFFERS_LOCALE_INDEPENDENT=0",
)
#: build_def.bzl's micro_copts defines for the wheel's x86-64 build: TF_LITE_STATIC_MEMORY=1, and
#: USE_TFLM_COMPRESSION=1 (the wheel links the decompression code; its OpDataConv and
#: OpDataFullyConnected carry the two scratch indices, 80 and 72 bytes, as the arena report shows).
FLAGS_64: tuple[str, ...] = ("-std=c++17", "-O2", "-DTF_LITE_STATIC_MEMORY=1", "-DUSE_TFLM_COMPRESSION=1")
#: Probe files per word size (the CMSIS-NN kernels only exist in the Cortex-M build).
FILES_64 = (
    "framework.cpp",
    "builtin_params.cpp",
    "reference_kernels.cpp",
    "reference_concatenation.cpp",
    "reference_tanh.cpp",
)

_SYMBOL = re.compile(r"^[0-9a-fA-F]+ ([0-9a-fA-F]+) [RrDdBb] refsim_(sizeof|alignof|value)__(\w+)$")


class ProbeError(RefsimError):
    """The sizeof probe could not be compiled or read (names the tool or source that failed)."""


def source_dirs() -> dict[str, Path]:
    out = {}
    for name, (env, default) in SOURCES.items():
        path = Path(os.environ.get(env, default))
        if not path.is_dir():
            raise ProbeError(f"sizeof probe: {name} sources not found at {path} (set {env})")
        out[name] = path
    return out


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise ProbeError(f"sizeof probe: {name} not found on PATH")
    return found


def _includes(src: dict[str, Path]) -> list[str]:
    return [
        f"-I{src['tflite-micro']}",
        f"-I{src['flatbuffers'] / 'include'}",
        f"-I{src['gemmlowp']}",
        f"-I{src['ruy']}",
        f"-I{src['cmsis-nn']}",
    ]


def compile_probe(gxx: str, nm: str, flags: list[str], files: list[str], src: dict[str, Path]) -> dict:
    """``{"sizeof": {name: bytes}, "alignof": {...}, "value": {...}}`` of ``files`` built with ``flags``."""
    out: dict[str, dict[str, int]] = {"sizeof": {}, "alignof": {}, "value": {}}
    with tempfile.TemporaryDirectory(prefix="refsim-tflm-probe-") as tmp:
        for name in files:
            obj = Path(tmp) / (name + ".o")
            done = subprocess.run(
                [gxx, *flags, *_includes(src), "-c", str(PROBE_DIR / name), "-o", str(obj)],
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                first = next((ln for ln in done.stderr.splitlines() if "error" in ln), done.stderr.strip())
                raise ProbeError(f"sizeof probe: {Path(gxx).name} failed on {name}: {first}")
            listing = subprocess.run([nm, "-S", str(obj)], capture_output=True, text=True, check=True).stdout
            for line in listing.splitlines():
                match = _SYMBOL.match(line.strip())
                if match:
                    size, kind, sym = match.groups()
                    out[kind][sym] = int(size, 16)
    if not out["sizeof"] or out["sizeof"].keys() != out["alignof"].keys():
        raise ProbeError(f"sizeof probe: unexpected nm listing for {' '.join(flags)}")
    return out


def probe_all() -> dict:
    """The data file's content: both word sizes (32-bit identical across the cores), plus provenance."""
    src = source_dirs()
    arm_gxx, arm_nm = _tool("arm-none-eabi-g++"), _tool("arm-none-eabi-nm")
    files_32 = sorted(p.name for p in PROBE_DIR.glob("*.cpp"))
    per_core = {
        core: compile_probe(arm_gxx, arm_nm, [*flags, *FLAGS_32], files_32, src)
        for core, flags in TARGETS_32.items()
    }
    first = next(iter(per_core.values()))
    for core, sizes in per_core.items():
        if sizes != first:
            raise ProbeError(f"sizeof probe: {core} gives different sizes from {next(iter(TARGETS_32))}")
    host_gxx, host_nm = _tool("g++"), _tool("nm")
    word64 = compile_probe(host_gxx, host_nm, list(FLAGS_64), list(FILES_64), src)
    arm_version = subprocess.run([arm_gxx, "--version"], capture_output=True, text=True).stdout.splitlines()[
        0
    ]
    host_version = subprocess.run(
        [host_gxx, "--version"], capture_output=True, text=True
    ).stdout.splitlines()[0]
    return {
        "provenance": {
            "sources": SOURCE_COMMITS,
            "method": "nm -S of refsim/lab/tflm/sizeof_probe/*.cpp compiled with -c",
            "word32": {
                "compiler": arm_version,
                "cores": list(TARGETS_32),
                "flags": {core: [*flags, *FLAGS_32] for core, flags in TARGETS_32.items()},
                "files": files_32,
            },
            "word64": {"compiler": host_version, "flags": list(FLAGS_64), "files": list(FILES_64)},
        },
        "word32": first,
        "word64": word64,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {DATA.name}")
    args = parser.parse_args(argv)
    try:
        data = probe_all()
    except ProbeError as error:
        print(f"refsim: error: {error}", file=sys.stderr)
        return 2
    if DATA.exists():  # keep the hand-checked wheel differences (not derivable from 90b983c2)
        wheel = json.loads(DATA.read_text()).get("wheel64")
        if wheel is not None:
            data["wheel64"] = wheel
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    if args.write:
        DATA.write_text(text)
        print(f"wrote {DATA}")
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

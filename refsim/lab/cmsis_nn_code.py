"""CMSIS-NN's code per function, per core and per build profile: the library each runtime links,
built the way that runtime builds it (data: refsim/memory/cmsis_nn_code.json).

    CMSIS_NN_DIR=/work/ext/cmsis-nn-tflm CMSIS_NN_ET_DIR=/work/ext/cmsis-nn-et \\
    CMSIS_NN_REVISION="ARM-software/CMSIS-NN 4ab83cc3... (...)" \\
        python -m refsim.lab.cmsis_nn_code --build /tmp/cmsis-nn-code --out refsim/memory/cmsis_nn_code.json

Profiles (:data:`PROFILES`):

- ``tflm``: CMSIS-NN at TFLM 90b983c2's pin (4ab83cc3, ``CMSIS_NN_DIR``) compiled with TFLM's
  Makefile flags for CMSIS-NN (refsim/lab/tflm/build.py ``c_flags``: THIRD_PARTY_KERNEL_OPTIMIZATION_LEVEL
  -O2, cortex_m_generic's per-core flags), for TFLM's cortex-m3, cortex-m4+fp and cortex-m55.
- ``executorch``: CMSIS-NN at ExecuTorch cff6f4dd32's pin (backends/cortex_m/CMakeLists.txt
  CMSIS_NN_VERSION dbf45dbf, ``CMSIS_NN_ET_DIR``) compiled as ExecuTorch's CMake builds it:
  CMSIS-NN's own CMake target (``CMSIS_OPTIMIZATION_LEVEL`` -Ofast, after CMake Release's
  -O3 -DNDEBUG; ARM_NN_ENABLE_F32/F16 OFF, so their sources out and both defines 0) with the
  compile options of ExecuTorch's toolchain file examples/arm/ethos-u-setup/arm-none-eabi-gcc.cmake
  (-mcpu, -mthumb, -fdata-sections -ffunction-sections; -mfpu=fpv4-sp-d16 for m4/m7;
  -mfloat-abi=hard for m4/m7/m33/m55/m85, soft otherwise; cortex-m85 compiled as cortex-m55).

Per object: every flash section (``.text.*``, ``.rodata*``, ``.data*``) with its size
(``size -A``: what a ``--gc-sections`` link keeps per section) and its references (relocations,
``objdump -r``; a reference to a symbol resolved to the section defining it, ``objdump -t``). A
node is named for its section's symbol (``arm_convolve_s8``), or ``<file> (<section>)`` for a
section named for none. Each tree's revision: ``CMSIS_NN_REVISION`` / ``CMSIS_NN_ET_REVISION``
when set, else a REVISION file at its root. A runtime's CMSIS-NN code for its entry functions is the closure over the
references (:func:`refsim.memory.cmsis_nn_code.closure`).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import re
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from refsim.lab.build import LabError, compile_units, run, tool
from refsim.lab.tflm import build as tb

_SECTION_PREFIXES = (".text", ".rodata", ".data")


@dataclass(frozen=True)
class Profile:
    env: str  # the variable naming the CMSIS-NN tree
    pin: str  # where the commit is named
    optimization: str
    flags_from: str

    def flags(self, name: str, core: str) -> list[str]:
        if name == "tflm":
            return tb.c_flags(core)
        return [*et_core_flags(core), "-std=c11", "-DNDEBUG", "-O3", "-DARM_NN_ENABLE_F32=0",
                "-DARM_NN_ENABLE_F16=0", "-Ofast"]  # fmt: skip


PROFILES: dict[str, Profile] = {
    "tflm": Profile(
        "CMSIS_NN_DIR",
        "tensorflow/lite/micro/tools/make/ext_libs/cmsis_nn_download.sh @ TFLM 90b983c2",
        "-O2",
        "TFLM Makefile THIRD_PARTY_KERNEL_OPTIMIZATION_LEVEL, COMMON_FLAGS, cortex_m_generic_makefile.inc "
        "(refsim/lab/tflm/build.py c_flags)",
    ),
    "executorch": Profile(
        "CMSIS_NN_ET_DIR",
        "backends/cortex_m/CMakeLists.txt CMSIS_NN_VERSION @ ExecuTorch cff6f4dd32",
        "-Ofast",
        "CMSIS-NN CMakeLists.txt CMSIS_OPTIMIZATION_LEVEL (not overridden by ExecuTorch), CMake Release "
        "(-O3 -DNDEBUG before it), ExecuTorch examples/arm/ethos-u-setup/arm-none-eabi-gcc.cmake",
    ),
}
#: Cores per profile: TFLM's targets; ExecuTorch's cores of refsim (cortex-m85 as cortex-m55).
CORES: dict[str, tuple[str, ...]] = {
    "tflm": tuple(tb.TARGETS),
    "executorch": ("cortex-m0plus", "cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55"),
}
#: refsim core -> the profile's core it is built as (arm-none-eabi-gcc.cmake: m85 -> m55).
SAME_BUILD_AS: dict[str, str] = {"cortex-m85": "cortex-m55"}


def et_core_flags(core: str) -> list[str]:
    """ExecuTorch's toolchain file's compile options for TARGET_CPU ``core``."""
    cpu = SAME_BUILD_AS.get(core, core)
    out = [f"-mcpu={cpu}", "-mthumb", "-fdata-sections", "-ffunction-sections"]
    if cpu in ("cortex-m4", "cortex-m7"):
        out += ["-mfpu=fpv4-sp-d16", "-mfloat-abi=hard"]
    elif cpu in ("cortex-m33", "cortex-m55", "cortex-m85"):
        out += ["-mfloat-abi=hard"]
    else:
        out += ["-mfloat-abi=soft"]
    return out


def sources(tree: Path) -> list[str]:
    """The integer sources (no *_f16.c / *_f32.c / arm_nntables_flt.c: F32/F16 off)."""
    out = []
    for path in sorted((tree / "Source").rglob("*.c")):
        if path.name.endswith(("_f16.c", "_f32.c")) or path.name == "arm_nntables_flt.c":
            continue
        out.append(str(path.relative_to(tree)))
    return out


def _node(section: str, obj: str) -> str:
    for prefix in (".text.", ".rodata.", ".data."):
        if section.startswith(prefix):
            return section[len(prefix) :]
    stem = Path(obj).name.rsplit("__", 1)[-1].removesuffix(".o")
    return f"{stem} ({section})"


_RELOC_HEAD = re.compile(r"^RELOCATION RECORDS FOR \[(\S+)\]:")


def object_graph(obj: str) -> tuple[dict[str, int], dict[str, set[str]]]:
    """Flash sections (node -> bytes) and their references (node -> target symbols or nodes)."""
    sizes: dict[str, int] = {}
    for line in run([tool("arm-none-eabi-size"), "-A", obj], "size -A").splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0].startswith(_SECTION_PREFIXES) and int(parts[1]) > 0:
            sizes[_node(parts[0], obj)] = sizes.get(_node(parts[0], obj), 0) + int(parts[1])
    section_of: dict[str, str] = {}
    for line in run([tool("arm-none-eabi-objdump"), "-t", obj], "objdump -t").splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[-3].startswith(_SECTION_PREFIXES):
            section_of[parts[-1]] = _node(parts[-3], obj)
    refs: dict[str, set[str]] = {}
    current = None
    for line in run([tool("arm-none-eabi-objdump"), "-r", obj], "objdump -r").splitlines():
        head = _RELOC_HEAD.match(line)
        if head:
            section = head.group(1)
            current = _node(section, obj) if section.startswith(_SECTION_PREFIXES) else None
            continue
        parts = line.split()
        if current is None or len(parts) != 3 or not parts[1].startswith("R_ARM"):
            continue
        target = parts[2].split("+")[0].split("-")[0]
        if target.startswith("."):
            target = _node(target, obj)
        else:
            target = section_of.get(target, target)  # a symbol this object defines: its section
        if target != current:
            refs.setdefault(current, set()).add(target)
    return sizes, refs


def measure(profile: str, core: str, tree: Path, build: Path) -> dict:
    flags = PROFILES[profile].flags(profile, core)
    command = [tool("arm-none-eabi-gcc"), *flags, f"-I{tree / 'Include'}"]
    digest = hashlib.sha256("\0".join([*command, str(tree)]).encode()).hexdigest()[:12]
    objdir = build / f"{profile}-{core}-{digest}"
    objdir.mkdir(parents=True, exist_ok=True)
    objs = compile_units(command, tree, sources(tree), objdir, core)
    sizes: dict[str, int] = {}
    calls: dict[str, set[str]] = {}
    for obj in objs:
        s, r = object_graph(obj)
        for k, v in s.items():
            if k in sizes and not k.endswith(")"):
                raise LabError(f"CMSIS-NN code: {k} defined twice ({obj})")
            sizes[k] = sizes.get(k, 0) + v
        for k, v in r.items():
            calls.setdefault(k, set()).update(v)
    return {
        "flags": flags,
        "functions": dict(sorted(sizes.items())),
        "calls": {k: sorted(v & sizes.keys()) for k, v in sorted(calls.items()) if v & sizes.keys()},
    }


def merge(old: dict, new: dict) -> dict:
    """``old`` with ``new``'s cores in place of its own, per profile (every other core and profile
    kept); ``new``'s run is listed in the provenance's ``later_runs``."""
    profiles = dict(old["profiles"])
    for name, entry in new["profiles"].items():
        have = profiles.get(name, {"cores": {}})
        profiles[name] = {**have, **{k: v for k, v in entry.items() if k != "cores"},
                          "cores": {**have["cores"], **entry["cores"]}}  # fmt: skip
    prov = dict(old["provenance"])
    later = new["provenance"]
    prov["later_runs"] = [
        *prov.get("later_runs", []),
        {**{k: later[k] for k in ("compiler", "date", "command")},
         "cores": {name: sorted(entry["cores"]) for name, entry in new["profiles"].items()}},
    ]  # fmt: skip
    return {**old, "provenance": prov, "profiles": profiles}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m refsim.lab.cmsis_nn_code", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--build", default=None)
    parser.add_argument("--out", required=True)
    parser.add_argument("--profiles", nargs="*", default=list(PROFILES))
    parser.add_argument("--cores", nargs="*", default=None, help="only these cores (default: the profile's)")
    parser.add_argument(
        "--merge", action="store_true", help="update --out in place: this run's cores, every other kept"
    )
    args = parser.parse_args(argv)
    build = Path(args.build) if args.build else Path(tempfile.mkdtemp(prefix="refsim-cmsis-nn-code-"))
    from refsim.qemu.toolchain import find_toolchain

    command = "python -m refsim.lab.cmsis_nn_code " + " ".join(argv if argv is not None else sys.argv[1:])
    data: dict = {"provenance": {}, "profiles": {}}
    try:
        for name in args.profiles:
            p = PROFILES[name]
            tree = os.environ.get(p.env)
            if not tree or not (Path(tree) / "Include/arm_nnfunctions.h").is_file():
                raise LabError(f"CMSIS-NN code: set {p.env} to the CMSIS-NN tree of profile {name} ({p.pin})")
            tree_path = Path(tree).resolve()
            stamp = tree_path / "REVISION"
            revision = os.environ.get(f"{p.env.removesuffix('_DIR')}_REVISION") or (
                stamp.read_text().strip() if stamp.is_file() else f"unrecorded tree at {tree_path}"
            )
            entry: dict = {
                "cmsis_nn": revision,
                "pin": p.pin,
                "optimization": p.optimization,
                "flags_from": p.flags_from,
                "cores": {},
                "same_build_as": {k: v for k, v in SAME_BUILD_AS.items() if name == "executorch"},
            }
            for core in [c for c in CORES[name] if args.cores is None or c in args.cores]:
                print(f"[cmsis-nn code] {name} {core}", file=sys.stderr, flush=True)
                entry["cores"][core] = measure(name, core, tree_path, build)
            data["profiles"][name] = entry
        data["provenance"] = {
            "compiler": find_toolchain().gcc_version,
            "date": datetime.date.today().isoformat(),
            "command": command,
            "method": "refsim/lab/cmsis_nn_code.py: each source compiled alone; per object size -A (flash "
            "sections), objdump -t (symbol -> section), objdump -r (references)",
        }
    except LabError as error:
        print(f"refsim: error: {error}", file=sys.stderr)
        return 2
    out = Path(args.out)
    if args.merge and out.is_file():
        data = merge(json.loads(out.read_text()), data)
    out.write_text(json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Compile the sizeof probe and read the 32-bit runtime struct sizes back from the object file.

``sizeof_probe/sizeof_probe.cpp`` defines, per ExecuTorch runtime type ``T``, a byte array
``refsim_sizeof__<name>`` of length ``sizeof(T)`` and ``refsim_alignof__<name>`` of length
``alignof(T)``. It is compiled (not linked, not run) with arm-none-eabi-g++ for each probed core
against the headers the executorch wheel ships (``executorch/include``); ``arm-none-eabi-nm -S``
prints every array's size, which is the number we want. The result is committed as
refsim/memory/runtime_sizes.json (read by refsim.memory.sizes) with its provenance (executorch
version, compiler version, flags), so refsim needs neither the wheel nor the toolchain to use it;
tests/interop/test_sizeof.py recompiles and fails if the committed numbers drift from the headers.

    python -m refsim.lab.executorch.sizeof_probe            # print what the headers give now
    python -m refsim.lab.executorch.sizeof_probe --write    # refresh runtime_sizes.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from refsim.errors import RefsimError
from refsim.memory.sizes import DATA

PROBE = Path(__file__).with_name("sizeof_probe") / "sizeof_probe.cpp"

#: Cores probed, with the flags of refsim.qemu.cores (the 32-bit ABI is what matters; both must agree).
PROBE_TARGETS: dict[str, tuple[str, ...]] = {
    "cortex-m55": ("-mcpu=cortex-m55", "-mfloat-abi=hard"),
    "cortex-m4": ("-mcpu=cortex-m4", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"),
}
#: Flags shared by every probe build. C10_USING_CUSTOM_GENERATED_MACROS is what ExecuTorch's own
#: CMake sets for executorch_core (the wheel ships no cmake_macros.h).
COMMON_FLAGS: tuple[str, ...] = (
    "-mthumb",
    "-std=c++17",
    "-Os",
    "-fno-exceptions",
    "-fno-rtti",
    "-DC10_USING_CUSTOM_GENERATED_MACROS",
)

_SYMBOL = re.compile(r"^[0-9a-fA-F]+ ([0-9a-fA-F]+) [RrDdBb] refsim_(sizeof|alignof|value)__(\w+)$")


class ProbeError(RefsimError):
    """The sizeof probe could not be compiled or read (names the tool or header that failed)."""


def executorch_include() -> Path:
    """``executorch/include`` of the installed executorch wheel (REFSIM_EXECUTORCH_INCLUDE overrides)."""
    override = os.environ.get("REFSIM_EXECUTORCH_INCLUDE")
    if override:
        return Path(override)
    spec = importlib.util.find_spec("executorch")  # only the interop venv has it
    for location in (spec.submodule_search_locations or []) if spec else []:
        if (Path(location) / "include" / "executorch" / "runtime").is_dir():
            return Path(location) / "include"
    raise ProbeError(
        "sizeof probe: the executorch wheel's headers are not installed (make venv-interop), "
        "or set REFSIM_EXECUTORCH_INCLUDE"
    )


def executorch_version() -> str:
    try:
        from executorch.version import __version__, git_version
    except ImportError:
        return "unknown"
    return f"{__version__} ({git_version})"


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise ProbeError(
            f"sizeof probe: {name} not found on PATH; install gcc-arm-none-eabi and "
            "libstdc++-arm-none-eabi-newlib (apt-get install --no-install-recommends)"
        )
    return found


def compile_probe(core: str, include: Path) -> dict[str, dict[str, int]]:
    """``{"sizeof": {name: bytes}, "alignof": {...}, "value": {...}}`` for one core."""
    gxx, nm = _tool("arm-none-eabi-g++"), _tool("arm-none-eabi-nm")
    flags = [*PROBE_TARGETS[core], *COMMON_FLAGS]
    includes = [f"-I{include}", f"-I{include / 'executorch/runtime/core/portable_type/c10'}"]
    with tempfile.TemporaryDirectory(prefix="refsim-probe-") as tmp:
        obj = Path(tmp) / "probe.o"
        done = subprocess.run(
            [gxx, *flags, *includes, "-c", str(PROBE), "-o", str(obj)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            first = next((ln for ln in done.stderr.splitlines() if "error" in ln), done.stderr.strip())
            raise ProbeError(f"sizeof probe: arm-none-eabi-g++ failed for {core}: {first}")
        listing = subprocess.run([nm, "-S", str(obj)], capture_output=True, text=True, check=True).stdout
    out: dict[str, dict[str, int]] = {"sizeof": {}, "alignof": {}, "value": {}}
    for line in listing.splitlines():
        match = _SYMBOL.match(line.strip())
        if match:
            size, kind, name = match.groups()
            out[kind][name] = int(size, 16)
    if not out["sizeof"] or out["sizeof"].keys() != out["alignof"].keys():
        raise ProbeError(f"sizeof probe: unexpected nm listing for {core}")
    return out


def probe_all(include: Path | None = None) -> dict:
    """The data file's content: sizes per probed core, identical across cores, plus provenance."""
    include = include or executorch_include()
    per_core = {core: compile_probe(core, include) for core in PROBE_TARGETS}
    first, *rest = per_core.values()
    for core, sizes in zip(PROBE_TARGETS, [first, *rest], strict=True):
        if sizes != first:
            raise ProbeError(f"sizeof probe: {core} gives different sizes from {next(iter(PROBE_TARGETS))}")
    version = subprocess.run([_tool("arm-none-eabi-g++"), "--version"], capture_output=True, text=True)
    return {
        "provenance": {
            "executorch": executorch_version(),
            "headers": "executorch/include/executorch/runtime/ of the wheel",
            "compiler": version.stdout.splitlines()[0],
            "flags": {core: [*flags, *COMMON_FLAGS] for core, flags in PROBE_TARGETS.items()},
            "method": "arm-none-eabi-nm -S of refsim/lab/executorch/sizeof_probe/sizeof_probe.cpp compiled with -c",
            "cores": list(PROBE_TARGETS),
        },
        **first,
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
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    if args.write:
        DATA.write_text(text)
        print(f"wrote {DATA}")
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

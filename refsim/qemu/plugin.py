"""refsim's QEMU TCG plugin (``kernels_c/qemu_plugin/insn_count.c``): built with the host's gcc
and cached by content hash, given the marker addresses on QEMU's command line, and its count
file read back into per-call counts.

    done, calls = run_qemu_counted("cortex-m4", elf, workdir)   # any ELF with the two markers
    calls[0].total, calls[0].by_class["mac"], calls[0].by_mnemonic

The plugin writes, for every call between the harness markers ``rs_kernel_begin`` and
``rs_kernel_end``, how often each guest address executed; the ELF's disassembly
(refsim/qemu/disassembly.py) maps the addresses to classes and mnemonics, which are added up.
Counts are exact and repeatable: QEMU has no timer interrupts in these runs and the plugin
bumps one counter per executed instruction (docs/kernels_c.md, "Instruction counting"). Its
block mode (``blocks=1``) is read by refsim/qemu/timing.py.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from refsim.qemu.build import KERNELS_C, build_once, cache_root
from refsim.qemu.cores import Core, get_core
from refsim.qemu.disassembly import Disassembly, disassemble
from refsim.qemu.errors import BuildError, QemuError, QemuTimeoutError, ToolchainMissingError
from refsim.qemu.instruction_classes import CLASSES
from refsim.qemu.run import qemu_command

PLUGIN_DIR = KERNELS_C / "qemu_plugin"
PLUGIN_SOURCES = ("insn_count.c", "qemu_plugin_api.h")
PLUGIN_CFLAGS = ("-shared", "-fPIC", "-O2", "-std=c11", "-Wall", "-Wextra", "-fvisibility=hidden")

# Plugin output records (insn_count.c): pairs of little-endian u64.
_FILE_MAGIC = int.from_bytes(b"RSINSCNT", "little")
_FILE_VERSION = 1
_CALL_MARK = 2**64 - 1
_END_MARK = 2**64 - 2
_FLAGS_MARK = 2**64 - 3
_FLAGS = {
    1: "a kernel call was still open at exit",
    2: "rs_kernel_begin ran twice",
    4: "rs_kernel_end ran first",
}


# --- the plugin ---------------------------------------------------------------------------------


def find_host_cc() -> Path:
    """The host C compiler that builds the plugin: ``$REFSIM_HOST_CC``, else ``gcc`` on PATH."""
    name = os.environ.get("REFSIM_HOST_CC", "gcc")
    found = shutil.which(name)
    if found is None:
        raise ToolchainMissingError(
            f"kernels_c: instruction counting builds a QEMU plugin with the host C compiler; {name} not "
            "found on PATH (REFSIM_HOST_CC names another): install the Debian package gcc: apt-get install gcc",
            package="gcc",
        )
    return Path(found)


def plugin_key(cc: Path) -> str:
    """Hash of the plugin sources, the flags and the host compiler's version."""
    version = subprocess.run([str(cc), "--version"], capture_output=True, text=True, check=True).stdout
    digest = hashlib.sha256()
    for part in (version.splitlines()[0], *PLUGIN_CFLAGS):
        digest.update(part.encode() + b"\0")
    for name in PLUGIN_SOURCES:
        digest.update(name.encode() + b"\0" + (PLUGIN_DIR / name).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


@functools.cache
def build_plugin() -> Path:
    """``insn_count.so``, built now or found in ``$REFSIM_CACHE/kernels_c/qemu-plugin-<key>/``."""
    if not (PLUGIN_DIR / PLUGIN_SOURCES[0]).is_file():
        raise QemuError(f"kernels_c: plugin sources expected in {PLUGIN_DIR}, found none")
    cc = find_host_cc()
    final = cache_root() / f"qemu-plugin-{plugin_key(cc)}"

    def make(staging: Path) -> None:
        command = [
            str(cc),
            *PLUGIN_CFLAGS,
            "-o",
            str(staging / "insn_count.so"),
            str(PLUGIN_DIR / "insn_count.c"),
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise BuildError(f"kernels_c: building the QEMU plugin failed:\n{done.stderr.strip()}")

    return build_once(final, "insn_count.so", make)


def plugin_arguments(plugin: Path, markers: tuple[int, int], out: str) -> list[str]:
    """``-plugin`` with the marker addresses and the output file (QEMU option commas doubled)."""
    path = str(plugin).replace(",", ",,")
    return ["-plugin", f"{path},begin={markers[0]:#x},end={markers[1]:#x},out={out.replace(',', ',,')}"]


# --- per-call counts ----------------------------------------------------------------------------


@dataclass(frozen=True)
class CallCount:
    """What one kernel call executed: total, per class and per mnemonic."""

    total: int
    by_class: Mapping[str, int]
    by_mnemonic: Mapping[str, int] = field(repr=False)


def parse_counts(data: bytes, disassembly: Disassembly) -> list[CallCount]:
    """The plugin's output file → one :class:`CallCount` per kernel call, in call order."""
    words = np.frombuffer(data[: len(data) - len(data) % 16], dtype="<u8").reshape(-1, 2)
    if len(words) < 3 or (int(words[0, 0]), int(words[0, 1])) != (_FILE_MAGIC, _FILE_VERSION):
        raise QemuError(
            f"instruction counts: file must start with RSINSCNT v{_FILE_VERSION}, got {len(data)} bytes"
        )
    if int(words[-2, 0]) != _END_MARK or int(words[-1, 0]) != _FLAGS_MARK:
        raise QemuError("instruction counts: the plugin's file is cut short (QEMU did not exit normally)")
    flags = int(words[-1, 1])
    if flags:
        problems = "; ".join(text for bit, text in _FLAGS.items() if flags & bit)
        raise QemuError(f"instruction counts: unbalanced markers: {problems}")
    calls: list[CallCount] = []
    i, end = 1, len(words) - 2
    while i < end:
        mark, n = int(words[i, 0]), int(words[i, 1])
        if mark != _CALL_MARK or i + 1 + n > end:
            raise QemuError(f"instruction counts: malformed record at pair {i}")
        calls.append(_call_count(words[i + 1 : i + 1 + n], disassembly))
        i += 1 + n
    if len(calls) != int(words[-2, 1]):
        raise QemuError(
            f"instruction counts: the plugin reported {int(words[-2, 1])} calls, the file holds {len(calls)}"
        )
    return calls


def _call_count(pairs: np.ndarray, disassembly: Disassembly) -> CallCount:
    addresses, counts = pairs[:, 0], pairs[:, 1].astype(np.int64)
    index = np.searchsorted(disassembly.addresses, addresses)
    known = index < len(disassembly.addresses)
    known[known] = disassembly.addresses[index[known]] == addresses[known]
    if not known.all():
        address = int(addresses[~known][0])
        raise QemuError(
            f"instruction counts: executed address {address:#x} is no instruction objdump knows "
            f"(in {disassembly.functions.get(address, 'an unknown function')})"
        )
    keep = ~disassembly.excluded[index]
    index, counts = index[keep], counts[keep]
    by_class = np.zeros(len(CLASSES), dtype=np.int64)
    np.add.at(by_class, disassembly.classes[index], counts)
    by_mnemonic = np.zeros(len(disassembly.mnemonic_names), dtype=np.int64)
    np.add.at(by_mnemonic, disassembly.mnemonic_ids[index], counts)
    return CallCount(
        int(by_class.sum()),
        {name: int(n) for name, n in zip(CLASSES, by_class.tolist(), strict=True)},
        {disassembly.mnemonic_names[i]: int(by_mnemonic[i]) for i in np.flatnonzero(by_mnemonic)},
    )


def run_qemu_counted(
    core: Core | str,
    elf: Path,
    workdir: Path,
    *,
    append: str = "",
    timeout: float = 60.0,
) -> tuple[subprocess.CompletedProcess[str], list[CallCount]]:
    """Run ``elf`` on ``core`` in ``workdir`` with the counting plugin; QEMU's result and every
    marked call's counts. QEMU's exit status is the caller's to judge (counts only when 0).
    Any ELF with the two marker functions will do (tests/qemu/test_counting.py builds one)."""
    core = get_core(core) if isinstance(core, str) else core
    disassembly = disassemble(core, elf)
    command = [
        *qemu_command(core, elf, append),
        *plugin_arguments(build_plugin(), disassembly.markers, "counts.bin"),
    ]
    try:
        done = subprocess.run(
            command, cwd=workdir, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise QemuTimeoutError(
            f"kernels_c on {core.name}: the counted run must finish within {timeout} s, it did not (QEMU killed)"
        ) from None
    if done.returncode != 0:
        return done, []
    counts = workdir / "counts.bin"
    if not counts.is_file():
        raise QemuError(
            f"kernels_c on {core.name}: QEMU did not load the counting plugin: {done.stderr.strip()}"
        )
    return done, parse_counts(counts.read_bytes(), disassembly)


__all__ = [
    "CallCount",
    "build_plugin",
    "find_host_cc",
    "parse_counts",
    "plugin_arguments",
    "run_qemu_counted",
]

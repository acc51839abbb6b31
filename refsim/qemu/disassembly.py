"""The disassembly instruction counting maps executed addresses with: every instruction of an
ELF (``arm-none-eabi-objdump -d``, with ``-m armv8.1-m.main`` on MVE cores: QEMU 7.2's own
disassembler mislabels MVE) with its class (refsim/qemu/instruction_classes.py), its
normalized mnemonic and the function it belongs to; the marker functions' own bodies are
excluded from the counts.

    d = disassemble("cortex-m4", elf)    # cached per file and modification time
    d.markers                            # entry addresses of rs_kernel_begin and rs_kernel_end
"""

from __future__ import annotations

import functools
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from refsim.qemu.cores import Core, get_core
from refsim.qemu.errors import QemuError
from refsim.qemu.instruction_classes import CLASSES, classify, normalize
from refsim.qemu.toolchain import find_toolchain

MARKERS = ("rs_kernel_begin", "rs_kernel_end")
_CLASS_INDEX = {name: i for i, name in enumerate(CLASSES)}

_INSN_LINE = re.compile(r"^\s*([0-9a-f]+):\t([0-9a-f]{4}(?: [0-9a-f]{4})?)\s*\t(\S+)[ \t]*([^;@]*)")
_FUNCTION_LINE = re.compile(r"^([0-9a-f]+) <(.+)>:$")


@dataclass(frozen=True)
class Disassembly:
    """Every instruction of an ELF, as arrays sorted by address: its class (index into
    :data:`CLASSES`), its normalized mnemonic (index into ``mnemonic_names``), whether it is part
    of a marker function's own body (not counted); and the markers' entry addresses."""

    addresses: np.ndarray  # uint64, sorted
    classes: np.ndarray  # intp
    mnemonic_ids: np.ndarray  # intp
    mnemonic_names: tuple[str, ...]
    excluded: np.ndarray  # bool
    functions: Mapping[int, str] = field(repr=False)  # address → the function it belongs to
    markers: tuple[int, int] = (0, 0)  # entry addresses of rs_kernel_begin and rs_kernel_end

    def mnemonic(self, address: int) -> str:
        i = int(np.searchsorted(self.addresses, address))
        return self.mnemonic_names[self.mnemonic_ids[i]]


def objdump_command(core: Core, elf: Path) -> list[str]:
    """``arm-none-eabi-objdump -d``, with ``-m armv8.1-m.main`` on MVE cores (REFERENCE §3: without
    it objdump, like QEMU's own disassembler, does not decode MVE)."""
    objdump = find_toolchain().binutil("objdump")
    arch = ["-m", "armv8.1-m.main"] if core.tier == "mve" else []
    return [str(objdump), "-d", *arch, str(elf)]


def _marker_symbols(elf: Path) -> dict[str, tuple[int, int]]:
    nm = find_toolchain().binutil("nm")
    out = subprocess.run([str(nm), "-S", str(elf)], capture_output=True, text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[3] in MARKERS:
            found[parts[3]] = (int(parts[0], 16) & ~1, int(parts[1], 16))
    missing = [m for m in MARKERS if m not in found]
    if missing:
        raise QemuError(
            f"{elf}: instruction counting needs the marker functions {missing} in the symbol table"
        )
    return found


@functools.cache
def _disassemble(core_name: str, elf: str, stamp: float) -> Disassembly:
    core = get_core(core_name)
    done = subprocess.run(objdump_command(core, Path(elf)), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise QemuError(f"objdump failed on {elf}: {done.stderr.strip()}")
    rows: list[tuple[int, int, str]] = []
    functions: dict[int, str] = {}
    mve = core.tier == "mve"
    function = "?"
    for line in done.stdout.splitlines():
        insn = _INSN_LINE.match(line)
        if insn is None:
            header = _FUNCTION_LINE.match(line)
            if header:
                function = header.group(2)
            continue
        mnemonic = insn.group(3)
        if mnemonic.startswith("."):  # literal pool or data objdump could not decode
            continue
        address = int(insn.group(1), 16)
        rows.append((address, _CLASS_INDEX[classify(mnemonic, insn.group(4), mve=mve)], normalize(mnemonic)))
        functions[address] = function
    rows.sort()
    names = tuple(sorted({name for _, _, name in rows}))
    name_ids = {name: i for i, name in enumerate(names)}
    addresses = np.array([r[0] for r in rows], dtype=np.uint64)
    symbols = _marker_symbols(Path(elf))
    excluded = np.zeros(len(rows), dtype=bool)
    for start, size in symbols.values():
        excluded |= (addresses >= start) & (addresses < start + max(size, 2))
    return Disassembly(
        addresses=addresses,
        classes=np.array([r[1] for r in rows], dtype=np.intp),
        mnemonic_ids=np.array([name_ids[r[2]] for r in rows], dtype=np.intp),
        mnemonic_names=names,
        excluded=excluded,
        functions=functions,
        markers=(symbols[MARKERS[0]][0], symbols[MARKERS[1]][0]),
    )


def disassemble(core: Core | str, elf: Path) -> Disassembly:
    """The disassembly of ``elf`` for ``core`` (cached per file and modification time)."""
    core = get_core(core) if isinstance(core, str) else core
    return _disassemble(core.name, str(elf), elf.stat().st_mtime)


__all__ = ["MARKERS", "Disassembly", "disassemble", "objdump_command"]

"""Build a third-party runtime for a Cortex-M core to measure it: what every lab probe's build shares.

- :func:`compile_units`: sources compiled with arm-none-eabi-g++ into a cache directory, one
  object per source, two compilers at a time; an object is compiled beside and renamed when
  done, so a killed build never leaves a partial ``.o`` the cache would reuse.
- :func:`link_probe`: a probe ELF on kernels_c's board for the core (its startup, semihosting
  and linker script, newlib via nosys.specs, ``--gc-sections``) with a GNU ld map, which
  :func:`map_sections` reads back.
- :func:`stubs_source`: CMSIS-NN taken out of a link: every ``arm_*`` function the objects leave
  undefined (:func:`undefined_arm_symbols`) becomes a stub that only moves the counting window.

The runtime's own sources, flags and include paths are its probe package's (executorch/build.py).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from refsim.errors import RefsimError

KERNELS_C = Path(__file__).resolve().parents[2] / "kernels_c"


class LabError(RefsimError):
    """A lab probe cannot be built or run (names the missing tree, tool or step)."""


def tool(name: str) -> str:
    """``name`` on PATH (an arm-none-eabi tool, flatc)."""
    found = shutil.which(name)
    if found is None:
        raise LabError(f"probe build: {name} not found on PATH")
    return found


def run(command: list[str], what: str, cwd: Path | None = None) -> str:
    """``command``'s stdout; a non-zero exit is a :class:`LabError` naming ``what``."""
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=cwd)
    if done.returncode != 0:
        raise LabError(f"probe build: {what} failed (exit {done.returncode}):\n{done.stderr.strip()[:3000]}")
    return done.stdout


def mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


# --- compiling and linking -------------------------------------------------------------------------


@dataclass(frozen=True)
class Objects:
    """A runtime compiled for one core: the QEMU core, the C++ flags and includes, the objects."""

    qcore: object  # refsim.qemu.cores.Core
    flags: tuple[str, ...]
    includes: tuple[str, ...]
    objects: tuple[str, ...]


def compile_units(
    command: Sequence[str], root: Path, units: Sequence[str], objdir: Path, core: str
) -> list[str]:
    """The objects of ``units`` (paths under ``root``) in ``objdir``, each compiled with
    ``command`` (compiler, flags, includes) unless already there; in the order of ``units``."""
    objects, pending = [], []
    for k, rel in enumerate(units):
        obj = objdir / (rel.replace("/", "__") + ".o")
        objects.append(str(obj))
        if not obj.is_file():  # compiled beside, renamed when done: a killed build leaves no .o
            part = obj.with_suffix(f".{os.getpid()}.part")
            cmd = [*command, "-c", str(root / rel), "-o", str(part)]
            pending.append((subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True), rel, part, obj))
        if len(pending) >= 2 or (k == len(units) - 1 and pending):
            for proc, what, part, final in pending:
                _, err = proc.communicate()
                if proc.returncode != 0:
                    raise LabError(f"probe build: compiling {what} for {core} failed:\n{err[:3000]}")
                part.replace(final)
            pending = []
    return objects


def link_probe(objects: Objects, work: Path, inputs: Sequence[Path], *, bulk_section: str = "") -> Path:
    """``work/probe.elf``: ``inputs`` (C++ and assembly) with the runtime's objects, the boards'
    startup and semihosting, on the board's linker script (``bulk_section``: an input section
    placed in the bulk region); its map is ``work/probe.map``."""
    from refsim.qemu import build as qbuild

    qcore = objects.qcore
    gxx = tool("arm-none-eabi-g++")
    work.mkdir(parents=True, exist_ok=True)
    template = qbuild.KERNELS_C / qbuild.LINKER_TEMPLATE
    script = work / "link.ld"
    run(
        [gxx, "-E", "-P", "-x", "c", *qbuild._memory_defines(qcore), str(template), "-o", str(script)],
        "linker script",
    )
    if bulk_section:
        text = script.read_text()
        section = f"{bulk_section} : {{ KEEP(*({bulk_section})) }} > BULK\n    /DISCARD/"
        script.write_text(text.replace("/DISCARD/", section, 1))
    board = qbuild.get_core(qcore.name)
    cflags = [*qcore.gcc_flags, "-mthumb", "-O2", "-std=c11", f"-I{KERNELS_C / 'boards'}"]
    c_objects = []
    for name, flags_for in (("startup.c", qbuild._cflags(board)), ("semihost.c", cflags)):
        obj = work / (name + ".o")
        run(
            [gxx.replace("g++", "gcc"), *flags_for, "-c", str(KERNELS_C / "boards" / name), "-o", str(obj)],
            name,
        )
        c_objects.append(str(obj))
    elf = work / "probe.elf"
    # nosys: newlib's abort/sbrk pulled in by the PAL are never called; ``end`` for its sbrk.
    run(
        [gxx, *objects.flags, *objects.includes, *map(str, inputs), *objects.objects, *c_objects,
         "--specs=nosys.specs", "-Wl,--defsym=end=__bss_end", "-nostartfiles", "-T", str(script),
         "-Wl,--gc-sections", f"-Wl,-Map={work / 'probe.map'}", "-o", str(elf)],
        f"linking {work.name}",
    )  # fmt: skip
    return elf


# --- CMSIS-NN stubbed ------------------------------------------------------------------------------


def stubs_source(symbols: Sequence[str]) -> str:
    """stubs.cpp: every CMSIS-NN function the ops call, doing nothing but moving the counting
    window (a ``*_get_buffer_size*`` query returns 0 without moving it) and returning success."""
    out = ['// Generated by refsim/lab/build.py: do not edit.\n#include <cstdint>\n',
           'extern "C" void rs_kernel_begin(void);\nextern "C" void rs_kernel_end(void);\n']  # fmt: skip
    for name in sorted(symbols):
        body = "" if "get_buffer_size" in name else "rs_kernel_end(); rs_kernel_begin(); "
        out.append(f'extern "C" int32_t {name}(void) {{ {body}return 0; }}\n')
    return "".join(out)


def undefined_arm_symbols(objects: Sequence[str]) -> list[str]:
    """The ``arm_*`` functions (CMSIS-NN's) that ``objects`` call and do not define."""
    listing = run([tool("arm-none-eabi-nm"), "-u", *objects], "nm -u of the cortex_m ops")
    names = {line.split()[-1] for line in listing.splitlines() if line.strip()}
    return sorted(n for n in names if n.startswith("arm_"))


# --- the linker map --------------------------------------------------------------------------------

_FLASH = (
    ".vectors",
    ".text",
    ".rodata",
    ".data",
    ".ARM.exidx",
    ".ARM.extab",
    ".init_array",
    ".fini_array",
    ".preinit_array",
)


@dataclass(frozen=True)
class Section:
    """One kept input section of a linked ELF (from its -Map file)."""

    name: str
    address: int
    size: int
    origin: str  # the object or archive(member) it came from


def map_sections(map_file: Path, prefixes: tuple[str, ...] = _FLASH) -> list[Section]:
    """The kept input sections of ``map_file`` whose names start with one of ``prefixes`` (by
    default those that go to flash; the part after "Linker script and memory map"; discarded
    sections and fill are skipped)."""
    text = map_file.read_text()
    at = text.find("Linker script and memory map")
    if at < 0:
        raise LabError(f"probe build: {map_file} is not a GNU ld map file")
    out: list[Section] = []
    pending: str | None = None
    entry = re.compile(r"^ (\S+)?\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$")
    for line in text[at:].splitlines():
        if pending is None and re.match(r"^ \.\S+$", line):
            pending = line.strip()
            continue
        m = entry.match(line)
        if m:
            name = m.group(1) or pending
            if name and name.startswith(prefixes) and int(m.group(3), 16) > 0:
                out.append(Section(name, int(m.group(2), 16), int(m.group(3), 16), m.group(4).strip()))
        pending = None
    return out

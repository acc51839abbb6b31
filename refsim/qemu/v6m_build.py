"""The kernels_c harness for cortex-m0plus: ARMv6-M code on the Cortex-M3 board.

QEMU 7.2 has no Cortex-M0+ machine that runs our batches, but ARMv6-M is a subset of ARMv7-M,
so a ``-mcpu=cortex-m0plus`` build runs unchanged on mps2-an385. Only the board code is the
board's own: ``kernels_c/boards/startup.c`` (vector table, fault handler with v7-M-only
instructions such as ``tst lr, #4`` / ``ite``, CCR/SHCSR set-up) is compiled with the M3's flags;
it runs before and after the kernels, never between the timing markers. The harness and every
kernel (everything that is timed) are compiled with ``-mcpu=cortex-m0plus``.

Cached like refsim.qemu.build, under ``$REFSIM_CACHE/kernels_c/cortex-m0plus-<key>/``.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from refsim.qemu import build
from refsim.qemu.build import KERNELS_C, Harness, cache_root
from refsim.qemu.cores import Core, get_core
from refsim.qemu.errors import BuildError
from refsim.qemu.toolchain import find_toolchain

BOARD_CODE = Path("boards") / "startup.c"


def _run(command: list[str], what: str) -> str:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BuildError(
            f"kernels_c: {what} for cortex-m0plus failed (exit {done.returncode}):\n{done.stderr.strip()}"
        )
    return done.stderr


def build_v6m_harness(core: Core, *, force: bool = False) -> Harness:
    """The harness ELF for ``core`` (the M3 board with ``-mcpu=cortex-m0plus`` flags), built now
    or found in the cache."""
    board = get_core(core.name)  # the board's own core: its flags build the board code
    toolchain = find_toolchain()
    key = hashlib.sha256(
        (build.build_key(core, toolchain) + build.build_key(board, toolchain)).encode()
    ).hexdigest()[:16]
    final = cache_root() / f"cortex-m0plus-{key}"

    def make(staging: Path) -> None:
        gcc = str(toolchain.gcc)
        script = staging / "link.ld"
        template = str(KERNELS_C / build.LINKER_TEMPLATE)
        _run(
            [gcc, "-E", "-P", "-x", "c", *build._memory_defines(core), template, "-o", str(script)],
            "linker script",
        )
        startup = staging / "startup.o"
        log = _run(
            [gcc, *build._cflags(board), "-c", str(KERNELS_C / BOARD_CODE), "-o", str(startup)],
            "board code",
        )
        sources = sorted(
            str(p)
            for d in build.SOURCE_DIRS
            for p in (KERNELS_C / d).rglob("*.c")
            if p != KERNELS_C / BOARD_CODE
        )
        link = [
            "-nostartfiles",
            "-T",
            str(script),
            "-Wl,--gc-sections",
            f"-Wl,-Map={staging / 'harness.map'}",
        ]
        log += _run(
            [
                gcc,
                *build._cflags(core),
                *sources,
                str(startup),
                *link,
                "-o",
                str(staging / "harness.elf"),
            ],
            "compiling the harness",
        )
        (staging / "build.log").write_text(log)

    build.build_once(final, "harness.elf", make, force=force)
    return Harness(core=core, elf=final / "harness.elf", key=key, warnings=(final / "build.log").read_text())


__all__ = ["build_v6m_harness"]

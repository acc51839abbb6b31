"""Find the host tools kernels_c needs: arm-none-eabi-gcc (with newlib) and qemu-system-arm.

``REFSIM_ARM_GCC`` and ``REFSIM_QEMU_ARM`` override the PATH lookup. A missing tool raises
:class:`~refsim.qemu.errors.ToolchainMissingError` naming the Debian package to install.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from refsim.qemu.errors import ToolchainMissingError

_APT = "apt-get install --no-install-recommends"


@dataclass(frozen=True)
class Toolchain:
    """Resolved tool paths and the compiler's version line (part of the build cache key)."""

    gcc: Path
    qemu: Path
    gcc_version: str

    def binutil(self, name: str) -> Path:
        """A GNU binutils tool of the same toolchain: ``binutil("addr2line")``."""
        return self.gcc.with_name(self.gcc.name.replace("gcc", name))


def _which(env: str, default: str) -> Path | None:
    found = shutil.which(os.environ.get(env, default))
    return Path(found) if found else None


def find_gcc() -> Path:
    gcc = _which("REFSIM_ARM_GCC", "arm-none-eabi-gcc")
    if gcc is None:
        raise ToolchainMissingError(
            "kernels_c: arm-none-eabi-gcc not found on PATH (or REFSIM_ARM_GCC); "
            f"install the Debian package gcc-arm-none-eabi: {_APT} gcc-arm-none-eabi libnewlib-arm-none-eabi",
            package="gcc-arm-none-eabi",
        )
    libc = subprocess.run(
        [str(gcc), "-mthumb", "-mcpu=cortex-m3", "-print-file-name=libc.a"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    if not Path(libc).is_absolute():
        raise ToolchainMissingError(
            f"kernels_c: {gcc} has no newlib (libc.a not found); "
            f"install the Debian package libnewlib-arm-none-eabi: {_APT} libnewlib-arm-none-eabi",
            package="libnewlib-arm-none-eabi",
        )
    return gcc


def find_qemu() -> Path:
    qemu = _which("REFSIM_QEMU_ARM", "qemu-system-arm")
    if qemu is None:
        raise ToolchainMissingError(
            "kernels_c: qemu-system-arm not found on PATH (or REFSIM_QEMU_ARM); "
            f"install the Debian package qemu-system-arm: {_APT} qemu-system-arm",
            package="qemu-system-arm",
        )
    return qemu


@functools.cache
def find_toolchain() -> Toolchain:
    """Both tools, resolved once per process."""
    gcc = find_gcc()
    qemu = find_qemu()
    version = subprocess.run([str(gcc), "--version"], capture_output=True, text=True, check=True).stdout
    return Toolchain(gcc=gcc, qemu=qemu, gcc_version=version.splitlines()[0])


def missing_toolchain() -> str | None:
    """Why the toolchain cannot be used (for a test skip reason), or None when it is complete."""
    try:
        find_toolchain()
    except ToolchainMissingError as error:
        return str(error)
    return None

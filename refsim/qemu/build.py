"""Build the kernels_c harness for one core, cached by a content hash.

One gcc invocation compiles and links every C file under ``kernels_c/{boards,harness,src}`` with
the core's flags (:mod:`refsim.qemu.cores`) against a linker script preprocessed from
``kernels_c/boards/cortex_m.ld.in`` with the core's memory map. The result lives in
``$REFSIM_CACHE/kernels_c/<core>-<key>/`` (default ``~/.cache/refsim``), where ``key`` hashes
every source and header, the template, the flags, the memory map and the compiler's version: an
edit anywhere under kernels_c/ rebuilds, anything else reuses. Builds are atomic (a temporary
directory renamed into place), so concurrent test workers may race safely.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from refsim.qemu.cores import COMMON_CFLAGS, STACK_SIZE, Core, get_core
from refsim.qemu.errors import BuildError, QemuError
from refsim.qemu.toolchain import Toolchain, find_toolchain

#: kernels_c/ in the source tree (refsim is installed editable); REFSIM_KERNELS_C overrides it.
KERNELS_C = Path(os.environ.get("REFSIM_KERNELS_C", Path(__file__).resolve().parents[2] / "kernels_c"))
SOURCE_DIRS = ("boards", "harness", "src")
INCLUDE_DIRS = ("include", "src", "boards", "harness")
LINKER_TEMPLATE = Path("boards") / "cortex_m.ld.in"


@dataclass(frozen=True)
class Harness:
    """A built harness: the ELF QEMU runs, and what the compiler said while building it."""

    core: Core
    elf: Path
    key: str
    warnings: str


def cache_root() -> Path:
    """``$REFSIM_CACHE/kernels_c``, by default ``~/.cache/refsim/kernels_c``."""
    base = os.environ.get("REFSIM_CACHE")
    return (Path(base) if base else Path.home() / ".cache" / "refsim") / "kernels_c"


def _inputs() -> list[Path]:
    """Every file that can change the build, relative to kernels_c/, sorted."""
    files = [LINKER_TEMPLATE]
    for directory in ("include", *SOURCE_DIRS):
        files += [
            p.relative_to(KERNELS_C) for p in (KERNELS_C / directory).rglob("*") if p.suffix in (".c", ".h")
        ]
    return sorted(files)


def _memory_defines(core: Core) -> list[str]:
    regions = {"CODE": core.code, "RAM": core.ram, "BULK": core.bulk}
    defines = [f"-DRS_STACK_SIZE={STACK_SIZE:#x}"]
    for name, region in regions.items():
        defines += [f"-DRS_{name}_ORIGIN={region.origin:#x}", f"-DRS_{name}_LENGTH={region.length:#x}"]
    return defines


def _cflags(core: Core) -> list[str]:
    return [*core.gcc_flags, *COMMON_CFLAGS, *(f"-I{KERNELS_C / d}" for d in INCLUDE_DIRS)]


def build_key(core: Core, toolchain: Toolchain) -> str:
    """Hash of sources, flags, memory map and compiler version: the cache key of a harness build."""
    digest = hashlib.sha256()
    for part in (toolchain.gcc_version, *_cflags(core), *_memory_defines(core)):
        digest.update(part.encode() + b"\0")
    for rel in _inputs():
        digest.update(str(rel).encode() + b"\0" + (KERNELS_C / rel).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _run(command: list[str], what: str, core: Core) -> str:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BuildError(
            f"kernels_c: {what} for {core.name} failed (exit {done.returncode}):\n{done.stderr.strip()}"
        )
    return done.stderr


def _compile(core: Core, toolchain: Toolchain, out: Path) -> str:
    """Preprocess the linker script, then compile and link everything in one gcc call; gcc's stderr."""
    gcc = str(toolchain.gcc)
    script = out / "link.ld"
    template = str(KERNELS_C / LINKER_TEMPLATE)
    _run(
        [gcc, "-E", "-P", "-x", "c", *_memory_defines(core), template, "-o", str(script)],
        "linker script",
        core,
    )
    sources = sorted(str(p) for d in SOURCE_DIRS for p in (KERNELS_C / d).rglob("*.c"))
    link = ["-nostartfiles", "-T", str(script), "-Wl,--gc-sections", f"-Wl,-Map={out / 'harness.map'}"]
    elf = ["-o", str(out / "harness.elf")]
    return _run([gcc, *_cflags(core), *sources, *link, *elf], "compiling the harness", core)


def build_harness(core: Core | str, *, force: bool = False) -> Harness:
    """The harness ELF for ``core``, built now or found in the cache."""
    core = get_core(core) if isinstance(core, str) else core
    if not (KERNELS_C / LINKER_TEMPLATE).is_file():
        raise QemuError(f"kernels_c: sources expected at {KERNELS_C} (set REFSIM_KERNELS_C), found none")
    toolchain = find_toolchain()
    key = build_key(core, toolchain)
    final = cache_root() / f"{core.name}-{key}"

    def make(staging: Path) -> None:
        (staging / "build.log").write_text(_compile(core, toolchain, staging))

    elf = build_once(final, "harness.elf", make, force=force)
    return Harness(core=core, elf=elf, key=key, warnings=(final / "build.log").read_text())


def build_once(final: Path, product: str, make: Callable[[Path], None], *, force: bool = False) -> Path:
    """``final / product``, found in the cache or made now by ``make(staging)`` in a temporary
    directory beside ``final`` that is then renamed into place. Atomic, so concurrent test workers
    may race safely: a lost race keeps the winner's build; ``force`` rebuilds.

    Builders of the same ``final`` on one machine (campaign workers starting together on a fresh
    node) take turns on a lock file beside it, so the build runs once per node, not once per
    worker: the others wait, then find it made."""
    if (final / product).is_file() and not force:
        return final / product
    final.parent.mkdir(parents=True, exist_ok=True)
    with _build_lock(final):
        _build_unlocked(final, product, make, force=force)
    return final / product


@contextlib.contextmanager
def _build_lock(final: Path) -> Iterator[None]:
    """An exclusive lock on ``.<final>.lock`` (flock; released when the holder exits, even killed)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: the atomic rename alone keeps the cache sound
        yield
        return
    with open(final.parent / f".{final.name}.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build_unlocked(final: Path, product: str, make: Callable[[Path], None], *, force: bool) -> None:
    if force and final.exists():
        shutil.rmtree(final)
    if not (final / product).is_file():
        staging = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=final.parent))
        try:
            make(staging)
            try:
                staging.rename(final)
            except OSError:
                if not (final / product).is_file():  # not a lost race: a real failure
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)

"""The five Cortex-M cores kernels_c runs on under QEMU, as data (shared REFERENCE.md section 3).

One frozen table, :data:`CORES`, defined once: the ISA tier, the gcc flags, the QEMU machine and
CPU, and the memory map the linker script template (``kernels_c/boards/cortex_m.ld.in``) is
filled with. ``bulk`` is the free RAM where the harness loads a batch file, writes the results
and carves kernel scratch.
"""

from __future__ import annotations

from dataclasses import dataclass

from refsim.qemu.errors import QemuError

#: ISA tiers, poorest first. A core runs its own tier and every poorer one.
TIERS: tuple[str, ...] = ("scalar", "dsp", "mve")

#: Flags every harness build gets (the per-core flags select CPU, FPU and float ABI).
COMMON_CFLAGS: tuple[str, ...] = (
    "-mthumb",
    "-O2",
    "-g",
    "-std=c11",
    "-ffunction-sections",
    "-fdata-sections",
    "-Wall",
    "-Wextra",
)

#: Main stack at the top of ``ram``.
STACK_SIZE = 64 * 1024


@dataclass(frozen=True)
class MemoryRegion:
    """A contiguous address range: ``origin`` and ``length`` in bytes."""

    origin: int
    length: int

    @property
    def end(self) -> int:
        return self.origin + self.length


@dataclass(frozen=True)
class Core:
    """One Cortex-M core on one QEMU board.

    ``code`` holds the vector table, code and the load image of ``.data``; ``ram`` holds
    ``.data``, ``.bss`` and the stack; ``bulk`` is free RAM for batch data.
    """

    name: str
    tier: str
    machine: str
    qemu_cpu: str
    gcc_flags: tuple[str, ...]
    code: MemoryRegion
    ram: MemoryRegion
    bulk: MemoryRegion

    @property
    def tiers(self) -> tuple[str, ...]:
        """The tiers whose kernel variants this core can run (its own and every poorer one)."""
        return TIERS[: TIERS.index(self.tier) + 1]

    @property
    def qemu_args(self) -> tuple[str, ...]:
        return ("-M", self.machine, "-cpu", self.qemu_cpu)


_MPS2_CODE = MemoryRegion(0x0000_0000, 4 << 20)
_MPS2_RAM = MemoryRegion(0x2000_0000, 4 << 20)

CORES: dict[str, Core] = {
    core.name: core
    for core in (
        Core(
            "cortex-m3",
            "scalar",
            "mps2-an385",
            "cortex-m3",
            ("-mcpu=cortex-m3", "-mfloat-abi=soft"),
            _MPS2_CODE,
            _MPS2_RAM,
            MemoryRegion(0x2100_0000, 16 << 20),
        ),
        Core(
            "cortex-m4",
            "dsp",
            "mps2-an386",
            "cortex-m4",
            ("-mcpu=cortex-m4", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"),
            _MPS2_CODE,
            _MPS2_RAM,
            MemoryRegion(0x2100_0000, 16 << 20),
        ),
        Core(
            "cortex-m7",
            "dsp",
            "mps2-an500",
            "cortex-m7",
            ("-mcpu=cortex-m7", "-mfloat-abi=hard", "-mfpu=fpv5-d16"),
            _MPS2_CODE,
            _MPS2_RAM,
            MemoryRegion(0x6000_0000, 16 << 20),
        ),
        Core(
            "cortex-m33",
            "dsp",
            "mps2-an505",
            "cortex-m33",
            ("-mcpu=cortex-m33", "-mfloat-abi=hard", "-mfpu=fpv5-sp-d16"),
            MemoryRegion(0x1000_0000, 4 << 20),
            MemoryRegion(0x8000_0000, 8 << 20),
            MemoryRegion(0x8080_0000, 8 << 20),
        ),
        Core(
            "cortex-m55",
            "mve",
            "mps3-an547",
            "cortex-m55",
            ("-mcpu=cortex-m55", "-mfloat-abi=hard"),
            MemoryRegion(0x0000_0000, 512 << 10),
            MemoryRegion(0x2100_0000, 4 << 20),
            MemoryRegion(0x6000_0000, 16 << 20),
        ),
    )
}


def get_core(name: str) -> Core:
    """The core named ``name`` (``cortex-m4``) or running on the QEMU machine ``name`` (``mps2-an386``)."""
    if name in CORES:
        return CORES[name]
    for core in CORES.values():
        if core.machine == name:
            return core
    known = ", ".join(f"{c.name} ({c.machine})" for c in CORES.values())
    raise QemuError(f"kernels_c: core must be one of {known}, got {name!r}")

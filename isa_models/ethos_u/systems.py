"""Ethos-U system configurations and memory modes: Vela's named presets as frozen tables.

A *system configuration* (:class:`NpuSystem`) fixes the NPU clock and what sits behind its two
AXI ports: SRAM, off-chip flash or DRAM, each with a clock scale, the number of ports used,
burst length and read/write latency in NPU cycles. A *memory mode* (:class:`MemoryMode`) says
which port holds the constants (weights, biases, LUTs), which the activation arena, and which
serves as the fast cache for weights streamed from a slow memory. The bandwidth one memory
gives the NPU is

    bytes_per_cycle(memory) = axi_bytes_per_cycle(accelerator) * ports_used * clock_scale

(8-byte AXI on U55, 16-byte on U65/U85), e.g. U55 High-End Embedded flash 8 * 1 * 0.125 = 1
byte per NPU cycle = 0.5 GB/s at 500 MHz. Values: Vela 5.1.0's ``config_files/Arm/vela.ini``
(System_Config.* and Memory_Mode.* sections), restated as named fields.

Defaults when no configuration is named, as Vela's ``architecture_features`` chooses them
(``_set_default_sys_config`` / ``_set_default_mem_mode``): U55 -> Ethos_U55_High_End_Embedded
with Shared_Sram; U65 -> Ethos_U65_Client_Server with Dedicated_Sram_384KB; U85 ->
Ethos_U85_SYS_DRAM_Mid with Dedicated_Sram_384KB. ExecuTorch's EthosUCompileSpec (1.5.1)
picks other defaults for U65 (Ethos_U65_High_End, Dedicated_Sram_384KB) and U85
(Ethos_U85_SYS_DRAM_Mid, Sram_Only): :data:`EXECUTORCH_DEFAULTS`.
"""

from __future__ import annotations

from dataclasses import dataclass

from isa_models.errors import UnknownNameError


@dataclass(frozen=True)
class Memory:
    """One memory behind an AXI port (a vela.ini ``<Memory>_*`` group)."""

    kind: str  # "sram", "dram", "off_chip_flash"
    clock_scale: float
    burst_length: int  # bytes
    read_latency: int  # NPU cycles
    write_latency: int
    max_reads: int
    max_writes: int
    ports_used: int = 1


@dataclass(frozen=True)
class NpuSystem:
    """A Vela System_Config: NPU clock and the memories on AXI0 and AXI1."""

    name: str
    clock_hz: float
    axi0: Memory
    axi1: Memory

    @property
    def clock_mhz(self) -> float:
        return self.clock_hz / 1e6


@dataclass(frozen=True)
class MemoryMode:
    """A Vela Memory_Mode: which AXI port (0 or 1) holds constants, the arena and the cache."""

    name: str
    const_port: int
    arena_port: int
    cache_port: int
    arena_cache_size: int | None = None  # bytes of the dedicated SRAM, None = unbounded

    @property
    def spilling(self) -> bool:
        """Dedicated SRAM: the arena lives in the slow memory and the SRAM caches it."""
        return self.cache_port != self.arena_port


def _flash(scale: float, latency: int, reads: int = 2) -> Memory:
    return Memory("off_chip_flash", scale, 128, latency, 0, reads, 0)


def _dram(scale: float, reads: int, writes: int, ports: int = 1) -> Memory:
    return Memory("dram", scale, 128, 500, 250, reads, writes, ports)


def _sram(burst: int, latency: int, n: int, ports: int = 1) -> Memory:
    return Memory("sram", 1.0, burst, latency, latency, n, n, ports)


#: vela.ini System_Config sections.
SYSTEMS: dict[str, NpuSystem] = {
    s.name: s
    for s in (
        NpuSystem("Ethos_U55_Deep_Embedded", 200e6, _sram(32, 32, 8), _flash(0.0625, 64)),
        NpuSystem("Ethos_U55_High_End_Embedded", 500e6, _sram(32, 32, 4), _flash(0.125, 64)),
        NpuSystem("Ethos_U65_Embedded", 500e6, _sram(32, 32, 8), _flash(0.0625, 64)),
        NpuSystem("Ethos_U65_Mid_End", 500e6, _sram(32, 32, 8), _dram(0.46875, 12, 6)),
        NpuSystem("Ethos_U65_High_End", 1e9, _sram(32, 32, 16), _dram(0.234375, 24, 12)),
        NpuSystem("Ethos_U65_Client_Server", 1e9, _sram(32, 32, 16), _dram(0.75, 24, 12)),
        NpuSystem("Ethos_U85_SYS_Flash_Low", 200e6, _sram(64, 8, 8, 2), _flash(0.0625, 32)),
        NpuSystem("Ethos_U85_SYS_Flash_High", 500e6, _sram(64, 32, 8, 2), _flash(0.0625, 64)),
        NpuSystem("Ethos_U85_SYS_DRAM_Low", 500e6, _sram(64, 16, 8, 2), _dram(0.46875, 24, 12)),
        NpuSystem("Ethos_U85_SYS_DRAM_Mid", 1e9, _sram(64, 32, 8, 2), _dram(0.75, 64, 32)),
        NpuSystem("Ethos_U85_SYS_DRAM_High", 1e9, _sram(64, 32, 8, 4), _dram(0.75, 64, 32, 2)),
    )
}

#: vela.ini Memory_Mode sections.
MEMORY_MODES: dict[str, MemoryMode] = {
    m.name: m
    for m in (
        MemoryMode("Sram_Only", 0, 0, 0),
        MemoryMode("Shared_Sram", 1, 0, 0),
        MemoryMode("Dedicated_Sram", 1, 1, 0),
        MemoryMode("Dedicated_Sram_256KB", 1, 1, 0, 256 * 1024),
        MemoryMode("Dedicated_Sram_384KB", 1, 1, 0, 384 * 1024),
        MemoryMode("Dedicated_Sram_512KB", 1, 1, 0, 512 * 1024),
    )
}

#: Vela's own defaults per family (architecture_features.py), see the module docstring.
VELA_DEFAULTS: dict[str, tuple[str, str]] = {
    "u55": ("Ethos_U55_High_End_Embedded", "Shared_Sram"),
    "u65": ("Ethos_U65_Client_Server", "Dedicated_Sram_384KB"),
    "u85": ("Ethos_U85_SYS_DRAM_Mid", "Dedicated_Sram_384KB"),
}

#: ExecuTorch 1.5.1 EthosUCompileSpec defaults per family.
EXECUTORCH_DEFAULTS: dict[str, tuple[str, str]] = {
    "u55": ("Ethos_U55_High_End_Embedded", "Shared_Sram"),
    "u65": ("Ethos_U65_High_End", "Dedicated_Sram_384KB"),
    "u85": ("Ethos_U85_SYS_DRAM_Mid", "Sram_Only"),
}


def _find(table: dict, what: str, name: str):
    for key, value in table.items():
        if key.lower() == name.lower():
            return value
    raise UnknownNameError(what, name, tuple(table))


def get_npu_system(name: str) -> NpuSystem:
    """The System_Config named ``name`` (case-insensitive); a one-line error otherwise."""
    return _find(SYSTEMS, "Ethos-U system configuration", name)


def get_memory_mode(name: str) -> MemoryMode:
    """The Memory_Mode named ``name`` (case-insensitive); a one-line error otherwise."""
    return _find(MEMORY_MODES, "Ethos-U memory mode", name)


def resolve(family: str, system: str | None, memory_mode: str | None) -> tuple[NpuSystem, MemoryMode]:
    """The system and memory mode to use: the named ones, else Vela's defaults for ``family``.

    ``system`` may name both as ``<System_Config>:<Memory_Mode>`` (``--system`` on the CLI).
    """
    if system and ":" in system:
        system, memory_mode = system.split(":", 1)
    default_system, default_mode = VELA_DEFAULTS[family]
    return get_npu_system(system or default_system), get_memory_mode(memory_mode or default_mode)


__all__ = [
    "EXECUTORCH_DEFAULTS",
    "MEMORY_MODES",
    "SYSTEMS",
    "VELA_DEFAULTS",
    "Memory",
    "MemoryMode",
    "NpuSystem",
    "get_memory_mode",
    "get_npu_system",
    "resolve",
]

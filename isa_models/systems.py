"""Named system presets: a core on a part, with the memory facts the cycle estimate needs.

One frozen table, :data:`SYSTEMS`. Each preset names its core (isa_models/cores.py), the clock
it runs at, where code, weights and activations live, and the wait states of those memories,
every fact with its source (datasheet or reference-manual name and section) in ``sources``.
``ideal-<core>`` presets are zero-wait-state systems (all memories single cycle).

The timing layer (refsim/qemu/timing.py) charges, per executed block,

    ifetch_ws = 0                                         code in TCM/SRAM, or in flash behind
                                                          an accelerator/instruction cache (warm)
              = max(0, lines(block) * (1 + ws) - cycles(block)) + jumps_in(block) * ws
                                                          code in flash without one: sequential
                                                          lines of ``flash_line_bytes`` stream
                                                          behind execution; a taken branch waits
                                                          for a fresh line
    data_ws   = line_switches(weights) * ws               weights in flash/MRAM read through a
                                                          one-line buffer (no data cache, or
                                                          weights larger than it): every read of
                                                          a line other than the last one read
              = distinct_lines(weights) * ws              the weights fit ``data_cache_bytes``:
                                                          each line missed once (cold cache)

Latency here means wait states added to a single-cycle access; SRAM and TCM are zero-wait on
every preset unless stated.

Provenance: the values were entered from the documents and sections named in ``sources``
without a copy of them in the environment that wrote this table; a value the document does not
state (MRAM wait states on the Alif E8, flash wait states behind the nRF5340's cache) is marked
"model value" in its comment. Check a preset against its reference manual before relying on it.
"""

from __future__ import annotations

from dataclasses import dataclass

from isa_models.cores import CORE_MODELS, Source, get_core_model
from isa_models.errors import UnknownNameError

#: Memories a preset may place code, weights or activations in.
MEMORIES: tuple[str, ...] = ("flash", "sram", "itcm", "dtcm", "mram")


@dataclass(frozen=True)
class SystemPreset:
    """A core on a part: clock, memories and their wait states (see the module docstring)."""

    name: str
    core: str
    part: str
    clock_mhz: float
    code_memory: str
    weights_memory: str
    activations_memory: str
    flash_wait_states: int  # at clock_mhz, for instruction fetch and data reads alike
    flash_line_bytes: int  # width of one flash read (prefetch/line buffer)
    instruction_accelerator: str | None  # ART accelerator, flash cache, L1 I-cache, ...
    data_cache: str | None  # L1 D-cache or flash data cache covering weights in flash
    data_cache_bytes: int  # its capacity (0: none)
    sram_wait_states: int
    tcm_wait_states: int
    sources: tuple[Source, ...]

    @property
    def ifetch_wait_states(self) -> int:
        """Wait states one instruction-fetch line costs (0 unless code is in flash)."""
        return self.flash_wait_states if self.code_memory in ("flash", "mram") else 0

    @property
    def data_wait_states(self) -> int:
        """Wait states one weights read costs (0 unless weights are in flash/MRAM)."""
        return self.flash_wait_states if self.weights_memory in ("flash", "mram") else 0


def _ideal(core: str) -> SystemPreset:
    return SystemPreset(
        name=f"ideal-{core.removeprefix('cortex-')}",
        core=core,
        part="(none: zero-wait-state memories)",
        clock_mhz=100.0,
        code_memory="itcm",
        weights_memory="dtcm",
        activations_memory="dtcm",
        flash_wait_states=0,
        flash_line_bytes=16,
        instruction_accelerator=None,
        data_cache=None,
        data_cache_bytes=0,
        sram_wait_states=0,
        tcm_wait_states=0,
        sources=(Source("refsim", "isa_models/systems.py", "every memory single cycle; 100 MHz nominal"),),
    )


_RM0432 = "ST RM0432 Reference manual STM32L4+ Series"
_RM0455 = "ST RM0455 Reference manual STM32H7A3/7B3/7B0"
_RM0385 = "ST RM0385 Reference manual STM32F75xxx/STM32F74xxx"
_RM0456 = "ST RM0456 Reference manual STM32U575/585"
_RM0444 = "ST RM0444 Reference manual STM32G0x1"

_PRESETS: tuple[SystemPreset, ...] = (
    SystemPreset(
        name="corstone-300",
        core="cortex-m55",
        part="Arm Corstone-300 (SSE-300) on MPS3 FPGA image AN547",
        clock_mhz=32.0,
        code_memory="itcm",
        weights_memory="sram",
        activations_memory="dtcm",
        flash_wait_states=0,
        flash_line_bytes=16,
        instruction_accelerator=None,
        data_cache=None,
        data_cache_bytes=0,
        sram_wait_states=0,
        tcm_wait_states=0,
        sources=(
            Source(
                "Arm AN547 Application Note (Arm Corstone SSE-300 with Cortex-M55 and Ethos-U55)",
                "Overview; Clocks",
                "FPGA system clock 32 MHz",
            ),
            Source(
                "Arm Corstone SSE-300 Technical Reference Manual (101772)",
                "Memory map overview",
                "ITCM 512 KiB and DTCM 512 KiB zero wait state, 2 MiB SRAM (ISRAM0/1)",
            ),
        ),
    ),
    SystemPreset(
        name="alif-e8",
        core="cortex-m55",
        part="Alif Semiconductor Ensemble E8, M55-HP subsystem",
        clock_mhz=400.0,
        code_memory="itcm",
        weights_memory="mram",
        activations_memory="dtcm",
        flash_wait_states=4,  # MRAM read at 400 MHz core clock through the AXI fabric (model value)
        flash_line_bytes=16,
        instruction_accelerator=None,
        data_cache="M55 L1 D-cache 32 KiB",
        data_cache_bytes=32768,
        sram_wait_states=0,
        tcm_wait_states=0,
        sources=(
            Source(
                "Alif Ensemble E8 datasheet",
                "Features; Application processing subsystems",
                "Cortex-M55 High-Performance at up to 400 MHz with ITCM/DTCM; on-chip MRAM non-volatile memory",
            ),
            Source(
                "Arm Cortex-M55 TRM (101051)",
                "1.2 Features",
                "L1 I-cache and D-cache 32 KiB each (configured)",
            ),
        ),
    ),
    SystemPreset(
        name="nucleo-l4r5zi",
        core="cortex-m4",
        part="ST STM32L4R5ZI on NUCLEO-L4R5ZI",
        clock_mhz=120.0,
        code_memory="flash",
        weights_memory="flash",
        activations_memory="sram",
        flash_wait_states=5,
        flash_line_bytes=8,
        instruction_accelerator="ART accelerator (prefetch + 1 KiB instruction cache)",
        data_cache="ART data cache (8 lines)",
        data_cache_bytes=256,
        sram_wait_states=0,
        tcm_wait_states=0,
        sources=(
            Source(
                _RM0432,
                "3.3.3 Read access latency, Table 12 Number of wait states according to CPU clock",
                "5 WS at 120 MHz, range 1 boost mode",
            ),
            Source(
                _RM0432,
                "3.3.4 Adaptive real-time memory accelerator (ART Accelerator)",
                "64-bit flash read, prefetch buffer, instruction cache and data cache",
            ),
            Source("ST DS12023 STM32L4R5xx datasheet", "Features", "Arm Cortex-M4 with FPU up to 120 MHz"),
        ),
    ),
    SystemPreset(
        name="nucleo-h7a3zi",
        core="cortex-m7",
        part="ST STM32H7A3ZI-Q on NUCLEO-H7A3ZI-Q",
        clock_mhz=280.0,
        code_memory="flash",
        weights_memory="flash",
        activations_memory="dtcm",
        flash_wait_states=6,
        flash_line_bytes=16,
        instruction_accelerator="Cortex-M7 L1 I-cache 16 KiB",
        data_cache="Cortex-M7 L1 D-cache 16 KiB",
        data_cache_bytes=16384,
        sram_wait_states=0,
        tcm_wait_states=0,
        sources=(
            Source(
                _RM0455,
                "4.3.8 FLASH read access latency, Table: FLASH recommended number of wait states",
                "6 WS at 280 MHz (VOS0)",
            ),
            Source(
                "ST DS13195 STM32H7A3xI/G datasheet",
                "Features",
                "Cortex-M7 up to 280 MHz, 16 KiB I-cache and 16 KiB D-cache, 64 KiB ITCM, 128 KiB DTCM, "
                "128-bit flash word",
            ),
        ),
    ),
    SystemPreset(
        name="disco-f746ng",
        core="cortex-m7",
        part="ST STM32F746NG on 32F746GDISCOVERY",
        clock_mhz=216.0,
        code_memory="flash",
        weights_memory="flash",
        activations_memory="dtcm",
        flash_wait_states=7,
        flash_line_bytes=16,
        instruction_accelerator="ART accelerator on ITCM interface + L1 I-cache 4 KiB",
        data_cache="Cortex-M7 L1 D-cache 4 KiB",
        data_cache_bytes=4096,
        sram_wait_states=0,
        tcm_wait_states=0,
        sources=(
            Source(
                _RM0385,
                "3.3.2 Read access latency, Table 5 Number of wait states according to CPU clock",
                "7 WS at 216 MHz, 2.7-3.6 V",
            ),
            Source(
                _RM0385,
                "3.3.3 Flash memory accelerator (ART)",
                "128-bit flash read over ITCM, ART with prefetch and 64 lines of 128 bits",
            ),
            Source(
                "ST DS10916 STM32F745xx/746xx datasheet",
                "Features",
                "Cortex-M7 up to 216 MHz, 4 KiB I-cache and D-cache, 64 KiB DTCM, 16 KiB ITCM",
            ),
        ),
    ),
    SystemPreset(
        name="nrf5340",
        core="cortex-m33",
        part="Nordic nRF5340 application core",
        clock_mhz=128.0,
        code_memory="flash",
        weights_memory="flash",
        activations_memory="sram",
        flash_wait_states=3,  # model value at 128 MHz; the PS states cache-hit single cycle
        flash_line_bytes=16,
        instruction_accelerator="CACHE: 8 KiB instruction/data cache",
        data_cache="CACHE: 8 KiB instruction/data cache (shared)",
        data_cache_bytes=8192,
        sram_wait_states=0,
        tcm_wait_states=0,
        sources=(
            Source(
                "Nordic nRF5340 Product Specification v1.x",
                "Application core; CACHE — Instruction and data cache",
                "Cortex-M33 at 64 or 128 MHz, 1 MiB flash, 512 KiB RAM, 8 KiB 2-way cache",
            ),
        ),
    ),
    SystemPreset(
        name="ek-ra6m4",
        core="cortex-m33",
        part="Renesas RA6M4 (R7FA6M4AF3CFB) on EK-RA6M4",
        clock_mhz=200.0,
        code_memory="flash",
        weights_memory="flash",
        activations_memory="sram",
        flash_wait_states=3,
        flash_line_bytes=16,
        instruction_accelerator="FCACHE flash cache + prefetch buffer",
        data_cache=None,
        data_cache_bytes=0,
        sram_wait_states=0,
        tcm_wait_states=0,
        sources=(
            Source(
                "Renesas RA6M4 Group User's Manual: Hardware",
                "Memory Wait Cycle Control Register for Code Flash (FLWT)",
                "3 wait cycles for ICLK above 150 MHz up to 200 MHz",
            ),
            Source(
                "Renesas RA6M4 Group User's Manual: Hardware",
                "Flash Cache (FCACHE)",
                "flash cache and prefetch buffer for code flash",
            ),
            Source(
                "MLPerf Tiny v1.x results (REFERENCE.md section 4)", "EK-RA6M4 row", "Cortex-M33 at 200 MHz"
            ),
        ),
    ),
    SystemPreset(
        name="nucleo-u575zi",
        core="cortex-m33",
        part="ST STM32U575ZI-Q on NUCLEO-U575ZI-Q",
        clock_mhz=160.0,
        code_memory="flash",
        weights_memory="flash",
        activations_memory="sram",
        flash_wait_states=4,
        flash_line_bytes=16,
        instruction_accelerator="ICACHE 8 KiB",
        data_cache="DCACHE 4 KiB",
        data_cache_bytes=4096,
        sram_wait_states=0,
        tcm_wait_states=0,
        sources=(
            Source(
                _RM0456,
                "7.3.3 Read access latency, Table: Number of wait states according to CPU clock",
                "4 WS at 160 MHz, range 1",
            ),
            Source(
                _RM0456, "8 Instruction cache (ICACHE); 9 Data cache (DCACHE)", "8 KiB ICACHE, 4 KiB DCACHE"
            ),
        ),
    ),
    SystemPreset(
        name="ek-ra8d1",
        core="cortex-m85",
        part="Renesas RA8D1 (R7FA8D1BH) on EK-RA8D1",
        clock_mhz=480.0,
        code_memory="flash",
        weights_memory="flash",
        activations_memory="sram",
        flash_wait_states=5,
        flash_line_bytes=32,
        instruction_accelerator="Cortex-M85 L1 I-cache 32 KiB",
        data_cache="Cortex-M85 L1 D-cache 32 KiB",
        data_cache_bytes=32768,
        sram_wait_states=0,
        tcm_wait_states=0,
        sources=(
            Source(
                "Renesas RA8D1 Group User's Manual: Hardware",
                "Code flash wait cycles (FLWT)",
                "wait cycles for code flash at 480 MHz CPU clock",
            ),
            Source(
                "Renesas RA8D1 datasheet",
                "Features",
                "Cortex-M85 at 480 MHz, 32 KiB I-cache and D-cache, 128 KiB ITCM and DTCM",
            ),
            Source(
                "MLPerf Tiny v1.x results (REFERENCE.md section 4)", "EK-RA8D1 row", "Cortex-M85 at 480 MHz"
            ),
        ),
    ),
    SystemPreset(
        name="nucleo-g0b1re",
        core="cortex-m0plus",
        part="ST STM32G0B1RE on NUCLEO-G0B1RE",
        clock_mhz=64.0,
        code_memory="flash",
        weights_memory="flash",
        activations_memory="sram",
        flash_wait_states=2,
        flash_line_bytes=8,
        instruction_accelerator="prefetch buffer + instruction cache (2 lines of 64 bits)",
        data_cache=None,
        data_cache_bytes=0,
        sram_wait_states=0,
        tcm_wait_states=0,
        sources=(
            Source(
                _RM0444,
                "3.3.4 Read access latency, Table: Number of wait states according to flash clock",
                "2 WS for 48 < HCLK <= 64 MHz, range 1",
            ),
            Source(
                _RM0444,
                "3.3.5 Flash prefetch and cache",
                "64-bit reads, prefetch buffer and instruction cache",
            ),
        ),
    ),
)

SYSTEMS: dict[str, SystemPreset] = {
    preset.name: preset for preset in (*_PRESETS, *(_ideal(core) for core in CORE_MODELS))
}


def get_system(name: str) -> SystemPreset:
    """The preset named ``name``; a one-line error listing the valid names otherwise."""
    try:
        return SYSTEMS[name]
    except KeyError:
        raise UnknownNameError("system", name, tuple(SYSTEMS)) from None


def systems_for(core: str) -> tuple[SystemPreset, ...]:
    """Every preset built on ``core``."""
    get_core_model(core)
    return tuple(s for s in SYSTEMS.values() if s.core == core)


def _check() -> None:
    for preset in SYSTEMS.values():
        get_core_model(preset.core)
        for memory in (preset.code_memory, preset.weights_memory, preset.activations_memory):
            assert memory in MEMORIES, (preset.name, memory)


_check()

__all__ = ["MEMORIES", "SYSTEMS", "SystemPreset", "get_system", "systems_for"]

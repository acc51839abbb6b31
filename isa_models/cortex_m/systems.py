"""Named system presets: a core on a part, with the memory facts the cycle estimate needs.

One frozen table, :data:`SYSTEMS`. Each preset names its core (isa_models/cortex_m/cores.py), the clock
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

Provenance: every fact names its document and section (the tuples in isa_models/cortex_m/system_sources.py)
and says how far it was checked (``Source.status``, isa_models/cortex_m/cores.py ``SOURCE_STATUSES``):
``confirmed`` against a public copy (``url``: the reference manual's text, or the vendor's own
code that encodes the manual's table, e.g. ST's HAL wait-state tables, Renesas FSP's
``bsp_feature.h``), ``corrected`` to what that copy states (the old value in the fact),
``unverified`` where no public copy was found (the value was entered from the named document
without a copy at hand: check it before relying on it), ``model`` for refsim's own choices.
``fields`` names the table fields a source backs; :func:`fact_status` gives a field's status.
Wait states are in core clock cycles: where the flash runs on a slower bus clock (RA8D1: FLWT
counts ICLK = CPUCLK / 2 cycles) the fact says how the core-cycle figure follows from the
documented one.
"""

from __future__ import annotations

from dataclasses import dataclass

from isa_models.cortex_m.cores import CORE_MODELS, Source, get_core_model
from isa_models.cortex_m.system_sources import SOURCES
from isa_models.errors import UnknownNameError

#: Memories a preset may place code, weights or activations in.
MEMORIES: tuple[str, ...] = ("flash", "sram", "itcm", "dtcm", "mram")

#: The fields of a preset that some source must back (``tcm_wait_states`` too when a TCM is used).
FACT_FIELDS: tuple[str, ...] = (
    "clock_mhz",
    "flash_wait_states",
    "flash_line_bytes",
    "instruction_accelerator",
    "data_cache_bytes",
    "sram_wait_states",
)


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
        sources=(
            Source(
                "refsim",
                "isa_models/cortex_m/systems.py",
                "every memory single cycle; 100 MHz nominal",
                "model",
                fields=(*FACT_FIELDS, "tcm_wait_states"),
            ),
        ),
    )


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
        sources=SOURCES["corstone-300"],
    ),
    SystemPreset(
        name="alif-e8",
        core="cortex-m55",
        part="Alif Semiconductor Ensemble E8, M55-HP subsystem",
        clock_mhz=400.0,
        code_memory="itcm",
        weights_memory="mram",
        activations_memory="dtcm",
        flash_wait_states=4,  # MRAM read at 400 MHz through the AXI fabric: no public figure found
        flash_line_bytes=16,
        instruction_accelerator=None,
        data_cache="M55 L1 D-cache 32 KiB",
        data_cache_bytes=32768,
        sram_wait_states=0,
        tcm_wait_states=0,
        sources=SOURCES["alif-e8"],
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
        sources=SOURCES["nucleo-l4r5zi"],
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
        sources=SOURCES["nucleo-h7a3zi"],
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
        sources=SOURCES["disco-f746ng"],
    ),
    SystemPreset(
        name="nrf5340",
        core="cortex-m33",
        part="Nordic nRF5340 application core",
        clock_mhz=128.0,
        code_memory="flash",
        weights_memory="flash",
        activations_memory="sram",
        flash_wait_states=5,
        flash_line_bytes=16,
        instruction_accelerator="CACHE: 8 KiB instruction/data cache",
        data_cache="CACHE: 8 KiB instruction/data cache (shared)",
        data_cache_bytes=8192,
        sram_wait_states=0,
        tcm_wait_states=0,
        sources=SOURCES["nrf5340"],
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
        instruction_accelerator="FCACHE flash cache + CM33 C-cache",
        data_cache=None,
        data_cache_bytes=0,
        sram_wait_states=1,
        tcm_wait_states=0,
        sources=SOURCES["ek-ra6m4"],
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
        data_cache="ICACHE 8 KiB (C-bus: code and constant data from internal flash)",
        data_cache_bytes=8192,
        sram_wait_states=0,
        tcm_wait_states=0,
        sources=SOURCES["nucleo-u575zi"],
    ),
    SystemPreset(
        name="ek-ra8d1",
        core="cortex-m85",
        part="Renesas RA8D1 (R7FA8D1BH) on EK-RA8D1",
        clock_mhz=480.0,
        code_memory="flash",
        weights_memory="flash",
        activations_memory="sram",
        flash_wait_states=9,
        flash_line_bytes=32,
        instruction_accelerator="Cortex-M85 L1 I-cache 32 KiB",
        data_cache="Cortex-M85 L1 D-cache 32 KiB",
        data_cache_bytes=32768,
        sram_wait_states=2,
        tcm_wait_states=0,
        sources=SOURCES["ek-ra8d1"],
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
        instruction_accelerator="prefetch buffer + instruction cache",
        data_cache=None,
        data_cache_bytes=0,
        sram_wait_states=0,
        tcm_wait_states=0,
        sources=SOURCES["nucleo-g0b1re"],
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


def fact_status(preset: SystemPreset, field: str) -> str:
    """How far ``field`` of ``preset`` was checked: the best status among the sources backing it
    (``confirmed`` or ``corrected`` over ``model`` over ``unverified``); ``unverified`` if none does."""
    statuses = {s.status for s in preset.sources if field in s.fields}
    for status in ("corrected", "confirmed", "model"):
        if status in statuses:
            return status
    return "unverified"


def required_fields(preset: SystemPreset) -> tuple[str, ...]:
    """The fields some source of ``preset`` must back."""
    memories = (preset.code_memory, preset.weights_memory, preset.activations_memory)
    tcm = ("tcm_wait_states",) if any(m in ("itcm", "dtcm") for m in memories) else ()
    return FACT_FIELDS + tcm


def systems_for(core: str) -> tuple[SystemPreset, ...]:
    """Every preset built on ``core``."""
    get_core_model(core)
    return tuple(s for s in SYSTEMS.values() if s.core == core)


def _check() -> None:
    for preset in SYSTEMS.values():
        get_core_model(preset.core)
        for memory in (preset.code_memory, preset.weights_memory, preset.activations_memory):
            assert memory in MEMORIES, (preset.name, memory)
        backed = {f for s in preset.sources for f in s.fields}
        assert backed <= set(FACT_FIELDS) | {"tcm_wait_states"}, (preset.name, backed)
        assert set(required_fields(preset)) <= backed, (preset.name, set(required_fields(preset)) - backed)


_check()

__all__ = [
    "FACT_FIELDS",
    "MEMORIES",
    "SYSTEMS",
    "SystemPreset",
    "fact_status",
    "get_system",
    "required_fields",
    "systems_for",
]

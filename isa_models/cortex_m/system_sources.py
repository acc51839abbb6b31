"""Where the facts of the named system presets (isa_models/cortex_m/systems.py) come from.

One tuple of :class:`~isa_models.cortex_m.cores.Source` per preset name, each saying how far it was
checked (``confirmed`` / ``corrected`` against the public copy in ``url``, ``unverified``,
``model``) and which preset fields it backs. Kept apart from the numbers so the table stays
readable; systems.py checks that every preset field it needs is backed by some source.
"""

from __future__ import annotations

from isa_models.cortex_m.cores import Source

_RM0432 = "ST RM0432 Reference manual STM32L4+ Series"
_RM0455 = "ST RM0455 Reference manual STM32H7A3/7B3/7B0"
_RM0385 = "ST RM0385 Reference manual STM32F75xxx/STM32F74xxx"
_RM0456 = "ST RM0456 Reference manual STM32U575/585"
_RM0444 = "ST RM0444 Reference manual STM32G0x1"
_RA6M4_UM = "Renesas RA6M4 Group User's Manual: Hardware"
_RA8D1_UM = "Renesas RA8D1 Group User's Manual: Hardware"
_NRF5340_PS = "Nordic nRF5340 Product Specification"

# Public copies the facts were checked against (commits of the vendor code that was read).
_ST_HAL = "https://github.com/STMicroelectronics/stm32{}xx_hal_driver/blob/{}/{}"
_L4_HAL = "l4", "a9f8b8a1ce65f8bec3d7ce992afb2daa3495a586"
_H7_HAL = "h7", "6f5e35e30ac09ba7bf44139a97b289d3df53cf9c"
_F7_HAL = "f7", "72edf6a75639560b49ae61e2d20b52b57b3bd69c"
_U5_HAL = "u5", "e41e0c51f612cd27641e90e3c4f5a7e9388130ff"
_G0_HAL = "g0", "9595728f78a7c1d37f246ae31bb4bbe52b0a20c8"
_FSP = "https://github.com/renesas/fsp/blob/e163d58339410b577f56b25b7608c2a663add4a1/ra/fsp/src/bsp/mcu/{}"
_ZEPHYR = "https://github.com/zephyrproject-rtos/zephyr/blob/00584ab596f275dc930af22a8bbba8e0316b972a/{}"
_QEMU = "https://github.com/qemu/qemu/blob/master/hw/arm/{}"
_NRFX = (
    "https://github.com/NordicSemiconductor/nrfx/blob/aa83d4df8d5f41b591f23a8555794632afb3475d/"
    "bsp/stable/mdk/nrf5340_application.h"
)


def _hal(family: tuple[str, str], path: str) -> str:
    return _ST_HAL.format(family[0], family[1], path)


SOURCES: dict[str, tuple[Source, ...]] = {
    "corstone-300": (
        Source(
            "Arm AN547 Application Note (Arm Corstone SSE-300 with Cortex-M55 and Ethos-U55), "
            "as modelled by QEMU hw/arm/mps2-tz.c",
            "mps3tz_an547_class_init",
            "FPGA system clock (sysclk_frq) 32 MHz",
            "confirmed",
            _QEMU.format("mps2-tz.c"),
            ("clock_mhz",),
        ),
        Source(
            "Arm Corstone SSE-300 TRM (101773), as modelled by QEMU hw/arm/armsse.c and mps2-tz.c",
            "SSE-300 TCMs; an547_raminfo",
            "ITCM 512 KiB at 0x0000_0000 and DTCM 512 KiB at 0x2000_0000; SRAM 2 MiB at 0x0100_0000 "
            "and 4 MiB (ISRAM0/1) at 0x2100_0000 (was: '2 MiB SRAM (ISRAM0/1)')",
            "corrected",
            _QEMU.format("armsse.c"),
        ),
        Source(
            "Arm Corstone SSE-300 TRM (101773)",
            "Memory map overview",
            "ITCM/DTCM and SRAM zero wait state (no public copy found; QEMU models no timing)",
            fields=("sram_wait_states", "tcm_wait_states"),
        ),
        Source(
            "refsim",
            "isa_models/cortex_m/systems.py",
            "no flash on the path: code in ITCM, weights in SRAM, activations in DTCM",
            "model",
            fields=(
                "flash_wait_states",
                "flash_line_bytes",
                "instruction_accelerator",
                "data_cache_bytes",
            ),
        ),
    ),
    "alif-e8": (
        Source(
            "Zephyr board documentation, Alif Ensemble E8 Development Kit",
            "Overview",
            "RTSS-HP (High Performance): Cortex-M55 running at up to 400 MHz",
            "confirmed",
            "https://docs.zephyrproject.org/latest/boards/alif/ensemble_e8_dk/doc/index.html",
            ("clock_mhz",),
        ),
        Source(
            "Alif white paper 'RAM Regions and Linker Files in Alif Microcontrollers'",
            "RAM Regions; SRAM2 to SRAM5",
            "SRAM2 (256 KB) and SRAM3 (1024 KB) at 400 MHz are the TCMs of the RTSS-HP M55 "
            "(ITCM 256 KB, DTCM 1 MB); SRAM0/1 bulk SRAM at 400 MHz on Rev B silicon",
            "confirmed",
            "https://alifsemi.com/whitepaper/alif-mcu-ram-regions-and-linker-files/",
            ("tcm_wait_states",),
        ),
        Source(
            "Alif Ensemble E8 datasheet",
            "Features; MRAM",
            "MRAM read wait states at 400 MHz: 4 is a model value, no public copy states a figure",
            fields=("flash_wait_states", "flash_line_bytes"),
        ),
        Source(
            "Arm Cortex-M55 TRM (101051) / Alif Ensemble E8 datasheet",
            "1.2 Features",
            "L1 I-cache and D-cache 32 KiB each as configured on the E8 HP core (not found in a public copy)",
            fields=("data_cache_bytes", "instruction_accelerator", "sram_wait_states"),
        ),
    ),
    "nucleo-l4r5zi": (
        Source(
            _RM0432 + "; ST stm32l4xx_hal_driver LL_SetFlashLatency",
            "3.3.3 Read access latency, Table 12 Number of wait states according to CPU clock",
            "5 WS (6 CPU cycles) for 100 < HCLK <= 120 MHz, range 1, STM32L4R5xx "
            "(UTILS_SCALE1_LATENCY5_FREQ 100 MHz)",
            "confirmed",
            _hal(_L4_HAL, "Src/stm32l4xx_ll_utils.c"),
            ("flash_wait_states",),
        ),
        Source(
            _RM0432 + "; ST stm32l4xx_hal_flash.c",
            "3.3.4 Adaptive real-time memory accelerator (ART Accelerator)",
            "prefetch on I-Code, 32 cache lines of 4x64 bits on I-Code (1 KiB), 8 cache lines of 4x64 "
            "bits on D-Code (256 B); 64-bit flash word (72 bits with ECC)",
            "confirmed",
            _hal(_L4_HAL, "Src/stm32l4xx_hal_flash.c"),
            ("instruction_accelerator", "data_cache_bytes", "flash_line_bytes"),
        ),
        Source(
            "ST DS12023 STM32L4R5xx datasheet",
            "Features",
            "Arm Cortex-M4 with FPU up to 120 MHz (the HAL table above ends at 120 MHz, range 1 boost)",
            "confirmed",
            _hal(_L4_HAL, "Src/stm32l4xx_ll_utils.c"),
            ("clock_mhz",),
        ),
        Source(_RM0432, "2.1 System architecture", "SRAM1/2/3 zero wait state", fields=("sram_wait_states",)),
    ),
    "nucleo-h7a3zi": (
        Source(
            _RM0455 + "; ST stm32h7xx_hal_driver LL_SetFlashLatency (STM32H7_DEV_ID 0x480)",
            "4.3.8 FLASH read access latency, Table: FLASH recommended number of wait states",
            "6 WS (7 CPU cycles) for 264 < HCLK <= 280 MHz, voltage range 0; SYSCLK and HCLK max 280 MHz",
            "confirmed",
            _hal(_H7_HAL, "Src/stm32h7xx_ll_utils.c"),
            ("flash_wait_states", "clock_mhz"),
        ),
        Source(
            "OpenOCD flash/stm32h7x: add support of STM32H7Ax/H7Bx devices",
            "commit message",
            "write block size 128 bits (16 bytes): the 128-bit flash word",
            "confirmed",
            "https://git.gag.com/?a=commit&h=0b7eca17691a16e79881243d6d0f38c3eaeb360d&p=fw%2Fopenocd",
            ("flash_line_bytes",),
        ),
        Source(
            "ST DS13195 STM32H7A3xI/G datasheet",
            "Features",
            "16 KiB I-cache and 16 KiB D-cache, 64 KiB ITCM, 128 KiB DTCM (no public copy found for the "
            "H7A3; the H743's are the same sizes)",
            fields=("instruction_accelerator", "data_cache_bytes", "sram_wait_states", "tcm_wait_states"),
        ),
    ),
    "disco-f746ng": (
        Source(
            _RM0385 + "; ST stm32f7xx_hal_driver LL_SetFlashLatency",
            "3.3.2 Read access latency, Table 5 Number of wait states according to CPU clock",
            "7 WS (8 CPU cycles) for 210 < HCLK <= 216 MHz, 2.7-3.6 V",
            "confirmed",
            _hal(_F7_HAL, "Src/stm32f7xx_ll_utils.c"),
            ("flash_wait_states", "clock_mhz"),
        ),
        Source(
            _RM0385 + "; ST stm32f7xx_hal_flash.c / stm32f7xx_hal_flash.h",
            "3.3.3 Flash memory accelerator (ART)",
            "ART accelerator only on the ITCM flash interface; 64 cache lines of 128 bits on I-Code "
            "(the HAL driver's text, worded as the F4 driver's)",
            "confirmed",
            _hal(_F7_HAL, "Src/stm32f7xx_hal_flash.c"),
            ("instruction_accelerator", "flash_line_bytes"),
        ),
        Source(
            _RM0385,
            "2.1 System architecture, Figure 1",
            "Cortex-M7 with 4 KB I/D cache, DTCM RAM 64 KB, ITCM RAM 16 KB, SRAM1 240 KB, SRAM2 16 KB",
            "confirmed",
            "https://stm32.dirba.io/rm0385-stm32f75-74/02-system-and-memory-overview/",
            ("data_cache_bytes",),
        ),
        Source(
            _RM0385,
            "2.2 Memory organization",
            "DTCM/SRAM zero wait state",
            fields=("sram_wait_states", "tcm_wait_states"),
        ),
    ),
    "nrf5340": (
        Source(
            "Zephyr board documentation, nRF5340 DK",
            "Overview",
            "application core: Cortex-M33F running at up to 128 MHz",
            "confirmed",
            "https://docs.zephyrproject.org/boards/nordic/nrf5340dk/doc/index.html",
            ("clock_mhz",),
        ),
        Source(
            _NRF5340_PS,
            "CACHE — Instruction/data cache",
            "two-way set associative, 128-bit cache line; instruction and data accesses towards flash are cached",
            "confirmed",
            "https://infocenter.nordicsemi.com/topic/ps_nrf5340/cache.html",
            ("instruction_accelerator", "flash_line_bytes"),
        ),
        Source(
            "Nordic nrfx MDK nrf5340_application.h (generated from the PS register map)",
            "NRF_CACHEDATA_Type",
            "cache data RAM 256 sets, Size = 8192 bytes",
            "confirmed",
            _NRFX,
            ("data_cache_bytes",),
        ),
        Source(
            _NRF5340_PS,
            "CPU; Electrical specification, CPU performance",
            "WFLASH (running from flash, cache disabled) 0..4, WFLASHCACHE (cache enabled) 0..5 wait states: "
            "5, the most a cache miss waits (was 3, a model value)",
            "corrected",
            "https://docs.nordicsemi.com/r/m9i61w1AKRHODQEL4YRk0w/d3CMq3VJiAWzdJbYE_Vcuw",
            ("flash_wait_states",),
        ),
        Source(
            _NRF5340_PS,
            "Memory",
            "1 MiB flash, 512 KiB RAM, RAM zero wait state",
            fields=("sram_wait_states",),
        ),
    ),
    "ek-ra6m4": (
        Source(
            _RA6M4_UM + "; Renesas FSP bsp_feature.h / bsp_clocks.c",
            "Memory Wait Cycle Control Register for Code Flash (FLWT)",
            "FLWT = 3 wait cycles for ICLK above 150 MHz (BSP_FEATURE_SYSC_CLOCK_FREQ_THREE_ROM_WAITS "
            "150 MHz, no four-wait option); the CM33 runs on ICLK",
            "confirmed",
            _FSP.format("ra6m4/bsp_feature.h"),
            ("flash_wait_states",),
        ),
        Source(
            _RA6M4_UM + "; Renesas FSP bsp_feature.h / bsp_common.h",
            "Flash Cache (FCACHE)",
            "flash cache present (FCACHEE) and a CM33 C-cache on the code bus (CCACTL, line size set by "
            "CCALCF); no flash prefetch buffer (was: 'FCACHE flash cache + prefetch buffer'). The caches' "
            "sizes and whether data reads from flash hit them: not found, so data_cache stays None",
            "corrected",
            _FSP.format("ra6m4/bsp_feature.h"),
            ("instruction_accelerator",),
        ),
        Source(
            _RA6M4_UM + "; Renesas FSP bsp_feature.h / bsp_clocks.c",
            "SRAM Wait State Control Register (SRAMWTSC)",
            "SRAM wait enabled for all regions (mask 0x01) when ICLK > 100 MHz "
            "(BSP_FEATURE_SYSC_CLOCK_FREQ_NO_RAM_WAITS): 1 wait at 200 MHz (was 0)",
            "corrected",
            _FSP.format("all/bsp_clocks.c"),
            ("sram_wait_states",),
        ),
        Source(_RA6M4_UM, "Flash Cache (FCACHE)", "16-byte flash read line", fields=("flash_line_bytes",)),
        Source(
            "MLPerf Tiny v1.x results (REFERENCE.md section 4); Renesas FSP bsp_feature.h",
            "EK-RA6M4 row; BSP_FEATURE_CGC_PLLCCR_MAX_HZ",
            "Cortex-M33 at 200 MHz (the PLL's 200 MHz maximum)",
            "confirmed",
            _FSP.format("ra6m4/bsp_feature.h"),
            ("clock_mhz",),
        ),
        Source(
            "refsim",
            "isa_models/cortex_m/systems.py",
            "no data cache modelled (see the FCACHE fact)",
            "model",
            fields=("data_cache_bytes",),
        ),
    ),
    "nucleo-u575zi": (
        Source(
            _RM0456 + "; ST stm32u5xx_hal_driver LL_SetFlashLatency",
            "7.3.3 Read access latency, Table: Number of wait states according to CPU clock",
            "4 WS (5 CPU cycles) for 128 < HCLK <= 160 MHz, range 1; 160 MHz the maximum (scale 0/1)",
            "confirmed",
            _hal(_U5_HAL, "Src/stm32u5xx_ll_utils.c"),
            ("flash_wait_states", "clock_mhz"),
        ),
        Source(
            "ST STM32U5 training 'System data cache (DCACHE)'",
            "Overview",
            "ICACHE 8 or 32 KB by product on the C-bus; DCACHE1 (4 or 32 KB) sits on the S-AHB system bus "
            "and serves external memories: weights in internal flash are read through the ICACHE "
            "(was: data_cache 'DCACHE 4 KiB', 4096 bytes)",
            "corrected",
            "https://st.com/resource/en/product_training/stm32u5-system-data-cache.pdf",
            ("instruction_accelerator", "data_cache_bytes"),
        ),
        Source(
            "ST STM32 ICACHE HAL documentation (same ICACHE as the U5's)",
            "ICACHE Introduction",
            "ICACHE on the C-AHB code bus caches instruction and data fetches from internal and external "
            "memories (literal pools and constants travel over the C-bus)",
            "confirmed",
            "https://dev.st.com/stm32cube-docs/stm32c5xx-hal-drivers/2.0.0/en/docs/drivers/hal_drivers/icache/"
            "hal_icache_how_to_use.html",
            ("data_cache_bytes",),
        ),
        Source(
            _RM0456,
            "8 Instruction cache (ICACHE)",
            "16-byte cache line; SRAM zero wait state",
            fields=("flash_line_bytes", "sram_wait_states"),
        ),
    ),
    "ek-ra8d1": (
        Source(
            "Zephyr dts/arm/renesas/ra/ra8/r7fa8d1xh.dtsi; board documentation EK-RA8D1",
            "clocks: pllp, cpuclk, iclk",
            "PLLP 480 MHz; CPUCLK = PLLP / 1 = 480 MHz, ICLK = PLLP / 2 = 240 MHz",
            "confirmed",
            _ZEPHYR.format("dts/arm/renesas/ra/ra8/r7fa8d1xh.dtsi"),
            ("clock_mhz",),
        ),
        Source(
            _RA8D1_UM + "; Renesas FSP bsp_feature.h / bsp_clocks.c",
            "Code flash wait cycles (FLWT)",
            "FLWT counts ICLK cycles: 4 wait cycles for 192 < ICLK <= 240 MHz "
            "(BSP_FEATURE_SYSC_CLOCK_FREQ_FIVE_ROM_WAITS 240 MHz). A read of (1 + 4) ICLK = 10 CPUCLK "
            "cycles is 9 wait states of the 480 MHz core (was 5, no source stated it)",
            "corrected",
            _FSP.format("ra8d1/bsp_feature.h"),
            ("flash_wait_states",),
        ),
        Source(
            _RA8D1_UM + "; Renesas FSP bsp_feature.h / bsp_clocks.c",
            "SRAM Wait State Control Register (SRAMWTSC)",
            "SRAM wait enabled for all regions when ICLK > 120 MHz: 1 ICLK = 2 CPUCLK wait states at "
            "240 MHz ICLK (was 0)",
            "corrected",
            _FSP.format("ra8d1/bsp_feature.h"),
            ("sram_wait_states",),
        ),
        Source(
            "Renesas RA8D1 datasheet",
            "Features",
            "32 KiB I-cache and D-cache (32-byte lines), 128 KiB ITCM and DTCM (FSP: ITCM and DTCM present, "
            "sizes not stated)",
            fields=("instruction_accelerator", "data_cache_bytes", "flash_line_bytes", "tcm_wait_states"),
        ),
        Source("MLPerf Tiny v1.x results (REFERENCE.md section 4)", "EK-RA8D1 row", "Cortex-M85 at 480 MHz"),
    ),
    "nucleo-g0b1re": (
        Source(
            _RM0444 + "; ST stm32g0xx_hal_driver LL_SetFlashLatency",
            "3.3.4 Read access latency, Table: Number of wait states according to flash clock",
            "2 WS (3 CPU cycles) for 48 < HCLK <= 64 MHz, range 1; SYSCLK/HCLK max 64 MHz",
            "confirmed",
            _hal(_G0_HAL, "Src/stm32g0xx_ll_utils.c"),
            ("flash_wait_states", "clock_mhz"),
        ),
        Source(
            _RM0444 + "; ST stm32g0xx_hal_flash.h",
            "3.3.5 Flash prefetch and cache",
            "prefetch buffer (FLASH_ACR PRFTEN) and instruction cache (ICEN) exist",
            "confirmed",
            _hal(_G0_HAL, "Inc/stm32g0xx_hal_flash.h"),
            ("instruction_accelerator",),
        ),
        Source(
            _RM0444,
            "3.3.5 Flash prefetch and cache",
            "64-bit flash reads; instruction cache of 2 lines of 64 bits; no data cache; SRAM zero wait state",
            fields=("flash_line_bytes", "data_cache_bytes", "sram_wait_states"),
        ),
    ),
}

__all__ = ["SOURCES"]

"""Instruction-timed cycles (refsim/qemu/timing.py): TRM-fixed loops come out exact, the tables
answer unknown names with the valid ones, and kernels_c batches are timed repeatably.

The TRM table the loops are checked against (Cortex-M4 TRM 3.3.1 Table 3-1 and 3.3.2
"Load/store timings"; isa_models/cortex_m/cores.py): ALU 1; SMLAD 1; LDR 2, 1 when it pipelines after a
load whose destination is not in its address; LDM 1+N; STR #imm 1; a load whose address the
data-processing instruction just before computed +1; BL 1+P; taken B<cond> 1+P, not taken 1;
P = 2 (the model's refill, within the TRM's 1..3).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from isa_models.cortex_m.cores import CORE_MODELS, get_core_model
from isa_models.cortex_m.systems import SYSTEMS, get_system
from isa_models.errors import UnknownNameError
from refsim.qemu import build
from refsim.qemu.blocks import Insn, kind_of, listing_of, memory_cycles
from refsim.qemu.cores import get_core
from refsim.qemu.counting import count_instructions
from refsim.qemu.errors import QemuError
from refsim.qemu.timing import COMPONENTS, qemu_core_for, time_blocks, time_cases, time_elf
from refsim.qemu.toolchain import find_toolchain

REQUIRED_SYSTEMS = (
    "corstone-300",
    "alif-e8",
    "nucleo-l4r5zi",
    "nucleo-h7a3zi",
    "disco-f746ng",
    "nrf5340",
    "ek-ra6m4",
    "nucleo-u575zi",
    "ek-ra8d1",
    "nucleo-g0b1re",
)


# --- tables ---------------------------------------------------------------------------------------


def test_every_core_and_preset_is_there_with_sources() -> None:
    assert set(CORE_MODELS) == {f"cortex-{c}" for c in ("m0plus", "m3", "m4", "m7", "m33", "m55", "m85")}
    for name in REQUIRED_SYSTEMS:
        preset = get_system(name)
        assert preset.sources and all(s.document and s.section for s in preset.sources), name
        assert preset.clock_mhz > 0
    for core in CORE_MODELS.values():
        assert core.sources
        assert get_system(f"ideal-{core.name.removeprefix('cortex-')}").core == core.name
    assert len(SYSTEMS) == len(REQUIRED_SYSTEMS) + len(CORE_MODELS)


@pytest.mark.parametrize(("lookup", "what"), [(get_core_model, "core"), (get_system, "system")])
def test_unknown_names_list_the_valid_ones(lookup, what: str) -> None:
    with pytest.raises(UnknownNameError) as info:
        lookup("cortex-m99")
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{what} must be one of ")
    assert ("cortex-m4" if what == "core" else "nucleo-l4r5zi") in message


def test_qemu_code_paths_of_cores_qemu_cannot_run() -> None:
    m0plus = qemu_core_for(get_core_model("cortex-m0plus"))
    assert m0plus.machine == "mps2-an385" and "-mcpu=cortex-m0plus" in m0plus.gcc_flags
    assert qemu_core_for(get_core_model("cortex-m85")).machine == "mps3-an547"


# --- the TRM rules on their own ------------------------------------------------------------------


def _block(*lines: str, start: int = 0x1000) -> dict[int, Insn]:
    listing, address = {}, start
    for line in lines:
        mnemonic, _, operands = line.partition(" ")
        size = 4 if mnemonic.endswith(".w") or mnemonic in ("smlad", "bl") else 2
        listing[address] = Insn(address, size, mnemonic, operands.strip())
        address += size
    return listing


def test_load_store_rule_of_the_m4_trm() -> None:
    insns = list(
        _block(
            "ldr r2, [r0]",  # 2
            "ldr r3, [r1, #4]",  # 1: pipelines after a load
            "ldr r1, [r3]",  # 2: its address is the load just before
            "ldm r1!, {r2, r3}",  # 1 + 2
            "str r4, [r0, #8]",  # 1
            "adds r0, r1, #0",
            "ldr r2, [r0, #12]",  # 2 + 1: address computed just before
            "str r2, [r0, r1]",  # 1: register offset, pipelined after a load
            "pop {r4, r5, pc}",  # 1 + 3
        ).values()
    )
    assert memory_cycles(insns, get_core_model("cortex-m4")) == [2, 1, 2, 3, 1, None, 3, 1, 4]
    assert [kind_of(i) for i in insns][-2:] == ["store_reg", "multiple"]


def test_m0plus_is_timed_by_its_trm_table() -> None:
    """Cortex-M0+ TRM Table 3-1: ADDS 1, LDR 2, MULS 1, SUBS 1, BNE taken 2 (1 + refill 1)."""
    listing = _block("adds r1, r1, #3", "ldr r2, [sp]", "muls r2, r1, r2", "subs r0, r0, #1", "bne.n 1000")
    key = (0x1000, 5, 10)
    cost = time_blocks(get_core_model("cortex-m0plus"), listing, [key])[key]
    assert dict(cost.per_execution) == {
        "issue": 3,
        "load_store": 2,
        "multiply": 0,
        "mve_overlap": 0,
        "branch": 1,
        "unparsed": 0,
    }
    assert cost.per_jump_out == 1


def test_m85_gets_the_mve_beat_overlap_its_llvm_model_lacks(timing: None) -> None:
    """VLDRB next to an independent VMLADAVA: llvm-mca's M55 model overlaps their beats (2 cycles
    for the pair), its M85 model serializes them (4); the M85's mve_overlap gives back 2."""
    listing = {
        0x1000: Insn(0x1000, 4, "vldrb.u8", "q0, [r0], #16"),
        0x1004: Insn(0x1004, 4, "vmladava.s8", "r2, q2, q1"),
    }
    key = (0x1000, 2, 8)
    m55 = time_blocks(get_core_model("cortex-m55"), listing, [key])[key].per_execution
    m85 = time_blocks(get_core_model("cortex-m85"), listing, [key])[key].per_execution
    assert (m55["issue"], m55["mve_overlap"]) == (2, 0)
    assert (m85["issue"], m85["mve_overlap"]) == (4, -2)


# --- hand-written loops under QEMU ---------------------------------------------------------------

# Per iteration (TRM table above): 2+1+1+3+1+1+1+3+1 = 14, the taken BNE 1+2, the last one 1.
# Before the loop 4 ALU instructions; after it BL rs_kernel_end 1+2.  Total 17 n + 5. On the
# M3 the MAC is MLA, 2 cycles (Cortex-M3 TRM Table 3-1): 18 n + 5.
LOOP_V7M = r"""
    mov r0, sp
    mov r1, sp
    movs r4, #0
    mov r5, r6
1:  ldr r2, [r0]
    ldr r3, [r1, #4]
    MAC r4, r2, r3, r4
    ldm r1!, {r2, r3}
    subs r1, #8
    str r4, [r0, #8]
    adds r0, r1, #0
    ldr r2, [r0, #12]
    subs r5, #1
    bne 1b
"""

# Cortex-M0+ TRM Table 3-1 (no load pipelining): LDR 2, LDR 2, MULS 1, ADDS 1, LDM 1+2, SUBS 1,
# STR 2, SUBS 1 = 13; taken BNE 2, the last 1; 3 ALU before; BL rs_kernel_end 3. Total 15 n + 5.
LOOP_V6M = r"""
    mov r0, sp
    movs r4, #0
    mov r5, r6
1:  ldr r2, [r0]
    ldr r3, [r0, #4]
    muls r2, r3, r2
    adds r4, r4, r2
    ldm r0!, {r2, r3}
    subs r0, #8
    str r4, [r0, #8]
    subs r5, #1
    bne 1b
"""

LOOP_S = r"""
    .syntax unified
    .thumb
    .text
    .global rs_timed_loop
    .type rs_timed_loop, %function
rs_timed_loop:
    push {r4, r5, r6, lr}
    sub sp, sp, #32
    mov r6, r0
    bl rs_kernel_begin
BODY
    bl rs_kernel_end
    add sp, sp, #32
    pop {r4, r5, r6, pc}
    .size rs_timed_loop, . - rs_timed_loop
"""

MAIN_C = r"""
#include <stdint.h>

void rs_kernel_begin(void) __attribute__((noipa));
void rs_kernel_end(void) __attribute__((noipa));
void rs_kernel_begin(void) { __asm volatile("" ::: "memory"); }
void rs_kernel_end(void) { __asm volatile("" ::: "memory"); }
void rs_timed_loop(uint32_t n);

int main(void)
{
    static const uint32_t lengths[] = {1, 2, 7, 1000};
    for (uint32_t i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++)
    {
        rs_timed_loop(lengths[i]);
    }
    return 0;
}
"""
LENGTHS = (1, 2, 7, 1000)

#: core -> (loop body, cycles(n), instructions(n))
LOOPS = {
    "cortex-m4": (LOOP_V7M.replace("MAC", "smlad"), lambda n: 17 * n + 5, lambda n: 5 + 10 * n),
    "cortex-m33": (LOOP_V7M.replace("MAC", "smlad"), lambda n: 17 * n + 5, lambda n: 5 + 10 * n),
    "cortex-m3": (LOOP_V7M.replace("MAC", "mla"), lambda n: 18 * n + 5, lambda n: 5 + 10 * n),
    "cortex-m0plus": (LOOP_V6M, lambda n: 15 * n + 5, lambda n: 4 + 9 * n),
}


def _build(core_name: str, body: str, directory: Path, *, source: str = LOOP_S) -> Path:
    """The loop on the board's startup (built for the board's own core, as for the M0+ harness)."""
    core = qemu_core_for(get_core_model(core_name))
    board = get_core(core.name)
    gcc = str(find_toolchain().gcc)
    (directory / "main.c").write_text(MAIN_C)
    (directory / "loop.S").write_text(source.replace("BODY", body))
    script = directory / "link.ld"
    template = build.KERNELS_C / build.LINKER_TEMPLATE
    subprocess.run(
        [gcc, "-E", "-P", "-x", "c", *build._memory_defines(core), str(template), "-o", str(script)],
        check=True,
    )
    startup = directory / "startup.o"
    subprocess.run(
        [gcc, *build._cflags(board), "-c", str(build.KERNELS_C / "boards" / "startup.c"), "-o", str(startup)],
        check=True,
    )
    sources = [build.KERNELS_C / "boards" / "semihost.c", directory / "main.c", directory / "loop.S"]
    elf = directory / "loop.elf"
    link = ["-nostartfiles", "-T", str(script), "-Wl,--gc-sections", "-o", str(elf)]
    done = subprocess.run(
        [gcc, *build._cflags(core), *map(str, sources), str(startup), *link],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return elf


# The same M4 loop aligned so that its target, now the 32-bit LDR.W, sits at 2 mod 4: each taken
# branch refills one cycle more (P = 3, TRM "depending on the alignment and width of the target").
LOOPS_UNALIGNED = LOOP_V7M.replace("MAC", "smlad").replace("1:  ldr r2, [r0]", "1:  ldr.w r2, [r0]")


def test_unaligned_32_bit_branch_target_refills_one_more(tmp_path: Path, timing: None) -> None:
    source = LOOP_S.replace("rs_timed_loop:\n", "    .p2align 2\nrs_timed_loop:\n", 1)
    elf = _build("cortex-m4", LOOPS_UNALIGNED, tmp_path, source=source)
    target = next(a for a, i in listing_of(get_core("cortex-m4"), elf).items() if i.mnemonic == "ldr.w")
    assert target % 4 == 2
    calls = time_elf("cortex-m4", elf)
    assert [c["cycles"] for c in calls] == [18 * n + 4 for n in LENGTHS]


@pytest.mark.parametrize("core", list(LOOPS))
def test_trm_fixed_loop_is_exact(core: str, tmp_path: Path, timing: None) -> None:
    body, cycles, instructions = LOOPS[core]
    calls = time_elf(core, _build(core, body, tmp_path))
    assert [c["instructions"] for c in calls] == [instructions(n) for n in LENGTHS]
    assert [c["cycles"] for c in calls] == [cycles(n) for n in LENGTHS]
    for c in calls:
        assert c["cycles"] == sum(c[name] for name in COMPONENTS)
        assert c["unparsed"] == 0


# --- kernels_c batches ---------------------------------------------------------------------------

FUNCTIONS = ("arm_fully_connected_s8", "arm_convolve_wrapper_s8", "arm_depthwise_conv_wrapper_s8")


def _cases() -> list:
    from refsim.conformance import vectors as vec
    from refsim.qemu.conformance import to_batch_case

    return [to_batch_case(c) for f in FUNCTIONS for c in vec.generate_cases(f, 2, 7)]


@pytest.mark.parametrize("core", ["cortex-m4", "cortex-m55"])
def test_kernels_c_cases_are_timed_repeatably(core: str, timing: None) -> None:
    cases = _cases()
    first = time_cases(core, cases)
    assert first == time_cases(core, cases)
    counted = count_instructions(core, cases)
    assert [t.instructions for t in first] == [c.total for c in counted]
    for t in first:
        assert t.cycles == sum(t.by_component.values()) and set(t.by_component) == set(COMPONENTS)
        assert t.by_component["issue"] > 0 and t.macs
    if core == "cortex-m4":  # single issue: never fewer cycles than instructions
        assert all(t.cycles >= t.instructions for t in first)


def test_flash_wait_states_for_code_and_weights(timing: None) -> None:
    """NUCLEO-L4R5ZI (5 WS at 120 MHz): code behind the ART accelerator costs nothing (warm);
    weights in flash cost line reads x 5. Without the accelerator, instruction fetch costs too;
    with weights in SRAM, data costs nothing. Everything else is the ideal system's."""
    import dataclasses

    from isa_models.cortex_m import systems

    cases = _cases()[:2]
    ideal = time_cases("cortex-m4", cases)
    l4 = get_system("nucleo-l4r5zi")
    variants = {
        "l4-no-art": dataclasses.replace(l4, name="l4-no-art", instruction_accelerator=None),
        "l4-sram-weights": dataclasses.replace(l4, name="l4-sram-weights", weights_memory="sram"),
    }
    systems.SYSTEMS.update(variants)
    try:
        art = time_cases("cortex-m4", cases, system=l4.name)
        no_art = time_cases("cortex-m4", cases, system="l4-no-art")
        sram = time_cases("cortex-m4", cases, system="l4-sram-weights")
    finally:
        for name in variants:
            del systems.SYSTEMS[name]
    for i, a, c, s in zip(ideal, art, no_art, sram, strict=True):
        assert a.by_component["ifetch_ws"] == 0 and a.by_component["data_ws"] > 0
        assert a.by_component["data_ws"] % l4.flash_wait_states == 0
        assert a.cycles - a.by_component["data_ws"] == i.cycles
        assert c.by_component["ifetch_ws"] > 0 and c.by_component["data_ws"] == a.by_component["data_ws"]
        assert c.cycles - c.by_component["ifetch_ws"] - c.by_component["data_ws"] == i.cycles
        assert s.cycles == i.cycles and s.by_component["data_ws"] == 0


def test_system_of_another_core_is_an_error(timing: None) -> None:
    with pytest.raises(QemuError, match="built on cortex-m55"):
        time_cases("cortex-m4", _cases()[:1], system="corstone-300")


def test_count_cycles_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], timing: None) -> None:
    from refsim.cli import main

    out = tmp_path / "cycles.json"
    args = ["conformance", "--cpu", "cortex-m85", "--kernel", "arm_fully_connected_s8", "--cases", "2"]
    assert main([*args, "--count-cycles", str(out), "--system", "ek-ra8d1"]) == 0
    document = json.loads(out.read_text())
    assert document["core"] == "cortex-m85" and document["qemu_core"] == "cortex-m55"
    assert [r["case"] for r in document["records"]] == [f"arm_fully_connected_s8/0_0000{i}" for i in (0, 1)]
    assert all(r["cycles"] == sum(r["by_component"].values()) for r in document["records"])
    capsys.readouterr()
    assert main([*args, "--count-cycles", str(out), "--system", "nope"]) == 2
    err = capsys.readouterr().err.strip()
    assert "system must be one of" in err and "\n" not in err
    assert main([*args, "--count-cycles", str(out), "--system", "corstone-300"]) == 2
    assert "corstone-300 is a cortex-m55 system" in " ".join(capsys.readouterr().err.split())


@pytest.mark.parametrize(
    ("cpu", "qemu_core", "mcpu"),
    [
        ("cortex-m4", "cortex-m4", "cortex-m4"),
        ("cortex-m0plus", "cortex-m3", "cortex-m0plus"),
    ],
)
def test_count_cycles_of_a_kernels_dir_library(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    timing: None,
    cpu: str,
    qemu_core: str,
    mcpu: str,
) -> None:
    """--kernels-dir: a stand-in library (kernels_c's sources laid out like CMSIS-NN) is timed on
    its own build; the instructions agree with --count-instructions of the same run. On
    cortex-m0plus the library and harness are ARMv6-M code on the M3 board, whose startup is
    built for the M3 (it is v7-M only)."""
    import shutil

    from refsim.cli import main

    monkeypatch.setenv("REFSIM_CACHE", str(tmp_path / "cache"))
    library = tmp_path / "lib"
    shutil.copytree(build.KERNELS_C / "include", library / "Include")
    shutil.copytree(build.KERNELS_C / "src", library / "Source")
    counts, cycles = tmp_path / "counts.json", tmp_path / "cycles.json"
    args = [
        "conformance",
        "--cpu",
        cpu,
        "--kernels-dir",
        str(library),
        "--kernel",
        "arm_fully_connected_s8",
    ]
    assert (
        main([*args, "--cases", "2", "--count-instructions", str(counts), "--count-cycles", str(cycles)]) == 0
    )
    timed, counted = json.loads(cycles.read_text()), json.loads(counts.read_text())
    assert timed["library"] == str(library) and timed["core"] == cpu
    assert timed["qemu_core"] == qemu_core and f"-mcpu={mcpu}" in timed["gcc_flags"]
    assert [r["instructions"] for r in timed["records"]] == [r["instructions"] for r in counted["records"]]
    assert all(r["cycles"] > r["instructions"] for r in timed["records"])


def test_what_llvm_cannot_take_is_unparsed_not_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, timing: None
) -> None:
    """A line llvm-mc rejects comes back None (the caller charges 1 cycle, reported as
    unparsed); a block llvm-mca-19 crashes on (``ldr.w rX, [rY], #4`` with -mcpu=cortex-m4) is
    retried alone and comes back None, and the other blocks of the batch are still timed."""
    from refsim.qemu import mca

    monkeypatch.setenv("REFSIM_CACHE", str(tmp_path))
    blocks = [
        ("add r0, r0, #1", "frobnicate r1, r2", "add r2, r2, #1"),
        ("ldr.w r6, [r0], #4", "add r0, r0, #1"),
        ("add r3, r3, #1",),
    ]
    spans = mca.block_spans("cortex-m4", "armv7e-m", blocks)
    assert spans[0][1] is None and spans[0][0] is not None and spans[0][2] is not None
    assert spans[1] == (None, None)
    assert spans[2] == (1,)
    assert mca.block_spans("cortex-m4", "armv7e-m", blocks) == spans  # from the cache

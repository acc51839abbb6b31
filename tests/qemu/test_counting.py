"""Instruction counting with refsim's QEMU plugin: exact, repeatable, classified.

Exactness is checked three ways: a hand-written assembly loop whose count is known per
instruction class; the same batch run twice; a case counted alone and amid other cases.
The tiers are checked to really run: instructions per MAC fall from M3 (scalar) to M4 (DSP)
to M55 (MVE) for every kernel whose conformance cases count MACs.
"""

from __future__ import annotations

import dataclasses
import functools
import subprocess
from pathlib import Path

import numpy as np
import pytest

from refsim.conformance import registry
from refsim.conformance import vectors as vec
from refsim.qemu import (
    CORES,
    Case,
    QemuError,
    ToolchainMissingError,
    build,
    build_harness,
    find_toolchain,
    get_core,
)
from refsim.qemu.conformance import kernel_functions, to_batch_case
from refsim.qemu.counting import count_instructions, run_batch_counted
from refsim.qemu.instruction_classes import CLASSES, classify
from refsim.qemu.plugin import build_plugin, find_host_cc, run_qemu_counted

SEED = 20250607


@pytest.fixture(scope="module")
def counting(toolchain: None) -> None:
    """Skip when the host C compiler that builds the QEMU plugin is missing (as for the cross tools)."""
    try:
        find_host_cc()
    except ToolchainMissingError as error:
        pytest.skip(str(error))


# --- classification (no toolchain needed) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("mnemonic", "operands", "mve", "expected"),
    [
        ("ldr.w", "r3, [r0, #4]", False, "load_store"),
        ("ldrsble.w", "r1, [r2]", False, "load_store"),
        ("ldmia.w", "sp!, {r4, r5}", False, "load_store"),
        ("pop", "{r4, pc}", False, "load_store"),
        ("vpush", "{d8-d15}", True, "load_store"),
        ("smlad", "r0, r1, r2, r0", False, "mac"),
        ("mls", "r0, r1, r2, r3", False, "mac"),
        ("muls", "r2, r1, r2", False, "mac"),
        ("smlal", "r0, r1, r2, r3", False, "mac"),
        ("sxtab16", "r0, r1, r2, ror #8", False, "alu"),
        ("addlt.w", "r0, r0, #1", False, "alu"),
        ("teq", "r0, r1", False, "alu"),
        ("movs", "r1, #0", False, "alu"),
        ("asrl", "r0, r1, #5", True, "alu"),
        ("bls.n", "1f", False, "branch"),
        ("blt.w", "1f", False, "branch"),
        ("cbz", "r0, 1f", False, "branch"),
        ("le", "lr, 1b", True, "branch"),
        ("dls", "lr, r4", True, "branch"),
        ("ittt", "ne", False, "other"),
        ("nop", "", False, "other"),
        ("vmsr", "fpscr_nzcvqc, r0", True, "other"),
        ("vldrb.u8", "q0, [r1]", True, "mve_load_store"),
        ("vldrbt.s32", "q1, [r0], #4", True, "mve_load_store"),
        ("vstrw.32", "q0, [r2]", True, "mve_load_store"),
        ("vmladava.s8", "r2, q0, q1", True, "mve_mac"),
        ("vqrdmulh.s32", "q0, q0, r3", True, "mve_mac"),
        ("vmul.i32", "q0, q1, q2", True, "mve_mac"),
        ("vaddva.s8", "r2, q0", True, "mve_other"),
        ("vctp.8", "r2", True, "mve_other"),
        ("vpst", "", True, "mve_other"),
        ("vdup.32", "q0, r1", True, "mve_other"),
    ],
)
def test_classify(mnemonic: str, operands: str, mve: bool, expected: str) -> None:
    assert classify(mnemonic, operands, mve=mve) == expected


# --- a hand-countable program ----------------------------------------------------------------------

# Between the markers, rs_loop_scalar(n) executes: mov, movs (2 alu), then n times adds (alu),
# ldr (load/store), muls (mac), subs (alu), bne (branch), then bl rs_kernel_end (branch).
# rs_loop_mve(n): mov, movs (2 alu), dls (branch), then n times vldrb (MVE load/store), vmladava
# (MVE MAC), vadd (MVE other), le (branch), then bl rs_kernel_end (branch).
LOOP_S = r"""
    .syntax unified
    .thumb
    .text
    .global rs_loop_scalar
    .type rs_loop_scalar, %function
rs_loop_scalar:
    push {r4, lr}
    mov r4, r0
    bl rs_kernel_begin
    mov r0, r4
    movs r1, #0
1:  adds r1, r1, #3
    ldr r2, [sp]
    muls r2, r1, r2
    subs r0, r0, #1
    bne 1b
    bl rs_kernel_end
    pop {r4, pc}
    .size rs_loop_scalar, . - rs_loop_scalar

#if defined(__ARM_FEATURE_MVE)
    .global rs_loop_mve
    .type rs_loop_mve, %function
rs_loop_mve:
    push {r4, lr}
    sub sp, sp, #16
    mov r4, r0
    bl rs_kernel_begin
    mov r1, sp
    movs r2, #0
    dls lr, r4
2:  vldrb.u8 q0, [r1]
    vmladava.s8 r2, q0, q0
    vadd.i8 q1, q0, q0
    le lr, 2b
    bl rs_kernel_end
    add sp, sp, #16
    pop {r4, pc}
    .size rs_loop_mve, . - rs_loop_mve
#endif
"""

MAIN_C = r"""
#include <stdint.h>

void rs_kernel_begin(void) __attribute__((noipa));
void rs_kernel_end(void) __attribute__((noipa));
void rs_kernel_begin(void) { __asm volatile("" ::: "memory"); }
void rs_kernel_end(void) { __asm volatile("" ::: "memory"); }

void rs_loop_scalar(uint32_t n);
void rs_loop_mve(uint32_t n);

static const uint32_t lengths[] = {1, 2, 7, 1000};

int main(void)
{
#if defined(NESTED)
    rs_kernel_begin();
#endif
    for (uint32_t i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++)
    {
        rs_loop_scalar(lengths[i]);
    }
#if defined(__ARM_FEATURE_MVE)
    for (uint32_t i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++)
    {
        rs_loop_mve(lengths[i]);
    }
#endif
    return 0;
}
"""
LENGTHS = (1, 2, 7, 1000)


def _zero_classes(**counts: int) -> dict[str, int]:
    return {name: counts.get(name, 0) for name in CLASSES}


def _expected_scalar(n: int) -> dict[str, int]:
    return _zero_classes(alu=2 + 2 * n, load_store=n, mac=n, branch=n + 1)


def _expected_mve(n: int) -> dict[str, int]:
    return _zero_classes(alu=2, branch=2 + n, mve_load_store=n, mve_mac=n, mve_other=n)


def _build_loop_program(core_name: str, directory: Path, *, nested: bool = False) -> Path:
    """The loop program on the board's own startup, semihosting and linker script."""
    core = get_core(core_name)
    gcc = str(find_toolchain().gcc)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "main.c").write_text(MAIN_C)
    (directory / "loop.S").write_text(LOOP_S)
    script = directory / "link.ld"
    template = build.KERNELS_C / build.LINKER_TEMPLATE
    subprocess.run(
        [gcc, "-E", "-P", "-x", "c", *build._memory_defines(core), str(template), "-o", str(script)],
        check=True,
    )
    sources = [build.KERNELS_C / "boards" / "startup.c", build.KERNELS_C / "boards" / "semihost.c"]
    elf = directory / "loop.elf"
    done = subprocess.run(
        [
            gcc,
            *build._cflags(core),
            *(["-DNESTED"] if nested else []),
            *map(str, sources),
            str(directory / "main.c"),
            str(directory / "loop.S"),
            "-nostartfiles",
            "-T",
            str(script),
            "-Wl,--gc-sections",
            "-o",
            str(elf),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return elf


def test_plugin_builds_once_and_is_cached(counting: None) -> None:
    plugin = build_plugin()
    assert plugin.is_file() and plugin.name == "insn_count.so"
    assert build_plugin() == plugin


@pytest.mark.parametrize("core", list(CORES))
def test_hand_counted_loop_is_counted_exactly(core: str, tmp_path: Path, counting: None) -> None:
    elf = _build_loop_program(core, tmp_path)
    done, calls = run_qemu_counted(get_core(core), elf, tmp_path)
    assert done.returncode == 0, done.stderr
    expected = [_expected_scalar(n) for n in LENGTHS]
    if CORES[core].tier == "mve":
        expected += [_expected_mve(n) for n in LENGTHS]
    assert [dict(c.by_class) for c in calls] == expected
    assert [c.total for c in calls] == [sum(e.values()) for e in expected]
    assert calls[3].by_mnemonic == {
        "mov": 1,
        "movs": 1,
        "adds": 1000,
        "ldr": 1000,
        "muls": 1000,
        "subs": 1000,
        "bne": 1000,
        "bl": 1,
    }


def test_unbalanced_markers_are_an_error(tmp_path: Path, counting: None) -> None:
    elf = _build_loop_program("cortex-m3", tmp_path, nested=True)
    with pytest.raises(QemuError, match="rs_kernel_begin ran twice"):
        run_qemu_counted(get_core("cortex-m3"), elf, tmp_path)


# --- harness batches -------------------------------------------------------------------------------


@functools.cache
def _conformance_cases(function: str, count: int) -> tuple[vec.Case, ...]:
    return tuple(vec.generate_cases(function, count, SEED))


def _mixed_batch(core: str) -> list[Case]:
    """A few cases of every kernel, on every variant the core has, and echo cases."""
    variants = ("default", *CORES[core].tiers)
    cases = [
        to_batch_case(case, variant)
        for function in kernel_functions()
        for case in _conformance_cases(function, 2)
        for variant in variants
    ]
    return cases + [Case("test_echo", {}, {"data": np.arange(n, dtype=np.int8)}) for n in (1, 64)]


@pytest.mark.parametrize("core", ["cortex-m4", "cortex-m55"])
def test_same_batch_twice_gives_identical_counts(core: str, counting: None) -> None:
    cases = _mixed_batch(core)
    harness = build_harness(core)  # the same ELF twice, even if kernels_c changes meanwhile
    first = run_batch_counted(core, cases, check=False, harness=harness)
    second = run_batch_counted(core, cases, check=False, harness=harness)
    ran = [c for c in first.counts if c is not None]
    assert len(ran) >= len(cases) // 2, "most cases must run"
    assert first.counts == second.counts
    assert [c and c.by_mnemonic for c in first.counts] == [c and c.by_mnemonic for c in second.counts]
    for count in ran:
        assert sum(count.by_class.values()) == count.total
        assert sum(count.by_mnemonic.values()) == count.total
        assert set(count.by_class) == set(CLASSES)


def test_a_case_counts_the_same_alone_and_amid_others(counting: None) -> None:
    core = "cortex-m55"
    harness = build_harness(core)
    fc = [to_batch_case(c) for c in _conformance_cases("arm_fully_connected_s8", 3)]
    (alone,) = count_instructions(core, [fc[1]], harness=harness)
    amid = count_instructions(core, [fc[0], fc[1], fc[2], fc[1]], harness=harness)
    assert amid[1] == alone and amid[3] == alone
    assert amid[1].by_mnemonic == alone.by_mnemonic


def test_tiers_use_their_own_instructions(counting: None) -> None:
    deep = [c for c in _conformance_cases("arm_fully_connected_s8", 12) if c.params["filter_dims.n"] >= 16]
    fc = [to_batch_case(c) for c in deep[:3]]
    assert len(fc) == 3
    m3 = count_instructions("cortex-m3", fc)
    m4 = count_instructions("cortex-m4", fc)
    m55 = count_instructions("cortex-m55", fc)
    assert all(c.by_class["mve_mac"] == 0 and "smlad" not in c.by_mnemonic for c in m3)
    assert all(c.by_mnemonic.get("smlad", 0) > 0 and c.by_class["mve_mac"] == 0 for c in m4)
    assert all(c.by_class["mve_mac"] > 0 and c.by_class["mve_load_store"] > 0 for c in m55)
    # The scalar variant on the M55 is another code path (GCC 12 -O2 auto-vectorizes parts of it
    # with MVE, so it is not MVE-free), several times the instructions of the MVE kernel.
    scalar = count_instructions("cortex-m55", [dataclasses.replace(c, variant="scalar") for c in fc])
    assert all(s.total > 3 * m.total for s, m in zip(scalar, m55, strict=True))
    assert all(
        "vmlava" in m.by_mnemonic and "vmlava" not in s.by_mnemonic for s, m in zip(scalar, m55, strict=True)
    )


MAC_CORES = ("cortex-m3", "cortex-m4", "cortex-m55")

#: Kernels whose richer tier is known not to need fewer instructions per MAC, and why (none now;
#: on *all* conformance shapes, small ones included, arm_convolve_s8's DSP path averages more
#: instructions per MAC than its scalar path: 9.0 on the M4 vs 8.4 on the M3, seed 1, 500 cases).
XFAILS: dict[str, str] = {}


def _mac_kernels() -> list[str]:
    try:
        functions = kernel_functions()
    except Exception:  # the registry cannot load: the tests that use it report why
        return ["arm_fully_connected_s8"]
    # generate() alone (no golden-model run) says whether a function's cases count MACs.
    return [f for f in functions if "macs" in registry.get(f).generate(np.random.default_rng(SEED))[1]]


@functools.cache
def _largest_cases(function: str) -> tuple[vec.Case, ...]:
    """The 6 of 24 generated cases with the most MACs: real work rather than call overhead."""
    cases = sorted(_conformance_cases(function, 24), key=lambda c: -int(c.params["macs"]))
    return tuple(cases[:6])


@pytest.fixture(scope="module")
def per_mac(counting: None) -> dict[tuple[str, str], float | str]:
    """Instructions per MAC of every MAC-counting kernel on M3, M4 and M55 (one QEMU start each),
    or why the kernel did not run."""
    functions = _mac_kernels()
    cases = [case for function in functions for case in _largest_cases(function)]
    table: dict[tuple[str, str], float | str] = {}
    for core in MAC_CORES:
        counted = run_batch_counted(core, [to_batch_case(c) for c in cases], check=False, timeout=300)
        for function in functions:
            runs = [
                (count, case, result)
                for case, count, result in zip(cases, counted.counts, counted.run.results, strict=True)
                if case.function == function
            ]
            if any(count is None or result.kernel_status != 0 for count, _, result in runs):
                table[core, function] = (
                    f"not run on {core}: harness status {[r.harness_status for *_, r in runs]}"
                )
                continue
            total = sum(count.total for count, _, _ in runs if count is not None)
            table[core, function] = total / sum(int(case.params["macs"]) for _, case, _ in runs)
    return table


@pytest.mark.parametrize(
    "function",
    [
        pytest.param(f, marks=pytest.mark.xfail(reason=XFAILS[f], strict=False)) if f in XFAILS else f
        for f in _mac_kernels()
    ],
)
def test_instructions_per_mac_fall_from_m3_to_m4_to_m55(function: str, per_mac: dict) -> None:
    """The DSP and MVE variants are really exercised: fewer instructions per MAC each tier up."""
    m3, m4, m55 = (per_mac[core, function] for core in MAC_CORES)
    for value in (m3, m4, m55):
        assert not isinstance(value, str), f"{function}: {value}"
    assert m55 < m4 < m3, (
        f"{function} (seed {SEED}): instructions/MAC m3 {m3:.2f}, m4 {m4:.2f}, m55 {m55:.2f}"
    )

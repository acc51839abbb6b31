"""refsim.qemu: building the harness per core, the batch format, fault and timeout reporting."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from refsim.qemu import (
    CORES,
    FUNCTIONS,
    Case,
    QemuError,
    QemuFaultError,
    QemuTimeoutError,
    ToolchainMissingError,
    build_harness,
    find_toolchain,
    run_batch,
)
from refsim.qemu import toolchain as toolchain_module
from refsim.qemu.batch import encode_batch
from refsim.qemu.build import KERNELS_C

#: An address every board answers with a bus error (CFSR.PRECISERR | BFARVALID, BFAR = it).
BAD_ADDRESS = 0xF000_0000
KERNELS = ("arm_elementwise_add_s8", "arm_elementwise_mul_s8", "arm_fully_connected_s8")


def _symbols(elf: Path) -> set[str]:
    nm = find_toolchain().binutil("nm")
    out = subprocess.run([str(nm), str(elf)], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def _echo(n: int = 3) -> Case:
    return Case("test_echo", {}, {"data": np.arange(n, dtype=np.int8)})


# --- build -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("core", list(CORES))
def test_harness_builds_without_warnings_with_the_right_tiers(core: str, toolchain: None) -> None:
    harness = build_harness(core)
    assert harness.elf.is_file()
    assert harness.warnings.strip() == "", harness.warnings
    symbols = _symbols(harness.elf)
    assert {"rs_kernel_begin", "rs_kernel_end", "rs_fault_report", *KERNELS} <= symbols
    tiers = CORES[core].tiers
    for stem in ("rs_elementwise_add_s8", "rs_elementwise_mul_s8", "rs_fully_connected_s8"):
        for tier in ("scalar", "dsp", "mve"):
            assert (f"{stem}_{tier}" in symbols) == (tier in tiers), f"{core}: {stem}_{tier}"


def test_build_is_cached_by_content(toolchain: None) -> None:
    first = build_harness("cortex-m4")
    start = time.perf_counter()
    again = build_harness("cortex-m4")
    assert again.elf == first.elf and again.key == first.key
    assert time.perf_counter() - start < 1.0  # hashing only, no compile


def test_function_ids_match_the_c_header() -> None:
    header = (KERNELS_C / "harness" / "batch_format.h").read_text()
    c_ids = {
        name.lower(): int(value, 0) for name, value in re.findall(r"RS_FN_(\w+) = (0x[0-9A-F]+|\d+)", header)
    }
    py_ids = {name.removeprefix("arm_"): spec.id for name, spec in FUNCTIONS.items()}
    assert c_ids == py_ids


def test_batch_encoding_rejects_wrong_arguments() -> None:
    with pytest.raises(QemuError, match="params must be"):
        encode_batch([Case("arm_elementwise_mul_s8", {"block_size": 1}, {})])
    with pytest.raises(QemuError, match="must be int8"):
        encode_batch([Case("test_echo", {}, {"data": np.zeros(3, np.int16)})])
    with pytest.raises(QemuError, match="function must be one of"):
        encode_batch([Case("arm_no_such_kernel_s8")])


def test_missing_tools_name_their_debian_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFSIM_ARM_GCC", "no-such-arm-none-eabi-gcc")
    monkeypatch.setenv("REFSIM_QEMU_ARM", "no-such-qemu-system-arm")
    with pytest.raises(ToolchainMissingError, match="gcc-arm-none-eabi") as gcc:
        toolchain_module.find_gcc()
    assert gcc.value.package == "gcc-arm-none-eabi"
    with pytest.raises(ToolchainMissingError, match="qemu-system-arm") as qemu:
        toolchain_module.find_qemu()
    assert qemu.value.package == "qemu-system-arm"


# --- run -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("core", list(CORES))
def test_fault_is_reported_with_pc_and_cfsr(core: str, toolchain: None) -> None:
    cases = [_echo(), Case("test_fault", {"address": BAD_ADDRESS}), _echo()]
    with pytest.raises(QemuFaultError) as fault:
        run_batch(core, cases)
    error = fault.value
    assert error.exit_status != 0
    assert error.case_index == 1 and error.function == "test_fault"
    assert error.location.startswith("run_fault at ") and "functions.c" in error.location
    assert error.cfsr & 0x8200 == 0x8200  # BusFault: PRECISERR | BFARVALID
    assert error.registers["bfar"] == BAD_ADDRESS
    assert "pc=0x" in str(error) and "cfsr=0x" in str(error) and "hfsr=0x" in str(error)


def test_timeout_kills_a_hung_guest(toolchain: None) -> None:
    build_harness("cortex-m3")
    start = time.perf_counter()
    with pytest.raises(QemuTimeoutError, match=r"within 1\.0 s"):
        run_batch("cortex-m3", [_echo(), Case("test_hang")], timeout=1.0)
    assert time.perf_counter() - start < 5.0


def test_cases_the_harness_cannot_run_are_reported(toolchain: None) -> None:
    good = {"input": np.ones(4, np.int8), "filter": np.ones(8, np.int8), "bias": np.zeros(2, np.int32)}
    params = {
        "input_offset": 0, "filter_offset": 0, "output_offset": 0,
        "activation.min": -128, "activation.max": 127, "multiplier": 1 << 30, "shift": 1,
        "input_dims.n": 1, "filter_dims.n": 4, "output_dims.c": 2,
    }  # fmt: skip
    cases = [
        Case("arm_fully_connected_s8", params, good),
        Case("arm_fully_connected_s8", params, {**good, "bias": np.zeros(3, np.int32)}),  # bias length wrong
        Case("arm_fully_connected_s8", params, good, variant="mve"),  # no MVE on a Cortex-M4
    ]
    run = run_batch("cortex-m4", cases, check=False)
    assert [r.harness_status for r in run.results] == [0, 1, 3]
    assert run.results[0].output.tolist() == [4, 4]  # identity requantize of sum_k 1 * 1
    with pytest.raises(QemuError, match="2 of 3 cases not run"):
        run_batch("cortex-m4", cases)


def test_echo_round_trips_many_cases(toolchain: None) -> None:
    rng = np.random.default_rng(7)
    data = [rng.integers(-128, 128, size=int(n), dtype=np.int8) for n in rng.integers(1, 70, size=300)]
    run = run_batch("cortex-m55", [Case("test_echo", {}, {"data": d}) for d in data])
    assert all(np.array_equal(r.output, d) for r, d in zip(run.results, data, strict=True))

"""The core models QEMU has no machine for under ``refsim conformance --cpu``: cortex-m0plus runs
its ARMv6-M build on the M3 board, cortex-m85 its code path's build on the M55 board
(refsim.qemu.timing_cli.model_target). Each harness is compiled with the model's ``-mcpu`` (read
back from the ELF's DWARF producer strings); a few cases, one corrupted, give the same report in
process and on a 2-worker pool, whose workers build the model's harness, not the board's."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from isa_models.cortex_m.cores import get_core_model
from refsim.conformance import vectors as vec
from refsim.engine import PoolEngine
from refsim.qemu import campaign
from refsim.qemu import conformance as qc
from refsim.qemu.build import KERNELS_C
from refsim.qemu.cores import get_core
from refsim.qemu.timing_cli import model_target
from refsim.qemu.toolchain import find_toolchain
from tests.cli_util import refsim

MODELS = ("cortex-m0plus", "cortex-m85")
FUNCTION = "arm_fully_connected_s8"
CASES = 4
SEED = 23
WRONG = 2  # this case's expected output is corrupted: it must fail, the same way on both paths

_PRODUCER = re.compile(r"DW_AT_producer[^\n]*: (GNU [^\n]*)")
_NAME = re.compile(r"DW_AT_name[^\n]*: (\S+)\n")


def _kernels_c_units(elf: Path) -> dict[str, str]:
    """kernels_c's source files (``src/conv_s8.c``) -> gcc's producer string (its switches), for
    every compile unit of ``elf`` built from kernels_c (whichever checkout filled the cache)."""
    readelf = find_toolchain().gcc.with_name("arm-none-eabi-readelf")
    dump = subprocess.run(
        [str(readelf), "--debug-dump=info", str(elf)], capture_output=True, text=True, check=True
    ).stdout
    units = {}
    for unit in dump.split("(DW_TAG_compile_unit)")[1:]:
        producer, name = _PRODUCER.search(unit), _NAME.search(unit)
        if producer and name and f"/{KERNELS_C.name}/" in name.group(1):
            units[name.group(1).partition(f"/{KERNELS_C.name}/")[2]] = producer.group(1)
    return units


@pytest.mark.parametrize("model_name", MODELS)
def test_the_harness_is_built_with_the_models_mcpu(model_name, toolchain):
    model = get_core_model(model_name)
    target = model_target(None, model_name)
    board = get_core(model.qemu_core)
    assert (target.model, target.cpu, target.core.machine) == (model_name, model_name, board.machine)
    assert target.describe() == (
        f"kernels_c for {model_name} (-mcpu={model.gcc_mcpu}) on {board.name} ({board.machine})"
    )
    ours = _kernels_c_units(target.harness.elf)
    assert any(name.startswith("src/") for name in ours) and any(n.startswith("harness/") for n in ours)
    # Only the board's startup (vector table, fault handler: never between the timing markers) is
    # the board core's own code; every kernel and the harness are the model's.
    startup = ours.pop("boards/startup.c")
    assert f"-mcpu={board.name}" in startup
    wrong = {name: p for name, p in ours.items() if f"-mcpu={model.gcc_mcpu} " not in p}
    assert not wrong, wrong
    if model.arch == "armv6-m":
        assert target.harness.key != model_target(None, board.name).harness.key
        assert all("-march=armv6s-m" in p for p in ours.values())


@pytest.fixture(scope="module")
def cases(toolchain) -> list[vec.Case]:
    cases = qc.generate_cases([FUNCTION], CASES, SEED)
    c = cases[WRONG]
    wrong = np.array(c.output, copy=True)
    wrong.reshape(-1)[0] ^= 1
    cases[WRONG] = vec.Case(c.function, c.case_id, c.arrays, c.params, wrong)
    return cases


def _summary(report: qc.Report) -> tuple:
    return (
        {f: (s.cases, s.passed, s.failed) for f, s in report.kernels.items()},
        [(f.case.label, f.message) for f in report.failures],
    )


@pytest.mark.parametrize("model_name", MODELS)
def test_serial_and_pool_runs_of_a_core_model_agree(model_name, cases):
    spec = campaign.TargetSpec(None, model_name)
    target = campaign.resolve(spec)
    assert target.model == model_name
    serial = qc.run_cases(target, cases)
    assert serial.failed == 1 and serial.failures[0].case.label == cases[WRONG].label
    with PoolEngine(2) as engine:  # each worker resolves the spec and must build the driver's harness
        pooled = campaign.run_campaign(engine, target, spec, campaign.case_tasks(cases, per_task=2))
    assert _summary(pooled) == _summary(serial)


@pytest.mark.parametrize("model_name", MODELS)
def test_cli_runs_a_core_model_in_process_and_on_a_pool(model_name, cases, capsys, tmp_path):
    vectors = tmp_path / "vectors"
    for case in cases:
        vec.write_case(vectors, case)
    board = get_core(get_core_model(model_name).qemu_core)
    args = ("conformance", "--vectors", vectors, "--cpu", model_name, "--failures-dir", tmp_path / "f")
    outputs = []
    for extra in ((), ("--workers", "2", "--per-task", "2")):
        code, out, _ = refsim(capsys, *args, *extra)
        assert code == 1
        assert f"kernels_c for {model_name} " in out and f"on {board.name} ({board.machine})" in out
        assert f"--cpu {model_name}" in out  # the reproduce line names the model, not the board
        outputs.append(out.strip().splitlines()[-1])
    assert outputs == [f"{CASES - 1} passed, 1 failed"] * 2
    assert "4 cases in 2 task(s) on process pool (2 workers)" in out

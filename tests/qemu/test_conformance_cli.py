"""``refsim conformance --isa``: conformance cases through kernels_c under QEMU, from the CLI.

Every tier on its default core with a few cases per kernel (one QEMU start each), a corrupted
vector directory that must fail and leave a reproducer failing the same way, a user library
(``--kernels-dir``, here a copy of kernels_c's own sources laid out like CMSIS-NN) and the
``--count-instructions`` JSON.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from refsim.cli import main
from refsim.conformance import vectors as vec
from refsim.qemu import QemuFaultError, ToolchainMissingError, build, run_batch
from refsim.qemu import conformance as qc
from refsim.qemu.conformance import COUNTS_FORMAT, kernel_functions
from refsim.qemu.instruction_classes import CLASSES
from refsim.qemu.plugin import find_host_cc

SEED = 7
CASES = 2
RECORD_KEYS = {"kernel", "variant", "shape", "core", "case", "instructions", "by_class", "macs"}


@pytest.fixture
def counting(toolchain: None) -> None:
    """Skip when the host C compiler that builds the QEMU plugin is missing (as for the cross tools)."""
    try:
        find_host_cc()
    except ToolchainMissingError as error:
        pytest.skip(str(error))


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["conformance", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _check_counts(path: Path, core: str, isa: str, cases: int) -> dict:
    document = json.loads(path.read_text())
    assert document["format"] == COUNTS_FORMAT and document["version"] == 1
    assert (document["core"], document["isa"]) == (core, isa)
    records = document["records"]
    assert len(records) == cases
    for record in records:
        assert set(record) == RECORD_KEYS
        assert record["core"] == core
        assert set(record["by_class"]) == set(CLASSES)
        assert sum(record["by_class"].values()) == record["instructions"] > 0
        assert record["macs"] is None or record["macs"] > 0
        assert re.fullmatch(r"\w+/\d+_\d{5}", record["case"])
    return document


@pytest.mark.parametrize(
    ("isa", "core"), [("scalar", "cortex-m3"), ("dsp", "cortex-m4"), ("mve", "cortex-m55")]
)
def test_every_kernel_passes_on_each_tier(
    isa: str, core: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], counting: None
) -> None:
    counts = tmp_path / "counts.json"
    status, out, err = _run(
        capsys, "--isa", isa, "--cases", str(CASES), "--seed", str(SEED), "--count-instructions", str(counts)
    )
    functions = kernel_functions()
    total = CASES * len(functions)
    assert status == 0, out + err
    assert f"kernels_c on {core}" in out
    assert f"{total} cases in 1 QEMU start(s)" in out
    assert out.rstrip().endswith(f"{total} passed, 0 failed")
    for function in functions:
        assert function in out
    document = _check_counts(counts, core, isa, total)
    assert {r["kernel"] for r in document["records"]} == set(functions)
    assert {r["variant"] for r in document["records"]} == {"default"}
    fc = [r for r in document["records"] if r["kernel"] == "arm_fully_connected_s8"]
    mve = sum(r["by_class"]["mve_mac"] for r in fc)
    assert (mve > 0) == (isa == "mve")


def test_a_poorer_tier_runs_its_variant_on_a_richer_core(
    capsys: pytest.CaptureFixture[str], toolchain: None
) -> None:
    status, out, err = _run(
        capsys, "--isa", "scalar", "--cpu", "cortex-m55", "--kernel", "arm_fully_connected_s8", "--cases", "3"
    )
    assert status == 0, out + err
    assert "--isa scalar, scalar variants" in out
    assert out.rstrip().endswith("3 passed, 0 failed")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--isa", "mve", "--cpu", "cortex-m4"], "cortex-m4 runs scalar, dsp"),
        (["--isa", "dsp", "--cpu", "cortex-m99"], "core must be one of"),
        (["--isa", "dsp", "--export-vectors", "x"], "golden-model vectors"),
        (["--isa", "dsp", "--kernel", "quantize"], "no such function has a C kernel"),
    ],
)
def test_bad_combinations_are_usage_errors(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str], toolchain: None
) -> None:
    status, out, err = _run(capsys, *args)
    assert status == 2
    assert message in " ".join((out + err).split())


def _corrupt_one(directory: Path) -> tuple[Path, str]:
    """Flip one expected output of the first case; its path and the FAIL line it must cause."""
    path = sorted(directory.glob("arm_fully_connected_s8/*.npz"))[0]
    case = vec.read_case(path)
    output = case.output.copy()
    output.flat[0] = np.int8(output.flat[0] ^ 0x55)
    case.output = output
    vec.write_case(directory, case)
    return path, f"FAIL {case.label}: first mismatch at index (0, 0) (flat 0)"


def test_corrupted_vectors_fail_and_the_reproducer_fails_the_same_way(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], toolchain: None
) -> None:
    vectors, failures = tmp_path / "vectors", tmp_path / "failures"
    for function in ("arm_fully_connected_s8", "arm_elementwise_add_s8"):
        for case in vec.generate_cases(function, 3, SEED):
            vec.write_case(vectors, case)
    status, out, err = _run(capsys, "--vectors", str(vectors), "--isa", "dsp")
    assert status == 0, out + err
    corrupted, fail_line = _corrupt_one(vectors)

    status, out, err = _run(
        capsys, "--vectors", str(vectors), "--isa", "dsp", "--failures-dir", str(failures)
    )
    assert status == 1, out + err
    assert fail_line in out
    assert out.rstrip().endswith("5 passed, 1 failed")
    saved = failures / "arm_fully_connected_s8" / corrupted.name
    assert f"first failing case saved to {saved}" in " ".join(out.split())
    reproducer = vec.read_case(saved)
    assert reproducer.params["failed_on"] == "cortex-m4" and reproducer.params["failed_isa"] == "dsp"

    status, again, err = _run(
        capsys, "--vectors", str(failures), "--isa", "dsp", "--failures-dir", str(tmp_path / "x")
    )
    assert status == 1, again + err
    assert fail_line in again
    assert again.rstrip().endswith("0 passed, 1 failed")
    # Without --isa the golden model checks the same directory, as before.
    status, golden, err = _run(capsys, "--vectors", str(failures))
    assert status == 1 and fail_line in golden


def _stand_in_library(root: Path, drop: str) -> Path:
    """kernels_c's own include/ and src/ laid out like a CMSIS-NN checkout, minus one source file,
    and without the prototype of refsim_lut_s8 (which CMSIS-NN's headers do not have either)."""
    shutil.copytree(build.KERNELS_C / "include", root / "Include")
    shutil.copytree(build.KERNELS_C / "src", root / "Source")
    (root / "Source" / drop).unlink()
    header = root / "Include" / "arm_nnfunctions.h"
    text, removed = re.subn(r"arm_cmsis_nn_status refsim_lut_s8\([^;]*\);", "", header.read_text())
    assert removed == 1
    header.write_text(text)
    return root


def test_kernels_dir_builds_a_user_library_in_place_of_kernels_c(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, counting: None
) -> None:
    monkeypatch.setenv("REFSIM_CACHE", str(tmp_path / "cache"))  # a throw-away library's build
    library = _stand_in_library(tmp_path / "my-cmsis-nn", drop="elementwise_s8.c")
    counts = tmp_path / "counts.json"
    status, out, err = _run(
        capsys,
        "--isa",
        "dsp",
        "--kernels-dir",
        str(library),
        "--kernel",
        "arm_fully_connected_s8",
        "--kernel",
        "arm_elementwise_add_s8",
        "--kernel",
        "refsim_lut_s8",
        "--cases",
        "3",
        "--count-instructions",
        str(counts),
    )
    text = " ".join(out.split())
    assert status == 0, out + err
    assert f"{library} on cortex-m4" in text
    assert f"skipped 3 cases of arm_elementwise_add_s8: {library} does not define it" in text
    assert out.rstrip().endswith("6 passed, 0 failed")
    document = _check_counts(counts, "cortex-m4", "dsp", 6)
    assert document["library"] == str(library)

    status, out, err = _run(capsys, "--isa", "scalar", "--cpu", "cortex-m4", "--kernels-dir", str(library))
    assert status == 2
    assert "--isa must be dsp on cortex-m4" in " ".join((out + err).split())


def test_a_cpu_fault_fails_its_case_and_the_rest_still_run(
    monkeypatch: pytest.MonkeyPatch, toolchain: None
) -> None:
    starts: list[int] = []

    def faulting_first_start(core, cases, **kwargs):  # the first QEMU start faults in its case 2
        starts.append(len(cases))
        if len(starts) == 1:
            raise QemuFaultError(
                "CPU fault in case 2",
                registers={"pc": 0},
                case_index=2,
                function="?",
                location="",
                exit_status=4,
            )
        return run_batch(core, cases, **kwargs)

    monkeypatch.setattr(qc, "run_batch", faulting_first_start)
    cases = list(vec.generate_cases("arm_fully_connected_s8", 5, SEED))
    report = qc.run_cases(qc.resolve_target("dsp", None), cases)
    assert starts == [5, 2, 2]  # all; the two before the fault again; the two after it
    assert report.emulator_starts == 3
    assert [f.case.label for f in report.failures] == [cases[2].label]
    assert report.failures[0].message.startswith("CPU fault:")
    assert (report.passed, report.failed) == (4, 1)

"""Build profiles: the CMSIS-NN each runtime links, built the way that runtime builds it.
ExecuTorch adds CMSIS-NN's own CMake project unchanged (-Ofast: the cmsis-nn calibration); TFLM's
Makefile compiles it at -O2 with its own flags (the cmsis-nn-tflm calibration,
``refsim calibrate --profile tflm``)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from isa_models.cortex_m import calibration
from refsim.commands.calibrate import PROFILE_LIBRARY, build_profile
from refsim.errors import RefsimError
from refsim.lab.tflm import build as tb
from refsim.qemu import missing_toolchain
from refsim.qemu.library import DEFAULT_PROFILE
from tests.cli_util import assert_one_error_line, refsim

TFLM_CORES = calibration.available().get("cmsis-nn-tflm", ())


def test_tflm_profile_is_tflms_makefile_build_of_cmsis_nn():
    profile = build_profile("tflm")
    assert profile.cmake_options == ("CMSIS_OPTIMIZATION_LEVEL=-O2",) and tb.OPT_THIRD_PARTY == "-O2"
    for flag in ("-std=c17", "-DNDEBUG", "-funsigned-char", "-fomit-frame-pointer", "-DARM_NN_ENABLE_F16=0"):
        assert flag in profile.c_flags, flag
    assert not any(f.startswith(("-mcpu", "-mfpu", "-mfloat-abi", "-O")) for f in profile.c_flags)
    assert build_profile("cmake") is DEFAULT_PROFILE and DEFAULT_PROFILE.cmake_options == ()
    assert PROFILE_LIBRARY == {"cmake": "cmsis-nn", "tflm": "cmsis-nn-tflm"}
    with pytest.raises(RefsimError, match="expected cmake"):
        build_profile("-O3")


def test_a_profile_needs_a_library(capsys):
    assert_one_error_line(
        refsim(capsys, "calibrate", "--profile", "tflm"), "--profile tflm: needs --kernels-dir"
    )
    assert_one_error_line(
        refsim(capsys, "calibrate", "--profile", "fast", "--kernels-dir", "."), "expected cmake"
    )


def test_tflm_calibration_covers_every_core_with_its_provenance():
    assert set(TFLM_CORES) == set(calibration.available()["cmsis-nn"])
    for core in TFLM_CORES:
        prov = calibration.load(core, "cmsis-nn-tflm").provenance
        assert (
            prov["build_profile"] == "tflm"
            and "4ab83cc3cc98fb85ed6dafb55e8ca02f1628dcae" in prov["library_commit"]
        )
        assert (
            prov["library_flags"].endswith("-DCMSIS_OPTIMIZATION_LEVEL=-O2")
            and "-funsigned-char" in prov["library_flags"]
        )
        assert "--profile tflm" in prov["command"] and prov["cycles_source"].startswith("refsim.qemu.timing")


@pytest.mark.parametrize("core", ["cortex-m3", "cortex-m4", "cortex-m55"])
def test_the_two_builds_measure_differently(core):
    """Same sweep shapes, other code: -O2 and -Ofast differ on some shape of the core."""

    def records(library):
        doc = json.loads(calibration.path_for(library, core).read_text())
        return {json.dumps(r["shape"], sort_keys=True): r["cycles"]
                for e in doc["functions"].values() for r in e["fit"] + e["held_out"]}  # fmt: skip

    a, b = records("cmsis-nn"), records("cmsis-nn-tflm")
    shared = a.keys() & b.keys()
    assert len(shared) > 100 and sum(a[k] != b[k] for k in shared) > 10


@pytest.mark.skipif(not os.environ.get("CMSIS_NN_DIR"), reason="set CMSIS_NN_DIR to a CMSIS-NN checkout")
@pytest.mark.skipif(
    bool(missing_toolchain()) or shutil.which("cmake") is None, reason="no toolchain or cmake"
)
def test_tflm_profile_compiles_cmsis_nn_at_o2(tmp_path: Path):
    from refsim.qemu.cores import get_core
    from refsim.qemu.library import cmake_build

    built = cmake_build(
        get_core("cortex-m4"), Path(os.environ["CMSIS_NN_DIR"]), tmp_path, build_profile("tflm")
    )
    commands = json.loads((tmp_path / "cmake" / "compile_commands.json").read_text())
    for c in commands:
        levels = [a for a in c["command"].split() if a.startswith("-O")]
        assert levels[-1] == "-O2", c["command"]
    assert built.archive.is_file()

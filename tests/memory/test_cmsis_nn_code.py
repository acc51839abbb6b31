"""The real CMSIS-NN's code per function, core and build profile (refsim/memory/cmsis_nn_code.json,
refsim/lab/cmsis_nn_code.py): what both runtimes' flash counts."""

from __future__ import annotations

import json

import pytest

from refsim.errors import UnsupportedError
from refsim.lab import cmsis_nn_code as lab
from refsim.lab.tflm import build as tb
from refsim.memory import cmsis_nn_code as cc
from refsim.memory.flash import CMSIS_ENTRIES

DATA = json.loads(cc.DATA.read_text())


def test_profiles_name_their_library_and_flags():
    et, tflm = DATA["profiles"]["executorch"], DATA["profiles"]["tflm"]
    assert et["cmsis_nn"].startswith("ARM-software/CMSIS-NN dbf45dbfcc515421dd6099037d3e2637b90748c8")
    assert tflm["cmsis_nn"].startswith("ARM-software/CMSIS-NN 4ab83cc3")
    assert (et["optimization"], tflm["optimization"]) == ("-Ofast", "-O2")
    assert set(et["cores"]) == set(lab.CORES["executorch"])
    # the TFLM profile was measured on the lab's memory cores (m3, m4, m55, and the m33 added later:
    # provenance.later_runs); TARGETS also holds the cores only its Invoke counts were taken on
    assert {"cortex-m3", "cortex-m4", "cortex-m55", "cortex-m33"} <= set(tflm["cores"]) <= set(tb.TARGETS)
    for core, entry in et["cores"].items():
        assert entry["flags"] == lab.PROFILES["executorch"].flags("executorch", core)
        assert entry["flags"][-1] == "-Ofast"  # CMSIS-NN's own level, after CMake Release's -O3
    for core, entry in tflm["cores"].items():
        assert entry["flags"] == tb.c_flags(core) and entry["flags"][-1] == "-O2"
    assert "12.2" in DATA["provenance"]["compiler"]


def test_every_entry_executorch_calls_is_there_on_every_core():
    entries = sorted({e for names in CMSIS_ENTRIES.values() for e in names})
    for core in [*lab.CORES["executorch"], "cortex-m85"]:
        lib = cc.library_code("executorch", core)
        for entry in entries:
            reached = lib.closure([entry])
            assert lib.bytes_of(reached) >= lib.functions[entry] > 0, (core, entry)
    assert cc.library_code("executorch", "cortex-m85").built_as == "cortex-m55"


def test_closure_follows_calls_and_tables():
    lib = cc.library_code("executorch", "cortex-m4")
    conv = lib.closure(["arm_convolve_wrapper_s8"])
    assert {"arm_convolve_s8", "arm_convolve_1x1_s8_fast", "arm_depthwise_conv_s8"} & conv
    assert "arm_convolve_s8" in conv and "arm_softmax_s8" not in conv
    # the MVE build and the DSP build differ, and -Ofast differs from TFLM's -O2
    assert (
        lib.functions["arm_convolve_s8"]
        != cc.library_code("executorch", "cortex-m55").functions["arm_convolve_s8"]
    )
    assert (
        lib.functions["arm_convolve_s8"] != cc.library_code("tflm", "cortex-m4").functions["arm_convolve_s8"]
    )


def test_missing_core_or_function_is_named():
    with pytest.raises(UnsupportedError, match="not cortex-m7"):
        cc.library_code("tflm", "cortex-m7")
    with pytest.raises(cc.CmsisNnCodeError, match="arm_nothing_s8 not defined"):
        cc.library_code("tflm", "cortex-m4").closure(["arm_nothing_s8"])


def test_merge_keeps_the_cores_and_profiles_a_later_run_did_not_measure():
    old = {"provenance": {"date": "d0", "compiler": "g", "command": "c0"},
           "profiles": {"tflm": {"cmsis_nn": "r", "cores": {"cortex-m3": {"functions": {"f": 1}}}},
                        "executorch": {"cmsis_nn": "e", "cores": {"cortex-m4": {"functions": {"f": 2}}}}}}  # fmt: skip
    new = {"provenance": {"date": "d1", "compiler": "g", "command": "c1"},
           "profiles": {"tflm": {"cmsis_nn": "r", "cores": {"cortex-m33": {"functions": {"f": 3}}}}}}  # fmt: skip
    merged = lab.merge(old, new)
    assert merged["profiles"]["executorch"] == old["profiles"]["executorch"]
    assert set(merged["profiles"]["tflm"]["cores"]) == {"cortex-m3", "cortex-m33"}
    assert merged["provenance"]["command"] == "c0"
    assert merged["provenance"]["later_runs"] == [
        {"compiler": "g", "date": "d1", "command": "c1", "cores": {"tflm": ["cortex-m33"]}}
    ]

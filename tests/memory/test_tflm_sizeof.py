"""The committed TFLM struct sizes (refsim/memory/tflm_sizes.json) still match TFLM's headers.

Recompiles refsim/lab/tflm/sizeof_probe/*.cpp (arm-none-eabi-g++ for cortex-m3/m4/m55, host g++ for
the 64-bit table) against the TFLM 90b983c2 sources and the commits its Makefile pins (paths from
REFSIM_TFLM_SRC, REFSIM_FLATBUFFERS_SRC, REFSIM_GEMMLOWP_SRC, REFSIM_RUY_SRC, REFSIM_CMSIS_NN_TFLM_SRC or
their /work/ext defaults) and compares every sizeof/alignof. Refresh with
``python -m refsim.lab.tflm.sizeof_probe --write`` and review the arena numbers.
"""

from __future__ import annotations

import json
import shutil

import pytest

from refsim.lab.tflm.sizeof_probe import ProbeError, probe_all, source_dirs
from refsim.memory.tflm.sizes import DATA, tflm_sizes


def _sources_or_skip() -> None:
    if shutil.which("arm-none-eabi-g++") is None or shutil.which("g++") is None:
        pytest.skip("arm-none-eabi-g++ or g++ not installed")
    try:
        source_dirs()
    except ProbeError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def probed() -> dict:
    _sources_or_skip()
    return probe_all()


def test_committed_sizes_match_the_headers(probed):
    committed = json.loads(DATA.read_text())
    for word in ("word32", "word64"):
        for kind in ("sizeof", "alignof"):
            assert probed[word][kind] == committed[word][kind], f"{word} {kind} drifted from TFLM's headers"


def test_short_enums_and_pointer_width_are_seen(probed):
    # arm-none-eabi's default short enums: TfLiteFullyConnectedParams is one enum, two bools, an
    # enum and a TfLiteType: 5 bytes on the 32-bit target, 16 with x86-64's int-sized enums.
    assert probed["word32"]["sizeof"]["TfLiteFullyConnectedParams"] == 5
    assert probed["word64"]["sizeof"]["TfLiteFullyConnectedParams"] == 16
    assert probed["word32"]["sizeof"]["TfLiteTensor_ptr"] == 4
    assert probed["word64"]["sizeof"]["TfLiteTensor_ptr"] == 8


def test_wheel_differences_override_only_the_64_bit_table():
    assert tflm_sizes(64)["TfLiteFullyConnectedParams"].size == 32  # the wheel's binary
    assert tflm_sizes(32)["TfLiteFullyConnectedParams"].size == 5  # TFLM 90b983c2 on Cortex-M

"""The committed 32-bit runtime sizes (refsim/memory/runtime_sizes.json) still match the headers.

Recompiles refsim/lab/executorch/sizeof_probe/sizeof_probe.cpp with arm-none-eabi-g++ for every probed core
against the installed executorch wheel's headers and compares every sizeof/alignof with the data
file. A drift (a new executorch, a changed struct) fails here; refresh with
``python -m refsim.lab.executorch.sizeof_probe --write`` in the interop venv and review the RAM numbers.
"""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("executorch")

from refsim.lab.executorch.sizeof_probe import executorch_version, probe_all
from refsim.memory.sizes import DATA

pytestmark = pytest.mark.skipif(
    shutil.which("arm-none-eabi-g++") is None, reason="arm-none-eabi-g++ not installed (gcc-arm-none-eabi)"
)


@pytest.fixture(scope="module")
def probed() -> dict:
    return probe_all()


def test_committed_sizes_match_the_headers(probed):
    committed = json.loads(DATA.read_text())
    for kind in ("sizeof", "alignof", "value"):
        assert probed[kind] == committed[kind], f"{kind} drifted from the executorch headers"


def test_committed_provenance_names_this_executorch(probed):
    committed = json.loads(DATA.read_text())["provenance"]
    assert committed["executorch"] == executorch_version()
    assert committed["flags"] == probed["provenance"]["flags"]


def test_probe_sees_the_types_it_claims(probed):
    # The probe compiled for real: a pointer-sized Span of EValue* and a TensorImpl with its six
    # pointer/size fields at least.
    assert probed["sizeof"]["InstructionArgs"] == 2 * probed["sizeof"]["EValue_ptr"]
    assert probed["sizeof"]["TensorImpl"] >= 6 * probed["sizeof"]["EValue_ptr"]

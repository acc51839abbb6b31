"""The dispatch probe rebuilt from an ExecuTorch tree reproduces the shipped measurement.

Runs only when EXECUTORCH_DIR (an ExecuTorch source tree: ``git archive <rev> runtime schema
extension/data_loader kernels/portable``) and FLATBUFFERS_DIR (flatbuffers at ExecuTorch's submodule pin) are set;
it builds ExecuTorch's runtime for the M4 and the M55, and its portable fp32 kernels for the M4
(a few minutes in all), and compares every counting
window with isa_models/cortex_m/dispatch.json exactly (QEMU's counts and the timing model are
deterministic). A different tree than the shipped one's fails here: then regenerate with
``python benchmarks/dispatch.py --write``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from isa_models.cortex_m.program import DISPATCH_DATA
from refsim.lab.executorch.dispatch_measure import fit, measure

MODELS_DIR = Path(__file__).resolve().parents[2] / "examples" / "models"

pytestmark = pytest.mark.skipif(
    not (os.environ.get("EXECUTORCH_DIR") and os.environ.get("FLATBUFFERS_DIR")),
    reason="set EXECUTORCH_DIR (ExecuTorch source tree) and FLATBUFFERS_DIR to rebuild the dispatch probe",
)


@pytest.fixture(scope="module")
def shipped() -> dict:
    return json.loads(DISPATCH_DATA.read_text())


@pytest.mark.parametrize("core", ["cortex-m4", "cortex-m55"])
def test_rebuilt_probe_reproduces_the_shipped_windows(
    core: str, shipped: dict, tmp_path: Path, timing: None
) -> None:
    from refsim.lab.executorch.build import Sources

    raw = measure(core, Sources.from_environment(), MODELS_DIR, tmp_path)
    windows = {name: {"instructions": p["instructions"], "cycles": p["cycles"]} for name, p in raw.items()}
    assert windows == shipped["cores"][core]["windows"]  # QEMU's counts: exact
    from tests.stored_digits import assert_equal_to_stored_digits, dispatch_fit_unit

    # the fit's last bits follow the machine's BLAS: one unit of a stored digit (tests/stored_digits.py)
    assert_equal_to_stored_digits(fit(raw), shipped["cores"][core]["fit"], dispatch_fit_unit)


def test_rebuilt_float_probe_reproduces_the_shipped_windows(tmp_path: Path, timing: None) -> None:
    from isa_models.cortex_m.program import FLOAT_DATA
    from refsim.lab.executorch.build import Sources
    from refsim.lab.executorch.float_probe import float_table, measure_float

    shipped = json.loads(FLOAT_DATA.read_text())["cores"]["cortex-m4"]
    raw = measure_float("cortex-m4", Sources.from_environment(), tmp_path)
    assert raw == shipped["windows"]
    assert float_table(raw) == shipped["table"]


@pytest.mark.skipif(
    not os.environ.get("CMSIS_NN_DIR"), reason="set CMSIS_NN_DIR for the cortex_m ops' headers"
)
def test_rebuilt_set_up_probe_reproduces_the_shipped_set_up(
    shipped: dict, tmp_path: Path, timing: None
) -> None:
    from refsim.lab.executorch.build import Sources
    from refsim.lab.executorch.dispatch_measure import measure_setup

    include = Path(os.environ["CMSIS_NN_DIR"]) / "Include"
    setup = measure_setup("cortex-m4", Sources.from_environment(), include, MODELS_DIR, tmp_path)
    assert setup == shipped["cores"]["cortex-m4"]["setup"]

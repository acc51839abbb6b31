"""The real TFLM + CMSIS-NN on Cortex-M under QEMU (refsim/lab/tflm/): the committed measurements
(refsim/memory/tflm_measured.json, tests/fixtures/tflite/tflm_qemu/) are consistent, the outputs
equal the tflite-micro interpreter's (x86-64, reference kernels) when that package is installed,
and with the sources at hand (REFSIM_TFLM_REPO, CMSIS_NN_DIR, TFLM_DOWNLOADS_DIR) one model
re-measured on one core reproduces the committed numbers."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from refsim.lab.build import LabError
from refsim.lab.tflm import build as tb
from refsim.lab.tflm import measure as tm

ROOT = Path(__file__).resolve().parents[2]
DATA_FILE = ROOT / "refsim/memory/tflm_measured.json"
DATA = json.loads(DATA_FILE.read_text())
MODELS_DIR = ROOT / "tests/fixtures/tflite"
FIXTURES = MODELS_DIR / "tflm_qemu"


def _sources_or_skip() -> tb.Sources:
    try:
        return tb.Sources.from_environment()
    except LabError as error:
        pytest.skip(str(error))
    raise AssertionError("unreachable")


def _tools_or_skip() -> None:
    from refsim.qemu.toolchain import missing_toolchain

    reason = missing_toolchain()
    if reason:
        pytest.skip(reason)


# --- the committed data ---------------------------------------------------------------------------


def test_arena_has_every_model_and_core_with_the_agreed_shape():
    assert set(DATA["arena"]) == set(tm.MODELS)
    for model, per_core in DATA["arena"].items():
        # the lab's memory cores (the M33 measured in a later run: provenance.later_runs)
        assert set(per_core) == set(tm.CORES), model
        for core, entry in per_core.items():
            assert set(entry) == {"arena_used_bytes", "arena_min_bytes"}, (model, core)
            assert all(isinstance(v, int) and v > 0 for v in entry.values()), (model, core)
            # the smallest accepted arena holds at least what TFLM reports it used
            assert entry["arena_min_bytes"] >= entry["arena_used_bytes"], (model, core)
    for model, checks in DATA["checks"].items():
        assert all(c["invoke_at_min_same_outputs"] for c in checks.values()), model


def test_flash_parts_add_up_to_the_linked_sections():
    assert set(DATA["flash"]) == set(tm.MODELS)
    for model, per_core in DATA["flash"].items():
        assert set(per_core) == set(tm.CORES), model
        ops = set(tm.model_ops(MODELS_DIR / model))
        for core, entry in per_core.items():
            s, p = entry["sections"], entry["parts"]
            flash = s["text"] + s["rodata"] + s["data"]
            parts = p["model"] + p["interpreter"] + p["other"] + sum(p["kernels"].values())
            assert parts + sum(p["cmsis_nn"].values()) == flash, (model, core)
            # the ELF adds only alignment padding between input sections
            assert 0 <= entry["elf_flash_bytes"] - flash < 256, (model, core)
            assert p["model"] == (MODELS_DIR / model).stat().st_size, (model, core)
            assert set(p["kernels"]) - {"shared"} == ops, (model, core)
            # every CMSIS-NN section is named for its function, or for its source file
            assert all(not fn.startswith(".") for fn in p["cmsis_nn"]), (model, core)
            assert entry["arena_bytes"] >= DATA["arena"][model][core]["arena_min_bytes"]
            assert s["bss"] >= entry["arena_bytes"], (model, core)
            sizes = entry["objects_outside_arena"]
            assert set(sizes) == {"MicroInterpreter", "MicroMutableOpResolver"}, (model, core)
            assert all(v > 0 for v in sizes.values()), (model, core)


def test_provenance_names_the_trees_tools_and_flags():
    prov = DATA["provenance"]
    assert prov["sources"]["tflm"].startswith("tensorflow/tflite-micro 90b983c2")
    assert prov["sources"]["cmsis_nn"].startswith("ARM-software/CMSIS-NN 4ab83cc3")
    assert "arm-none-eabi-gcc" in prov["compiler"] and "QEMU" in prov["qemu"]
    assert prov["flags"]["optimization"] == {
        "core (CORE_OPTIMIZATION_LEVEL)": "-Os",
        "kernels (KERNEL_OPTIMIZATION_LEVEL)": "-O2",
        "cmsis_nn (THIRD_PARTY_KERNEL_OPTIMIZATION_LEVEL)": "-O2",
    }


@pytest.mark.parametrize("model", tm.MODELS)
def test_fixture_input_is_the_seeded_one_and_every_core_agrees(model):
    with np.load(FIXTURES / f"{Path(model).stem}.npz") as f:
        arrays = dict(f)
    assert int(arrays["seed"]) == tm.SEED
    np.testing.assert_array_equal(arrays["input"], tm.model_input(MODELS_DIR / model, int(arrays["seed"])))
    outputs = [arrays[f"output0_{core.replace('-', '_')}"] for core in tm.CORES]
    for core, out in zip(tm.CORES[1:], outputs[1:], strict=True):
        np.testing.assert_array_equal(out, outputs[0], err_msg=f"{model}: {core} vs {tm.CORES[0]}")


@pytest.mark.parametrize("model", tm.MODELS)
def test_cortex_m_outputs_equal_the_tflite_micro_interpreter(model):
    runtime = pytest.importorskip(
        "tflite_micro.python.tflite_micro.runtime", reason="the tflite-micro package is not installed"
    )
    with np.load(FIXTURES / f"{Path(model).stem}.npz") as f:
        arrays = dict(f)
    interpreter = runtime.Interpreter.from_bytes((MODELS_DIR / model).read_bytes())
    interpreter.set_input(arrays["input"], 0)
    interpreter.invoke()
    np.testing.assert_array_equal(interpreter.get_output(0).reshape(-1), arrays["output0_cortex_m4"])


# --- the harness' generated sources and console ---------------------------------------------------


def test_ops_header_adds_exactly_the_ops_and_wraps_them_in_window_mode():
    text = tm.ops_header(["CONV_2D", "SOFTMAX"])
    assert "#define RS_TFLM_OP_COUNT 2" in text
    assert "(r).AddConv2D(); (r).AddSoftmax();" in text
    assert "(r).AddSoftmax(rs_wrap<1>(tflite::Register_SOFTMAX()));" in text


def test_console_lines_are_read_per_model():
    console = "noise\nrs-tflm 0 used 100\nrs-tflm 0 out 0 80ff01\nrs-tflm 1 min 32\nrs-tflm 0 min-invoke 1\n"
    parsed = tm.parse_console(console, 2)
    assert parsed[0] == {"outputs": {0: bytes([0x80, 0xFF, 0x01])}, "used": 100, "min-invoke": 1}
    assert parsed[1] == {"outputs": {}, "min": 32}


def test_missing_sources_name_the_variables(monkeypatch):
    monkeypatch.delenv("REFSIM_TFLM_REPO", raising=False)
    with pytest.raises(LabError, match="REFSIM_TFLM_REPO"):
        tb.Sources.from_environment()


# --- re-measured on the real TFLM -----------------------------------------------------------------

MODEL, CORE = "kws_ref_model.tflite", "cortex-m4"


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    base = os.environ.get("REFSIM_CACHE")
    return (Path(base) if base else Path.home() / ".cache/refsim") / "tflm-lab"


def test_one_model_on_one_core_reproduces_the_arena_and_outputs(build_dir):
    sources = _sources_or_skip()
    _tools_or_skip()
    (result,) = tm.measure_core(CORE, sources, [MODELS_DIR / MODEL], build_dir)
    assert {k: result[k] for k in ("arena_used_bytes", "arena_min_bytes")} == DATA["arena"][MODEL][CORE]
    assert result["min_invoke_same"]
    with np.load(FIXTURES / f"{Path(MODEL).stem}.npz") as f:
        np.testing.assert_array_equal(result["outputs"][0], f[f"output0_{CORE.replace('-', '_')}"])


def test_one_model_on_one_core_reproduces_the_flash_split(build_dir):
    sources = _sources_or_skip()
    _tools_or_skip()
    from refsim.qemu.toolchain import find_toolchain

    if find_toolchain().gcc_version != DATA["provenance"]["compiler"]:
        pytest.skip(
            f"flash was measured with {DATA['provenance']['compiler']}, this is {find_toolchain().gcc_version}"
        )
    ops_all = sorted({op for m in tm.MODELS for op in tm.model_ops(MODELS_DIR / m)})
    entry = DATA["flash"][MODEL][CORE]
    got = tm.measure_flash(CORE, sources, MODELS_DIR / MODEL, entry["arena_bytes"], build_dir, ops_all)
    assert got["sections"] == entry["sections"]
    assert got["parts"] == entry["parts"]
    assert got["objects_outside_arena"] == entry["objects_outside_arena"]
    shutil.rmtree(build_dir / f"flash-{CORE}-{Path(MODEL).stem}", ignore_errors=True)


def test_cli_without_sources_is_one_line_and_exit_2(monkeypatch, tmp_path, capsys):
    for name in ("REFSIM_TFLM_REPO", "CMSIS_NN_DIR", "TFLM_DOWNLOADS_DIR"):
        monkeypatch.delenv(name, raising=False)
    assert tm.main(["--out", str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("refsim: error: TFLM lab: set REFSIM_TFLM_REPO") and err.count("\n") == 1
    assert not (tmp_path / "out.json").exists()


def test_merge_keeps_every_core_of_every_table_a_later_run_did_not_measure():
    flags = {"optimization": {}, "per_core": {"cortex-m3": ["-mcpu=cortex-m3"]}}
    old = {"provenance": {"date": "d0", "flags": flags}, "arena": {"m.tflite": {"cortex-m3": {"a": 1}}},
           "flash": {"m.tflite": {"cortex-m3": {"f": 1}}}, "checks": {"m.tflite": {"cortex-m3": {"c": 1}}},
           "invoke": {"m.tflite": {"cortex-m3": {"x": 1}, "cortex-m4": {"x": 2}}}}  # fmt: skip
    new = {"provenance": {"date": "d1", "command": "c", "sources": {}, "compiler": "g",
                          "flags": {"per_core": {"cortex-m33": ["-mcpu=cortex-m33"], "cortex-m7": ["x"]}}},
           "arena": {"m.tflite": {"cortex-m33": {"a": 3}}}, "flash": {"m.tflite": {"cortex-m33": {"f": 3}}},
           "checks": {"m.tflite": {"cortex-m33": {"c": 3}}},
           "invoke": {"m.tflite": {"cortex-m33": {"x": 3}, "cortex-m4": {"x": 4}}}}  # fmt: skip
    merged = tm.merge(old, new)
    assert merged["invoke"] == {
        "m.tflite": {"cortex-m3": {"x": 1}, "cortex-m4": {"x": 4}, "cortex-m33": {"x": 3}}
    }
    for table, key in (("arena", "a"), ("flash", "f"), ("checks", "c")):
        assert merged[table] == {"m.tflite": {"cortex-m3": {key: 1}, "cortex-m33": {key: 3}}}, table
    prov = merged["provenance"]
    assert prov["date"] == "d0" and prov["later_runs"][0]["cores"] == ["cortex-m33", "cortex-m4"]
    assert prov["later_runs"][0]["measured"] == ["arena", "checks", "flash", "invoke"]
    # the measured cores' flags join the first run's; a core the run did not measure does not
    assert prov["flags"]["per_core"] == {"cortex-m3": ["-mcpu=cortex-m3"], "cortex-m33": ["-mcpu=cortex-m33"]}
    only_invoke = tm.merge(old, {"provenance": new["provenance"], "invoke": new["invoke"]})
    assert only_invoke["arena"] == old["arena"] and only_invoke["flash"] == old["flash"]


def test_fixtures_keep_the_outputs_of_cores_a_later_run_did_not_measure(tmp_path):
    prov = json.loads(json.dumps(DATA["provenance"]))
    x = np.arange(4, dtype=np.int8)
    tm.write_fixtures(
        {"m.tflite": {"input": x, "seed": np.int64(15), "output0_cortex_m3": x}}, tmp_path, prov
    )
    tm.write_fixtures(
        {"m.tflite": {"input": x, "seed": np.int64(15), "output0_cortex_m33": -x}}, tmp_path, prov
    )
    with np.load(tmp_path / "m.npz") as f:
        assert sorted(f) == ["input", "output0_cortex_m3", "output0_cortex_m33", "seed"]
        np.testing.assert_array_equal(f["output0_cortex_m33"], -x)
    # another input replaces the file: outputs of another input are not kept beside it
    tm.write_fixtures(
        {"m.tflite": {"input": x + 1, "seed": np.int64(15), "output0_cortex_m4": x}}, tmp_path, prov
    )
    with np.load(tmp_path / "m.npz") as f:
        assert sorted(f) == ["input", "output0_cortex_m4", "seed"]

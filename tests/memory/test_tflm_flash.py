"""TFLM's flash predicted from a .tflite (refsim/memory/tflm_flash.py) against the real TFLM's
linked firmwares (refsim/memory/tflm_measured.json, refsim/lab/tflm/measure.py), and its RAM
outside the arena."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from refsim.errors import UnsupportedError
from refsim.memory import tflm_flash as tf
from tests.memory.tflm_flash_heldout import FIXTURE as HELDOUT
from tests.memory.tflm_flash_heldout import heldout_model

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests/fixtures/tflite"
MEASURED = json.loads(tf.MEASURED.read_text())
DATA = json.loads(tf.DATA.read_text())
CASES = [(m, c) for m, per in MEASURED["flash"].items() for c in per]


def test_data_covers_the_cores_and_ops():
    from refsim.lab.tflm.build import OP_SOURCES, RESOLVER_METHODS

    # the lab's memory cores: m3, m4, m55 and (a later run, provenance.later_runs) m33
    assert set(DATA["cores"]) == {"cortex-m3", "cortex-m4", "cortex-m55", "cortex-m33"}
    assert {c for per in MEASURED["flash"].values() for c in per} == set(DATA["cores"])
    for core, entry in DATA["cores"].items():
        assert set(entry["ops"]) == set(OP_SOURCES) == set(RESOLVER_METHODS), core
        components = {e[0] for e in entry["base"]}
        assert {"interpreter", "application", "other"} <= components, core
        # no kernel and no CMSIS-NN code without an op
        assert not any(c.startswith("kernel:") or c == "cmsis_nn" for c in components), core
        for op, sections in entry["ops"].items():
            assert any(e[0].startswith("kernel:") for e in sections), (core, op)
            assert all(e[3] > 0 for e in sections)
    prov = DATA["provenance"]
    assert prov["sources"]["tflm"].startswith("tensorflow/tflite-micro 90b983c2")
    assert prov["sources"]["cmsis_nn"].startswith("ARM-software/CMSIS-NN 4ab83cc3")
    assert prov["flags"] == MEASURED["provenance"]["flags"]  # built as the measured firmwares
    assert "12.2" in prov["compiler"]


def test_cmsis_nn_sizes_are_the_measured_firmwares():
    """A CMSIS-NN function's size in the probes equals its size in every measured firmware."""
    for model, core in CASES:
        measured = MEASURED["flash"][model][core]["parts"]["cmsis_nn"]
        ops = tf.model_ops(MODELS / model)
        predicted = tf.predict(0, ops, core)["cmsis_nn"]
        assert predicted == measured, (model, core)


@pytest.mark.parametrize(("model", "core"), CASES)
def test_flash_within_2_percent_of_the_linked_image(model, core):
    m = MEASURED["flash"][model][core]
    path = MODELS / model
    p = tf.predict(path.stat().st_size, tf.model_ops(path), core)
    assert p["model"] == m["parts"]["model"]
    error = (p["total"] - m["elf_flash_bytes"]) / m["elf_flash_bytes"]
    assert abs(error) < 0.02, (model, core, p["total"], m["elf_flash_bytes"])
    # and each part on its own (the model apart, whose bytes are exact)
    code = m["elf_flash_bytes"] - m["parts"]["model"]
    assert abs(p["total"] - p["model"] - code) / code < 0.02, (model, core)
    assert abs(p["interpreter"] - m["parts"]["interpreter"]) / m["parts"]["interpreter"] < 0.05
    kernels = sum(m["parts"]["kernels"].values())
    assert abs(sum(p["kernels"].values()) - kernels) / kernels < 0.05


def test_heldout_fixture_is_the_generator_output():
    assert HELDOUT.read_bytes() == heldout_model()


def test_heldout_model_within_2_percent():
    """A model with ops none of the four has, in a set no probe was: its firmware linked by the lab
    (flash_probe.py --check) against the prediction."""
    checks = DATA["checks"][HELDOUT.name]
    ops = tf.model_ops(HELDOUT)
    four = {op for m in MEASURED["flash"] for op in tf.model_ops(MODELS / m)}
    assert set(ops) - four >= {"PAD", "MUL", "MEAN", "LOGISTIC", "HARD_SWISH"}
    assert set(checks) == set(DATA["cores"])
    for core, check in checks.items():
        assert check["ops"] == ops
        assert check["model_bytes"] == HELDOUT.stat().st_size
        p = tf.predict(check["model_bytes"], ops, core)
        error = (p["total"] - check["elf_flash_bytes"]) / check["elf_flash_bytes"]
        assert abs(error) < 0.02, (core, p["total"], check["elf_flash_bytes"])


def test_union_counts_shared_code_once():
    """AVERAGE_POOL_2D and MAX_POOL_2D share pooling.cc: both together cost less than the sum."""
    core = "cortex-m4"
    base = tf.predict(0, [], core)["total"]
    avg = tf.predict(0, ["AVERAGE_POOL_2D"], core)["total"] - base
    mx = tf.predict(0, ["MAX_POOL_2D"], core)["total"] - base
    both = tf.predict(0, ["AVERAGE_POOL_2D", "MAX_POOL_2D"], core)["total"] - base
    assert max(avg, mx) < both < avg + mx


def test_report_lines_and_errors():
    r = tf.tflm_flash_report(MODELS / "kws_ref_model.tflite", "cortex-m4")
    top = [ln for ln in r["lines"] if ln["part_of"] is None]
    assert sum(ln["bytes"] for ln in top) == r["flash_bytes"]
    assert all(ln["source"] for ln in r["lines"])
    for parent in ("TFLM kernels", "CMSIS-NN"):
        parts = [ln["bytes"] for ln in r["lines"] if ln["part_of"] == parent]
        assert sum(parts) == next(ln["bytes"] for ln in top if ln["name"] == parent)
    with pytest.raises(UnsupportedError, match="no data for --cpu cortex-m7"):
        tf.tflm_flash_report(MODELS / "kws_ref_model.tflite", "cortex-m7")
    with pytest.raises(UnsupportedError, match="op SVDF not probed"):
        tf.predict(0, ["SVDF"], "cortex-m4")


@pytest.mark.parametrize(("model", "core"), CASES)
def test_runtime_ram_is_the_measured_one(model, core):
    m = MEASURED["flash"][model][core]
    ops = tf.model_ops(MODELS / model)
    r = {ln["name"].split("<")[0]: ln["bytes"] for ln in tf.tflm_runtime_ram(core, ops)["lines"]}
    assert r["MicroInterpreter"] == m["objects_outside_arena"]["MicroInterpreter"]
    assert r["MicroMutableOpResolver"] == m["objects_outside_arena"]["MicroMutableOpResolver"]
    assert r["runtime .data"] == m["sections"]["data"]
    assert r["runtime .bss (arena excluded)"] == m["sections"]["bss"] - m["arena_bytes"]


@pytest.mark.skipif(
    not os.environ.get("REFSIM_TFLM_REPO") or not os.environ.get("CMSIS_NN_DIR"),
    reason="needs REFSIM_TFLM_REPO, CMSIS_NN_DIR and TFLM_DOWNLOADS_DIR (the TFLM lab's sources)",
)
def test_probe_relinked_equals_the_data(tmp_path):
    """Re-link the base and the SOFTMAX probe on the M4 (compiling TFLM takes minutes without
    REFSIM_TFLM_BUILD, a build directory to reuse) and compare with the data file."""
    from refsim.lab.tflm import build as tb
    from refsim.lab.tflm import flash_probe as fp
    from refsim.qemu.toolchain import find_toolchain

    if find_toolchain().gcc_version != DATA["provenance"]["compiler"]:
        pytest.skip("a different arm-none-eabi-gcc than the data's")
    cached = os.environ.get("REFSIM_TFLM_BUILD")
    if cached:  # reuse the compiled objects, never the linked firmwares
        for objdir in Path(cached).glob("tflm-cortex-m4-*"):
            (tmp_path / objdir.name).symlink_to(objdir.resolve())
    got = fp.probe_core("cortex-m4", tb.Sources.from_environment(), tmp_path, ["SOFTMAX"])
    want = DATA["cores"]["cortex-m4"]
    assert got["base"] == want["base"]
    assert got["ops"]["SOFTMAX"] == want["ops"]["SOFTMAX"]


def test_inspect_memory_carries_flash_and_ram(capsys):
    from tests.cli_util import refsim

    kws = MODELS / "kws_ref_model.tflite"
    code, out, err = refsim(capsys, "inspect", kws, "--memory", "--cpu", "cortex-m4", "--json", "-")
    assert code == 0, err
    tflm = json.loads(out)["tflm"]
    assert "arena_used_bytes" in tflm  # the arena report is still there
    assert tflm["flash_bytes"] == tf.tflm_flash_report(kws, "cortex-m4")["flash_bytes"]
    assert tflm["runtime_ram"]["ram_bytes"] > 208
    code, out, err = refsim(capsys, "inspect", kws, "--memory", "--cpu", "cortex-m4")
    assert code == 0, err
    assert "TFLM flash" in out and "MicroInterpreter" in out and "flash total" in out
    # a core the arena predicts but no flash firmware was measured for: said, not guessed
    code, out, err = refsim(capsys, "inspect", kws, "--memory", "--cpu", "cortex-m7", "--json", "-")
    assert code == 0, err
    assert "no data for --cpu cortex-m7" in json.loads(out)["tflm"]["flash"]["error"]
    # the M85 links the M55's build (as refsim compare counts it); the M0+, a core QEMU does not
    # emulate, still has its (scalar) arena predicted
    m55 = json.loads(refsim(capsys, "inspect", kws, "--memory", "--cpu", "cortex-m55", "--json", "-")[1])[
        "tflm"
    ]
    code, out, err = refsim(capsys, "inspect", kws, "--memory", "--cpu", "cortex-m85", "--json", "-")
    assert code == 0, err
    m85 = json.loads(out)["tflm"]
    assert m85["build"] == "cortex-m55"
    assert (m85["arena_min_bytes"], m85["flash_bytes"]) == (m55["arena_min_bytes"], m55["flash_bytes"])
    code, out, err = refsim(capsys, "inspect", kws, "--memory", "--cpu", "cortex-m0plus", "--json", "-")
    assert code == 0, err
    m3 = json.loads(refsim(capsys, "inspect", kws, "--memory", "--cpu", "cortex-m3", "--json", "-")[1])[
        "tflm"
    ]
    assert json.loads(out)["tflm"]["arena_min_bytes"] == m3["arena_min_bytes"]  # both scalar builds
    # the M33 (measured after the first three cores) is predicted like them
    code, out, err = refsim(capsys, "inspect", kws, "--memory", "--cpu", "cortex-m33", "--json", "-")
    assert code == 0, err
    assert json.loads(out)["tflm"]["flash_bytes"] == tf.tflm_flash_report(kws, "cortex-m33")["flash_bytes"]


def test_both_sides_count_the_same_cmsis_nn_data():
    """The TFLM probes' CMSIS-NN sections equal cmsis_nn_code.json's tflm profile, function by
    function (the same library, compiled the same way, measured two ways)."""
    from refsim.memory.cmsis_nn_code import library_code

    for core in DATA["cores"]:
        lib = library_code("tflm", core)
        sections = tf.predict_sections(sorted(DATA["cores"][core]["ops"]), core)
        checked = 0
        for (origin, section), (component, size) in sections.items():
            if component != "cmsis_nn":
                continue
            name = tf._symbol(origin, section)
            assert lib.functions[name] == size, (core, name)
            checked += 1
        assert checked > 50, core  # every CMSIS-NN function the 37 ops reach


def test_probe_merge_keeps_the_cores_a_later_run_did_not_probe():
    from refsim.lab.tflm import flash_probe as fp

    flags = {"optimization": {}, "per_core": {"cortex-m3": ["a"]}}
    old = {"provenance": {"date": "d0", "command": "c0", "flags": flags},
           "cores": {"cortex-m3": {"base": [1]}}, "checks": {"h.tflite": {"cortex-m3": {"e": 1}}}}  # fmt: skip
    new = {"provenance": {"date": "d1", "command": "c1", "sources": {}, "compiler": "g",
                          "flags": {"optimization": {}, "per_core": {"cortex-m33": ["b"], "cortex-m7": ["c"]}}},
           "cores": {"cortex-m33": {"base": [3]}}, "checks": {"h.tflite": {"cortex-m33": {"e": 3}}}}  # fmt: skip
    merged = fp.merge(old, new)
    assert merged["cores"] == {"cortex-m3": {"base": [1]}, "cortex-m33": {"base": [3]}}
    assert merged["checks"] == {"h.tflite": {"cortex-m3": {"e": 1}, "cortex-m33": {"e": 3}}}
    prov = merged["provenance"]
    assert prov["command"] == "c0" and prov["later_runs"][0]["cores"] == ["cortex-m33"]
    assert prov["flags"]["per_core"] == {"cortex-m3": ["a"], "cortex-m33": ["b"]}

"""`refsim compare A B`: an ExecuTorch .pte and a .tflite of one network side by side (the JSON
report's fields, the layer matching, the warnings for programs that are not the same network,
the plot), and bad input as one error line."""

from __future__ import annotations

import json
from pathlib import Path

from refsim.comparison import Side, match_layers, warnings_for
from tests.cli_util import assert_one_error_line, refsim

ROOT = Path(__file__).resolve().parents[2]
KWS_PTE = ROOT / "examples" / "models" / "kws_m4.pte"
KWS_TFLITE = ROOT / "tests" / "fixtures" / "tflite" / "kws_ref_model.tflite"
AD_TFLITE = ROOT / "tests" / "fixtures" / "tflite" / "ad01_int8.tflite"


def test_kws_pte_against_tflite_json(capsys, tmp_path):
    out = tmp_path / "cmp.json"
    png = tmp_path / "cmp.png"
    code, _, err = refsim(
        capsys, "compare", KWS_PTE, KWS_TFLITE, "--cpu", "cortex-m4", "--json", out, "--plot", png
    )
    assert code == 0, err
    report = json.loads(out.read_text())
    a, b = report["a"], report["b"]
    assert (a["runtime"], b["runtime"]) == ("executorch", "tflm")
    for side in (a, b):
        assert {
            "path",
            "runtime",
            "latency_ms",
            "cycles_total",
            "ram_bytes",
            "flash_bytes",
            "breakdown",
        } <= set(side)
        assert side["cycles_total"] > 1_000_000 and side["latency_ms"] > 0
    assert a["ram_bytes"] > 0 and a["flash_bytes"] > 0
    # TFLM's side: the arena (to the byte against TFLM under QEMU) plus what it keeps beside it,
    # and the predicted image (within 0.2% of the linked firmware): tests/memory
    ram_lines = b["breakdown"]["ram"]
    assert ram_lines[0]["bytes"] == 22_824  # kws on the M4: the smallest arena TFLM accepts, measured
    assert b["ram_bytes"] == sum(ln["bytes"] for ln in ram_lines) > 22_824
    assert 139_516 * 0.98 < b["flash_bytes"] < 139_516 * 1.02  # the linked image, measured
    # the same layers: 4 depthwise + 4 pointwise convs + the classifier pair one to one, same function
    pairs = [p for p in report["layers"] if p["a"] and p["b"]]
    same = [p for p in pairs if p["a"]["function"] == p["b"]["function"]]
    assert len(same) >= 10
    # the first conv: a one-channel conv ExecuTorch lowers to a depthwise, TFLM runs arm_convolve_s8
    first = pairs[0]
    assert first["a"]["macs"] == first["b"]["macs"] == 320_000
    assert "depthwise" in first["a"]["function"] and first["b"]["function"] == "arm_convolve_s8"
    assert any("another layout" in w for w in report["warnings"])  # NCHW vs NHWC input
    assert report["diff"]["latency_ms"]["smaller"] in ("a", "b")
    assert png.stat().st_size > 1000


def test_a_different_network_is_a_warning(capsys):
    code, out, err = refsim(capsys, "compare", KWS_PTE, AD_TFLITE, "--cpu", "cortex-m4", "--json", "-")
    assert code == 0, err
    warnings = json.loads(out)["warnings"]
    assert any("not the same network" in w for w in warnings), warnings


def _side(layers, inputs=(([1, 4], "int8"),), macs=100) -> Side:
    return Side("x", "tflm", 1.0, 1, True, "cmsis-nn", None, None, macs, list(inputs), layers=layers)


def _row(i, family, macs):
    return {"index": i, "name": f"op{i}", "function": family, "family": family, "macs": macs, "cycles": 1}


def test_layers_pair_by_family_and_macs_then_by_macs_alone():
    a = _side([_row(0, "pad", 5), _row(1, "depthwise", 100), _row(2, "conv", 50), _row(3, "softmax", 0)])
    b = _side([_row(0, "conv", 100), _row(1, "conv", 50), _row(2, "other", 7), _row(3, "softmax", 0)])
    pairs = [
        (None if x is None else x["index"], None if y is None else y["index"]) for x, y in match_layers(a, b)
    ]
    assert pairs == [(0, None), (1, 0), (2, 1), (None, 2), (3, 3)]


def test_warnings():
    same = _side([])
    assert warnings_for(same, _side([])) == []
    assert (
        "another layout"
        in warnings_for(_side([], [([1, 3, 8, 8], "int8")]), _side([], [([1, 8, 8, 3], "int8")]))[0]
    )
    assert "not the same network" in warnings_for(same, _side([], [([1, 5], "int8")]))[0]
    assert "MACs differ" in warnings_for(same, _side([], macs=200))[0]


def test_bad_input_is_one_line(capsys, tmp_path):
    assert_one_error_line(refsim(capsys, "compare", KWS_PTE, tmp_path / "none.tflite"), "no such file")
    assert_one_error_line(refsim(capsys, "compare", KWS_PTE, KWS_PTE), "same file")
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"\x00" * 64)
    assert_one_error_line(refsim(capsys, "compare", KWS_PTE, bad))


def test_tflm_budget_on_a_core_without_its_measured_build(capsys):
    """The M85 takes the M55's TFLM build (as the ExecuTorch side does); a core the TFLM lab has
    not built (the M7: only its Invoke counts were measured) leaves RAM and flash unknown and says why, the estimate still stands."""
    from refsim.memory.tflm.budget import tflm_memory_report
    from refsim.tflite import load_model

    model = load_model(KWS_TFLITE).model
    m85, m55 = (
        tflm_memory_report(model, KWS_TFLITE, "cortex-m85"),
        tflm_memory_report(model, KWS_TFLITE, "cortex-m55"),
    )
    assert (m85["ram_total"], m85["flash_total"]) == (m55["ram_total"], m55["flash_total"])
    assert "cortex-m55's build" in m85["lines"][0]["source"]
    m7 = tflm_memory_report(model, KWS_TFLITE, "cortex-m7")
    assert (
        m7["ram_total"] is None and m7["flash_total"] is None and "not predicted on cortex-m7" in m7["note"]
    )
    # the M33, measured after the first three cores, has its own build's totals
    m33 = tflm_memory_report(model, KWS_TFLITE, "cortex-m33")
    assert m33["ram_total"] > m33["lines"][0]["bytes"] > 0 and m33["flash_total"] > 0 and not m33["note"]
    code, out, err = refsim(capsys, "compare", KWS_PTE, KWS_TFLITE, "--cpu", "cortex-m7", "--json", "-")
    assert code == 0, err
    b = json.loads(out)["b"]
    assert b["ram_bytes"] is None and b["cycles_total"] > 0 and "not predicted" in b["memory_note"]

"""``refsim inspect`` and ``refsim run`` on a .tflite: the format is told by the file identifier,
inspect describes the model (table and --json), run says in one line that it cannot execute
one yet, and a corrupt .tflite is one error line with exit status 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from refsim.errors import UnsupportedError
from refsim.formats import PTE, TFLITE, model_format
from refsim.runtime import Program
from refsim.tflite import ModelError
from tests.cli_util import assert_one_error_line, refsim
from tests.tflite.test_corruption import FILES, NAMED

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tflite"
KWS = FIXTURES / "kws_ref_model.tflite"
PTE_KWS = Path(__file__).resolve().parents[2] / "examples" / "models" / "kws.pte"


def test_the_format_is_the_file_identifier_not_the_name(tmp_path):
    disguised = tmp_path / "model.pte"
    shutil.copy(KWS, disguised)
    assert model_format(disguised) == TFLITE
    assert model_format(PTE_KWS.read_bytes()) == PTE
    assert model_format(tmp_path / "none") is None
    assert model_format(b"TFL3") is None


def test_run_a_tflite_says_it_is_not_implemented(capsys, tmp_path):
    assert_one_error_line(
        refsim(capsys, "run", KWS),
        f"{KWS}: executing a .tflite model is not implemented yet",
        "refsim inspect",
    )
    disguised = tmp_path / "kws.pte"  # told by its identifier, not the ET12 identifier error
    shutil.copy(KWS, disguised)
    assert_one_error_line(refsim(capsys, "run", disguised), "not implemented yet")


def test_program_load_refuses_a_tflite_in_one_line():
    with pytest.raises(UnsupportedError, match=r"^executing a \.tflite model is not implemented yet"):
        Program.load(KWS.read_bytes())
    # a corrupt one gets its own error, not "not implemented"
    with pytest.raises(ModelError, match=r"^subgraphs\[0\]\.operators\[2\]\.opcode_index"):
        Program.load(NAMED["opcode index"][0])


@pytest.mark.parametrize(
    "case", ["bad identifier", "opcode index", "vector length past the end", "huge tensor"]
)
@pytest.mark.parametrize("command", ["run", "inspect"])
def test_a_corrupt_tflite_is_one_error_line(capsys, tmp_path, case, command):
    data, _ = NAMED[case]
    path = tmp_path / "bad.tflite"
    path.write_bytes(data)
    code, _, err = refsim(capsys, command, path)
    assert_one_error_line((code, "", err))
    if case != "bad identifier":  # TFL2 is no known format: the .pte loader reports it
        assert "not implemented" not in err


def test_inspect_prints_ops_tensors_and_io(capsys):
    code, out, err = refsim(capsys, "inspect", KWS)
    assert code == 0, err
    assert "TFLite schema 3, constants 24,392 B" in out
    assert "13 operators, 35 tensors" in out and "CONV_2D ×5" in out
    assert "DEPTHWISE_CONV_2D" in out and "padding=VALID" in out and "beta=1.0" in out
    assert "scale 0.584703, zp 83" in out  # input quantization
    assert "per channel (dim 3): 64 scales" in out


def test_inspect_json(capsys, tmp_path):
    code, out, err = refsim(capsys, "inspect", KWS, "--json", "-")
    assert code == 0, err
    report = json.loads(out)
    assert report["format"] == "tflite" and report["constant_bytes"] == 24392
    (g,) = report["subgraphs"]
    assert len(g["ops"]) == 13 and len(g["tensors"]) == 35
    assert g["ops"][0] == {
        "index": 0,
        "name": "CONV_2D",
        "version": 3,
        "options_type": "Conv2DOptions",
        "options": {
            "padding": "SAME",
            "stride_w": 2,
            "stride_h": 2,
            "fused_activation_function": "RELU",
            "dilation_w_factor": 1,
            "dilation_h_factor": 1,
            "quantized_bias_type": "FLOAT32",
        },
        "inputs": [0, 17, 3],
        "outputs": [22],
    }
    (x,) = g["inputs"]
    assert x["shape"] == [1, 49, 10, 1] and x["dtype"] == "int8"
    assert x["quantization"]["zero_point"] == [83]
    # every buffer byte belongs to a tensor but the 16 of the min_runtime_version metadata
    assert sum(t["constant_bytes"] for t in g["tensors"]) == report["constant_bytes"] - 16
    refsim(capsys, "inspect", KWS, "--json", tmp_path / "r.json")
    assert json.loads((tmp_path / "r.json").read_text()) == report


def test_inspect_every_seed_model(capsys, tmp_path):
    for name, data in FILES.items():
        path = tmp_path / f"{name}.bin"
        path.write_bytes(data)
        code, _, err = refsim(capsys, "inspect", path)
        assert code == 0, (name, err)


def test_inspect_plot_memory_is_not_there_yet(capsys, tmp_path):
    # --memory predicts TFLM's arena now (tests/memory/test_tflm_arena.py); the timeline plot does not exist.
    result = refsim(capsys, "inspect", KWS, "--memory", "--plot-memory", tmp_path / "a.png")
    assert_one_error_line(result, "not implemented for a .tflite")

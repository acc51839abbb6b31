"""``refsim inspect`` and ``refsim run`` on a .tflite: the format is told by the file identifier,
inspect describes the model (table and --json), run executes it (tests/tflite/test_execution.py
holds the numerics), and a corrupt or unsupported .tflite is one error line with exit status 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from refsim.formats import PTE, TFLITE, model_format
from refsim.runtime import Program
from refsim.tflite import BuiltinOperator, ModelError, TensorType
from refsim.tflite.writer import ModelBuilder, write_model
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


def test_run_a_tflite_executes_it(capsys, tmp_path):
    code, out, err = refsim(capsys, "run", KWS)
    assert code == 0, err
    assert "tflm::conv_2d" in out and "output0: int8 [1, 12]" in out
    disguised = tmp_path / "kws.pte"  # told by its identifier, not by the name
    shutil.copy(KWS, disguised)
    assert refsim(capsys, "run", disguised)[0] == 0


def test_run_dump_tensors_keys_are_tensor_indices(capsys, tmp_path):
    dump = tmp_path / "t.npz"
    code, _, err = refsim(capsys, "run", KWS, "--dump-tensors", dump)
    assert code == 0, err
    with np.load(dump) as z:
        keys = sorted(map(int, z.files))
        assert keys == [0, *range(22, 35)]  # the input and every operator output of kws_ref_model
        assert z["22"].shape == (1, 25, 5, 64)


def test_program_load_takes_a_tflite_and_refuses_a_corrupt_one():
    assert Program.load(KWS.read_bytes()).runtime == "tflm"
    assert Program.load(PTE_KWS).runtime == "executorch"
    with pytest.raises(ModelError, match=r"^subgraphs\[0\]\.operators\[2\]\.opcode_index"):
        Program.load(NAMED["opcode index"][0])


def test_an_unsupported_operator_is_one_error_line(capsys, tmp_path):
    b = ModelBuilder()
    x = b.tensor((1, 4), TensorType.INT8, scale=0.5, zero_point=0)
    y = b.tensor((1, 4), TensorType.INT8, scale=0.5, zero_point=0)
    b.op(BuiltinOperator.ELU, [x], [y])
    path = tmp_path / "elu.tflite"
    path.write_bytes(write_model(b.build(inputs=[x], outputs=[y])))
    assert_one_error_line(refsim(capsys, "run", path), "operator 0 (ELU): not supported")


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

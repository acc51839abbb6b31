"""``refsim compile`` through refsim's CLI (the entry point), its report, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("torchao")

from refsim.cli import main
from refsim.runtime import Program

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "compile_example.py"


def test_compile_zoo_kws_writes_a_program_and_a_report(tmp_path, capsys):
    out, report = tmp_path / "kws.pte", tmp_path / "kws.json"
    assert main(["compile", "zoo:kws", "--target", "cortex-m55", "-o", str(out), "--json", str(report)]) == 0
    data = json.loads(report.read_text())
    assert data["target"] == "cortex-m55" and data["isa"] == "mve"
    assert data["memory"]["arena_bytes"] == data["memory"]["lower_bound"] == 20464
    assert set(data["memory"]["planners"]) >= {"greedy_by_size", "executorch_greedy", "first_fit"}
    assert data["constant_bytes"] == 28976 and data["pte_bytes"] == out.stat().st_size
    assert [x["status"] for x in data["layers"]].count("folded") == 9
    assert data["io"]["output0"] == {"scale": 1 / 256, "zero_point": -128}
    printed = capsys.readouterr().out
    assert "executorch_greedy" in printed and "folded" in printed and "wrote" in printed
    method = Program.load(out).method("forward")
    (y,) = method.execute([np.zeros((1, 1, 49, 10), np.int8)])
    assert y.shape == (1, 12) and y.dtype == np.int8


def test_compile_module_file_with_npz_calibration(tmp_path):
    rng = np.random.default_rng(0)
    calibration = tmp_path / "cal.npz"
    np.savez(calibration, input0=rng.uniform(-1, 1, (8, 3, 32, 32)).astype(np.float32))
    out = tmp_path / "example.pte"
    args = ["compile", f"{EXAMPLE}:make_model", "--input-shape", "1,3,32,32", "--target", "cortex-m4"]
    assert (
        main([*args, "--calibration", str(calibration), "--planner", "first_fit", "-o", str(out), "-q"]) == 0
    )
    assert Program.load(out).method("forward") is not None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["zoo:nope"], "unknown zoo model 'nope'"),
        (["missing.py:make"], "does not exist"),
        (["model"], "expected MODULE.py:FACTORY or zoo:NAME"),
        (["zoo:kws", "--target", "cortex-m99"], "unknown target 'cortex-m99'"),
        (["zoo:kws", "--planner", "magic"], "unknown 'magic'"),
        (["zoo:kws", "--input-shape", "1,x"], "--input-shape"),
        (["zoo:kws", "--input-shape", "1,1,40,10"], "takes [1, 1, 49, 10]"),
        (["zoo:kws", "--calibration-random", "0"], "at least 1 sample"),
        (["zoo:kws", "--calibration", "nothing.npz"], "does not exist"),
        ([f"{EXAMPLE}:make_model"], "--input-shape is required"),
        ([f"{EXAMPLE}:nothing", "--input-shape", "1,3,32,32"], "no callable 'nothing'"),
        ([f"{EXAMPLE}:make_model", "--input-shape", "1,3,8,8"], "torch.export failed"),
    ],
)
def test_bad_input_is_one_line_and_status_2(tmp_path, capsys, argv, message):
    code = main(["compile", *argv, "-o", str(tmp_path / "x.pte"), "-q"])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err

"""Device divergences as a report: `Method.divergences`, ``refsim inspect``, ``refsim run --strict``.

Each divergence is shown by a real ExecuTorch 1.5.1 export:

* cm_binary.pte: cortex_m::maximum/minimum on channels-last inputs write NHWC bytes under the
  out's NCHW dim order (layout);
* cm_conv_linear_m55.pte on a scalar/DSP core: quantized_linear carries the MVE export's
  kernel_sum, which those CMSIS-NN builds ignore (ignored_argument);
* kws_m4.pte on MVE: quantized_linear without kernel_sum, which CMSIS-NN's MVE
  arm_fully_connected_s8 refuses (ctx.buf NULL: device_error).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from refsim.cli import main
from refsim.ops.divergence import Divergence
from refsim.runtime import Program

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "pte"
MODELS = ROOT / "examples" / "models"


def _method(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Program.load(path).method()


def _refsim(capsys, *argv) -> tuple[int, str, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_channels_last_maximum_minimum_are_layout_divergences():
    found = _method(FIXTURES / "cm_binary.pte").divergences("mve")
    assert [(d.op, d.kind) for d in found] == [
        ("cortex_m::maximum.out", "layout"),
        ("cortex_m::minimum.out", "layout"),
    ]
    assert all(
        d.arguments == ("self", "other", "out") and "dim_order [0, 2, 3, 1]" in d.reason for d in found
    )


@pytest.mark.parametrize("isa", ["scalar", "dsp"])
def test_mve_linear_on_a_dsp_or_scalar_core_ignores_kernel_sum(isa):
    method = _method(FIXTURES / "cm_conv_linear_m55.pte")
    found = method.divergences(isa)
    linears = [c.instruction for c in method.calls if c and c.op.name == "cortex_m::quantized_linear.out"]
    assert linears and [d.instruction for d in found] == linears
    assert {d.kind for d in found} == {"ignored_argument"} and all(isa in d.reason for d in found)
    assert method.divergences("mve") == []


def test_dsp_linear_on_mve_is_refused_by_cmsis_nn():
    method = _method(MODELS / "kws_m4.pte")
    (found,) = method.divergences("mve")
    assert found.kind == "device_error" and "ARM_CMSIS_NN_ARG_ERROR" in found.reason
    assert method.divergences("dsp") == []


@pytest.mark.parametrize("name", ["kws", "vww", "ic", "ad"])
def test_bundled_m55_models_have_no_divergence_on_mve(name):
    assert _method(MODELS / f"{name}.pte").divergences("mve") == []


def test_run_strict_refuses_a_divergent_program_in_one_line(capsys):
    code, _, err = _refsim(capsys, "run", FIXTURES / "cm_binary.pte", "--strict", "-q")
    lines = err.splitlines()
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith("refsim: error: --strict:") and "cortex_m::maximum.out" in lines[0]
    assert "1 more" in lines[0]


def test_run_strict_runs_a_program_without_divergences(capsys):
    code, out, err = _refsim(capsys, "run", MODELS / "kws.pte", "--strict", "-q")
    assert code == 0 and not err and out.startswith("output0")


def test_run_and_inspect_json_carry_the_divergences(capsys, tmp_path):
    report = tmp_path / "run.json"
    code, _, err = _refsim(
        capsys, "run", FIXTURES / "cm_conv_linear_m55.pte", "--isa", "dsp", "-q", "--json", report
    )
    assert code == 0, err
    ran = json.loads(report.read_text())["divergences"]
    code, out, err = _refsim(
        capsys, "inspect", FIXTURES / "cm_conv_linear_m55.pte", "--isa", "dsp", "--json", "-"
    )
    assert code == 0, err
    (forward,) = [m for m in json.loads(out)["methods"] if m["name"] == "forward"]
    assert forward["divergences"] == ran and len(ran) == 2
    assert set(ran[0]) == {"op", "instruction", "kind", "arguments", "reason"}
    assert Divergence(**{**ran[0], "arguments": tuple(ran[0]["arguments"])}).kind == "ignored_argument"


def test_inspect_lists_every_divergence_and_why(capsys):
    code, out, err = _refsim(capsys, "inspect", FIXTURES / "cm_binary.pte")
    assert code == 0, err
    assert "2 device divergence(s)" in out and "maximum.out" in out and "minimum.out" in out
    code, out, _ = _refsim(capsys, "inspect", MODELS / "kws.pte")
    assert "no device divergences on mve" in out

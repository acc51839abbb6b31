"""``refsim run --estimate-cycles``: the per-op table, the report's cycle fields, target resolution,
every bundled program costed on every calibrated core of its tier, and the errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from isa_models.cortex_m import calibration
from isa_models.cortex_m.cores import CORE_MODELS
from isa_models.cortex_m.program import NoEstimate
from refsim.cli import main
from refsim.ops.cost import attach, cost_hook
from refsim.ops.registry import all_ops
from refsim.runtime import Program
from refsim.runtime.estimate import EstimateError, estimate_method, exported_tier

MODELS_DIR = Path(__file__).resolve().parents[2] / "examples" / "models"
MODELS = ("kws", "vww", "ic", "ad", "kws_m4")
CALIBRATED = sorted({core for cores in calibration.available().values() for core in cores})


def _method(name: str):
    program = Program.load(MODELS_DIR / f"{name}.pte")
    return program, program.method("forward")


def test_kws_mve_prints_the_per_op_table(capsys):
    assert main(["run", str(MODELS_DIR / "kws.pte"), "--isa", "mve", "--estimate-cycles"]) == 0
    out = capsys.readouterr().out
    for text in ("CMSIS-NN variant", "cycles/MAC", "arm_convolve_1x1_s8_fast", "quantized_depthwise_conv2d",
                 "runtime dispatch", "total", "MHz", "arena", "scratch", "constants"):  # fmt: skip
        assert text in out, text


@pytest.mark.parametrize("name", MODELS)
def test_report_fields_are_filled(name, tmp_path):
    report = tmp_path / "r.json"
    assert (
        main(["run", str(MODELS_DIR / f"{name}.pte"), "--estimate-cycles", "-q", "--json", str(report)]) == 0
    )
    r = json.loads(report.read_text())
    assert r["cpu"] == ("cortex-m4" if name == "kws_m4" else "cortex-m55")
    assert r["isa"] == ("dsp" if name == "kws_m4" else "mve")
    assert r["cycles_total"] > 0 and r["clock_mhz"] > 0
    assert r["latency_ms"] == pytest.approx(r["cycles_total"] / (r["clock_mhz"] * 1e3), rel=1e-6)
    assert all(isinstance(o["cycles"], int) and o["cycles"] > 0 for o in r["ops"])
    assert sum(o["cycles"] for o in r["ops"]) < r["cycles_total"]  # plus dispatch and I/O steps
    assert r["estimate_complete"] is True


def test_exported_tier_is_read_from_the_linears():
    assert exported_tier(_method("kws")[1]) == "mve"  # kernel_sum present
    assert exported_tier(_method("kws_m4")[1]) == "dsp"


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("core", CALIBRATED)
def test_every_op_has_an_estimate_on_every_calibrated_core(name, core):
    program, method = _method(name)
    tier = CORE_MODELS[core].tier
    if exported_tier(method) == "mve" and tier != "mve":
        with pytest.raises(EstimateError, match=r"quantized_linear.*exported for MVE"):
            estimate_method(program, method, cpu=core)
        return
    est = estimate_method(program, method, cpu=core)
    assert est.complete, [r.name for r in est.rows if not r.estimated]
    assert all(r.cost.cycles > 0 for r in est.rows)


def test_mve_linear_on_a_dsp_core_is_an_error_naming_the_op(capsys):
    assert main(["run", str(MODELS_DIR / "kws.pte"), "--estimate-cycles", "--cpu", "cortex-m4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cortex_m::quantized_linear.out (instruction 11)" in err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--cpu", "cortex-m4"], "need --estimate-cycles"),
        (["--estimate-cycles", "--cpu", "cortex-m99"], "cortex-m99"),
        (["--estimate-cycles", "--system", "no-such-board"], "no-such-board"),
        (["--estimate-cycles", "--isa", "scalar", "--cpu", "cortex-m55"], "own tier"),
        (["--estimate-cycles", "--clock-mhz", "0"], "positive"),
    ],
)
def test_bad_estimate_options_are_one_line_errors(capsys, args, message):
    assert main(["run", str(MODELS_DIR / "kws_m4.pte"), *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_system_sets_core_and_clock(tmp_path):
    report = tmp_path / "r.json"
    args = ["run", str(MODELS_DIR / "kws_m4.pte"), "--estimate-cycles", "--system", "nucleo-l4r5zi", "-q"]
    assert main([*args, "--json", str(report)]) == 0
    r = json.loads(report.read_text())
    assert r["cpu"] == "cortex-m4" and r["system"] == "nucleo-l4r5zi" and r["clock_mhz"] == 120.0
    ideal = estimate_method(*_method("kws_m4"), cpu="cortex-m4")
    assert r["cycles_total"] >= ideal.cycles_total  # flash wait states only add
    assert main([*args, "--clock-mhz", "60", "--json", str(report)]) == 0
    assert json.loads(report.read_text())["clock_mhz"] == 60.0


def test_an_op_without_a_cost_shows_no_estimate(monkeypatch, capsys):
    attach()
    op = all_ops()["cortex_m::softmax.out"]
    monkeypatch.setattr(op, "cost", lambda a, tier: [NoEstimate("test: pretend softmax has no formula")])
    program, method = _method("kws_m4")
    for call in method.calls:  # the method shares the registry's OpDef
        if call is not None and call.op.name == op.name:
            monkeypatch.setattr(call.op, "cost", op.cost)
    est = estimate_method(program, method)
    row = next(r for r in est.rows if r.name == "cortex_m::softmax.out")
    assert not row.estimated and not est.complete
    assert main(["run", str(MODELS_DIR / "kws_m4.pte"), "--estimate-cycles"]) == 0
    out = capsys.readouterr().out
    assert "no estimate" in out and "lower bound" in out


def test_every_registered_op_has_a_cost_hook():
    attach()
    missing = [name for name, op in all_ops().items() if op.cost is None]
    assert not missing
    assert cost_hook(all_ops()["aten::view_copy.out"]) is not None


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "kws.png"
    assert main(["run", str(MODELS_DIR / "kws.pte"), "--estimate-cycles", "--plot", str(png), "-q"]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pte"


@pytest.mark.parametrize(
    "pte, core, libraries",
    [
        (MODELS_DIR / "kws.pte", "cortex-m55", {"cmsis-nn"}),
        (MODELS_DIR / "kws_m4.pte", "cortex-m4", {"cmsis-nn"}),
        # refsim_lut_s8 is refsim's own: priced from kernels_c's fit, that library loaded once too
        (FIXTURES / "cm_unary.pte", "cortex-m55", {"cmsis-nn", "kernels_c"}),
    ],
)
def test_an_estimate_loads_each_library_it_uses_once(monkeypatch, pte, core, libraries):
    loads = []
    real_load = calibration.load

    def counting_load(core, library=None, **kwargs):
        loaded = real_load(core, library, **kwargs)
        loads.append(loaded.library)
        return loaded

    monkeypatch.setattr(calibration, "load", counting_load)
    program = Program.load(pte)
    est = estimate_method(program, program.method("forward"), cpu=core)
    used = {s.split("/", 1)[0] for row in est.rows for s in row.cost.sources if f"/{core}:" in s}
    assert used == libraries  # the case covers what it claims
    assert sorted(loads) == sorted(libraries), loads

"""Estimates priced on the values a run saw (softmax's exponentials), and shape-only ones that say so.

A one-softmax program (tests/runtime/test_cortex_m_misc.py's builder) over rows whose range decides
how many exponentials CMSIS-NN computes: ``refsim run --estimate-cycles`` prices its own inputs,
``refsim eval --estimate-cycles`` the spread over a data set, and an estimate without values
(estimate_method without counts: inspect/compare paths) is marked shape-only.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from kernels_py import softmax
from refsim.cli import main
from refsim.ops.data_work import CountingTrace
from refsim.pte import ScalarType
from refsim.runtime import Program
from refsim.runtime.estimate import BASIS_DATA, BASIS_SHAPE, BASIS_SHAPE_ONLY, estimate_method, reprice
from tests.runtime.test_cortex_m_elementwise import ProgramBuilder

SHAPE = (4, 64)


def _program(tmp_path):
    """One softmax over rows of 64 with input scale 0.5 (diff_min -31, as ExecuTorch computes it)."""
    mult, shift, diff_min = softmax.softmax_params_executorch(0.5)
    b = ProgramBuilder()
    x = b.input(ScalarType.INT8, SHAPE)
    out = b.tensor(ScalarType.INT8, SHAPE)
    b.call("cortex_m::softmax.out", x, -1, 0, -128, mult, shift, diff_min, out=out)
    b.output(out)
    path = tmp_path / "softmax.pte"
    path.write_bytes(b.build())
    return path, diff_min


def _rows(narrow: bool, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if narrow:  # every diff within a few steps of the max: every exponential computed
        return rng.integers(-2, 3, SHAPE).astype(np.int8)
    x = rng.integers(-128, 128, SHAPE).astype(np.int8)
    x[:, 0] = 127  # a wide range: most diffs fall below diff_min
    return x


def test_shape_only_estimate_says_so_and_counts_reprice_it(tmp_path):
    path, diff_min = _program(tmp_path)
    assert diff_min > -128  # the wide rows below skip exponentials
    program = Program.load(path)
    method = program.method()
    shape_only = estimate_method(program, method, cpu="cortex-m4")
    (row,) = [r for r in shape_only.rows if r.index is not None]
    assert row.basis == "shape" and shape_only.basis == BASIS_SHAPE_ONLY
    assert "shape-only" in row.note

    cycles = {}
    for narrow in (True, False):
        trace = CountingTrace()
        method.execute([_rows(narrow)], trace=trace)
        (counts,) = trace.counts.values()
        est = estimate_method(program, method, cpu="cortex-m4", counts=trace.counts)
        (row,) = [r for r in est.rows if r.index is not None]
        assert row.basis == "data" and est.basis == BASIS_DATA and "this run" in row.note
        # the same fitted terms summed in another order: equal to float rounding
        assert reprice(shape_only, method, trace.counts) == pytest.approx(est.total.cycles, rel=1e-12)
        cycles[narrow] = est.total.cycles
        if narrow:
            assert counts["exp_elements"] == np.prod(SHAPE)
            # the bound is every exponential at full cost; the narrow rows compute every one, some of
            # a 0 input (the elements equal to the row maximum), which return early
            assert counts["exp_zero"] >= SHAPE[0]
            assert 0.9 * shape_only.cycles_total < est.cycles_total < shape_only.cycles_total
    assert cycles[False] < 0.5 * cycles[True]


def test_compare_is_shape_only_and_says_so(tmp_path):
    from refsim.comparison import summarize
    from tests.runtime.test_estimate import MODELS_DIR

    side = summarize(MODELS_DIR / "kws_m4.pte", "cortex-m4")
    assert side.estimate_basis == BASIS_SHAPE_ONLY and side.to_json()["estimate_basis"] == BASIS_SHAPE_ONLY
    assert [x["basis"] for x in side.layers if "basis" in x] == ["shape"]  # its softmax
    program = Program.load(MODELS_DIR / "ad_m4.pte")  # no softmax: the shapes decide everything
    assert estimate_method(program, program.method(), cpu="cortex-m4").basis == BASIS_SHAPE


def test_run_prices_its_own_inputs(tmp_path, capsys):
    path, _ = _program(tmp_path)
    reports = {}
    for narrow in (True, False):
        inputs = tmp_path / f"in{narrow}.npz"
        np.savez(inputs, input0=_rows(narrow))
        report = tmp_path / f"r{narrow}.json"
        args = ["run", str(path), "--estimate-cycles", "--cpu", "cortex-m4", "--inputs", str(inputs)]
        assert main([*args, "--json", str(report)]) == 0
        reports[narrow] = json.loads(report.read_text())
        assert "priced on this run's inputs" in capsys.readouterr().out
    for r in reports.values():
        assert r["estimate_basis"] == BASIS_DATA
        (row,) = [x for x in r["estimate_rows"] if x["index"] is not None]
        assert row["basis"] == "data"
    assert reports[False]["cycles_total"] < 0.5 * reports[True]["cycles_total"]
    report = tmp_path / "shape.json"
    assert main([*args, "--shape-only", "--json", str(report)]) == 0  # args: the wide rows' run
    shape = json.loads(report.read_text())
    assert (
        shape["estimate_basis"] == BASIS_SHAPE_ONLY and shape["cycles_total"] > reports[True]["cycles_total"]
    )
    assert "shape-only estimate" in capsys.readouterr().out


def test_eval_reports_the_latency_spread(tmp_path):
    path, _ = _program(tmp_path)
    data = np.stack([_rows(narrow, seed) for seed, narrow in enumerate((True, False, False, True, False))])
    inputs = tmp_path / "data.npz"
    np.savez(inputs, input0=data)
    report = tmp_path / "eval.json"
    args = ["eval", str(path), "--inputs", str(inputs), "--estimate-cycles", "--cpu", "cortex-m4", "-q"]
    assert main([*args, "--json", str(report), "--workers", "1"]) == 0
    est = json.loads(report.read_text())["estimate"]
    assert est["samples"] == 5 and est["estimate_basis"] == BASIS_DATA
    c = est["cycles"]
    assert c["min"] < 0.5 * c["max"] and c["min"] <= c["median"] <= c["max"]
    assert (
        0.9 * est["shape_only_cycles"] < c["max"] < est["shape_only_cycles"]
    )  # narrow rows: every exponential
    # the JSON cycles are rounded to whole cycles (1e-5 ms at 100 MHz), the latency from the unrounded sum
    assert est["latency_ms"]["max"] == pytest.approx(c["max"] / (est["clock_mhz"] * 1e3), abs=1e-5)

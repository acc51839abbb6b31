"""Conformance campaigns sharded into engine tasks (refsim/qemu/campaign.py): the same report as the
serial path (pass/fail, mismatch classes, failure messages, instruction counts) in process, on a
2-worker pool and on a local Ray instance; generated shards draw exactly the serial path's cases;
a harness is built once per node however many workers start together; the CLI's ``--workers`` and
``--ray`` (one line without Ray)."""

from __future__ import annotations

import multiprocessing
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from refsim.cli import main
from refsim.commands import calibrate as calibrate_cmd
from refsim.conformance import vectors as vec
from refsim.engine import Engine, PoolEngine
from refsim.qemu import campaign
from refsim.qemu import conformance as qc
from refsim.qemu.build import build_once
from tests.cli_util import assert_one_error_line, refsim

FUNCTIONS = ["arm_fully_connected_s8", "arm_depthwise_conv_s8"]
CASES = 5
SEED = 11
WRONG = (1, 7)  # cases whose expected output is corrupted: they must fail, the same way everywhere


def _summary(report: qc.Report) -> dict:
    """Everything a campaign reports but the number of QEMU starts."""
    return {
        "kernels": {
            f: (s.cases, s.passed, s.failed, s.counted, s.instructions, s.macs)
            for f, s in report.kernels.items()
        },
        "failures": [(f.case.label, f.message) for f in report.failures],
        "classes": {k: [f.case.label for f in v] for k, v in qc.mismatch_classes(report).items()},
        "counts": [r.record() for r in report.counts],
        "skipped": report.skipped,
    }


@pytest.fixture(scope="module")
def campaign_cases(toolchain: None) -> list[vec.Case]:
    cases = qc.generate_cases(FUNCTIONS, CASES, SEED)
    for i in WRONG:
        c = cases[i]
        wrong = np.array(c.output, copy=True)
        wrong.reshape(-1)[0] ^= 1
        cases[i] = vec.Case(c.function, c.case_id, c.arrays, c.params, wrong)
    return cases


@pytest.fixture(scope="module")
def serial(campaign_cases) -> tuple[qc.Target, dict]:
    spec = campaign.TargetSpec("dsp", "cortex-m4")
    target = campaign.resolve(spec)
    report = qc.run_cases(target, campaign_cases, count=True)
    assert report.failed == len(WRONG) and report.passed == len(campaign_cases) - len(WRONG)
    assert [k for _, k in qc.mismatch_classes(report)] == ["wrong values", "wrong values"]
    return target, _summary(report)


def _sharded(engine, campaign_cases, serial_target) -> qc.Report:
    spec = campaign.TargetSpec("dsp", "cortex-m4")
    tasks = campaign.case_tasks(campaign_cases, per_task=3)  # 4 tasks, a batch never spans two
    return campaign.run_campaign(engine, serial_target, spec, tasks, count=True)


def test_a_worker_with_another_build_or_golden_model_refuses(toolchain):
    spec = campaign.TargetSpec("dsp", "cortex-m4")
    target = campaign.resolve(spec)
    assert campaign.resolve(spec.pinned(target)) == target
    with pytest.raises(campaign.CampaignError, match="install the same refsim, toolchain"):
        campaign.resolve(campaign.TargetSpec("dsp", "cortex-m4", harness_key="0" * 16))
    with pytest.raises(campaign.CampaignError, match="golden model"):
        campaign.resolve(campaign.TargetSpec("dsp", "cortex-m4", golden="0.0.1+other"))


def test_generated_shards_draw_the_serial_cases():
    tasks = campaign.generated_tasks(FUNCTIONS, CASES, SEED, per_task=2)
    assert [campaign.task_cases(t) for t in tasks] == [2, 2, 1, 2, 2, 1]
    drawn = [c for t in tasks for c in campaign._cases(t.payload)]
    serial = qc.generate_cases(FUNCTIONS, CASES, SEED)
    assert [c.label for c in drawn] == [c.label for c in serial]
    for a, b in zip(drawn, serial, strict=True):
        np.testing.assert_array_equal(a.output, b.output)
        assert a.params == b.params


@pytest.mark.parametrize("workers", [1, 2])
def test_local_engines_report_what_the_serial_path_does(workers, campaign_cases, serial):
    target, expected = serial
    engine = Engine() if workers == 1 else PoolEngine(workers)
    with engine:
        report = _sharded(engine, campaign_cases, target)
    assert _summary(report) == expected
    assert report.emulator_starts >= 4  # one per batch per task


def test_ray_reports_what_the_serial_path_does(ray_instance, campaign_cases, serial):
    from refsim.engine import RayEngine

    target, expected = serial
    with RayEngine(2, address="auto") as engine:
        report = _sharded(engine, campaign_cases, target)
    assert _summary(report) == expected


CALIBRATE_CORES = ("cortex-m4", "cortex-m3")


@pytest.fixture(scope="module")
def calibration_serial(timing) -> dict[str, dict]:
    """kernels_c's elementwise-add sweep on two cores, measured one batch after another."""
    return {
        core: calibrate_cmd.calibrate_core(
            core, library="kernels_c", kernels_dir=None, only=["arm_elementwise_add_s8"], argv=[]
        )
        for core in CALIBRATE_CORES
    }


def _calibrate_on(engine) -> dict[str, dict]:
    plans = [
        calibrate_cmd.plan_core(core, library="kernels_c", kernels_dir=None, only=["arm_elementwise_add_s8"])
        for core in CALIBRATE_CORES
    ]
    assert sum(len(p.groups) for p in plans) >= 2  # a task per core's batch, both cores at once
    return {
        p.model.name: d for p, d in zip(plans, calibrate_cmd.calibrate_on(engine, plans, []), strict=True)
    }


def _same_calibration(a: dict, b: dict) -> None:
    for core in CALIBRATE_CORES:
        assert a[core]["functions"] == b[core]["functions"]  # measurements, fit and held-out error
        assert a[core]["provenance"]["cycles_source"] == b[core]["provenance"]["cycles_source"]


def test_calibration_on_a_pool_is_the_serial_one(calibration_serial):
    with PoolEngine(2) as engine:
        _same_calibration(_calibrate_on(engine), calibration_serial)


def test_calibration_on_ray_is_the_serial_one(ray_instance, calibration_serial):
    from refsim.engine import RayEngine

    with RayEngine(2, address="auto") as engine:
        _same_calibration(_calibrate_on(engine), calibration_serial)


def _slow_build(final: str, log: str) -> None:
    def make(staging: Path) -> None:
        with open(log, "a") as f:
            f.write("built\n")
        time.sleep(0.5)  # long enough that the other workers arrive while it builds
        (staging / "product").write_text("elf")

    build_once(Path(final), "product", make)


def test_workers_starting_together_build_once_per_node(tmp_path):
    final, log = tmp_path / "cache" / "cortex-m4-key", tmp_path / "builds.log"
    context = multiprocessing.get_context("spawn")
    procs = [context.Process(target=_slow_build, args=(str(final), str(log))) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    assert log.read_text() == "built\n"
    assert (final / "product").read_text() == "elf"


def _cli(capsys, *argv) -> tuple[int, str]:
    code = main(["conformance", *map(str, argv)])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_cli_workers_match_the_serial_run(toolchain, capsys):
    args = ("--isa", "dsp", "--kernel", "arm_fully_connected_s8", "--cases", "4", "--seed", str(SEED))
    code, serial_out = _cli(capsys, *args)
    assert code == 0
    code, sharded_out = _cli(capsys, *args, "--workers", "2", "--per-task", "2")
    assert code == 0
    assert "4 cases in 2 task(s) on process pool (2 workers)" in sharded_out
    assert serial_out.strip().splitlines()[-1] == sharded_out.strip().splitlines()[-1] == "4 passed, 0 failed"


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (("conformance", "--cases", "1", "--workers", "2"), "--isa or --cpu"),
        (
            ("conformance", "--isa", "dsp", "--workers", "2", "--count-cycles", "c.json"),
            "--count-cycles runs in this process",
        ),
        (("calibrate", "--refit", "--workers", "2"), "--refit runs no QEMU"),
        (("conformance", "--isa", "dsp", "--cases", "1", "--ray", "local"), "refsim[cluster]"),
        (("calibrate", "--cpu", "cortex-m4", "--ray", "local"), "refsim[cluster]"),
    ],
)
def test_cli_bad_engine_options_are_one_line(capsys, monkeypatch, argv, fragment):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    assert_one_error_line(refsim(capsys, *argv), fragment)

"""``refsim sweep`` (refsim/sweep.py) on the engine (refsim/engine.py).

Two bundled programs (the MVE and the DSP export of KWS) and a .tflite on two cores: every
row's numbers are those `refsim run --estimate-cycles` and `refsim compare` give for the same
target; a worker pool, an interrupted-then-resumed sweep, a fully cached re-run and a local Ray
instance (started and stopped here) all write the same bytes as the in-process sweep; a re-run
computes nothing; bad input is one line and exit 2; `refsim run` and a sweep without --ray import
no Ray; no estimate imports the folders the cache fingerprint leaves out.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import refsim.sweep as sweep_module
from refsim.comparison import summarize
from refsim.engine import Engine, ResultCache, Task, run_cached
from tests.cli_util import assert_one_error_line, refsim

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "examples" / "models"
KWS, KWS_M4 = MODELS / "kws.pte", MODELS / "kws_m4.pte"
KWS_TFLITE = ROOT / "tests" / "fixtures" / "tflite" / "kws_ref_model.tflite"
CPUS = "cortex-m4,cortex-m55"
BUDGET = ("--budget-ram", "28KiB", "--budget-ms", "50")


def sweep(capsys, tmp_path: Path, name: str, *extra, models=(KWS, KWS_M4), cache: str | None = None):
    """Run the sweep into ``tmp_path/name.json`` with its own cache (unless ``cache`` names one)."""
    out = tmp_path / f"{name}.json"
    cache_dir = tmp_path / (cache or f"cache-{name}")
    result = refsim(capsys, "sweep", *models, "--cpus", CPUS, *BUDGET, "--out", out, "--cache-dir", cache_dir,
                    "-q", *extra)  # fmt: skip
    assert result[0] == 0, result[2]
    return out, result[1]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """The in-process sweep (workers=1): the bytes every other way must write."""
    tmp = tmp_path_factory.mktemp("baseline")
    out = tmp / "base.json"
    from refsim.cli import main

    assert main(["sweep", str(KWS), str(KWS_M4), "--cpus", CPUS, *BUDGET, "--out", str(out),
                 "--cache-dir", str(tmp / "cache"), "--workers", "1", "-q"]) == 0  # fmt: skip
    return out.read_bytes()


def test_rows_are_the_numbers_of_run_and_compare(baseline, tmp_path):
    rows = json.loads(baseline)["rows"]
    assert [(Path(r["model"]).name, r["cpu"], r["system"]) for r in rows] == [
        ("kws.pte", "cortex-m4", "ideal-m4"),
        ("kws.pte", "cortex-m55", "ideal-m55"),
        ("kws_m4.pte", "cortex-m4", "ideal-m4"),
        ("kws_m4.pte", "cortex-m55", "ideal-m55"),
    ]
    # the MVE export cannot run on the M4: a row that says why, never a number
    assert rows[0]["error"] and "exported for MVE" in rows[0]["error"] and rows[0]["latency_ms"] is None
    for row in rows[1:]:
        side = summarize(Path(row["model"]), row["cpu"], row["system"])
        assert (row["cycles_total"], row["ram_bytes"], row["flash_bytes"], row["macs"], row["library"]) == (
            side.cycles_total, side.ram_bytes, side.flash_bytes, side.macs, side.library)  # fmt: skip
        assert row["latency_ms"] == side.latency_ms
        assert row["runtime"] == "executorch" and row["ops"] > 0 and 0 <= row["cmsis_nn_ops"] <= row["ops"]
    # and what `refsim run --estimate-cycles` reports for one of them
    report = tmp_path / "run.json"
    from refsim.cli import main

    assert (
        main(
            [
                "run",
                str(KWS_M4),
                "--estimate-cycles",
                "--shape-only",
                "--cpu",
                "cortex-m4",
                "--json",
                str(report),
                "-q",
            ]
        )
        == 0
    )
    ran = json.loads(report.read_text())
    assert (ran["cycles_total"], ran["latency_ms"], ran["clock_mhz"]) == (
        rows[2]["cycles_total"], rows[2]["latency_ms"], rows[2]["clock_mhz"])  # fmt: skip


def test_budgets_and_front(baseline):
    rows = json.loads(baseline)["rows"]
    ok = [r for r in rows if r["error"] is None]
    for r in ok:
        assert r["meets_ram"] == (r["ram_bytes"] <= 28 * 1024)
        assert r["meets_latency"] == (r["latency_ms"] <= 50)
        assert r["meets_budget"] == (r["meets_ram"] and r["meets_latency"])
    assert rows[0]["meets_budget"] is False and rows[0]["pareto"] is False
    by_model: dict[str, list[dict]] = {}
    for r in ok:
        by_model.setdefault(r["model"], []).append(r)
    for mine in by_model.values():  # the front: exactly the points no other point dominates
        for r in mine:
            dominated = any(
                o["latency_ms"] <= r["latency_ms"] and o["ram_bytes"] <= r["ram_bytes"] and o is not r
                and (o["latency_ms"], o["ram_bytes"]) != (r["latency_ms"], r["ram_bytes"]) for o in mine
            )  # fmt: skip
            assert r["pareto"] == (not dominated)
    # the DSP export: the M55 is faster at the same RAM, so the M4 is off the front
    m4, m55 = by_model[str(KWS_M4)]
    assert m55["latency_ms"] < m4["latency_ms"] and m55["ram_bytes"] == m4["ram_bytes"]
    assert (m4["pareto"], m55["pareto"]) == (False, True)


def test_pool_writes_the_same_bytes_and_csv_and_plot(baseline, capsys, tmp_path):
    out, _ = sweep(capsys, tmp_path, "pool", "--workers", "2", "--plot", tmp_path / "p.png")
    assert out.read_bytes() == baseline
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    csv_out = tmp_path / "r.csv"
    code, _, err = refsim(capsys, "sweep", KWS, KWS_M4, "--cpus", CPUS, "--out", csv_out,
                          "--cache-dir", tmp_path / "cache-pool", "-q")  # fmt: skip
    assert code == 0, err
    lines = csv_out.read_text().splitlines()
    assert lines[0].split(",")[:4] == ["model", "model_sha256", "runtime", "cpu"] and len(lines) == 5


def test_cache_hit_computes_nothing(baseline, capsys, tmp_path, monkeypatch):
    sweep(capsys, tmp_path, "first", "--workers", "1")

    def must_not_run(payload, blobs):
        raise AssertionError(f"computed again: {payload}")

    monkeypatch.setattr(sweep_module, "estimate_task", must_not_run)
    out, said = sweep(capsys, tmp_path, "again", "--workers", "1", cache="cache-first")
    assert out.read_bytes() == baseline
    assert "4 from the cache, 0 computed" in said


def test_interrupted_sweep_resumes(baseline, capsys, tmp_path, monkeypatch):
    real = sweep_module.estimate_task
    calls = []

    def interrupted(payload, blobs):
        if len(calls) == 2:
            raise KeyboardInterrupt  # Ctrl-C in the middle of the third estimate
        calls.append(payload["system"])
        return real(payload, blobs)

    monkeypatch.setattr(sweep_module, "estimate_task", interrupted)
    cache = tmp_path / "cache-cut"
    code, _, _ = refsim(
        capsys, "sweep", KWS, KWS_M4, "--cpus", CPUS, "--cache-dir", cache, "--workers", "1", "-q"
    )
    assert code == 130  # click's exit status for Ctrl-C
    assert len(list(cache.rglob("*.json"))) == 2  # each finished result was kept as it finished
    monkeypatch.setattr(sweep_module, "estimate_task", real)
    out, said = sweep(capsys, tmp_path, "resumed", "--workers", "1", cache="cache-cut")
    assert "2 from the cache, 2 computed" in said
    assert out.read_bytes() == baseline


def test_extended_sweep_computes_only_the_new_model(capsys, tmp_path):
    sweep(capsys, tmp_path, "two", "--workers", "1")
    out, said = sweep(
        capsys, tmp_path, "three", "--workers", "1", models=(KWS, KWS_M4, KWS_TFLITE), cache="cache-two"
    )
    assert "4 from the cache, 2 computed" in said
    rows = json.loads(out.read_text())["rows"]
    assert [r["runtime"] for r in rows[4:]] == ["tflm", "tflm"]  # a .tflite runs as TFLM
    side = summarize(KWS_TFLITE, "cortex-m4")
    assert (rows[4]["cycles_total"], rows[4]["ram_bytes"], rows[4]["flash_bytes"]) == (
        side.cycles_total, side.ram_bytes, side.flash_bytes)  # fmt: skip


def test_systems_and_clocks(capsys, tmp_path):
    out, _ = sweep(
        capsys,
        tmp_path,
        "sys",
        "--workers",
        "1",
        "--systems",
        "all",
        "--clock-mhz",
        "50,200",
        models=(KWS_M4,),
    )
    rows = json.loads(out.read_text())["rows"]
    from isa_models.cortex_m.systems import systems_for

    expected = [(c, s.name, f) for c in CPUS.split(",") for s in systems_for(c) for f in (50.0, 200.0)]
    assert [(r["cpu"], r["system"], r["clock_mhz"]) for r in rows] == expected
    for slow, fast in zip(
        rows[::2], rows[1::2], strict=True
    ):  # cycles fixed by the preset, latency by the clock
        assert slow["cycles_total"] == fast["cycles_total"]
        assert slow["latency_ms"] == pytest.approx(4 * fast["latency_ms"], rel=1e-5)  # both rounded to 1 ns


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        ((ROOT / "nope.pte", "--cpus", "cortex-m4"), "nope.pte: no such file"),
        ((KWS, "--cpus", "cortex-m5"), "cortex-m5"),
        ((KWS, "--cpus", "cortex-m4", "--budget-ram", "256 potatoes"), "--budget-ram"),
        ((KWS, "--cpus", "cortex-m4", "--budget-ram", "-3KiB"), "--budget-ram"),
        ((KWS, "--cpus", "cortex-m4", "--budget-ms", "fast"), "--budget-ms"),
        ((KWS, "--cpus", "cortex-m4", "--clock-mhz", "0"), "--clock-mhz"),
        ((KWS, "--cpus", "cortex-m4", "--systems", "corstone-300"), "corstone-300 has a cortex-m55"),
        ((KWS, "--cpus", "cortex-m4", "--systems", "no-board"), "no-board"),
        ((KWS,), "--cpus"),
        ((KWS, "--cpus", "cortex-m4", "--out", "r.xlsx"), ".json, .csv or .parquet"),
        ((KWS, "--cpus", "cortex-m4", "--workers", "0"), "--workers"),
        ((MODELS / "models.json", "--cpus", "cortex-m4"), "neither an ExecuTorch .pte"),
    ],
)
def test_bad_input_is_one_line(capsys, tmp_path, argv, fragment):
    assert_one_error_line(refsim(capsys, "sweep", *argv, "--cache-dir", tmp_path / "c"), fragment)


def test_parquet_needs_pyarrow(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as if it were not installed
    result = refsim(capsys, "sweep", KWS, "--cpus", "cortex-m55", "--out", tmp_path / "r.parquet")
    assert_one_error_line(result, "pyarrow")


def test_ray_missing_is_one_line_naming_the_extra(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    result = refsim(
        capsys, "sweep", KWS, "--cpus", "cortex-m55", "--ray", "local", "--cache-dir", tmp_path / "c"
    )
    assert_one_error_line(result, "refsim[cluster]")


def test_run_and_a_local_sweep_import_no_ray(tmp_path):
    code = (
        "import sys\nfrom refsim.cli import main\n"
        f"assert main(['run', {str(KWS)!r}, '--estimate-cycles', '-q']) == 0\n"
        "assert 'ray' not in sys.modules, 'refsim run imported ray'\n"
        f"assert main(['sweep', {str(KWS)!r}, '--cpus', 'cortex-m55', '--workers', '1', '-q',"
        f" '--cache-dir', {str(tmp_path)!r}]) == 0\n"
        "assert 'ray' not in sys.modules, 'refsim sweep without --ray imported ray'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr


def test_a_worker_with_another_refsim_refuses(capsys):
    ms, blobs = sweep_module.read_models([KWS_M4])
    (task,) = sweep_module.make_tasks(ms, [("cortex-m4", "ideal-m4")], [None])
    with pytest.raises(sweep_module.SweepError, match="install the same refsim on every node"):
        sweep_module.estimate_task({**task.payload, "estimator": "0.0.1+other"}, blobs)


def test_estimates_import_nothing_the_fingerprint_leaves_out():
    code = (
        "import sys\nfrom pathlib import Path\nimport refsim.sweep as s\n"
        f"ms, blobs = s.read_models([Path({str(KWS_M4)!r}), Path({str(KWS_TFLITE)!r})])\n"
        "for t in s.make_tasks(ms, [('cortex-m4', 'nucleo-l4r5zi')], [None]):\n"
        "    assert s.estimate_task(t.payload, blobs)['error'] is None\n"
        "left_out = sorted(m for m in sys.modules for f in s._NOT_ESTIMATOR if m.startswith(f'refsim.{f}'))\n"
        "assert not left_out, left_out\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr


def _twice(payload, blobs):
    return {"n": payload * 2, "blob": len(blobs["b"])}


def test_engine_keeps_each_result_and_computes_equal_keys_once(tmp_path):
    cache = ResultCache(tmp_path)
    tasks = [Task(key=f"k{i % 3}", payload=i % 3, needs=("b",)) for i in range(6)]
    first = list(run_cached(Engine(), _twice, tasks, {"b": b"xyz"}, cache))
    assert sorted((d.task.payload, d.result["n"], d.cached) for d in first) == [
        (p, 2 * p, False) for p in (0, 0, 1, 1, 2, 2)
    ]
    assert len(list(tmp_path.rglob("*.json"))) == 3
    again = list(run_cached(Engine(), _twice, tasks, {"b": b"xyz"}, cache))
    assert all(d.cached for d in again) and [d.result for d in again] == [d.result for d in first[:0]] + [
        {"n": 2 * t.payload, "blob": 3} for t in tasks
    ]


def test_ray_gives_the_same_bytes(ray_instance, baseline, capsys, tmp_path):
    out, said = sweep(capsys, tmp_path, "ray", "--ray", "auto")  # this process's Ray session
    assert "computed on ray" in said and "4 computed" in said
    assert out.read_bytes() == baseline
    assert ray_instance.is_initialized()  # a session the engine did not start is left running


def test_ray_worker_errors_and_bad_addresses(ray_instance, capsys, tmp_path):
    from refsim.engine import RayEngine

    ms, blobs = sweep_module.read_models([KWS_M4])
    (task,) = sweep_module.make_tasks(ms, [("cortex-m4", "ideal-m4")], [None])
    other = Task(task.key, {**task.payload, "estimator": "0.0.1+other"}, task.needs)
    with RayEngine(2, address="auto") as engine, pytest.raises(sweep_module.SweepError, match="same refsim"):
        list(engine.map(sweep_module.estimate_task, [other], blobs))  # raised on a Ray worker, here as itself
    for address, fragment in (("127.0.0.1:1", "nothing answers"), ("nonsense", "HOST:PORT")):
        result = refsim(
            capsys, "sweep", KWS, "--cpus", "cortex-m55", "--ray", address, "--cache-dir", tmp_path
        )
        assert_one_error_line(result, fragment)

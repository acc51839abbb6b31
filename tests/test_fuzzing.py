"""Fuzz campaigns on the engine (refsim/fuzzing.py, benchmarks/fuzz_pte.py, benchmarks/tflite_fuzz.py):
case ``i`` from its own seed, so a case replays alone and a campaign's shards are independent;
the merged report is the same in this process, on a 2-worker pool and on a local Ray instance;
the guarded worker turns a hang and a crash into outcomes, its warm-up outside a case's clock;
``--ray`` without Ray is one line naming the extra."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from refsim.engine import Engine, PoolEngine, make_engine
from refsim.fuzzing import WorkerSpec, case_rng, index_tasks, run_indexed, shard_task

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
try:
    import fuzz_pte
    import tflite_fuzz
finally:
    sys.path.remove(str(ROOT / "benchmarks"))

PTE = fuzz_pte.Settings(seed=3, corpus="tests", max_seconds=20.0)
PTE_FILES = 24
TFLITE_CASES = 4  # per seed model: 24 cases


def test_each_case_has_its_own_stream():
    draws = {(s, i): case_rng(s, i).getrandbits(64) for s in (0, 1) for i in range(50)}
    assert len(set(draws.values())) == len(draws)
    assert case_rng(0, 7).getrandbits(64) == draws[0, 7]  # drawn again, alone: the same
    spec = WorkerSpec(("x",), ".", 1.0)
    tasks = index_tasks("c", range(10), spec, per_task=4)
    assert [list(t.payload[1]) for t in tasks] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert len({t.key for t in tasks}) == 3
    with pytest.raises(ValueError, match="per_task"):
        index_tasks("c", range(3), spec, per_task=0)


def test_the_guarded_worker_reports_hangs_and_crashes(tmp_path):
    """A worker that warms up for longer than a case's limit still answers its first case (the
    clock starts when it is ready); a hang and a crash are outcomes, and the cases after each get a
    fresh worker, so a shard's answers are one per case, in order."""
    script = tmp_path / "worker.py"
    script.write_text(
        textwrap.dedent(
            """
            import os, sys, time
            from refsim.fuzzing import serve
            time.sleep(1.5)                     # warm-up, longer than hang_seconds
            def handle(request):
                i = request["index"]
                print("noise on stdout")        # serve() keeps stdout for answers
                if i == 1:
                    time.sleep(60)
                if i == 3:
                    sys.stderr.write("dying on purpose\\n"); sys.stderr.flush(); os._exit(3)
                return {"outcome": "ok", "pid": os.getpid()}
            serve(handle)
            """
        )
    )
    spec = WorkerSpec((str(script),), str(ROOT), hang_seconds=1.0)
    results = shard_task((spec, range(5)), {})
    assert [r["index"] for r in results] == [0, 1, 2, 3, 4]
    assert [r["outcome"] for r in results] == ["ok", "hang", "ok", "crash", "ok"]
    assert results[1]["message"] == "no answer in 1 s"
    assert "exited with 3: dying on purpose" in results[3]["message"]
    assert len({results[0]["pid"], results[2]["pid"], results[4]["pid"]}) == 3  # fresh after each


def test_a_worker_that_cannot_start_stops_the_campaign(tmp_path):
    from refsim.fuzzing import FuzzError

    script = tmp_path / "broken.py"
    script.write_text("raise SystemExit('no seed models here')\n")
    with pytest.raises(FuzzError, match="did not start: no seed models here"):
        shard_task((WorkerSpec((str(script),), str(ROOT), 1.0), range(2)), {})


def pte(engine, indices=range(PTE_FILES), per_task=8) -> dict:
    return fuzz_pte.campaign(engine, PTE, indices, per_task=per_task)


def tflite(engine, per_task=8) -> dict:
    return tflite_fuzz.campaign(engine, TFLITE_CASES, 5, 30.0, 256, per_task=per_task)


@pytest.fixture(scope="module")
def serial() -> dict[str, dict]:
    with Engine() as engine:
        return {"pte": pte(engine), "tflite": tflite(engine)}


def test_serial_campaigns(serial):
    p, t = serial["pte"], serial["tflite"]
    print(f"\npte: {p['by_stage']} ({p['run']}); tflite: {t['total']} ({t['run']})")
    assert p["files"] == PTE_FILES and p["run"]["tasks"] == 3 and not p["failures"]
    assert sum(t["total"].values()) == 6 * TFLITE_CASES and t["run"]["tasks"] == 3
    assert not t["failures"]
    assert len(p["by_stage"]) > 1 and t["total"]["loaded"] and t["total"]["ModelError"]


def test_a_pool_of_two_reports_what_one_process_does(serial):
    with PoolEngine(2) as engine:
        p, t = pte(engine, per_task=12), tflite(engine, per_task=12)  # other shards, other workers
    assert p["run"]["tasks"] == 2 and t["run"]["tasks"] == 2
    assert fuzz_pte.same_outcomes(p) == fuzz_pte.same_outcomes(serial["pte"])
    assert tflite_fuzz.same_outcomes(t) == tflite_fuzz.same_outcomes(serial["tflite"])


def test_a_case_replays_alone():
    """File 11 of the .pte campaign, run alone, ends as it does among its shard's neighbours."""
    spec = fuzz_pte.worker_spec(PTE)
    with Engine() as engine:
        together = run_indexed(engine, index_tasks("p", range(8, 14), spec, per_task=6))
        alone = run_indexed(engine, index_tasks("p", [11], spec))
    assert {**together[3], "seconds": 0} == {**alone[0], "seconds": 0}


def test_ray_reports_what_one_process_does(ray_instance, serial):  # tests/conftest.py: local Ray, 2 CPUs
    with make_engine(2, ray="auto") as engine:  # this process's Ray session
        assert engine.name.startswith("ray")
        p, t = pte(engine, per_task=12), tflite(engine, per_task=12)
    assert fuzz_pte.same_outcomes(p) == fuzz_pte.same_outcomes(serial["pte"])
    assert tflite_fuzz.same_outcomes(t) == tflite_fuzz.same_outcomes(serial["tflite"])


@pytest.mark.parametrize(
    "main, args",
    [(fuzz_pte.main, ["--files", "1", "--corpus", "tests"]), (tflite_fuzz.main, ["--cases", "1"])],
    ids=["fuzz_pte", "tflite_fuzz"],
)
def test_ray_without_ray_is_one_line(main, args, monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    assert main([*args, "--ray", "local", "--json", str(tmp_path / "r.json"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "refsim[cluster]" in err, err

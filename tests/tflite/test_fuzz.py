"""benchmarks/tflite_fuzz.py at CI size: 50 mutated files per seed model (300 cases), each
loaded in the campaign's capped worker subprocess; no crash, hang or traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "tflite_fuzz.py"


def test_ci_sized_campaign(tmp_path):
    report_path = tmp_path / "fuzz.json"
    cmd = [sys.executable, str(SCRIPT), "--cases", "50", "--seed", "7", "--json", str(report_path), "--quiet"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    report = json.loads(report_path.read_text())
    print(f"tflite fuzz: {report['total']} in {report['elapsed_seconds']} s")
    assert sum(report["total"].values()) == 50 * len(report["seeds"]) == 300
    assert {k: report["total"][k] for k in ("traceback", "crash", "hang")} == {
        "traceback": 0,
        "crash": 0,
        "hang": 0,
    }, json.dumps(report["failures"][:3], indent=1)
    assert done.returncode == 0, done.stderr[-2000:]
    # Both outcomes are exercised: some mutations leave a loadable model, most are refused.
    assert report["total"]["loaded"] > 0 and report["total"]["ModelError"] > 0


def test_a_dying_worker_is_a_crash_and_the_campaign_goes_on():
    """The harness itself (refsim.fuzzing.CaseWorker): a case the worker cannot even start (an
    unknown seed model) kills it; that is reported as a crash, and the next case gets a fresh
    worker."""
    from refsim.fuzzing import CaseWorker

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import tflite_fuzz
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    spec = tflite_fuzz.worker_spec(seed=0, cases=1, seconds=60, memory_mb=0)
    with CaseWorker(spec) as w:
        result = w.run({"seed": "no such model", "mutations": []})
        assert result["outcome"] == "crash" and "KeyError" in result["message"], result
        assert not w.alive
    with CaseWorker(spec) as w:
        assert w.run({"seed": "conv", "mutations": []})["outcome"] == "loaded"
        assert w.run({"seed": "conv", "mutations": [["truncate", 10, 0]]})["outcome"] == "ModelError"
        assert w.run({"index": 2})["outcome"] in (
            "loaded",
            "ModelError",
        )  # one case per model: the third model's

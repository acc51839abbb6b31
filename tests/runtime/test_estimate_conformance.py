"""``refsim conformance --vectors DIR --cpu X --estimate [--json FILE]``: the model per case, beside
instruction-timed cycles when QEMU runs."""

from __future__ import annotations

import json

import pytest

from refsim.cli import main
from refsim.qemu import missing_toolchain


@pytest.fixture(scope="module")
def vectors(tmp_path_factory):
    directory = tmp_path_factory.mktemp("vectors")
    args = ["conformance", "--export-vectors", str(directory), "--cases", "2", "--seed", "3"]
    for kernel in (
        "arm_fully_connected_s8",
        "arm_convolve_wrapper_s8",
        "arm_elementwise_add_s8",
        "arm_softmax_s8",
    ):
        args += ["--kernel", kernel]
    assert main(args) == 0
    return directory


def test_estimate_records_per_case(vectors, tmp_path, capsys):
    out = tmp_path / "est.json"
    assert (
        main(
            ["conformance", "--vectors", str(vectors), "--cpu", "cortex-m4", "--estimate", "--json", str(out)]
        )
        == 0
    )
    doc = json.loads(out.read_text())
    assert doc["format"] == "refsim-estimates" and doc["core"] == "cortex-m4"
    records = doc["records"]
    assert len(records) == 8
    for r in records:
        assert r["case"].startswith(r["function"] + "/")
        # softmax is priced on the exponentials its case's own input asks for (refsim.ops.data_work)
        assert (r["data"] is not None) == (r["function"] == "arm_softmax_s8")
        if r["data"] is not None:
            assert 1 <= r["data"]["exp_elements"] <= r["macs"]
        assert isinstance(r["instructions"], int) and isinstance(r["cycles"], int) and r["cycles"] > 0
    if missing_toolchain() is None:
        assert all(isinstance(r["measured_cycles"], int) and r["measured_cycles"] > 0 for r in records)
        assert all(
            r["cycles_error"] == pytest.approx(r["cycles"] / r["measured_cycles"] - 1, abs=1e-3)
            for r in records
        )
    assert "cases estimated on cortex-m4" in capsys.readouterr().out


def test_estimate_needs_vectors_and_cpu(vectors, capsys):
    assert main(["conformance", "--vectors", str(vectors), "--estimate"]) == 2
    assert "--estimate needs --vectors DIR and --cpu" in capsys.readouterr().err

"""``refsim conformance --vectors DIR --cpu X --estimate [--json FILE]``: the model per case, beside
instruction-timed cycles when QEMU runs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from refsim.cli import main
from refsim.conformance import vectors as vec
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
    cases = {c.label: c for c in vec.iter_directory(vectors)}
    for r in records:
        assert r["case"].startswith(r["function"] + "/")
        # softmax is priced on the exponentials its case's own input asks for (refsim.ops.data_work):
        # counted here independently, from the vector's arrays, as CMSIS-NN's diff_min test reads
        assert (r["data"] is not None) == (r["function"] == "arm_softmax_s8")
        if r["data"] is not None:
            p = cases[r["case"]].params
            rows = cases[r["case"]].arrays["input"].reshape(-1)[: p["num_rows"] * p["row_size"]]
            rows = rows.reshape(p["num_rows"], p["row_size"]).astype(np.int64)
            assert r["data"]["exp_elements"] == int(
                (rows - rows.max(axis=1, keepdims=True) >= p["diff_min"]).sum()
            )
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

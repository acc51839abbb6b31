"""refsim's Ethos-U estimate against the real Vela on a bundled program (needs torch,
executorch[ethos-u] and ethos-u-vela: skipped without them).

The AD autoencoder (ten fully connected layers, the fastest of the four to export) goes
through ExecuTorch's Ethos-U flow on U55-128 (benchmarks/ethos_u.py's export: EthosUQuantizer,
EthosUPartitioner, Vela with --verbose-performance); refsim estimates the cortex_m program of
the same model (examples/models/ad.pte). Both must see the same MACs on the NPU, and refsim's
NPU cycles must be within the issue's ±15% of Vela's total. The full table over four models x
four configurations is benchmarks/ethos_u.py's (docs/cost-model.md, section Ethos-U).
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("executorch.backends.arm.ethosu")
pytest.importorskip("ethosu.vela")

from benchmarks import ethos_u as bench


def test_ad_on_u55_128_against_vela(tmp_path):
    bench.export(tmp_path, models=("ad",), configs=("ethos-u55-128",))
    vela = bench.read_vela(tmp_path / "ad_ethos-u55-128")
    assert (vela["system"], vela["memory_mode"]) == ("Ethos_U55_High_End_Embedded", "Shared_Sram")
    ours = bench.refsim_estimate("ad", "ethos-u55-128", vela["system"], vela["memory_mode"])
    npu = [r for r in ours["rows"] if r["placement"] == "NPU"]
    assert len(npu) == 10 and all(r["placement"] != "CPU" for r in ours["rows"])
    assert sum(r["macs"] for r in npu) == sum(r["macs"] for r in vela["layers"]) == 264_192
    error = (ours["npu_cycles"] - vela["cycles"]) / vela["cycles"]
    print(
        f"AD on U55-128: Vela {vela['cycles']:,.0f} cycles, refsim {ours['npu_cycles']:,} ({100 * error:+.1f}%)"
    )
    assert abs(error) <= bench.TARGET_PCT / 100

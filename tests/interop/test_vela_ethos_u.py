"""refsim's Ethos-U estimate against the real Vela on a bundled program (needs torch,
executorch[ethos-u] and ethos-u-vela: skipped without them).

The AD autoencoder (ten fully connected layers, the fastest of the four to export) goes
through ExecuTorch's Ethos-U flow on U55-128 and U85-256 (benchmarks/ethos_u.py's export: EthosUQuantizer,
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


@pytest.mark.parametrize(
    ("config", "system", "mode"),
    [
        ("ethos-u55-128", "Ethos_U55_High_End_Embedded", "Shared_Sram"),
        ("ethos-u85-256", "Ethos_U85_SYS_DRAM_Mid", "Sram_Only"),  # Vela's regor model
    ],
)
def test_ad_against_vela(tmp_path, config, system, mode):
    bench.export(tmp_path, models=("ad",), configs=(config,))
    vela = bench.read_vela(tmp_path / f"ad_{config}")
    assert (vela["system"], vela["memory_mode"]) == (system, mode)
    ours = bench.refsim_estimate("ad", config, vela["system"], vela["memory_mode"])
    npu = [r for r in ours["rows"] if r["placement"] == "NPU"]
    assert len(npu) == 10 and all(r["placement"] != "CPU" for r in ours["rows"])
    assert sum(r["macs"] for r in npu) == sum(r["macs"] for r in vela["layers"]) == 264_192
    error = (ours["npu_cycles"] - vela["cycles"]) / vela["cycles"]
    print(
        f"AD on {config}: Vela {vela['cycles']:,.0f} cycles, refsim {ours['npu_cycles']:,} ({100 * error:+.1f}%)"
    )
    assert abs(error) <= bench.TARGET_PCT / 100

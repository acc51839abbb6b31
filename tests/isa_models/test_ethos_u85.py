"""Ethos-U85 model (isa_models.ethos_u.u85*): the regor tables' invariants, and the block choices
and cycles of the single-layer sweep against what Vela 5.1.0 itself reported for them
(benchmarks/results/ethos_u85_sweep.json, made by benchmarks/ethos_u85_sweep.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.ethos_u85_sweep import compare, refsim_layers
from isa_models.ethos_u import u85
from isa_models.ethos_u.arch import ACCELERATORS, Block, get_accelerator
from isa_models.ethos_u.layers import NpuContext, NpuLayer, layer_cycles
from isa_models.ethos_u.systems import resolve
from isa_models.ethos_u.u85_arch import U85_CONFIGS, UBLOCK_OPS
from isa_models.ethos_u.u85_blocks import choose_block, hw_op, sparse_weights

ROOT = Path(__file__).resolve().parents[2]
SWEEP = json.loads((ROOT / "benchmarks" / "results" / "ethos_u85_sweep.json").read_text())
TRAVERSAL = {"depth_first": "DepthFirst", "part_kernel": "PartKernel", "depthwise": "Depthwise"}
# cases further from Vela than the rest (at most 35%), and why:
LOOSE = {
    "conv1x1_add_32_14x14": "a chained convolution counts whole OFM blocks in height (4, not 3.5) and more "
    "per core",
}
# others: 5% on the one-core U85-128/256, 15% on the 2-4-core U85-512/1024/2048 (the per-core
# split of the output unit and block transfers is not restated beyond the write-back bound)


def ctx(name: str, system: str | None = None, mode: str | None = None) -> NpuContext:
    acc = get_accelerator(name)
    return NpuContext(acc, *resolve(acc.family, system, mode))


def test_every_u85_configuration_has_a_table_whose_micro_blocks_fill_its_macs():
    u85_accelerators = [a for a in ACCELERATORS.values() if a.family == "u85"]
    assert sorted(a.macs for a in u85_accelerators) == sorted(U85_CONFIGS)
    for macs, cfg in U85_CONFIGS.items():
        assert len(cfg.ofm_ublocks) == len(cfg.ifm_au) == len(UBLOCK_OPS[macs])
        for u in cfg.ofm_ublocks:  # each lane an 8-deep int8 dot product
            assert u.w * u.h * u.d * 8 == macs
        for op in ("conv", "depthwise", "pool", "elementwise"):  # every op has a micro-block
            assert any(op in ops for ops in UBLOCK_OPS[macs])


@pytest.mark.parametrize("key", list(SWEEP["cases"]))
def test_sweep_block_choice_is_vela_s(key):
    c = SWEEP["cases"][key]
    layers = refsim_layers(c["kind"], tuple(c["shape"]), c["params"], c["encoded_weight_bytes"])
    vela = [v for v in c["vela_debug"] if v["ofm_block_hwc"] != [0, 0, 0]]  # chained ops have none
    run = [x for i, x in enumerate(layers) if not (i and u85.chained(layers[i - 1], x))]
    assert len(run) == len(vela)
    macs = get_accelerator(c["config"]).macs
    for layer, v in zip(run, vela, strict=True):
        b = choose_block(macs, layer)
        assert [b.ublock.h, b.ublock.w, b.ublock.d] == v["ofm_ublock_hwc"]
        assert [b.ofm.h, b.ofm.w, b.ofm.d] == v["ofm_block_hwc"]
        if hw_op(layer) != "elementwise":
            assert TRAVERSAL[b.traversal] == v["traversal"]


@pytest.mark.parametrize("row", compare(SWEEP), ids=lambda r: r["case"])
def test_sweep_cycles_near_vela(row):
    case, config = row["case"].split("@")[:2]
    limit = 35.0 if case in LOOSE else 5.0 if get_accelerator(config).cores == 1 else 15.0
    assert abs(row["error_pct"]) <= limit, (row, LOOSE.get(case))


@pytest.mark.parametrize("config", ["ethos-u85-128", "ethos-u85-256", "ethos-u85-512", "ethos-u85-1024",
                                    "ethos-u85-2048"])  # fmt: skip
def test_sweep_total_per_configuration(config):
    rows = [r for r in compare(SWEEP) if r["case"].endswith("@" + config)]
    assert len(rows) >= 30
    rel = 0.01 if get_accelerator(config).cores == 1 else 0.02
    assert sum(r["refsim"] for r in rows) == pytest.approx(sum(r["vela"] for r in rows), rel=rel)


def test_sweep_memory_bound_cases_with_weights_in_dram():
    rows = [r for r in compare(SWEEP) if r["case"].endswith("@Shared_Sram")]
    assert len(rows) >= 5 and all(abs(r["error_pct"]) <= 2.0 for r in rows)


def test_sweep_provenance():
    p = SWEEP["provenance"]
    assert p["vela"] == "5.1.0" and p["executorch"] == "1.5.1" and "EthosUPartitioner" in p["flow"]


def test_one_channel_convolution_has_sparse_weights_and_half_the_mac_cycles():
    one = NpuLayer(
        "conv", Block(12, 31, 1), Block(6, 16, 24), (3, 7), (2, 2), weights_bytes=600, bias_channels=24
    )
    three = NpuLayer(
        "conv", Block(12, 31, 3), Block(6, 16, 24), (3, 7), (2, 2), weights_bytes=1600, bias_channels=24
    )
    assert sparse_weights(one) and not sparse_weights(three)
    c = ctx("ethos-u85-256", None, "Sram_Only")
    parts_one = u85.compute_parts(c, one, choose_block(256, one))
    parts_three = u85.compute_parts(c, three, choose_block(256, three))
    # the same blocks and kernel steps; 2:4 sparse weights halve the MAC engine's cycles
    assert choose_block(256, one).ofm == choose_block(256, three).ofm
    assert 2 * parts_one.dpu_block == pytest.approx(parts_three.dpu_block, abs=2)


def test_an_add_right_after_a_convolution_of_its_shape_is_chained():
    conv = NpuLayer("conv", Block(14, 14, 32), Block(14, 14, 32), weights_bytes=1024, bias_channels=32)
    add = NpuLayer("elementwise", Block(1, 196, 32), Block(1, 196, 32), ifm2=Block(1, 196, 32), op="add")
    assert u85.chained(conv, add)
    assert not u85.chained(None, add)
    small = NpuLayer("conv", Block(7, 7, 32), Block(7, 7, 32), weights_bytes=1024, bias_channels=32)
    assert not u85.chained(small, add)


def test_bundled_ic_adds_cost_nothing_on_u85_but_not_on_u55():
    from isa_models.ethos_u.program import estimate_ops, ops_from_method
    from refsim.ops.cost import cost_hook
    from refsim.runtime.program import Program

    ops = ops_from_method(Program.load(ROOT / "examples" / "models" / "ic.pte").method(), cost_hook)
    for accelerator, free in (("ethos-u85-256", True), ("ethos-u55-128", False)):
        est = estimate_ops(ops, accelerator)
        adds = [r for r in est.rows if r.placement == "NPU" and "Add" in r.variant]
        assert len(adds) == 3
        assert all((r.cost.cycles == 0) == free for r in adds)


@pytest.mark.parametrize("macs", sorted(U85_CONFIGS))
def test_more_macs_never_slower(macs):
    conv = NpuLayer(
        "conv", Block(32, 32, 64), Block(32, 32, 64), (3, 3), weights_bytes=36864, bias_channels=64
    )
    cycles = layer_cycles(ctx(f"ethos-u85-{macs}"), conv)
    assert cycles.compute >= conv.macs / macs
    if macs > 128:
        assert cycles.compute <= layer_cycles(ctx(f"ethos-u85-{macs // 2}"), conv).compute

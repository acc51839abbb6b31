"""Ethos-U model: tables against vela.ini's own figures, Vela's supported-operator rules, the
layer model's invariants, the weight-stream estimate and the whole-program face."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from isa_models.errors import UnknownNameError
from isa_models.ethos_u.arch import ACCELERATORS, Block, get_accelerator
from isa_models.ethos_u.layers import NpuContext, NpuLayer, choose_block, layer_cycles
from isa_models.ethos_u.supported import Call, npu_rejections
from isa_models.ethos_u.systems import EXECUTORCH_DEFAULTS, VELA_DEFAULTS, resolve
from isa_models.ethos_u.weights import encoded_weight_bytes

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def ctx(name: str, system: str | None = None, mode: str | None = None) -> NpuContext:
    acc = get_accelerator(name)
    return NpuContext(acc, *resolve(acc.family, system, mode))


# --- tables ----------------------------------------------------------------------------------


def test_every_vela_configuration_with_its_mac_count():
    assert list(ACCELERATORS) == [
        "ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256", "ethos-u65-256", "ethos-u65-512",
        "ethos-u85-128", "ethos-u85-256", "ethos-u85-512", "ethos-u85-1024", "ethos-u85-2048",
    ]  # fmt: skip
    for name, acc in ACCELERATORS.items():
        assert acc.macs == int(name.rsplit("-", 1)[1])


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(UnknownNameError, match="ethos-u55-128"):
        get_accelerator("ethos-u55-100")
    with pytest.raises(UnknownNameError, match="Ethos_U55_Deep_Embedded"):
        resolve("u55", "Ethos_U55_Tiny", None)
    with pytest.raises(UnknownNameError, match="Shared_Sram"):
        resolve("u55", None, "Sram_Everywhere")


@pytest.mark.parametrize(
    ("accelerator", "system", "sram_gbs", "other_gbs"),
    [  # the bandwidths vela.ini's comments state for each System_Config
        ("ethos-u55-128", "Ethos_U55_Deep_Embedded", 1.6, 0.1),
        ("ethos-u55-128", "Ethos_U55_High_End_Embedded", 4.0, 0.5),
        ("ethos-u65-256", "Ethos_U65_Mid_End", 8.0, 3.75),
        ("ethos-u65-256", "Ethos_U65_High_End", 16.0, 3.75),
        ("ethos-u65-256", "Ethos_U65_Client_Server", 16.0, 12.0),
        ("ethos-u85-256", "Ethos_U85_SYS_Flash_Low", 6.4, 0.2),
        ("ethos-u85-256", "Ethos_U85_SYS_DRAM_Mid", 32.0, 12.0),
        ("ethos-u85-256", "Ethos_U85_SYS_DRAM_High", 64.0, 24.0),
    ],
)
def test_bandwidths_match_vela_ini(accelerator, system, sram_gbs, other_gbs):
    c = ctx(accelerator, system, "Shared_Sram")
    gbs = [c.bytes_per_cycle(m) * c.system.clock_hz / 1e9 for m in (c.system.axi0, c.system.axi1)]
    assert gbs == pytest.approx([sram_gbs, other_gbs], rel=1e-9)


def test_defaults_per_family():
    assert VELA_DEFAULTS["u55"] == ("Ethos_U55_High_End_Embedded", "Shared_Sram")
    assert VELA_DEFAULTS["u65"] == ("Ethos_U65_Client_Server", "Dedicated_Sram_384KB")
    assert EXECUTORCH_DEFAULTS["u85"] == ("Ethos_U85_SYS_DRAM_Mid", "Sram_Only")
    system, mode = resolve("u85", None, None)
    assert (system.name, mode.name, mode.arena_cache_size) == (
        "Ethos_U85_SYS_DRAM_Mid",
        "Dedicated_Sram_384KB",
        393216,
    )
    system, mode = resolve("u55", "Ethos_U55_Deep_Embedded:Sram_Only", None)
    assert (system.name, mode.name) == ("Ethos_U55_Deep_Embedded", "Sram_Only")


# --- supported operators ---------------------------------------------------------------------


def conv_call(
    function="arm_convolve_wrapper_s8", n=1, c_in=8, c_out=16, k=3, stride=1, ch_mult=1, family="u55"
):
    p = {"input_dims.n": n, "input_dims.h": 16, "input_dims.w": 16, "input_dims.c": c_in,
         "filter_dims.n": c_out, "filter_dims.h": k, "filter_dims.w": k, "filter_dims.c": c_in,
         "output_dims.n": n, "output_dims.h": 16 // stride, "output_dims.w": 16 // stride, "output_dims.c": c_out,
         "stride.h": stride, "stride.w": stride, "padding.h": k // 2, "padding.w": k // 2,
         "dilation.h": 1, "dilation.w": 1, "ch_mult": ch_mult}  # fmt: skip
    return Call(function, p, family)


def test_rules_accept_an_ordinary_convolution():
    assert npu_rejections(conv_call()) == []
    assert npu_rejections(conv_call("arm_depthwise_conv_wrapper_s8", c_in=1, c_out=8, ch_mult=8)) == []


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (conv_call(n=2), "IFM Tensor batch size must be 1 (batch size 2)"),
        (conv_call("arm_depthwise_conv_wrapper_s8", stride=4),
         "Stride values for both width and height must be between 1 and 3 (stride 4x4)"),
        (conv_call("arm_depthwise_conv_wrapper_s8", c_in=4, c_out=8, ch_mult=2),
         "For depth multipliers > 1, IFM channels must be 1 and OFM channels must be equal to the depth multiplier"),
        (conv_call("arm_transpose_conv_wrapper_s8", stride=3), "Stride values WxH must be 1x1 or 2x2 (stride 3x3)"),
        (Call("arm_transpose_s8", {"input_dims.c": 4}, "u55"), "Ethos-U85 only"),
        (Call("fp32 work", {}, "u55"), "no Ethos-U operator for fp32 work"),
    ],
)  # fmt: skip
def test_rules_reject_with_vela_message(call, message):
    assert any(message in m for m in npu_rejections(call)), npu_rejections(call)


def test_avgpool_kernel_rules_depend_on_padding():
    p = {"input_dims.n": 1, "input_dims.h": 25, "input_dims.w": 5, "input_dims.c": 64, "filter_dims.h": 25,
         "filter_dims.w": 5, "output_dims.h": 1, "output_dims.w": 1, "output_dims.c": 64, "stride.h": 1,
         "stride.w": 1, "padding.h": 0, "padding.w": 0}  # fmt: skip
    assert npu_rejections(Call("arm_avgpool_s8", p, "u55")) == []  # VALID: height <= 256
    same = {**p, "padding.h": 12, "padding.w": 2}
    assert "Kernel filter values" in npu_rejections(Call("arm_avgpool_s8", same, "u55"))[0]


def test_weights_limit_uses_the_values():
    heavy = np.full((2, 3, 3, 65536 // 9 * 16), 127, np.int8)  # one channel's |w| sum above 127 * 65536
    call = Call("arm_convolve_wrapper_s8", conv_call().params, "u55", heavy)
    assert any("sum of the weights" in m for m in npu_rejections(call))
    light = Call("arm_convolve_wrapper_s8", conv_call().params, "u55", np.ones((16, 3, 3, 8), np.int8))
    assert npu_rejections(light) == []


def test_the_executorch_pool_stride_rule_binds_executorch_programs_only():
    # KWS's global average pool (25x5 kernel, stride 25x5): ExecuTorch's Arm partitioner keeps it
    # on the CPU; Vela 5.2 itself takes it from a .tflite (it splits a stride over 3)
    p = {"input_dims.n": 1, "input_dims.h": 25, "input_dims.w": 5, "input_dims.c": 64, "filter_dims.h": 25,
         "filter_dims.w": 5, "output_dims.h": 1, "output_dims.w": 1, "output_dims.c": 64, "stride.h": 25,
         "stride.w": 5, "padding.h": 0, "padding.w": 0}  # fmt: skip
    (msg,) = npu_rejections(Call("arm_avgpool_s8", p, "u55"))
    assert msg.startswith("Pooling strides must be between 1 and 3")
    assert npu_rejections(Call("arm_avgpool_s8", p, "u55", runtime="tflm")) == []


# --- layer model -----------------------------------------------------------------------------

CONV = NpuLayer("conv", Block(32, 32, 64), Block(32, 32, 64), (3, 3), weights_bytes=36864, bias_channels=64)
DW = NpuLayer("depthwise", Block(48, 48, 32), Block(48, 48, 32), (3, 3), weights_bytes=288, bias_channels=32)
FC = NpuLayer("vector_product", Block(1, 1, 640), Block(1, 1, 128), weights_bytes=81920, bias_channels=128)
ADD = NpuLayer("elementwise", Block(1, 256, 64), Block(1, 256, 64), ifm2=Block(1, 256, 64), op="add")


@pytest.mark.parametrize("name", list(ACCELERATORS))
@pytest.mark.parametrize("layer", [CONV, DW, FC], ids=["conv", "dw", "fc"])
def test_never_faster_than_the_mac_engine(name, layer):
    lc = layer_cycles(ctx(name), layer)
    assert lc.compute >= layer.macs / get_accelerator(name).macs
    assert lc.total >= lc.compute


def test_block_fits_the_shared_buffer_and_grid():
    for name in ("ethos-u55-32", "ethos-u55-128", "ethos-u65-512"):
        acc = get_accelerator(name)
        cfg = choose_block(acc, CONV)
        u = acc.ofm_ublock
        assert cfg.ofm.w % u.w == 0 and cfg.ofm.h % u.h == 0 and cfg.ofm.d % u.d == 0
        assert cfg.ofm.w <= 64 and cfg.ofm.h <= 32 and cfg.ofm.d <= 128


def test_more_macs_never_slower_on_a_large_convolution():
    cycles = [layer_cycles(ctx(n), CONV).compute for n in ("ethos-u55-32", "ethos-u55-64", "ethos-u55-128")]
    assert cycles[0] > cycles[1] > cycles[2]


def test_weights_in_slow_flash_make_a_fully_connected_layer_memory_bound():
    deep = layer_cycles(ctx("ethos-u55-128", "Ethos_U55_Deep_Embedded", "Shared_Sram"), FC)
    assert deep.bound == "memory:off_chip_flash"
    # 0.1 GB/s at 200 MHz = 0.5 bytes per cycle: the encoded stream + 10 bytes per channel
    assert deep.memory["off_chip_flash"] == pytest.approx((81920 + 1280) / 0.5)
    sram_only = layer_cycles(ctx("ethos-u55-128", "Ethos_U55_Deep_Embedded", "Sram_Only"), FC)
    assert "off_chip_flash" not in sram_only.memory and sram_only.total < deep.total


def test_elementwise_cycles_scale_with_elements():
    c = ctx("ethos-u55-128")
    double = NpuLayer("elementwise", Block(1, 512, 64), Block(1, 512, 64), ifm2=Block(1, 512, 64), op="add")
    one, two = layer_cycles(c, ADD).compute, layer_cycles(c, double).compute
    assert two == pytest.approx(2 * one, rel=0.01)
    # advanced add: 1.5 output cycles per element on U55-128 (Vela's output table)
    assert one >= 1.5 * ADD.ofm.elements


def test_pooling_steps_cost_ifm_bits_over_two():
    # regor EstimateMacCyclesPerBlock: a pooling step is max(4, taps) x micro-blocks x ifm bits / 2
    # (x4 for int8; Vela 5.2 prices KWS's 25x5 global pool at 5,400 cycles on U55-128, the
    # legacy count without the factor ~1,400)
    from isa_models.ethos_u.layers import _dpu_block_cycles

    pool = NpuLayer("avg_pool", Block(5, 25, 64), Block(1, 1, 64), (5, 25), (5, 25), activation="none")
    acc = get_accelerator("ethos-u55-128")
    cfg = choose_block(acc, pool)
    ublocks = -(-min(64, cfg.ofm.d) // acc.ofm_ublock.d)  # 1x1 OFM: one micro-block in x and y
    taps = [5 * 8, 5 * 8, 5 * 8, 5 * 1]  # sub-kernels of at most 8x8 taps over the 5x25 kernel
    assert _dpu_block_cycles(acc, pool, cfg) == sum(max(4, t) for t in taps) * ublocks * 4


def test_scales_are_fetched_from_the_staging_sram_when_weights_are_buffered():
    # U65 Dedicated_Sram: weights live in DRAM and are DMA'd into the SRAM cache first, so the
    # per-block scale/bias fetch waits on the SRAM's latency (regor: weightStagingMemory), not
    # the DRAM's (500 cycles: 10 x 128 x 500 / 256 = 2,500 cycles a block, on top of the 128x128
    # FC's MAC work of 2,048 cycles: 4,548 as priced before; Vela 5.2: 2,674 on AD's layers)
    from isa_models.ethos_u.layers import compute_cycles

    fc = NpuLayer(
        "vector_product", Block(1, 1, 128), Block(1, 1, 128), weights_bytes=16384, bias_channels=128
    )
    c = ctx("ethos-u65-256", "Ethos_U65_Client_Server", "Dedicated_Sram_384KB")
    assert c.constants.read_latency * 10 * 128 / 256 > 2048
    cycles = compute_cycles(c, fc, choose_block(c.accelerator, fc))
    dram_bound = 10 * 128 * c.constants.read_latency / 256 + 2048
    assert 2048 <= cycles < 0.7 * dram_bound


def test_feature_maps_between_npu_ops_are_stored_in_16_deep_bricks():
    # regor: an NHCWB16 OFM rounds its depth up to 16 (8 channels write 16); a delegate's own
    # output is NHWC and writes what it holds
    from isa_models.ethos_u.layers import _traffic

    c = ctx("ethos-u55-128")
    dw = NpuLayer("depthwise", Block(48, 48, 8), Block(48, 48, 8), (3, 3), weights_bytes=80, bias_channels=8)
    inner = _traffic(c, dw, choose_block(c.accelerator, dw))["ofm"][1]
    last = _traffic(c, replace(dw, ofm_io=True), choose_block(c.accelerator, dw))["ofm"][1]
    assert inner == 48 * 48 * 16  # a 16-byte brick per position; bursts of the brick rows
    assert last >= 48 * 48 * 8 and last != inner


# --- weight stream ---------------------------------------------------------------------------


def test_weight_stream_estimate():
    rng = np.random.default_rng(0)
    assert encoded_weight_bytes(None, 1000) == 1008 + 16  # unknown: 16-aligned, uncompressed, + header
    zeros = encoded_weight_bytes(np.zeros(4096, np.int8), 4096)
    assert zeros <= 4096 // 8 + 64  # one bit per zero plus chunk headers
    uniform = encoded_weight_bytes(rng.integers(-127, 128, 4096).astype(np.int8), 4096)
    assert 4096 <= uniform <= 4096 * 1.15  # incompressible: a little over one byte each
    small = encoded_weight_bytes(rng.integers(-3, 4, 4096).astype(np.int8), 4096)
    assert small < 4096 * 0.5


def test_pruned_weights_are_coded_as_zero_runs():
    # Vela's mlw encoder takes zeros out of the value stream when they come in runs (VWW's later
    # 1x1 layers: 98% zeros, 768-2,656 encoded bytes in Vela 5.2 for 16,384 weights): a pruned
    # stream costs about one run code per non-zero value, far under a bit per weight
    rng = np.random.default_rng(1)
    w = np.zeros(16384, np.int8)
    w[rng.choice(w.size, 300, replace=False)] = rng.integers(1, 60, 300) * rng.choice([-1, 1], 300)
    pruned = encoded_weight_bytes(w, w.size)
    assert pruned < w.size // 8  # under one bit per weight: impossible without zero runs
    assert pruned > 300  # still a byte or more per non-zero value and its run


def test_a_few_distinct_values_use_the_palette():
    # up to 32 values covering half the stream are coded as palette indices by frequency
    rng = np.random.default_rng(2)
    levels = np.array([-97, -41, 13, 77, 120], np.int8)
    clustered = encoded_weight_bytes(rng.choice(levels, 4096), 4096)
    assert clustered < 4096 * 3 // 8  # ~2-3 bits an index against 8+ for the raw values


# --- whole program and face ------------------------------------------------------------------


def program_estimate(model: str, accelerator: str, **kw):
    from isa_models.ethos_u.program import estimate_ops, ops_from_method
    from refsim.ops.cost import cost_hook
    from refsim.runtime import Program

    method = Program.load(ROOT / "examples" / "models" / f"{model}.pte").method()
    return estimate_ops(ops_from_method(method, cost_hook), accelerator, **kw)


def test_kws_runs_on_the_npu_in_one_delegate_on_u85_and_two_on_u55():
    est = program_estimate("kws", "ethos-u85-256")
    placements = {r.placement for r in est.rows if r.index is not None}
    assert placements == {"NPU"}
    (handover,) = [r for r in est.rows if r.placement == "host"]
    assert handover.name == "hand-over (1 delegate call)"
    assert est.total_cycles == round(est.npu_cycles + est.cpu_cycles)
    assert sum(r.cost.macs for r in est.rows) == 2_656_768  # convolutions + linear
    # ExecuTorch's partitioner leaves the 25x5-stride average pool to the CPU on U55/U65, as
    # Vela's two KWS delegates there show
    est = program_estimate("kws", "ethos-u55-128")
    (cpu,) = [r for r in est.rows if r.placement == "CPU"]
    assert "avg_pool" in cpu.name and "Pooling strides must be between 1 and 3" in cpu.note
    (handover,) = [r for r in est.rows if r.placement == "host" and r.index is None]
    assert handover.name == "hand-over (2 delegate calls)"


def test_batch_two_goes_to_the_host_with_the_rule():
    from isa_models.cortex_m.program import KernelWork
    from isa_models.ethos_u.program import OpInput, estimate_ops

    works = (KernelWork("arm_convolve_wrapper_s8", conv_call(n=2).params, weights_bytes=1216),)
    est = estimate_ops([OpInput(0, "cortex_m::quantized_conv2d.out", works)], "ethos-u55-128")
    (row,) = [r for r in est.rows if r.index == 0]
    assert row.placement == "CPU" and "batch size must be 1" in row.note
    assert row.cost.cycles > 0 and row.cost.estimated


def test_cli_face(capsys):
    from refsim.cli import main

    kws = str(ROOT / "examples" / "models" / "kws.pte")
    deep = ["run", kws, "--estimate-cycles", "--cpu", "ethos-u55-128", "--system", "Ethos_U55_Deep_Embedded"]
    assert main(deep) == 0
    out = capsys.readouterr().out
    assert "NPU: Conv2D" in out and "Ethos_U55_Deep_Embedded" in out and "200 MHz" in out
    assert main(["run", kws, "--estimate-cycles", "--cpu", "ethos-u55-128", "--system", "Nope"]) == 2
    assert "Ethos_U55_High_End_Embedded" in capsys.readouterr().err
    assert main(["run", kws, "--estimate-cycles", "--cpu", "ethos-u85-256", "--clock-mhz", "100"]) == 2
    assert "--clock-mhz" in capsys.readouterr().err

"""Ethos-U85 layer cycles, restating Vela 5.1's C++ core (regor) performance model for U85.

Vela compiles Ethos-U85 with regor, whose U85 model differs from the U55/U65 one in
isa_models.ethos_u.layers: other MAC-engine micro-blocks (several per configuration, chosen per layer),
separate IFM and accumulator RAMs instead of the banked SHRAM, output/activation rates per
configuration, per-channel read bandwidth limits and no per-layer fill latency. For one layer::

    compute = max(dpu_block, out_block) · n_blocks + min(dpu_block, out_block) + block_io  (MAC ops)
              max(rate, (block_io / block_elements + rate) / 4) · elements         (elementwise)
    access[m] = max(Σ bytes in m / bandwidth(m), max over channels Σ bytes / channel_bw(m, ch))
    layer   = max(compute, access[sram], access[dram], access[flash])

- micro-block and blocks (isa_models.ethos_u.u85_blocks): among the configuration's micro-blocks
  valid for the op, the one wasting fewest OFM elements; convolution searches OFM blocks on the
  micro-block grid whose double-buffered IFM block and 32-bit accumulators fit the IFM and
  accumulator RAMs, least (IFM + weight fetches) per OFM element; depthwise and pooling fit an
  area of the accumulator RAM by the OFM's aspect ratio; elementwise tiles the output buffer.
  Activations, rescales and copies run as 1x1 pooling no-ops (regor ``UseAvgPoolNop``).
- ``n_blocks`` = Π over w, h, d of (OFM rounded up to the micro-block) / OFM block, fractional.
- ``block_io``: one IFM block in and one OFM block out, latencies included (regor
  ``EstimateMinimumMemoryCycles``).
- ``dpu_block``: per sub-kernel (<= 8x8 taps) ``max(write_back, per-step) · steps · depth
  micro-blocks`` (write-back = 4 · micro-block depth cycles; depth-first convolution steps one tap
  over ``IFM block depth / 8 · xy micro-blocks`` cycles, part-kernel-first and depthwise 4 taps
  per step, pooling ``max(4, taps) · micro-blocks · 4``), + 2 cycles per step when a block is one
  micro-block; convolution x ⌈IFM depth / IFM block depth⌉; halved with 2:4 sparse weights.
- ``out_block``: OFM block elements x max(output rate, activation rate), at least the block's
  bias/scale fetch (10 bytes per channel x constant-memory latency / 256); both terms at least a
  quarter of (block_io + out_block + dpu_block).
- bytes: IFM block area x IFM depth per OFM block (per sub-kernel), OFM once, encoded weights and
  scales once per OFM block column; bursts as regor counts them (NHCWB16 between NPU ops, NHWC
  for a delegate's inputs/outputs); ``channel_bw = min(bandwidth, burst · min(read buffers /
  burst words, 0.8 · outstanding · ports) / latency · 0.8)``.
- a standalone LUT op first copies its 256-byte table into the LUT RAM (1 byte per cycle).
- chaining: an elementwise op with two feature-map inputs right after an NPU op of the same OFM
  shape runs in its chaining buffer (regor ``EthosU85OpGroup::Chain``): Vela reports 0 cycles.

Source: regor's ``architecture/ethosu85/ethos_u85.cpp`` (accelerator table, ``FindBlockConfig``,
``AreaFit``, ``FindDepthwiseConfig``, ``FindElementwiseConfig``, ``CalcIfmAUSize``) and
``ethos_u85_performance.cpp`` (``EstimateConvCycles``, ``EstimateElementwiseCycles``,
``EstimateMinimumMemoryCycles``, ``MeasureElementAccess``, ``ChannelBW``,
``MeasureAccessCycles``), ``compiler/network_performance.cpp`` (``EstimateFullOpPerformance``),
read in the public mirror hapv3/neural-compiler (ethosu/regor, Arm's Apache-2.0 code, 2021-2025)
— the facts are Arm's, restated here. Vela 5.1.0's compiled regor differs from that mirror in
places the single-layer sweep (benchmarks/ethos_u85_sweep.py, its Vela debug database in
benchmarks/results/ethos_u85_sweep.json) shows, and this module follows Vela: ``n_blocks`` over
the OFM rounded to micro-blocks while the output unit counts the real elements, ``block_io``
added once per MAC op and left out of the command bound when one block covers the OFM, the
write-back bound of a kernel step per core, the chaining/output buffer sizes (u85_arch).
No constant is fitted; the MLPerf Tiny models are only compared with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from isa_models.ethos_u.arch import Block
from isa_models.ethos_u.u85_arch import (
    SCALE_BYTES_PER_CHANNEL,
    SUB_KERNEL_MAX,
    U85_CONFIGS,
    U85Config,
    ceil_div,
    round_up,
)
from isa_models.ethos_u.u85_blocks import U85Block, choose_block, hw_op, sparse_weights

LUT_BYTES = 256  # an int8 lookup table
LUT_RAM_BYTES_PER_CYCLE = 1.0  # regor ``ArchEthosU85`` lutram parameters

# --- memory ----------------------------------------------------------------------------------


def burst_bytes(m, nhwc: bool, read: bool, block: Block, shape: Block, cores: int, bits: int = 8) -> int:
    """Bytes per burst (regor ``EstimateMemoryTransfer``)."""
    if nhwc:
        stride = shape.d * bits // 8
        if read:
            burst = block.w * block.d * bits if stride == block.d else block.d * bits
        elif block.d <= 16 and stride == block.d:
            burst = block.w * block.d * bits
        else:
            burst = min(64 * 8, 16 * bits * cores, block.d * bits)
    else:  # NHCWB16
        z_stride = shape.w * bits * 16 // 8
        if z_stride == block.d:
            burst = block.w * block.d * bits
        else:
            burst = 16 * bits * block.w * (1 if read else cores)
    return max(1, min(m.burst_length, burst // 8))


def transfer(m, nhwc, read, block, shape, cores, nbytes: float) -> float:
    return nbytes * m.burst_length / burst_bytes(m, nhwc, read, block, shape, cores)


def channel_bw(ctx, m, channel: str) -> float:
    """Bytes per cycle one read/write channel gets from memory ``m`` (regor ``ChannelBW``)."""
    bw = ctx.bytes_per_cycle(m)
    words = max(m.burst_length // 16, 1)
    if channel == "write":
        outstanding, latency, limit = m.max_writes, m.write_latency, math.inf
    else:
        outstanding, latency = m.max_reads, m.read_latency
        limit = getattr(U85_CONFIGS[ctx.accelerator.macs].channels, channel) / words
    util = min(limit, outstanding * m.ports_used * 0.8)
    if latency <= 0:
        return bw
    return min(bw, m.burst_length * util / latency * 0.8)


def _block_transfer_cycles(ctx, layer, blk: U85Block) -> float:
    """One IFM block in and one OFM block out, latencies included (regor
    ``EstimateMinimumMemoryCycles``)."""
    cores = ctx.accelerator.cores
    cycles_ifm = 0.0
    for shape in [layer.ifm] + ([layer.ifm2] if layer.ifm2 is not None else []):
        mi = ctx.feature_map(layer.ifm_io)
        nbytes = (
            min(shape.w, blk.ifm.w) * min(shape.h, blk.ifm.h) * min(shape.d, blk.ifm.d) * layer.ifm_bits // 8
        )
        tx = transfer(mi, layer.ifm_io, True, blk.ifm, shape, cores, nbytes)
        cycles_ifm = max(cycles_ifm, mi.read_latency + int(tx / ctx.bytes_per_cycle(mi)))
    mo = ctx.feature_map(layer.ofm_io)
    o = layer.ofm
    nbytes = min(o.w, blk.ofm.w) * min(o.h, blk.ofm.h) * min(o.d, blk.ofm.d) * layer.ofm_bits // 8
    tx = transfer(mo, layer.ofm_io, False, blk.ofm, o, cores, nbytes)
    return cycles_ifm + mo.write_latency + int(tx / ctx.bytes_per_cycle(mo))


def access_cycles(ctx, layer, blk: U85Block) -> tuple[dict[str, float], dict[str, float]]:
    """Access cycles and bytes per memory kind (regor ``MeasureElementAccess``,
    ``ElementTransferToBytes``, ``MeasureAccessCycles``)."""
    op = hw_op(layer)
    cores = ctx.accelerator.cores
    mi, mo = ctx.feature_map(layer.ifm_io), ctx.feature_map(layer.ofm_io)
    r16 = (lambda n: n) if layer.ifm_io else (lambda n: round_up(n, 16))
    channels: dict[tuple[str, str], float] = {}  # (memory kind, channel) -> cycles
    totals: dict[str, float] = {}
    mems = {}

    def add(m, channel: str, nbytes: float) -> None:
        mems[m.kind] = m
        channels[(m.kind, channel)] = channels.get((m.kind, channel), 0.0) + int(
            nbytes / channel_bw(ctx, m, channel)
        )
        totals[m.kind] = totals.get(m.kind, 0.0) + nbytes

    o = layer.ofm
    ofm_elements = o.w * o.h * (o.d if layer.ofm_io else round_up(o.d, 16))
    add(mo, "write", transfer(mo, layer.ofm_io, False, blk.ofm, o, cores, ofm_elements))
    if op == "elementwise":
        n = o.w * o.h * r16(o.d)
        reads = n * (2 if layer.ifm2 is not None and layer.ifm2.elements > 1 else 1)
        add(mi, "ifm_stream", transfer(mi, layer.ifm_io, True, blk.ifm, layer.ifm, cores, reads))
    elif op != "dma":
        ib = Block(min(layer.ifm.w, blk.ifm.w), min(layer.ifm.h, blk.ifm.h), min(layer.ifm.d, blk.ifm.d))
        ob = Block(min(o.w, blk.ofm.w), min(o.h, blk.ofm.h), min(o.d, blk.ofm.d))
        blocks = (
            ceil_div(o.w, ob.w),
            ceil_div(o.h, ob.h),
            1 if op in ("depthwise", "pool", "reduce_minmax") else ceil_div(o.d, ob.d),
        )
        sub = (
            1
            if layer.kind == "vector_product"
            else (ceil_div(layer.kernel[0], SUB_KERNEL_MAX[0]) * ceil_div(layer.kernel[1], SUB_KERNEL_MAX[1]))
        )
        fetch = ib.w * ib.h * r16(layer.ifm.d) * sub * blocks[0] * blocks[1] * blocks[2]
        add(mi, "ifm", transfer(mi, layer.ifm_io, True, blk.ifm, layer.ifm, cores, fetch))
        if op not in ("pool", "reduce_sum") and (layer.weights_bytes or layer.bias_channels):
            refetch = blocks[0] * blocks[1]
            const = ctx.constants
            add(const, "weight", refetch * layer.weights_bytes)
            add(const, "scale", refetch * SCALE_BYTES_PER_CHANNEL * layer.bias_channels)
    else:
        add(mi, "mem2mem", float(layer.copy_bytes))
        add(mo, "write", float(layer.copy_bytes))
    cycles: dict[str, float] = {}
    for kind, m in mems.items():
        worst = max(v for (k, _), v in channels.items() if k == kind)
        cycles[kind] = max(int(totals[kind] / ctx.bytes_per_cycle(m)), worst)
    return cycles, totals  # fmt: skip


# --- compute ---------------------------------------------------------------------------------


def _rate(cfg: U85Config, layer) -> float:
    out = cfg.output_rate_mul32 if (layer.op == "mul" and layer.ofm_bits == 32) else cfg.output_rate
    # a fused ReLU-like clamp has its own rate; no activation or a LUT the first one
    act = (
        cfg.activation_rate_clamp
        if layer.activation == "clamp" and layer.op != "lut"
        else cfg.activation_rate_lut
    )
    return max(out, act)


def _dpu_block(cfg: U85Config, layer, blk: U85Block, ob: Block, ib: Block) -> int:
    op = hw_op(layer)
    u = blk.ublock
    ub_w, ub_h = u.w, u.h
    if u.h == 2 and op == "conv" and layer.ofm.h == 1 and layer.ofm.w % 2 == 0 and layer.kernel[1] == 1:
        ub_w, ub_h = 4, 1  # a one-high even-width OFM runs 4x1 on a 2x2 micro-block
        ob = Block(ob.w, 1, ob.d)
    bytes_in = layer.ifm_bits // 8
    n_xy = ceil_div(ob.w, ub_w) * ceil_div(ob.h, ub_h)
    n_z = ceil_div(ob.d, u.d)
    writeback = 32 * u.d // 8 // cfg.cores  # each core writes back its share of the micro-block
    halve = 2 if sparse_weights(layer) else 1  # 2:4 sparse weights skip half the MACs
    kw, kh = (1, 1) if layer.kind == "vector_product" else layer.kernel
    sub_max = (1, 1) if layer.kind == "vector_product" else SUB_KERNEL_MAX
    total = 0
    for x in range(0, kw, sub_max[0]):
        for y in range(0, kh, sub_max[1]):
            taps = min(kh - y, sub_max[1]) * min(kw - x, sub_max[0])
            if op in ("pool", "reduce_minmax"):
                steps = 1
                c = max(4, taps) * n_xy * n_z * (layer.ifm_bits // 2)
            elif op == "depthwise":
                steps = ceil_div(taps, 4)
                c = max(writeback, 4 * n_xy * bytes_in) * steps * n_z
            elif blk.traversal != "part_kernel":
                steps = taps
                c = max(writeback, ib.d // 8 * n_xy) * steps * n_z * bytes_in // halve
            else:
                steps = ceil_div(taps, 4)
                c = max(writeback, 4 * n_xy) * steps * n_z * ceil_div(ib.d, 8) // halve
            delay = 0
            if n_xy == 1:
                if n_z == 1:
                    delay = 2 * steps
                elif steps > 1:
                    delay = 2 * (steps - 1) * n_z
            if op == "conv" and blk.traversal == "part_kernel":
                delay *= ceil_div(ib.d, 8)
            total += c + delay
    if op in ("conv", "reduce_sum"):
        total *= ceil_div(layer.ifm.d, ib.d)
    return total


@dataclass(frozen=True)
class ComputeParts:
    """The terms of a MAC op's compute cycles, per OFM block (see the module docstring)."""

    dpu_block: int
    out_block: int
    min_memory: int  # one IFM block in + one OFM block out, latencies included
    n_blocks: float

    @property
    def command(self) -> int:
        # Vela 5.1.0's command bound leaves the block transfer out when one block covers the OFM
        # (its debug database on every one-block sweep case)
        memory = self.min_memory if self.n_blocks > 1 else 0
        return (memory + self.out_block + self.dpu_block) // 4

    @property
    def total(self) -> int:
        dpu, out = max(self.dpu_block, self.command), max(self.out_block, self.command)
        return int(max(dpu, out) * self.n_blocks) + min(dpu, out) + self.min_memory


def compute_parts(ctx, layer, blk: U85Block) -> ComputeParts:
    """regor ``EstimateConvCycles``'s terms for a MAC op. The OFM is taken as the engine covers
    it, rounded up to whole micro-blocks (as Vela 5.1.0 counts blocks: the sweep's strided,
    odd-depth and depthwise cases)."""
    cfg = U85_CONFIGS[ctx.accelerator.macs]
    u = blk.ublock
    o = Block(round_up(layer.ofm.w, u.w), round_up(layer.ofm.h, u.h), round_up(layer.ofm.d, u.d))
    ob = Block(min(o.w, blk.ofm.w), min(o.h, blk.ofm.h), min(o.d, blk.ofm.d))
    ib = Block(min(layer.ifm.w, blk.ifm.w), min(layer.ifm.h, blk.ifm.h), min(layer.ifm.d, blk.ifm.d))
    dpu = _dpu_block(cfg, layer, blk, ob, ib)
    n_blocks = max(o.w / ob.w, 1.0) * max(o.h / ob.h, 1.0) * max(o.d / ob.d, 1.0)
    # the output unit writes the OFM's real elements; blocks are counted over the rounded OFM
    real = Block(min(layer.ofm.w, blk.ofm.w), min(layer.ofm.h, blk.ofm.h), min(layer.ofm.d, blk.ofm.d))
    out = int(_rate(cfg, layer) * real.elements)
    if layer.bias_channels:
        out = max(out, 10 * real.d * ctx.constants.read_latency // 256)
    return ComputeParts(dpu, out, _block_transfer_cycles(ctx, layer, blk), n_blocks)


def compute_cycles(ctx, layer, blk: U85Block) -> float:
    """The MAC engine and output unit's cycles (regor ``EstimateConvCycles`` /
    ``EstimateElementwiseCycles``)."""
    op = hw_op(layer)
    if op == "dma":
        return 0.0
    if op == "elementwise":
        rate = _rate(U85_CONFIGS[ctx.accelerator.macs], layer)
        per = max(rate, (_block_transfer_cycles(ctx, layer, blk) / blk.ofm.elements + rate) / 4)
        o = layer.ofm
        return float(int(per * o.w * o.h * (o.d if layer.ofm_io else round_up(o.d, 16))))
    return float(compute_parts(ctx, layer, blk).total)


def layer_cycles(ctx, layer):
    """The layer's compute, per-memory access cycles and total: ``max(compute, access)``, no
    per-layer fill (regor ``EstimateFullOpPerformance``)."""
    from isa_models.ethos_u.layers import LayerCycles

    blk = choose_block(ctx.accelerator.macs, layer)
    cycles, moved = access_cycles(ctx, layer, blk)
    compute = compute_cycles(ctx, layer, blk)
    if layer.op == "lut":  # the table is copied into the LUT RAM first (regor's lutram: 1 byte/cycle)
        compute += LUT_BYTES / LUT_RAM_BYTES_PER_CYCLE
    return LayerCycles(compute=compute, memory=cycles, bytes=moved, fill=0.0)


def chained(prev, layer) -> bool:
    """An elementwise op fed by the previous NPU op's OFM (same shape) plus one other feature
    map runs in the U85's chaining buffer, inside the previous op (regor ``EthosU85OpGroup``)."""
    return (
        prev is not None
        and layer.kind == "elementwise"
        and layer.ifm2 is not None
        and layer.ifm2.elements == layer.ifm.elements
        and hw_op(prev) != "dma"
        and prev.ofm.elements == layer.ofm.elements
    )


__all__ = [
    "U85_CONFIGS",
    "U85Block",
    "U85Config",
    "access_cycles",
    "chained",
    "choose_block",
    "compute_cycles",
    "hw_op",
    "layer_cycles",
]

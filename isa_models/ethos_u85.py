"""Ethos-U85 layer cycles, restating Vela 5.1's C++ core (regor) performance model for U85.

Vela compiles Ethos-U85 with regor, whose U85 model differs from the U55/U65 one in
isa_models.ethos_u: other MAC-engine micro-blocks (several per configuration, chosen per layer),
separate IFM and accumulator RAMs instead of the banked SHRAM, output/activation rates per
configuration, per-channel read bandwidth limits and no per-layer fill latency. For one layer::

    compute = max(dpu_block, out_block) · n_blocks + min(dpu_block, out_block)   (MAC ops)
              max(rate, (block_latency / block_elements + rate) / 4) · elements (elementwise)
    access[m] = max(Σ bytes in m / bandwidth(m), max over channels Σ bytes / channel_bw(m, ch))
    layer   = max(compute, access[sram], access[dram], access[flash])

- micro-block: among the configuration's ``ofm_ublocks`` valid for the op (:data:`UBLOCK_OPS`),
  the one wasting fewest OFM elements when the OFM is rounded up to it (first on a tie).
- block: convolution searches OFM blocks on the micro-block grid (depth step 16) whose double-
  buffered IFM block and 32-bit accumulators fit ``ifm_ram``/``acc_ram``, least (IFM + weight
  fetches) per OFM element; depthwise and pooling fit an area of the accumulator RAM by the OFM's
  aspect ratio, then shrink to pre-buffer one more IFM row; elementwise tiles the output buffer.
- ``dpu_block``: per sub-kernel (<= 8x8 taps) ``max(write_back, per-step) · steps · depth
  micro-blocks`` (write-back = 4 · micro-block depth cycles; depth-first convolution steps one tap
  over ``IFM block depth / 8 · xy micro-blocks`` cycles, part-kernel-first and depthwise 4 taps
  per step, pooling ``max(4, taps) · micro-blocks · 4``), + 2 cycles per step when a block is one
  micro-block; convolution x ⌈IFM depth / IFM block depth⌉.
- ``out_block``: OFM block elements x max(output rate, activation rate), at least the block's
  bias/scale fetch (10 bytes per channel x constant-memory latency / 256); both terms at least a
  quarter of (one block's IFM + OFM transfer incl. latencies + out_block + dpu_block).
- bytes: IFM block area x IFM depth per OFM block (per sub-kernel), OFM once, encoded weights and
  scales once per OFM block column; bursts as regor counts them (NHCWB16 between NPU ops, NHWC
  for a delegate's inputs/outputs); ``channel_bw = min(bandwidth, burst · min(read buffers /
  burst words, 0.8 · outstanding · ports) / latency · 0.8)``.
- chaining: an elementwise op with two feature-map inputs right after an NPU op of the same OFM
  shape runs in its chaining buffer (regor ``EthosU85OpGroup::Chain``): Vela reports 0 cycles.

Source: regor's ``architecture/ethosu85/ethos_u85.cpp`` (accelerator table, ``FindBlockConfig``,
``AreaFit``, ``FindDepthwiseConfig``, ``FindElementwiseConfig``, ``CalcIfmAUSize``) and
``ethos_u85_performance.cpp`` (``EstimateConvCycles``, ``EstimateElementwiseCycles``,
``EstimateMinimumMemoryCycles``, ``MeasureElementAccess``, ``ChannelBW``,
``MeasureAccessCycles``), ``compiler/network_performance.cpp`` (``EstimateFullOpPerformance``),
read in the public mirror hapv3/neural-compiler (ethosu/regor, Arm's Apache-2.0 code, 2021-2025)
— the facts are Arm's, restated here. Checked against Vela 5.1.0 on single-layer networks
(benchmarks/ethos_u85_sweep.py, benchmarks/results/ethos_u85_sweep.json).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from isa_models.ethos_u_arch import Block

ACC_DEPTH_GRANULE = 16
OFM_SPLIT_DEPTH = 16
SUB_KERNEL_MAX = (8, 8)
CB_SLOTS = 6
BRICK_ELEMENTS = 16
SCALE_BYTES_PER_CHANNEL = 10
OFM_BLOCK_MAX = Block(128, 128, 1024)  # w, h, d


@dataclass(frozen=True)
class ChannelBuffers:
    """Read buffers per AXI read channel (regor ``channelRBs``)."""

    mem2mem: int
    ifm_stream: int
    weight: int
    fast_weight: int
    ifm: int
    scale: int


@dataclass(frozen=True)
class U85Config:
    """One Ethos-U85 configuration (regor ``s_EthosU85Configs`` / ``s_EthosU85PerfInfo``).

    ``ofm_ublocks`` and ``ifm_au`` use (w, h, d); ``ifm_au[i]`` are the IFM allocation units of
    micro-block ``i`` for IFM block depths of <=128, <=256 and more bits."""

    macs: int
    cores: int
    ofm_ublocks: tuple[Block, ...]
    ifm_au: tuple[tuple[Block, Block, Block], ...]
    ifm_ram: int
    acc_ram: int
    cb_ram: int
    ob_ram: int
    channels: ChannelBuffers
    output_rate: float  # cycles per OFM element (8/16-bit IFM)
    output_rate_mul32: float  # multiply with a 32-bit result
    activation_rate_lut: float  # no fused activation, or a LUT
    activation_rate_clamp: float  # ReLU-like


_AU_A = (Block(2, 2, 1), Block(2, 1, 2), Block(1, 1, 4))
_AU_B = (Block(4, 1, 1), Block(2, 1, 2), Block(1, 1, 4))
_AU_C = (Block(4, 2, 1), Block(2, 2, 2), Block(2, 1, 4))
_AU_D = (Block(4, 2, 1), Block(4, 1, 2), Block(2, 1, 4))
_AU_E = (Block(4, 4, 1), Block(4, 2, 2), Block(2, 2, 4))
_AU_F = (Block(4, 4, 1), Block(4, 2, 2), Block(4, 1, 4))

U85_CONFIGS: dict[int, U85Config] = {
    c.macs: c
    for c in (
        U85Config(128, 1, (Block(2, 1, 8), Block(1, 1, 16)), ((Block(2, 1, 1), Block(1, 1, 2), Block(1, 1, 2)),) * 2,
                  8192, 8192, 2048, 768, ChannelBuffers(64, 64, 128, 128, 104, 16), 0.5, 0.5, 0.5, 0.5),
        U85Config(256, 1, (Block(2, 1, 16), Block(4, 1, 8), Block(2, 2, 8)), (_AU_A, _AU_B, _AU_A),
                  16384, 16384, 2048, 2048, ChannelBuffers(104, 104, 128, 128, 128, 16), 0.25, 0.25, 0.25, 0.25),
        U85Config(512, 2, (Block(2, 2, 16), Block(4, 1, 16)), (_AU_A, _AU_B),
                  16384, 32768, 4096, 3072, ChannelBuffers(128, 128, 256, 256, 128, 16), 0.125, 0.125, 0.125, 0.125),
        U85Config(1024, 4, (Block(2, 2, 32), Block(4, 1, 32), Block(4, 2, 16)), (_AU_C, _AU_D, _AU_C),
                  16384, 65536, 4096, 6144, ChannelBuffers(256, 256, 416, 208, 256, 16), 0.0625, 0.125, 0.0625, 0.0625),
        U85Config(2048, 4, (Block(2, 2, 64), Block(4, 1, 64), Block(4, 4, 16)), (_AU_E, _AU_F, _AU_E),
                  32768, 131072, 8192, 12288, ChannelBuffers(256, 256, 512, 256, 256, 16), 0.03125, 0.0625, 0.0625,
                  0.03125),
    )
}  # fmt: skip

# Which hardware ops a micro-block runs with an 8-bit IFM (regor ``SetupOfmUBlockToOpTable``),
# per configuration, in ``ofm_ublocks`` order.
_CONVS = frozenset({"conv", "vector_product", "reduce_sum", "elementwise"})
_POOLS = frozenset({"depthwise", "pool", "reduce_minmax", "elementwise"})
_ALL = _CONVS | _POOLS
UBLOCK_OPS: dict[int, tuple[frozenset[str], ...]] = {
    128: (_CONVS, _POOLS),
    256: (_POOLS, _CONVS, _CONVS),
    512: (_ALL, _ALL),
    1024: (frozenset({"conv", "vector_product", "elementwise"}),) * 2 + (_ALL,),
    2048: (frozenset({"conv", "vector_product", "elementwise"}),) * 2 + (_ALL,),
}
# 32-bit IFMs (the softmax's wide intermediates): only elementwise and reductions
UBLOCK_OPS_32: dict[int, tuple[frozenset[str], ...]] = {
    128: (frozenset({"reduce_sum", "elementwise", "reduce_minmax"}), frozenset({"elementwise"})),
    256: (frozenset({"elementwise"}),) + (frozenset({"reduce_sum", "elementwise", "reduce_minmax"}),) * 2,
    512: (frozenset({"reduce_sum", "elementwise", "reduce_minmax"}),) * 2,
    1024: (frozenset({"elementwise"}),) * 2 + (frozenset({"reduce_sum", "elementwise", "reduce_minmax"}),),
    2048: (frozenset({"elementwise"}),) * 2 + (frozenset({"reduce_sum", "elementwise", "reduce_minmax"}),),
}


@dataclass(frozen=True)
class U85Block:
    """The chosen configuration: micro-block, OFM block, IFM block, traversal."""

    ublock: Block
    ofm: Block
    ifm: Block
    traversal: str  # "depth_first", "part_kernel", "depthwise"


def _ceil(a: float, b: float) -> int:
    return -(-int(a) // int(b))


def _round_up(a: int, b: int) -> int:
    return _ceil(a, b) * b


def _round_down(a: int, b: int) -> int:
    return (a // b) * b


def hw_op(layer) -> str:
    """The U85 hardware operation of an isa_models.ethos_u NpuLayer."""
    if layer.kind in ("conv", "vector_product"):
        return "conv"  # ExecuTorch's TOSA lowering hands Vela a linear layer as a 1x1 Conv2D
    if layer.kind == "depthwise":
        return "depthwise"
    if layer.kind in ("avg_pool", "max_pool"):
        return "pool"
    if layer.kind == "reduce":
        return "reduce_sum" if layer.op == "sum" else "reduce_minmax"
    if layer.kind == "dma":
        return "dma"
    if layer.op in ("lut", "rescale", "copy"):
        return "pool"  # an activation, rescale or copy runs as a 1x1 average-pool no-op
    return "elementwise"


def sparse_weights(layer) -> bool:
    """Vela stores a convolution's weights in the 2:4 sparse format when every 4 consecutive
    input channels hold at most 2 non-zero weights; with 1 or 2 input channels (zero-padded to
    4) that always holds. refsim assumes dense weights otherwise (regor ``WeightFormat::Sparse2_4``;
    the sweep's one-channel convolutions)."""
    return layer.kind == "conv" and layer.ifm.d <= 2


def _kernel_first(ifm_depth: int, taps: int, sparse: bool) -> bool:
    """Part-kernel-first when its MAC utilisation is at least depth-first's (regor
    ``ChooseKernelFirst``)."""
    step, least = (10, 4) if sparse else (5, 2)
    k_rnd = (taps // step) * step + max(taps % step, least)
    kernel_first = ifm_depth / _round_up(ifm_depth, 16) * (taps / k_rnd)
    depth_first = ifm_depth / _round_up(ifm_depth, 128 if sparse else 64)
    return kernel_first >= depth_first


def _ublock(cfg: U85Config, op: str, ofm: Block, ifm_bits: int) -> tuple[int, Block]:
    table = (UBLOCK_OPS_32 if ifm_bits == 32 else UBLOCK_OPS)[cfg.macs]
    best, chosen = None, None
    for i, u in enumerate(cfg.ofm_ublocks):
        if op not in table[i]:
            continue
        waste = _round_up(ofm.w, u.w) * _round_up(ofm.h, u.h) * _round_up(ofm.d, u.d) - ofm.elements
        if best is None or waste < best:
            best, chosen = waste, (i, u)
    assert chosen is not None, (cfg.macs, op)
    return chosen


def _ifm_au(cfg: U85Config, index: int, depth: int, bits: int) -> Block:
    depth_bits = depth * bits
    au = cfg.ifm_au[index][2 if depth_bits > 256 else 1 if depth_bits > 128 else 0]
    return Block(au.w, au.h, au.d * 128 // bits)


def _ifm_block(ofm: Block, layer, au: Block, depth: int) -> Block:
    kw, kh = layer.kernel
    dw, dh = layer.dilation
    ext_w = min((kw - 1) * dw + 1, SUB_KERNEL_MAX[0])
    ext_h = min((kh - 1) * dh + 1, SUB_KERNEL_MAX[1])
    w = _round_up((ofm.w - 1) * layer.stride[0] + ext_w, au.w)
    h = _round_up((ofm.h - 1) * layer.stride[1] + ext_h, au.h)
    return Block(w, h, _round_up(depth or ofm.d, au.d))


def _ifm_shape(layer) -> Block:
    if layer.ifm2 is not None and layer.ifm2.elements > layer.ifm.elements:
        return layer.ifm2
    return layer.ifm


def _best_tile(total: int, granule: int, tile: int) -> int:
    if total % tile == 0:
        return tile
    tiles = total // tile
    tile2 = max(_round_up(total // (tiles + 1), granule), granule)
    best, best_rem = tile, total % tile
    t = tile
    while t >= max(max(tile2 - 2 * granule, (tile2 + 1) // 2), granule):
        rem = total % t or t
        if rem > best_rem:
            best, best_rem = t, rem
        t -= granule
    return best


def _granular_tile(total: int, granule: int, tile: int) -> int:
    if total % tile == 0:
        return tile
    return max(_round_up(total // (total // tile + 1), granule), granule)


def _area_fit(
    cfg: U85Config, layer, ublock: Block, ui: int, ofm: Block, limit: Block, ifm_depth: int
) -> Block:
    """Depthwise/pooling OFM block: an area of the accumulator RAM shaped like the OFM."""
    acc_elements = cfg.acc_ram * 8 // 32
    ib_elements = cfg.ifm_ram * 8 // layer.ifm_bits
    ub_acc = ublock.w * ublock.h * ACC_DEPTH_GRANULE
    aspect = ofm.h / ofm.w
    prioritise_depth = layer.kernel == (1, 1) and layer.dilation == (1, 1)
    ifm = layer.ifm
    best, fit = math.inf, Block(ublock.w, ublock.h, ACC_DEPTH_GRANULE)
    area = ofm.w * ofm.d if prioritise_depth else ofm.w * ofm.h
    max_depth = min(max(cfg.macs, acc_elements // ub_acc), limit.d)
    for depth in range(ACC_DEPTH_GRANULE, max_depth + 1, ACC_DEPTH_GRANULE):
        fit_acc = acc_elements
        au = _ifm_au(cfg, ui, ifm_depth or depth, layer.ifm_bits)
        volume = _round_up(ifm.w, au.w) * _round_up(ifm.h, au.h) * _round_up(ifm.d, au.d)
        fitted, prev, retry = False, -1, 25
        while True:
            fw = math.sqrt((fit_acc // depth) / aspect)
            fh = fw * aspect
            if fh < 1.0:
                fw, fh = fw * fh, 1.0
            elif fw < 1.0:
                fw, fh = 1.0, fh * fw
            w = min(_round_down(max(int(fw), ublock.w), ublock.w), limit.w)
            h = min(_round_down(max(int(fh), ublock.h), ublock.h), limit.h)
            tmp = w * h
            if w < ofm.w:
                w = _best_tile(ofm.w, ublock.w, w)
            h = max(_round_down(tmp // w, ublock.h), ublock.h)
            acc_req = w * h * depth
            ab = acc_elements / acc_req
            ib_req = min(_ifm_block(Block(w, h, depth), layer, au, ifm_depth).elements, volume)
            ib = ib_elements / ib_req
            if ab >= 1.0 and ib >= 1.0:
                used = depth % au.d or au.d
                waste = 1.0 + ((au.d - used) / au.d) / 10
                depth_fit = 1.0 + abs(1.0 - limit.d / depth) / 10
                coverage = 1.0 + abs(1.0 - area / (w * (depth if prioritise_depth else h)))
                metric = coverage * depth_fit * waste
                if metric < best:
                    fit, best = Block(w, h, depth), metric
                    if depth >= ofm.d and w >= ofm.w and h >= ofm.h:
                        return ofm
                fitted = True
                break
            if acc_req == prev:
                retry -= 1
                if retry <= 0:
                    ib = 0.9
            prev = acc_req
            if ib < 1.0 and ab > 1.0:
                fit_acc = min(fit_acc, acc_req)
            new = max(int((fit_acc // ub_acc) * min(ib, ab)), 0) * ub_acc
            if new == fit_acc:
                new = fit_acc - ub_acc
            if new < ub_acc:
                break
            fit_acc = new
        if not fitted:
            break
    return fit


def _depthwise_block(cfg: U85Config, layer, ublock: Block, ui: int, ifm_depth: int) -> tuple[Block, Block]:
    ofm = Block(
        _round_up(layer.ofm.w, ublock.w), _round_up(layer.ofm.h, ublock.h), _round_up(layer.ofm.d, 16)
    )
    limit = Block(min(ofm.w, OFM_BLOCK_MAX.w), min(ofm.h, OFM_BLOCK_MAX.h), min(ofm.d, OFM_BLOCK_MAX.d))
    ib_elements = cfg.ifm_ram * 8 // layer.ifm_bits
    fit = _area_fit(cfg, layer, ublock, ui, ofm, limit, ifm_depth)
    w, h, d = fit.w, fit.h, fit.d
    force = 0
    while True:
        au = _ifm_au(cfg, ui, ifm_depth or d, layer.ifm_bits)
        req = _ifm_block(Block(w, h, d), layer, au, ifm_depth)
        if w < ofm.w or h < ofm.h or d < ofm.d:
            row = _ifm_block(Block(w, ublock.h, d), layer, au, ifm_depth)
            if ib_elements - req.elements < row.elements:
                if (h != ofm.h or force & 2) and h > ublock.h:
                    h -= ublock.h
                elif (d > w or force & 1) and d > au.d:
                    d -= au.d
                elif (w != ofm.w or force & 4) and w > ublock.w:
                    w -= ublock.w
                elif force != 7:
                    force = (force << 1) | 1
                elif d > 16:
                    d = max(d // 2, 16)
                else:
                    break
                continue
        return Block(w, h, d), req


def _elementwise_block(cfg: U85Config, layer, ublock: Block) -> Block:
    ofm = Block(
        _round_up(layer.ofm.w, ublock.w), _round_up(layer.ofm.h, ublock.h), _round_up(layer.ofm.d, 16)
    )
    limit = Block(min(ofm.w, OFM_BLOCK_MAX.w), min(ofm.h, OFM_BLOCK_MAX.h), min(ofm.d, OFM_BLOCK_MAX.d))
    ob_width_units = (cfg.ob_ram * 8 // layer.ifm_bits) // 16
    h = _granular_tile(ofm.h, ublock.h, limit.h)
    w_required = _granular_tile(ofm.w, ublock.w, min(ob_width_units, limit.w))
    w, c = ob_width_units, 16
    excess = min(w // max(w_required, ublock.w), limit.d // c)
    if excess >= 2:
        w //= excess
        c *= excess
    return Block(_round_up(w, ublock.w), _round_up(h, ublock.h), _round_up(c, 16))


def _fits(cfg: U85Config, ofm: Block, ifm: Block, ifm_shape: Block, au_depth: int, equal_depth: bool,
          n_buffers: int) -> bool:  # fmt: skip
    depth = ofm.d if equal_depth else min(ifm.d, ifm_shape.d)
    ifm_bytes = ifm.w * ifm.h * _round_up(depth, au_depth) * n_buffers
    acc_bytes = ofm.w * ofm.h * _round_up(ofm.d, ACC_DEPTH_GRANULE) * 4 * n_buffers
    return ifm_bytes <= cfg.ifm_ram and acc_bytes <= cfg.acc_ram


@lru_cache(maxsize=4096)
def choose_block(macs: int, layer) -> U85Block:
    """regor ``ArchEthosU85::FindBlockConfig`` for an 8-bit (or 32-bit elementwise) layer."""
    cfg = U85_CONFIGS[macs]
    op = hw_op(layer)
    ifm_shape = _ifm_shape(layer)
    taps = layer.kernel[0] * layer.kernel[1]
    sparse = sparse_weights(layer)
    part = op == "conv" and _kernel_first(ifm_shape.d, taps, sparse)
    ui, u = _ublock(cfg, op, layer.ofm, layer.ifm_bits)
    if op == "elementwise":
        block = _elementwise_block(cfg, layer, u)
        return U85Block(u, block, block, "depth_first")
    if op == "depthwise":
        ofm, ifm = _depthwise_block(cfg, layer, u, ui, 0)
        return U85Block(u, ofm, ifm, "depthwise")
    ifm_depth = 64
    if part:
        ifm_depth = 16
    elif layer.ifm_bits == 32 or (macs in (128, 256) and u.d == 16 and not sparse):
        ifm_depth = 32
    elif sparse:
        ifm_depth = 128
    if op in ("pool", "reduce_sum", "reduce_minmax"):
        ofm, ifm = _depthwise_block(cfg, layer, u, ui, ifm_depth if op == "reduce_sum" else 0)
        return U85Block(u, ofm, ifm, "depth_first")
    step = Block(u.w, u.h, max(u.d, ACC_DEPTH_GRANULE))
    end = Block(
        _round_up(max(min(layer.ofm.w, OFM_BLOCK_MAX.w), step.w), u.w),
        _round_up(max(min(layer.ofm.h, OFM_BLOCK_MAX.h), step.h), u.h),
        _round_up(max(min(layer.ofm.d, OFM_BLOCK_MAX.d), step.d), u.d),
    )
    repeats = _ceil(layer.kernel[0], SUB_KERNEL_MAX[0]) * _ceil(layer.kernel[1], SUB_KERNEL_MAX[1])
    weight_taps = taps
    ofm_total = layer.ofm.elements
    au = _ifm_au(cfg, ui, ifm_depth, layer.ifm_bits)
    best_cost, best_cov, chosen = math.inf, math.inf, None
    for n_buffers in (2, 1):
        depth = max(u.d, min(end.d, OFM_SPLIT_DEPTH))
        if depth < layer.ofm.d:
            depth = _round_up(depth, OFM_SPLIT_DEPTH)
        while depth <= end.d:
            for h in range(step.h, end.h + 1, step.h):
                for w in range(step.w, end.w + 1, step.w):
                    ofm = Block(w, h, depth)
                    ifm = _ifm_block(ofm, layer, au, ifm_depth)
                    if not _fits(cfg, ofm, ifm, ifm_shape, au.d, False, n_buffers):
                        continue
                    full = (_ceil(layer.ofm.w, w), _ceil(layer.ofm.h, h), _ceil(layer.ofm.d, depth))
                    frac = (layer.ofm.w / w, layer.ofm.h / h, layer.ofm.d / depth)
                    weights = weight_taps * ifm_shape.d * full[0] * full[1] * frac[2] * depth
                    fetched = ifm.w * ifm.h * ifm_shape.d * repeats * frac[0] * frac[1] * full[2]
                    cost = (fetched + weights) / ofm_total
                    if ifm_shape.elements < ifm.elements * 2:
                        cost /= 2
                    if cost <= best_cost:
                        if cost == best_cost:
                            cov_w, cov_h = min(ifm_shape.w, ifm.w), min(ifm_shape.h, ifm.h)
                            coverage = ifm_shape.w * ifm_shape.h / max(cov_w * cov_h, 1)
                            if not (coverage <= best_cov and h <= 4 and w <= 4):
                                continue
                            best_cov = coverage
                        else:
                            best_cov = math.inf
                        best_cost, chosen = cost, (ofm, Block(ifm.w, ifm.h, ifm_depth))
            depth += u.d
            if depth < layer.ofm.d:
                depth = _round_up(depth, OFM_SPLIT_DEPTH)
        if chosen is not None:
            break
    assert chosen is not None, layer
    return U85Block(u, chosen[0], chosen[1], "part_kernel" if part else "depth_first")


# --- memory ----------------------------------------------------------------------------------


def _burst(m, nhwc: bool, read: bool, block: Block, shape: Block, cores: int, bits: int = 8) -> int:
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


def _transfer(m, nhwc, read, block, shape, cores, nbytes: float) -> float:
    return nbytes * m.burst_length / _burst(m, nhwc, read, block, shape, cores)


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
        tx = _transfer(mi, layer.ifm_io, True, blk.ifm, shape, cores, nbytes)
        cycles_ifm = max(cycles_ifm, mi.read_latency + int(tx / ctx.bytes_per_cycle(mi)))
    mo = ctx.feature_map(layer.ofm_io)
    o = layer.ofm
    nbytes = min(o.w, blk.ofm.w) * min(o.h, blk.ofm.h) * min(o.d, blk.ofm.d) * layer.ofm_bits // 8
    tx = _transfer(mo, layer.ofm_io, False, blk.ofm, o, cores, nbytes)
    return cycles_ifm + mo.write_latency + int(tx / ctx.bytes_per_cycle(mo))


def access_cycles(ctx, layer, blk: U85Block) -> tuple[dict[str, float], dict[str, float]]:
    """Access cycles and bytes per memory kind (regor ``MeasureElementAccess``,
    ``ElementTransferToBytes``, ``MeasureAccessCycles``)."""
    op = hw_op(layer)
    cores = ctx.accelerator.cores
    mi, mo = ctx.feature_map(layer.ifm_io), ctx.feature_map(layer.ofm_io)
    r16 = (lambda n: n) if layer.ifm_io else (lambda n: _round_up(n, 16))
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
    ofm_elements = o.w * o.h * (o.d if layer.ofm_io else _round_up(o.d, 16))
    add(mo, "write", _transfer(mo, layer.ofm_io, False, blk.ofm, o, cores, ofm_elements))
    if op == "elementwise":
        n = o.w * o.h * r16(o.d)
        reads = n * (2 if layer.ifm2 is not None and layer.ifm2.elements > 1 else 1)
        add(mi, "ifm_stream", _transfer(mi, layer.ifm_io, True, blk.ifm, layer.ifm, cores, reads))
    elif op != "dma":
        ib = Block(min(layer.ifm.w, blk.ifm.w), min(layer.ifm.h, blk.ifm.h), min(layer.ifm.d, blk.ifm.d))
        ob = Block(min(o.w, blk.ofm.w), min(o.h, blk.ofm.h), min(o.d, blk.ofm.d))
        blocks = (
            _ceil(o.w, ob.w),
            _ceil(o.h, ob.h),
            1 if op in ("depthwise", "pool", "reduce_minmax") else _ceil(o.d, ob.d),
        )
        sub = (
            1
            if layer.kind == "vector_product"
            else (_ceil(layer.kernel[0], SUB_KERNEL_MAX[0]) * _ceil(layer.kernel[1], SUB_KERNEL_MAX[1]))
        )
        fetch = ib.w * ib.h * r16(layer.ifm.d) * sub * blocks[0] * blocks[1] * blocks[2]
        add(mi, "ifm", _transfer(mi, layer.ifm_io, True, blk.ifm, layer.ifm, cores, fetch))
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
    n_xy = _ceil(ob.w, ub_w) * _ceil(ob.h, ub_h)
    n_z = _ceil(ob.d, u.d)
    writeback = 32 * u.d // 8
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
                steps = _ceil(taps, 4)
                c = max(writeback, 4 * n_xy * bytes_in) * steps * n_z
            elif blk.traversal != "part_kernel":
                steps = taps
                c = max(writeback, ib.d // 8 * n_xy) * steps * n_z * bytes_in // halve
            else:
                steps = _ceil(taps, 4)
                c = max(writeback, 4 * n_xy) * steps * n_z * _ceil(ib.d, 8) // halve
            delay = 0
            if n_xy == 1:
                if n_z == 1:
                    delay = 2 * steps
                elif steps > 1:
                    delay = 2 * (steps - 1) * n_z
            if op == "conv" and blk.traversal == "part_kernel":
                delay *= _ceil(ib.d, 8)
            total += c + delay
    if op in ("conv", "reduce_sum"):
        total *= _ceil(layer.ifm.d, ib.d)
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
        return (self.min_memory + self.out_block + self.dpu_block) // 4

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
    o = Block(_round_up(layer.ofm.w, u.w), _round_up(layer.ofm.h, u.h), _round_up(layer.ofm.d, u.d))
    ob = Block(min(o.w, blk.ofm.w), min(o.h, blk.ofm.h), min(o.d, blk.ofm.d))
    ib = Block(min(layer.ifm.w, blk.ifm.w), min(layer.ifm.h, blk.ifm.h), min(layer.ifm.d, blk.ifm.d))
    dpu = _dpu_block(cfg, layer, blk, ob, ib)
    n_blocks = max(o.w / ob.w, 1.0) * max(o.h / ob.h, 1.0) * max(o.d / ob.d, 1.0)
    out = int(_rate(cfg, layer) * ob.elements)
    if layer.bias_channels:
        out = max(out, 10 * ob.d * ctx.constants.read_latency // 256)
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
        return float(int(per * o.w * o.h * (o.d if layer.ofm_io else _round_up(o.d, 16))))
    return float(compute_parts(ctx, layer, blk).total)


def layer_cycles(ctx, layer):
    """The layer's compute, per-memory access cycles and total: ``max(compute, access)``, no
    per-layer fill (regor ``EstimateFullOpPerformance``)."""
    from isa_models.ethos_u import LayerCycles

    blk = choose_block(ctx.accelerator.macs, layer)
    cycles, moved = access_cycles(ctx, layer, blk)
    return LayerCycles(compute=compute_cycles(ctx, layer, blk), memory=cycles, bytes=moved, fill=0.0)


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

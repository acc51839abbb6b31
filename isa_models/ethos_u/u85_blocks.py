"""Ethos-U85 block configurations: which micro-block and OFM/IFM blocks Vela picks for a layer.

Restates regor's ``ArchEthosU85::FindBlockConfig`` (``FindUBlock``, ``ChooseKernelFirst``,
``AreaFit``, ``FindDepthwiseConfig``, ``FindElementwiseConfig``, ``TryBlockConfig``,
``CalcIfmAUSize``; see isa_models.ethos_u.u85 for the source) for 8-bit layers and the 32-bit
elementwise ones. Vela 5.1.0 picks the same blocks on the single-layer sweep
(benchmarks/results/ethos_u85_sweep.json holds its choices beside the layers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from isa_models.ethos_u.arch import Block
from isa_models.ethos_u.u85_arch import (
    ACC_DEPTH_GRANULE,
    BRICK_ELEMENTS,
    CB_SLOTS,
    OFM_BLOCK_MAX,
    OFM_SPLIT_DEPTH,
    SUB_KERNEL_MAX,
    U85_CONFIGS,
    UBLOCK_OPS,
    UBLOCK_OPS_32,
    U85Config,
    ceil_div,
    round_down,
    round_up,
)


@dataclass(frozen=True)
class U85Block:
    """The chosen configuration: micro-block, OFM block, IFM block, traversal."""

    ublock: Block
    ofm: Block
    ifm: Block
    traversal: str  # "depth_first", "part_kernel", "depthwise"


def hw_op(layer) -> str:
    """The U85 hardware operation of an isa_models.ethos_u.layers NpuLayer."""
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
    kernel_first = ifm_depth / round_up(ifm_depth, 16) * (taps / k_rnd)
    depth_first = ifm_depth / round_up(ifm_depth, 128 if sparse else 64)
    return kernel_first >= depth_first


def _ublock(cfg: U85Config, op: str, ofm: Block, ifm_bits: int) -> tuple[int, Block]:
    table = (UBLOCK_OPS_32 if ifm_bits == 32 else UBLOCK_OPS)[cfg.macs]
    best, chosen = None, None
    for i, u in enumerate(cfg.ofm_ublocks):
        if op not in table[i]:
            continue
        waste = round_up(ofm.w, u.w) * round_up(ofm.h, u.h) * round_up(ofm.d, u.d) - ofm.elements
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
    w = round_up((ofm.w - 1) * layer.stride[0] + ext_w, au.w)
    h = round_up((ofm.h - 1) * layer.stride[1] + ext_h, au.h)
    return Block(w, h, round_up(depth or ofm.d, au.d))


def _ifm_shape(layer) -> Block:
    if layer.ifm2 is not None and layer.ifm2.elements > layer.ifm.elements:
        return layer.ifm2
    return layer.ifm


def _best_tile(total: int, granule: int, tile: int) -> int:
    if total % tile == 0:
        return tile
    tiles = total // tile
    tile2 = max(round_up(total // (tiles + 1), granule), granule)
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
    return max(round_up(total // (total // tile + 1), granule), granule)


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
        volume = round_up(ifm.w, au.w) * round_up(ifm.h, au.h) * round_up(ifm.d, au.d)
        fitted, prev, retry = False, -1, 25
        while True:
            fw = math.sqrt((fit_acc // depth) / aspect)
            fh = fw * aspect
            if fh < 1.0:
                fw, fh = fw * fh, 1.0
            elif fw < 1.0:
                fw, fh = 1.0, fh * fw
            w = min(round_down(max(int(fw), ublock.w), ublock.w), limit.w)
            h = min(round_down(max(int(fh), ublock.h), ublock.h), limit.h)
            tmp = w * h
            if w < ofm.w:
                w = _best_tile(ofm.w, ublock.w, w)
            h = max(round_down(tmp // w, ublock.h), ublock.h)
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
    ofm = Block(round_up(layer.ofm.w, ublock.w), round_up(layer.ofm.h, ublock.h), round_up(layer.ofm.d, 16))
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
    """regor ``FindElementwiseConfig``: tile the output buffer (a chaining-buffer row when an
    operand is broadcast in depth or height)."""
    ofm = Block(round_up(layer.ofm.w, ublock.w), round_up(layer.ofm.h, ublock.h), round_up(layer.ofm.d, 16))
    limit = Block(min(ofm.w, OFM_BLOCK_MAX.w), min(ofm.h, OFM_BLOCK_MAX.h), min(ofm.d, OFM_BLOCK_MAX.d))
    nbytes = layer.ifm_bits // 8
    ob_width_units = (cfg.ob_ram // nbytes) // 16  # one row of 16-channel granules
    cb_width_units = (cfg.cb_ram // CB_SLOTS) // (BRICK_ELEMENTS * nbytes) // ublock.h
    h = _granular_tile(ofm.h, ublock.h, limit.h)
    w_required = max(_granular_tile(ofm.w, ublock.w, min(ob_width_units, limit.w)), ublock.w)
    w = ob_width_units
    c, w = _reapportion(16, limit.d, w, w_required)
    i1, i2 = layer.ifm, layer.ifm2
    scalar = i1.elements == 1 or (i2 is not None and i2.elements == 1)
    if i2 is not None and not scalar:
        o = layer.ofm
        depth_b = i1.d < o.d or i2.d < o.d
        height_b = i1.h < o.h or i2.h < o.h
        width_b = i1.w < o.w or i2.w < o.w
        if depth_b:
            c = _granular_tile(ofm.d, 16, limit.d)
            w = cb_width_units
            if not (height_b or width_b):
                h, w = _reapportion(ublock.h, limit.h, w, w_required)
        elif height_b:
            c, w = _reapportion(BRICK_ELEMENTS, limit.d, cb_width_units, w_required)
    return Block(round_up(w, ublock.w), round_up(h, ublock.h), round_up(c, 16))


def _reapportion(value: int, most: int, avail: int, required: int) -> tuple[int, int]:
    """regor ``Reapportion``: grow ``value`` by the whole factor ``avail`` can give up (at least
    2), shrinking ``avail`` by it: (new value, new avail)."""
    excess = min(avail // required, most // value)
    if excess >= 2:
        return value * excess, avail // excess
    return value, avail


def _fits(cfg: U85Config, ofm: Block, ifm: Block, ifm_shape: Block, au_depth: int, equal_depth: bool,
          n_buffers: int) -> bool:  # fmt: skip
    depth = ofm.d if equal_depth else min(ifm.d, ifm_shape.d)
    ifm_bytes = ifm.w * ifm.h * round_up(depth, au_depth) * n_buffers
    acc_bytes = ofm.w * ofm.h * round_up(ofm.d, ACC_DEPTH_GRANULE) * 4 * n_buffers
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
        round_up(max(min(layer.ofm.w, OFM_BLOCK_MAX.w), step.w), u.w),
        round_up(max(min(layer.ofm.h, OFM_BLOCK_MAX.h), step.h), u.h),
        round_up(max(min(layer.ofm.d, OFM_BLOCK_MAX.d), step.d), u.d),
    )
    repeats = ceil_div(layer.kernel[0], SUB_KERNEL_MAX[0]) * ceil_div(layer.kernel[1], SUB_KERNEL_MAX[1])
    weight_taps = taps
    ofm_total = layer.ofm.elements
    au = _ifm_au(cfg, ui, ifm_depth, layer.ifm_bits)
    best_cost, best_cov, chosen = math.inf, math.inf, None
    for n_buffers in (2, 1):
        depth = max(u.d, min(end.d, OFM_SPLIT_DEPTH))
        if depth < layer.ofm.d:
            depth = round_up(depth, OFM_SPLIT_DEPTH)
        while depth <= end.d:
            for h in range(step.h, end.h + 1, step.h):
                for w in range(step.w, end.w + 1, step.w):
                    ofm = Block(w, h, depth)
                    ifm = _ifm_block(ofm, layer, au, ifm_depth)
                    if not _fits(cfg, ofm, ifm, ifm_shape, au.d, False, n_buffers):
                        continue
                    full = (ceil_div(layer.ofm.w, w), ceil_div(layer.ofm.h, h), ceil_div(layer.ofm.d, depth))
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
                depth = round_up(depth, OFM_SPLIT_DEPTH)
        if chosen is not None:
            break
    assert chosen is not None, layer
    return U85Block(u, chosen[0], chosen[1], "part_kernel" if part else "depth_first")


__all__ = ["U85Block", "choose_block", "hw_op", "sparse_weights"]

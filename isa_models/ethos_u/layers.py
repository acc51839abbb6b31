"""Ethos-U layer cycles, following Vela's performance model (cycles = max of compute and memory).

For one NPU layer on an accelerator (isa_models.ethos_u.arch) in a system and memory mode
(isa_models.ethos_u.systems)::

    compute = blocks · max(dpu_block, output_block) + min(dpu_block, output_block)
    memory[m] = Σ_tensors in m  bytes · burst_penalty / bytes_per_cycle(m)   (per memory m)
    layer   = max(compute, memory[sram], memory[dram], memory[flash]) + fill

- The OFM is computed in blocks (a block configuration: OFM block w x h x d and the IFM block
  feeding it, searched among those whose double-buffered IFM and accumulators fit the shared
  buffer, minimising the IFM and weight bytes fetched per output element — Vela's
  architecture_allocator). ``blocks`` = ⌈OFM / block⌉ over w, h, d.
- ``dpu_block``: the MAC engine steps through the kernel one tap (conv; ⌈taps/4⌉ for depthwise
  and part-kernel conv, which put 4 taps in one 8-deep dot product; a pooling step takes all
  taps of a sub-kernel at once, ``max(4, taps)`` cycles times IFM bits / 2 — 4 for int8 — as
  Vela 5.2's regor counts it, where the legacy model counted 1) per micro-block, each step
  ``max(4 · ublocks_xy, 4 · ublock.d)`` cycles (the accumulator write-back of a micro-block
  bounds it), times micro-blocks in depth, times ⌈IFM depth / IFM block depth⌉ (conv and
  vector product), split in sub-kernels of at most 8x8 taps, plus a pipeline delay of 2-3
  cycles per step when the block is a single micro-block; over ``cores``.
- ``output_block``: OFM block elements x the output unit's cycles per element for the op (or
  the activation unit's, if slower); at least the bias/scale fetch of the block (10 bytes per
  channel at the read latency of the memory the weights are read from: the SRAM staging buffer
  when they are buffered, as regor has it; the legacy model took the constants' memory).
- Both are at least ``(ifm_latency + ofm_latency + dpu + output) / 4``: memory latency of one
  block's transfers, four jobs in flight.
- Elementwise ops: OFM elements x cycles per element (output or activation unit, at least the
  per-block memory latency share).
- Memory traffic: IFM bytes fetched (IFM block area x IFM depth per OFM block, again per
  sub-kernel), OFM bytes written, encoded weights: read from the constant memory once per layer
  and, when that is not the fast memory, copied into an SRAM buffer (write + reads per OFM
  block column), biases/scales 10 bytes per OFM channel. Feature maps between NPU ops are
  NHCWB16 (depth stored in bricks of 16: the IFM fetch and the OFM write count the depth
  rounded up to 16), a delegate's inputs and outputs NHWC; bytes moved = bytes x memory burst /
  bytes per burst, the burst as regor's ``EstimateMemoryTransfer`` has it per format
  (isa_models.ethos_u.u85 ``burst_bytes``, shared).
- ``fill``: one read latency of the IFM memory and one write latency of the OFM memory per layer
  (the first block cannot overlap anything) — the per-layer overhead.

Kinds of layer: ``conv`` (ConvolutionMxN), ``depthwise``, ``vector_product`` (fully connected),
``avg_pool``/``max_pool`` (Pooling), ``reduce`` (ReduceSum), ``elementwise`` (add, mul, min,
max, LUT activation), ``dma`` (a memory-to-memory copy, e.g. pad). The block search and the
compute formula are restated from Vela 5.1.0's ``npu_performance.py`` and
``architecture_allocator.py`` (its legacy core), which Vela 5.2's C++ core regor
(``architecture/ethosu55/ethos_u55_performance.cpp``, read in the ethos-u-vela 5.2.0 sdist)
keeps for the MAC engine; where regor differs and Vela 5.2 follows it — the pooling step's
IFM-bits factor, the scale fetch from the staging SRAM, the NHCWB16 bursts — this module follows
regor. Nothing is fitted. (Until this was read, per-class efficiency factors fitted on
ExecuTorch exports compiled by Vela 5.1.0 scaled the compute; they absorbed a Vela 5.1.0 bug —
its ``EstimateAOCyclesPerElement`` priced an op with no fused activation at the LUT rate, which
every ExecuTorch convolution is, ReLU being folded into the TOSA RESCALE — and priced the
reference .tflite models, whose convolutions carry a fused ReLU, 13% to 109% over Vela.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

from isa_models.ethos_u.arch import Accelerator, Block
from isa_models.ethos_u.systems import Memory, MemoryMode, NpuSystem
from isa_models.ethos_u.u85 import transfer  # regor's EstimateMemoryTransfer, shared by U55/U65/U85

SUB_KERNEL_MAX = (8, 8)  # w, h taps per sub-kernel
OFM_SPLIT_DEPTH = 16
SHRAM_BANK_BYTES = 1024
SHRAM_RESERVED_OUTPUT_BANKS = 2
BIAS_BYTES_PER_CHANNEL = 10  # 40-bit bias + 32-bit scale + shift, per OFM channel
CONV_KINDS = ("conv", "depthwise", "vector_product", "avg_pool", "max_pool", "reduce")
KINDS = (*CONV_KINDS, "elementwise", "dma")


@dataclass(frozen=True)
class NpuLayer:
    """One NPU operation: shapes (NHWC, batch folded into height), kernel and operands.

    ``ifm``/``ofm`` are Blocks (w, h, d); ``kernel``/``stride``/``dilation`` are (w, h);
    ``op`` names the elementwise operation (``add``, ``mul``, ``max``, ``min``, ``lut``, ``copy``);
    ``weights_bytes`` is the *encoded* weight stream (isa_models.ethos_u.weights);
    ``bias_channels`` the OFM channels with a bias/scale entry (0 for ops without).
    """

    kind: str
    ifm: Block
    ofm: Block
    kernel: tuple[int, int] = (1, 1)
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    ifm2: Block | None = None
    op: str = ""
    activation: str = "clamp"  # "none", "clamp", "lut"
    weights_bytes: int = 0
    bias_channels: int = 0
    ifm_bits: int = 8
    ofm_bits: int = 8
    copy_bytes: int = 0  # dma: bytes moved
    ifm_io: bool = False  # the IFM is a delegate input: it lives in the arena memory
    ofm_io: bool = False  # the OFM is a delegate output: likewise

    def __post_init__(self) -> None:
        assert self.kind in KINDS, self.kind

    @property
    def macs(self) -> int:
        kw, kh = self.kernel
        if self.kind in ("conv", "vector_product"):
            return kw * kh * self.ifm.d * self.ofm.elements
        if self.kind == "depthwise":
            return kw * kh * self.ofm.elements
        return 0


@dataclass(frozen=True)
class BlockConfig:
    ofm: Block
    ifm: Block
    part_kernel: bool


@dataclass(frozen=True)
class LayerCycles:
    """A layer's cycles: compute, access cycles per memory kind, total, and the bound."""

    compute: float
    memory: dict[str, float] = field(default_factory=dict)
    bytes: dict[str, float] = field(default_factory=dict)
    fill: float = 0.0
    block: BlockConfig | None = None

    @property
    def total(self) -> float:
        return max([self.compute, *self.memory.values()]) + self.fill

    @property
    def bound(self) -> str:
        worst = max(self.memory.items(), key=lambda kv: kv[1], default=("memory", 0.0))
        return "compute" if self.compute >= worst[1] else f"memory:{worst[0]}"


@dataclass(frozen=True)
class NpuContext:
    """Accelerator + system + memory mode: what a layer's cycles depend on besides itself."""

    accelerator: Accelerator
    system: NpuSystem
    mode: MemoryMode

    def memory(self, port: int) -> Memory:
        return self.system.axi0 if port == 0 else self.system.axi1

    def bytes_per_cycle(self, m: Memory) -> float:
        return self.accelerator.axi_bytes_per_cycle * m.ports_used * m.clock_scale

    @property
    def arena(self) -> Memory:
        """Where intermediate feature maps live as the NPU sees them: with a dedicated SRAM
        cache (spilling), the SRAM (every bundled program's maps fit the 256-512 KB of the
        Dedicated_Sram_* modes)."""
        return self.memory(self.mode.cache_port if self.mode.spilling else self.mode.arena_port)

    def feature_map(self, io: bool) -> Memory:
        """The memory of a feature map: a delegate's input or output stays in the arena memory
        the host shares (DRAM/flash port in the Dedicated_Sram modes), others in :attr:`arena`."""
        return self.memory(self.mode.arena_port) if io else self.arena

    @property
    def constants(self) -> Memory:
        return self.memory(self.mode.const_port)

    @property
    def fast(self) -> Memory:
        return self.memory(self.mode.cache_port)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _round_up(a: int, b: int) -> int:
    return _ceil(a, b) * b


# --- block configuration -------------------------------------------------------------------


def _part_kernel(layer: NpuLayer) -> bool:
    """Part-kernel-first (4 taps per dot product) when it uses the MACs better than depth-first."""
    if layer.kind not in ("conv", "depthwise"):
        return False
    depth = layer.ifm.d
    if depth <= 8:
        return True
    taps = layer.kernel[0] * layer.kernel[1]
    depth_use = depth / _round_up(depth, 32)
    part_use = depth * taps / (_round_up(depth, 8) * _round_up(taps, 4))
    return part_use > depth_use


def _ifm_block_for(acc: Accelerator, layer: NpuLayer, ofm: Block, ifm_depth: int) -> Block:
    kw, kh = layer.kernel
    sw, sh = layer.stride
    dw, dh = layer.dilation
    area_w = min((kw - 1) * dw + 1, SUB_KERNEL_MAX[0])
    area_h = min((kh - 1) * dh + 1, SUB_KERNEL_MAX[1])
    w = _round_up((ofm.w - 1) * sw + area_w, acc.ofm_ublock.w)
    h = _round_up((ofm.h - 1) * sh + area_h, acc.ofm_ublock.h)
    return Block(w, h, ifm_depth)


def _fits(acc: Accelerator, elementwise: bool, ofm: Block, ifm: Block, lut: bool) -> bool:
    g = acc.granules
    ifm_bytes = ifm.w * ifm.h * _round_up(ifm.d, 8)
    ifm_banks = _round_up(
        _ceil(ifm_bytes, SHRAM_BANK_BYTES) * 2, g.ifm8_elementwise if elementwise else g.ifm8
    )
    lut_banks = max(2 if lut else 0, acc.shram_reserved_end_banks)
    end = acc.shram_usable_banks + acc.shram_reserved_end_banks - lut_banks
    used = SHRAM_RESERVED_OUTPUT_BANKS + ifm_banks
    if elementwise:
        return used + ifm_banks <= end
    acc_bytes = ofm.w * ofm.h * _round_up(ofm.d, 8) * 4  # 32-bit accumulators
    acc_banks = _round_up(_ceil(acc_bytes, SHRAM_BANK_BYTES) * 2, g.acc32)
    return used <= end - acc_banks


@lru_cache(maxsize=4096)
def choose_block(acc: Accelerator, layer: NpuLayer) -> BlockConfig:
    """The OFM/IFM block pair that fits the shared buffer and fetches the fewest IFM and weight
    bytes per output element (ties: the one covering more of the IFM, for small blocks)."""
    u = acc.ofm_ublock
    ofm = layer.ofm
    elementwise = layer.kind in ("elementwise", "dma")
    equal_depth = elementwise or layer.kind in ("depthwise", "avg_pool", "max_pool")
    part = _part_kernel(layer)
    ifm_depth = _round_up(min(layer.ifm.d, 16 if part else 32), acc.ifm_ublock.d)
    conv_like = layer.kind in ("conv", "depthwise")
    weight_taps = layer.kernel[0] * layer.kernel[1] if conv_like or layer.kind == "vector_product" else 0
    repeats = _ceil(layer.kernel[0], SUB_KERNEL_MAX[0]) * _ceil(layer.kernel[1], SUB_KERNEL_MAX[1])
    space = Block(
        _round_up(min(ofm.w, acc.ofm_block_max.w), u.w),
        _round_up(min(ofm.h, acc.ofm_block_max.h), u.h),
        _round_up(min(ofm.d, acc.ofm_block_max.d), u.d),
    )
    best: tuple[float, float] | None = None
    chosen: BlockConfig | None = None
    depth = max(u.d, min(space.d, OFM_SPLIT_DEPTH))
    if depth < ofm.d:
        depth = _round_up(depth, OFM_SPLIT_DEPTH)
    while depth <= space.d:
        for h in range(u.h, space.h + 1, u.h):
            for w in range(u.w, space.w + 1, u.w):
                block = Block(w, h, depth)
                ifm = _ifm_block_for(acc, layer, block, depth if equal_depth else ifm_depth)
                if elementwise:
                    ifm = Block(w, h, depth)
                if not _fits(acc, elementwise, block, ifm, layer.activation == "lut"):
                    continue
                full = (_ceil(ofm.w, w), _ceil(ofm.h, h), _ceil(ofm.d, depth))
                frac = (ofm.w / w, ofm.h / h, ofm.d / depth)
                if elementwise:
                    cost = max(ofm.elements / block.elements, 1.0)
                else:
                    weights = weight_taps * layer.ifm.d * full[0] * full[1]
                    if layer.kind != "depthwise":
                        weights *= depth * frac[2]
                    fetched = ifm.w * ifm.h * layer.ifm.d * repeats * frac[0] * frac[1]
                    if not equal_depth:
                        fetched *= full[2]
                    cost = (fetched + weights) / ofm.elements
                if layer.ifm.elements < ifm.elements * 2:
                    cost /= 2
                coverage = (layer.ifm.w * layer.ifm.h) / (min(layer.ifm.w, ifm.w) * min(layer.ifm.h, ifm.h))
                if (
                    best is None
                    or cost < best[0]
                    or (cost == best[0] and coverage <= best[1] and h <= 4 and w <= 4)
                ):
                    best = (cost, coverage if best is None or cost < best[0] else min(coverage, best[1]))
                    chosen = BlockConfig(block, ifm, part)
        depth += u.d
        if depth < ofm.d:
            depth = _round_up(depth, OFM_SPLIT_DEPTH)
    if chosen is None:  # nothing fits: the smallest block (Vela would split the op)
        block = Block(u.w, u.h, u.d)
        chosen = BlockConfig(block, _ifm_block_for(acc, layer, block, ifm_depth), part)
    return chosen


# --- compute ---------------------------------------------------------------------------------


def _output_rate(acc: Accelerator, layer: NpuLayer) -> float:
    r, a = acc.output_rates, acc.activation_rates
    if layer.kind == "elementwise" and layer.op in ("add", "sub"):
        out = r.advanced_add
    elif layer.kind == "elementwise" and layer.op == "mul":
        out = r.mac_40bit_or_mul
    elif layer.kind == "max_pool" or (layer.kind == "elementwise" and layer.op in ("max", "min")):
        out = r.max_pool
    else:
        out = r.default
    act = {"lut": a.lut, "clamp": a.clamp}.get("lut" if layer.op == "lut" else layer.activation, a.none)
    return max(out, act)


def _block_latency(ctx: NpuContext, layer: NpuLayer, cfg: BlockConfig) -> float:
    """Cycles to move one IFM block in and one OFM block out (latency + bytes / bandwidth)."""
    mi, mo = ctx.feature_map(layer.ifm_io), ctx.feature_map(layer.ofm_io)
    ifm = min(layer.ifm.w, cfg.ifm.w) * min(layer.ifm.h, cfg.ifm.h) * min(layer.ifm.d, cfg.ifm.d)
    ofm = min(layer.ofm.w, cfg.ofm.w) * min(layer.ofm.h, cfg.ofm.h) * min(layer.ofm.d, cfg.ofm.d)
    ifm_s = ifm * _burst_penalty(mi, layer.ifm, cfg.ifm, read=True) / ctx.bytes_per_cycle(mi)
    ofm_s = (
        ofm
        * _burst_penalty(mo, layer.ofm, cfg.ofm, read=False, cores=ctx.accelerator.cores)
        / ctx.bytes_per_cycle(mo)
    )
    return mi.read_latency + ifm_s + mo.write_latency + ofm_s


def _dpu_block_cycles(acc: Accelerator, layer: NpuLayer, cfg: BlockConfig) -> float:
    u = acc.ofm_ublock
    ofm = Block(min(layer.ofm.w, cfg.ofm.w), min(layer.ofm.h, cfg.ofm.h), min(layer.ofm.d, cfg.ofm.d))
    ub_w, ub_h = u.w, u.h
    conv1d = (
        u.h == 2 and layer.kind in ("conv", "depthwise", "vector_product") and layer.ofm.h == 1
        and layer.ofm.w % 2 == 0 and layer.kernel[1] == 1
    )  # fmt: skip
    if conv1d:  # a 1-high OFM uses a 4x1 micro-block on the 2x2 engines
        ub_w, ub_h = 4, 1
    n_xy = _ceil(ofm.w, ub_w) * _ceil(ofm.h, ub_h)
    n_z = _ceil(ofm.d, u.d)
    writeback = 4 * u.d
    kw, kh = layer.kernel
    sub_w = [min(kw - i * SUB_KERNEL_MAX[0], SUB_KERNEL_MAX[0]) for i in range(_ceil(kw, SUB_KERNEL_MAX[0]))]
    sub_h = [min(kh - i * SUB_KERNEL_MAX[1], SUB_KERNEL_MAX[1]) for i in range(_ceil(kh, SUB_KERNEL_MAX[1]))]
    cycles = 0.0
    for taps in (x * y for y in sub_h for x in sub_w):
        if layer.kind in ("avg_pool", "max_pool"):
            steps = 1
            c = max(4, taps) * n_xy * n_z
            if acc.name != "ethos-u55-32":  # regor: x ifm bits / 2 (4 for int8; legacy Vela: 1)
                c *= layer.ifm_bits // 2
        elif layer.kind == "depthwise":
            steps = _ceil(taps, 4)
            c = max(writeback, 4 * n_xy) * steps * n_z
        elif layer.kind in ("vector_product", "reduce") or not cfg.part_kernel:
            steps = taps
            c = max(writeback, 4 * n_xy) * steps * n_z
        else:  # part-kernel-first convolution
            steps = _ceil(taps, 4)
            c = max(writeback, 4 * n_xy) * steps * _ceil(cfg.ifm.d, 8) * n_z
        delay = 0
        if n_xy == 1:  # one micro-block per step: the MAC pipeline cannot hide its latency
            unit = 3 if acc.name == "ethos-u55-32" else 2
            if n_z == 1:
                delay = unit * steps
            elif steps > 1:
                delay = unit * (steps - 1) * n_z
        if layer.kind == "conv" and cfg.part_kernel:
            delay *= _ceil(cfg.ifm.d, 8)
        cycles += c + delay
    if layer.kind in ("conv", "vector_product", "reduce"):
        cycles *= _ceil(layer.ifm.d, cfg.ifm.d)
    return cycles / acc.cores


def _weights_buffered(ctx: NpuContext) -> bool:
    """Weights not in the fast memory are copied into an SRAM buffer by DMA before use."""
    return ctx.mode.const_port != ctx.mode.cache_port


def _weights_source(ctx: NpuContext) -> Memory:
    """Where the MAC engine reads weights, scales and biases from: the SRAM staging buffer when
    they are buffered, else their own memory (regor EstimateMacOpCycles: ``weightStagingMemory``
    before ``constMemory`` for the bias fetch latency)."""
    return ctx.fast if _weights_buffered(ctx) else ctx.constants


def compute_cycles(ctx: NpuContext, layer: NpuLayer, cfg: BlockConfig) -> float:
    """The MAC engine and output unit's cycles for the layer (see the module docstring), never
    under the MAC engine's peak."""
    return max(_compute_cycles(ctx, layer, cfg), layer.macs / ctx.accelerator.macs)


def _compute_cycles(ctx: NpuContext, layer: NpuLayer, cfg: BlockConfig) -> float:
    acc = ctx.accelerator
    rate = _output_rate(acc, layer)
    if layer.kind == "dma":
        return 0.0
    if layer.kind == "elementwise":
        per_block = cfg.ofm.elements
        cmd = (_block_latency(ctx, layer, cfg) + rate * per_block) / 4
        rate = max(rate, cmd / per_block)
        return math.ceil(rate * layer.ofm.elements)
    dpu = _dpu_block_cycles(acc, layer, cfg)
    ofm_block = Block(min(layer.ofm.w, cfg.ofm.w), min(layer.ofm.h, cfg.ofm.h), min(layer.ofm.d, cfg.ofm.d))
    out = math.ceil(rate * ofm_block.elements)
    if layer.bias_channels:  # the block's scales/biases, read from where the weights are staged
        out = max(out, 10 * ofm_block.d * _weights_source(ctx).read_latency / 256)
    cmd = (_block_latency(ctx, layer, cfg) + out + dpu) / 4
    dpu, out = max(dpu, cmd), max(out, cmd)
    blocks = (
        _ceil(layer.ofm.w, ofm_block.w) * _ceil(layer.ofm.h, ofm_block.h) * _ceil(layer.ofm.d, ofm_block.d)
    )
    return max(dpu, out) * blocks + min(dpu, out)


# --- memory ----------------------------------------------------------------------------------


def _burst_penalty(m: Memory, tensor: Block, block: Block, *, read: bool, cores: int = 1) -> float:
    """memory burst / bytes moved per burst, for an NHWC tensor moved in ``block``s: as Vela's
    legacy model counts it, a read moves one block depth of bytes per burst, a write
    ``min(64, 16 · cores, block depth)`` bytes (a one-channel block moves its whole row)."""
    if block.d == 1:
        contiguous = block.w
    elif read:
        contiguous = block.d
    else:
        contiguous = min(64, 16 * cores, block.d)
    contiguous = min(m.burst_length, max(1, contiguous))
    return m.burst_length / contiguous


def _traffic(ctx: NpuContext, layer: NpuLayer, cfg: BlockConfig) -> dict[str, tuple[Memory, float]]:
    """(memory, bytes as fetched) per tensor role; burst penalties included."""
    arena, const, fast = ctx.feature_map(layer.ifm_io), ctx.constants, ctx.fast
    out_mem = ctx.feature_map(layer.ofm_io)
    out: dict[str, tuple[Memory, float]] = {}
    if layer.kind == "dma":
        out["copy_read"] = (arena, float(layer.copy_bytes))
        out["copy_write"] = (out_mem, float(layer.copy_bytes))
        return out
    ofm, cores = layer.ofm, ctx.accelerator.cores
    # feature maps between NPU ops are NHCWB16 (depth stored in bricks of 16), a delegate's
    # inputs and outputs NHWC; bursts as regor's EstimateMemoryTransfer counts them
    ifm_depth = layer.ifm.d if layer.ifm_io else _round_up(layer.ifm.d, 16)
    ofm_elements = ofm.w * ofm.h * (ofm.d if layer.ofm_io else _round_up(ofm.d, 16))
    out["ofm"] = (out_mem, transfer(out_mem, layer.ofm_io, False, cfg.ofm, ofm, cores, ofm_elements))
    if layer.kind == "elementwise":
        reads = ofm.w * ofm.h * ifm_depth * (2 if layer.ifm2 is not None and layer.ifm2.elements > 1 else 1)
        out["ifm"] = (arena, transfer(arena, layer.ifm_io, True, cfg.ifm, layer.ifm, cores, reads))
        return out
    blocks = (_ceil(ofm.w, cfg.ofm.w), _ceil(ofm.h, cfg.ofm.h), _ceil(ofm.d, cfg.ofm.d))
    z_blocks = 1 if layer.kind in ("depthwise", "avg_pool", "max_pool") else blocks[2]
    subkernels = _ceil(layer.kernel[0], SUB_KERNEL_MAX[0]) * _ceil(layer.kernel[1], SUB_KERNEL_MAX[1])
    ifm_area = min(cfg.ifm.w, layer.ifm.w) * min(cfg.ifm.h, layer.ifm.h)
    ifm_bytes = ifm_area * ifm_depth * subkernels * blocks[0] * blocks[1] * z_blocks
    out["ifm"] = (arena, transfer(arena, layer.ifm_io, True, cfg.ifm, layer.ifm, cores, ifm_bytes))
    if layer.weights_bytes or layer.bias_channels:
        stream = layer.weights_bytes + BIAS_BYTES_PER_CHANNEL * layer.bias_channels
        out["weights"] = (const, float(stream))
        if _weights_buffered(ctx):  # buffered into SRAM by DMA, then read once per OFM block column
            out["weights_buffer_write"] = (fast, float(stream))
            out["weights_buffer_read"] = (fast, float(stream * max(1, blocks[0] * blocks[1])))
        elif blocks[0] * blocks[1] > 1:
            out["weights_refetch"] = (const, float(stream * (blocks[0] * blocks[1] - 1)))
    return out


def layer_cycles(ctx: NpuContext, layer: NpuLayer) -> LayerCycles:
    """The layer's compute, per-memory access cycles and total (see the module docstring); an
    Ethos-U85 layer follows isa_models.ethos_u.u85 (Vela's regor model for U85)."""
    if ctx.accelerator.family == "u85":
        from isa_models.ethos_u import u85

        return u85.layer_cycles(ctx, layer)
    cfg = choose_block(ctx.accelerator, layer)
    compute = compute_cycles(ctx, layer, cfg)
    memory: dict[str, float] = {}
    moved: dict[str, float] = {}
    for m, nbytes in _traffic(ctx, layer, cfg).values():
        memory[m.kind] = memory.get(m.kind, 0.0) + nbytes / ctx.bytes_per_cycle(m)
        moved[m.kind] = moved.get(m.kind, 0.0) + nbytes
    if layer.kind == "dma":  # a copy reads and writes the same port: its time is the transfer
        compute = 0.0
    fill = ctx.feature_map(layer.ifm_io).read_latency + ctx.feature_map(layer.ofm_io).write_latency
    return LayerCycles(compute=compute, memory=memory, bytes=moved, fill=fill, block=cfg)


__all__ = [
    "BIAS_BYTES_PER_CHANNEL",
    "KINDS",
    "BlockConfig",
    "LayerCycles",
    "NpuContext",
    "NpuLayer",
    "choose_block",
    "compute_cycles",
    "layer_cycles",
]

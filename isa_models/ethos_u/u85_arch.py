"""Ethos-U85 configurations as Vela 5.1's C++ core (regor) defines them, one frozen table.

Per MAC count: cores, the OFM micro-blocks the MAC engine can run (w x h x channels; which
hardware ops each takes with an 8-bit or 32-bit IFM: :data:`UBLOCK_OPS`), the IFM allocation
units per micro-block, the IFM, accumulator, chaining and output buffer RAM sizes, the read
buffers per AXI channel, and the output/activation unit's cycles per OFM element.

Source: regor ``architecture/ethosu85/ethos_u85.cpp`` (``s_EthosU85Configs``,
``s_EthosU85PerfInfo``, ``SetupOfmUBlockToOpTable``, ``SetupOfmUBlockToIfmAuTable``), read in the
public mirror hapv3/neural-compiler (ethosu/regor) — Arm's facts, restated as named fields. One
difference: Vela 5.1.0's elementwise blocks on the single-layer sweep (all five configurations,
benchmarks/results/ethos_u85_sweep.json) fit chaining and output buffers of the sizes the mirror
gives the other way round (output 2/2/4/4/8 KiB, chaining 768 B/1.5/3/6/12 KiB); the table
follows Vela.
"""

from __future__ import annotations

from dataclasses import dataclass

from isa_models.ethos_u.arch import Block

ACC_DEPTH_GRANULE = 16
OFM_SPLIT_DEPTH = 16
SUB_KERNEL_MAX = (8, 8)
SCALE_BYTES_PER_CHANNEL = 10
OFM_BLOCK_MAX = Block(128, 128, 1024)  # w, h, d
CB_SLOTS = 6  # chaining-buffer slots
BRICK_ELEMENTS = 16  # channels per chaining-buffer brick


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
                  8192, 8192, 768, 2048, ChannelBuffers(64, 64, 128, 128, 104, 16), 0.5, 0.5, 0.5, 0.5),
        U85Config(256, 1, (Block(2, 1, 16), Block(4, 1, 8), Block(2, 2, 8)), (_AU_A, _AU_B, _AU_A),
                  16384, 16384, 1536, 2048, ChannelBuffers(104, 104, 128, 128, 128, 16), 0.25, 0.25, 0.25, 0.25),
        U85Config(512, 2, (Block(2, 2, 16), Block(4, 1, 16)), (_AU_A, _AU_B),
                  16384, 32768, 3072, 4096, ChannelBuffers(128, 128, 256, 256, 128, 16), 0.125, 0.125, 0.125, 0.125),
        U85Config(1024, 4, (Block(2, 2, 32), Block(4, 1, 32), Block(4, 2, 16)), (_AU_C, _AU_D, _AU_C),
                  16384, 65536, 6144, 4096, ChannelBuffers(256, 256, 416, 208, 256, 16), 0.0625, 0.125, 0.0625, 0.0625),
        U85Config(2048, 4, (Block(2, 2, 64), Block(4, 1, 64), Block(4, 4, 16)), (_AU_E, _AU_F, _AU_E),
                  32768, 131072, 12288, 8192, ChannelBuffers(256, 256, 512, 256, 256, 16), 0.03125, 0.0625, 0.0625,
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


def ceil_div(a: float, b: float) -> int:
    return -(-int(a) // int(b))


def round_up(a: int, b: int) -> int:
    return ceil_div(a, b) * b


def round_down(a: int, b: int) -> int:
    return (a // b) * b


__all__ = [
    "ACC_DEPTH_GRANULE",
    "BRICK_ELEMENTS",
    "CB_SLOTS",
    "OFM_BLOCK_MAX",
    "OFM_SPLIT_DEPTH",
    "SCALE_BYTES_PER_CHANNEL",
    "SUB_KERNEL_MAX",
    "U85_CONFIGS",
    "UBLOCK_OPS",
    "UBLOCK_OPS_32",
    "ChannelBuffers",
    "U85Config",
    "ceil_div",
    "round_down",
    "round_up",
]

"""Ethos-U accelerator configurations: the MAC engine each one has, as one frozen table.

Every configuration Vela accepts for ``--accelerator-config`` (ethos-u55-32 ... ethos-u85-2048)
is an :class:`Accelerator` in :data:`ACCELERATORS`. Its MAC engine is a grid of dot-product
units: one *micro-block* of ``ofm_ublock.w x ofm_ublock.h`` output positions by
``ofm_ublock.d`` output channels, each lane an 8-deep int8 dot product, so

    macs_per_cycle = ofm_ublock.w * ofm_ublock.h * ofm_ublock.d * 8 * cores

Blocks of the output (OFM) are computed one after the other from blocks of the input held in
the shared buffer (SHRAM, ``shram_banks`` banks of 1 KiB), double-buffered with the
accumulators; isa_models.ethos_u.layers searches the block configurations that fit it. The output
unit writes ``output_rates`` cycles per element (by kind of operation) and the activation
unit ``activation_rates`` (LUT, ReLU-like clamp, none).

Sources. Ethos-U55/U65: Vela 5.1.0's ``architecture_features.py`` (``accelerator_configs``,
``_generate_output_perf_tables``, SHRAM granules, AXI port widths: 8 bytes/cycle on U55, 16 on
U65) — the facts are Arm's, the values are restated here as named fields. Ethos-U85: Vela 5.1.0
models U85 with its C++ core (regor), whose engine is not this banked-SHRAM one: its tables
(micro-blocks per op, IFM/accumulator RAMs, rates) are isa_models.ethos_u.u85_arch and its layer
cycles isa_models.ethos_u.u85. The U85 rows here carry the configuration's name, MAC count, cores
(regor: 1, 1, 2, 4, 4), convolution micro-block and 16-byte AXI width; their SHRAM, output-rate
and activation-rate fields are not used (``regor=True``).
"""

from __future__ import annotations

from dataclasses import dataclass

from isa_models.errors import UnknownNameError


@dataclass(frozen=True)
class Block:
    """A block of a feature map: width, height, depth (channels)."""

    w: int
    h: int
    d: int

    @property
    def elements(self) -> int:
        return self.w * self.h * self.d


@dataclass(frozen=True)
class Granules:
    """SHRAM bank granularity (banks) per buffer kind (Vela ``shram_granules``)."""

    ifm8: int
    ifm16: int
    ifm8_elementwise: int
    ifm16_elementwise: int
    ifm32: int
    acc16: int
    acc32: int
    acc40: int


@dataclass(frozen=True)
class OutputRates:
    """Output-unit cycles per OFM element, by operation (Vela ``output_cycles_per_elem``)."""

    unary_32bit: float  # elementwise op on 32-bit inputs, one operand
    binary_32bit: float  # elementwise op on 32-bit inputs, two operands
    mul_32bit_out: float  # multiply with a 32-bit result
    mac_40bit_or_mul: float  # multiply, or a MAC op accumulating in 40 bits
    simple_add: float
    advanced_add: float  # add/sub with rescaling (what int8 add needs)
    max_pool: float
    default: float  # convolution, depthwise, vector product, avg pool with 32-bit accumulators


@dataclass(frozen=True)
class ActivationRates:
    """Activation-unit cycles per OFM element (Vela ``activation_cycles_per_elem``)."""

    lut: float  # sigmoid, tanh, table lookup
    clamp: float  # ReLU, ReLU6, ReLU-N1-to-1
    none: float


@dataclass(frozen=True)
class Accelerator:
    """One Ethos-U configuration (see the module docstring for the formula and sources)."""

    name: str
    family: str  # "u55", "u65", "u85"
    macs: int  # MACs per cycle of the whole configuration
    cores: int
    ofm_ublock: Block
    ifm_ublock: Block
    shram_banks: int
    granules: Granules
    elementwise_units: int
    output_rates: OutputRates
    activation_rates: ActivationRates
    axi_bytes_per_cycle: float  # one AXI port's data width
    ofm_block_max: Block = Block(64, 32, 128)
    regor: bool = False  # True for the U85 rows: costed by isa_models.ethos_u.u85 (module docstring)

    @property
    def shram_reserved_end_banks(self) -> int:
        return 2 if self.shram_banks > 16 else 0

    @property
    def shram_usable_banks(self) -> int:
        return self.shram_banks - self.shram_reserved_end_banks


_G24 = Granules(4, 4, 4, 4, 8, 4, 8, 12)
_G48 = Granules(8, 8, 8, 8, 16, 8, 16, 20)
_G16_64 = Granules(2, 2, 2, 2, 4, 4, 4, 8)
_G16_32 = Granules(2, 2, 2, 2, 4, 4, 4, 4)

_OUT_32 = OutputRates(2.0, 3.0, 3.0, 3.0, 4.0, 6.0, 1.0, 2.0)
_OUT_64 = OutputRates(1.0, 1.5, 1.5, 1.5, 2.0, 3.0, 0.5, 1.0)
_OUT_128 = OutputRates(0.75, 1.25, 0.75, 0.75, 1.0, 1.5, 0.25, 0.5)
_OUT_256 = OutputRates(0.625, 1.125, 0.5, 0.375, 0.5, 0.75, 0.125, 0.25)
_OUT_512 = OutputRates(0.3125, 0.5625, 0.25, 0.1875, 0.25, 0.375, 0.0625, 0.125)


def _halved(r: OutputRates, times: int) -> OutputRates:
    f = 0.5**times
    return OutputRates(*(getattr(r, n) * f for n in OutputRates.__dataclass_fields__))


_ACT_SMALL = ActivationRates(1.0, 1.0, 0.0)
_ACT_128 = ActivationRates(1.0, 0.5, 0.0)
_ACT_256 = ActivationRates(1.0, 0.25, 0.0)
_ACT_512 = ActivationRates(0.5, 0.125, 0.0)


def _u55(macs: int, ublock: Block, ifm: Block, banks: int, g: Granules, units: int, out, act) -> Accelerator:
    return Accelerator(f"ethos-u55-{macs}", "u55", macs, 1, ublock, ifm, banks, g, units, out, act, 8.0)


def _u85(macs: int, cores: int, ublock: Block, ifm: Block, banks: int, g: Granules, out, act) -> Accelerator:
    return Accelerator(
        f"ethos-u85-{macs}", "u85", macs, cores, ublock, ifm, banks, g, max(4, macs // 32), out, act, 16.0,
        regor=True,
    )  # fmt: skip


#: Every configuration by its Vela name.
ACCELERATORS: dict[str, Accelerator] = {
    a.name: a
    for a in (
        _u55(32, Block(1, 1, 4), Block(1, 1, 8), 16, _G16_32, 1, _OUT_32, _ACT_SMALL),
        _u55(64, Block(1, 1, 8), Block(1, 1, 8), 16, _G16_64, 2, _OUT_64, _ACT_SMALL),
        _u55(128, Block(2, 1, 8), Block(2, 1, 8), 24, _G24, 4, _OUT_128, _ACT_128),
        _u55(256, Block(2, 2, 8), Block(2, 2, 8), 48, _G48, 8, _OUT_256, _ACT_256),
        Accelerator("ethos-u65-256", "u65", 256, 1, Block(2, 2, 8), Block(2, 2, 8), 48, _G48, 8,
                    _OUT_256, _ACT_256, 16.0),
        Accelerator("ethos-u65-512", "u65", 512, 2, Block(2, 2, 8), Block(2, 2, 8), 48, _G48, 8,
                    _OUT_512, _ACT_512, 16.0),
        _u85(128, 1, Block(2, 1, 8), Block(2, 1, 8), 24, _G24, _OUT_128, _ACT_128),
        _u85(256, 1, Block(2, 2, 8), Block(2, 2, 8), 48, _G48, _OUT_256, _ACT_256),
        _u85(512, 2, Block(2, 2, 16), Block(2, 2, 16), 96, _G48, _OUT_512, _ACT_512),
        _u85(1024, 4, Block(2, 2, 32), Block(2, 4, 16), 96, _G48, _halved(_OUT_512, 1), _ACT_512),
        _u85(2048, 4, Block(2, 2, 64), Block(4, 4, 16), 96, _G48, _halved(_OUT_512, 2), _ACT_512),
    )
}  # fmt: skip


def get_accelerator(name: str) -> Accelerator:
    """The configuration named ``name`` (``ethos-u55-128``, ...); a one-line error otherwise."""
    key = name.lower().replace("_", "-")
    if key not in ACCELERATORS:
        raise UnknownNameError("Ethos-U configuration", name, tuple(ACCELERATORS))
    return ACCELERATORS[key]


def _check() -> None:
    for a in ACCELERATORS.values():
        u = a.ofm_ublock  # regor's micro-block spans every core; the legacy one is per core
        assert u.w * u.h * u.d * 8 * (1 if a.regor else a.cores) == a.macs, a.name


_check()

__all__ = [
    "ACCELERATORS",
    "Accelerator",
    "ActivationRates",
    "Block",
    "Granules",
    "OutputRates",
    "get_accelerator",
]

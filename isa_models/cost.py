"""The typed result of every cost formula: ``Cost``, which adds.

    Cost(macs=m, instructions=i, cycles=c, bytes_read={"sram": r}, bytes_written={"sram": w})

``instructions`` and ``cycles`` are floats (a formula evaluates fitted coefficients; the
table rounds them), ``macs`` an int. ``bytes_read`` / ``bytes_written`` map a memory name
(``"sram"``, ``"flash"``, ...) to bytes. ``estimated`` is False for a placeholder that carries
no estimate (an op without a formula): adding it to a real cost keeps the total's flag False,
so a report can never show a silent zero as if it were measured. ``sources`` names what the
numbers rest on (a calibration file, a rule of thumb), for reports.
"""

# No ``from __future__ import annotations`` here: typing.NamedTuple compiles every string
# annotation into a ForwardRef at import (~10 µs a field), which the estimate's cold start pays.
from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple


def _merge(a: Mapping[str, int], b: Mapping[str, int]) -> Mapping[str, int]:
    if not b:
        return a
    if not a:
        return b
    out = dict(a)
    for key, value in b.items():
        out[key] = out.get(key, 0) + value
    return MappingProxyType(out)


class Cost(NamedTuple):
    """What one call (or a sum of calls) costs on one core: MACs, instructions, cycles, bytes."""

    macs: int = 0
    instructions: float = 0.0
    cycles: float = 0.0
    bytes_read: Mapping[str, int] = MappingProxyType({})
    bytes_written: Mapping[str, int] = MappingProxyType({})
    estimated: bool = True
    sources: tuple[str, ...] = ()

    def __add__(self, other: "Cost") -> "Cost":
        if not isinstance(other, Cost):
            return NotImplemented
        return Cost(
            macs=self.macs + other.macs,
            instructions=self.instructions + other.instructions,
            cycles=self.cycles + other.cycles,
            bytes_read=_merge(self.bytes_read, other.bytes_read),
            bytes_written=_merge(self.bytes_written, other.bytes_written),
            estimated=self.estimated and other.estimated,
            sources=tuple(dict.fromkeys(self.sources + other.sources)),
        )

    def __radd__(self, other: object) -> "Cost":
        if other == 0:  # sum() starts from 0
            return self
        return NotImplemented  # type: ignore[return-value]

    def scaled(self, times: int) -> "Cost":
        """``times`` repetitions of this cost (a kernel called once per batch row, ...)."""
        return Cost(
            macs=self.macs * times,
            instructions=self.instructions * times,
            cycles=self.cycles * times,
            bytes_read=MappingProxyType({k: v * times for k, v in self.bytes_read.items()}),
            bytes_written=MappingProxyType({k: v * times for k, v in self.bytes_written.items()}),
            estimated=self.estimated,
            sources=self.sources,
        )

    @property
    def cycles_per_mac(self) -> float | None:
        return self.cycles / self.macs if self.macs else None


#: The cost of something the model has no estimate for; reports show "no estimate".
NO_ESTIMATE = Cost(estimated=False)


__all__ = ["NO_ESTIMATE", "Cost"]

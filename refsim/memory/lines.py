"""A memory budget as lines: what, how many bytes, where the number comes from."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Line:
    """One line of a RAM or flash budget.

    ``bytes`` is None when the number could not be measured (``source`` says why). A line with
    ``part_of`` set details a line above it and is not added to the total again.
    """

    section: str  # "ram" or "flash"
    name: str
    bytes: int | None
    source: str
    part_of: str | None = None

    def to_json(self) -> dict:
        return asdict(self)


def total(lines: list[Line], section: str) -> int:
    """Sum of the top-level lines of ``section`` that have a number."""
    return sum(
        ln.bytes for ln in lines if ln.section == section and ln.part_of is None and ln.bytes is not None
    )


def unmeasured(lines: list[Line], section: str) -> list[str]:
    return [ln.name for ln in lines if ln.section == section and ln.part_of is None and ln.bytes is None]

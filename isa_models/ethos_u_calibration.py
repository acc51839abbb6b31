"""Placeholder until ``benchmarks/ethos_u.py --calibrate`` writes the fitted table."""

EFFICIENCY: dict[str, dict[str, float]] = {}

__all__ = ["EFFICIENCY"]

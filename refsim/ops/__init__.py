"""Operator implementations, registered by their .pte names (see registry.py)."""

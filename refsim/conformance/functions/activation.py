"""Conformance adapters for kernels_py.activation (to be written)."""

"""Conformance adapters for kernels_py.layout (to be written)."""

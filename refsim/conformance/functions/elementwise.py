"""Conformance adapters for kernels_py.elementwise (to be written)."""

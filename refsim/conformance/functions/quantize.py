"""Conformance adapters for kernels_py.quantize (to be written)."""

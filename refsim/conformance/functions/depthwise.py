"""Conformance adapters for kernels_py.depthwise (to be written)."""

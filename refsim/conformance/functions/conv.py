"""Conformance adapters for kernels_py.conv (to be written)."""

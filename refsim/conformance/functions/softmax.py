"""Conformance adapters for kernels_py.softmax (to be written)."""

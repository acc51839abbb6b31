"""Conformance adapters for kernels_py.fully_connected (to be written)."""

"""Conformance adapters for kernels_py.pooling (to be written)."""

"""Conformance vectors: CMSIS-NN-API test cases checked against the golden model.

The vector format is a contract (``docs/conformance.md``): one ``.npz`` per case under a
directory named after the CMSIS-NN function. :mod:`refsim.conformance.registry` maps each
function name to an adapter that runs it with kernels_py and generates random cases.
"""

"""Every intermediate tensor of one execution, as the device holds it (``refsim run
--dump-tensors FILE.npz``), so a user can find the first layer where two runtimes part.

Memory-planned tensors share arena bytes once their lifetimes end, so the values cannot be read
after the run: a trace hook copies every non-constant tensor argument of each KernelCall right
after the call, when it is live by construction (an input is live while a call reads it, an
output has just been written). A value touched by several calls keeps its last copy (a
mutable buffer's final content). Keys are the value indices of the execution plan (as
``refsim inspect`` numbers them); each array is the tensor's bytes in memory order — its
``sizes`` permuted by its ``dim_order``, NHWC for a channels-last tensor — exactly what
CMSIS-NN reads and writes. Constants (weights, biases, multipliers) are left out: they are in
the file; so are CMSIS-NN scratch buffers (``scratch`` arguments), whose contents the golden
kernels do not model.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from refsim.runtime.describe import scratch_values
from refsim.runtime.program import BoundCall, Method
from refsim.runtime.tensor import TensorRef


def dump_tensors(method: Method, inputs: Sequence[np.ndarray | int | float | bool]) -> dict[str, np.ndarray]:
    """Run ``method`` on ``inputs`` and return ``{str(value index): memory-order copy}`` of every
    non-constant tensor a KernelCall read or wrote (module docstring)."""
    captured: dict[int, np.ndarray] = {}
    skip = scratch_values(method)  # CMSIS-NN's ctx buffers: their bytes are the library's business

    def trace(pc: int, call: BoundCall | None, phase: str) -> None:
        if phase != "after" or call is None:
            return
        for _, value in call.args.items():
            for t in value if isinstance(value, list) else [value]:
                if isinstance(t, TensorRef) and t.storage.flags.writeable and t.index not in skip:
                    captured[t.index] = t.storage.copy()

    method.execute(inputs, trace=trace)
    return {str(k): captured[k] for k in sorted(captured)}


__all__ = ["dump_tensors"]

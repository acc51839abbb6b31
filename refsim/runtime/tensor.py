"""A tensor as the runtime hands it to operators: storage bytes plus the logical view.

``storage`` is a numpy array over the tensor's bytes in memory order (``sizes`` permuted by
``dim_order``): for a 4-D tensor with dim_order ``(0, 2, 3, 1)`` that is NHWC, exactly the
array CMSIS-NN reads. ``logical`` is the same memory seen in the tensor's logical shape
(``sizes``), a transposed, non-copying view. Memory-planned tensors live in the method's
arenas, constants are read-only views of the program file.
"""

from __future__ import annotations

import numpy as np

from kernels_py.layout import channels_last_from_nchw
from refsim.pte import model as m

NHWC = (0, 2, 3, 1)
CONTIGUOUS4 = (0, 1, 2, 3)


class TensorRef:
    """One tensor value of a method: metadata plus views of its bytes."""

    __slots__ = ("index", "logical", "meta", "storage")

    def __init__(self, index: int, meta: m.Tensor, storage: np.ndarray) -> None:
        self.index = index
        self.meta = meta
        self.storage = storage
        inverse = tuple(int(i) for i in np.argsort(meta.dim_order)) if meta.dim_order else ()
        self.logical = storage.transpose(inverse) if inverse else storage

    @property
    def sizes(self) -> tuple[int, ...]:
        return self.meta.sizes

    @property
    def dim_order(self) -> tuple[int, ...]:
        return self.meta.dim_order

    @property
    def dtype(self) -> np.dtype:
        return self.storage.dtype

    @property
    def scalar_type(self) -> m.ScalarType:
        return self.meta.scalar_type

    @property
    def is_channels_last(self) -> bool:
        return self.meta.dim_order == NHWC

    def write(self, value: np.ndarray) -> None:
        """Store ``value`` given in logical shape (copies into the tensor's memory). An int8 NCHW value
        into a channels-last tensor goes through kernels_py.layout's row-wise copy: numpy's assignment
        to the transposed view walks C channels at a time with a plane-sized stride (VWW's 96x96x3
        input: 25-50 us per sample, against ~8)."""
        if self.meta.dim_order == NHWC and value.dtype == np.int8 and self.storage.dtype == np.int8:
            channels_last_from_nchw(np.ascontiguousarray(value.reshape(self.logical.shape)), self.storage)
        else:
            self.logical[...] = value

    def __repr__(self) -> str:
        return (
            f"TensorRef(value {self.index}, {self.meta.scalar_type.name.lower()} {list(self.sizes)}, "
            f"dim_order {list(self.dim_order)})"
        )

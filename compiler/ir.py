"""The lowered program before serialization: tensors, kernel calls, layer decisions.

The lowering (``compiler.lower``) turns a converted PT2E graph into a `Graph`; the emitter
(``compiler.emit``) gives every argument an EValue, every planned tensor an arena offset and
writes the .pte. Kernel-call arguments are Python values: `TensorArg` (a tensor by name),
``int``, ``float``, ``bool``, ``str``, ``tuple[int, ...]`` (an int list),
``tuple[TensorArg, ...]`` (a tensor list), ``None`` (a Null).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from refsim.pte.model import ScalarType

NCHW_AS_NHWC = (0, 2, 3, 1)


@dataclass(frozen=True)
class TensorArg:
    """A kernel-call argument that is a tensor of the graph, by name."""

    name: str


@dataclass
class TensorInfo:
    """One tensor. ``data`` set: a constant. ``alias_of`` set: a view of another tensor's bytes
    (same storage, other sizes). Otherwise memory-planned (activations, scratch, graph I/O).
    ``scale``/``zero_point`` are the int8 quantization of an activation."""

    name: str
    dtype: ScalarType
    sizes: tuple[int, ...]
    dim_order: tuple[int, ...]
    data: np.ndarray | None = None
    alias_of: str | None = None
    scale: float | None = None
    zero_point: int | None = None

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.sizes, dtype=np.int64)) * self.dtype.itemsize

    @property
    def planned(self) -> bool:
        return self.data is None and self.alias_of is None


@dataclass(frozen=True)
class Call:
    """One ``cortex_m::``/``aten::`` kernel call: the op's qualified name (without the
    overload), its schema arguments in order, the out tensor, the scratch tensors among the
    args, the graph node it comes from, the overload name and, for ops with several outputs
    (``max_pool2d_with_indices``), the outputs after ``out``. A tuple of `TensorArg` is a
    TensorList argument."""

    op: str
    args: tuple
    out: str
    layer: str
    scratch: tuple[str, ...] = ()
    overload: str = "out"
    extra_outs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Layer:
    """What became of one node of the float graph, for the summary."""

    name: str
    op: str
    status: str  # "int8", "fp32", "fused", "folded", "view"
    detail: str = ""


@dataclass
class Graph:
    tensors: dict[str, TensorInfo] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    layers: list[Layer] = field(default_factory=list)

    def add(self, info: TensorInfo) -> str:
        base, k = info.name, 1
        while info.name in self.tensors:
            info.name = f"{base}_{k}"
            k += 1
        self.tensors[info.name] = info
        return info.name

    def storage(self, name: str) -> str:
        """The planned (or constant) tensor whose bytes ``name`` views."""
        while self.tensors[name].alias_of is not None:
            name = self.tensors[name].alias_of
        return name

    def constant_bytes(self) -> int:
        return sum(t.data.nbytes for t in self.tensors.values() if t.data is not None)

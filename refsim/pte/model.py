"""The ExecuTorch program as Python values: frozen dataclasses mirroring schema/program.fbs.

Names follow the schema's fields in snake_case; the EValue and Instruction unions become one
class per variant (`Tensor`, `Int`, ..., `KernelCall`, ...), each with a ``kind`` tag equal
to its union type number on the wire. Lists are tuples, so a `Program` is immutable and
comparable: the reader returns one, the writer takes one, and ``load(write(p)) == p``.

The container layout (extended header, segment table, constant offsets, the legacy inline
constant buffer) is not part of a `Program`: it belongs to the file, see
`refsim.pte.reader.ProgramFile`. Constant tensor data is addressed by ``data_buffer_idx``
(1-based; 0 means "no constant data") and handed to the writer separately.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from refsim.pte.errors import ProgramError

#: ExecuTorch's kTensorDimensionLimit: the largest rank its runtime accepts.
MAX_TENSOR_RANK = 16


class ScalarType(enum.IntEnum):
    """Element type of a tensor (c10::ScalarType numbering, as in schema/scalar_type.fbs)."""

    UINT8 = 0
    INT8 = 1
    INT16 = 2
    INT32 = 3
    INT64 = 4
    FLOAT16 = 5
    FLOAT32 = 6
    FLOAT64 = 7
    BOOL = 11
    QINT8 = 12
    QUINT8 = 13
    QINT32 = 14
    BFLOAT16 = 15
    QUINT4X2 = 16
    QUINT2X4 = 17
    BITS16 = 22
    FLOAT8_E5M2 = 23
    FLOAT8_E4M3FN = 24
    FLOAT8_E5M2FNUZ = 25
    FLOAT8_E4M3FNUZ = 26
    UINT16 = 27
    UINT32 = 28
    UINT64 = 29

    @property
    def itemsize(self) -> int:
        """Bytes per element, as ExecuTorch's elementSize() (packed sub-byte types count 1)."""
        return _ITEMSIZE[self]

    @property
    def numpy_dtype(self) -> np.dtype | None:
        """Little-endian numpy dtype holding one element, or None where numpy has none."""
        name = _NUMPY_DTYPE.get(self)
        return None if name is None else np.dtype(name)


_ITEMSIZE = {
    ScalarType.UINT8: 1,
    ScalarType.INT8: 1,
    ScalarType.INT16: 2,
    ScalarType.INT32: 4,
    ScalarType.INT64: 8,
    ScalarType.FLOAT16: 2,
    ScalarType.FLOAT32: 4,
    ScalarType.FLOAT64: 8,
    ScalarType.BOOL: 1,
    ScalarType.QINT8: 1,
    ScalarType.QUINT8: 1,
    ScalarType.QINT32: 4,
    ScalarType.BFLOAT16: 2,
    ScalarType.QUINT4X2: 1,
    ScalarType.QUINT2X4: 1,
    ScalarType.BITS16: 2,
    ScalarType.FLOAT8_E5M2: 1,
    ScalarType.FLOAT8_E4M3FN: 1,
    ScalarType.FLOAT8_E5M2FNUZ: 1,
    ScalarType.FLOAT8_E4M3FNUZ: 1,
    ScalarType.UINT16: 2,
    ScalarType.UINT32: 4,
    ScalarType.UINT64: 8,
}
_NUMPY_DTYPE = {
    ScalarType.UINT8: "u1",
    ScalarType.INT8: "i1",
    ScalarType.INT16: "<i2",
    ScalarType.INT32: "<i4",
    ScalarType.INT64: "<i8",
    ScalarType.FLOAT16: "<f2",
    ScalarType.FLOAT32: "<f4",
    ScalarType.FLOAT64: "<f8",
    ScalarType.BOOL: "?",
    ScalarType.QINT8: "i1",
    ScalarType.QUINT8: "u1",
    ScalarType.QINT32: "<i4",
    ScalarType.BITS16: "<u2",
    ScalarType.UINT16: "<u2",
    ScalarType.UINT32: "<u4",
    ScalarType.UINT64: "<u8",
}


class ShapeDynamism(enum.IntEnum):
    STATIC = 0
    DYNAMIC_BOUND = 1  # sizes are the upper bound
    DYNAMIC_UNBOUND = 2  # sizes carry no meaning


class TensorDataLocation(enum.IntEnum):
    SEGMENT = 0
    EXTERNAL = 1


class DeviceType(enum.IntEnum):
    CPU = 0
    CUDA = 1


class DataLocation(enum.IntEnum):
    INLINE = 0
    SEGMENT = 1


class ValueKind(enum.IntEnum):
    """EValue union tags (KernelTypes) as numbered on the wire; 0 is flatbuffers' NONE."""

    NULL = 1
    INT = 2
    BOOL = 3
    DOUBLE = 4
    TENSOR = 5
    STRING = 6
    INT_LIST = 7
    DOUBLE_LIST = 8
    BOOL_LIST = 9
    TENSOR_LIST = 10
    OPTIONAL_TENSOR_LIST = 11


class InstructionKind(enum.IntEnum):
    """Instruction union tags (InstructionArguments) as numbered on the wire."""

    KERNEL_CALL = 1
    DELEGATE_CALL = 2
    MOVE_CALL = 3
    JUMP_FALSE_CALL = 4
    FREE_CALL = 5


_frozen = dataclass(frozen=True, slots=True)

# -- tensors ---------------------------------------------------------------------------------


@_frozen
class Allocation:
    """A memory-planned tensor's place: byte ``offset`` in arena ``memory_id``."""

    memory_id: int
    offset: int


@_frozen
class ExtraTensorInfo:
    mutable_data_segments_idx: int = 0
    fully_qualified_name: str | None = None
    location: TensorDataLocation = TensorDataLocation.SEGMENT
    device_type: DeviceType = DeviceType.CPU
    device_index: int = 0


@_frozen
class Tensor:
    kind: ClassVar[ValueKind] = ValueKind.TENSOR

    scalar_type: ScalarType
    sizes: tuple[int, ...]
    dim_order: tuple[int, ...]
    data_buffer_idx: int = 0
    allocation: Allocation | None = None
    shape_dynamism: ShapeDynamism = ShapeDynamism.STATIC
    storage_offset: int = 0
    requires_grad: bool = False
    layout: int = 0
    extra: ExtraTensorInfo | None = None

    @property
    def numel(self) -> int:
        n = 1
        for size in self.sizes:
            n *= size
        return n

    @property
    def nbytes(self) -> int:
        return self.numel * self.scalar_type.itemsize

    @property
    def storage_shape(self) -> tuple[int, ...]:
        """Sizes in memory order (outermost first): e.g. NHWC for dim_order (0, 2, 3, 1)."""
        return tuple(self.sizes[d] for d in self.dim_order)

    @property
    def is_external(self) -> bool:
        return self.extra is not None and self.extra.location is TensorDataLocation.EXTERNAL

    @property
    def is_constant(self) -> bool:
        """Data in this file's constant segment (or legacy constant buffer)."""
        return self.data_buffer_idx > 0 and self.allocation is None and not self.is_external

    @property
    def is_memory_planned(self) -> bool:
        return self.allocation is not None


# -- the other EValue variants ---------------------------------------------------------------


@_frozen
class Null:
    kind: ClassVar[ValueKind] = ValueKind.NULL


@_frozen
class Int:
    kind: ClassVar[ValueKind] = ValueKind.INT
    value: int


@_frozen
class Bool:
    kind: ClassVar[ValueKind] = ValueKind.BOOL
    value: bool


@_frozen
class Double:
    kind: ClassVar[ValueKind] = ValueKind.DOUBLE
    value: float


@_frozen
class String:
    kind: ClassVar[ValueKind] = ValueKind.STRING
    value: str


@_frozen
class IntList:
    """A boxed int list: ``items`` are indices of `Int` values, not the ints themselves."""

    kind: ClassVar[ValueKind] = ValueKind.INT_LIST
    items: tuple[int, ...]


@_frozen
class DoubleList:
    kind: ClassVar[ValueKind] = ValueKind.DOUBLE_LIST
    items: tuple[float, ...]


@_frozen
class BoolList:
    kind: ClassVar[ValueKind] = ValueKind.BOOL_LIST
    items: tuple[bool, ...]


@_frozen
class TensorList:
    """``items`` are indices of earlier `Tensor` values."""

    kind: ClassVar[ValueKind] = ValueKind.TENSOR_LIST
    items: tuple[int, ...]


@_frozen
class OptionalTensorList:
    """``items`` are indices of earlier `Tensor` or `Null` values, or -1 for None."""

    kind: ClassVar[ValueKind] = ValueKind.OPTIONAL_TENSOR_LIST
    items: tuple[int, ...]


EValue = (
    Null
    | Int
    | Bool
    | Double
    | Tensor
    | String
    | IntList
    | DoubleList
    | BoolList
    | TensorList
    | OptionalTensorList
)
EVALUE_TYPES: dict[ValueKind, type] = {
    t.kind: t
    for t in (
        Null,
        Int,
        Bool,
        Double,
        Tensor,
        String,
        IntList,
        DoubleList,
        BoolList,
        TensorList,
        OptionalTensorList,
    )
}

# -- instructions ----------------------------------------------------------------------------


@_frozen
class KernelCall:
    """Call ``operators[op_index]`` with value indices ``args`` (schema args, out, return)."""

    kind: ClassVar[InstructionKind] = InstructionKind.KERNEL_CALL
    op_index: int
    args: tuple[int, ...]


@_frozen
class DelegateCall:
    kind: ClassVar[InstructionKind] = InstructionKind.DELEGATE_CALL
    delegate_index: int
    args: tuple[int, ...]


@_frozen
class MoveCall:
    kind: ClassVar[InstructionKind] = InstructionKind.MOVE_CALL
    move_from: int
    move_to: int


@_frozen
class JumpFalseCall:
    kind: ClassVar[InstructionKind] = InstructionKind.JUMP_FALSE_CALL
    cond_value_index: int
    destination_instruction: int


@_frozen
class FreeCall:
    kind: ClassVar[InstructionKind] = InstructionKind.FREE_CALL
    value_index: int


Instruction = KernelCall | DelegateCall | MoveCall | JumpFalseCall | FreeCall
INSTRUCTION_TYPES: dict[InstructionKind, type] = {
    t.kind: t for t in (KernelCall, DelegateCall, MoveCall, JumpFalseCall, FreeCall)
}

# -- plans and program -----------------------------------------------------------------------


@_frozen
class Frame:
    filename: str | None = None
    lineno: int = 0
    name: str | None = None
    context: str | None = None


@_frozen
class Chain:
    inputs: tuple[int, ...] = ()
    outputs: tuple[int, ...] = ()
    instructions: tuple[Instruction, ...] = ()
    #: One frame list per instruction, when the exporter emitted stack traces.
    stacktrace: tuple[tuple[Frame, ...], ...] | None = None


@_frozen
class Operator:
    name: str
    overload: str = ""

    @property
    def qualified_name(self) -> str:
        """The op registry key, e.g. ``cortex_m::quantized_conv2d.out``."""
        return f"{self.name}.{self.overload}" if self.overload else self.name


@_frozen
class CompileSpec:
    key: str
    value: bytes


@_frozen
class BackendDelegate:
    id: str
    location: DataLocation
    #: Index into Program.backend_delegate_data (INLINE) or the file's segments (SEGMENT).
    index: int
    compile_specs: tuple[CompileSpec, ...] = ()


@_frozen
class ContainerMetadata:
    encoded_inp_str: str = ""
    encoded_out_str: str = ""


@_frozen
class NonConstBufferDevice:
    buffer_idx: int
    device_type: DeviceType = DeviceType.CPU
    device_index: int = 0


@_frozen
class ExecutionPlan:
    """One method. ``non_const_buffer_sizes[m]`` is the size of arena ``m`` (entry 0 reserved)."""

    name: str
    values: tuple[EValue, ...] = ()
    inputs: tuple[int, ...] = ()
    outputs: tuple[int, ...] = ()
    chains: tuple[Chain, ...] = ()
    operators: tuple[Operator, ...] = ()
    delegates: tuple[BackendDelegate, ...] = ()
    non_const_buffer_sizes: tuple[int, ...] = (0,)
    container_meta_type: ContainerMetadata | None = None
    non_const_buffer_device: tuple[NonConstBufferDevice, ...] | None = None


@_frozen
class SubsegmentOffsets:
    """Byte offsets into segment ``segment_index``; ``offsets[0]`` is reserved."""

    segment_index: int
    offsets: tuple[int, ...]


@_frozen
class NamedData:
    key: str
    segment_index: int


@_frozen
class Program:
    """A program's content. Segment indices (in ``mutable_data_segments``, ``named_data`` and
    SEGMENT delegates) refer to the file's segment table, where refsim's writer puts the
    constant segment first (index 0) and the caller's extra segments after it."""

    execution_plan: tuple[ExecutionPlan, ...]
    version: int = 0
    backend_delegate_data: tuple[bytes, ...] = ()
    mutable_data_segments: tuple[SubsegmentOffsets, ...] = ()
    named_data: tuple[NamedData, ...] = ()

    def plan(self, name: str) -> ExecutionPlan:
        """The execution plan (method) called ``name``."""
        for plan in self.execution_plan:
            if plan.name == name:
                return plan
        names = ", ".join(repr(p.name) for p in self.execution_plan)
        raise ProgramError(f"no method named {name!r}; the program has {names or 'none'}")

"""What refsim needs of a .tflite model, as frozen dataclasses (schema 3, see schema.py).

Field names follow schema.fbs. Index fields (tensor, buffer, opcode, subgraph) are plain ints,
checked at load by validate.py; an operator input or output of -1 is an optional tensor left
out. Buffers hold zero-copy views of the file: a buffer's ``data`` vector, or the bytes
[offset, offset + size) after the flatbuffer when the model stores its weights there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from refsim.tflite.schema import BUILTIN_OPTIONS, BuiltinOperator, TensorType

#: The metadata entry whose buffer holds offline-planned arena offsets (TFLM's
#: micro_allocator.cc reads it as int32 words: version, subgraphs, n, offsets...).
OFFLINE_MEMORY_ALLOCATION = "OfflineMemoryAllocation"
#: Operator input/output index meaning "optional tensor absent" (kTfLiteOptionalTensor).
OPTIONAL_TENSOR = -1


@dataclass(frozen=True)
class OperatorCode:
    """``builtin_code`` is resolved as TFLite's GetBuiltinCode does: the larger of the
    ``builtin_code`` field and ``deprecated_builtin_code`` (older files set only the latter)."""

    builtin_code: BuiltinOperator
    custom_code: str | None = None
    version: int = 1
    #: As stored (None: the writer stores min(code, 127), as converters do); not compared.
    deprecated_builtin_code: int | None = field(default=None, compare=False)

    @property
    def name(self) -> str:
        if self.builtin_code == BuiltinOperator.CUSTOM:
            return f"CUSTOM({self.custom_code})"
        return self.builtin_code.name


@dataclass(frozen=True)
class Quantization:
    """Affine quantization: real = scale * (q - zero_point), per tensor (one scale) or per
    channel along ``quantized_dimension``. ``zero_point`` may hold one value for many scales
    (TFLM's micro_allocator.cc repeats it: weights' zero points are all 0)."""

    scale: tuple[float, ...] = ()
    zero_point: tuple[int, ...] = ()
    quantized_dimension: int = 0
    min: tuple[float, ...] = ()
    max: tuple[float, ...] = ()
    #: The QuantizationDetails union's type (0: none; else custom or blockwise quantization).
    details_type: int = 0

    @property
    def per_channel(self) -> bool:
        return len(self.scale) > 1


@dataclass(frozen=True)
class Tensor:
    shape: tuple[int, ...]
    type: TensorType
    buffer: int = 0
    name: str = ""
    quantization: Quantization | None = None
    is_variable: bool = False
    shape_signature: tuple[int, ...] | None = None
    #: A SparsityParameters table is present (read, not decoded: refsim runs no sparse tensor).
    sparse: bool = False

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int | None:
        """Bytes of the data as a buffer stores it (sub-byte types packed); None for strings,
        resources and variants."""
        bits = self.type.bits
        return None if bits is None else (self.numel * bits + 7) // 8


@dataclass(frozen=True)
class Operator:
    opcode_index: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    intermediates: tuple[int, ...] = ()
    #: The BuiltinOptions union's type number (0: none).
    builtin_options_type: int = 0
    #: The decoded options table (options.TABLES) of the builtins in options.OPTIONS_OF;
    #: None when the file has none or the builtin's options are not decoded.
    builtin_options: dict | None = field(default=None, hash=False)
    #: The custom options, from the operator's vector or from the file after the flatbuffer
    #: (``large_custom_options_offset``/``size``).
    custom_options: bytes = b""
    #: The BuiltinOptions2 union's type (StableHLO ops; the table is verified, not decoded).
    builtin_options_2_type: int = 0

    @property
    def builtin_options_name(self) -> str:
        t = self.builtin_options_type
        return BUILTIN_OPTIONS[t] if t < len(BUILTIN_OPTIONS) else f"unknown({t})"


@dataclass(frozen=True)
class SubGraph:
    tensors: tuple[Tensor, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    operators: tuple[Operator, ...]
    name: str = ""


@dataclass(frozen=True, eq=False)
class Buffer:
    """Constant bytes: a view of the ``data`` vector, or of the file at [offset, offset + size)."""

    data: memoryview = field(default_factory=lambda: memoryview(b""))
    #: > 1: the bytes lie at this offset from the start of the file (schema: "only valid if > 1").
    offset: int = 0
    size: int = 0

    @property
    def external(self) -> bool:
        return self.offset > 1

    def __eq__(self, other: object) -> bool:
        """Equal bytes are equal buffers, wherever the file stores them."""
        if not isinstance(other, Buffer):
            return NotImplemented
        return bytes(self.data) == bytes(other.data)

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True)
class Metadata:
    name: str
    buffer: int


@dataclass(frozen=True)
class SignatureDef:
    signature_key: str
    subgraph_index: int = 0
    #: (name, tensor index) pairs.
    inputs: tuple[tuple[str, int], ...] = ()
    outputs: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class Model:
    version: int
    operator_codes: tuple[OperatorCode, ...]
    subgraphs: tuple[SubGraph, ...]
    buffers: tuple[Buffer, ...]
    description: str = ""
    metadata: tuple[Metadata, ...] = ()
    signature_defs: tuple[SignatureDef, ...] = ()

    def opcode(self, op: Operator) -> OperatorCode:
        return self.operator_codes[op.opcode_index]

    def metadata_bytes(self, name: str) -> bytes | None:
        """The buffer of metadata entry ``name`` (the first of that name), or None."""
        for entry in self.metadata:
            if entry.name == name:
                return bytes(self.buffers[entry.buffer].data)
        return None

    @property
    def offline_memory_allocation(self) -> bytes | None:
        return self.metadata_bytes(OFFLINE_MEMORY_ALLOCATION)


__all__ = [
    "OFFLINE_MEMORY_ALLOCATION",
    "OPTIONAL_TENSOR",
    "Buffer",
    "Metadata",
    "Model",
    "Operator",
    "OperatorCode",
    "Quantization",
    "SignatureDef",
    "SubGraph",
    "Tensor",
]

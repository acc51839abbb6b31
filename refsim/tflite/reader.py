"""Load and validate a .tflite file: ``load_model(path_or_bytes) -> ModelFile``.

Everything is checked at load, in two layers, each failure a `ModelError` naming the field
path: the flatbuffer structure (file identifier, every offset, vtable, vector and string, by
the same bounds-checked reader as the .pte side, refsim/pte/_flatbuf.py, which applies the C++
``flatbuffers::Verifier`` rules that TFLite and TFLM run on a model), then the model's meaning
(schema version, indices, buffers, shapes, quantization, options; see validate.py). A corrupt
file raises nothing else: no IndexError, struct.error or RecursionError, and nothing is
allocated in proportion to a size the file claims before that size is checked against the
file.

Constant data is never copied: `ModelFile.constant_data` returns read-only numpy views of the
file (an mmap when loaded from a path).
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass, field

import numpy as np

from refsim.errors import UnsupportedError
from refsim.pte._flatbuf import FlatReader, Table, join
from refsim.tflite import model as m
from refsim.tflite import schema as s
from refsim.tflite.errors import ModelError
from refsim.tflite.options import TABLES
from refsim.tflite.validate import validate_model

#: Root offset and file identifier.
MIN_FILE_SIZE = 8


@dataclass(frozen=True, eq=False)
class ModelFile:
    """A loaded, validated .tflite file: the `Model` and its constants as views of the file."""

    model: m.Model
    data: memoryview = field(repr=False)

    def constant_bytes(self, tensor: m.Tensor) -> memoryview | None:
        """The bytes of a constant tensor (None: the tensor has no data in the file)."""
        if tensor.buffer >= len(self.model.buffers):  # buffer 0 of a model without buffers
            return None
        data = self.model.buffers[tensor.buffer].data
        return data if len(data) else None

    def constant_data(self, tensor: m.Tensor) -> np.ndarray | None:
        """A constant tensor's data, a read-only numpy view of the file shaped as the tensor."""
        raw = self.constant_bytes(tensor)
        if raw is None:
            return None
        dtype = tensor.type.numpy_dtype
        if dtype is None:
            raise UnsupportedError(f"constant of type {tensor.type.name}: numpy has no such dtype")
        array = np.frombuffer(raw, dtype=dtype).reshape(tensor.shape)
        array.flags.writeable = False
        return array


def load_model(source: str | os.PathLike | bytes | bytearray | memoryview) -> ModelFile:
    """Load and validate a .tflite from a path (memory-mapped) or from bytes.

    Raises ModelError, whose message starts with the path of the failing field."""
    if isinstance(source, str | os.PathLike):
        data = _map_file(source)
    else:
        data = memoryview(source).cast("B")
    return _load(data)


def _map_file(path: str | os.PathLike) -> memoryview:
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                raise ModelError(f"{os.fspath(path)}: the file is empty")
            return memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
    except OSError as e:
        raise ModelError(f"cannot read {os.fspath(path)}: {e.strerror}") from None


def _load(data: memoryview) -> ModelFile:
    size = len(data)
    if size < MIN_FILE_SIZE:
        raise ModelError(f"{size} bytes is too short for a .tflite file (at least {MIN_FILE_SIZE})")
    identifier = bytes(data[4:8])
    if identifier != s.FILE_IDENTIFIER:
        raise ModelError(f"expected {s.FILE_IDENTIFIER!r}, found {identifier!r}", "file_identifier")
    if size >= 1 << 31:
        raise ModelError(f"{size} bytes: a flatbuffer model must be smaller than 2 GiB")
    root = FlatReader(data, size, error=ModelError).root()
    model = _decode_model(root, data)
    validate_model(model)
    return ModelFile(model=model, data=data)


# -- flatbuffer -> model -----------------------------------------------------------------------


def _enum(enum_type, raw: int, path: str):
    try:
        return enum_type(raw)
    except ValueError:
        raise ModelError(f"unknown {enum_type.__name__} {raw}", path) from None


def _required(value, path: str):
    if value is None:
        raise ModelError("required field is missing", path)
    return value


def _decode_model(t: Table, data: memoryview) -> m.Model:
    M = s.Model
    version = t.scalar(M.version, "u32", "version")
    if version != s.SCHEMA_VERSION:
        raise ModelError(f"schema version {version}, expected {s.SCHEMA_VERSION}", "version")
    return m.Model(
        version=version,
        operator_codes=tuple(_opcode(c) for c in t.tables(M.operator_codes, "operator_codes") or ()),
        subgraphs=tuple(
            _subgraph(g, data) for g in _required(t.tables(M.subgraphs, "subgraphs"), "subgraphs")
        ),
        buffers=tuple(_buffer(b, data) for b in t.tables(M.buffers, "buffers") or ()),
        description=t.string(M.description, "description") or "",
        metadata=tuple(
            m.Metadata(
                name=e.string(s.Metadata.name, "name") or "",
                buffer=e.scalar(s.Metadata.buffer, "u32", "buffer"),
            )
            for e in t.tables(M.metadata, "metadata") or ()
        ),
        signature_defs=tuple(_signature(d) for d in t.tables(M.signature_defs, "signature_defs") or ()),
    )


def _opcode(t: Table) -> m.OperatorCode:
    C = s.OperatorCode
    deprecated = t.scalar(C.deprecated_builtin_code, "i8", "deprecated_builtin_code")
    extended = t.scalar(C.builtin_code, "i32", "builtin_code")
    # schema_utils.cc GetBuiltinCode: the larger of the two fields.
    code = _enum(s.BuiltinOperator, max(deprecated, extended), join(t.path, "builtin_code"))
    return m.OperatorCode(
        builtin_code=code,
        custom_code=t.string(C.custom_code, "custom_code"),
        version=t.scalar(C.version, "i32", "version", 1),
        deprecated_builtin_code=deprecated,
    )


def _subgraph(t: Table, data: memoryview) -> m.SubGraph:
    G = s.SubGraph
    return m.SubGraph(
        tensors=tuple(_tensor(x) for x in t.tables(G.tensors, "tensors") or ()),
        inputs=t.scalars(G.inputs, "i32", "inputs") or (),
        outputs=t.scalars(G.outputs, "i32", "outputs") or (),
        operators=tuple(_operator(o, data) for o in t.tables(G.operators, "operators") or ()),
        name=t.string(G.name, "name") or "",
    )


def _tensor(t: Table) -> m.Tensor:
    T = s.Tensor
    q = t.table(T.quantization, "quantization")
    external = t.scalar(T.external_buffer, "u32", "external_buffer")
    if external:
        raise ModelError(
            f"{external}: refsim reads no weights from other files (Model.external_buffers)",
            join(t.path, "external_buffer"),
        )
    return m.Tensor(
        shape=t.scalars(T.shape, "i32", "shape") or (),
        type=_enum(s.TensorType, t.scalar(T.type, "i8", "type"), join(t.path, "type")),
        buffer=t.scalar(T.buffer, "u32", "buffer"),
        name=t.string(T.name, "name") or "",
        quantization=None if q is None else _quantization(q),
        is_variable=t.scalar(T.is_variable, "bool", "is_variable", False),
        shape_signature=t.scalars(T.shape_signature, "i32", "shape_signature"),
        sparse=t.table(T.sparsity, "sparsity") is not None,
    )


def _quantization(t: Table) -> m.Quantization:
    Q = s.QuantizationParameters
    details_type = t.scalar(Q.details_type, "u8", "details_type")
    if details_type:
        t.table(Q.details, "details")  # a table, verified; refsim does not decode it
    return m.Quantization(
        scale=t.scalars(Q.scale, "f32", "scale") or (),
        zero_point=t.scalars(Q.zero_point, "i64", "zero_point") or (),
        quantized_dimension=t.scalar(Q.quantized_dimension, "i32", "quantized_dimension"),
        min=t.scalars(Q.min, "f32", "min") or (),
        max=t.scalars(Q.max, "f32", "max") or (),
        details_type=details_type,
    )


def _operator(t: Table, data: memoryview) -> m.Operator:
    O = s.Operator
    options_type = t.scalar(O.builtin_options_type, "u8", "builtin_options_type")
    options = None
    if options_type:
        name = s.BUILTIN_OPTIONS[options_type] if options_type < len(s.BUILTIN_OPTIONS) else None
        path = join(t.path, f"builtin_options.{name or options_type}")
        table = t.table(O.builtin_options, "builtin_options", path)
        if table is not None and name in TABLES:
            options = _options(table, name)
    options_2_type = t.scalar(O.builtin_options_2_type, "u8", "builtin_options_2_type")
    if options_2_type:  # a table, verified; refsim decodes none of the StableHLO options
        t.table(O.builtin_options_2, "builtin_options_2")
    custom = t.bytes_view(O.custom_options, "custom_options")
    large = t.scalar(O.large_custom_options_offset, "u64", "large_custom_options_offset")
    if large > 1:  # custom options after the flatbuffer, as offset buffers are
        size = t.scalar(O.large_custom_options_size, "u64", "large_custom_options_size")
        if large + size > len(data):
            raise ModelError(
                f"bytes [{large}, {large + size}) lie beyond the {len(data)}-byte file",
                join(t.path, "large_custom_options_offset"),
            )
        custom = data[large : large + size]
    return m.Operator(
        opcode_index=t.scalar(O.opcode_index, "u32", "opcode_index"),
        inputs=t.scalars(O.inputs, "i32", "inputs") or (),
        outputs=t.scalars(O.outputs, "i32", "outputs") or (),
        intermediates=t.scalars(O.intermediates, "i32", "intermediates") or (),
        builtin_options_type=options_type,
        builtin_options=options,
        custom_options=b"" if custom is None else bytes(custom),
        builtin_options_2_type=options_2_type,
    )


def _options(t: Table, name: str) -> dict:
    out: dict = {}
    for slot, f in enumerate(TABLES[name]):
        if f.kind == "[i32]":
            out[f.name] = t.scalars(slot, "i32", f.name)
            continue
        value = t.scalar(slot, f.kind, f.name, f.default)
        out[f.name] = value if f.enum is None else _enum(f.enum, value, join(t.path, f.name))
    return out


def _buffer(t: Table, data: memoryview) -> m.Buffer:
    B = s.Buffer
    view = t.bytes_view(B.data, "data")
    offset = t.scalar(B.offset, "u64", "offset")
    size = t.scalar(B.size, "u64", "size")
    if offset <= 1:  # the schema: offset "is only valid if > 1"
        return m.Buffer(data=view if view is not None else data[:0])
    if view is not None and len(view):
        raise ModelError(f"holds {len(view)} bytes of data and an offset {offset} too", t.path)
    if offset + size > len(data):
        raise ModelError(
            f"bytes [{offset}, {offset + size}) lie beyond the {len(data)}-byte file", join(t.path, "offset")
        )
    return m.Buffer(data=data[offset : offset + size], offset=offset, size=size)


def _signature(t: Table) -> m.SignatureDef:
    D = s.SignatureDef

    def maps(slot: int, name: str) -> tuple[tuple[str, int], ...]:
        return tuple(
            (
                x.string(s.TensorMap.name, "name") or "",
                x.scalar(s.TensorMap.tensor_index, "u32", "tensor_index"),
            )
            for x in t.tables(slot, name) or ()
        )

    return m.SignatureDef(
        signature_key=t.string(D.signature_key, "signature_key") or "",
        subgraph_index=t.scalar(D.subgraph_index, "u32", "subgraph_index"),
        inputs=maps(D.inputs, "inputs"),
        outputs=maps(D.outputs, "outputs"),
    )

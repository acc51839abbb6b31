"""Write a `Model` as a .tflite file, for test fixtures: ``write_model(model) -> bytes``.

The flatbuffer is built with the flatbuffers runtime's Builder, by hand (slot numbers from
schema.py), as refsim/pte/writer.py builds a .pte. Buffers' ``data`` vectors are 16-byte
aligned (the schema's ``force_align: 16``). With ``external_buffers`` (or for a buffer read
from such a file) the non-empty buffers and custom options go after the flatbuffer instead,
each 16-byte aligned, found through their offset and size from the start of the file: the
layout TFLite's converter writes for models over 2 GB. Options are written for the decoded
builtins (options.TABLES), a field only when it differs from the schema default, as flatc
does.

`ModelBuilder` assembles single-op and multi-op models tensor by tensor.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from refsim.pte._flatbuild import FlatBuilder
from refsim.tflite import model as m
from refsim.tflite import schema as s
from refsim.tflite.options import OPTIONS_OF, TABLES, defaults
from refsim.tflite.validate import validate_model

BUFFER_ALIGNMENT = 16
_PREPEND = {
    "bool": "PrependBoolSlot",
    "i8": "PrependInt8Slot",
    "u8": "PrependUint8Slot",
    "i32": "PrependInt32Slot",
    "u32": "PrependUint32Slot",
    "u64": "PrependUint64Slot",
    "f32": "PrependFloat32Slot",
}


def write_model(model: m.Model, *, external_buffers: bool = False, validate: bool = True) -> bytes:
    """The .tflite bytes of ``model``, validated first as `load_model` would (``validate=False``
    writes a model the reader must refuse: the corruption tests' named cases).

    ``external_buffers`` puts every non-empty buffer and every operator's custom options after
    the flatbuffer (``Buffer.offset``/``size``, ``Operator.large_custom_options_offset``/
    ``size``); a buffer read from such a file goes there in any case."""
    if validate:
        validate_model(model)
    blobs: dict[tuple, bytes | memoryview] = {}
    for k, b in enumerate(model.buffers):
        if k > 0 and len(b.data) and (external_buffers or b.external):
            blobs[("buffer", k)] = b.data
    if external_buffers:
        for g, graph in enumerate(model.subgraphs):
            for i, op in enumerate(graph.operators):
                if op.custom_options:
                    blobs[("custom", g, i)] = op.custom_options
    if not blobs:
        return _Builder(model, {}).finish()
    # Two passes: the first (placeholder offsets, the same table layout) sizes the flatbuffer.
    flat = len(_Builder(model, dict.fromkeys(blobs, 2)).finish())
    offsets, end = {}, flat
    for key, blob in blobs.items():
        end = _align(end)
        offsets[key] = end
        end += len(blob)
    out = bytearray(_Builder(model, offsets).finish())
    assert len(out) == flat, "the flatbuffer changed size between passes"
    for key, offset in offsets.items():
        out.extend(bytes(offset - len(out)))
        out.extend(blobs[key])
    return bytes(out)


def _align(n: int) -> int:
    return (n + BUFFER_ALIGNMENT - 1) // BUFFER_ALIGNMENT * BUFFER_ALIGNMENT


class _Builder(FlatBuilder):
    """Builds the Model flatbuffer bottom-up (children before the tables that hold them)."""

    def __init__(self, model: m.Model, external: dict[tuple, int]) -> None:
        """``external``: where each blob stored after the flatbuffer starts, by
        ``("buffer", k)`` or ``("custom", subgraph, operator)``."""
        super().__init__()
        self.model = model
        self.external = external

    # -- helpers ---------------------------------------------------------------------------

    def table(self, n_fields: int, fields: list[tuple[str, int, object, object]]) -> int:
        """One table from (kind, slot, value, default) tuples; kind 'ref' for offsets."""
        b = self.b
        b.StartObject(n_fields)
        for kind, slot, value, default in fields:
            if value is None:
                continue
            if kind == "ref":
                b.PrependUOffsetTRelativeSlot(slot, value, 0)
            else:
                getattr(b, _PREPEND[kind])(slot, value, default)
        return b.EndObject()

    # -- tables ----------------------------------------------------------------------------

    def finish(self) -> bytes:
        M, md = s.Model, self.model
        buffers = self.tables([self.buffer(k, buf) for k, buf in enumerate(md.buffers)])
        subgraphs = self.tables([self.subgraph(g, i) for i, g in enumerate(md.subgraphs)])
        codes = self.tables([self.opcode(c) for c in md.operator_codes])
        metadata = self.tables(
            [
                self.table(
                    2,
                    [
                        ("ref", s.Metadata.name, self.string(e.name), 0),
                        ("u32", s.Metadata.buffer, e.buffer, 0),
                    ],
                )
                for e in md.metadata
            ]
        )
        signatures = (
            self.tables([self.signature(d) for d in md.signature_defs]) if md.signature_defs else None
        )
        description = self.string(md.description) if md.description else None
        root = self.table(
            M.n_fields,
            [
                ("u32", M.version, md.version, 0),
                ("ref", M.operator_codes, codes, 0),
                ("ref", M.subgraphs, subgraphs, 0),
                ("ref", M.description, description, 0),
                ("ref", M.buffers, buffers, 0),
                ("ref", M.metadata, metadata if md.metadata else None, 0),
                ("ref", M.signature_defs, signatures, 0),
            ],
        )
        self.b.Finish(root, file_identifier=s.FILE_IDENTIFIER)
        return bytes(self.b.Output())

    def buffer(self, k: int, buf: m.Buffer) -> int:
        B = s.Buffer
        if ("buffer", k) in self.external:
            fields = [("u64", B.offset, self.external["buffer", k], 0), ("u64", B.size, len(buf.data), 0)]
        else:
            data = self.aligned_bytes(buf.data, BUFFER_ALIGNMENT) if len(buf.data) else None
            fields = [("ref", B.data, data, 0)]
        return self.table(B.n_fields, fields)

    def opcode(self, c: m.OperatorCode) -> int:
        C = s.OperatorCode
        code = int(c.builtin_code)
        deprecated = (
            min(code, s.PLACEHOLDER_FOR_GREATER_OP_CODES)
            if c.deprecated_builtin_code is None
            else c.deprecated_builtin_code
        )
        return self.table(
            C.n_fields,
            [
                ("i8", C.deprecated_builtin_code, deprecated, 0),
                ("ref", C.custom_code, self.string(c.custom_code), 0),
                ("i32", C.version, c.version, 1),
                ("i32", C.builtin_code, code, 0),
            ],
        )

    def subgraph(self, g: m.SubGraph, index: int) -> int:
        G = s.SubGraph
        tensors = self.tables([self.tensor(t) for t in g.tensors])
        operators = self.tables([self.operator(o, (index, i)) for i, o in enumerate(g.operators)])
        return self.table(
            G.n_fields,
            [
                ("ref", G.tensors, tensors, 0),
                ("ref", G.inputs, self.vec(g.inputs, "<i4"), 0),
                ("ref", G.outputs, self.vec(g.outputs, "<i4"), 0),
                ("ref", G.operators, operators, 0),
                ("ref", G.name, self.string(g.name) if g.name else None, 0),
            ],
        )

    def tensor(self, t: m.Tensor) -> int:
        T = s.Tensor
        q = None if t.quantization is None else self.quantization(t.quantization)
        signature = None if t.shape_signature is None else self.vec(t.shape_signature, "<i4")
        return self.table(
            T.n_fields,
            [
                ("ref", T.shape, self.vec(t.shape, "<i4"), 0),
                ("i8", T.type, int(t.type), 0),
                ("u32", T.buffer, t.buffer, 0),
                ("ref", T.name, self.string(t.name), 0),
                ("ref", T.quantization, q, 0),
                ("bool", T.is_variable, t.is_variable, False),
                ("ref", T.shape_signature, signature, 0),
            ],
        )

    def quantization(self, q: m.Quantization) -> int:
        Q = s.QuantizationParameters

        def floats(values: tuple[float, ...]) -> int | None:
            return self.vec(values, "<f4") if values else None

        return self.table(
            Q.n_fields,
            [
                ("ref", Q.min, floats(q.min), 0),
                ("ref", Q.max, floats(q.max), 0),
                ("ref", Q.scale, floats(q.scale), 0),
                ("ref", Q.zero_point, self.vec(q.zero_point, "<i8") if q.zero_point else None, 0),
                ("i32", Q.quantized_dimension, q.quantized_dimension, 0),
            ],
        )

    def operator(self, op: m.Operator, where: tuple[int, int]) -> int:
        O = s.Operator
        options = None
        name = op.builtin_options_name
        if op.builtin_options_type:
            options = self.options(name, op.builtin_options or {})
        large = self.external.get(("custom", *where), 0)
        custom = self.aligned_bytes(op.custom_options, 1) if op.custom_options and not large else None
        options_2 = self.table(0, []) if op.builtin_options_2_type else None
        return self.table(
            O.n_fields,
            [
                ("u32", O.opcode_index, op.opcode_index, 0),
                ("ref", O.inputs, self.vec(op.inputs, "<i4"), 0),
                ("ref", O.outputs, self.vec(op.outputs, "<i4"), 0),
                ("u8", O.builtin_options_type, op.builtin_options_type, 0),
                ("ref", O.builtin_options, options, 0),
                ("ref", O.custom_options, custom, 0),
                ("ref", O.intermediates, self.vec(op.intermediates, "<i4") if op.intermediates else None, 0),
                ("u8", O.builtin_options_2_type, op.builtin_options_2_type, 0),
                ("ref", O.builtin_options_2, options_2, 0),
                ("u64", O.large_custom_options_offset, large, 0),
                ("u64", O.large_custom_options_size, len(op.custom_options) if large else 0, 0),
            ],
        )

    def options(self, name: str, values: dict) -> int:
        fields = TABLES.get(name, ())
        unknown = set(values) - {f.name for f in fields}
        if unknown:
            raise ValueError(f"{name} has no field {sorted(unknown)[0]!r}")
        entries: list[tuple[str, int, object, object]] = []
        for slot, f in enumerate(fields):
            value = values.get(f.name, f.default)
            if f.kind == "[i32]":
                entries.append(("ref", slot, None if value is None else self.vec(value, "<i4"), 0))
            elif value != f.default:
                entries.append((f.kind, slot, int(value) if f.enum else value, None))
        return self.table(len(fields), entries)

    def signature(self, d: m.SignatureDef) -> int:
        D, TM = s.SignatureDef, s.TensorMap

        def maps(pairs: tuple[tuple[str, int], ...]) -> int:
            return self.tables(
                [
                    self.table(2, [("ref", TM.name, self.string(n), 0), ("u32", TM.tensor_index, i, 0)])
                    for n, i in pairs
                ]
            )

        return self.table(
            D.n_fields,
            [
                ("ref", D.inputs, maps(d.inputs), 0),
                ("ref", D.outputs, maps(d.outputs), 0),
                ("ref", D.signature_key, self.string(d.signature_key), 0),
                ("u32", D.subgraph_index, d.subgraph_index, 0),
            ],
        )


class ModelBuilder:
    """A one-subgraph model, tensor by tensor: ``tensor()`` returns an index for ``op()``.

    b = ModelBuilder()
    x = b.tensor((1, 8, 8, 3), s.TensorType.INT8, scale=0.5, zero_point=-1)
    w = b.tensor((4, 3, 3, 3), s.TensorType.INT8, data=weights, scale=(0.1,) * 4,
                 zero_point=(0,) * 4, quantized_dimension=0)
    ...
    b.op(s.BuiltinOperator.CONV_2D, [x, w, bias], [y], stride_w=1, stride_h=1)
    data = write_model(b.build(inputs=[x], outputs=[y]))
    """

    def __init__(self) -> None:
        self.tensors: list[m.Tensor] = []
        self.buffers: list[m.Buffer] = [m.Buffer()]  # buffer 0: the empty sentinel
        self.codes: list[m.OperatorCode] = []
        self.operators: list[m.Operator] = []

    def tensor(
        self,
        shape: Sequence[int],
        dtype: s.TensorType,
        *,
        data: np.ndarray | bytes | None = None,
        scale: float | Sequence[float] | None = None,
        zero_point: int | Sequence[int] = 0,
        quantized_dimension: int = 0,
        name: str | None = None,
        is_variable: bool = False,
    ) -> int:
        buffer = 0
        if data is not None:
            raw = data.tobytes() if isinstance(data, np.ndarray) else bytes(data)
            self.buffers.append(m.Buffer(data=memoryview(raw)))
            buffer = len(self.buffers) - 1
        quant = None
        if scale is not None:
            scales = (scale,) if isinstance(scale, int | float) else tuple(scale)
            zps = (zero_point,) if isinstance(zero_point, int) else tuple(zero_point)
            # float32, as the file stores them, so that a written model reads back equal
            quant = m.Quantization(
                tuple(float(np.float32(v)) for v in scales), tuple(map(int, zps)), quantized_dimension
            )
        self.tensors.append(
            m.Tensor(
                shape=tuple(shape),
                type=dtype,
                buffer=buffer,
                name=f"t{len(self.tensors)}" if name is None else name,
                quantization=quant,
                is_variable=is_variable,
            )
        )
        return len(self.tensors) - 1

    def op(self, code: s.BuiltinOperator, inputs: Sequence[int], outputs: Sequence[int], **options) -> int:
        """Add an operator; ``options`` are fields of its options table (defaults elsewhere)."""
        opcode = m.OperatorCode(code)
        if opcode not in self.codes:
            self.codes.append(opcode)
        table = OPTIONS_OF.get(code)
        if table is None and options:
            raise ValueError(f"{code.name} takes no options")
        self.operators.append(
            m.Operator(
                opcode_index=self.codes.index(opcode),
                inputs=tuple(inputs),
                outputs=tuple(outputs),
                builtin_options_type=s.BUILTIN_OPTIONS.index(table) if table else 0,
                builtin_options={**defaults(table), **options} if table else None,
            )
        )
        return len(self.operators) - 1

    def build(self, inputs: Sequence[int], outputs: Sequence[int], name: str = "main") -> m.Model:
        return m.Model(
            version=s.SCHEMA_VERSION,
            operator_codes=tuple(self.codes),
            subgraphs=(
                m.SubGraph(tuple(self.tensors), tuple(inputs), tuple(outputs), tuple(self.operators), name),
            ),
            buffers=tuple(self.buffers),
        )

"""Write a `Program` and its constants as a .pte file that ExecuTorch's loader accepts.

Layout, as ExecuTorch 1.5's serializer writes it (exir/_serialize/_program.py):

    [root offset u32]["ET12"][extended header, 32 bytes][flatbuffer tables ...]
    zero padding up to segment_base_offset = program_size rounded up to 128
    segment 0: the constant segment; blob k at offsets[k], 16-byte aligned, identical
               blobs stored once, offsets[0] reserved (0); no padding after the last blob
    segments 1..: the caller's extra segments, each starting 128-byte aligned

The extended header is "eh00", u32 length 32, u64 program_size (flatbuffer bytes including
the header), u64 segment_base_offset, u64 segment_data_size. The flatbuffer is built with
the flatbuffers runtime's Builder, by hand (slot numbers from _slots.py, checked against the
schema by tests): flatc's generated Python would need a build step and, for reading, a
separate verifier anyway (see _flatbuf.py), and is slower per field than this.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence

import numpy as np

from refsim.errors import UnsupportedError
from refsim.pte import model as m
from refsim.pte._flatbuild import FlatBuilder
from refsim.pte._slots import S
from refsim.pte.errors import ProgramError
from refsim.pte.reader import FILE_IDENTIFIER, HEADER_MAGIC, HEADER_OFFSET, ProgramFile
from refsim.pte.validate import DataSources, validate_program

#: Alignment of each constant blob in the constant segment (ExecuTorch's ALIGNMENT).
CONSTANT_ALIGNMENT = 16
#: Alignment of segment_base_offset and of every segment (ExecuTorch's segment_alignment).
SEGMENT_ALIGNMENT = 128
HEADER_LENGTH = 32

Blob = bytes | bytearray | memoryview | np.ndarray


def write_program(
    program: m.Program,
    constants: Sequence[Blob] = (b"",),
    path: str | os.PathLike | None = None,
    *,
    segments: Sequence[Blob] = (),
    legacy_constant_buffer: bool = False,
    validate: bool = True,
) -> bytes:
    """Serialize ``program``; write it to ``path`` too when given. Returns the file's bytes.

    ``constants[k]`` is the data of the tensors with ``data_buffer_idx == k``; ``constants[0]``
    is reserved and must be empty. ``segments`` are extra segments placed after the constant
    segment, so ``segments[i]`` is file segment ``i + 1`` for the program's references
    (named_data, mutable_data_segments, SEGMENT delegates). ``legacy_constant_buffer`` writes
    the constants inline in ``Program.constant_buffer`` instead, as files before 2024-09 did
    (for tests of that path). Raises ProgramError if the program fails the reader's checks;
    ``validate=False`` skips them, to produce invalid files for tests.
    """
    blobs = [_as_bytes(c) for c in constants] or [b""]
    if blobs[0]:
        raise ProgramError(f"reserved entry must be empty, found {len(blobs[0])} bytes", "constants[0]")
    extra = [_as_bytes(s) for s in segments]
    file_segments = extra if legacy_constant_buffer else [b"", *extra]  # constant segment filled below
    if validate:
        validate_program(program, _data_sources(program, blobs, file_segments, legacy_constant_buffer))

    offsets: list[int] = []
    if not legacy_constant_buffer:
        file_segments[0], offsets = _constant_segment(blobs)
    try:
        flat = _Builder().program(program, offsets, blobs if legacy_constant_buffer else None, file_segments)
    except (OverflowError, struct.error, ValueError, TypeError) as e:
        raise ProgramError(f"a value does not fit its field: {e}") from None
    data = _assemble(flat, file_segments)
    if path is not None:
        with open(path, "wb") as f:
            f.write(data)
    return data


def rewrite_program(pf: ProgramFile, path: str | os.PathLike | None = None) -> bytes:
    """Write a loaded program again with refsim's writer (legacy inline constants move to a
    constant segment). Needs the file's constant segment, if any, to be segment 0."""
    cs = pf.constant_segment
    if pf.segments and (cs is None or cs.segment_index != 0):
        raise UnsupportedError("rewriting a file whose segment 0 is not its constant segment")
    extra = [pf.segment_data(i) for i in range(1, len(pf.segments))]
    return write_program(pf.program, pf.constants(), path, segments=extra)


def _data_sources(
    program: m.Program, blobs: list[bytes], file_segments: list[bytes], legacy: bool
) -> DataSources:
    """What the validator needs to know of the data this file will hold."""
    mutable_bytes = []
    for j, sub in enumerate(program.mutable_data_segments):
        if not 0 <= sub.segment_index < len(file_segments):
            raise ProgramError(
                f"segment index {sub.segment_index} out of range [0, {len(file_segments)})",
                f"mutable_data_segments[{j}].segment_index",
            )
        size = len(file_segments[sub.segment_index])
        for k, offset in enumerate(sub.offsets):
            if not 0 <= offset <= size:
                raise ProgramError(
                    f"offset {offset} beyond the {size}-byte segment",
                    f"mutable_data_segments[{j}].offsets[{k}]",
                )
        mutable_bytes.append([size - o for o in sub.offsets])
    source = "constant_buffer" if legacy else "constant segment"
    return DataSources([len(b) for b in blobs], mutable_bytes, len(file_segments), source)


def _as_bytes(blob: Blob) -> bytes:
    if isinstance(blob, np.ndarray):
        return np.ascontiguousarray(blob).tobytes()
    return bytes(blob)


def _align(n: int, alignment: int) -> int:
    return -(-n // alignment) * alignment


def _constant_segment(blobs: list[bytes]) -> tuple[bytes, list[int]]:
    """Concatenate the blobs 16-byte aligned, storing identical ones once."""
    data = bytearray()
    offsets = [0]
    seen: dict[bytes, int] = {}
    for blob in blobs[1:]:
        if blob not in seen:
            data += bytes(_align(len(data), CONSTANT_ALIGNMENT) - len(data))
            seen[blob] = len(data)
            data += blob
        offsets.append(seen[blob])
    return bytes(data), offsets


def _assemble(flat: bytes, segments: list[bytes]) -> bytes:
    """Insert the extended header after the file identifier and append the segments."""
    if not segments:
        return flat
    program_size = len(flat) + HEADER_LENGTH
    base = _align(program_size, SEGMENT_ALIGNMENT)
    body = bytearray()
    for seg in segments:
        body += bytes(_align(len(body), SEGMENT_ALIGNMENT) - len(body))
        body += seg
    header = HEADER_MAGIC + struct.pack("<IQQQ", HEADER_LENGTH, program_size, base, len(body))
    # Inserting HEADER_LENGTH bytes moves every object but leaves relative offsets intact;
    # only the root offset (absolute from byte 0) needs the shift. 32 keeps the 16-byte
    # alignment the schema's force_align fields ask for.
    (root,) = struct.unpack_from("<I", flat, 0)
    out = bytearray(struct.pack("<I", root + HEADER_LENGTH))
    out += flat[4:HEADER_OFFSET] + header + flat[HEADER_OFFSET:]
    out += bytes(base - len(out))
    out += body
    return bytes(out)


def _segment_table(segments: list[bytes]) -> list[tuple[int, int]]:
    table, end = [], 0
    for seg in segments:
        offset = _align(end, SEGMENT_ALIGNMENT)
        table.append((offset, len(seg)))
        end = offset + len(seg)
    return table


class _Builder(FlatBuilder):
    """Builds the Program flatbuffer bottom-up (children before the tables that hold them)."""

    # -- helpers ---------------------------------------------------------------------------

    def table(self, n_fields: int, fields: list[tuple[str, int, object]]) -> int:
        """One table from (kind, slot, value) triples; kind 'ref' for offsets."""
        b = self.b
        b.StartObject(n_fields)
        for kind, slot, value in fields:
            if value is None:
                continue
            if kind == "ref":
                b.PrependUOffsetTRelativeSlot(slot, value, 0)
            else:
                getattr(b, _PREPEND[kind])(slot, value, 0)
        return b.EndObject()

    # -- tables ----------------------------------------------------------------------------

    def program(
        self, p: m.Program, offsets: list[int], legacy: list[bytes] | None, segments: list[bytes]
    ) -> bytes:
        P = S.Program
        plans = self.tables([self.plan(plan) for plan in p.execution_plan])
        # Empty unless legacy, but present: ExecuTorch writes it so.
        storages = [self.aligned_bytes(blob, CONSTANT_ALIGNMENT) for blob in legacy or ()]
        constant_buffer = self.tables([self.table(1, [("ref", S.Buffer.storage, s)]) for s in storages])
        delegate_data = self.tables(
            [
                self.table(
                    1, [("ref", S.BackendDelegateInlineData.data, self.aligned_bytes(d, CONSTANT_ALIGNMENT))]
                )
                for d in p.backend_delegate_data
            ]
        )
        D = S.DataSegment
        seg_table = self.tables(
            [self.table(2, [("u64", D.offset, o), ("u64", D.size, n)]) for o, n in _segment_table(segments)]
        )
        constant_segment = self.subsegment(m.SubsegmentOffsets(0, tuple(offsets))) if offsets else None
        mutable = None
        if p.mutable_data_segments:
            mutable = self.tables([self.subsegment(s) for s in p.mutable_data_segments])
        named = None
        if p.named_data:
            N = S.NamedData
            named = self.tables(
                [
                    self.table(
                        2, [("ref", N.key, self.string(e.key)), ("u32", N.segment_index, e.segment_index)]
                    )
                    for e in p.named_data
                ]
            )
        root = self.table(
            P.n_fields,
            [
                ("u32", P.version, p.version),
                ("ref", P.execution_plan, plans),
                ("ref", P.constant_buffer, constant_buffer),
                ("ref", P.backend_delegate_data, delegate_data),
                ("ref", P.segments, seg_table),
                ("ref", P.constant_segment, constant_segment),
                ("ref", P.mutable_data_segments, mutable),
                ("ref", P.named_data, named),
            ],
        )
        self.b.Finish(root, file_identifier=FILE_IDENTIFIER)
        return bytes(self.b.Output())

    def subsegment(self, sub: m.SubsegmentOffsets) -> int:
        O = S.SubsegmentOffsets
        offsets = self.vec(sub.offsets, "<u8")
        return self.table(2, [("u32", O.segment_index, sub.segment_index), ("ref", O.offsets, offsets)])

    def plan(self, plan: m.ExecutionPlan) -> int:
        E = S.ExecutionPlan
        name = self.string(plan.name)
        meta = None
        if plan.container_meta_type is not None:
            C = S.ContainerMetadata
            inp = self.string(plan.container_meta_type.encoded_inp_str)
            out = self.string(plan.container_meta_type.encoded_out_str)
            meta = self.table(2, [("ref", C.encoded_inp_str, inp), ("ref", C.encoded_out_str, out)])
        values = self.tables([self.evalue(v) for v in plan.values])
        inputs = self.vec(plan.inputs, "<i4")
        outputs = self.vec(plan.outputs, "<i4")
        chains = self.tables([self.chain(c) for c in plan.chains])
        operators = self.tables([self.operator(o) for o in plan.operators])
        # Always present: ExecuTorch's Method::init rejects a plan without a delegates vector.
        delegates = self.tables([self.delegate(d) for d in plan.delegates])
        sizes = self.vec(plan.non_const_buffer_sizes, "<i8")
        devices = None
        if plan.non_const_buffer_device is not None:
            N = S.NonConstBufferDevice
            devices = self.tables(
                [
                    self.table(
                        3,
                        [
                            ("i32", N.buffer_idx, d.buffer_idx),
                            ("i8", N.device_type, int(d.device_type)),
                            ("i8", N.device_index, d.device_index),
                        ],
                    )
                    for d in plan.non_const_buffer_device
                ]
            )
        return self.table(
            E.n_fields,
            [
                ("ref", E.name, name),
                ("ref", E.container_meta_type, meta),
                ("ref", E.values, values),
                ("ref", E.inputs, inputs),
                ("ref", E.outputs, outputs),
                ("ref", E.chains, chains),
                ("ref", E.operators, operators),
                ("ref", E.delegates, delegates),
                ("ref", E.non_const_buffer_sizes, sizes),
                ("ref", E.non_const_buffer_device, devices),
            ],
        )

    def operator(self, op: m.Operator) -> int:
        name = self.string(op.name)
        overload = self.string(op.overload)  # always present, as ExecuTorch writes it
        return self.table(2, [("ref", S.Operator.name, name), ("ref", S.Operator.overload, overload)])

    def delegate(self, d: m.BackendDelegate) -> int:
        B, R, C = S.BackendDelegate, S.BackendDelegateDataReference, S.CompileSpec
        ident = self.string(d.id)
        ref = self.table(2, [("i8", R.location, int(d.location)), ("u32", R.index, d.index)])
        specs = []
        for spec in d.compile_specs:
            key, value = self.string(spec.key), self.vec(np.frombuffer(spec.value, np.uint8), "u1")
            specs.append(self.table(2, [("ref", C.key, key), ("ref", C.value, value)]))
        return self.table(
            3, [("ref", B.id, ident), ("ref", B.processed, ref), ("ref", B.compile_specs, self.tables(specs))]
        )

    def chain(self, c: m.Chain) -> int:
        C = S.Chain
        inputs = self.vec(c.inputs, "<i4")
        outputs = self.vec(c.outputs, "<i4")
        instructions = self.tables([self.instruction(i) for i in c.instructions])
        stacktrace = None
        if c.stacktrace is not None:
            frame_lists = []
            for frames in c.stacktrace:
                items = self.tables([self.frame(f) for f in frames])
                frame_lists.append(self.table(1, [("ref", S.FrameList.items, items)]))
            stacktrace = self.tables(frame_lists)
        return self.table(
            4,
            [
                ("ref", C.inputs, inputs),
                ("ref", C.outputs, outputs),
                ("ref", C.instructions, instructions),
                ("ref", C.stacktrace, stacktrace),
            ],
        )

    def frame(self, f: m.Frame) -> int:
        F = S.Frame
        filename, name, context = self.string(f.filename), self.string(f.name), self.string(f.context)
        return self.table(
            4,
            [
                ("ref", F.filename, filename),
                ("i32", F.lineno, f.lineno),
                ("ref", F.name, name),
                ("ref", F.context, context),
            ],
        )

    def instruction(self, i: m.Instruction) -> int:
        if isinstance(i, m.KernelCall):
            args = self.vec(i.args, "<i4")
            inner = self.table(
                2, [("i32", S.KernelCall.op_index, i.op_index), ("ref", S.KernelCall.args, args)]
            )
        elif isinstance(i, m.DelegateCall):
            args = self.vec(i.args, "<i4")
            D = S.DelegateCall
            inner = self.table(2, [("i32", D.delegate_index, i.delegate_index), ("ref", D.args, args)])
        elif isinstance(i, m.MoveCall):
            inner = self.table(
                2, [("i32", S.MoveCall.move_from, i.move_from), ("i32", S.MoveCall.move_to, i.move_to)]
            )
        elif isinstance(i, m.JumpFalseCall):
            J = S.JumpFalseCall
            inner = self.table(
                2,
                [
                    ("i32", J.cond_value_index, i.cond_value_index),
                    ("i32", J.destination_instruction, i.destination_instruction),
                ],
            )
        else:
            inner = self.table(1, [("i32", S.FreeCall.value_index, i.value_index)])
        I = S.Instruction
        return self.table(2, [("u8", I.instr_args_type, int(i.kind)), ("ref", I.instr_args, inner)])

    def evalue(self, v: m.EValue) -> int:
        if isinstance(v, m.Tensor):
            inner = self.tensor(v)
        elif isinstance(v, m.Int):
            inner = self.table(1, [("i64", S.Int.int_val, v.value)])
        elif isinstance(v, m.Bool):
            inner = self.table(1, [("bool", S.Bool.bool_val, bool(v.value))])
        elif isinstance(v, m.Double):
            inner = self.table(1, [("f64", S.Double.double_val, float(v.value))])
        elif isinstance(v, m.Null):
            inner = self.table(0, [])
        elif isinstance(v, m.String):
            inner = self.table(1, [("ref", S.String.string_val, self.string(v.value))])
        else:
            items = self.vec(v.items, _LIST_DTYPE[v.kind])
            inner = self.table(1, [("ref", S.IntList.items, items)])
        return self.table(2, [("u8", S.EValue.val_type, int(v.kind)), ("ref", S.EValue.val, inner)])

    def tensor(self, t: m.Tensor) -> int:
        T = S.Tensor
        sizes = self.vec(t.sizes, "<i4")
        dim_order = self.vec(t.dim_order, "u1")
        alloc = None
        if t.allocation is not None:
            A = S.AllocationDetails
            offset = t.allocation.offset
            alloc = self.table(
                3,
                [
                    ("u32", A.memory_id, t.allocation.memory_id),
                    ("u32", A.memory_offset_low, offset & 0xFFFFFFFF),
                    ("u32", A.memory_offset_high, offset >> 32),
                ],
            )
        extra = None
        if t.extra is not None:
            X = S.ExtraTensorInfo
            fqn = self.string(t.extra.fully_qualified_name)
            extra = self.table(
                5,
                [
                    ("u64", X.mutable_data_segments_idx, t.extra.mutable_data_segments_idx),
                    ("ref", X.fully_qualified_name, fqn),
                    ("i8", X.location, int(t.extra.location)),
                    ("i8", X.device_type, int(t.extra.device_type)),
                    ("i8", X.device_index, t.extra.device_index),
                ],
            )
        return self.table(
            T.n_fields,
            [
                ("i8", T.scalar_type, int(t.scalar_type)),
                ("i32", T.storage_offset, t.storage_offset),
                ("ref", T.sizes, sizes),
                ("ref", T.dim_order, dim_order),
                ("bool", T.requires_grad, bool(t.requires_grad)),
                ("u32", T.data_buffer_idx, t.data_buffer_idx),
                ("ref", T.allocation_info, alloc),
                ("i8", T.layout, t.layout),
                ("i8", T.shape_dynamism, int(t.shape_dynamism)),
                ("ref", T.extra_tensor_info, extra),
            ],
        )


_PREPEND = {
    "bool": "PrependBoolSlot",
    "i8": "PrependInt8Slot",
    "u8": "PrependUint8Slot",
    "i32": "PrependInt32Slot",
    "u32": "PrependUint32Slot",
    "i64": "PrependInt64Slot",
    "u64": "PrependUint64Slot",
    "f64": "PrependFloat64Slot",
}
_LIST_DTYPE = {
    m.ValueKind.INT_LIST: "<i8",
    m.ValueKind.DOUBLE_LIST: "<f8",
    m.ValueKind.BOOL_LIST: "?",
    m.ValueKind.TENSOR_LIST: "<i4",
    m.ValueKind.OPTIONAL_TENSOR_LIST: "<i4",
}

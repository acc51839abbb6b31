"""Load and validate a .pte file: ``load_program(path_or_bytes) -> ProgramFile``.

Everything is checked at load, in three layers, each failure a `ProgramError` naming the
field path: the container (file identifier, extended header, segment table and ranges),
the flatbuffer structure (every offset, vtable, vector and union tag; see _flatbuf.py), and
the program's meaning (indices, tensors, arenas, constant ranges; see validate.py). A corrupt
file raises nothing else: no IndexError, struct.error or RecursionError, and no allocation
larger than the file.

Constant data is never copied: `ProgramFile.constant_data` returns read-only numpy views of
the file (an mmap when loaded from a path).
"""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass, field

import numpy as np

from refsim.errors import UnsupportedError
from refsim.pte import model as m
from refsim.pte._flatbuf import FlatReader, Table, join
from refsim.pte._slots import S
from refsim.pte.errors import ProgramError
from refsim.pte.validate import DataSources, validate_program

FILE_IDENTIFIER = b"ET12"
HEADER_MAGIC = b"eh00"
HEADER_OFFSET = 8
#: program_size and segment_base_offset are required; segment_data_size is optional.
HEADER_MIN_LENGTH = 24
#: Program::load reads the first 64 bytes (ExtendedHeader::kNumHeadBytes) before anything
#: else, so a shorter file is refused by ExecuTorch's loader.
MIN_FILE_SIZE = 64


@dataclass(frozen=True)
class ExtendedHeader:
    """The 'eh00' header ExecuTorch inserts after the file identifier when there are segments."""

    length: int
    program_size: int
    segment_base_offset: int
    segment_data_size: int | None


@dataclass(frozen=True)
class DataSegment:
    """Bytes [offset, offset + size) after ``segment_base_offset``."""

    offset: int
    size: int


@dataclass(frozen=True, eq=False)
class ProgramFile:
    """A loaded, validated .pte file: the `Program` and access to its data."""

    program: m.Program
    data: memoryview = field(repr=False)
    header: ExtendedHeader | None
    segments: tuple[DataSegment, ...]
    constant_segment: m.SubsegmentOffsets | None
    #: Legacy inline constants (``Program.constant_buffer``), index = data_buffer_idx.
    constant_buffer: tuple[memoryview, ...] = field(repr=False)
    _constant_users: dict[int, list[m.Tensor]] = field(repr=False)

    @property
    def uses_legacy_constant_buffer(self) -> bool:
        return len(self.constant_buffer) > 0

    def segment_data(self, index: int) -> memoryview:
        """Segment ``index`` of the file (checked at load to lie inside it)."""
        if not 0 <= index < len(self.segments):
            raise ProgramError(f"segment index {index} out of range [0, {len(self.segments)})")
        seg = self.segments[index]
        start = (self.header.segment_base_offset if self.header else 0) + seg.offset
        return self.data[start : start + seg.size]

    def _constant_from(self, k: int) -> memoryview:
        """Bytes readable from constant ``k`` on."""
        if self.constant_buffer:
            n = len(self.constant_buffer)
            if not 1 <= k < n:
                raise ProgramError(f"data_buffer_idx {k} out of range [1, {n}) of constant_buffer")
            return self.constant_buffer[k]
        offsets = self.constant_segment.offsets if self.constant_segment else ()
        if not 1 <= k < len(offsets):
            raise ProgramError(f"data_buffer_idx {k} out of range [1, {len(offsets)}) of constant_segment")
        return self.segment_data(self.constant_segment.segment_index)[offsets[k] :]  # type: ignore[union-attr]

    def constant_bytes(self, tensor: m.Tensor) -> memoryview:
        """The ``tensor.nbytes`` bytes of a constant tensor, as a view of the file."""
        if not tensor.is_constant:
            raise ProgramError(f"the tensor is not a constant (data_buffer_idx {tensor.data_buffer_idx})")
        view = self._constant_from(tensor.data_buffer_idx)
        if tensor.nbytes > len(view):
            raise ProgramError(
                f"constant {tensor.data_buffer_idx} has {len(view)} bytes, need {tensor.nbytes}"
            )
        return view[: tensor.nbytes]

    def constant_data(self, tensor: m.Tensor) -> np.ndarray:
        """A constant tensor's data: a read-only numpy view of the file, shaped in memory
        order (``tensor.storage_shape``; e.g. NHWC for dim_order (0, 2, 3, 1))."""
        dtype = tensor.scalar_type.numpy_dtype
        if dtype is None:
            raise UnsupportedError(
                f"constant of scalar type {tensor.scalar_type.name}: numpy has no such dtype"
            )
        array = np.frombuffer(self.constant_bytes(tensor), dtype=dtype).reshape(tensor.storage_shape)
        array.flags.writeable = False
        return array

    def mutable_data(self, tensor: m.Tensor) -> memoryview:
        """The initial value of a memory-planned tensor that has one (data_buffer_idx > 0)."""
        if tensor.allocation is None or tensor.data_buffer_idx == 0:
            raise ProgramError("the tensor has no initial data in mutable_data_segments")
        j = tensor.extra.mutable_data_segments_idx if tensor.extra else 0
        sub = self.program.mutable_data_segments[j]
        start = sub.offsets[tensor.data_buffer_idx]
        return self.segment_data(sub.segment_index)[start : start + tensor.nbytes]

    def named_blob(self, key: str) -> memoryview:
        """The segment that ``Program.named_data`` maps ``key`` to."""
        for entry in self.program.named_data:
            if entry.key == key:
                return self.segment_data(entry.segment_index)
        raise ProgramError(f"no named data with key {key!r}")

    def constants(self) -> list[memoryview]:
        """Constant blobs indexed by data_buffer_idx (entry 0 empty), for `write_program`.

        A blob's length is the largest ``nbytes`` of the tensors using it; an unused entry
        runs to the next larger offset (or the end of its segment)."""
        if self.constant_buffer:
            return [self.constant_buffer[0][:0], *self.constant_buffer[1:]]
        offsets = self.constant_segment.offsets if self.constant_segment else ()
        if len(offsets) <= 1:
            return [memoryview(b"")]
        segment = self.segment_data(self.constant_segment.segment_index)  # type: ignore[union-attr]
        blobs = [segment[:0]]
        for k in range(1, len(offsets)):
            users = self._constant_users.get(k)
            if users:
                end = offsets[k] + max(t.nbytes for t in users)
            else:
                end = min((o for o in offsets if o > offsets[k]), default=len(segment))
            blobs.append(segment[offsets[k] : end])
        return blobs


def load_program(
    source: str | os.PathLike | bytes | bytearray | memoryview, *, allow_legacy_constant_buffer: bool = False
) -> ProgramFile:
    """Load and validate a .pte from a path (memory-mapped) or from bytes.

    A program must have a ``constant_segment`` with at least its reserved entry: ExecuTorch
    1.5.1's loader (built with ET_ENABLE_DEPRECATED_CONSTANT_BUFFER=0) refuses any other.
    ``allow_legacy_constant_buffer`` reads such older files (inline ``constant_buffer``).

    Raises ProgramError, whose message starts with the path of the failing field."""
    if isinstance(source, str | os.PathLike):
        data = _map_file(source)
    else:
        data = memoryview(source).cast("B")
    return _load(data, allow_legacy_constant_buffer)


def _map_file(path: str | os.PathLike) -> memoryview:
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                raise ProgramError(f"{os.fspath(path)}: the file is empty")
            return memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
    except OSError as e:
        raise ProgramError(f"cannot read {os.fspath(path)}: {e.strerror}") from None


def _load(data: memoryview, allow_legacy: bool = False) -> ProgramFile:
    file_size = len(data)
    if file_size < 8:
        raise ProgramError(f"{file_size} bytes is too short for a .pte file (at least {MIN_FILE_SIZE})")
    identifier = bytes(data[4:8])
    if identifier != FILE_IDENTIFIER:
        raise ProgramError(f"expected {FILE_IDENTIFIER!r}, found {identifier!r}", "file_identifier")
    if file_size < MIN_FILE_SIZE:
        raise ProgramError(
            f"{file_size} bytes is too short for a .pte file (ExecuTorch reads a {MIN_FILE_SIZE}-byte head)"
        )
    header = _read_header(data)
    program_size = header.program_size if header else file_size

    # The flatbuffers verifier spans the whole program (header included): so does ours.
    root = FlatReader(data, program_size).root()
    program, layout = _decode_program(root)
    if not allow_legacy and (layout["constant_segment"] is None or not layout["constant_segment"].offsets):
        raise ProgramError(
            "missing or without offsets; ExecuTorch 1.5.1's loader refuses the deprecated "
            "constant_buffer path (ET_ENABLE_DEPRECATED_CONSTANT_BUFFER=0)",
            "constant_segment",
        )
    segments, constant_buffer, sources = _check_layout(
        layout, program.mutable_data_segments, header, file_size
    )
    validate_program(program, sources)
    return ProgramFile(
        program=program,
        data=data,
        header=header,
        segments=segments,
        constant_segment=layout["constant_segment"],
        constant_buffer=constant_buffer,
        _constant_users=sources.users,
    )


def _read_header(data: memoryview) -> ExtendedHeader | None:
    file_size = len(data)
    if file_size < HEADER_OFFSET + 8 or bytes(data[8:12]) != HEADER_MAGIC:
        return None
    (length,) = struct.unpack_from("<I", data, 12)
    # ExecuTorch's ExtendedHeader::Parse and Program::load check exactly these: the length
    # covers program_size and segment_base_offset; segments (when segment_data_size says
    # there are some, or nothing says there are none) end inside the file; the program
    # fits the file. Where each segment lies is checked against the file in _check_layout.
    if length < HEADER_MIN_LENGTH:
        raise ProgramError(f"{length} < {HEADER_MIN_LENGTH}", "extended_header.length")
    program_size, base = struct.unpack_from("<QQ", data, 16)
    data_size = struct.unpack_from("<Q", data, 32)[0] if length >= 32 else None
    if not HEADER_OFFSET <= program_size <= file_size:
        raise ProgramError(
            f"{program_size} outside [{HEADER_OFFSET}, {file_size}] (root offset and identifier, file size)",
            "extended_header.program_size",
        )
    if data_size and base + data_size > file_size:
        raise ProgramError(
            f"segments [{base}, {base + data_size}) overrun the {file_size}-byte file",
            "extended_header.segment_data_size",
        )
    return ExtendedHeader(length, program_size, base, data_size)


# -- flatbuffer → model --------------------------------------------------------------------


def _enum(enum_type, raw: int, path: str):
    try:
        return enum_type(raw)
    except ValueError:
        raise ProgramError(f"unknown {enum_type.__name__} {raw}", path) from None


def _required(value, path: str):
    if value is None:
        raise ProgramError("required field is missing", path)
    return value


def _decode_program(t: Table) -> tuple[m.Program, dict]:
    P = S.Program
    plans = _required(t.tables(P.execution_plan, "execution_plan"), "execution_plan")
    layout = {
        "constant_buffer": [
            _required(b.bytes_view(S.Buffer.storage, "storage"), join(b.path, "storage"))
            for b in t.tables(P.constant_buffer, "constant_buffer") or ()
        ],
        "segments": [
            (s.scalar(S.DataSegment.offset, "u64", "offset"), s.scalar(S.DataSegment.size, "u64", "size"))
            for s in t.tables(P.segments, "segments") or ()
        ],
        "constant_segment": _subsegment(t.table(P.constant_segment, "constant_segment")),
    }
    program = m.Program(
        version=t.scalar(P.version, "u32", "version"),
        execution_plan=tuple(_plan(p) for p in plans),
        backend_delegate_data=tuple(
            # absent data reads as empty: ExecuTorch checks it only when a delegate uses it
            bytes(d.bytes_view(S.BackendDelegateInlineData.data, "data") or b"")
            for d in t.tables(P.backend_delegate_data, "backend_delegate_data") or ()
        ),
        mutable_data_segments=tuple(
            _subsegment(s) for s in t.tables(P.mutable_data_segments, "mutable_data_segments") or ()
        ),
        named_data=tuple(
            m.NamedData(
                key=_required(n.string(S.NamedData.key, "key"), join(n.path, "key")),
                segment_index=n.scalar(S.NamedData.segment_index, "u32", "segment_index"),
            )
            for n in t.tables(P.named_data, "named_data") or ()
        ),
    )
    return program, layout


def _subsegment(t: Table | None) -> m.SubsegmentOffsets | None:
    if t is None:
        return None
    return m.SubsegmentOffsets(
        segment_index=t.scalar(S.SubsegmentOffsets.segment_index, "u32", "segment_index"),
        offsets=t.scalars(S.SubsegmentOffsets.offsets, "u64", "offsets") or (),
    )


def _plan(t: Table) -> m.ExecutionPlan:
    E = S.ExecutionPlan
    meta = t.table(E.container_meta_type, "container_meta_type")
    devices = t.tables(E.non_const_buffer_device, "non_const_buffer_device")
    return m.ExecutionPlan(
        name=_method_name(t),
        container_meta_type=None
        if meta is None
        else m.ContainerMetadata(
            meta.string(S.ContainerMetadata.encoded_inp_str, "encoded_inp_str") or "",
            meta.string(S.ContainerMetadata.encoded_out_str, "encoded_out_str") or "",
        ),
        values=tuple(_evalue(v) for v in _required(t.tables(E.values, "values"), join(t.path, "values"))),
        inputs=_required(t.scalars(E.inputs, "i32", "inputs"), join(t.path, "inputs")),
        outputs=_required(t.scalars(E.outputs, "i32", "outputs"), join(t.path, "outputs")),
        chains=tuple(_chain(c) for c in t.tables(E.chains, "chains") or ()),
        operators=tuple(
            m.Operator(
                name=_required(o.string(S.Operator.name, "name"), join(o.path, "name")),
                overload=o.string(S.Operator.overload, "overload") or "",
            )
            for o in t.tables(E.operators, "operators") or ()
        ),
        delegates=tuple(_delegate(d) for d in t.tables(E.delegates, "delegates") or ()),
        non_const_buffer_sizes=_required(
            t.scalars(E.non_const_buffer_sizes, "i64", "non_const_buffer_sizes"),
            join(t.path, "non_const_buffer_sizes"),
        ),
        non_const_buffer_device=None
        if devices is None
        else tuple(
            m.NonConstBufferDevice(
                buffer_idx=d.scalar(S.NonConstBufferDevice.buffer_idx, "i32", "buffer_idx"),
                device_type=_enum(
                    m.DeviceType, d.scalar(S.NonConstBufferDevice.device_type, "i8", "device_type"), d.path
                ),
                device_index=d.scalar(S.NonConstBufferDevice.device_index, "i8", "device_index"),
            )
            for d in devices
        ),
    )


def _method_name(t: Table) -> str:
    """The plan's name, which must be UTF-8: executorch.runtime's Program decodes every
    method name when it loads a program, so it refuses a file with any other. ExecuTorch
    reads it as a C string, so a NUL ends it."""
    path = join(t.path, "name")
    name = _required(t.string(S.ExecutionPlan.name, "name"), path).split("\x00", 1)[0]
    if "\\x" in name:
        raw = bytes(t.bytes_view(S.ExecutionPlan.name, "name") or b"").split(b"\x00", 1)[0]
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ProgramError(f"not valid UTF-8 ({e.reason} at byte {e.start})", path) from None
    return name


_VALUE_PATH = {kind: kind.name.lower() for kind in m.ValueKind}
_LIST_KIND = {
    m.ValueKind.INT_LIST: "i64",
    m.ValueKind.DOUBLE_LIST: "f64",
    m.ValueKind.BOOL_LIST: "bool",
    m.ValueKind.TENSOR_LIST: "i32",
    m.ValueKind.OPTIONAL_TENSOR_LIST: "i32",
}


def _evalue(t: Table) -> m.EValue:
    tag = t.scalar(S.EValue.val_type, "u8", "val_type")
    if tag not in m.EVALUE_TYPES:
        raise ProgramError(
            f"unknown EValue type {tag} (expected 1..{len(m.ValueKind)})", join(t.path, "val_type")
        )
    kind = m.ValueKind(tag)
    v = _required(
        t.table(S.EValue.val, "val", join(t.path, _VALUE_PATH[kind])), join(t.path, _VALUE_PATH[kind])
    )
    if kind == m.ValueKind.TENSOR:
        return _tensor(v)
    if kind == m.ValueKind.INT:
        return m.Int(v.scalar(S.Int.int_val, "i64", "int_val"))
    if kind == m.ValueKind.BOOL:
        return m.Bool(v.scalar(S.Bool.bool_val, "bool", "bool_val", False))
    if kind == m.ValueKind.DOUBLE:
        return m.Double(v.scalar(S.Double.double_val, "f64", "double_val", 0.0))
    if kind == m.ValueKind.NULL:
        return m.Null()
    if kind == m.ValueKind.STRING:
        return m.String(_required(v.string(S.String.string_val, "string_val"), join(v.path, "string_val")))
    items = _required(v.scalars(S.IntList.items, _LIST_KIND[kind], "items"), join(v.path, "items"))
    return m.EVALUE_TYPES[kind](items)


def _tensor(t: Table) -> m.Tensor:
    T = S.Tensor
    alloc = t.table(T.allocation_info, "allocation_info")
    extra = t.table(T.extra_tensor_info, "extra_tensor_info")
    if alloc is not None:
        A = S.AllocationDetails
        low = alloc.scalar(A.memory_offset_low, "u32", "memory_offset_low")
        high = alloc.scalar(A.memory_offset_high, "u32", "memory_offset_high")
        allocation = m.Allocation(alloc.scalar(A.memory_id, "u32", "memory_id"), low | high << 32)
    else:
        allocation = None
    if extra is not None:
        X = S.ExtraTensorInfo
        extra_info = m.ExtraTensorInfo(
            mutable_data_segments_idx=extra.scalar(
                X.mutable_data_segments_idx, "u64", "mutable_data_segments_idx"
            ),
            fully_qualified_name=extra.string(X.fully_qualified_name, "fully_qualified_name"),
            location=_enum(
                m.TensorDataLocation, extra.scalar(X.location, "i8", "location"), join(extra.path, "location")
            ),
            device_type=_enum(
                m.DeviceType,
                extra.scalar(X.device_type, "i8", "device_type"),
                join(extra.path, "device_type"),
            ),
            device_index=extra.scalar(X.device_index, "i8", "device_index"),
        )
    else:
        extra_info = None
    return m.Tensor(
        scalar_type=_enum(
            m.ScalarType, t.scalar(T.scalar_type, "i8", "scalar_type"), join(t.path, "scalar_type")
        ),
        sizes=_required(t.scalars(T.sizes, "i32", "sizes"), join(t.path, "sizes")),
        dim_order=_required(t.scalars(T.dim_order, "u8", "dim_order"), join(t.path, "dim_order")),
        data_buffer_idx=t.scalar(T.data_buffer_idx, "u32", "data_buffer_idx"),
        allocation=allocation,
        shape_dynamism=_enum(
            m.ShapeDynamism,
            t.scalar(T.shape_dynamism, "i8", "shape_dynamism"),
            join(t.path, "shape_dynamism"),
        ),
        storage_offset=t.scalar(T.storage_offset, "i32", "storage_offset"),
        requires_grad=t.scalar(T.requires_grad, "bool", "requires_grad", False),
        layout=t.scalar(T.layout, "i8", "layout"),
        extra=extra_info,
    )


_INSTRUCTION_PATH = {kind: kind.name.lower() for kind in m.InstructionKind}


def _chain(t: Table) -> m.Chain:
    C = S.Chain
    stacktrace = t.tables(C.stacktrace, "stacktrace")
    return m.Chain(
        inputs=t.scalars(C.inputs, "i32", "inputs") or (),
        outputs=t.scalars(C.outputs, "i32", "outputs") or (),
        instructions=tuple(
            _instruction(i)
            for i in _required(t.tables(C.instructions, "instructions"), join(t.path, "instructions"))
        ),
        stacktrace=None
        if stacktrace is None
        else tuple(
            tuple(_frame(f) for f in fl.tables(S.FrameList.items, "items") or ()) for fl in stacktrace
        ),
    )


def _frame(t: Table) -> m.Frame:
    F = S.Frame
    return m.Frame(
        filename=t.string(F.filename, "filename"),
        lineno=t.scalar(F.lineno, "i32", "lineno"),
        name=t.string(F.name, "name"),
        context=t.string(F.context, "context"),
    )


def _instruction(t: Table) -> m.Instruction:
    I = S.Instruction
    tag = t.scalar(I.instr_args_type, "u8", "instr_args_type")
    if tag not in m.INSTRUCTION_TYPES:
        raise ProgramError(
            f"unknown instruction type {tag} (expected 1..{len(m.InstructionKind)})",
            join(t.path, "instr_args_type"),
        )
    kind = m.InstructionKind(tag)
    path = join(t.path, _INSTRUCTION_PATH[kind])
    a = _required(t.table(I.instr_args, "instr_args", path), path)
    if kind == m.InstructionKind.KERNEL_CALL:
        K = S.KernelCall
        return m.KernelCall(
            a.scalar(K.op_index, "i32", "op_index"),
            _required(a.scalars(K.args, "i32", "args"), join(path, "args")),
        )
    if kind == m.InstructionKind.DELEGATE_CALL:
        D = S.DelegateCall
        return m.DelegateCall(
            a.scalar(D.delegate_index, "i32", "delegate_index"),
            _required(a.scalars(D.args, "i32", "args"), join(path, "args")),
        )
    if kind == m.InstructionKind.MOVE_CALL:
        return m.MoveCall(
            a.scalar(S.MoveCall.move_from, "i32", "move_from"), a.scalar(S.MoveCall.move_to, "i32", "move_to")
        )
    if kind == m.InstructionKind.JUMP_FALSE_CALL:
        J = S.JumpFalseCall
        return m.JumpFalseCall(
            a.scalar(J.cond_value_index, "i32", "cond_value_index"),
            a.scalar(J.destination_instruction, "i32", "destination_instruction"),
        )
    return m.FreeCall(a.scalar(S.FreeCall.value_index, "i32", "value_index"))


def _delegate(t: Table) -> m.BackendDelegate:
    B = S.BackendDelegate
    ref = _required(t.table(B.processed, "processed"), join(t.path, "processed"))
    R = S.BackendDelegateDataReference
    return m.BackendDelegate(
        id=_required(t.string(B.id, "id"), join(t.path, "id")),
        location=_enum(m.DataLocation, ref.scalar(R.location, "i8", "location"), join(ref.path, "location")),
        index=ref.scalar(R.index, "u32", "index"),
        compile_specs=tuple(
            m.CompileSpec(
                key=_required(c.string(S.CompileSpec.key, "key"), join(c.path, "key")),
                value=bytes(c.bytes_view(S.CompileSpec.value, "value") or b""),
            )
            for c in t.tables(B.compile_specs, "compile_specs") or ()
        ),
    )


# -- container layout ----------------------------------------------------------------------


def _check_layout(
    layout: dict, mutable: tuple[m.SubsegmentOffsets, ...], header: ExtendedHeader | None, file_size: int
) -> tuple[tuple[DataSegment, ...], tuple[memoryview, ...], DataSources]:
    raw_segments = layout["segments"]
    # Without an extended header (or with segment_base_offset 0) ExecuTorch reads segments
    # at their offsets from the start of the file; so does refsim.
    base = header.segment_base_offset if header else 0
    segments = []
    for i, (offset, size) in enumerate(raw_segments):
        if base + offset + size > file_size:
            raise ProgramError(
                f"bytes [{base + offset}, {base + offset + size}) overrun the {file_size}-byte file",
                f"segments[{i}]",
            )
        segments.append(DataSegment(offset, size))

    constant_segment: m.SubsegmentOffsets | None = layout["constant_segment"]
    constant_buffer = tuple(layout["constant_buffer"])
    constant_bytes: list[int] | None = None
    source = "constant segment"
    if constant_segment is not None and len(constant_segment.offsets) > 1:
        if constant_buffer:
            raise ProgramError(
                f"{len(constant_buffer)} entries, but constant_segment.offsets is used too",
                "constant_buffer",
            )
        constant_bytes = _subsegment_bytes(constant_segment, segments, "constant_segment")
    elif constant_buffer:
        constant_bytes = [len(b) for b in constant_buffer]
        source = "constant_buffer"
    mutable_bytes = []
    for j, sub in enumerate(mutable):
        mutable_bytes.append(_subsegment_bytes(sub, segments, f"mutable_data_segments[{j}]"))
    sources = DataSources(constant_bytes, mutable_bytes, len(segments), source)
    return tuple(segments), constant_buffer, sources


def _subsegment_bytes(sub: m.SubsegmentOffsets, segments: list[DataSegment], path: str) -> list[int]:
    if not 0 <= sub.segment_index < len(segments):
        raise ProgramError(
            f"segment index {sub.segment_index} out of range [0, {len(segments)})", f"{path}.segment_index"
        )
    size = segments[sub.segment_index].size
    for k, offset in enumerate(sub.offsets):
        if offset > size:
            raise ProgramError(f"offset {offset} beyond the {size}-byte segment", f"{path}.offsets[{k}]")
    return [size - offset for offset in sub.offsets]

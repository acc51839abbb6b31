"""Every check of the reader, by a program or file that fails exactly it.

Program-level cases run twice: the writer must refuse the program, and the reader must
refuse the file the writer produces with ``validate=False``; both name the same field.
"""

from __future__ import annotations

import struct
from dataclasses import replace

import pytest

from refsim.pte import (
    Allocation,
    BackendDelegate,
    Bool,
    Chain,
    DataLocation,
    DelegateCall,
    ExecutionPlan,
    ExtraTensorInfo,
    FreeCall,
    Int,
    IntList,
    JumpFalseCall,
    KernelCall,
    MoveCall,
    NamedData,
    Null,
    Operator,
    OptionalTensorList,
    Program,
    ProgramError,
    ScalarType,
    ShapeDynamism,
    String,
    SubsegmentOffsets,
    Tensor,
    TensorDataLocation,
    TensorList,
    load_program,
    write_program,
)
from refsim.pte import writer as writer_module

# Values: 0 constant weight, 1 planned input, 2 planned output, 3 Int, 4 IntList[3], 5 Bool,
# 6 TensorList[0, 1], 7 Null, 8 OptionalTensorList[0, -1, 7], 9 runtime tensor.
WEIGHT = Tensor(ScalarType.INT8, (2, 3), (0, 1), data_buffer_idx=1)
INPUT = Tensor(ScalarType.INT8, (1, 2, 2, 3), (0, 2, 3, 1), allocation=Allocation(1, 0))
OUTPUT = Tensor(ScalarType.INT32, (1, 2), (0, 1), allocation=Allocation(1, 16))
VALUES = (
    WEIGHT,
    INPUT,
    OUTPUT,
    Int(7),
    IntList((3,)),
    Bool(True),
    TensorList((0, 1)),
    Null(),
    OptionalTensorList((0, -1, 7)),
    Tensor(ScalarType.FLOAT32, (4,), (0,)),
)
INSTRUCTIONS = (
    KernelCall(0, (1, 0, 4, 2, 2)),
    MoveCall(3, 3),
    JumpFalseCall(5, 4),
    FreeCall(9),
    DelegateCall(0, (1, 2)),
)
PLAN = ExecutionPlan(
    name="forward",
    values=VALUES,
    inputs=(1,),
    outputs=(2,),
    chains=(Chain(inputs=(1,), outputs=(2,), instructions=INSTRUCTIONS),),
    operators=(Operator("cortex_m::quantized_linear", "out"),),
    delegates=(BackendDelegate("BackendX", DataLocation.INLINE, 0),),
    non_const_buffer_sizes=(0, 24),
)
PROGRAM = Program((PLAN,), backend_delegate_data=(b"blob",), named_data=(NamedData("lut", 1),))
CONSTANTS = [b"", bytes(range(6))]
SEGMENTS = [b"named"]


def _with_value(index, value):
    values = list(VALUES)
    values[index] = value
    return replace(PROGRAM, execution_plan=(replace(PLAN, values=tuple(values)),))


def _with_plan(**changes):
    return replace(PROGRAM, execution_plan=(replace(PLAN, **changes),))


def _with_instruction(instruction):
    return _with_plan(chains=(Chain(instructions=(*INSTRUCTIONS, instruction)),))


P = "execution_plan[0]"
V = f"{P}.values"
I = f"{P}.chains[0].instructions[5]"

PROGRAM_CASES = {
    "negative size": (_with_value(9, Tensor(ScalarType.FLOAT32, (4, -3), (0, 1))), f"{V}[9].tensor.sizes[1]"),
    "rank above 16": (
        _with_value(9, Tensor(ScalarType.FLOAT32, (1,) * 17, tuple(range(17)))),
        f"{V}[9].tensor.sizes",
    ),
    "dim_order length": (
        _with_value(9, Tensor(ScalarType.FLOAT32, (4, 1), (0,))),
        f"{V}[9].tensor.dim_order",
    ),
    "dim_order not a permutation": (
        _with_value(1, replace(INPUT, dim_order=(0, 2, 2, 1))),
        f"{V}[1].tensor.dim_order",
    ),
    "absurd numel": (
        _with_value(9, Tensor(ScalarType.INT64, (1 << 30, 1 << 30), (0, 1))),
        f"{V}[9].tensor.sizes",
    ),
    "storage_offset": (_with_value(9, replace(VALUES[9], storage_offset=2)), f"{V}[9].tensor.storage_offset"),
    "unknown scalar type": (_with_value(9, replace(VALUES[9], scalar_type=9)), f"{V}[9].tensor.scalar_type"),
    "unknown dynamism": (
        _with_value(9, replace(VALUES[9], shape_dynamism=3)),
        f"{V}[9].tensor.shape_dynamism",
    ),
    "external without name": (
        _with_value(9, replace(VALUES[9], extra=ExtraTensorInfo(location=TensorDataLocation.EXTERNAL))),
        f"{V}[9].tensor.extra_tensor_info.fully_qualified_name",
    ),
    "memory_id 0": (
        _with_value(1, replace(INPUT, allocation=Allocation(0, 0))),
        f"{V}[1].tensor.allocation_info.memory_id",
    ),
    "memory_id beyond arenas": (
        _with_value(1, replace(INPUT, allocation=Allocation(2, 0))),
        f"{V}[1].tensor.allocation_info.memory_id",
    ),
    "tensor outside its arena": (
        _with_value(2, replace(OUTPUT, allocation=Allocation(1, 17))),
        f"{V}[2].tensor.allocation_info",
    ),
    "arena too large": (_with_plan(non_const_buffer_sizes=(0, 1 << 40)), f"{P}.non_const_buffer_sizes[1]"),
    "negative arena": (_with_plan(non_const_buffer_sizes=(0, 24, -1)), f"{P}.non_const_buffer_sizes[2]"),
    "constant index beyond constants": (
        _with_value(0, replace(WEIGHT, data_buffer_idx=2)),
        f"{V}[0].tensor.data_buffer_idx",
    ),
    "constant larger than its data": (
        _with_value(0, replace(WEIGHT, sizes=(2, 4))),
        f"{V}[0].tensor.data_buffer_idx",
    ),
    "initial data without mutable segments": (
        _with_value(1, replace(INPUT, data_buffer_idx=1)),
        f"{V}[1].tensor.data_buffer_idx",
    ),
    "IntList item out of range": (_with_value(4, IntList((3, 10))), f"{V}[4].int_list.items[1]"),
    "IntList item not an Int": (_with_value(4, IntList((5,))), f"{V}[4].int_list.items[0]"),
    "TensorList item not a Tensor": (_with_value(6, TensorList((0, 3))), f"{V}[6].tensor_list.items[1]"),
    "TensorList forward reference": (_with_value(6, TensorList((9,))), f"{V}[6].tensor_list.items[0]"),
    "OptionalTensorList bad item": (
        _with_value(8, OptionalTensorList((-2,))),
        f"{V}[8].optional_tensor_list.items[0]",
    ),
    "Int beyond int64": (_with_value(3, Int(1 << 63)), f"{V}[3].int.int_val"),
    "input index": (_with_plan(inputs=(1, 10)), f"{P}.inputs[1]"),
    "output index": (_with_plan(outputs=(-1,)), f"{P}.outputs[0]"),
    "chain input index": (
        _with_plan(chains=(Chain(inputs=(11,), instructions=INSTRUCTIONS),)),
        f"{P}.chains[0].inputs[0]",
    ),
    "operator index": (_with_instruction(KernelCall(1, ())), f"{I}.kernel_call.op_index"),
    "kernel argument": (_with_instruction(KernelCall(0, (1, 10))), f"{I}.kernel_call.args[1]"),
    "delegate index": (_with_instruction(DelegateCall(1, ())), f"{I}.delegate_call.delegate_index"),
    "delegate argument": (_with_instruction(DelegateCall(0, (-1,))), f"{I}.delegate_call.args[0]"),
    "move source": (_with_instruction(MoveCall(10, 0)), f"{I}.move_call.move_from"),
    "move target": (_with_instruction(MoveCall(0, 10)), f"{I}.move_call.move_to"),
    "jump condition index": (
        _with_instruction(JumpFalseCall(10, 0)),
        f"{I}.jump_false_call.cond_value_index",
    ),
    "jump condition kind": (_with_instruction(JumpFalseCall(3, 0)), f"{I}.jump_false_call.cond_value_index"),
    "jump destination": (
        _with_instruction(JumpFalseCall(5, 7)),
        f"{I}.jump_false_call.destination_instruction",
    ),
    "free index": (_with_instruction(FreeCall(10)), f"{I}.free_call.value_index"),
    "free of a non-tensor": (_with_instruction(FreeCall(3)), f"{I}.free_call.value_index"),
    "stacktrace length": (
        _with_plan(chains=(Chain(instructions=INSTRUCTIONS, stacktrace=((),)),)),
        f"{P}.chains[0].stacktrace",
    ),
    "empty operator name": (_with_plan(operators=(Operator(""),)), f"{P}.operators[0].name"),
    "inline delegate index": (
        _with_plan(delegates=(BackendDelegate("X", DataLocation.INLINE, 1),)),
        f"{P}.delegates[0].processed.index",
    ),
    "segment delegate index": (
        _with_plan(delegates=(BackendDelegate("X", DataLocation.SEGMENT, 2),)),
        f"{P}.delegates[0].processed.index",
    ),
    "named data segment": (
        replace(PROGRAM, named_data=(NamedData("lut", 2),)),
        "named_data[0].segment_index",
    ),
    "duplicate named data": (
        replace(PROGRAM, named_data=(NamedData("a", 1), NamedData("a", 1))),
        "named_data[1].key",
    ),
}


def test_the_base_program_is_valid():
    pf = load_program(write_program(PROGRAM, CONSTANTS, segments=SEGMENTS))
    assert pf.program == PROGRAM


@pytest.mark.parametrize("case", PROGRAM_CASES)
def test_writer_and_reader_name_the_failing_field(case):
    program, path = PROGRAM_CASES[case]
    with pytest.raises(ProgramError) as written:
        write_program(program, CONSTANTS, segments=SEGMENTS)
    assert written.value.path == path, str(written.value)
    try:
        data = write_program(program, CONSTANTS, segments=SEGMENTS, validate=False)
    except ProgramError as e:  # does not fit the wire format at all: the writer's check is the only one
        assert "does not fit" in str(e)
        return
    with pytest.raises(ProgramError) as read:
        load_program(data)
    assert read.value.path == path, str(read.value)
    assert str(read.value).startswith(f"{path}: ")


# -- container and flatbuffer-structure checks, on bytes ------------------------------------


def _base() -> bytearray:
    return bytearray(write_program(PROGRAM, CONSTANTS, segments=SEGMENTS))


def _expect(data, path: str, match: str | None = None) -> None:
    with pytest.raises(ProgramError, match=match) as e:
        load_program(bytes(data))
    assert e.value.path == path, str(e.value)


def test_file_identifier():
    data = _base()
    data[4:8] = b"ET11"
    _expect(data, "file_identifier", "expected b'ET12', found b'ET11'")
    _expect(b"ET12", "", "too short")


def test_extended_header_fields():
    data = _base()
    data_size = struct.unpack_from("<Q", data, 32)[0]
    for offset, value, path in [
        (12, 16, "extended_header.length"),
        (16, len(data) + 1, "extended_header.program_size"),
        (16, 20, ""),  # the flatbuffer's root table now lies past the program's end
        (24, len(data) + 128, "extended_header.segment_data_size"),
        (32, data_size + 1, "extended_header.segment_data_size"),
    ]:
        bad = bytearray(data)
        struct.pack_into("<I" if offset == 12 else "<Q", bad, offset, value)
        _expect(bad, path)


def test_extended_header_values_executorch_accepts_load():
    """ExecuTorch's ExtendedHeader::Parse and Program::load accept a header length past the
    file and a segment base inside the program (tests/interop/test_loader_differential.py
    runs such files through its loader): refsim must not be stricter."""
    data = _base()
    program_size = struct.unpack_from("<Q", data, 16)[0]
    for offset, value in [(12, 1 << 20), (24, program_size - 8)]:
        ok = bytearray(data)
        struct.pack_into("<I" if offset == 12 else "<Q", ok, offset, value)
        load_program(bytes(ok))


def test_segments_must_lie_inside_the_file():
    data = _base()
    struct.pack_into("<Q", data, 32, 0)  # no segment_data_size: the segment table is checked alone
    _expect(data[:-3], "segments[1]", "overrun")
    _expect(data[: struct.unpack_from("<Q", data, 24)[0]], "segments[0]", "overrun")


def test_segments_without_a_base_offset_read_from_the_file_start():
    # ExecuTorch's loader accepts segment_base_offset 0 with data segments (it reads them at
    # offset 0 + segment offset); refsim reads the same bytes.
    data = _base()
    struct.pack_into("<Q", data, 24, 0)
    pf = load_program(bytes(data))
    assert bytes(pf.segment_data(0)) == bytes(data[pf.segments[0].offset :][: pf.segments[0].size])


def test_truncated_flatbuffer():
    data = write_program(PROGRAM, CONSTANTS, segments=SEGMENTS)
    with pytest.raises(ProgramError):
        load_program(data[:200])


class _Sabotage(writer_module._Builder):
    """Writes one deliberate structural fault the model cannot express."""

    def __init__(self, fault: str) -> None:
        super().__init__()
        self.fault = fault

    def evalue(self, v):
        if self.fault == "value tag" and isinstance(v, String):
            inner = self.table(1, [])
            return self.table(2, [("u8", 0, 12), ("ref", 1, inner)])
        if self.fault == "value body" and isinstance(v, Null):
            return self.table(2, [("u8", 0, int(v.kind))])
        return super().evalue(v)

    def instruction(self, i):
        if self.fault == "instruction tag" and isinstance(i, MoveCall):
            return self.table(2, [("u8", 0, 0)])
        return super().instruction(i)

    def tensor(self, t):
        if self.fault == "sizes" and t.scalar_type == ScalarType.FLOAT32:
            return self.table(10, [("i8", 0, int(t.scalar_type)), ("ref", 3, self.vec((0,), "u1"))])
        return super().tensor(t)

    def plan(self, plan):
        if self.fault == "plan name":
            return self.table(10, [])
        return super().plan(plan)


@pytest.mark.parametrize(
    ("fault", "path", "match"),
    [
        ("value tag", f"{V}[10].val_type", "unknown EValue type 12"),
        ("value body", f"{V}[7].null", "required field is missing"),
        ("instruction tag", f"{P}.chains[0].instructions[1].instr_args_type", "unknown instruction type 0"),
        ("sizes", f"{V}[9].tensor.sizes", "required field is missing"),
        ("plan name", f"{P}.name", "required field is missing"),
    ],
)
def test_structural_faults(monkeypatch, fault, path, match):
    monkeypatch.setattr(writer_module, "_Builder", lambda: _Sabotage(fault))
    program = PROGRAM if fault != "value tag" else _with_plan(values=(*VALUES, String("x")))
    _expect(write_program(program, CONSTANTS, segments=SEGMENTS, validate=False), path, match)


def test_constant_buffer_and_constant_segment_are_exclusive(monkeypatch):
    program = replace(PROGRAM, named_data=())  # the legacy layout has no constant segment 0
    legacy = write_program(program, CONSTANTS, legacy_constant_buffer=True)
    assert load_program(legacy, allow_legacy_constant_buffer=True).uses_legacy_constant_buffer

    class Both(writer_module._Builder):
        def program(self, p, offsets, legacy, segments):
            return super().program(p, offsets, [b"", b"abc"], segments)

    monkeypatch.setattr(writer_module, "_Builder", Both)
    _expect(
        write_program(PROGRAM, CONSTANTS, segments=SEGMENTS), "constant_buffer", "constant_segment.offsets"
    )


def test_constant_offsets_inside_their_segment():
    program = replace(PROGRAM, mutable_data_segments=(SubsegmentOffsets(1, (0, 6)),))
    with pytest.raises(ProgramError) as e:
        write_program(program, CONSTANTS, segments=SEGMENTS)
    assert e.value.path == "mutable_data_segments[0].offsets[1]"
    data = write_program(program, CONSTANTS, segments=SEGMENTS, validate=False)
    _expect(data, "mutable_data_segments[0].offsets[1]", "beyond the 5-byte segment")


def test_dynamic_unbound_tensors_are_accepted():
    program = _with_value(9, replace(VALUES[9], shape_dynamism=ShapeDynamism.DYNAMIC_UNBOUND))
    assert load_program(write_program(program, CONSTANTS, segments=SEGMENTS)).program == program


def test_a_repeated_method_name_loads_and_names_the_first_plan():
    """ExecuTorch's loader accepts two plans of one name; its get_execution_plan finds the first."""
    second = replace(PLAN, inputs=())
    pf = load_program(
        write_program(replace(PROGRAM, execution_plan=(PLAN, second)), CONSTANTS, segments=SEGMENTS)
    )
    assert pf.program.plan(PLAN.name) == PLAN

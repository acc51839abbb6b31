"""Vtable slot of every field of schema/program.fbs, for the hand-written reader and writer.

A flatbuffer table stores field ``i`` (in schema order) at vtable slot ``i``; a union field
takes two slots, ``<name>_type`` then ``<name>``. These tuples list the fields of each table
in that order. tests/pte/test_schema.py parses schema/program.fbs and checks that it yields
exactly this table, so the schema file stays the source of truth.
"""

from __future__ import annotations

TABLES: dict[str, tuple[str, ...]] = {
    "ContainerMetadata": ("encoded_inp_str", "encoded_out_str"),
    "Null": (),
    "AllocationDetails": ("memory_id", "memory_offset_low", "memory_offset_high"),
    "ExtraTensorInfo": (
        "mutable_data_segments_idx",
        "fully_qualified_name",
        "location",
        "device_type",
        "device_index",
    ),
    "Tensor": (
        "scalar_type",
        "storage_offset",
        "sizes",
        "dim_order",
        "requires_grad",
        "data_buffer_idx",
        "allocation_info",
        "layout",
        "shape_dynamism",
        "extra_tensor_info",
    ),
    "Int": ("int_val",),
    "Bool": ("bool_val",),
    "Double": ("double_val",),
    "String": ("string_val",),
    "IntList": ("items",),
    "DoubleList": ("items",),
    "BoolList": ("items",),
    "TensorList": ("items",),
    "OptionalTensorList": ("items",),
    "EValue": ("val_type", "val"),
    "Operator": ("name", "overload"),
    "KernelCall": ("op_index", "args"),
    "DelegateCall": ("delegate_index", "args"),
    "MoveCall": ("move_from", "move_to"),
    "JumpFalseCall": ("cond_value_index", "destination_instruction"),
    "FreeCall": ("value_index",),
    "Instruction": ("instr_args_type", "instr_args"),
    "Frame": ("filename", "lineno", "name", "context"),
    "FrameList": ("items",),
    "BackendDelegateDataReference": ("location", "index"),
    "CompileSpec": ("key", "value"),
    "BackendDelegate": ("id", "processed", "compile_specs"),
    "Chain": ("inputs", "outputs", "instructions", "stacktrace"),
    "ExecutionPlan": (
        "name",
        "container_meta_type",
        "values",
        "inputs",
        "outputs",
        "chains",
        "operators",
        "delegates",
        "non_const_buffer_sizes",
        "non_const_buffer_device",
    ),
    "NonConstBufferDevice": ("buffer_idx", "device_type", "device_index"),
    "Buffer": ("storage",),
    "BackendDelegateInlineData": ("data",),
    "DataSegment": ("offset", "size"),
    "SubsegmentOffsets": ("segment_index", "offsets"),
    "NamedData": ("key", "segment_index"),
    "Program": (
        "version",
        "execution_plan",
        "constant_buffer",
        "backend_delegate_data",
        "segments",
        "constant_segment",
        "mutable_data_segments",
        "named_data",
    ),
}


class Slots:
    """One table's slots as attributes: ``S.Tensor.sizes == 2``; ``S.Tensor.n_fields == 10``."""

    def __init__(self, fields: tuple[str, ...]) -> None:
        for slot, name in enumerate(fields):
            setattr(self, name, slot)
        self.n_fields = len(fields)

    def __getattr__(self, name: str) -> int:  # only reached for a misspelt field
        raise AttributeError(f"no field {name!r} in this table")


class _AllSlots:
    def __init__(self) -> None:
        for table, fields in TABLES.items():
            setattr(self, table, Slots(fields))

    def __getattr__(self, name: str) -> Slots:  # only reached for a misspelt table
        raise AttributeError(f"no table {name!r} in the schema")


#: ``S.<Table>.<field>`` is that field's vtable slot.
S = _AllSlots()

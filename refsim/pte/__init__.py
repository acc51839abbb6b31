"""The ExecuTorch program format (.pte): model, validating reader, writer.

    from refsim.pte import load_program, write_program
    pf = load_program("model.pte")           # ProgramFile; raises ProgramError
    plan = pf.program.plan("forward")
    weights = pf.constant_data(plan.values[3])   # read-only numpy view of the file
    data = write_program(pf.program, pf.constants())

See docs/pte.md for what is supported and checked.
"""

from refsim.pte.errors import ProgramError
from refsim.pte.model import (
    Allocation,
    BackendDelegate,
    Bool,
    BoolList,
    Chain,
    CompileSpec,
    ContainerMetadata,
    DataLocation,
    DelegateCall,
    DeviceType,
    Double,
    DoubleList,
    EValue,
    ExecutionPlan,
    ExtraTensorInfo,
    Frame,
    FreeCall,
    Instruction,
    InstructionKind,
    Int,
    IntList,
    JumpFalseCall,
    KernelCall,
    MoveCall,
    NamedData,
    NonConstBufferDevice,
    Null,
    Operator,
    OptionalTensorList,
    Program,
    ScalarType,
    ShapeDynamism,
    String,
    SubsegmentOffsets,
    Tensor,
    TensorDataLocation,
    TensorList,
    ValueKind,
)
from refsim.pte.reader import DataSegment, ExtendedHeader, ProgramFile, load_program


def __getattr__(name: str):
    """The writer (and flatbuffers) is imported on first use: running a program never writes one."""
    if name in ("rewrite_program", "write_program"):
        from refsim.pte import writer

        return getattr(writer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Allocation",
    "BackendDelegate",
    "Bool",
    "BoolList",
    "Chain",
    "CompileSpec",
    "ContainerMetadata",
    "DataLocation",
    "DataSegment",
    "DelegateCall",
    "DeviceType",
    "Double",
    "DoubleList",
    "EValue",
    "ExecutionPlan",
    "ExtendedHeader",
    "ExtraTensorInfo",
    "Frame",
    "FreeCall",
    "Instruction",
    "InstructionKind",
    "Int",
    "IntList",
    "JumpFalseCall",
    "KernelCall",
    "MoveCall",
    "NamedData",
    "NonConstBufferDevice",
    "Null",
    "Operator",
    "OptionalTensorList",
    "Program",
    "ProgramError",
    "ProgramFile",
    "ScalarType",
    "ShapeDynamism",
    "String",
    "SubsegmentOffsets",
    "Tensor",
    "TensorDataLocation",
    "TensorList",
    "ValueKind",
    "load_program",
    "rewrite_program",
    "write_program",
]

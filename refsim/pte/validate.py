"""Semantic checks of a `Program`, shared by the reader (at load) and the writer (before writing).

Structure (offsets, vectors, union tags) is the reader's business; this module checks what
the runtime will trust afterwards: every value, operator and delegate index in range and of
the right kind, tensors well formed (rank, non-negative sizes, dim_order a permutation,
sizes not absurd), memory-planned tensors inside their arena, constant tensors inside the
constant data. Each failure names the field path, e.g.
``execution_plan[0].values[12].tensor.sizes[1]: negative size -3``.

Operator semantics (known names, argument counts and kinds) belong to the op registry.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from refsim.pte.errors import ProgramError
from refsim.pte.model import (
    MAX_TENSOR_RANK,
    Bool,
    DataLocation,
    DelegateCall,
    DeviceType,
    ExecutionPlan,
    FreeCall,
    Int,
    IntList,
    JumpFalseCall,
    KernelCall,
    MoveCall,
    Null,
    OptionalTensorList,
    Program,
    ScalarType,
    ShapeDynamism,
    Tensor,
    TensorDataLocation,
    TensorList,
)

#: Largest tensor and arena refsim accepts (4 GiB): far above any Cortex-M model, and low
#: enough that a corrupt size cannot make the runtime allocate absurd amounts of memory.
MAX_TENSOR_BYTES = 1 << 32
MAX_ARENA_BYTES = 1 << 32

_INT32_MAX = (1 << 31) - 1

#: Program.version that ExecuTorch 1.5's runtime accepts at most ("Program schema version
#: N is newer than the highest this runtime supports").
MAX_SCHEMA_VERSION = 0


@dataclass(frozen=True)
class DataSources:
    """What constant data a file (or a writer's input) provides, for the tensor checks.

    ``constant_bytes[k]`` is how many bytes are readable from constant ``k`` on (k = 0 is
    reserved), or None when the program has no constant data at all.
    ``mutable_bytes[j][k]`` is the same for ``mutable_data_segments[j]``.
    """

    constant_bytes: Sequence[int] | None
    mutable_bytes: Sequence[Sequence[int]] = ()
    n_segments: int = 0
    constant_source: str = "constant segment"
    #: For each data_buffer_idx, the tensors referring to it: filled by validate_program.
    users: dict[int, list[Tensor]] = field(default_factory=dict)


def validate_program(program: Program, sources: DataSources) -> None:
    """Raise ProgramError naming the first field of ``program`` that fails a check."""
    if not 0 <= program.version <= MAX_SCHEMA_VERSION:
        raise ProgramError(
            f"schema version {program.version}; ExecuTorch 1.5 reads versions up to {MAX_SCHEMA_VERSION}",
            "version",
        )
    # Two plans may share a name: ExecuTorch's loader accepts that and its get_execution_plan
    # (like `Program.plan`) returns the first.
    for i, plan in enumerate(program.execution_plan):
        path = f"execution_plan[{i}]"
        if "\x00" in plan.name:
            raise ProgramError("contains a NUL (ExecuTorch reads method names as C strings)", f"{path}.name")
        _check_plan(plan, program, sources, path)
    keys: set[str] = set()
    for i, entry in enumerate(program.named_data):
        if entry.key in keys:
            raise ProgramError(f"duplicate key {entry.key!r}", f"named_data[{i}].key")
        keys.add(entry.key)
        _check_index(entry.segment_index, sources.n_segments, f"named_data[{i}].segment_index", "segment")
    for i, sub in enumerate(program.mutable_data_segments):
        _check_index(
            sub.segment_index, sources.n_segments, f"mutable_data_segments[{i}].segment_index", "segment"
        )


def _check_index(index: int, count: int, path: str, what: str, low: int = 0) -> None:
    if not low <= index < count:
        raise ProgramError(f"{what} index {index} out of range [{low}, {count})", path)


def _check_enum(value: object, enum_type: type, path: str) -> None:
    if value not in enum_type._value2member_map_:  # type: ignore[attr-defined]
        raise ProgramError(f"unknown {enum_type.__name__} {value!r}", path)


def _check_plan(plan: ExecutionPlan, program: Program, sources: DataSources, path: str) -> None:
    n_values = len(plan.values)
    arenas = plan.non_const_buffer_sizes
    for m, size in enumerate(arenas):
        if not 0 <= size <= MAX_ARENA_BYTES:
            raise ProgramError(
                f"arena of {size} bytes: must be in [0, {MAX_ARENA_BYTES}]",
                f"{path}.non_const_buffer_sizes[{m}]",
            )
    for d, device in enumerate(plan.non_const_buffer_device or ()):
        dpath = f"{path}.non_const_buffer_device[{d}]"
        _check_index(device.buffer_idx, len(arenas), f"{dpath}.buffer_idx", "buffer")
        _check_enum(device.device_type, DeviceType, f"{dpath}.device_type")

    values = plan.values
    for v, value in enumerate(values):
        vpath = f"{path}.values[{v}]"
        if isinstance(value, Tensor):
            _check_tensor(value, plan, sources, f"{vpath}.tensor")
        elif isinstance(value, Int):
            if not -(1 << 63) <= value.value < 1 << 63:
                raise ProgramError(f"{value.value} does not fit an int64", f"{vpath}.int.int_val")
        elif isinstance(value, IntList):
            for j, item in enumerate(value.items):
                ipath = f"{vpath}.int_list.items[{j}]"
                _check_index(item, n_values, ipath, "value")
                if not isinstance(values[item], Int):
                    raise ProgramError(
                        f"value {item} is a {type(values[item]).__name__}, expected Int", ipath
                    )
        elif isinstance(value, TensorList | OptionalTensorList):
            optional = isinstance(value, OptionalTensorList)
            name = "optional_tensor_list" if optional else "tensor_list"
            for j, item in enumerate(value.items):
                ipath = f"{vpath}.{name}.items[{j}]"
                if optional and item == -1:
                    continue
                # ExecuTorch builds values in order and unboxes list items while building.
                _check_index(item, v, ipath, "value (must come before the list)")
                kinds = (Tensor, Null) if optional else (Tensor,)
                if not isinstance(values[item], kinds):
                    want = "Tensor or Null" if optional else "Tensor"
                    raise ProgramError(
                        f"value {item} is a {type(values[item]).__name__}, expected {want}", ipath
                    )

    for name in ("inputs", "outputs"):
        for j, index in enumerate(getattr(plan, name)):
            _check_index(index, n_values, f"{path}.{name}[{j}]", "value")
    for o, op in enumerate(plan.operators):
        if not op.name:
            raise ProgramError("empty operator name", f"{path}.operators[{o}].name")
    for d, delegate in enumerate(plan.delegates):
        dpath = f"{path}.delegates[{d}]"
        _check_enum(delegate.location, DataLocation, f"{dpath}.processed.location")
        if delegate.location == DataLocation.INLINE:
            count, what = len(program.backend_delegate_data), "backend_delegate_data"
        else:
            count, what = sources.n_segments, "segment"
        _check_index(delegate.index, count, f"{dpath}.processed.index", what)
    for c, chain in enumerate(plan.chains):
        _check_chain(chain, plan, f"{path}.chains[{c}]")


def _check_chain(chain, plan: ExecutionPlan, path: str) -> None:
    n_values = len(plan.values)
    for name in ("inputs", "outputs"):
        for j, index in enumerate(getattr(chain, name)):
            _check_index(index, n_values, f"{path}.{name}[{j}]", "value")
    n_instructions = len(chain.instructions)
    if chain.stacktrace is not None and len(chain.stacktrace) != n_instructions:
        raise ProgramError(
            f"{len(chain.stacktrace)} frame lists for {n_instructions} instructions", f"{path}.stacktrace"
        )
    for n, instruction in enumerate(chain.instructions):
        ipath = f"{path}.instructions[{n}]"
        if isinstance(instruction, KernelCall):
            ipath += ".kernel_call"
            _check_index(instruction.op_index, len(plan.operators), f"{ipath}.op_index", "operator")
            for j, arg in enumerate(instruction.args):
                _check_index(arg, n_values, f"{ipath}.args[{j}]", "value")
        elif isinstance(instruction, DelegateCall):
            ipath += ".delegate_call"
            _check_index(
                instruction.delegate_index, len(plan.delegates), f"{ipath}.delegate_index", "delegate"
            )
            for j, arg in enumerate(instruction.args):
                _check_index(arg, n_values, f"{ipath}.args[{j}]", "value")
        elif isinstance(instruction, MoveCall):
            _check_index(instruction.move_from, n_values, f"{ipath}.move_call.move_from", "value")
            _check_index(instruction.move_to, n_values, f"{ipath}.move_call.move_to", "value")
        elif isinstance(instruction, JumpFalseCall):
            ipath += ".jump_false_call"
            index = instruction.cond_value_index
            _check_index(index, n_values, f"{ipath}.cond_value_index", "value")
            if not isinstance(plan.values[index], Bool | Tensor):
                found = type(plan.values[index]).__name__
                raise ProgramError(
                    f"value {index} is a {found}, expected Bool or Tensor", f"{ipath}.cond_value_index"
                )
            # Jumping to n_instructions ends the chain.
            _check_index(
                instruction.destination_instruction,
                n_instructions + 1,
                f"{ipath}.destination_instruction",
                "instruction",
            )
        elif isinstance(instruction, FreeCall):
            index = instruction.value_index
            _check_index(index, n_values, f"{ipath}.free_call.value_index", "value")
            if not isinstance(plan.values[index], Tensor):
                found = type(plan.values[index]).__name__
                raise ProgramError(
                    f"value {index} is a {found}, expected Tensor", f"{ipath}.free_call.value_index"
                )
        else:
            raise ProgramError(f"{type(instruction).__name__} is not an instruction", ipath)


def _check_tensor(t: Tensor, plan: ExecutionPlan, sources: DataSources, path: str) -> None:
    _check_enum(t.scalar_type, ScalarType, f"{path}.scalar_type")
    _check_enum(t.shape_dynamism, ShapeDynamism, f"{path}.shape_dynamism")
    if t.storage_offset != 0:
        raise ProgramError(
            f"must be 0 (ExecuTorch supports no other), found {t.storage_offset}", f"{path}.storage_offset"
        )
    if not -128 <= t.layout < 128:
        raise ProgramError(f"{t.layout} does not fit an int8", f"{path}.layout")
    rank = len(t.sizes)
    if rank > MAX_TENSOR_RANK:
        raise ProgramError(f"rank {rank} exceeds ExecuTorch's limit of {MAX_TENSOR_RANK}", f"{path}.sizes")
    for d, size in enumerate(t.sizes):
        if size < 0:
            raise ProgramError(f"negative size {size}", f"{path}.sizes[{d}]")
        if size > _INT32_MAX:
            raise ProgramError(f"size {size} does not fit an int32", f"{path}.sizes[{d}]")
    if len(t.dim_order) != rank:
        raise ProgramError(f"{len(t.dim_order)} entries for a rank-{rank} tensor", f"{path}.dim_order")
    if sorted(t.dim_order) != list(range(rank)):
        raise ProgramError(f"{list(t.dim_order)} is not a permutation of range({rank})", f"{path}.dim_order")
    nbytes = math.prod(t.sizes) * ScalarType(t.scalar_type).itemsize
    if nbytes > MAX_TENSOR_BYTES:
        raise ProgramError(f"{nbytes} bytes exceeds refsim's limit of {MAX_TENSOR_BYTES}", f"{path}.sizes")

    extra = t.extra
    if extra is not None:
        epath = f"{path}.extra_tensor_info"
        _check_enum(extra.location, TensorDataLocation, f"{epath}.location")
        _check_enum(extra.device_type, DeviceType, f"{epath}.device_type")
        if not -128 <= extra.device_index < 128:
            raise ProgramError(f"{extra.device_index} does not fit an int8", f"{epath}.device_index")
        if extra.location == TensorDataLocation.EXTERNAL and not extra.fully_qualified_name:
            raise ProgramError(
                "an EXTERNAL tensor needs a fully_qualified_name", f"{epath}.fully_qualified_name"
            )

    if t.allocation is not None:
        apath = f"{path}.allocation_info"
        arenas = plan.non_const_buffer_sizes
        memory_id = t.allocation.memory_id
        if memory_id == 0:
            raise ProgramError("memory_id 0 is reserved", f"{apath}.memory_id")
        _check_index(memory_id, len(arenas), f"{apath}.memory_id", "arena (non_const_buffer_sizes)", low=1)
        offset = t.allocation.offset
        if offset < 0 or offset + nbytes > arenas[memory_id]:
            raise ProgramError(
                f"bytes [{offset}, {offset + nbytes}) outside arena {memory_id} of {arenas[memory_id]} bytes",
                apath,
            )

    k = t.data_buffer_idx
    if k < 0:
        raise ProgramError(f"negative index {k}", f"{path}.data_buffer_idx")
    if k == 0 or t.is_external:
        return
    if t.allocation is None:
        available = sources.constant_bytes
        where = sources.constant_source
    else:
        j = 0 if extra is None else extra.mutable_data_segments_idx
        if j >= len(sources.mutable_bytes):
            raise ProgramError(
                f"data in mutable_data_segments[{j}], but the program has {len(sources.mutable_bytes)}",
                f"{path}.data_buffer_idx",
            )
        available = sources.mutable_bytes[j]
        where = f"mutable_data_segments[{j}]"
    if not available:
        raise ProgramError(f"{k} but the program has no {where}", f"{path}.data_buffer_idx")
    _check_index(k, len(available), f"{path}.data_buffer_idx", f"{where} entry", low=1)
    if nbytes > available[k]:
        raise ProgramError(
            f"the tensor needs {nbytes} bytes but only {available[k]} remain in the {where} from entry {k}",
            f"{path}.data_buffer_idx",
        )
    if t.allocation is None:
        sources.users.setdefault(k, []).append(t)

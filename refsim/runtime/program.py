"""`Program` and `Method`: load a validated .pte and execute a method in its planned arenas.

Load does all the checking (the file via refsim.pte, the memory plan via `verify_plan`,
every KernelCall against its op's schema and validator); `Method.execute` then trusts it and
stays a small loop over the instruction chain. One zero-filled buffer per ``mem_id``
(``non_const_buffer_sizes[i]``; entry 0 reserved); every memory-planned tensor is a numpy
view at its planned offset; constants are read-only views of the (mmapped) file; tensors
that are neither are given private buffers (they are supplied at run time).

Arenas are anonymous memory maps, whose pages the OS zero-fills when first touched: a
method costs the memory its tensors use, not what its header declares (a corrupt arena
size, up to the 4 GiB the reader allows, loads in microseconds). An allocation the OS
refuses (an arena, a private buffer, a kernel's temporaries) is an `ExecutionError`, never a
MemoryError.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from refsim.errors import RefsimError, UnsupportedError
from refsim.formats import TFLITE, model_format
from refsim.ops.divergence import Divergence
from refsim.ops.registry import Args, OpDef, OpError, lookup
from refsim.pte import ProgramError, ProgramFile, load_program
from refsim.pte import model as m
from refsim.runtime.plan import verify_plan
from refsim.runtime.tensor import TensorRef


class ExecutionError(RefsimError):
    """A method could not run to completion (bad inputs, a loop past the bound, ...)."""


@dataclass(frozen=True)
class BoundCall:
    """A KernelCall resolved at load: its op, argument value indices and bound `Args`."""

    instruction: int
    op: OpDef
    arg_indices: tuple[int, ...]
    args: Args


#: Hook signature for tracing: (instruction index, bound call or None, phase "before"/"after").
TraceHook = Callable[[int, BoundCall | None, str], None]


class Method:
    """One execution plan, with its own arenas."""

    def __init__(self, program: Program, plan: m.ExecutionPlan) -> None:
        self.program = program
        self.plan = plan
        self.name = plan.name
        if not plan.chains:
            raise UnsupportedError(f"method {plan.name!r} has no instruction chain")
        if len(plan.chains) > 1:
            raise UnsupportedError(f"method {plan.name!r} has {len(plan.chains)} chains; refsim runs one")
        self.placements = verify_plan(plan)
        self.arenas = [self._arena(k, size) for k, size in enumerate(plan.non_const_buffer_sizes)]
        self.values: list[Any] = [self._materialize(i, v) for i, v in enumerate(plan.values)]
        self.instructions = plan.chains[0].instructions
        self.has_moves = any(isinstance(ins, m.MoveCall) for ins in self.instructions)
        self.calls: list[BoundCall | None] = [self._bind(i, ins) for i, ins in enumerate(self.instructions)]
        self._check_moves()
        self.inputs: list[TensorRef | Any] = [self.values[i] for i in plan.inputs]
        self.outputs: list[TensorRef | Any] = [self.values[i] for i in plan.outputs]
        for k, slot in enumerate(self.inputs):
            if isinstance(slot, TensorRef) and slot.meta.is_constant:
                raise ProgramError(
                    f"method {self.name!r}: input{k} (values[{plan.inputs[k]}]) is a constant tensor; "
                    "an input must be writable"
                )

    # --- load ------------------------------------------------------------------------

    def _arena(self, index: int, size: int) -> bytearray | mmap.mmap:
        if index == 0 or size == 0:  # entry 0 is reserved: no tensor lives there (mem_id >= 1)
            return bytearray()
        try:
            # private, as heap memory: a forked process gets its own copy on write
            return mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE)
        except (OSError, OverflowError, MemoryError) as exc:
            raise ExecutionError(
                f"method {self.name!r}: cannot allocate arena {index} of {size} bytes ({exc})"
            ) from None

    def _materialize(self, index: int, v: m.EValue) -> Any:
        if isinstance(v, m.Tensor):
            return self._tensor(index, v)
        if isinstance(v, m.Null):
            return None
        if isinstance(v, m.Int | m.Bool | m.Double | m.String):
            return v.value
        if isinstance(v, m.IntList):
            return tuple(self.plan.values[i].value for i in v.items)  # validated: items are Int values
        if isinstance(v, m.DoubleList | m.BoolList):
            return tuple(v.items)
        return v  # tensor lists are resolved after every tensor exists (_resolve)

    def _tensor(self, index: int, t: m.Tensor) -> TensorRef:
        dtype = t.scalar_type.numpy_dtype
        if dtype is None:
            raise UnsupportedError(f"values[{index}]: tensors of type {t.scalar_type.name} are not supported")
        shape = t.storage_shape
        if t.is_constant:
            storage = self.program.file.constant_data(t)
        elif t.allocation is not None:
            arena = self.arenas[t.allocation.memory_id]
            storage = np.frombuffer(arena, dtype=dtype, count=t.numel, offset=t.allocation.offset).reshape(
                shape
            )
        else:
            try:
                storage = np.zeros(shape, dtype)
            except MemoryError:
                raise ExecutionError(
                    f"method {self.name!r}: cannot allocate values[{index}] ({t.nbytes} bytes)"
                ) from None
        return TensorRef(index, t, storage)

    def resolve(self, index: int) -> Any:
        """Value ``index`` as an operator receives it: a tensor list as the list of its tensors."""
        v = self.values[index]
        if isinstance(v, m.TensorList):
            return [self.values[i] for i in v.items]
        if isinstance(v, m.OptionalTensorList):
            return [None if i < 0 else self.values[i] for i in v.items]
        return v

    def _bind(self, position: int, ins: m.Instruction) -> BoundCall | None:
        if isinstance(ins, m.DelegateCall):
            backend = self.plan.delegates[ins.delegate_index].id
            raise UnsupportedError(
                f"method {self.name!r} instruction {position}: delegate {backend!r} is not supported "
                "(refsim runs the cortex_m operator dialect; lower without a delegate)"
            )
        if not isinstance(ins, m.KernelCall):
            return None
        operator = self.plan.operators[ins.op_index]
        op = lookup(operator.qualified_name)
        schema_args = op.schema.args
        n = len(schema_args)
        n_out = len(op.schema.outputs)
        # Returns follow the schema args: the out index again, or, for ops with several
        # outputs (max_pool2d_with_indices, batch norm), one TensorList holding them.
        returns = (0, n_out) if n_out <= 1 else (0, n_out, 1)
        if len(ins.args) - n not in returns:
            raise OpError(
                f"{op.name} (instruction {position}): expected {n} arguments (+{n_out} return), "
                f"got {len(ins.args)}"
            )
        values = []
        for spec, index in zip(schema_args, ins.args[:n], strict=True):
            kind = self.plan.values[index].kind
            if kind not in spec.kinds:
                expected = " or ".join(k.name for k in spec.kinds)
                raise OpError(
                    f"{op.name} (instruction {position}): argument {spec.name} ({spec.type}) "
                    f"must be {expected}, got {kind.name} (values[{index}])"
                )
            value = self.resolve(index)
            if spec.is_out and isinstance(value, TensorRef) and value.meta.is_constant:
                raise OpError(
                    f"{op.name} (instruction {position}): argument {spec.name} must be a writable "
                    f"tensor, got the constant values[{index}]"
                )
            values.append(value)
        args = Args(op.name, position, tuple(a.name for a in schema_args), values)
        if op.validate is not None:
            op.validate(args)
        return BoundCall(position, op, tuple(ins.args[:n]), args)

    def _check_moves(self) -> None:
        """A MoveCall rebinds a value that operators were validated (and prepared) against at
        load, so it must bring the same kind of value: for a tensor the same dtype, sizes and
        dim_order, and nothing read-only where an operator writes; any other value equal to
        the one it replaces. (ExecuTorch emits moves for control-flow outputs, which satisfy
        this.)"""
        if not self.has_moves:
            return
        written = {
            index
            for call in self.calls
            if call is not None
            for spec, index in zip(call.op.schema.args, call.arg_indices, strict=True)
            if spec.is_out
        }
        values = self.plan.values
        for position, ins in enumerate(self.instructions):
            if not isinstance(ins, m.MoveCall):
                continue
            src, dst = values[ins.move_from], values[ins.move_to]
            where = (
                f"method {self.name!r} instruction {position}: "
                f"MoveCall values[{ins.move_from}] -> values[{ins.move_to}]"
            )
            if type(src) is not type(dst):
                raise ProgramError(
                    f"{where} moves a value of kind {src.kind.name} into one of kind {dst.kind.name}"
                )
            if isinstance(src, m.Tensor):
                assert isinstance(dst, m.Tensor)
                if (src.scalar_type, src.sizes, src.dim_order) != (dst.scalar_type, dst.sizes, dst.dim_order):
                    raise ProgramError(
                        f"{where} moves a tensor {src.scalar_type.name} {list(src.sizes)} (dim_order "
                        f"{list(src.dim_order)}) into a tensor {dst.scalar_type.name} {list(dst.sizes)} "
                        f"(dim_order {list(dst.dim_order)})"
                    )
                if src.is_constant and ins.move_to in written:
                    raise ProgramError(f"{where} moves a constant into a tensor an operator writes")
            elif src != dst:
                raise ProgramError(
                    f"{where} changes a {src.kind.name} value the operators were checked against"
                )

    def divergences(self, isa: str = "mve") -> list[Divergence]:
        """Every call whose device result departs from its operator's definition on ``isa``:
        the layouts the validators found at load, then what the ISA's CMSIS-NN build ignores
        or refuses (see refsim.ops.divergence), in instruction order."""
        found: dict[tuple, Divergence] = {}
        for call in self.calls:
            if call is None:
                continue
            extra = call.op.divergences(call.args, isa) if call.op.divergences else []
            for d in (*call.args.divergences, *extra):
                found.setdefault((d.instruction, d.kind, d.reason), d)
        return sorted(found.values(), key=lambda d: d.instruction)

    # --- execution -------------------------------------------------------------------

    def set_inputs(self, inputs: Sequence[np.ndarray | int | float | bool]) -> None:
        """Copy inputs (logical shape, the tensor's dtype) into their planned slots."""
        if len(inputs) != len(self.inputs):
            raise ExecutionError(f"method {self.name!r} takes {len(self.inputs)} inputs, got {len(inputs)}")
        for k, (slot, value) in enumerate(zip(self.inputs, inputs, strict=True)):
            if not isinstance(slot, TensorRef):
                if value != slot:
                    raise ExecutionError(f"input{k}: this method was exported with the constant {slot!r}")
                continue
            arr = np.asarray(value)
            if arr.shape != tuple(slot.sizes):
                raise ExecutionError(f"input{k}: expected shape {list(slot.sizes)}, got {list(arr.shape)}")
            if arr.dtype != slot.dtype:
                raise ExecutionError(f"input{k}: expected dtype {slot.dtype}, got {arr.dtype}")
            slot.write(arr)

    def execute(
        self,
        inputs: Sequence[np.ndarray | int | float | bool] | None = None,
        *,
        max_instructions: int | None = None,
        trace: TraceHook | None = None,
    ) -> list[np.ndarray | Any]:
        """Run the chain; return copies of the outputs in logical shape."""
        if inputs is not None:
            self.set_inputs(inputs)
        instructions = self.instructions
        calls = self.calls
        limit = (
            max_instructions if max_instructions is not None else 1000 * max(len(instructions), 1) + 10_000
        )
        pc = 0
        executed = 0
        while pc < len(instructions):
            executed += 1
            if executed > limit:
                raise ExecutionError(
                    f"method {self.name!r} executed more than {limit} instructions (a jump loop?); stopped"
                )
            call = calls[pc]
            if call is not None:
                if self.has_moves:
                    call.args._values[:] = [self.resolve(i) for i in call.arg_indices]
                if trace is not None:
                    trace(pc, call, "before")
                try:
                    call.op.run(call.args)
                except MemoryError:  # a kernel's temporaries on a big program under a memory cap
                    raise ExecutionError(f"{call.op.name} (instruction {pc}): out of memory") from None
                if trace is not None:
                    trace(pc, call, "after")
                pc += 1
                continue
            ins = instructions[pc]
            if isinstance(ins, m.JumpFalseCall):
                cond = self.values[ins.cond_value_index]
                if isinstance(cond, TensorRef):
                    cond = bool(cond.storage.reshape(-1)[0])
                pc = pc + 1 if cond else ins.destination_instruction
            elif isinstance(ins, m.MoveCall):
                self.values[ins.move_to] = self.values[ins.move_from]
                pc += 1
            else:  # FreeCall: memory is planned, nothing to release
                pc += 1
        # Read the output values after the run, as ExecuTorch does: a MoveCall may rebind them.
        outputs = [self.values[i] for i in self.plan.outputs]
        return [v.logical.copy() if isinstance(v, TensorRef) else v for v in outputs]

    def execute_batch(
        self,
        inputs: Sequence[Any],
        *,
        workers: int | None = None,
        progress: Callable[[int], None] | None = None,
        stacked: bool = True,
    ) -> list[np.ndarray | list[Any]]:
        """Run N samples (every tensor input with a leading sample axis of N); outputs come back with
        the same leading axis. Sample ``i`` gets exactly the bits ``execute`` returns for it: each worker
        thread runs S samples per kernel call through a stacked copy of the plan (refsim.runtime.stack)
        or, when the program does not stack or ``stacked`` is False, ``execute`` on its own clone of
        this method (refsim.runtime.batch); both say why that cannot change a bit. This method's own
        arenas are not touched."""
        from refsim.runtime.batch import execute_batch

        return execute_batch(self, inputs, workers=workers, progress=progress, stacked=stacked)


class Program:
    """A loaded program: its methods are created on demand, each with its own arenas. ``file``
    is the `ProgramFile` of a .pte or the `LoweredModel` of a .tflite (``runtime`` tells which
    runtime's semantics it carries: ``executorch`` or ``tflm``)."""

    def __init__(self, file: ProgramFile, path: str | None = None) -> None:
        self.file = file
        self.path = path
        self._methods: dict[str, Method] = {}
        # The memory plan of every method is proven sound at load, before anything runs.
        for plan in file.program.execution_plan:
            verify_plan(plan)

    @classmethod
    def load(cls, source: str | os.PathLike | bytes) -> Program:
        """A .pte, or a .tflite lowered into the same program (refsim/tflite/lower.py); the format
        is told by the file identifier."""
        if isinstance(source, str | os.PathLike) and not os.path.exists(source):
            raise RefsimError(f"{source}: no such file")
        path = os.fspath(source) if isinstance(source, str | os.PathLike) else None
        if model_format(source) == TFLITE:
            from refsim.tflite import load_model
            from refsim.tflite.lower import lower_model

            return cls(lower_model(load_model(source)), path)  # type: ignore[arg-type]
        if isinstance(source, str | os.PathLike):
            return cls(load_program(source), os.fspath(source))
        return cls(load_program(source))

    @property
    def runtime(self) -> str:
        return "executorch" if isinstance(self.file, ProgramFile) else "tflm"

    @property
    def method_names(self) -> list[str]:
        return [p.name for p in self.file.program.execution_plan]

    def method(self, name: str = "forward") -> Method:
        if name not in self._methods:
            if name not in self.method_names:
                raise RefsimError(f"no method named {name!r}; the program has {', '.join(self.method_names)}")
            self._methods[name] = Method(self, self.file.program.plan(name))
        return self._methods[name]

    def constant_method(self, name: str) -> Any:
        """The value a constant method returns (``forward_input0_scale`` ...), or None if absent."""
        if name not in self.method_names:
            return None
        plan = self.file.program.plan(name)
        if len(plan.outputs) != 1 or any(c.instructions for c in plan.chains):
            return None
        v = plan.values[plan.outputs[0]]
        return v.value if isinstance(v, m.Int | m.Double | m.Bool) else None

"""Stacked execution: S samples through each kernel call at once, the same bits as S single runs.

**Layout.** The stacked program is the planned program with every memory-planned tensor's
leading dimension multiplied by S: a tensor at byte offset ``o`` of ``n`` bytes in arena ``k``
becomes one at ``S·o`` of ``S·n`` bytes in an arena S times as large, holding sample ``s``'s copy
of the tensor at ``S·o + s·n``. Scaling every offset and size by S keeps every relation between
two byte ranges (disjoint, identical, overlapping), so the arena reuse and aliasing of the plan
carry over, and each sample's copy of a tensor is the tensor's bytes, in the tensor's layout.

**Why not a bit can move.** Each call runs the kernel the single run calls, with the same
prepared constants and parameters, on operands whose leading axis now holds S samples. The calls
admitted (`stack_refusal`) are those whose kernels compute each index of that axis from the same
index of their inputs and nothing else: convolutions (GEMM rows, depthwise and pooling batches),
fully connected rows, softmax rows, padding of the inner dimensions, elementwise add/mul of equal
shapes. The leading axis of every planned tensor must be the batch of 1 and outermost in memory.
A range that a call reads must last have been written (by a call or by the inputs) through the
very same byte range, so that sample ``s`` finds its own bytes there: `_dataflow_refusal` checks
it byte by byte along the chain, and a program that fails any condition is not stacked (the batch
then runs as per-sample clones, refsim.runtime.batch). tests/runtime/test_batch.py checks the
result against single runs on every bundled and fixture program.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np

from refsim.ops.registry import Args
from refsim.pte import model as m
from refsim.runtime.tensor import TensorRef

if TYPE_CHECKING:
    from refsim.runtime.program import BoundCall, Method

_CONV = ("quantized_conv2d", "quantized_depthwise_conv2d")
_POOL = ("quantized_avg_pool2d", "quantized_max_pool2d")
#: Operators whose kernels treat the leading axis as independent samples (see the module docstring).
STACKABLE = frozenset(
    [f"cortex_m::{n}{v}.out" for n in (*_CONV, *_POOL) for v in ("", "_nhwc")]
    + [f"cortex_m::{n}.out" for n in ("quantized_linear", "softmax", "pad", "quantized_add", "quantized_mul")]
)
#: Ops that run from a prepared `_Plan` (refsim.ops.cortex_m_calls): stacked by swapping its operands.
_PLANNED = frozenset(n for n in STACKABLE if "conv2d" in n or "linear" in n)


def _is_scratch(name: str) -> bool:
    return name == "scratch" or name.endswith("_scratch")


def _planned(v: Any) -> bool:
    return isinstance(v, TensorRef) and v.meta.allocation is not None


def stack_refusal(method: Method) -> str | None:
    """Why ``method`` cannot be stacked, or None when it can."""
    if any(not isinstance(ins, m.KernelCall | m.FreeCall) for ins in method.instructions):
        return "the chain has moves or jumps"
    for slot in (*method.inputs, *method.outputs):
        if not _planned(slot):
            return "an input or output is not a memory-planned tensor"
    for call in method.calls:
        if call is None:
            continue
        why = _call_refusal(call)
        if why is not None:
            return f"{call.op.name} (instruction {call.instruction}): {why}"
    tensors = [*method.inputs, *method.outputs]
    tensors += [
        v
        for c in method.calls
        if c is not None
        for name, v in c.args.items()
        if isinstance(v, TensorRef) and not _is_scratch(name)
    ]
    for t in tensors:
        if t.meta.is_constant:
            continue
        if not _planned(t):
            return f"values[{t.index}] is neither constant nor memory-planned"
        if len(t.sizes) < 2 or t.sizes[0] != 1 or t.dim_order[0] != 0:
            return f"values[{t.index}] {list(t.sizes)} has no outermost batch of 1"
    return _dataflow_refusal(method)


def _call_refusal(call: BoundCall) -> str | None:
    a = call.args
    if call.op.name not in STACKABLE:
        return "not among the stackable operators"
    for name, value in a.items():
        if isinstance(value, list | tuple) and any(isinstance(v, TensorRef) for v in value):
            return f"{name} is a tensor list"
    if call.op.name.endswith(("quantized_add.out", "quantized_mul.out")):
        if not (_planned(a.self) and _planned(a.other) and a.self.sizes == a.other.sizes == a.out.sizes):
            return "a broadcast or constant operand"
    if call.op.name.endswith("::pad.out") and (len(a.input.sizes) != 4 or a.pre_pad[0] or a.post_pad[0]):
        return "pads the batch"
    if call.op.name in _PLANNED and a.state is None:
        return "no prepared plan"
    return None


def _dataflow_refusal(method: Method) -> str | None:
    """Every byte a call reads was last written through the same (arena, offset, size) range."""
    last = {k: np.full(len(arena), -1, np.int64) for k, arena in enumerate(method.arenas) if len(arena)}
    ranges: list[tuple[int, int, int]] = []

    def key(t: TensorRef) -> tuple[int, int, int]:
        return (t.meta.allocation.memory_id, t.meta.allocation.offset, t.meta.nbytes)

    def write(t: TensorRef) -> None:
        k, o, n = key(t)
        ranges.append((k, o, n))
        last[k][o : o + n] = len(ranges) - 1

    def read_ok(t: TensorRef) -> bool:
        k, o, n = key(t)
        writers = np.unique(last[k][o : o + n])
        return bool(
            n == 0 or (writers.size and writers.min() >= 0 and all(ranges[w] == (k, o, n) for w in writers))
        )

    for t in method.inputs:
        write(t)
    for call in method.calls:
        if call is None:
            continue
        written = {call.op.schema.args[i].name for i in call.op.written_args}
        for name, v in call.args.items():
            if _planned(v) and name not in written and not _is_scratch(name) and not read_ok(v):
                return (
                    f"{call.op.name} (instruction {call.instruction}) reads {name} through another byte range"
                )
        for name, v in call.args.items():
            if _planned(v) and name in written and not _is_scratch(name):
                write(v)
    for t in method.outputs:
        if not read_ok(t):
            return f"output values[{t.index}] is read through another byte range"
    return None


class StackError(Exception):
    """The prepared calls do not stack after all (the batch falls back to per-sample clones)."""


class StackedMethod:
    """``method`` for ``size`` samples at once (see the module docstring); built once, reused."""

    def __init__(self, method: Method, size: int) -> None:
        self.method, self.size = method, size
        #: The fastest `run` refsim.runtime.batch has timed, in seconds (None until then).
        self.chunk_seconds: float | None = None
        self.arenas = [np.zeros(len(a) * size, np.uint8) for a in method.arenas]
        self._refs: dict[int, TensorRef] = {}
        self.inputs = [self._stacked(t) for t in method.inputs]
        self.outputs = [self._stacked(t) for t in method.outputs]
        self.steps: list[tuple[Any, Any]] = [self._step(c) for c in method.calls if c is not None]

    def _stacked(self, t: TensorRef) -> TensorRef:
        if t.meta.is_constant:
            return t
        ref = self._refs.get(t.index)
        if ref is None:
            s, meta, alloc = self.size, t.meta, t.meta.allocation
            scaled = dataclasses.replace(
                meta,
                sizes=(meta.sizes[0] * s, *meta.sizes[1:]),
                allocation=m.Allocation(alloc.memory_id, alloc.offset * s),
            )
            storage = np.frombuffer(
                self.arenas[alloc.memory_id], t.dtype, count=meta.numel * s, offset=alloc.offset * s
            ).reshape(scaled.storage_shape)
            ref = self._refs[t.index] = TensorRef(t.index, scaled, storage)
        return ref

    def _operand(self, call: BoundCall, x: Any) -> Any:
        """A prepared operand: a view of one of the call's planned tensors becomes the stacked view."""
        if not isinstance(x, np.ndarray):
            return x
        address = x.__array_interface__["data"][0]
        for _, t in call.args.items():
            if (
                _planned(t)
                and t.storage.__array_interface__["data"][0] == address
                and t.storage.nbytes == x.nbytes
            ):
                flat = self._stacked(t).storage.reshape(-1)
                return flat.reshape(x.shape[0] * self.size, *x.shape[1:])
        for arena in self.method.arenas:  # a view of the single run's memory that is no tensor of the call
            base = np.frombuffer(arena, np.uint8).__array_interface__["data"][0] if len(arena) else 0
            if len(arena) and base <= address < base + len(arena):
                raise StackError(
                    f"{call.op.name} (instruction {call.instruction}): an operand views the arena"
                )
        return x

    def _step(self, call: BoundCall) -> tuple[Any, Any]:
        a = call.args
        if call.op.name in _PLANNED:
            plan = a.state
            fn, operands = plan.stacked or (plan.fn, plan.operands)
            operands = tuple(self._operand(call, x) for x in operands)
            return fn, (operands, self._operand(call, plan.dst))
        values = [
            self._stacked(v) if isinstance(v, TensorRef) else v
            for v in (a._values[i] for i in range(len(a._names)))
        ]
        return call.op.run, Args(a.op, a.instruction, a._names, values)

    def run(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        """``inputs``: one array per method input, [size, *sizes]; outputs likewise."""
        for slot, x in zip(self.inputs, inputs, strict=True):
            slot.write(x.reshape(slot.logical.shape))
        for fn, args in self.steps:
            if isinstance(args, Args):
                fn(args)
            else:
                operands, dst = args
                if dst is None:  # the kernel writes its (stacked) out operand itself
                    fn(*operands)
                else:
                    dst[...] = fn(*operands)
        return [
            o.logical.reshape(self.size, o.logical.shape[0] // self.size, *o.logical.shape[1:])
            for o in self.outputs
        ]

"""A .tflite subgraph lowered into the in-memory program the runtime executes for a .pte.

DESIGN.md's "two front doors, one house": `lower_model` turns a validated `ModelFile` into an
ExecuTorch `ExecutionPlan` (refsim.pte.model) whose instructions call registered operators, so
`refsim.runtime.Method` runs a .tflite with the same loop, the same golden kernels, the same
tensor dump and the same cost hooks as a .pte. What is TFLM's own lives in the operators a
lowering chooses (`tflm::*`, refsim/ops/tflm_*.py: TFLM's kernels with their Prepare arithmetic,
refsim/tflite/quantization.py) and in how TFLM plans memory (refsim/memory/, not here).

**Values.** ``values[i]`` is the subgraph's tensor ``i`` for every tensor index, so a value
index of the lowered plan *is* the tensor index of the .tflite (`refsim run --dump-tensors`
keys, `Method.values`); the scalars, lists and new constants the calls need come after them.
A tensor whose type refsim cannot hold (string, complex, ...) is a Null there, and any operator
that touches it is refused.

**Memory.** Every non-constant tensor gets its own 16-byte-aligned slot in arena 1, in tensor
order: no two tensors share bytes, so the result cannot depend on a lifetime analysis. (TFLM's
own arena layout, what it costs and what `arena_used_bytes()` reports, is refsim/memory's job;
TFLM's kernels never read an output before writing it, so the values are the same either way.)

**Lowerings.** One function per builtin (and input type), registered with `lowering`, returns
the `Call` (or calls) that compute the operator:

    @lowering(BuiltinOperator.LOGISTIC, dtype=TensorType.INT8)
    def _logistic(cx: LowerContext) -> Call:
        x, y = cx.input(0), cx.output(0)
        return Call("tflm::logistic", input=x, input_scale=cx.scale(x), ..., out=y)

A `Call` names a registered operator and gives its schema arguments by name: for a ``Tensor``
argument an int is a subgraph tensor index, None an absent optional tensor and `Const` a new
constant; any other argument is a Python value of the schema's type. The modules that hold
lowerings are listed in `LOWERING_MODULES`. An operator with no lowering for its input type,
or one a lowering refuses (`LowerContext.error`), is an `UnsupportedError` naming the operator,
its index and what is missing.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from refsim.errors import UnsupportedError
from refsim.ops.registry import lookup
from refsim.pte import model as pm
from refsim.tflite import model as m
from refsim.tflite.options import OPTIONS_OF, defaults
from refsim.tflite.reader import ModelFile
from refsim.tflite.schema import BuiltinOperator, TensorType

#: Modules under refsim.tflite that register lowerings (imported by `lowerings`).
LOWERING_MODULES = ("lower_cmsis_nn", "lower_reference", "lower_float")

#: Byte alignment of every tensor slot in the arena (TFLM's kDefaultTensorAlignment).
ALIGNMENT = 16

#: The TFLite tensor types refsim holds, as ExecuTorch scalar types.
SCALAR_TYPES = {
    TensorType.FLOAT32: pm.ScalarType.FLOAT32,
    TensorType.INT8: pm.ScalarType.INT8,
    TensorType.UINT8: pm.ScalarType.UINT8,
    TensorType.INT16: pm.ScalarType.INT16,
    TensorType.INT32: pm.ScalarType.INT32,
    TensorType.INT64: pm.ScalarType.INT64,
    TensorType.BOOL: pm.ScalarType.BOOL,
    TensorType.FLOAT16: pm.ScalarType.FLOAT16,
    TensorType.FLOAT64: pm.ScalarType.FLOAT64,
}
_BY_DTYPE = {v.numpy_dtype: v for v in SCALAR_TYPES.values() if v.numpy_dtype is not None}


@dataclass(frozen=True)
class Const:
    """A constant the lowering adds (prepared multipliers, a shape, ...)."""

    array: np.ndarray


@dataclass(frozen=True)
class Call:
    """One call of a registered operator, arguments by schema name (see the module doc)."""

    op: str
    args: dict[str, Any] = field(default_factory=dict)

    # ``this``, positional-only: an operator argument may be called ``self`` (aten's view_copy)
    def __init__(this, op: str, /, **args: Any) -> None:
        object.__setattr__(this, "op", op)
        object.__setattr__(this, "args", args)


Lowering = Callable[["LowerContext"], "Call | list[Call]"]
_LOWERINGS: dict[tuple[BuiltinOperator, TensorType | None], Lowering] = {}


def lowering(code: BuiltinOperator, dtype: TensorType | None = None) -> Callable[[Lowering], Lowering]:
    """Register ``fn`` as the lowering of builtin ``code`` when its first input has type
    ``dtype`` (None: any type not registered on its own)."""

    def wrap(fn: Lowering) -> Lowering:
        key = (code, dtype)
        if key in _LOWERINGS:
            raise RuntimeError(
                f"lowering of {code.name} ({dtype.name if dtype else 'any type'}) registered twice"
            )
        _LOWERINGS[key] = fn
        return fn

    return wrap


def lowerings() -> dict[tuple[BuiltinOperator, TensorType | None], Lowering]:
    for module in LOWERING_MODULES:
        try:
            importlib.import_module(f"refsim.tflite.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"refsim.tflite.{module}":
                raise
    return _LOWERINGS


class LowerContext:
    """One operator of the subgraph, as a lowering sees it."""

    def __init__(self, file: ModelFile, graph: m.SubGraph, index: int, op: m.Operator) -> None:
        self.file = file
        self.graph = graph
        self.index = index
        self.op = op
        self.code = file.model.opcode(op)
        self.name = self.code.name
        # an operator without its options table gets the schema defaults (TFLM zero-fills the
        # params struct); the lowerings then see every field they read
        table = OPTIONS_OF.get(self.code.builtin_code)
        self.options: dict[str, Any] = op.builtin_options or (defaults(table) if table else {})

    # --- errors ----------------------------------------------------------------------------

    def error(self, message: str) -> UnsupportedError:
        """The error naming this operator (``operator 3 (LOGISTIC): ...``)."""
        return UnsupportedError(f"operator {self.index} ({self.name}): {message}")

    def require(self, condition: bool, message: str) -> None:
        if not condition:
            raise self.error(message)

    # --- tensors ---------------------------------------------------------------------------

    def input(self, k: int, *, optional: bool = False) -> int | None:
        """Tensor index of input ``k`` (None for an absent optional input)."""
        inputs = self.op.inputs
        index = inputs[k] if k < len(inputs) else m.OPTIONAL_TENSOR
        if index == m.OPTIONAL_TENSOR:
            if optional:
                return None
            raise self.error(f"input {k} is missing ({len(inputs)} inputs given)")
        return index

    def output(self, k: int = 0) -> int:
        outputs = self.op.outputs
        if k >= len(outputs) or outputs[k] == m.OPTIONAL_TENSOR:
            raise self.error(f"output {k} is missing ({len(outputs)} outputs given)")
        return outputs[k]

    def tensor(self, i: int) -> m.Tensor:
        return self.graph.tensors[i]

    def type(self, i: int) -> TensorType:
        return self.graph.tensors[i].type

    def shape(self, i: int) -> tuple[int, ...]:
        return self.graph.tensors[i].shape

    def expect_type(self, i: int, *types: TensorType) -> TensorType:
        t = self.graph.tensors[i]
        if t.type not in types:
            names = " or ".join(x.name.lower() for x in types)
            raise self.error(
                f"tensor {i} ({t.name!r}) is {t.type.name.lower()}; refsim runs this operator on {names}"
            )
        return t.type

    def expect_rank(self, i: int, *ranks: int) -> tuple[int, ...]:
        shape = self.shape(i)
        if len(shape) not in ranks:
            expected = " or ".join(map(str, ranks))
            raise self.error(f"tensor {i} must have rank {expected}, has shape {list(shape)}")
        return shape

    def quantization(self, i: int) -> m.Quantization:
        q = self.graph.tensors[i].quantization
        if q is None or not q.scale:
            raise self.error(f"tensor {i} ({self.graph.tensors[i].name!r}) has no quantization parameters")
        if q.details_type:
            raise self.error(f"tensor {i}: custom or blockwise quantization details are not supported")
        bad = [v for v in q.scale if not (math.isfinite(v) and v > 0)]
        if bad:
            raise self.error(
                f"tensor {i} ({self.graph.tensors[i].name!r}) has scale {bad[0]!r}; scales must be finite and > 0"
            )
        return q

    def scale(self, i: int) -> float:
        """The per-tensor float32 scale of tensor ``i`` (per-channel is refused here)."""
        q = self.quantization(i)
        if len(q.scale) != 1:
            raise self.error(
                f"tensor {i} is quantized per channel ({len(q.scale)} scales); expected one scale"
            )
        return q.scale[0]

    def zero_point(self, i: int) -> int:
        q = self.quantization(i)
        return q.zero_point[0] if q.zero_point else 0

    def is_constant(self, i: int) -> bool:
        return self.file.constant_bytes(self.graph.tensors[i]) is not None

    def constant(self, i: int) -> np.ndarray:
        """The data of constant tensor ``i``, in its shape (read-only)."""
        data = self.file.constant_data(self.graph.tensors[i])
        if data is None:
            raise self.error(
                f"tensor {i} ({self.graph.tensors[i].name!r}) must be a constant (it has no data)"
            )
        return data


# --- the lowered program -------------------------------------------------------------------------


@dataclass(frozen=True)
class Origin:
    """Which .tflite operator an instruction computes."""

    index: int
    name: str


@dataclass(frozen=True, eq=False)
class LoweredModel:
    """A .tflite as a runtime program: the `refsim.pte.model.Program` (one method,
    ``forward``), the constant ``arrays`` its tensors' ``data_buffer_idx`` address (1-based),
    and per instruction the operator it comes from."""

    file: ModelFile
    program: pm.Program
    arrays: tuple[np.ndarray, ...]
    origins: tuple[Origin, ...]
    subgraph: int = 0

    def constant_data(self, tensor: pm.Tensor) -> np.ndarray:
        """A constant's data in memory order (as `refsim.pte.ProgramFile.constant_data`)."""
        view = self.arrays[tensor.data_buffer_idx - 1].reshape(tensor.storage_shape)
        view.flags.writeable = False  # constants are read-only, as the file's are
        return view

    def constants(self) -> list[memoryview]:
        """Constant blobs indexed by data_buffer_idx, entry 0 empty (as `ProgramFile.constants`)."""
        return [memoryview(b""), *(memoryview(np.ascontiguousarray(a)).cast("B") for a in self.arrays)]


class _Builder:
    def __init__(self, file: ModelFile, graph: m.SubGraph) -> None:
        self.file = file
        self.graph = graph
        self.values: list[pm.EValue] = []
        self.constants: list[np.ndarray] = []
        self.calls: list[pm.KernelCall] = []
        self.operators: list[pm.Operator] = []
        self._operator_index: dict[str, int] = {}  # qualified name -> index in operators
        self.origins: list[Origin] = []
        self.arena = 0
        self._ints: dict[int, int] = {}

    # tensors ------------------------------------------------------------------------------------

    def tensors(self) -> None:
        written = {o for op in self.graph.operators for o in op.outputs if o != m.OPTIONAL_TENSOR}
        for i, t in enumerate(self.graph.tensors):
            scalar = SCALAR_TYPES.get(t.type)
            if scalar is None or any(d < 0 for d in t.shape):
                self.values.append(pm.Null())
                continue
            data = self.file.constant_data(t) if scalar.numpy_dtype is not None else None
            dims = tuple(range(len(t.shape)))
            if data is not None and i not in written and i not in self.graph.inputs:
                self.constants.append(np.asarray(data))
                self.values.append(pm.Tensor(scalar, t.shape, dims, data_buffer_idx=len(self.constants)))
                continue
            offset = self.arena
            self.arena += -(-t.numel * scalar.itemsize // ALIGNMENT) * ALIGNMENT
            self.values.append(pm.Tensor(scalar, t.shape, dims, allocation=pm.Allocation(1, offset)))

    def constant(self, array: np.ndarray) -> int:
        array = np.ascontiguousarray(array)
        scalar = _BY_DTYPE.get(array.dtype)
        if scalar is None:
            raise RuntimeError(f"a constant of dtype {array.dtype} has no ExecuTorch scalar type")
        self.constants.append(array)
        dims = tuple(range(array.ndim))
        return self._push(pm.Tensor(scalar, tuple(array.shape), dims, data_buffer_idx=len(self.constants)))

    def _push(self, v: pm.EValue) -> int:
        self.values.append(v)
        return len(self.values) - 1

    def _int(self, value: int) -> int:
        if value not in self._ints:
            self._ints[value] = self._push(pm.Int(int(value)))
        return self._ints[value]

    # calls --------------------------------------------------------------------------------------

    def call(self, cx: LowerContext, call: Call) -> None:
        op = lookup(call.op)
        unknown = set(call.args) - {a.name for a in op.schema.args}
        if unknown:
            raise RuntimeError(
                f"lowering of {cx.name} passes {sorted(unknown)} to {call.op}, which has no such argument"
            )
        indices = []
        for spec in op.schema.args:
            if spec.name not in call.args and not spec.optional:
                raise RuntimeError(f"lowering of {cx.name} leaves out argument {spec.name} of {call.op}")
            indices.append(self._argument(cx, spec, call.args.get(spec.name)))
        if op.schema.outputs:
            indices.append(indices[[a.name for a in op.schema.args].index(op.schema.outputs[0].name)])
        if call.op not in self._operator_index:
            name, _, overload = call.op.partition(".")
            self._operator_index[call.op] = len(self.operators)
            self.operators.append(pm.Operator(name, overload))
        op_index = self._operator_index[call.op]
        self.calls.append(pm.KernelCall(op_index, tuple(indices)))
        self.origins.append(Origin(cx.index, cx.name))

    def _tensor_arg(self, cx: LowerContext, value: Any) -> int:
        if isinstance(value, Const):
            return self.constant(value.array)
        index = int(value)
        if not 0 <= index < len(self.graph.tensors):
            raise RuntimeError(f"lowering of {cx.name}: tensor index {index} out of range")
        if isinstance(self.values[index], pm.Null):
            t = self.graph.tensors[index]
            raise cx.error(
                f"tensor {index} ({t.name!r}) has type {t.type.name} or a dynamic shape, which refsim does not hold"
            )
        return index

    def _argument(self, cx: LowerContext, spec, value: Any) -> int:
        kind = spec.kinds[0]
        K = pm.ValueKind
        if value is None:
            return self._push(pm.Null())
        if kind == K.TENSOR:
            return self._tensor_arg(cx, value)
        if kind == K.TENSOR_LIST:
            return self._push(pm.TensorList(tuple(self._tensor_arg(cx, v) for v in value)))
        if kind == K.INT:
            return self._int(int(value))
        if kind == K.DOUBLE:
            return self._push(pm.Double(float(value)))
        if kind == K.BOOL:
            return self._push(pm.Bool(bool(value)))
        if kind == K.STRING:
            return self._push(pm.String(str(value)))
        if kind == K.INT_LIST:
            return self._push(pm.IntList(tuple(self._int(int(v)) for v in value)))
        if kind == K.DOUBLE_LIST:
            return self._push(pm.DoubleList(tuple(float(v) for v in value)))
        if kind == K.BOOL_LIST:
            return self._push(pm.BoolList(tuple(bool(v) for v in value)))
        raise RuntimeError(f"{spec.name}: argument kind {kind.name} cannot be lowered")


def _check_sources(graph: m.SubGraph, values: list[pm.EValue]) -> None:
    """Every tensor an operator reads is a graph input, a constant or an earlier operator's
    output: TFLM would otherwise read uninitialized arena bytes."""
    ready = set(graph.inputs)
    ready.update(i for i, v in enumerate(values) if isinstance(v, pm.Tensor) and v.is_constant)
    for k, op in enumerate(graph.operators):
        for i in op.inputs:
            if i != m.OPTIONAL_TENSOR and i not in ready and not graph.tensors[i].is_variable:
                raise UnsupportedError(
                    f"operator {k}: input tensor {i} ({graph.tensors[i].name!r}) has no data and is "
                    "written by no earlier operator"
                )
        ready.update(o for o in op.outputs if o != m.OPTIONAL_TENSOR)


def lower_model(file: ModelFile, subgraph: int = 0) -> LoweredModel:
    """Lower subgraph ``subgraph`` (the model's entry point is 0) of a validated model."""
    model = file.model
    if not 0 <= subgraph < len(model.subgraphs):
        raise UnsupportedError(f"subgraph {subgraph} out of range: the model has {len(model.subgraphs)}")
    graph = model.subgraphs[subgraph]
    table = lowerings()
    b = _Builder(file, graph)
    b.tensors()
    for i in (*graph.inputs, *graph.outputs):
        if isinstance(b.values[i], pm.Null):
            t = graph.tensors[i]
            raise UnsupportedError(
                f"tensor {i} ({t.name!r}), a subgraph input or output, has type {t.type.name}"
            )
        if b.values[i].is_constant:  # type: ignore[union-attr]
            raise UnsupportedError(
                f"subgraph input/output tensor {i} ({graph.tensors[i].name!r}) is a constant"
            )
    _check_sources(graph, b.values)
    for index, op in enumerate(graph.operators):
        cx = LowerContext(file, graph, index, op)
        code = cx.code.builtin_code
        if code == BuiltinOperator.CUSTOM:
            raise cx.error("custom operators are not supported")
        first = next((i for i in op.inputs if i != m.OPTIONAL_TENSOR), None)
        dtype = graph.tensors[first].type if first is not None else None
        fn = table.get((code, dtype)) or table.get((code, None))
        if fn is None:
            typed = sorted(t.name.lower() for c, t in table if c == code and t is not None)
            if typed:
                what = (
                    f"on {dtype.name.lower() if dtype else 'no input'} (refsim runs it on {', '.join(typed)})"
                )
                raise cx.error(f"not supported {what}")
            raise cx.error(
                "not supported by refsim's TFLite front end (docs/tflite.md lists the operators it runs)"
            )
        result = fn(cx)
        for call in result if isinstance(result, list) else [result]:
            b.call(cx, call)
    plan = pm.ExecutionPlan(
        name="forward",
        values=tuple(b.values),
        inputs=tuple(graph.inputs),
        outputs=tuple(graph.outputs),
        chains=(pm.Chain(tuple(graph.inputs), tuple(graph.outputs), tuple(b.calls)),),
        operators=tuple(b.operators),
        non_const_buffer_sizes=(0, b.arena),
    )
    return LoweredModel(file, pm.Program((plan,)), tuple(b.constants), tuple(b.origins), subgraph)

"""The op registry: one entry per operator name exactly as a .pte spells it.

An entry (`OpDef`) holds the parsed PyTorch schema, the function that runs the op, and
optional hooks: ``validate`` (called once at load with the bound arguments; raise
`OpError` for anything the kernel cannot compute, so execution can trust its inputs),
``kernel`` (the CMSIS-NN function that computes it, for reports and the cost model),
``macs`` and ``scratch``. The calling convention is ExecuTorch's: a KernelCall's args are
every schema argument in order, then the out tensor(s), then the return value(s) (the out
indices again).

    @register("cortex_m::quantized_add.out(Tensor self, ..., *, Tensor(a!) out) -> Tensor(a!)",
              kernel="arm_elementwise_add_s8")
    def quantized_add(a: Args) -> None:
        a.out.storage[...] = elementwise_add_s8(a.self.storage, ...)

Op modules live in refsim/ops/; `lookup` imports only those that serve the op's namespace
(`OP_MODULES`: a ``cortex_m::`` program never imports the TFLM or the float ops), `load_all` every
one. docs/ops.md is generated from the registry.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from refsim.errors import RefsimError, UnsupportedError
from refsim.ops.schema import OpSchema, parse_schema


class OpError(RefsimError):
    """An operator's arguments are outside what refsim (or CMSIS-NN) can compute."""


class Args:
    """Bound arguments of one KernelCall, by schema name (``a.input``, ``a.self``, ``a.out``).

    Tensors are `refsim.runtime.tensor.TensorRef`; ints, floats, bools and strings are Python
    values; lists are tuples; a Null is None. ``state`` is the op's own prepared data.
    """

    __slots__ = ("_names", "_values", "divergences", "instruction", "op", "state")

    def __init__(self, op: str, instruction: int, names: tuple[str, ...], values: list[Any]) -> None:
        self.op = op
        self.instruction = instruction
        self._names = names
        self._values = values
        #: Per-call state an op prepares once (at load or first run) and reuses: views,
        #: parameter structs. The runtime never reads it.
        self.state: Any = None
        #: `refsim.ops.divergence.Divergence`s the validator found (the device computes
        #: something other than the op for these arguments).
        self.divergences: list = []

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[self._names.index(name)]
        except ValueError:
            raise AttributeError(name) from None

    def items(self):
        return zip(self._names, self._values, strict=True)

    def error(self, argument: str, expected: str, found: object) -> OpError:
        """An `OpError` naming this op, the instruction, the argument and the mismatch."""
        return OpError(
            f"{self.op} (instruction {self.instruction}): {argument} must be {expected}, got {found}"
        )


@dataclass
class OpDef:
    schema: OpSchema
    run: Callable[[Args], None]
    kernel: str | Callable[[Args, str], str] | None = None
    validate: Callable[[Args], None] | None = None
    macs: Callable[[Args], int] | None = None
    scratch: Callable[[Args, str], int] | None = None
    portable_fallback: bool = False
    #: ``cost(args, tier)`` → the op's work items for the cost model (refsim/ops/cost.py).
    cost: Callable[[Args, str], list[Any]] | None = None
    doc: str = field(default="")
    #: Each output element depends only on the same element of the inputs, read before it is
    #: written, so the device computes the same with ``out`` on its first tensor argument's
    #: bytes (the in-place aliasing ExecuTorch's reinplace pass plans; see runtime/plan.py).
    in_place_safe: bool = False
    #: Divergences that depend on the ISA the program runs on (see refsim.ops.divergence):
    #: ``divergences(args, isa) -> list[Divergence]``; those that do not are recorded by the
    #: validator in ``args.divergences``.
    divergences: Callable[[Args, str], list] | None = None

    @property
    def name(self) -> str:
        return self.schema.qualified_name

    @property
    def written_args(self) -> tuple[int, ...]:
        """Positions of the schema arguments the kernel writes: its outs and its scratch buffers."""
        return tuple(
            k
            for k, a in enumerate(self.schema.args)
            if a.is_out or (a.name == "scratch" or a.name.endswith("_scratch"))
        )

    def kernel_name(self, args: Args, isa: str = "mve") -> str:
        if self.kernel is None:
            return "portable" if self.portable_fallback else self.name
        return self.kernel if isinstance(self.kernel, str) else self.kernel(args, isa)

    # decorator-style hooks: @op.validator, @op.mac_count, @op.scratch_bytes
    def validator(self, fn: Callable[[Args], None]) -> Callable[[Args], None]:
        self.validate = fn
        return fn

    def mac_count(self, fn: Callable[[Args], int]) -> Callable[[Args], int]:
        self.macs = fn
        return fn

    def scratch_bytes(self, fn: Callable[[Args, str], int]) -> Callable[[Args, str], int]:
        self.scratch = fn
        return fn


_REGISTRY: dict[str, OpDef] = {}

#: Modules under refsim.ops that register operators, by the namespaces of the operators each
#: registers (tests/runtime/test_registry_lazy.py holds every module to its namespaces).
OP_MODULES: dict[str, tuple[str, ...]] = {
    "cortex_m_conv": ("cortex_m",),
    "cortex_m_fully_connected": ("cortex_m",),
    "cortex_m_elementwise": ("cortex_m",),
    "cortex_m_misc": ("cortex_m",),
    "portable": ("aten", "dim_order_ops", "quantized_decomposed"),
    "portable_float": ("aten",),
    "tflm_cmsis_nn": ("tflm",),
    "tflm_reference": ("tflm",),
    "tflm_float": ("tflm",),
}
_loaded: set[str] = set()


def register(
    schema: str,
    *,
    kernel: str | Callable[[Args, str], str] | None = None,
    portable_fallback: bool = False,
    in_place_safe: bool = False,
) -> Callable[[Callable[[Args], None]], OpDef]:
    """Decorator: register ``fn`` as the implementation of the op ``schema`` describes."""
    parsed = parse_schema(schema)

    def wrap(fn: Callable[[Args], None]) -> OpDef:
        if parsed.qualified_name in _REGISTRY:
            raise RuntimeError(f"operator {parsed.qualified_name} registered twice")
        op = OpDef(
            parsed,
            fn,
            kernel=kernel,
            portable_fallback=portable_fallback,
            doc=(fn.__doc__ or "").strip(),
            in_place_safe=in_place_safe,
        )
        _REGISTRY[parsed.qualified_name] = op
        return op

    return wrap


def alias(name: str, op: OpDef, schema: str) -> OpDef:
    """Register the same implementation under another name/schema (e.g. an ``_nhwc`` variant)."""
    parsed = parse_schema(schema)
    if parsed.qualified_name != name:
        raise RuntimeError(f"alias {name} does not match its schema {parsed.qualified_name}")
    twin = dataclasses.replace(op, schema=parsed)
    _REGISTRY[name] = twin
    return twin


def _load(modules) -> None:
    for module in modules:
        if module in _loaded:
            continue
        try:
            importlib.import_module(f"refsim.ops.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"refsim.ops.{module}":
                raise
        _loaded.add(module)


def load_all() -> dict[str, OpDef]:
    _load(OP_MODULES)
    return _REGISTRY


def lookup(name: str) -> OpDef:
    """The op registered as ``name``, importing only the modules of its namespace (start-up time is
    paid per process: ``refsim run`` of a cortex_m program need not import the TFLM kernels)."""
    op = _REGISTRY.get(name)
    if op is None:
        namespace = name.partition("::")[0]
        _load(m for m, spaces in OP_MODULES.items() if namespace in spaces)
        op = _REGISTRY.get(name)
    if op is None:
        op = load_all().get(name)
    if op is None:
        raise UnsupportedError(f"operator {name} is not supported by refsim (see docs/ops.md)")
    return op


def all_ops() -> dict[str, OpDef]:
    return dict(sorted(load_all().items()))

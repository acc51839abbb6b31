"""RAM of one method on a 32-bit Cortex-M build of the ExecuTorch runtime.

RAM = planned arenas (``non_const_buffer_sizes``; CMSIS-NN scratch and planned inputs/outputs
live inside them) + the method allocator pool + the temp allocator pool + the runtime objects the
application holds + input/output buffers that are not memory-planned.

The method allocator pool is computed by replaying, in order, every allocation Method::load makes
(pytorch/executorch ``runtime/executor/method.cpp``: Method::load, parse_values, Method::init,
gen_instruction_arguments; ``tensor_parser_portable.cpp`` parseTensor and
``tensor_parser_exec_aten.cpp`` parseTensorList; ``tensor_parser.h`` parseListOptionalType)
on a bump allocator that pads every request to ``alignof(T)`` exactly as
``MemoryAllocator::allocate`` does, from a pool base aligned to 8 bytes. Per value:

- the values table: ``n_values × sizeof(EValue)``; ``input_set_``: ``n_inputs × sizeof(bool)``;
- Tensor: strides ``dim × sizeof(StridesType)`` and one ``TensorImpl``; a tensor whose
  shape_dynamism is not STATIC also copies sizes and dim_order (static ones point into the
  flatbuffer);
- IntList of n: ``n × EValue*`` + ``n × int64_t`` + ``BoxedEvalueList<int64_t>``;
  TensorList: ``n × Tensor`` + ``n × EValue*`` + ``BoxedEvalueList<Tensor>``;
  OptionalTensorList: ``n × EValue*`` + ``n × optional<Tensor>`` + its BoxedEvalueList;
  BoolList / DoubleList / String: one ``ArrayRef``;
- ``n_delegates × BackendDelegate``, ``n_chains × Chain``, per chain
  ``n_instructions × (OpFunction + InstructionArgs)``, per KernelCall/DelegateCall
  ``n_args × EValue*``.

Operator resolution (resolve_operator) puts ``n_args × TensorMeta`` plus one dim_order array per
tensor argument in the temp allocator, when the temp pool holds at least
``n_args × (sizeof(TensorMeta) + kTensorDimensionLimit × sizeof(DimOrderType))`` — the temp-pool
line is that threshold's maximum over the kernel calls (reset after each). With no temp pool,
Method::load first puts a zero-capacity PlatformMemoryAllocator in the method pool and every
call's metadata then stays there; that case is replayed too (the "growth without a temp pool"
detail line; a temp pool below the threshold of some call falls back the same way for that
call only). The cortex_m kernels allocate nothing at run time
(their scratch is memory-planned), so the temp pool is needed only at load.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from refsim.errors import UnsupportedError
from refsim.memory.lines import Line
from refsim.memory.sizes import Layout, RuntimeSizes, runtime_sizes
from refsim.pte import model as m

METHOD_CPP = "ExecuTorch method.cpp/tensor_parser allocations"


@dataclass
class BumpAllocator:
    """MemoryAllocator::allocate: align the cursor up to ``align``, then advance by ``size``."""

    base_align: int = 8
    cursor: int = 0
    by_category: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def take(self, layout: Layout, count: int, category: str) -> None:
        assert layout.align <= self.base_align, "pool base must be at least as aligned as any type"
        padding = -self.cursor % layout.align
        self.cursor += padding + layout.size * count
        self.by_category[category] += layout.size * count
        self.by_category["alignment padding"] += padding


def _tensor(bump: BumpAllocator, s: RuntimeSizes, t: m.Tensor) -> None:
    dim = len(t.sizes)
    if t.shape_dynamism != m.ShapeDynamism.STATIC:
        bump.take(s.SizesType, dim, "sizes and dim_order copies (dynamic shapes)")
        bump.take(s.DimOrderType, dim, "sizes and dim_order copies (dynamic shapes)")
    bump.take(s.StridesType, dim, "strides arrays")
    bump.take(s.TensorImpl, 1, "TensorImpls")


def _values(bump: BumpAllocator, s: RuntimeSizes, plan: m.ExecutionPlan) -> None:
    bump.take(s.EValue, len(plan.values), "values table (EValues)")
    if plan.inputs:
        bump.take(s.bool, len(plan.inputs), "input_set flags")
    for index, v in enumerate(plan.values):
        if isinstance(v, m.Tensor):
            extra = v.extra
            if extra is not None and extra.location == m.TensorDataLocation.EXTERNAL:
                raise UnsupportedError(
                    f"memory: method {plan.name!r} values[{index}] is an external (.ptd) constant; "
                    "the external-constant tables are not accounted"
                )
            _tensor(bump, s, v)
        elif isinstance(v, m.IntList):
            n = len(v.items)
            bump.take(s.EValue_ptr, n, "int lists (boxed + unboxed)")
            bump.take(s.int64_t, n, "int lists (boxed + unboxed)")
            bump.take(s.BoxedEvalueList_int64, 1, "int lists (boxed + unboxed)")
        elif isinstance(v, m.TensorList):
            n = len(v.items)
            bump.take(s.Tensor, n, "tensor lists")
            bump.take(s.EValue_ptr, n, "tensor lists")
            bump.take(s.BoxedEvalueList_Tensor, 1, "tensor lists")
        elif isinstance(v, m.OptionalTensorList):
            n = len(v.items)
            bump.take(s.EValue_ptr, n, "tensor lists")
            bump.take(s.OptionalTensor, n, "tensor lists")
            bump.take(s.BoxedEvalueList_OptionalTensor, 1, "tensor lists")
        elif isinstance(v, m.BoolList):
            bump.take(s.ArrayRef_bool, 1, "bool/double lists and strings")
        elif isinstance(v, m.DoubleList):
            bump.take(s.ArrayRef_double, 1, "bool/double lists and strings")
        elif isinstance(v, m.String):
            bump.take(s.ArrayRef_char, 1, "bool/double lists and strings")


def _tensor_arg_dims(plan: m.ExecutionPlan, args: tuple[int, ...]) -> list[int]:
    return [len(v.sizes) for a in args if isinstance(v := plan.values[a], m.Tensor)]


@dataclass(frozen=True)
class MethodPools:
    """What Method::load takes from each pool, with the method pool broken down by category."""

    method_pool: int
    by_category: dict[str, int]
    temp_pool_threshold: int
    temp_pool_used: int
    fallback_extra: int  # method-pool growth if operator resolution cannot use the temp pool
    delegates: int


def _replay(plan: m.ExecutionPlan, s: RuntimeSizes, temp_pool: bool) -> tuple[BumpAllocator, int, int]:
    """Method::load on the method pool: (pool, temp-pool threshold, temp-pool use).

    Without a temp pool, Method::load first places a PlatformMemoryAllocator (capacity 0) in
    the method pool, and resolve_operator then falls back to the method pool for its metadata."""
    bump = BumpAllocator()
    if not temp_pool:
        bump.take(s.PlatformMemoryAllocator, 1, "operator metadata (no temp pool)")
    _values(bump, s, plan)
    bump.take(s.BackendDelegate, len(plan.delegates), "backend delegates")
    bump.take(s.Chain, len(plan.chains), "instruction chain")
    threshold = used = 0
    per_dim_limit = s.DimOrderType.size * s.tensor_dimension_limit
    for chain in plan.chains:
        n = len(chain.instructions)
        bump.take(s.OpFunction, n, "instruction chain")
        bump.take(s.InstructionArgs, n, "instruction chain")
        for ins in chain.instructions:
            if not isinstance(ins, m.KernelCall | m.DelegateCall):
                continue
            bump.take(s.EValue_ptr, len(ins.args), "kernel-call argument lists")
            if isinstance(ins, m.DelegateCall):
                continue
            n_args = len(ins.args)
            threshold = max(threshold, n_args * (s.TensorMeta.size + per_dim_limit))
            meta = BumpAllocator() if temp_pool else bump  # the temp pool is reset after each call
            meta.take(s.TensorMeta, n_args, "operator metadata (no temp pool)")
            for dim in _tensor_arg_dims(plan, ins.args):
                meta.take(s.DimOrderType, dim, "operator metadata (no temp pool)")
            if temp_pool:
                used = max(used, meta.cursor)
    return bump, threshold, used


def method_pools(plan: m.ExecutionPlan, sizes: RuntimeSizes | None = None) -> MethodPools:
    s = sizes or runtime_sizes()
    bump, threshold, used = _replay(plan, s, temp_pool=True)
    without, _, _ = _replay(plan, s, temp_pool=False)
    fallback = without.cursor - bump.cursor
    return MethodPools(
        method_pool=bump.cursor,
        by_category={k: v for k, v in bump.by_category.items() if v},
        temp_pool_threshold=threshold,
        temp_pool_used=used,
        fallback_extra=fallback,
        delegates=len(plan.delegates),
    )


def planned_bytes(plan: m.ExecutionPlan, indices: set[int]) -> int:
    """Distinct arena bytes the planned tensors ``indices`` occupy (the plan reuses offsets)."""
    spans = sorted(
        (v.allocation.memory_id, v.allocation.offset, v.allocation.offset + v.nbytes)
        for i in indices
        if isinstance(v := plan.values[i], m.Tensor) and v.allocation is not None
    )
    covered = 0
    current: tuple[int, int, int] | None = None
    for mem, start, end in spans:
        if current is not None and mem == current[0] and start <= current[2]:
            current = (mem, current[1], max(current[2], end))
            continue
        if current is not None:
            covered += current[2] - current[1]
        current = (mem, start, end)
    if current is not None:
        covered += current[2] - current[1]
    return covered


def _io_outside_arenas(plan: m.ExecutionPlan) -> int:
    """Bytes of input/output tensors without allocation_info (the application supplies them)."""
    unplanned = {
        i
        for i in (*plan.inputs, *plan.outputs)
        if isinstance(v := plan.values[i], m.Tensor) and v.allocation is None
    }
    return sum(plan.values[i].nbytes for i in unplanned)


def ram_lines(
    plan: m.ExecutionPlan, scratch_values: set[int], sizes: RuntimeSizes | None = None
) -> list[Line]:
    """The RAM budget of one method; ``scratch_values`` index the ops' CMSIS-NN scratch tensors."""
    s = sizes or runtime_sizes()
    lines: list[Line] = []
    for k, size in enumerate(plan.non_const_buffer_sizes):
        if k == 0:
            continue
        lines.append(Line("ram", f"planned arena {k}", size, f"ExecutionPlan.non_const_buffer_sizes[{k}]"))
    arena = "planned arena 1" if len(plan.non_const_buffer_sizes) > 1 else None
    io = {i for i in (*plan.inputs, *plan.outputs)}
    lines.append(
        Line(
            "ram",
            "CMSIS-NN scratch (memory-planned)",
            planned_bytes(plan, scratch_values),
            "distinct arena bytes of the ops' scratch tensors",
            part_of=arena,
        )
    )
    lines.append(
        Line(
            "ram",
            "planned inputs/outputs",
            planned_bytes(plan, io),
            "distinct arena bytes of I/O tensors",
            part_of=arena,
        )
    )
    pools = method_pools(plan, s)
    lines.append(Line("ram", "ExecuTorch method allocator", pools.method_pool, f"{METHOD_CPP} × {s.source}"))
    for category, nbytes in sorted(pools.by_category.items(), key=lambda kv: -kv[1]):
        lines.append(Line("ram", category, nbytes, "", part_of="ExecuTorch method allocator"))
    if pools.delegates:
        lines.append(
            Line(
                "ram",
                "delegate init allocations",
                None,
                "backend-specific (BackendInterface::init), not counted",
            )
        )
    lines.append(
        Line(
            "ram",
            "ExecuTorch temp allocator",
            pools.temp_pool_threshold,
            "resolve_operator's temp-pool check, max over kernel calls (used at load only)",
        )
    )
    lines.append(
        Line(
            "ram",
            "used of it",
            pools.temp_pool_used,
            "TensorMeta + dim_order arrays of the largest call",
            part_of="ExecuTorch temp allocator",
        )
    )
    lines.append(
        Line(
            "ram",
            "method-pool growth without a temp pool",
            pools.fallback_extra,
            "replayed with no temp pool: a PlatformMemoryAllocator and every call's metadata in the method pool",
            part_of="ExecuTorch temp allocator",
        )
    )
    n_buffers = max(len(plan.non_const_buffer_sizes) - 1, 0)
    objects = (
        s.Program.size
        + s.Method.size
        + s.MemoryManager.size
        + 2 * s.MemoryAllocator.size
        + s.HierarchicalAllocator.size
        + n_buffers * s.Span_uint8.size
    )
    lines.append(
        Line(
            "ram",
            "runtime objects (application storage)",
            objects,
            f"Program + Method + MemoryManager + 2 MemoryAllocator + HierarchicalAllocator + "
            f"{n_buffers} Span<uint8_t> ({s.source})",
        )
    )
    lines.append(
        Line(
            "ram",
            "input/output buffers outside the arenas",
            _io_outside_arenas(plan),
            "I/O tensors without allocation_info",
        )
    )
    return lines

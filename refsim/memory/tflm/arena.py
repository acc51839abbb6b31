"""TFLM's ``MicroInterpreter::AllocateTensors``, replayed allocation by allocation on a model arena.

The arena is simulated with addresses, as TFLM's ``SingleArenaBufferAllocator``
(arena_allocator/single_arena_buffer_allocator.cc) moves them: the *head* grows up from the 16-aligned
start (the scratch-request list while preparing, then the planned tensors), *temp* allocations sit
above the head until ``ResetTempAllocations``, the *tail* grows down from the end, each allocation
aligned as it asks (``AlignPointerDown(tail - size, alignment)``). Word-size arithmetic wraps as the C
does (``size_t`` differences). A step that does not fit raises :class:`ArenaTooSmall` where TFLM
returns an error, so the smallest accepted arena is found by bisecting the replay, exactly as one would
bisect the real interpreter.

The order of calls is TFLM 90b983c2's: ``MicroAllocator::Create`` (allocator objects and the planner
in the tail), ``StartModelAllocation`` (builtin-data allocator, the scratch-request head, subgraph
allocations, eval tensors, node-and-registration arrays), the parsers' builtin params, every kernel's
``Init`` then every kernel's ``Prepare`` (temp tensors, persistent arrays, scratch requests; after each
node the temps are released and the head resized to ``(requests + 12)`` entries),
``FinishModelAllocation`` (scratch handles, variables, the AllocationInfo array and the planner's
scratch in temp, the plan, the head reserved), then the persistent input/output TfLiteTensors.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from refsim.errors import RefsimError
from refsim.memory.tflm.kernels import KernelConfig, kernel_for
from refsim.memory.tflm.planner import (
    ARENA_ALIGNMENT,
    ONLINE,
    AllocationInfo,
    greedy_plan,
    head_size,
    offline_offsets,
)
from refsim.memory.tflm.sizes import TflmSizes
from refsim.tflite.model import Model, Tensor
from refsim.tflite.schema import TensorType

#: kMaxScratchBuffersPerOp (micro_allocator.cc).
MAX_SCRATCH_PER_OP = 12
#: TfLiteTypeSizeOf (memory_helpers.cc) for the types ConvertTensorType accepts.
TYPE_SIZE = {
    TensorType.FLOAT16: 2, TensorType.BFLOAT16: 2, TensorType.FLOAT32: 4, TensorType.FLOAT64: 8,
    TensorType.INT16: 2, TensorType.INT32: 4, TensorType.UINT32: 4, TensorType.UINT8: 1,
    TensorType.UINT16: 2, TensorType.INT8: 1, TensorType.INT64: 8, TensorType.UINT64: 8,
    TensorType.BOOL: 1, TensorType.RESOURCE: 4, TensorType.COMPLEX64: 8, TensorType.COMPLEX128: 16,
    TensorType.INT4: 1,
}  # fmt: skip
#: A 16-aligned arena start (the value only needs the alignment a linker or new[] gives).
ARENA_BASE = 0x2000_0000

_ALLOC = "micro_allocator.cc"
_SABA = "arena_allocator/single_arena_buffer_allocator.cc"


class ArenaTooSmall(RefsimError):
    """The replayed AllocateTensors does not fit the arena (names the step, as TFLM's log would)."""


@dataclass(frozen=True)
class Event:
    """One allocation: where it went (head, tail, temp), its bytes as requested, its alignment and the
    arena bytes it cost (alignment padding included)."""

    region: str
    what: str
    size: int
    align: int
    cost: int
    source: str


@dataclass
class Arena:
    """SingleArenaBufferAllocator's five pointers, as integers."""

    word: int
    buffer_head: int
    buffer_tail: int
    head: int = 0
    tail: int = 0
    temp: int = 0
    temp_peak: int = 0  # highest temp_ seen (the Prepare / planning peak)
    events: list[Event] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.head = self.temp = self.temp_peak = self.buffer_head
        self.tail = self.buffer_tail

    def _diff(self, a: int, b: int) -> int:
        return (a - b) % (1 << self.word)  # size_t arithmetic

    def persistent(self, size: int, align: int, what: str, source: str) -> int:
        """AllocatePersistentBuffer: AlignPointerDown(tail - size, alignment), refused below head."""
        result = (self.tail - size) // align * align
        if result < self.head:
            raise ArenaTooSmall(f"tail allocation of {size} bytes for {what} ({source})")
        self.events.append(Event("tail", what, size, align, self.tail - result, source))
        self.tail = result
        return result

    def alloc_temp(self, size: int, align: int, what: str, source: str) -> int:
        """AllocateTemp: AlignPointerUp(temp, alignment); refused when tail - result < size (size_t)."""
        result = -(-self.temp // align) * align
        if self._diff(self.tail, result) < size:
            raise ArenaTooSmall(f"temp allocation of {size} bytes for {what} ({source})")
        self.events.append(Event("temp", what, size, align, result + size - self.temp, source))
        self.temp = result + size
        self.temp_peak = max(self.temp_peak, self.temp)
        return result

    def resize_head(self, size: int, align: int, what: str, source: str) -> None:
        """ResizeBuffer of the one resizable buffer at AlignPointerUp(buffer_head, alignment)."""
        start = -(-self.buffer_head // align) * align
        if self._diff(self.tail, start) < size:
            raise ArenaTooSmall(f"head of {size} bytes for {what} ({source})")
        self.head = self.temp = start + size
        self.temp_peak = max(self.temp_peak, self.temp)
        self.events.append(Event("head", what, size, align, self.head - self.buffer_head, source))

    def reset_temp(self) -> None:
        self.temp = self.head

    def available(self, align: int) -> int:
        """GetAvailableMemory: AlignPointerDown(tail) - AlignPointerUp(temp), as size_t."""
        return self._diff(self.tail // align * align, -(-self.temp // align) * align)

    @property
    def used_bytes(self) -> int:
        """MicroAllocator::used_bytes = GetNonPersistentUsedBytes + GetPersistentUsedBytes."""
        return max(self.head, self.temp) - self.buffer_head + self.buffer_tail - self.tail


@dataclass(frozen=True)
class Setup:
    """How the interpreter is built: the word size's struct table, the kernels, and which
    MicroAllocator::Create the program calls."""

    sizes: TflmSizes
    kernels: KernelConfig
    recording: bool = False  # the wheel: RecordingMicroAllocator::Create (interpreter_wrapper.cc)


@dataclass
class Replay:
    """The state AllocateTensors builds while it runs (the PrepareContext of kernels.py)."""

    model: Model
    setup: Setup
    arena: Arena
    subgraph: int = 0
    scratch_requests: list[tuple[int, int, int, str]] = field(
        default_factory=list
    )  # bytes, subgraph, node, what
    node: int = -1
    plan: list = field(default_factory=list)
    head_bytes: int = 0

    # -- PrepareContext ------------------------------------------------------------------------
    def _tensor(self, index: int) -> Tensor:
        return self.model.subgraphs[self.subgraph].tensors[index]

    def is_constant(self, index: int) -> bool:
        return _has_data(self.model, self._tensor(index))

    def temp_tensor(self, index: int | None, source: str) -> Tensor | None:
        """MicroAllocator::AllocateTempTfLiteTensor: the struct, then (quantized) its
        TfLiteAffineQuantization and zero-point TfLiteIntArray, all in temp."""
        if index is None:
            return None
        s = self.setup.sizes
        t = self._tensor(index)
        lay = s["TfLiteTensor"]
        self.arena.alloc_temp(lay.size, lay.align, f"temp TfLiteTensor {index}", source)
        channels = _quant_channels(t)
        if channels:
            src = f"{_ALLOC}:InitializeTfLiteTensorFromFlatbuffer"
            q = s["TfLiteAffineQuantization"]
            self.arena.alloc_temp(q.size, q.align, f"temp quantization of tensor {index}", src)
            self.arena.alloc_temp(
                _int_array_bytes(s, channels),
                s["TfLiteIntArray"].align,
                f"temp zero points of tensor {index}",
                src,
            )
        return t

    def persistent(self, nbytes: int, what: str, source: str) -> None:
        self.arena.persistent(nbytes, ARENA_ALIGNMENT, f"op {self.node}: {what}", source)

    def scratch(self, nbytes: int, what: str, source: str) -> None:
        """MicroAllocator::RequestScratchBufferInArena: recorded in the head's request list."""
        if (
            sum(1 for r in self.scratch_requests if r[2] == self.node and r[1] == self.subgraph)
            >= MAX_SCRATCH_PER_OP
        ):
            raise RefsimError(
                f"TFLM arena: op {self.node} asks for more than {MAX_SCRATCH_PER_OP} scratch buffers"
            )
        self.scratch_requests.append((nbytes, self.subgraph, self.node, f"op {self.node}: {what} ({source})"))


def _has_data(model: Model, t: Tensor) -> bool:
    """GetFlatbufferTensorBuffer: constant only when the buffer's ``data`` vector is non-empty
    (TFLM 90b983c2 does not read offset buffers)."""
    if not (0 <= t.buffer < len(model.buffers)):
        return False
    b = model.buffers[t.buffer]
    return b.offset == 0 and len(b.data) > 0


def _quant_channels(t: Tensor) -> int:
    q = t.quantization
    if q is None or not q.scale or not q.zero_point:
        return 0
    return len(q.scale)


def _int_array_bytes(s: TflmSizes, n: int) -> int:
    """TfLiteIntArrayGetSizeInBytes (core/c/common.cc): sizeof(TfLiteIntArray) + n * sizeof(int)."""
    return s["TfLiteIntArray"].size + n * s["TfLiteIntArray_elem"].size


def tensor_bytes(t: Tensor) -> int:
    try:
        size = TYPE_SIZE[t.type]
    except KeyError:
        raise RefsimError(
            f"TFLM arena: tensor type {t.type.name} is not one TFLM's ConvertTensorType accepts"
        ) from None
    n = 1
    for d in t.shape:
        n *= d
    return n * size


def replay(model: Model, setup: Setup, arena_size: int, base: int = ARENA_BASE) -> Replay:
    """AllocateTensors on an arena of ``arena_size`` bytes at ``base``; raises ArenaTooSmall."""
    s = setup.sizes
    word = s.word_size
    if setup.recording:  # RecordingSingleArenaBufferAllocator::Create takes the arena as given
        arena = Arena(word, base, base + arena_size)
        alloc_obj, micro_obj = "RecordingSingleArenaBufferAllocator", "RecordingMicroAllocator"
    else:  # MicroAllocator::Create aligns the start up to 16
        start = -(-base // ARENA_ALIGNMENT) * ARENA_ALIGNMENT
        arena = Arena(word, start, base + arena_size)
        alloc_obj, micro_obj = "SingleArenaBufferAllocator", "MicroAllocator"
    r = Replay(model, setup, arena)

    def obj(name: str, source: str, what: str | None = None, count: int = 1) -> None:
        lay = s[name]
        arena.persistent(lay.size * count, lay.align, what or name, source)

    obj(alloc_obj, f"{_SABA}:Create")
    obj("GreedyMemoryPlanner", f"{_ALLOC}:CreateMemoryPlanner")
    obj(micro_obj, f"{_ALLOC}:MicroAllocator::Create")

    # StartModelAllocation
    obj("MicroBuiltinDataAllocator", f"{_ALLOC}:StartModelAllocation")
    req = s["ScratchBufferRequest"]
    arena.resize_head(
        req.size * MAX_SCRATCH_PER_OP, req.align, "scratch requests", f"{_ALLOC}:InitScratchBufferData"
    )
    obj("SubgraphAllocations", f"{_ALLOC}:StartModelAllocation", count=len(model.subgraphs))
    for g in model.subgraphs:
        obj(
            "TfLiteEvalTensor",
            f"{_ALLOC}:AllocateTfLiteEvalTensors",
            f"TfLiteEvalTensor x {len(g.tensors)}",
            len(g.tensors),
        )
    for g in model.subgraphs:
        obj(
            "NodeAndRegistration",
            f"{_ALLOC}:AllocateNodeAndRegistrations",
            f"NodeAndRegistration x {len(g.operators)}",
            len(g.operators),
        )

    kernels = [
        [kernel_for(model.opcode(op).name, i, setup.kernels) for i, op in enumerate(g.operators)]
        for g in model.subgraphs
    ]
    # PrepareNodeAndRegistrationDataFromFlatbuffer: the parsers' builtin params.
    for gi in range(len(model.subgraphs)):
        for i, k in enumerate(kernels[gi]):
            if k.params:
                obj(
                    k.params,
                    f"core/api/flatbuffer_conversions.cc:Allocate<{k.params}>",
                    f"op {i}: {k.params}",
                )
    # InitSubgraphs
    for gi in range(len(model.subgraphs)):
        for i, k in enumerate(kernels[gi]):
            if k.op_data:
                arena.persistent(
                    s[k.op_data].size, ARENA_ALIGNMENT, f"op {i}: OpData ({k.op_data})", k.op_data_source
                )
    # PrepareSubgraphs
    for gi, g in enumerate(model.subgraphs):
        r.subgraph = gi
        for i, op in enumerate(g.operators):
            r.node = i
            k = kernels[gi][i]
            k.prepare(r, op, g.tensors, op.builtin_options or {}, setup.kernels)
            arena.reset_temp()  # FinishPrepareNodeAllocations
            arena.resize_head(
                req.size * (len(r.scratch_requests) + MAX_SCRATCH_PER_OP),
                req.align,
                "scratch requests",
                f"{_ALLOC}:FinishPrepareNodeAllocations",
            )
    r.subgraph = 0
    _finish_model_allocation(r)
    # AllocateTensors: persistent TfLiteTensors for the first subgraph's inputs and outputs.
    g0 = model.subgraphs[0]
    for kind, indices in (("input", g0.inputs), ("output", g0.outputs)):
        lay = s["TfLiteTensor_ptr"]
        arena.persistent(
            lay.size * len(indices),
            ARENA_ALIGNMENT,
            f"{kind}_tensors_ array",
            "micro_interpreter.cc:AllocateTensors",
        )
        for index in indices:
            src = f"{_ALLOC}:AllocatePersistentTfLiteTensor"
            obj("TfLiteTensor", src, f"persistent TfLiteTensor ({kind} {index})")
            channels = _quant_channels(g0.tensors[index])
            if channels:
                src = f"{_ALLOC}:InitializeTfLiteTensorFromFlatbuffer"
                obj("TfLiteAffineQuantization", src, f"quantization of {kind} {index}")
                arena.persistent(
                    _int_array_bytes(s, channels),
                    s["TfLiteIntArray"].align,
                    f"zero points of {kind} {index}",
                    src,
                )
    return r


def _finish_model_allocation(r: Replay) -> None:
    s, arena, model = r.setup.sizes, r.arena, r.model
    count = len(r.scratch_requests)
    if count:
        h = s["ScratchBufferHandle"]
        arena.persistent(
            h.size * count,
            h.align,
            f"ScratchBufferHandle x {count}",
            f"{_ALLOC}:AllocateScratchBufferHandles",
        )
    # CommitStaticMemoryPlan / AllocationInfoBuilder::CreateAllocationInfo (temp).
    src = "micro_allocation_info.cc:CreateAllocationInfo"
    st = s["size_t"]
    arena.alloc_temp(st.size * len(model.subgraphs), st.align, "subgraph offsets", src)
    total = sum(len(g.tensors) for g in model.subgraphs)
    ai = s["AllocationInfo"]
    arena.alloc_temp(ai.size * (total + count), ai.align, f"AllocationInfo x {total + count}", src)
    offline = offline_offsets(model.offline_memory_allocation, total)
    # AllocateVariables
    flat = 0
    for g in model.subgraphs:
        for t in g.tensors:
            if t.is_variable and (offline is None or offline[flat] == ONLINE):
                arena.persistent(
                    tensor_bytes(t), ARENA_ALIGNMENT, f"variable tensor {flat}", f"{_ALLOC}:AllocateVariables"
                )
            flat += 1
    infos = _allocation_infos(r, offline)
    remaining = arena.available(ARENA_ALIGNMENT)
    arena.alloc_temp(remaining, ARENA_ALIGNMENT, "memory planner scratch", f"{_ALLOC}:CommitStaticMemoryPlan")
    per_buffer = (
        s["GreedyMemoryPlanner_BufferRequirements"].size
        + 3 * s["int"].size
        + s["GreedyMemoryPlanner_ListEntry"].size
    )
    planned = [a for a in infos if a.needs_allocating]
    if len(planned) > remaining // per_buffer:
        raise ArenaTooSmall(
            f"memory planner: {len(planned)} buffers need {len(planned) * per_buffer} bytes of planner "
            f"scratch, {remaining} left (greedy_memory_planner.cc AddBuffer: too many buffers)"
        )
    buffers = [
        (-(-a.bytes // ARENA_ALIGNMENT) * ARENA_ALIGNMENT, a.first_created, a.last_used, a.offline_offset)
        for a in planned
    ]
    offsets = greedy_plan(buffers)
    r.plan = [(a, b, off) for a, b, off in zip(planned, buffers, offsets, strict=True)]
    r.head_bytes = head_size(buffers, offsets)
    arena.temp = arena.head  # FreeAllocationInfo, DeallocateTemp, ResetTempAllocations
    arena.resize_head(0, 1, "scratch requests released", f"{_ALLOC}:DeallocateResizableBuffer")
    arena.resize_head(
        r.head_bytes,
        ARENA_ALIGNMENT,
        "planned tensors and scratch (head)",
        f"{_ALLOC}:ReserveNonPersistentOverlayMemory",
    )


def _allocation_infos(r: Replay, offline: list[int] | None) -> list[AllocationInfo]:
    """AllocationInfoBuilder::InitializeAllocationInfo + MarkAllocationLifetimes (subgraph 0, and the
    subgraphs control-flow ops reach)."""
    model = r.model
    infos: list[AllocationInfo] = []
    starts: list[int] = []
    flat = 0
    for gi, g in enumerate(model.subgraphs):
        starts.append(len(infos))
        for ti, t in enumerate(g.tensors):
            nbytes = tensor_bytes(t)
            needs = not _has_data(model, t) and not t.is_variable and nbytes != 0
            off = ONLINE
            if offline is not None:
                off = offline[flat]
                if t.is_variable and off != ONLINE:
                    needs = True
            infos.append(
                AllocationInfo(f"tensor {ti}" + (f" of subgraph {gi}" if gi else ""), nbytes, needs, off)
            )
            flat += 1
    scratch = [
        AllocationInfo(f"scratch {k}: {what}", nbytes, True)
        for k, (nbytes, _, _, what) in enumerate(r.scratch_requests)
    ]
    scope = [0]

    def first(a: AllocationInfo, at: int) -> None:
        if a.first_created == -1:
            a.first_created = at

    def mark(gi: int) -> None:
        g = model.subgraphs[gi]
        base = starts[gi]
        for t in g.inputs:
            first(infos[base + t], scope[0])
            infos[base + t].last_used = scope[0]
        for i, op in enumerate(g.operators):
            scope[0] += 1
            for t in op.outputs:
                first(infos[base + t], scope[0])
            start = scope[0]
            for sub in _called_subgraphs(model, op):
                scope[0] += 1
                mark(sub)
            for t in op.inputs:
                if t >= 0:
                    infos[base + t].last_used = scope[0]
            for t in op.outputs:
                infos[base + t].last_used = scope[0]
            for a, (_, sg, node, _) in zip(scratch, r.scratch_requests, strict=True):
                if node == i and sg == gi:
                    first(a, start)
                    a.last_used = scope[0]
        for t in g.outputs:
            first(infos[base + t], scope[0])
            infos[base + t].last_used = scope[0]

    mark(0)
    return infos + scratch


def _called_subgraphs(model: Model, op) -> list[int]:
    name = model.opcode(op).name
    if name in ("IF", "WHILE", "CALL_ONCE"):
        raise RefsimError(f"TFLM arena: control flow ({name}) is not modelled")
    return []

"""A whole program on an Ethos-U system: which ops the NPU takes, their layers, the host's share.

    est = estimate_ops(ops, "ethos-u55-128")            # ops: OpInput per KernelCall
    est.total_cycles, [(r.placement, r.cycles, r.bound) for r in est.rows]

Per op (refsim's cost hook describes it as isa_models.cortex_m.program ``Work``: CMSIS-NN calls with
their parameters), :mod:`isa_models.ethos_u.supported` decides NPU or CPU. An NPU op becomes
one or more :class:`~isa_models.ethos_u.layers.NpuLayer` (a CMSIS-NN call maps to the Vela operator
doing the same: convolve -> Conv2D, depthwise with multiplier on a one-channel input ->
Conv2D, fully connected -> vector product, softmax -> the int8 decomposition ExecuTorch's Arm
backend feeds Vela (``decompose_softmax_pass``: max, subtract, exp table, sum, reciprocal
table, multiply, with a TOSA RESCALE pass per int8 operand), pad before a convolution ->
folded into its padding (Vela ``replace_pad_by_hw_pad``), view/clone copies -> nothing
(Vela's memory-only ops)), each costed by :func:`isa_models.ethos_u.layers.layer_cycles`. A CPU op
is costed on the host core by the CPU model (isa_models.cortex_m.program ``cost_of``, the core's
calibration) plus ExecuTorch's dispatch, converted to NPU cycles at the ratio of the clocks.

Hand-over: every run of consecutive NPU ops is one delegate call (ExecuTorch's
EthosUBackend::execute + the driver's ``ethosu_invoke``), charged on the host as
:class:`Handover`: a fixed invoke cost plus a copy of the delegate's input and output bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from isa_models.cortex_m.program import (
    CopyWork,
    FloatWork,
    KernelWork,
    NoEstimate,
    Work,
    cost_of,
    dispatch_cost,
)
from isa_models.cost import Cost
from isa_models.errors import IsaModelError
from isa_models.ethos_u import u85
from isa_models.ethos_u.arch import Block, get_accelerator
from isa_models.ethos_u.layers import LayerCycles, NpuContext, NpuLayer, layer_cycles
from isa_models.ethos_u.supported import Call, npu_rejections, unsupported_function
from isa_models.ethos_u.systems import MEMORY_MODES, MemoryMode, NpuSystem, resolve
from isa_models.ethos_u.weights import encoded_weight_bytes

CONV_LIKE = ("arm_convolve_wrapper_s8", "arm_depthwise_conv_wrapper_s8", "arm_transpose_conv_wrapper_s8",
             "arm_avgpool_s8", "arm_max_pool_s8")  # fmt: skip


@dataclass(frozen=True)
class Handover:
    """Host cycles of one delegate call: ``invoke + copy_per_byte · (input + output bytes)``.

    EthosUBackend::execute copies each delegate input into the NPU's scratch region and each
    output back (memcpy, ~0.25 cycles/byte on an M55 with 64-bit loads and stores); the driver's
    ``ethosu_invoke`` writes the base-pointer registers, cleans/invalidates the data cache and
    sleeps until the NPU's interrupt (~2,000 cycles). Read from the ExecuTorch Arm backend's
    runtime and the ethos-u-core-driver sources, not measured."""

    invoke: float = 2000.0
    copy_per_byte: float = 0.25


HANDOVER = Handover()


@dataclass(frozen=True)
class OpInput:
    """One KernelCall as the estimator takes it (built by :func:`ops_from_method`)."""

    index: int
    name: str
    works: Sequence[Work]
    weights: np.ndarray | None = None
    arguments: int = 0
    io_bytes: int = 0  # bytes of its activation inputs + output (for the hand-over copy)


@dataclass(frozen=True)
class EthosRow:
    """One op: where it runs, what runs it (Vela operator / CMSIS-NN function), its cost in NPU
    cycles, what bounds it (compute, memory (sram|dram|off_chip_flash), host) and why an op
    stays on the CPU (the violated rules)."""

    index: int | None
    name: str
    placement: str  # "NPU", "NPU (no-op)", "CPU", "host"
    operator: str
    cost: Cost  # cycles in NPU clock cycles
    bound: str = "-"
    note: str = ""
    layers: tuple = ()  # LayerCycles per NPU layer
    planned: tuple = ()  # the NpuLayers themselves

    @property
    def estimated(self) -> bool:
        return self.cost.estimated

    @property
    def variant(self) -> str:
        """Placement, operator and bound in one column (the CPU estimate table's "variant")."""
        bound = "" if self.bound in ("-", "host") else f", {self.bound}-bound"
        return f"{self.placement}: {self.operator}{bound}"


@dataclass(frozen=True)
class EthosTarget:
    """What the estimate is for, in the fields ``refsim run``'s report and table read."""

    cpu: str
    isa: str  # the host core's tier (its kernels for the CPU ops)
    system: NpuSystem
    clock_mhz: float
    clock_note: str
    exported_for: str | None = None


@dataclass
class EthosEstimate:
    accelerator: str
    system: NpuSystem
    mode: MemoryMode
    host_core: str
    host_clock_mhz: float
    rows: list[EthosRow] = field(default_factory=list)

    @property
    def clock_mhz(self) -> float:
        return self.system.clock_mhz

    @property
    def target(self) -> EthosTarget:
        note = f"{self.system.name}, memory mode {self.mode.name}; host {self.host_core} at {self.host_clock_mhz:g} MHz"
        return EthosTarget(self.accelerator, "mve", self.system, self.clock_mhz, note)

    @property
    def library(self) -> str:
        return f"Vela-style NPU model + {self.host_core}"

    @property
    def total(self) -> Cost:
        return sum((r.cost for r in self.rows), Cost())

    @property
    def cycles_total(self) -> int:
        return self.total_cycles

    def _sum(self, placements: tuple[str, ...]) -> float:
        return sum(r.cost.cycles for r in self.rows if r.placement in placements)

    @property
    def npu_cycles(self) -> float:
        return self._sum(("NPU", "NPU (no-op)"))

    @property
    def cpu_cycles(self) -> float:
        return self._sum(("CPU", "host"))

    @property
    def total_cycles(self) -> int:
        return round(self.npu_cycles + self.cpu_cycles)

    @property
    def complete(self) -> bool:
        return all(r.cost.estimated for r in self.rows)

    @property
    def latency_ms(self) -> float:
        return self.total_cycles / (self.clock_mhz * 1e3)


def _layers_of(w: KernelWork, c: Call, next_function: str | None) -> tuple[list[NpuLayer], str]:
    """The Vela operators doing this CMSIS-NN call (see the module docstring) and a note."""
    p = c.p
    f = w.function

    def block(prefix: str) -> Block:
        return Block(p(f"{prefix}.w", 1), p(f"{prefix}.h", 1), p(f"{prefix}.c", 1))

    if f in ("arm_convolve_wrapper_s8", "arm_depthwise_conv_wrapper_s8", "arm_transpose_conv_wrapper_s8"):
        ifm, ofm = block("input_dims"), block("output_dims")
        kernel = (p("filter_dims.w", 1), p("filter_dims.h", 1))
        stride, dilation = (p("stride.w", 1), p("stride.h", 1)), (p("dilation.w", 1), p("dilation.h", 1))
        kind, note = "conv", "Conv2D"
        if f == "arm_depthwise_conv_wrapper_s8":
            kind, note = (
                ("conv", "DepthwiseConv2D as Conv2D (one input channel)")
                if ifm.d == 1
                else ("depthwise", "DepthwiseConv2D")
            )
        if f == "arm_transpose_conv_wrapper_s8":  # a convolution over the zero-upscaled input
            ifm, stride, note = Block(ifm.w * stride[0], ifm.h * stride[1], ifm.d), (1, 1), "TransposeConv2D"
        weights = encoded_weight_bytes(c.weights, w.weights_bytes - 4 * ofm.d)
        layer = NpuLayer(kind, ifm, ofm, kernel, stride, dilation, weights_bytes=weights, bias_channels=ofm.d)
        return [layer], note
    if f == "arm_fully_connected_s8":
        rows, depth, ch = p("input_dims.n", 1), p("input_dims.c"), p("output_dims.c")
        weights = encoded_weight_bytes(c.weights, depth * ch)
        return [NpuLayer("vector_product", Block(1, rows, depth), Block(1, rows, ch), weights_bytes=weights,
                         bias_channels=ch)], "FullyConnected"  # fmt: skip
    if f == "arm_batch_matmul_s8":
        b, r, k = p("input_lhs_dims.h", 1), p("input_lhs_dims.w", 1), p("input_lhs_dims.c", 1)
        cols = p("input_rhs_dims.w", 1)
        layer = NpuLayer("vector_product", Block(1, r, k), Block(1, r, cols), weights_bytes=k * cols)
        return [layer] * b, "MatMul"
    if f in ("arm_avgpool_s8", "arm_max_pool_s8"):
        kind = "avg_pool" if f == "arm_avgpool_s8" else "max_pool"
        layer = NpuLayer(kind, block("input_dims"), block("output_dims"), (p("filter_dims.w", 1), p("filter_dims.h", 1)),
                         (p("stride.w", 1), p("stride.h", 1)), activation="none")  # fmt: skip
        return [layer], "AvgPool" if kind == "avg_pool" else "MaxPool"
    if f in ("arm_elementwise_add_s8", "arm_elementwise_mul_s8", "refsim_lut_s8"):
        n = p("block_size", p("size", 1))
        depth = next(d for d in (64, 32, 16, 8, 1) if n % d == 0)
        shape = Block(1, n // depth, depth)
        op = {"arm_elementwise_add_s8": "add", "arm_elementwise_mul_s8": "mul"}.get(f, "lut")
        return [NpuLayer("elementwise", shape, shape, ifm2=None if op == "lut" else shape, op=op,
                         activation="lut" if op == "lut" else "none")], {"add": "Add", "mul": "Mul"}.get(op, "Table")  # fmt: skip
    if f in ("arm_maximum_s8", "arm_minimum_s8"):
        op = "max" if f == "arm_maximum_s8" else "min"
        return [NpuLayer("elementwise", block("input_1_dims"), block("output_dims"), ifm2=block("input_2_dims"),
                         op=op, activation="none")], op.capitalize() + "imum"  # fmt: skip
    if f == "arm_softmax_s8":
        return softmax_layers(p("num_rows", 1), p("row_size", 1), c.family), (
            "Softmax (max, sub + exp table, sum, mul + reciprocal table)"
            if c.family == "u85"
            else "Softmax (max, sub, exp table, sum, reciprocal table, mul + rescales)"
        )
    if f == "arm_pad_s8":
        if next_function in CONV_LIKE:
            return [], "Pad folded into the next layer's padding"
        nbytes = 1
        for k in "nhwc":
            nbytes *= p(f"input_size.{k}", 1) + p(f"pre_pad.{k}") + p(f"post_pad.{k}")
        return [NpuLayer("dma", Block(1, 1, nbytes), Block(1, 1, nbytes), copy_bytes=nbytes)], "Pad"
    if f == "arm_transpose_s8":
        n = 1
        for k in ("n", "h", "w", "c"):
            n *= p(f"input_dims.{k}", 1)
        shape = Block(1, 1, n)
        return [NpuLayer("elementwise", shape, shape, op="copy", activation="none")], "Transpose"
    raise AssertionError(f)  # npu_rejections lets only the functions above through


def softmax_layers(rows: int, size: int, family: str) -> list[NpuLayer]:
    """The int8 softmax as ExecuTorch's Arm backend hands it to Vela (``decompose_softmax_pass``):
    max, subtract, exp table, sum, reciprocal table, multiply, with a rescale per int8 operand.
    On U85 regor fuses each table and rescale into the op before it; the max pools a
    1 x ``size`` kernel and the sum reduces the row as channels."""
    if family == "u85":  # rows along the width, the row's values as channels; the max pools
        # each row as one 1 x size kernel over a one-channel map (Vela's shapes on the sweep)
        full, per_row = Block(rows, 1, size), Block(rows, 1, 1)
        return [
            NpuLayer(
                "reduce", Block(size, rows, 1), Block(1, rows, 1), (size, 1), op="max", activation="none"
            ),
            NpuLayer("elementwise", full, full, ifm2=per_row, op="sub", activation="lut"),
            NpuLayer("reduce", full, per_row, op="sum", activation="none"),
            NpuLayer("elementwise", full, full, ifm2=per_row, op="mul", activation="none"),
        ]
    full, per_row = Block(1, rows, size), Block(1, rows, 1)

    def ew(shape: Block, op: str, two: bool = False) -> NpuLayer:
        return NpuLayer("elementwise", shape, shape, ifm2=shape if two else None, op=op,
                        activation="lut" if op == "lut" else "none")  # fmt: skip

    reduce_max = NpuLayer("reduce", full, per_row, op="max", activation="none")
    reduce_sum = NpuLayer("reduce", full, per_row, op="sum", activation="none")
    return [reduce_max, ew(full, "rescale"), ew(per_row, "rescale"), ew(full, "sub", True),
            ew(full, "rescale"), ew(full, "lut"), reduce_sum, ew(per_row, "lut"), ew(full, "mul", True)]  # fmt: skip


def _rejections(op: OpInput, family: str, runtime: str) -> list[str]:
    """Why ``op`` cannot run on the NPU (empty: it can)."""
    reasons: list[str] = []
    for w in op.works:
        if isinstance(w, FloatWork):
            reasons.append(unsupported_function("fp32 work"))
        elif isinstance(w, NoEstimate):
            reasons.append(w.reason)
        elif isinstance(w, KernelWork):
            reasons += npu_rejections(Call(w.function, w.params, family, op.weights, runtime))
    return reasons


def _host_cost(op: OpInput, core: str, library: str | None, calibrations) -> Cost:
    cost = cost_of(list(op.works), core, library=library, calibrations=calibrations)
    return cost + dispatch_cost(
        op.arguments, cortex_m=op.name.startswith("cortex_m::"), core=core, op=op.name
    )


def estimate_ops(
    ops: Sequence[OpInput],
    accelerator: str,
    *,
    system: str | None = None,
    memory_mode: str | None = None,
    host_core: str = "cortex-m55",
    host_clock_mhz: float | None = None,
    library: str | None = None,
    handover: Handover = HANDOVER,
    runtime: str = "executorch",
) -> EthosEstimate:
    """Place and cost every op (see the module docstring). The host runs at the NPU's clock
    unless ``host_clock_mhz`` says otherwise (Corstone-300/310 clock both alike). ``runtime``
    names whose program it is (``executorch``: a .pte, ``tflm``: a .tflite), for the placement
    rules that belong to one runtime's partitioner (isa_models.ethos_u.supported)."""
    acc = get_accelerator(accelerator)
    npu_system, mode = resolve(acc.family, system, memory_mode)
    ctx = NpuContext(acc, npu_system, mode)
    host_mhz = host_clock_mhz or npu_system.clock_mhz
    to_npu = npu_system.clock_mhz / host_mhz
    est = EthosEstimate(acc.name, npu_system, mode, host_core, host_mhz)
    calibrations = None
    reasons = [_rejections(op, acc.family, runtime) for op in ops]
    memory_only = [all(isinstance(w, CopyWork) for w in op.works) for op in ops]
    npu = [not r and not m for r, m in zip(reasons, memory_only, strict=True)]
    # delegate boundaries: the first/last NPU op of each run (memory-only ops do not break a run)
    first, last, previous = set(), set(), None
    for k in range(len(ops)):
        if npu[k]:
            if previous is None:
                first.add(k)
            previous = k
        elif not memory_only[k] and previous is not None:
            last.add(previous)
            previous = None
    if previous is not None:
        last.add(previous)
    delegates = len(first)
    prev_layer: NpuLayer | None = None  # the last NPU layer of the current run (U85 chaining)
    for k, op in enumerate(ops):
        kernels = [w for w in op.works if isinstance(w, KernelWork)]
        if memory_only[k]:
            est.rows.append(EthosRow(op.index, op.name, "NPU (no-op)", "memory-only (reshape)", Cost()))
            continue
        if reasons[k]:
            if calibrations is None:  # loaded once, at the first host op (an all-NPU graph needs none)
                from isa_models.cortex_m.calibration import CalibrationSet

                calibrations = CalibrationSet(host_core, library)
            cost = _host_cost(op, host_core, library, calibrations)
            cost = Cost(
                cycles=cost.cycles * to_npu, macs=cost.macs, estimated=cost.estimated, sources=cost.sources
            )
            variant = ", ".join(dict.fromkeys(w.function for w in kernels)) or "portable"
            note = "; ".join(dict.fromkeys(reasons[k]))
            est.rows.append(EthosRow(op.index, op.name, "CPU", variant, cost, "host", note))
            prev_layer = None
            continue
        following = next(
            (w.function for o in ops[k + 1 :] for w in o.works if isinstance(w, KernelWork)), None
        )
        planned, notes = [], []
        for w in kernels:
            got, note = _layers_of(w, Call(w.function, w.params, acc.family, op.weights, runtime), following)
            planned += got
            notes.append(note)
        if planned and k in first:
            planned[0] = replace(planned[0], ifm_io=True)
        if planned and k in last:
            planned[-1] = replace(planned[-1], ofm_io=True)
        layers = []
        for layer in planned:
            if acc.family == "u85" and u85.chained(prev_layer, layer):
                layers.append(LayerCycles(compute=0.0))  # runs inside the previous op
            else:
                layers.append(layer_cycles(ctx, layer))
            prev_layer = layer
        macs = sum(layer.macs for layer in planned)
        cycles = sum(lc.total for lc in layers)
        bound = max(layers, key=lambda lc: lc.total).bound if layers else "-"  # the costliest layer's
        moved: dict[str, int] = {}
        for lc in layers:
            for m, b in lc.bytes.items():
                moved[m] = moved.get(m, 0) + int(b)
        cost = Cost(macs=macs, cycles=cycles, bytes_read=moved, sources=(f"Vela-style model of {acc.name}",))
        row = EthosRow(
            op.index, op.name, "NPU", "; ".join(notes), cost, bound, "", tuple(layers), tuple(planned)
        )
        est.rows.append(row)
    if delegates:
        host = delegates * handover.invoke + handover.copy_per_byte * _delegate_io(ops, est)
        est.rows.append(EthosRow(None, f"hand-over ({delegates} delegate call{'s' if delegates > 1 else ''})",
                                 "host", "EthosUBackend::execute", Cost(cycles=host * to_npu, sources=("Handover",)),
                                 "host"))  # fmt: skip
    return est


def _delegate_io(ops: Sequence[OpInput], est: EthosEstimate) -> int:
    """Bytes entering and leaving NPU runs: the io bytes of the first and last op of each run."""
    placement = {r.index: r.placement for r in est.rows}
    total = 0
    run: list[OpInput] = []
    for op in [*ops, None]:
        if op is not None and placement.get(op.index, "NPU (no-op)") != "CPU":
            if placement.get(op.index) == "NPU":
                run.append(op)
        elif run:
            total += run[0].io_bytes + run[-1].io_bytes
            run = []
    return total


def estimate_method(
    method,
    cost_hook: Callable,
    accelerator: str,
    *,
    system: str | None = None,
    clock_mhz: float | None = None,
    runtime: str = "executorch",
) -> EthosEstimate:
    """``refsim run --estimate-cycles --cpu ethos-u...``: :func:`estimate_ops` of a refsim Method.

    ``system`` names a Vela System_Config, a Memory_Mode, or both as ``<config>:<mode>``; the
    NPU clock is the configuration's, so ``clock_mhz`` is refused. ``runtime`` is the program's
    (``Program.runtime``: ``executorch`` or ``tflm``)."""
    if clock_mhz is not None:
        raise IsaModelError(
            "--clock-mhz does not apply to an Ethos-U estimate: the --system configuration sets the clock"
        )
    mode = None
    if system and ":" not in system and system.lower() in {m.lower() for m in MEMORY_MODES}:
        system, mode = None, system
    return estimate_ops(
        ops_from_method(method, cost_hook), accelerator, system=system, memory_mode=mode, runtime=runtime
    )


def ops_from_method(method, cost_hook: Callable, tier: str = "mve") -> list[OpInput]:
    """The OpInputs of a refsim Method (duck-typed: ``method.calls`` with ``op.name``,
    ``instruction``, ``args``; ``cost_hook(op)(args, tier)`` -> Work list) — isa_models does not
    import refsim."""
    out = []
    for call in method.calls:
        if call is None:
            continue
        a = call.args
        works = cost_hook(call.op)(a, tier)
        ref = getattr(a, "weight", None) or getattr(a, "weights", None)
        weights = getattr(ref, "storage", None)
        io = 0
        for name in ("input", "self", "out"):
            meta = getattr(getattr(a, name, None), "meta", None)
            io += int(getattr(meta, "nbytes", 0) or 0)
        values = getattr(a, "_values", ())
        out.append(OpInput(call.instruction, call.op.name, tuple(works), weights, len(values), io))
    return out


__all__ = [
    "HANDOVER",
    "EthosEstimate",
    "EthosRow",
    "EthosTarget",
    "Handover",
    "OpInput",
    "estimate_method",
    "estimate_ops",
    "ops_from_method",
]

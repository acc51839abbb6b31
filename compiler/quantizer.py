"""refsim's PT2E quantizer: CMSIS-NN int8 rules, our own observers, BatchNorm folding.

The rules (CMSIS-NN / TFLite int8, as ExecuTorch's cortex_m backend applies them):

- weights: symmetric int8, zero point 0, range [-127, 127]; per output channel for conv
  (``scale[c] = max|w[c]| / 127``), per tensor for linear (``scale = max|w| / 127``);
- activations: asymmetric int8 [-128, 127] from the calibration min/max, widened to hold 0
  (``scale = (max - min) / 255``, ``zp = -128 - round(min / scale)``), so zero padding and
  ReLU's floor are exact;
- bias: int32 at ``in_scale * w_scale[c]`` (computed by the lowering, not observed here);
- ReLU, ReLU6, hardtanh and clamp directly after a conv, linear or add are fused: the
  producer's output is not quantized, the activation's is, so the kernel's clamp range is the
  activation's (see ``compiler.lower``);
- pooling, pad, flatten/view keep their input's quantization (``SharedQuantizationSpec``);
  softmax outputs CMSIS-NN's fixed 1/256, -128;
- anything else is left unannotated: PT2E's convert then leaves it in fp32 between a
  dequantize and a quantize, and the lowering reports it.

ExecuTorch's CortexMQuantizer differs in its observers (HistogramObserver for activations,
weights in [-128, 127] with ``scale = max|w| / 127.5``); the interop tests compare both.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import torch
from torch import fx
from torch.nn.utils.fusion import fuse_conv_bn_weights, fuse_linear_bn_weights
from torchao.quantization.pt2e import (
    HistogramObserver,
    MinMaxObserver,
    ObserverBase,
    PerChannelMinMaxObserver,
)
from torchao.quantization.pt2e.quantizer import (
    FixedQParamsQuantizationSpec,
    QuantizationAnnotation,
    QuantizationSpec,
    Quantizer,
    SharedQuantizationSpec,
)

from compiler.errors import CompileError

aten = torch.ops.aten
INT8_MIN, INT8_MAX = -128, 127
WEIGHT_MAX = 127
SOFTMAX_SCALE, SOFTMAX_ZERO_POINT = 1.0 / 256.0, -128

CONV_TARGETS = (aten.conv2d.default,)
LINEAR_TARGETS = (aten.linear.default,)
ADD_TARGETS = (aten.add.Tensor,)
#: Ops that keep their input's quantization (no requantization on the device).
SHARED_TARGETS = (
    aten.avg_pool2d.default,
    aten.max_pool2d.default,
    aten.adaptive_avg_pool2d.default,
    aten.pad.default,
    aten.constant_pad_nd.default,
    aten.flatten.using_ints,
    aten.view.default,
    aten.reshape.default,
)
SOFTMAX_TARGETS = (aten.softmax.int, aten._softmax.default)
#: Activations a conv/linear/add absorbs into its output clamp.
FUSABLE_ACTIVATIONS = (
    aten.relu.default,
    aten.relu_.default,
    aten.relu6.default,
    aten.hardtanh.default,
    aten.hardtanh_.default,
    aten.clamp.default,
)
BATCH_NORM_TARGETS = (aten.batch_norm.default, aten._native_batch_norm_legit_no_training.default)


# --- observers -----------------------------------------------------------------------------------


class MinMaxActivationObserver(ObserverBase):
    """Running min/max of every calibration batch; asymmetric int8 parameters.

    ``lo = min(min, 0)``, ``hi = max(max, 0)``; ``scale = (hi - lo) / 255`` (float32, at least
    ``2^-30`` for a constant-zero tensor); ``zp = clamp(-128 - round(lo / scale), -128, 127)``.
    """

    def __init__(self, dtype=torch.int8, quant_min=INT8_MIN, quant_max=INT8_MAX, qscheme=None, **_):
        super().__init__(dtype=dtype, is_dynamic=False)
        self.quant_min, self.quant_max = int(quant_min), int(quant_max)
        self.qscheme = torch.per_tensor_affine
        self.register_buffer("min_val", torch.tensor(float("inf")))
        self.register_buffer("max_val", torch.tensor(float("-inf")))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.numel():
            detached = x.detach().float()
            self.min_val = torch.minimum(self.min_val, detached.min())
            self.max_val = torch.maximum(self.max_val, detached.max())
        return x

    def calculate_qparams(self):
        if not torch.isfinite(self.min_val) or not torch.isfinite(self.max_val):
            raise CompileError("an activation observer saw no data: calibrate before converting")
        lo = min(float(self.min_val), 0.0)
        hi = max(float(self.max_val), 0.0)
        scale = float(torch.tensor((hi - lo) / (self.quant_max - self.quant_min), dtype=torch.float32))
        scale = max(scale, 2.0**-30)
        zp = self.quant_min - round(lo / scale)
        zp = max(self.quant_min, min(self.quant_max, zp))
        return torch.tensor([scale], dtype=torch.float32), torch.tensor([zp], dtype=torch.int32)


class SymmetricWeightObserver(ObserverBase):
    """Per-tensor symmetric int8 weights: ``scale = max|w| / 127``, zero point 0."""

    def __init__(self, dtype=torch.int8, quant_min=-WEIGHT_MAX, quant_max=WEIGHT_MAX, **_):
        super().__init__(dtype=dtype, is_dynamic=False)
        self.quant_min, self.quant_max = int(quant_min), int(quant_max)
        self.qscheme = torch.per_tensor_symmetric
        self.register_buffer("amax", torch.tensor(0.0))

    def forward(self, w: torch.Tensor) -> torch.Tensor:
        self.amax = torch.maximum(self.amax, w.detach().abs().max().float())
        return w

    def calculate_qparams(self):
        scale = max(float(self.amax) / self.quant_max, 2.0**-30)
        return torch.tensor([scale], dtype=torch.float32), torch.tensor([0], dtype=torch.int32)


class PerChannelSymmetricWeightObserver(ObserverBase):
    """Per-output-channel symmetric int8 weights: ``scale[c] = max|w[c]| / 127``, zero points 0.
    (The class name holds "PerChannel": PT2E's prepare passes ``ch_axis`` only to such classes.)"""

    def __init__(self, dtype=torch.int8, quant_min=-WEIGHT_MAX, quant_max=WEIGHT_MAX, ch_axis=0, **_):
        super().__init__(dtype=dtype, is_dynamic=False)
        self.quant_min, self.quant_max = int(quant_min), int(quant_max)
        self.qscheme = torch.per_channel_symmetric
        self.ch_axis = int(ch_axis)
        self.register_buffer("amax", torch.tensor([]))

    def forward(self, w: torch.Tensor) -> torch.Tensor:
        per_channel = w.detach().abs().float().transpose(0, self.ch_axis).reshape(w.shape[self.ch_axis], -1)
        current = per_channel.max(dim=1).values
        self.amax = current if self.amax.numel() == 0 else torch.maximum(self.amax, current)
        return w

    def calculate_qparams(self):
        scale = torch.clamp(self.amax / self.quant_max, min=2.0**-30).to(torch.float32)
        return scale, torch.zeros(scale.shape, dtype=torch.int32)


ACTIVATION = QuantizationSpec(
    dtype=torch.int8,
    observer_or_fake_quant_ctr=MinMaxActivationObserver,
    quant_min=INT8_MIN,
    quant_max=INT8_MAX,
    qscheme=torch.per_tensor_affine,
)
WEIGHT_PER_TENSOR = QuantizationSpec(
    dtype=torch.int8,
    observer_or_fake_quant_ctr=SymmetricWeightObserver,
    quant_min=-WEIGHT_MAX,
    quant_max=WEIGHT_MAX,
    qscheme=torch.per_tensor_symmetric,
)
WEIGHT_PER_CHANNEL = QuantizationSpec(
    dtype=torch.int8,
    observer_or_fake_quant_ctr=PerChannelSymmetricWeightObserver,
    quant_min=-WEIGHT_MAX,
    quant_max=WEIGHT_MAX,
    qscheme=torch.per_channel_symmetric,
    ch_axis=0,
)
#: ExecuTorch 1.5.1 CortexMQuantizer's specs (torchao's observers), to reproduce its quantization
#: bit for bit in the interop comparison (``CortexMQuantizer(observers="executorch")``).
EXECUTORCH_SPECS = {
    "activation": QuantizationSpec(
        dtype=torch.int8, observer_or_fake_quant_ctr=HistogramObserver, qscheme=torch.per_tensor_affine
    ),
    "weight_per_tensor": QuantizationSpec(
        dtype=torch.int8, observer_or_fake_quant_ctr=MinMaxObserver, qscheme=torch.per_tensor_symmetric
    ),
    "weight_per_channel": QuantizationSpec(
        dtype=torch.int8,
        observer_or_fake_quant_ctr=PerChannelMinMaxObserver,
        qscheme=torch.per_channel_symmetric,
        ch_axis=0,
    ),
}
OWN_SPECS = {
    "activation": ACTIVATION,
    "weight_per_tensor": WEIGHT_PER_TENSOR,
    "weight_per_channel": WEIGHT_PER_CHANNEL,
}
OBSERVERS = {"cmsis": OWN_SPECS, "executorch": EXECUTORCH_SPECS}

SOFTMAX_OUTPUT = FixedQParamsQuantizationSpec(
    dtype=torch.int8,
    scale=SOFTMAX_SCALE,
    zero_point=SOFTMAX_ZERO_POINT,
    quant_min=INT8_MIN,
    quant_max=INT8_MAX,
    qscheme=torch.per_tensor_affine,
)


# --- BatchNorm folding -----------------------------------------------------------------------------


def _attr(gm: fx.GraphModule, node) -> torch.Tensor | None:
    if node is None:
        return None
    if not isinstance(node, fx.Node) or node.op != "get_attr":
        raise CompileError(f"{node}: expected a parameter or buffer (get_attr), found {node}")
    value = gm
    for part in node.target.split("."):
        value = getattr(value, part)
    return value.detach()


def fold_batch_norm(gm: fx.GraphModule) -> list[str]:
    """Fold every inference BatchNorm that directly follows a conv2d or linear into it.

    ``w' = w * g * rsqrt(var + eps)`` (per output channel), ``b' = (b - mean) * g * rsqrt(var + eps)
    + beta`` (torch.nn.utils.fusion's arithmetic). Returns the names of the folded BatchNorm nodes; a BatchNorm after anything else
    stays in the graph (left in fp32, reported by the lowering).
    """
    folded = []
    for bn in list(gm.graph.nodes):
        if bn.op != "call_function" or bn.target not in BATCH_NORM_TARGETS:
            continue
        producer = bn.args[0]
        if not (
            isinstance(producer, fx.Node)
            and producer.target in (*CONV_TARGETS, *LINEAR_TARGETS)
            and len(producer.users) == 1
        ):
            continue
        if bn.target == aten.batch_norm.default:
            _, gamma, beta, mean, var, training, _, eps, _ = bn.args
            if training:
                continue
            result = bn
        else:
            _, gamma, beta, mean, var, _, eps = bn.args
            getters = list(bn.users)
            if len(getters) != 1 or getters[0].target is not operator.getitem or getters[0].args[1] != 0:
                continue
            result = getters[0]
        weight = _attr(gm, producer.args[1])
        bias = _attr(gm, producer.args[2]) if len(producer.args) > 2 else None
        mean, var = _attr(gm, mean), _attr(gm, var)
        gamma = _attr(gm, gamma) if gamma is not None else torch.ones_like(mean)
        beta = _attr(gm, beta) if beta is not None else torch.zeros_like(mean)
        # torch's own fusion arithmetic (what PT2E's conv-BN fusion uses), so the folded
        # parameters are bit-identical to ExecuTorch's flow.
        if producer.target in CONV_TARGETS:
            new_weight, new_bias = fuse_conv_bn_weights(weight, bias, mean, var, eps, gamma, beta)
        else:
            new_weight, new_bias = fuse_linear_bn_weights(weight, bias, mean, var, eps, gamma, beta)
        new_weight, new_bias = new_weight.detach(), new_bias.detach()
        stem = producer.name
        gm.register_buffer(f"{stem}_folded_weight", new_weight.contiguous())
        gm.register_buffer(f"{stem}_folded_bias", new_bias.contiguous())
        with gm.graph.inserting_before(producer):
            w_node = gm.graph.get_attr(f"{stem}_folded_weight")
            b_node = gm.graph.get_attr(f"{stem}_folded_bias")
        args = list(producer.args)
        while len(args) < 3:
            args.append(None)
        args[1], args[2] = w_node, b_node
        producer.args = tuple(args)
        result.replace_all_uses_with(producer)
        for node in (result, bn) if result is not bn else (bn,):
            gm.graph.erase_node(node)
        folded.append(bn.name)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return folded


# --- annotation ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Annotated:
    """What the quantizer decided for one node (read back by the lowering for the report)."""

    node: str
    target: str
    fused_into: str | None = None


def _mark(node: fx.Node, inputs: dict, output) -> None:
    node.meta["quantization_annotation"] = QuantizationAnnotation(
        input_qspec_map=inputs, output_qspec=output, _annotated=True
    )


def _annotated(node: fx.Node) -> bool:
    a = node.meta.get("quantization_annotation")
    return a is not None and a._annotated


def fused_activation(node: fx.Node) -> fx.Node | None:
    """The ReLU/ReLU6/hardtanh/clamp that is ``node``'s only user, if any (and has constant bounds)."""
    users = list(node.users)
    if len(users) != 1 or users[0].target not in FUSABLE_ACTIVATIONS:
        return None
    act = users[0]
    if any(isinstance(a, fx.Node) for a in act.args[1:]) or any(
        isinstance(v, fx.Node) for v in act.kwargs.values()
    ):
        return None
    return act


class CortexMQuantizer(Quantizer):
    """Annotates conv2d, linear, add (with fused activations), pooling, pad, views and softmax.

    ``observers="cmsis"`` (default): our observers above. ``"executorch"``: the observers of
    ExecuTorch's CortexMQuantizer, for side-by-side comparisons."""

    def __init__(self, observers: str = "cmsis") -> None:
        super().__init__()
        if observers not in OBSERVERS:
            raise CompileError(f"observers must be one of {', '.join(OBSERVERS)}, got {observers!r}")
        self.specs = OBSERVERS[observers]

    def annotate(self, model: fx.GraphModule) -> fx.GraphModule:
        act = self.specs["activation"]
        for node in model.graph.nodes:
            if node.op != "call_function" or _annotated(node):
                continue
            if node.target in CONV_TARGETS or node.target in LINEAR_TARGETS:
                if not isinstance(node.args[1], fx.Node) or node.args[1].op != "get_attr":
                    continue  # a weight computed at run time: stays fp32
                kind = "weight_per_channel" if node.target in CONV_TARGETS else "weight_per_tensor"
                self._with_output(node, {node.args[0]: act, node.args[1]: self.specs[kind]}, act)
            elif node.target in ADD_TARGETS:
                a, b = node.args[:2]
                if isinstance(a, fx.Node) and isinstance(b, fx.Node) and node.kwargs.get("alpha", 1) == 1:
                    self._with_output(node, {a: act, b: act}, act)
            elif node.target in SHARED_TARGETS and isinstance(node.args[0], fx.Node):
                source = node.args[0]
                _mark(node, {source: act}, SharedQuantizationSpec((source, node)))
            elif node.target in SOFTMAX_TARGETS:
                _mark(node, {node.args[0]: act}, SOFTMAX_OUTPUT)
        return model

    @staticmethod
    def _with_output(node: fx.Node, inputs: dict, spec) -> None:
        act = fused_activation(node)
        if act is None:
            _mark(node, inputs, spec)
            return
        _mark(node, inputs, None)
        _mark(act, {}, spec)

    def validate(self, model: fx.GraphModule) -> None:
        return None

"""Converted PT2E graph → cortex_m kernel calls (`compiler.ir.Graph`), ExecuTorch 1.5.1 conventions.

After ``convert_pt2e`` every quantized value is a ``quantize_per_tensor`` node (its scale and
zero point are literal arguments) read through ``dequantize_*`` nodes; weights are int8
constants behind ``dequantize_per_channel`` (conv) or ``dequantize_per_tensor`` (linear). The
lowering walks the graph once in order and, for each float op whose inputs are dequantized and
whose output (possibly through a fused activation) is quantized, emits the cortex_m op on the
int8 tensors, with what ExecuTorch's ``aten_to_cortex_m_pass`` computes:

- conv: weights OIHW → OHWI; depthwise (``groups == C_in``, ``C_out % C_in == 0``, batch 1,
  which includes one input channel) → ``[1, KH, KW, C_out]`` and ``depth_multiplier``;
  ``input_offset = -zp_in``, ``output_offset = zp_out``; per-channel
  ``quantize_multiplier(s_in * s_w[c] / s_out)``; ``bias[c] = round(b[c] / (s_in * s_w[c]))``
  in int32 (a zero bias for grouped convs without one); scratch = CMSIS-NN's wrapper
  ``get_buffer_size`` for the target's tier;
- linear: per-tensor multiplier as one-element int lists, ``activation_max`` before
  ``activation_min``; for MVE no bias but ``kernel_sum = -zp_in·Σw + bias`` ([1, C_out]);
- add: TFLM's ``PrepareGeneralSubOrAdd`` multipliers (left shift 20), zero points as is;
- avg/max pool share their input's quantization; avg pool's multiplier/shift are
  ``quantize_multiplier(s_in)`` (carried, unused by the kernel); padding counted in the mean
  becomes a ``cortex_m::pad`` with the zero point first;
- softmax over the last dim: TFLM's ``PreprocessSoftmaxScaling`` (beta 1); output 1/256, -128;
- pad: ``pre_pad``/``post_pad`` in the tensor's physical (dim-order) order, value quantized;
- flatten/view: a view of the same bytes when the channels-last bytes already are in the
  logical element order (spatial 1×1 or one channel); else an int8
  ``dim_order_ops::_to_dim_order_copy`` to contiguous first, and, for a 4-D result whose
  channels-last bytes would differ from the row-major ones, one to channels-last after.

A rule that does not apply to its node (max pool with ceil_mode, softmax over another dim,
a broadcasting add, ...) raises `UnsupportedLayerError`; the lowering then undoes what the
rule began and runs the node in fp32 instead, giving the rule's message as the reason.

Activations are 4-D tensors with logical NCHW sizes and dim order ``[0, 2, 3, 1]`` (NHWC
bytes), as ExecuTorch's legacy cortex_m layout mode emits them. Fused ReLU/ReLU6/hardtanh/clamp
set ``activation_min``/``activation_max``. Ops left in fp32 run as ``aten::*`` portable
kernels between ``cortex_m::dequantize_per_tensor`` and ``cortex_m::quantize_per_tensor``
when refsim has them (``compiler.portable_float`` lists them and their conventions);
otherwise `UnsupportedLayerError` names the layer.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import fx

from compiler import ops_lowering as L
from compiler.errors import UnsupportedLayerError
from compiler.ir import Graph, Layer, TensorArg, TensorInfo
from compiler.portable_float import lower_fp32
from compiler.quantizer import FUSABLE_ACTIVATIONS
from compiler.targets import Target
from refsim.pte.model import ScalarType

qd = torch.ops.quantized_decomposed
QUANTIZE = (qd.quantize_per_tensor.default,)
DEQUANTIZE = (qd.dequantize_per_tensor.default,)
DEQUANTIZE_WEIGHT = (qd.dequantize_per_channel.default, qd.dequantize_per_tensor.default)
SKIPPED_MODULES = ("_guards_fn",)


class Lowering:
    """State of one lowering: the graph being built and what each fx node became."""

    def __init__(self, gm: fx.GraphModule, target: Target) -> None:
        self.gm = gm
        self.target = target
        self.graph = Graph()
        self.quantized: dict[fx.Node, str] = {}  # quantize node (or int8 input) -> int8 tensor
        self.floats: dict[fx.Node, str] = {}  # float-valued node -> fp32 tensor
        self.done: set[fx.Node] = set()
        self.converted: dict[tuple[str, tuple[int, ...]], str] = {}  # (tensor, dim order) -> copy

    # --- helpers -------------------------------------------------------------------------------

    def attr(self, node: fx.Node) -> torch.Tensor:
        value = self.gm
        for part in node.target.split("."):
            value = getattr(value, part)
        return value.detach()

    def val(self, node: fx.Node) -> torch.Tensor:
        v = node.meta.get("val")
        if v is None and (node.target in QUANTIZE or node.target in DEQUANTIZE):
            return self.val(node.args[0])  # convert_pt2e's q/dq nodes carry no fake tensor
        if v is None:
            raise UnsupportedLayerError(f"{node.name}: no shape information in the exported graph")
        return v

    def new_tensor(self, name: str, dtype: ScalarType, sizes, *, scale=None, zero_point=None, data=None):
        sizes = tuple(int(s) for s in sizes)
        order = L.NCHW_AS_NHWC if len(sizes) == 4 and data is None else tuple(range(len(sizes)))
        info = TensorInfo(name, dtype, sizes, order, data=data, scale=scale, zero_point=zero_point)
        return self.graph.add(info)

    def constant(self, name: str, array: np.ndarray) -> str:
        dtype = {
            np.dtype(np.int8): ScalarType.INT8,
            np.dtype(np.int32): ScalarType.INT32,
            np.dtype(np.float32): ScalarType.FLOAT32,
        }[array.dtype]
        return self.new_tensor(
            name, dtype, array.shape, data=np.ascontiguousarray(array).reshape(array.shape)
        )

    def scratch(self, name: str, nbytes: int) -> str:
        return self.new_tensor(name, ScalarType.UINT8, (int(nbytes),))

    def int8_input(self, node: fx.Node) -> tuple[str, float, int]:
        """The int8 tensor a float op reads through ``dequantize_per_tensor`` (name, scale, zp)."""
        if not (isinstance(node, fx.Node) and node.target in DEQUANTIZE):
            raise UnsupportedLayerError(f"{node}: expected a dequantized int8 input")
        q = node.args[0]
        if q not in self.quantized:
            raise UnsupportedLayerError(f"{node.name}: its int8 producer {q} was not lowered")
        return self.quantized[q], float(node.args[1]), int(node.args[2])

    def output_quantize(self, node: fx.Node) -> tuple[fx.Node, fx.Node | None]:
        """The quantize node after ``node`` (directly or through one fused activation)."""
        users = list(node.users)
        act = None
        if len(users) == 1 and users[0].target in FUSABLE_ACTIVATIONS:
            act = users[0]
            users = list(act.users)
        qs = [u for u in users if u.target in QUANTIZE]
        if len(qs) != 1 or len(users) != 1:
            raise UnsupportedLayerError(f"{node.name}: its output is not quantized once (users {users})")
        if act is not None:
            self.done.add(act)
        return qs[0], act

    def define_output(self, node: fx.Node, q: fx.Node, name: str | None = None) -> tuple[str, float, int]:
        scale, zp = float(q.args[1]), int(q.args[2])
        tensor = self.new_tensor(
            name or node.name, ScalarType.INT8, self.val(q).shape, scale=scale, zero_point=zp
        )
        self.quantized[q] = tensor
        self.done.add(q)
        return tensor, scale, zp

    def call(
        self,
        op: str,
        args: tuple,
        out: str,
        layer: str,
        scratch: tuple[str, ...] = (),
        *,
        overload: str = "out",
        extra_outs: tuple[str, ...] = (),
    ) -> None:
        self.graph.calls.append(L.make_call(op, args, out, layer, scratch, overload, extra_outs))

    def in_dim_order(self, name: str, order: tuple[int, ...]) -> str:
        """``name`` in dim order ``order``: itself, a view when its bytes already are in that
        order (the same non-unit dims in the same order), else a ``_to_dim_order_copy``."""
        info = self.graph.tensors[name]
        order = tuple(order)
        if info.dim_order == order:
            return name
        if (name, order) in self.converted:
            return self.converted[(name, order)]
        kind = "contiguous" if order == tuple(range(len(order))) else "channels_last"
        new = self.graph.add(
            TensorInfo(
                f"{name}_{kind}", info.dtype, info.sizes, order, scale=info.scale, zero_point=info.zero_point
            )
        )
        if [d for d in info.dim_order if info.sizes[d] != 1] == [d for d in order if info.sizes[d] != 1]:
            self.graph.tensors[new].alias_of = name
        else:
            self.call("dim_order_ops::_to_dim_order_copy", (TensorArg(name), False, order), new, name)
        self.converted[(name, order)] = new
        return new

    def layer(self, node: fx.Node, status: str, detail: str = "") -> None:
        self.graph.layers.append(
            Layer(
                node.name,
                str(node.target).split(".")[-2] if "." in str(node.target) else str(node.target),
                status,
                detail,
            )
        )

    # --- the walk --------------------------------------------------------------------------------

    def run(self) -> Graph:
        nodes = list(self.gm.graph.nodes)
        for node in nodes:
            if node in self.done:
                continue
            if node.op == "placeholder":
                self.placeholder(node)
            elif node.op == "get_attr":
                continue
            elif node.op == "call_module":
                if node.target not in SKIPPED_MODULES:
                    raise UnsupportedLayerError(f"{node.name}: module call {node.target} left in the graph")
            elif node.op == "output":
                self.output(node)
            elif node.target in QUANTIZE:
                self.quantize(node)
            elif node.target in DEQUANTIZE or node.target in DEQUANTIZE_WEIGHT:
                continue  # read by their users
            else:
                self.compute(node)
        return self.graph

    def placeholder(self, node: fx.Node) -> None:
        users = list(node.users)
        qs = [u for u in users if u.target in QUANTIZE]
        params = {(float(q.args[1]), int(q.args[2])) for q in qs}
        if qs and len(qs) == len(users) and len(params) == 1:
            # ExecuTorch's QuantizeInputs: the program takes the int8 tensor itself.
            tensor, _, _ = self.define_output(node, qs[0], name=f"input{len(self.graph.inputs)}")
            for q in qs[1:]:
                self.quantized[q] = tensor
                self.done.add(q)
        else:
            tensor = self.new_tensor(
                f"input{len(self.graph.inputs)}", ScalarType.FLOAT32, self.val(node).shape
            )
            self.floats[node] = tensor
        self.graph.inputs.append(tensor)

    def output(self, node: fx.Node) -> None:
        values = node.args[0] if isinstance(node.args[0], list | tuple) else (node.args[0],)
        for value in values:
            if isinstance(value, fx.Node) and value.target in DEQUANTIZE:
                name, _, _ = self.int8_input(value)  # QuantizeOutputs: int8 output
            elif value in self.floats:
                name = self.floats[value]
            else:
                raise UnsupportedLayerError(f"graph output {value}: not a tensor the program computes")
            self.graph.outputs.append(name)

    def quantize(self, node: fx.Node) -> None:
        """A quantize of a float value computed on the device (after an fp32 island)."""
        source = node.args[0]
        if source not in self.floats and isinstance(source, fx.Node) and source.target in DEQUANTIZE:
            # dequantize → quantize: the same int8 tensor when the parameters agree
            q_in, scale_in, zp_in = self.int8_input(source)
            if (scale_in, zp_in) == (float(node.args[1]), int(node.args[2])):
                self.quantized[node] = q_in
                self.done.add(node)
                return
            self.float_input(source)  # else requantize through fp32
        if source not in self.floats:
            raise UnsupportedLayerError(f"{node.name}: quantizes {source}, which was not lowered")
        tensor, scale, zp = self.define_output(source, node, name=f"{source.name}_q")
        value = self.in_dim_order(self.floats[source], self.graph.tensors[tensor].dim_order)
        args = (TensorArg(value), scale, zp, -128, 127, int(ScalarType.INT8))
        self.call("cortex_m::quantize_per_tensor", args, tensor, node.name)

    def float_input(self, node) -> str:
        """A float tensor for ``node`` (dequantizing an int8 one on the device if needed)."""
        if node in self.floats:
            return self.floats[node]
        if isinstance(node, fx.Node) and node.target in DEQUANTIZE:
            source, scale, zp = self.int8_input(node)
            out = self.new_tensor(f"{node.name}_f32", ScalarType.FLOAT32, self.val(node).shape)
            self.graph.tensors[out].dim_order = self.graph.tensors[source].dim_order
            args = (TensorArg(source), scale, zp, -128, 127, int(ScalarType.INT8))
            self.call("cortex_m::dequantize_per_tensor", args, out, node.name)
            self.floats[node] = out
            return out
        raise UnsupportedLayerError(f"{node}: an input that is neither a tensor of the graph nor dequantized")

    def compute(self, node: fx.Node) -> None:
        rule = L.RULES.get(node.target)
        quantized_inputs = all(
            isinstance(a, fx.Node) and (a.target in DEQUANTIZE or a.target in DEQUANTIZE_WEIGHT)
            for a in node.args
            if isinstance(a, fx.Node) and a.op != "get_attr"
        )
        if rule is not None and quantized_inputs and self._quantized_output(node):
            saved = self._snapshot()
            try:
                rule(self, node)
                return
            except UnsupportedLayerError as exc:  # this instance has no int8 form: fp32 instead
                self._restore(saved)
                why = f"no int8 form for it ({str(exc).removeprefix(node.name + ': ')})"
        else:
            why = "no int8 cortex_m form" if rule is None else "not quantized (inputs or output fp32)"
        self.fp32(node, why)

    def _snapshot(self) -> tuple:
        g = self.graph
        return (dict(g.tensors), len(g.calls), len(g.layers), dict(self.quantized), dict(self.floats),
                set(self.done), dict(self.converted))  # fmt: skip

    def _restore(self, saved: tuple) -> None:
        tensors, n_calls, n_layers, quantized, floats, done, converted = saved
        self.graph.tensors = tensors
        del self.graph.calls[n_calls:], self.graph.layers[n_layers:]
        self.quantized, self.floats, self.done, self.converted = quantized, floats, done, converted

    def _quantized_output(self, node: fx.Node) -> bool:
        users = list(node.users)
        if len(users) == 1 and users[0].target in FUSABLE_ACTIVATIONS:
            users = list(users[0].users)
        return len(users) == 1 and users[0].target in QUANTIZE

    def fp32(self, node: fx.Node, why: str) -> None:
        """Run ``node`` in fp32 on refsim's portable kernel ``aten::<op>.out``, if it has one."""
        lower_fp32(self, node, why)


def lower(gm: fx.GraphModule, target: Target) -> Graph:
    """The `Graph` of a converted PT2E module for ``target``."""
    return Lowering(gm, target).run()


__all__ = ["Lowering", "lower"]

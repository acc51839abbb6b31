"""Layers with no int8 cortex_m form, left in fp32 on refsim's portable kernels
(``refsim/ops/portable_float/``), between ``cortex_m::dequantize_per_tensor`` and
``cortex_m::quantize_per_tensor``.

Each float op of the exported graph maps to the ``aten::<op>.<overload>`` kernel ExecuTorch
1.5.1's emitter writes for it after ``to_edge`` (every schema argument positional, keyword-only
ones included, the out tensor(s) last):

- elementwise: sigmoid, tanh, gelu (``approximate`` as a String), hardswish, hardsigmoid
  (ExecuTorch emits these two only with ``preserve_ops``; its default decomposes them),
  exp, neg, sqrt, rsqrt, relu, relu6 → ``hardtanh(0, 6)``, hardtanh, clamp; add/sub (alpha),
  mul, div by a tensor; a Python scalar operand becomes a 0-dim float32 constant
  (ExecuTorch's ScalarToTensorPass); silu → ``sigmoid`` then ``mul`` (its decomposition);
- convolution (conv1d/conv2d not quantized, conv_transpose1d/2d) → ``aten::convolution.out``
  with stride/padding/dilation/output_padding as lists of the spatial rank and ``transposed``;
- reductions: mean (``mean.dim``; ``mean.default`` over every dim listed, where ExecuTorch
  emits ``mean.dtype_out``, which refsim lacks; adaptive average pool to 1×1 as a
  ``mean`` over [-1, -2] with keepdim), ``sum.IntList_out``, ``_softmax`` (half_to_float
  False); matrix products: mm, bmm, addmm (beta, alpha), linear, matmul as mm or bmm;
- pooling: avg_pool2d, max_pool2d → ``max_pool2d_with_indices`` (int64 indices, a second
  planned output, returned with the first in a TensorList);
- layout: view/reshape/flatten → ``view_copy``, permute, transpose, t → ``permute_copy``, squeeze/unsqueeze →
  ``squeeze_copy.dims_out``/``unsqueeze_copy``, cat (a TensorList), slice → ``slice_copy.Tensor_out``,
  clone → ``dim_order_ops::_clone_dim_order``.

Dim orders follow ExecuTorch's checks: elementwise ops, convolution and max pool run in the
dim order of their first input (the others converted to it); reductions, matrix products,
avg_pool2d, softmax and the layout ops need the default dim order. A channels-last tensor an
op needs contiguous goes through ``dim_order_ops::_to_dim_order_copy`` (a view instead when
the bytes are already in that order: at most one non-unit dim besides the batch), and a
contiguous 4-D result goes back to channels-last before it is quantized for the int8 ops.
Weights of fp32 layers are float32 constants (dequantized ones evaluated at compile time).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import fx

from compiler.errors import UnsupportedLayerError
from compiler.ir import TensorArg
from refsim.pte.model import ScalarType

if TYPE_CHECKING:
    from compiler.lower import Lowering

aten = torch.ops.aten
KEEP, DEFAULT = "keep", "default"
__all__ = ["FP32_RULES", "Fp32Rule", "lower_fp32"]


@dataclass(frozen=True)
class Fp32Rule:
    """One float op on one portable kernel: ``op`` (qualified name without overload), its
    ``overload``, ``layout`` (``"keep"``: the first input's dim order, ``"default"``:
    contiguous), ``args(node, operands)`` → the schema arguments, ``extra_outputs``: dtypes of
    outputs after the first (same sizes, or ``[0]`` with ``empty_extra_outputs``),
    ``scalar_operands``: Python numbers become tensors."""

    op: str
    args: Callable[[fx.Node, Operands], tuple]
    overload: str = "out"
    layout: str = KEEP
    extra_outputs: tuple[ScalarType, ...] = ()
    scalar_operands: bool = False
    empty_extra_outputs: bool = False  # batch norm's saved statistics: [0]


def _arg(node: fx.Node, index: int, name: str, default):
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _ints(value, rank: int, default) -> tuple[int, ...]:
    if value is None or (isinstance(value, list | tuple) and len(value) == 0):
        value = default
    if isinstance(value, str):
        raise UnsupportedLayerError(f"padding={value!r}: give explicit integer padding")
    if isinstance(value, int):
        return (int(value),) * rank
    v = tuple(int(x) for x in value)
    return v * rank if len(v) == 1 else v


@dataclass
class Operands:
    """Builds a call's tensor arguments in the dim order the kernel needs."""

    lw: Lowering
    node: fx.Node
    rule: Fp32Rule
    order: tuple[int, ...] | None = None

    def t(self, value) -> TensorArg | None:
        """A tensor argument: an activation, a constant (weight), or a scalar as a 0-dim tensor."""
        if value is None:
            return None
        if isinstance(value, int | float) and not isinstance(value, bool):
            if not self.rule.scalar_operands:
                raise UnsupportedLayerError(f"layer {self.node.name}: a scalar where a tensor is needed")
            return TensorArg(self.lw.constant(f"{self.node.name}_scalar", np.array(value, np.float32)))
        if not isinstance(value, fx.Node):
            raise UnsupportedLayerError(f"layer {self.node.name}: argument {value!r} is not a tensor")
        folded = _constant(self.lw, value)
        if folded is not None:
            array = folded.detach().numpy().astype(np.float32)
            return TensorArg(self.lw.constant(f"{self.node.name}_{value.name}", np.ascontiguousarray(array)))
        if value not in self.lw.floats and not _is_dequantize(value):
            raise UnsupportedLayerError(
                f"layer {self.node.name}: input {value.name} is not a tensor of the program"
            )
        name = self.lw.float_input(value)
        rank = len(self.lw.graph.tensors[name].sizes)
        if self.order is None:
            if self.rule.layout == DEFAULT or rank != 4:
                self.order = tuple(range(rank))
            else:
                self.order = self.lw.graph.tensors[name].dim_order
        want = self.order if rank == len(self.order) else tuple(range(rank))
        return TensorArg(self.lw.in_dim_order(name, want))

    def ts(self, values) -> tuple[TensorArg, ...]:
        return tuple(self.t(v) for v in values)


def _is_dequantize(node: fx.Node) -> bool:
    return node.target == torch.ops.quantized_decomposed.dequantize_per_tensor.default


def _constant(lw: Lowering, node: fx.Node) -> torch.Tensor | None:
    """The value of a node computed from constants alone (a weight, a dequantized weight)."""
    if node.op == "get_attr":
        return lw.attr(node)
    if node.op != "call_function":
        return None
    inputs = [a for a in (*node.args, *node.kwargs.values()) if isinstance(a, fx.Node)]
    if not inputs:
        return None
    values = {}
    for a in inputs:
        v = _constant(lw, a)
        if v is None:
            return None
        values[a] = v
    args = tuple(values.get(a, a) if isinstance(a, fx.Node) else a for a in node.args)
    kwargs = {k: values.get(v, v) if isinstance(v, fx.Node) else v for k, v in node.kwargs.items()}
    with torch.no_grad():
        return node.target(*args, **kwargs)


# --- argument builders ------------------------------------------------------------------------


def _unary(n, o):
    return (o.t(n.args[0]),)


def _binary_alpha(n, o):
    return (*o.ts(n.args[:2]), n.kwargs.get("alpha", 1))


def _binary(n, o):
    return o.ts(n.args[:2])


def _clamp(n, o):
    return (o.t(n.args[0]), _arg(n, 1, "min", None), _arg(n, 2, "max", None))


def _hardtanh(n, o):
    return (o.t(n.args[0]), float(_arg(n, 1, "min_val", -1.0)), float(_arg(n, 2, "max_val", 1.0)))


def _gelu(n, o):
    return (o.t(n.args[0]), str(n.kwargs.get("approximate", "none")))


def _spatial(n, o) -> int:
    return len(o.lw.val(n.args[0]).shape) - 2


def _conv(n, o):
    rank = _spatial(n, o)
    x, w, b = o.t(n.args[0]), o.t(n.args[1]), o.t(_arg(n, 2, "bias", None))
    stride = _ints(_arg(n, 3, "stride", 1), rank, 1)
    padding = _ints(_arg(n, 4, "padding", 0), rank, 0)
    dilation = _ints(_arg(n, 5, "dilation", 1), rank, 1)
    groups = int(_arg(n, 6, "groups", 1))
    return (x, w, b, stride, padding, dilation, False, (0,) * rank, groups)


def _conv_transpose(n, o):
    rank = _spatial(n, o)
    x, w, b = o.t(n.args[0]), o.t(n.args[1]), o.t(_arg(n, 2, "bias", None))
    stride = _ints(_arg(n, 3, "stride", 1), rank, 1)
    padding = _ints(_arg(n, 4, "padding", 0), rank, 0)
    output_padding = _ints(_arg(n, 5, "output_padding", 0), rank, 0)
    groups = int(_arg(n, 6, "groups", 1))
    dilation = _ints(_arg(n, 7, "dilation", 1), rank, 1)
    return (x, w, b, stride, padding, dilation, True, output_padding, groups)


def _convolution(n, o):
    rank = _spatial(n, o)
    x, w, b = o.t(n.args[0]), o.t(n.args[1]), o.t(n.args[2])
    stride, padding, dilation = (_ints(v, rank, d) for v, d in zip(n.args[3:6], (1, 0, 1), strict=True))
    return (x, w, b, stride, padding, dilation, bool(n.args[6]), _ints(n.args[7], rank, 0), int(n.args[8]))


def _no_dtype(n) -> None:
    dtype = n.kwargs.get("dtype")
    if dtype not in (None, torch.float32):
        raise UnsupportedLayerError(f"layer {n.name}: a reduction to {dtype}")


def _reduce(n, o):
    _no_dtype(n)
    dim = _arg(n, 1, "dim", None)
    return (
        o.t(n.args[0]),
        None if dim is None else tuple(int(d) for d in dim),
        bool(_arg(n, 2, "keepdim", False)),
        None,
    )


def _sum_all(n, o):
    _no_dtype(n)
    return (o.t(n.args[0]), (), False, None)  # every dim: an empty list, as ExecuTorch emits it


def _mean_all(n, o):
    """ExecuTorch emits ``mean.dtype_out`` here, which refsim lacks: the same mean as
    ``mean.out`` over every dim, listed."""
    _no_dtype(n)
    return (o.t(n.args[0]), tuple(range(len(o.lw.val(n.args[0]).shape))), False, None)


def _adaptive_mean(n, o):
    if _ints(n.args[1], 2, None) != (1, 1):
        raise UnsupportedLayerError(f"layer {n.name}: adaptive average pool to other than 1x1 in fp32")
    return (o.t(n.args[0]), (-1, -2), True, None)


def _softmax(n, o):
    if n.target == aten.softmax.int:
        _no_dtype(n)
        return (o.t(n.args[0]), int(n.args[1]), False)
    return (o.t(n.args[0]), int(n.args[1]), bool(n.args[2]))


def _addmm(n, o):
    return (*o.ts(n.args[:3]), n.kwargs.get("beta", 1), n.kwargs.get("alpha", 1))


def _linear(n, o):
    return (o.t(n.args[0]), o.t(n.args[1]), o.t(_arg(n, 2, "bias", None)))


def _avg_pool(n, o):
    kernel = _ints(n.args[1], 2, None)
    stride = _ints(_arg(n, 2, "stride", None), 2, kernel)
    padding = _ints(_arg(n, 3, "padding", 0), 2, 0)
    ceil_mode = bool(_arg(n, 4, "ceil_mode", False))
    include_pad = bool(_arg(n, 5, "count_include_pad", True))
    return (
        o.t(n.args[0]),
        kernel,
        stride,
        padding,
        ceil_mode,
        include_pad,
        _arg(n, 6, "divisor_override", None),
    )


def _max_pool(n, o):
    kernel = _ints(n.args[1], 2, None)
    stride = _ints(_arg(n, 2, "stride", None), 2, kernel)
    padding = _ints(_arg(n, 3, "padding", 0), 2, 0)
    dilation = _ints(_arg(n, 4, "dilation", 1), 2, 1)
    return (o.t(n.args[0]), kernel, stride, padding, dilation, bool(_arg(n, 5, "ceil_mode", False)))


def _view(n, o):
    return (o.t(n.args[0]), tuple(int(s) for s in o.lw.val(n).shape))


def _permute(n, o):
    return (o.t(n.args[0]), tuple(int(d) for d in n.args[1]))


def _transpose(n, o):
    rank = len(o.lw.val(n.args[0]).shape)
    perm = list(range(rank))
    if n.target == aten.t.default:
        perm = perm[::-1]
    else:
        a, b = int(n.args[1]) % rank, int(n.args[2]) % rank
        perm[a], perm[b] = perm[b], perm[a]
    return (o.t(n.args[0]), tuple(perm))


def _squeeze_dim(n, o):
    return (o.t(n.args[0]), int(n.args[1]))


def _squeeze_one(n, o):
    return (o.t(n.args[0]), (int(n.args[1]),))  # torch.export's squeeze.dims, as ExecuTorch emits it


def _squeeze_dims(n, o):
    return (o.t(n.args[0]), tuple(int(d) for d in n.args[1]))


def _cat(n, o):
    return (o.ts(n.args[0]), int(_arg(n, 1, "dim", 0)))


def _slice(n, o):
    return (
        o.t(n.args[0]),
        int(_arg(n, 1, "dim", 0)),
        _arg(n, 2, "start", None),
        _arg(n, 3, "end", None),
        int(_arg(n, 4, "step", 1)),
    )


def _clone(n, o):
    return (o.t(n.args[0]), False, None)


def _batch_norm(n, o):
    if n.target == aten.batch_norm.default:
        if bool(n.args[5]):
            raise UnsupportedLayerError(f"layer {n.name}: batch norm in training mode")
        momentum, eps = float(n.args[6]), float(n.args[7])
    else:
        momentum, eps = float(n.args[5]), float(n.args[6])
    return (*o.ts(n.args[:5]), momentum, eps)


def _rule(op: str, args, **kw) -> Fp32Rule:
    return Fp32Rule(op, args, **kw)


_UNARY = {
    name: _rule(f"aten::{name}", _unary)
    for name in ("sigmoid", "tanh", "hardswish", "hardsigmoid", "exp", "neg", "sqrt", "rsqrt", "relu")
}

_BATCH_NORM = _rule(
    "aten::_native_batch_norm_legit_no_training",
    _batch_norm,
    layout=DEFAULT,
    extra_outputs=(ScalarType.FLOAT32, ScalarType.FLOAT32),
    empty_extra_outputs=True,
)

FP32_RULES: dict = {
    aten.sigmoid.default: _UNARY["sigmoid"],
    aten.tanh.default: _UNARY["tanh"],
    aten.hardswish.default: _UNARY["hardswish"],
    aten.hardswish_.default: _UNARY["hardswish"],
    aten.hardsigmoid.default: _UNARY["hardsigmoid"],
    aten.hardsigmoid_.default: _UNARY["hardsigmoid"],
    aten.exp.default: _UNARY["exp"],
    aten.neg.default: _UNARY["neg"],
    aten.sqrt.default: _UNARY["sqrt"],
    aten.rsqrt.default: _UNARY["rsqrt"],
    aten.relu.default: _UNARY["relu"],
    aten.relu_.default: _UNARY["relu"],
    aten.relu6.default: _rule("aten::hardtanh", lambda n, o: (o.t(n.args[0]), 0.0, 6.0)),
    aten.hardtanh.default: _rule("aten::hardtanh", _hardtanh),
    aten.hardtanh_.default: _rule("aten::hardtanh", _hardtanh),
    aten.clamp.default: _rule("aten::clamp", _clamp),
    aten.gelu.default: _rule("aten::gelu", _gelu),
    aten.add.Tensor: _rule("aten::add", _binary_alpha, scalar_operands=True),
    aten.sub.Tensor: _rule("aten::sub", _binary_alpha, scalar_operands=True),
    aten.mul.Tensor: _rule("aten::mul", _binary, scalar_operands=True),
    aten.div.Tensor: _rule("aten::div", _binary, scalar_operands=True),
    aten.conv1d.default: _rule("aten::convolution", _conv),
    aten.conv2d.default: _rule("aten::convolution", _conv),
    aten.conv_transpose1d.default: _rule("aten::convolution", _conv_transpose),
    aten.conv_transpose2d.input: _rule("aten::convolution", _conv_transpose),
    aten.convolution.default: _rule("aten::convolution", _convolution),
    aten.mean.dim: _rule("aten::mean", _reduce, layout=DEFAULT),
    aten.mean.default: _rule("aten::mean", _mean_all, layout=DEFAULT),
    aten.adaptive_avg_pool2d.default: _rule("aten::mean", _adaptive_mean, layout=DEFAULT),
    aten.sum.default: _rule("aten::sum", _sum_all, overload="IntList_out", layout=DEFAULT),
    aten.sum.dim_IntList: _rule("aten::sum", _reduce, overload="IntList_out", layout=DEFAULT),
    aten.softmax.int: _rule("aten::_softmax", _softmax, layout=DEFAULT),
    aten._softmax.default: _rule("aten::_softmax", _softmax, layout=DEFAULT),
    aten.mm.default: _rule("aten::mm", _binary, layout=DEFAULT),
    aten.bmm.default: _rule("aten::bmm", _binary, layout=DEFAULT),
    aten.addmm.default: _rule("aten::addmm", _addmm, layout=DEFAULT),
    aten.linear.default: _rule("aten::linear", _linear, layout=DEFAULT),
    aten.avg_pool2d.default: _rule("aten::avg_pool2d", _avg_pool, layout=DEFAULT),
    aten.max_pool2d.default: _rule(
        "aten::max_pool2d_with_indices", _max_pool, extra_outputs=(ScalarType.INT64,)
    ),
    aten.view.default: _rule("aten::view_copy", _view, layout=DEFAULT),
    aten.reshape.default: _rule("aten::view_copy", _view, layout=DEFAULT),
    aten.flatten.using_ints: _rule("aten::view_copy", _view, layout=DEFAULT),
    aten.permute.default: _rule("aten::permute_copy", _permute, layout=DEFAULT),
    aten.transpose.int: _rule("aten::permute_copy", _transpose, layout=DEFAULT),
    aten.t.default: _rule("aten::permute_copy", _transpose, layout=DEFAULT),
    aten.squeeze.dim: _rule("aten::squeeze_copy", _squeeze_one, overload="dims_out", layout=DEFAULT),
    aten.squeeze.dims: _rule("aten::squeeze_copy", _squeeze_dims, overload="dims_out", layout=DEFAULT),
    aten.unsqueeze.default: _rule("aten::unsqueeze_copy", _squeeze_dim, layout=DEFAULT),
    aten.cat.default: _rule("aten::cat", _cat, layout=DEFAULT),
    aten.slice.Tensor: _rule("aten::slice_copy", _slice, overload="Tensor_out", layout=DEFAULT),
    aten.batch_norm.default: _BATCH_NORM,
    aten._native_batch_norm_legit_no_training.default: _BATCH_NORM,
    aten.clone.default: _rule("dim_order_ops::_clone_dim_order", _clone),
}


def _matmul_rule(lw: Lowering, node: fx.Node) -> Fp32Rule:
    ranks = [len(lw.val(a).shape) for a in node.args[:2]]
    if ranks == [2, 2]:
        return FP32_RULES[aten.mm.default]
    if ranks == [3, 3]:
        return FP32_RULES[aten.bmm.default]
    raise UnsupportedLayerError(
        f"layer {node.name}: matmul of {ranks[0]}-D by {ranks[1]}-D (mm and bmm only)"
    )


def _emit(lw: Lowering, node: fx.Node, rule: Fp32Rule, args_node: fx.Node | None = None) -> str:
    operands = Operands(lw, node, rule)
    val = lw.val(node)
    sizes = tuple(int(s) for s in (val[0] if isinstance(val, tuple | list) else val).shape)
    if rule.scalar_operands and any(_broadcasts(lw, a, sizes) for a in node.args[:2]):
        # refsim (as ExecuTorch's portable and optimized kernels disagree there) broadcasts
        # only into a contiguous out: such an op runs in the default dim order.
        operands.order = tuple(range(len(sizes)))
    args = rule.args(args_node or node, operands)
    order = (
        operands.order
        if rule.layout == KEEP and operands.order and len(operands.order) == len(sizes)
        else None
    )
    order = order or tuple(range(len(sizes)))
    out = lw.new_tensor(f"{node.name}_f32", ScalarType.FLOAT32, sizes)
    lw.graph.tensors[out].dim_order = order
    extra = []
    for k, dtype in enumerate(rule.extra_outputs):
        name = lw.new_tensor(f"{node.name}_out{k + 1}", dtype, (0,) if rule.empty_extra_outputs else sizes)
        if not rule.empty_extra_outputs:
            lw.graph.tensors[name].dim_order = order
        extra.append(name)
    lw.call(rule.op, args, out, node.name, overload=rule.overload, extra_outs=tuple(extra))
    return out


def _strip(sizes) -> tuple[int, ...]:
    sizes = tuple(int(s) for s in sizes)
    while sizes and sizes[0] == 1:
        sizes = sizes[1:]
    return sizes


def _broadcasts(lw: Lowering, value, sizes: tuple[int, ...]) -> bool:
    """Whether operand ``value`` (a node or a scalar) is broadcast to ``sizes``."""
    if not isinstance(value, fx.Node):
        return _strip(()) != _strip(sizes)
    folded = _constant(lw, value)
    shape = folded.shape if folded is not None else lw.val(value).shape
    return _strip(shape) != _strip(sizes)


def lower_fp32(lw: Lowering, node: fx.Node, why: str) -> None:
    """``node`` on a refsim portable fp32 kernel, between dequantize and quantize."""
    if node.target == aten.silu.default:  # silu(x) = x * sigmoid(x), as its decomposition
        s = _emit(lw, node, FP32_RULES[aten.sigmoid.default])
        operands = Operands(lw, node, FP32_RULES[aten.mul.Tensor])
        x = operands.t(node.args[0])
        out = lw.new_tensor(f"{node.name}_f32", ScalarType.FLOAT32, lw.graph.tensors[s].sizes)
        lw.graph.tensors[out].dim_order = lw.graph.tensors[x.name].dim_order
        lw.call("aten::mul", (x, TensorArg(s)), out, node.name)
        lw.floats[node] = out
        lw.layer(node, "fp32", f"{why}: aten::sigmoid.out, aten::mul.out")
        return
    if node.target is operator.getitem and node.args[0] in lw.floats and node.args[1] == 0:
        lw.floats[node] = lw.floats[node.args[0]]  # the first output of a multi-output op
        return
    rule = _matmul_rule(lw, node) if node.target == aten.matmul.default else FP32_RULES.get(node.target)
    if rule is None:
        raise UnsupportedLayerError(
            f"layer {node.name} ({node.target}): {why}, and refsim has no fp32 kernel for it"
        )
    lw.floats[node] = _emit(lw, node, rule)
    lw.layer(node, "fp32", f"{why}: {rule.op}.{rule.overload}")

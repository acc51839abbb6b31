"""One lowering rule per float op: the cortex_m call ExecuTorch 1.5.1 emits for it (see
``compiler.lower`` for the conventions); the fp32 fallback is ``compiler.portable_float``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import fx

from compiler.errors import UnsupportedLayerError
from compiler.ir import NCHW_AS_NHWC, Call, TensorArg
from kernels_py import conv as kconv
from kernels_py import depthwise as kdw
from kernels_py import pooling as kpool
from kernels_py.activation import clamp_bound
from kernels_py.fixedpoint import elementwise_add_params, quantize_multiplier
from kernels_py.softmax import softmax_params
from kernels_py.types import ConvParams, Dims, DwConvParams, Tile
from refsim.pte.model import ScalarType

if TYPE_CHECKING:
    from compiler.lower import Lowering

aten = torch.ops.aten
INT8_MIN, INT8_MAX = -128, 127
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
__all__ = ["NCHW_AS_NHWC", "RULES", "make_call"]


def make_call(
    op: str,
    args: tuple,
    out: str,
    layer: str,
    scratch: tuple[str, ...] = (),
    overload: str = "out",
    extra_outs: tuple[str, ...] = (),
) -> Call:
    return Call(op, tuple(args), out, layer, tuple(scratch), overload, tuple(extra_outs))


def _pair(value, default) -> tuple[int, int]:
    if value is None or (isinstance(value, list | tuple) and len(value) == 0):
        value = default
    if isinstance(value, int):
        return (value, value)
    if isinstance(value, str):
        raise UnsupportedLayerError(f"padding={value!r}: give explicit integer padding")
    v = tuple(int(x) for x in value)
    return v if len(v) == 2 else (v[0], v[0])


def _arg(node: fx.Node, index: int, default):
    return node.args[index] if len(node.args) > index else default


def activation_range(act: fx.Node | None, scale: float, zp: int) -> tuple[int, int]:
    """The int8 clamp a fused activation leaves: its float bounds quantized with the output's
    parameters (``clamp_bound``, as ExecuTorch's ``quantize_val``), within [-128, 127]."""
    lo, hi = float("-inf"), float("inf")
    if act is not None:
        name = act.target.__name__ if hasattr(act.target, "__name__") else str(act.target)
        if act.target in (aten.relu.default, aten.relu_.default):
            lo = 0.0
        elif act.target == aten.relu6.default:
            lo, hi = 0.0, 6.0
        elif act.target in (aten.hardtanh.default, aten.hardtanh_.default):
            lo, hi = float(_arg(act, 1, -1.0)), float(_arg(act, 2, 1.0))
        elif act.target == aten.clamp.default:
            a, b = _arg(act, 1, act.kwargs.get("min")), _arg(act, 2, act.kwargs.get("max"))
            lo = float("-inf") if a is None else float(a)
            hi = float("inf") if b is None else float(b)
        else:
            raise UnsupportedLayerError(f"{act.name}: activation {name} cannot be fused")
    amin = INT8_MIN if lo == float("-inf") else clamp_bound(lo, scale, zp, INT8_MIN, INT8_MAX)
    amax = INT8_MAX if hi == float("inf") else clamp_bound(hi, scale, zp, INT8_MIN, INT8_MAX)
    return amin, amax


def _weight(lw: Lowering, node: fx.Node) -> tuple[np.ndarray, np.ndarray]:
    """The int8 weights behind a dequantize node and their per-output-channel scales."""
    dq = node
    q = dq.args[0]
    if not (isinstance(q, fx.Node) and q.op == "get_attr"):
        raise UnsupportedLayerError(f"{node.name}: weights are not a constant")
    w = lw.attr(q)
    if w.dtype != torch.int8:
        raise UnsupportedLayerError(f"{node.name}: weights are {w.dtype}, expected int8")
    if dq.target == torch.ops.quantized_decomposed.dequantize_per_channel.default:
        scales = lw.attr(dq.args[1]).double().numpy()
        zps = lw.attr(dq.args[2]).numpy()
        if int(dq.args[3]) != 0:
            raise UnsupportedLayerError(
                f"{node.name}: per-channel weights along axis {dq.args[3]}, expected 0"
            )
    else:
        scales = np.full(w.shape[0], float(dq.args[1]))
        zps = np.full(w.shape[0], int(dq.args[2]))
    if np.any(zps != 0):
        raise UnsupportedLayerError(f"{node.name}: weight zero points must be 0 (symmetric)")
    return w.numpy(), scales


def _bias(lw: Lowering, node, in_scale: float, w_scales: np.ndarray) -> np.ndarray | None:
    """int32 bias at ``in_scale * w_scale[c]``, computed as PT2E's int32 bias quantization does
    (ExecuTorch's derived bias spec through ``quantize_per_channel``), in float32:
    ``round_half_even(b * (1 / (s_in * s_w[c])))`` clamped to [-2^31, 2^31 - 2], so our
    programs and ExecuTorch's carry the same biases."""
    if node is None:
        return None
    if not (isinstance(node, fx.Node) and node.op == "get_attr"):
        raise UnsupportedLayerError(f"{node}: bias is not a constant")
    b = lw.attr(node).float().numpy()
    scale = np.float32(in_scale) * w_scales.astype(np.float32)
    q = np.rint(b * (np.float32(1.0) / scale)).astype(np.float64)
    return np.clip(q, INT32_MIN, INT32_MAX - 1).astype(np.int32)


def _multipliers(in_scale: float, w_scales: np.ndarray, out_scale: float) -> tuple[np.ndarray, np.ndarray]:
    pairs = [quantize_multiplier(in_scale * float(s) / out_scale) for s in w_scales]
    return np.array([m for m, _ in pairs], np.int32), np.array([s for _, s in pairs], np.int32)


# --- conv -------------------------------------------------------------------------------------------


def lower_conv(lw: Lowering, node: fx.Node) -> None:
    x, in_scale, in_zp = lw.int8_input(node.args[0])
    w, w_scales = _weight(lw, node.args[1])
    stride = _pair(_arg(node, 3, 1), 1)
    padding = _pair(_arg(node, 4, 0), 0)
    dilation = _pair(_arg(node, 5, 1), 1)
    groups = int(_arg(node, 6, 1))
    q, act = lw.output_quantize(node)
    out, out_scale, out_zp = lw.define_output(node, q)
    amin, amax = activation_range(act, out_scale, out_zp)
    in_info, out_info = lw.graph.tensors[x], lw.graph.tensors[out]
    if len(in_info.sizes) != 4:
        raise UnsupportedLayerError(f"{node.name}: conv2d on a {len(in_info.sizes)}-D input")
    n, c_in, h, wd = in_info.sizes
    _, c_out, oh, ow = out_info.sizes
    bias = _bias(lw, _arg(node, 2, None), in_scale, w_scales)
    mults, shifts = _multipliers(in_scale, w_scales, out_scale)
    depthwise = groups == c_in and c_out % c_in == 0 and n == 1
    if bias is None and groups > 1:
        bias = np.zeros(c_out, np.int32)
    kh, kw = w.shape[2], w.shape[3]
    common = dict(stride=Tile(w=stride[1], h=stride[0]), padding=Tile(w=padding[1], h=padding[0]))
    common["dilation"] = Tile(w=dilation[1], h=dilation[0])
    input_dims, output_dims = Dims(n, h, wd, c_in), Dims(n, oh, ow, c_out)
    if depthwise:
        weight = np.ascontiguousarray(w.transpose(1, 2, 3, 0))  # [1, KH, KW, C_OUT]
        params = DwConvParams(ch_mult=c_out // c_in, **common)
        filter_dims = Dims(1, kh, kw, c_out)
        need = kdw.depthwise_conv_wrapper_s8_get_buffer_size(
            params, input_dims, filter_dims, output_dims, lw.target.isa
        )
    else:
        weight = np.ascontiguousarray(w.transpose(0, 2, 3, 1))  # OHWI
        params = ConvParams(**common)
        filter_dims = Dims(c_out, kh, kw, w.shape[1])
        need = kconv.convolve_wrapper_s8_get_buffer_size(
            params, input_dims, filter_dims, output_dims, lw.target.isa
        )
    scratch = lw.scratch(f"{node.name}_scratch", need)
    head = (
        TensorArg(x),
        TensorArg(lw.constant(f"{node.name}_weight", weight)),
        None if bias is None else TensorArg(lw.constant(f"{node.name}_bias", bias)),
        stride,
        padding,
        dilation,
    )
    tail = (
        -in_zp,
        out_zp,
        TensorArg(lw.constant(f"{node.name}_multipliers", mults)),
        TensorArg(lw.constant(f"{node.name}_shifts", shifts)),
        amin,
        amax,
        TensorArg(scratch),
    )
    if depthwise:
        lw.call(
            "cortex_m::quantized_depthwise_conv2d", (*head, c_out // c_in, *tail), out, node.name, (scratch,)
        )
    else:
        lw.call("cortex_m::quantized_conv2d", (*head, *tail), out, node.name, (scratch,))
    kind = f"depthwise ×{c_out // c_in}" if depthwise else "conv"
    lw.layer(node, "int8", f"{kind} {kh}x{kw}" + (f" + {act.name}" if act is not None else ""))
    if act is not None:
        lw.layer(act, "fused", f"into {node.name} [{amin}, {amax}]")


def lower_linear(lw: Lowering, node: fx.Node) -> None:
    x, in_scale, in_zp = lw.int8_input(node.args[0])
    w, w_scales = _weight(lw, node.args[1])
    if len(set(w_scales.tolist())) != 1:
        raise UnsupportedLayerError(f"{node.name}: cortex_m::quantized_linear takes per-tensor weights only")
    q, act = lw.output_quantize(node)
    out, out_scale, out_zp = lw.define_output(node, q)
    amin, amax = activation_range(act, out_scale, out_zp)
    bias = _bias(lw, _arg(node, 2, None), in_scale, w_scales)
    mult, shift = quantize_multiplier(in_scale * float(w_scales[0]) / out_scale)
    weights = TensorArg(lw.constant(f"{node.name}_weight", np.ascontiguousarray(w)))
    if lw.target.isa == "mve":
        # CMSIS-NN's MVE arm_fully_connected_s8 reads kernel_sum = -zp_in·Σw + bias from ctx.buf.
        ksum = -in_zp * w.astype(np.int64).sum(axis=1) + (0 if bias is None else bias.astype(np.int64))
        ksum = np.clip(ksum, INT32_MIN, INT32_MAX).astype(np.int32).reshape(1, -1)
        bias_arg, ksum_arg = None, TensorArg(lw.constant(f"{node.name}_kernel_sum", ksum))
    else:
        bias_arg = None if bias is None else TensorArg(lw.constant(f"{node.name}_bias", bias))
        ksum_arg = None
    args = (TensorArg(x), weights, bias_arg, ksum_arg, -in_zp, 0, out_zp, (mult,), (shift,), amax, amin)
    lw.call("cortex_m::quantized_linear", args, out, node.name)
    lw.layer(
        node, "int8", f"linear {w.shape[1]}→{w.shape[0]}" + (f" + {act.name}" if act is not None else "")
    )
    if act is not None:
        lw.layer(act, "fused", f"into {node.name} [{amin}, {amax}]")


# --- elementwise ------------------------------------------------------------------------------------


def lower_add(lw: Lowering, node: fx.Node) -> None:
    a, sa, za = lw.int8_input(node.args[0])
    b, sb, zb = lw.int8_input(node.args[1])
    if lw.graph.tensors[a].sizes != lw.graph.tensors[b].sizes:
        raise UnsupportedLayerError(f"{node.name}: broadcasting add is not lowered")
    q, act = lw.output_quantize(node)
    out, so, zo = lw.define_output(node, q)
    amin, amax = activation_range(act, so, zo)
    p = elementwise_add_params(sa, sb, so)
    args = (
        TensorArg(a), za, p["input_1_mult"], p["input_1_shift"],
        TensorArg(b), zb, p["input_2_mult"], p["input_2_shift"],
        zo, p["out_mult"], p["out_shift"], amin, amax,
    )  # fmt: skip
    lw.call("cortex_m::quantized_add", args, out, node.name)
    lw.layer(node, "int8", "add" + (f" + {act.name}" if act is not None else ""))
    if act is not None:
        lw.layer(act, "fused", f"into {node.name} [{amin}, {amax}]")


# --- pooling, pad, softmax, views ----------------------------------------------------------------


def _shared_output(lw: Lowering, node: fx.Node, scale: float, zp: int) -> str:
    q, act = lw.output_quantize(node)
    if act is not None:
        raise UnsupportedLayerError(f"{node.name}: an activation after {node.target} is not fused")
    out, so, zo = lw.define_output(node, q)
    if (so, zo) != (scale, zp):
        raise UnsupportedLayerError(f"{node.name}: output quantization differs from its input's")
    return out


def _pad_call(
    lw: Lowering, node_name: str, x: str, pre: list[int], post: list[int], value: int, sizes
) -> str:
    """``cortex_m::pad`` with logical [N, C, H, W] pads given, emitted in physical order."""
    info = lw.graph.tensors[x]
    order = info.dim_order
    out = lw.new_tensor(f"{node_name}", ScalarType.INT8, sizes, scale=info.scale, zero_point=info.zero_point)
    physical_pre = tuple(pre[d] for d in order)
    physical_post = tuple(post[d] for d in order)
    lw.call("cortex_m::pad", (TensorArg(x), physical_pre, physical_post, value), out, node_name)
    return out


def lower_pad(lw: Lowering, node: fx.Node) -> None:
    x, scale, zp = lw.int8_input(node.args[0])
    pads = [int(p) for p in node.args[1]]
    mode = (
        _arg(node, 2, node.kwargs.get("mode", "constant")) if node.target == aten.pad.default else "constant"
    )
    value = _arg(node, 3 if node.target == aten.pad.default else 2, node.kwargs.get("value", 0.0)) or 0.0
    if mode != "constant" or any(p < 0 for p in pads):
        raise UnsupportedLayerError(f"{node.name}: only non-negative constant padding is lowered")
    rank = len(lw.graph.tensors[x].sizes)
    if rank != 4 or len(pads) > 8:
        raise UnsupportedLayerError(f"{node.name}: pad on a {rank}-D tensor")
    pre, post = [0] * 4, [0] * 4
    for i in range(len(pads) // 2):
        pre[3 - i], post[3 - i] = pads[2 * i], pads[2 * i + 1]
    qvalue = clamp_bound(float(value), scale, zp, INT8_MIN, INT8_MAX)
    q, act = lw.output_quantize(node)
    if act is not None:
        raise UnsupportedLayerError(f"{node.name}: an activation after a pad is not fused")
    out = _pad_call(lw, node.name, x, pre, post, qvalue, lw.val(q).shape)
    lw.quantized[q] = out
    lw.done.add(q)
    lw.layer(node, "int8", f"pad {pads}")


def _pool_geometry(node: fx.Node):
    kernel = _pair(node.args[1], None)
    stride = _pair(_arg(node, 2, None), kernel)
    padding = _pair(_arg(node, 3, 0), 0)
    return kernel, stride, padding


def lower_avg_pool(lw: Lowering, node: fx.Node) -> None:
    x, scale, zp = lw.int8_input(node.args[0])
    if node.target == aten.adaptive_avg_pool2d.default:
        _, _, h, w = lw.graph.tensors[x].sizes
        if tuple(_pair(node.args[1], None)) != (1, 1):
            raise UnsupportedLayerError(f"{node.name}: adaptive average pool to other than 1x1")
        kernel, stride, padding, ceil_mode, include_pad = (h, w), (h, w), (0, 0), False, True
    else:
        kernel, stride, padding = _pool_geometry(node)
        ceil_mode = bool(_arg(node, 4, False))
        include_pad = bool(_arg(node, 5, True))
        if _arg(node, 6, None) is not None:
            raise UnsupportedLayerError(f"{node.name}: avg_pool2d with divisor_override")
    out = _shared_output(lw, node, scale, zp)
    if include_pad and padding != (0, 0):
        n, c, h, w = lw.graph.tensors[x].sizes
        sizes = (n, c, h + 2 * padding[0], w + 2 * padding[1])
        pre = [0, 0, padding[0], padding[1]]
        x = _pad_call(lw, f"{node.name}_pad", x, pre, pre, zp, sizes)
        padding = (0, 0)
    mult, shift = quantize_multiplier(scale)
    out_w, channels = lw.graph.tensors[out].sizes[3], lw.graph.tensors[x].sizes[1]
    scratch = lw.scratch(
        f"{node.name}_scratch", kpool.avgpool_s8_get_buffer_size(out_w, channels, lw.target.isa)
    )
    args = (TensorArg(x), kernel, stride, padding, ceil_mode, zp, mult, shift, TensorArg(scratch))
    lw.call("cortex_m::quantized_avg_pool2d", args, out, node.name, (scratch,))
    lw.layer(node, "int8", f"avg pool {kernel[0]}x{kernel[1]}")


def lower_max_pool(lw: Lowering, node: fx.Node) -> None:
    x, scale, zp = lw.int8_input(node.args[0])
    kernel, stride, padding = _pool_geometry(node)
    dilation = _pair(_arg(node, 4, 1), 1)
    if dilation != (1, 1) or bool(_arg(node, 5, False)):
        raise UnsupportedLayerError(f"{node.name}: max pool with dilation or ceil_mode")
    out = _shared_output(lw, node, scale, zp)
    args = (TensorArg(x), kernel, stride, padding, dilation, False, zp, zp, INT8_MIN, INT8_MAX)
    lw.call("cortex_m::quantized_max_pool2d", args, out, node.name)
    lw.layer(node, "int8", f"max pool {kernel[0]}x{kernel[1]}")


def lower_softmax(lw: Lowering, node: fx.Node) -> None:
    x, scale, zp = lw.int8_input(node.args[0])
    rank = len(lw.graph.tensors[x].sizes)
    dim = int(node.args[1])
    if dim % rank != rank - 1 or (rank == 4 and lw.graph.tensors[x].sizes[2:] != (1, 1)):
        raise UnsupportedLayerError(f"{node.name}: softmax over dim {dim} (the last dim only)")
    q, _ = lw.output_quantize(node)
    out, so, zo = lw.define_output(node, q)
    if (so, zo) != (1 / 256, -128):
        raise UnsupportedLayerError(
            f"{node.name}: softmax output quantized at ({so}, {zo}), CMSIS-NN needs (1/256, -128)"
        )
    mult, shift, diff_min = softmax_params(1.0, scale)
    lw.call("cortex_m::softmax", (TensorArg(x), dim, zp, zo, mult, shift, diff_min), out, node.name)
    lw.layer(node, "int8", "softmax (CMSIS-NN s8)")


def _in_byte_order(order, sizes) -> bool:
    """Whether bytes in dim order ``order`` hold the elements in row-major logical order."""
    nontrivial = [d for d in order if sizes[d] != 1]
    return nontrivial == sorted(nontrivial)


def lower_view(lw: Lowering, node: fx.Node) -> None:
    """A view of the int8 bytes, with int8 ``_to_dim_order_copy``s where the channels-last
    bytes are not in the logical element order: before (input) and after (a 4-D result)."""
    x, scale, zp = lw.int8_input(node.args[0])
    info = lw.graph.tensors[x]
    q, _ = lw.output_quantize(node)
    sizes = tuple(int(s) for s in lw.val(q).shape)
    how = []
    if not _in_byte_order(info.dim_order, info.sizes):
        x = lw.in_dim_order(x, tuple(range(len(info.sizes))))
        how.append("a dim-order copy to contiguous")
    out = lw.new_tensor(node.name, ScalarType.INT8, sizes, scale=scale, zero_point=zp)
    lw.graph.tensors[out].alias_of = x
    lw.graph.tensors[out].dim_order = tuple(range(len(sizes)))
    how.append("a view")
    if len(sizes) == 4:  # the int8 kernels read channels-last
        if _in_byte_order(NCHW_AS_NHWC, sizes):
            lw.graph.tensors[out].dim_order = NCHW_AS_NHWC  # the same bytes
        else:
            out = lw.in_dim_order(out, NCHW_AS_NHWC)
            how.append("a dim-order copy to channels-last")
    lw.quantized[q] = out
    lw.done.add(q)
    detail = "no copy" if how == ["a view"] else ", then ".join(how)
    lw.layer(node, "view", f"{list(info.sizes)} → {list(sizes)} ({detail})")


RULES = {
    aten.conv2d.default: lower_conv,
    aten.linear.default: lower_linear,
    aten.add.Tensor: lower_add,
    aten.pad.default: lower_pad,
    aten.constant_pad_nd.default: lower_pad,
    aten.avg_pool2d.default: lower_avg_pool,
    aten.adaptive_avg_pool2d.default: lower_avg_pool,
    aten.max_pool2d.default: lower_max_pool,
    aten.softmax.int: lower_softmax,
    aten._softmax.default: lower_softmax,
    aten.flatten.using_ints: lower_view,
    aten.view.default: lower_view,
    aten.reshape.default: lower_view,
}

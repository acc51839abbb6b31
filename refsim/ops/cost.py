"""Cost hooks of the op registry: every op says what work it does (isa_models.cortex_m.program ``Work``).

``OpDef.cost(args, tier)`` returns the op's work items: the CMSIS-NN call(s) it makes (function
and its parameters under CMSIS-NN's names, shared VECTORS.md), the bytes a portable layout op
moves, the fp32 operations of a portable float op, or an explicit :class:`NoEstimate`. Prices
come from isa_models (calibrated formulas per core); nothing here knows a cycle count.

The geometry comes from the same call readers the ops use to run (``_conv_call``,
``_linear_call`` ...), so the cost model sees exactly the CMSIS-NN call the kernel makes. A
program the chosen tier cannot run as exported (an MVE linear carrying ``kernel_sum`` on a
scalar/DSP core) is an :class:`OpError` naming the op.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

from isa_models.cortex_m.program import CopyWork, FloatWork, KernelWork, NoEstimate, Work
from refsim.ops import cortex_m_conv as conv_ops
from refsim.ops import cortex_m_fully_connected as fc_ops
from refsim.ops import cortex_m_misc as misc_ops
from refsim.ops.registry import Args, OpDef, OpError, load_all
from refsim.ops.work_params import dims as _dims
from refsim.ops.work_params import tiles as _tiles
from refsim.ops.work_params import weight_bytes as _weights

CostHook = Callable[[Args, str], list[Work]]

#: False (the default) makes an op exported for another tier an error; True costs it as the same
#: CMSIS-NN call on the chosen tier (benchmarks comparing a core with no export of its own).
FOREIGN_EXPORTS: ContextVar[bool] = ContextVar("refsim_cost_foreign_exports", default=False)


def _numel(t) -> int:
    return int(t.meta.numel)


def _conv(kind: str, function: str) -> CostHook:
    def cost(a: Args, tier: str) -> list[Work]:
        c = conv_ops._conv_call(a, kind)
        params = {**_dims("input_dims", c.input_dims), **_dims("filter_dims", c.filter_dims)}
        params.update(_dims("output_dims", c.output_dims))
        params.update(_tiles(c.params))
        if kind == "depthwise":
            params["ch_mult"] = c.params.ch_mult
        if kind == "transpose":
            params.update(
                {
                    "padding_offsets.h": c.params.padding_offsets.h,
                    "padding_offsets.w": c.params.padding_offsets.w,
                }
            )
        return [KernelWork(function, params, weights_bytes=_weights(a, "weight", "bias"))]

    return cost


def _linear(a: Args, tier: str) -> list[Work]:
    if tier != "mve" and a.kernel_sum is not None and not FOREIGN_EXPORTS.get():
        raise OpError(
            f"{a.op} (instruction {a.instruction}): exported for MVE (it carries kernel_sum, the MVE "
            f"form of arm_fully_connected_s8); a {tier} core cannot run it as exported — export for this "
            "core (e.g. CortexMTargetConfig(cpu=CortexM.M4)) or pick an MVE core"
        )
    c = fc_ops._linear_call(a)
    p = {"input_dims.n": c.rows, "input_dims.h": 1, "input_dims.w": 1, "input_dims.c": c.depth}
    p.update({"filter_dims.n": c.depth, "filter_dims.h": 1, "filter_dims.w": 1, "filter_dims.c": c.channels})
    p.update({"output_dims.n": c.rows, "output_dims.h": 1, "output_dims.w": 1, "output_dims.c": c.channels})
    return [
        KernelWork("arm_fully_connected_s8", p, weights_bytes=_weights(a, "weights", "bias", "kernel_sum"))
    ]


def _bmm(a: Args, tier: str) -> list[Work]:
    (batch, rows, cols, depth), _, _ = fc_ops._bmm_call(a)
    p: dict[str, int] = {}
    for name, d in (("input_lhs_dims", (1, batch, rows, depth)), ("input_rhs_dims", (1, batch, cols, depth)),
                    ("output_dims", (1, batch, rows, cols))):  # fmt: skip
        p.update({f"{name}.{k}": v for k, v in zip("nhwc", d, strict=True)})
    return [KernelWork("arm_batch_matmul_s8", p)]


def _block(function: str) -> CostHook:
    def cost(a: Args, tier: str) -> list[Work]:
        return [KernelWork(function, {"block_size": _numel(a.out)})]

    return cost


def _four(sizes) -> tuple[int, int, int, int]:
    s = (1,) * (4 - len(sizes)) + tuple(int(v) for v in sizes[-4:])
    return s[0], s[1], s[2], s[3]


def _minmax(function: str) -> CostHook:
    def cost(a: Args, tier: str) -> list[Work]:
        p: dict[str, int] = {}
        for name, t in (("input_1_dims", a.self), ("input_2_dims", a.other), ("output_dims", a.out)):
            p.update({f"{name}.{k}": v for k, v in zip("nhwc", _four(t.sizes), strict=True)})
        return [KernelWork(function, p)]

    return cost


def _lut(a: Args, tier: str) -> list[Work]:
    return [KernelWork("refsim_lut_s8", {"size": _numel(a.out)})]


def _pool(function: str) -> CostHook:
    def cost(a: Args, tier: str) -> list[Work]:
        n, h, w, c = misc_ops._nhwc_sizes(a, a.input)
        _, oh, ow, _ = misc_ops._nhwc_sizes(a, a.out)
        (kh, kw), (sh, sw), (ph, pw) = a.kernel_size, a.stride, a.padding
        p = {
            "filter_dims.h": kh,
            "filter_dims.w": kw,
            "stride.h": sh,
            "stride.w": sw,
            "padding.h": ph,
            "padding.w": pw,
        }
        p.update({"input_dims.n": 1, "input_dims.h": h, "input_dims.w": w, "input_dims.c": c})
        p.update({"output_dims.n": 1, "output_dims.h": oh, "output_dims.w": ow, "output_dims.c": c})
        return [KernelWork(function, p, repeat=n)]  # the ExecuTorch op calls it once per image

    return cost


def _softmax(a: Args, tier: str) -> list[Work]:
    size = int(a.input.sizes[a.dim])
    return [
        KernelWork(
            "arm_softmax_s8",
            {"num_rows": _numel(a.input) // size, "row_size": size, "diff_min": int(a.diff_min)},
        )
    ]


def _pad(a: Args, tier: str) -> list[Work]:
    from isa_models.cortex_m import layout as layout_formulas

    shape = _four([a.input.sizes[d] for d in misc_ops._pad_order(a.input)])  # physical order, as the op
    return [KernelWork("arm_pad_s8", layout_formulas.pad_params(shape, tuple(a.pre_pad), tuple(a.post_pad)))]


def _transpose(a: Args, tier: str) -> list[Work]:
    from isa_models.cortex_m import layout as layout_formulas

    return [
        KernelWork("arm_transpose_s8", layout_formulas.transpose_params(tuple(a.input.sizes), tuple(a.perm)))
    ]


def _copy(a: Args, tier: str) -> list[Work]:
    out = a.out
    if isinstance(out, tuple | list):
        return [CopyWork(int(t.meta.nbytes)) for t in out]
    return [CopyWork(int(out.meta.nbytes))]


def _permute(a: Args, tier: str) -> list[Work]:
    if a.out.dtype.itemsize == 1:  # an int8 permute: the same element gather as arm_transpose_s8
        from isa_models.cortex_m import layout as layout_formulas

        return [
            KernelWork(
                "arm_transpose_s8", layout_formulas.transpose_params(tuple(a.self.sizes), tuple(a.dims))
            )
        ]
    return [FloatWork(elements=_numel(a.out))]


def _quantize(a: Args, tier: str) -> list[Work]:
    n = _numel(a.out)  # per element: scale (mul), add zero point, round, clamp
    return [FloatWork(muls=n, adds=2 * n, elements=n)]


def _float_elementwise(
    adds: int = 0, muls: int = 0, divs: int = 0, trans: int = 0, kernel: str = ""
) -> CostHook:
    """Per output element ``adds``/``muls``/``divs``/``trans`` fp32 operations; ``kernel``: the
    portable kernel measured whole (isa_models/cortex_m/float_ops.json), which prices it where measured."""

    def cost(a: Args, tier: str) -> list[Work]:
        n = _numel(a.out if not isinstance(a.out, tuple | list) else a.out[0])
        return [
            FloatWork(
                adds=adds * n,
                muls=muls * n,
                divs=divs * n,
                transcendentals=trans * n,
                elements=n,
                kernel=kernel,
            )
        ]

    return cost


def _float_macs(op: OpDef) -> CostHook:
    def cost(a: Args, tier: str) -> list[Work]:
        macs = int(op.macs(a)) if op.macs else 0
        out = a.out if not isinstance(a.out, tuple | list) else a.out[0]
        return [FloatWork(adds=macs, muls=macs, elements=_numel(out), macs=macs)]

    return cost


def _no_estimate(reason: str) -> CostHook:
    def cost(a: Args, tier: str) -> list[Work]:
        return [NoEstimate(reason)]

    return cost


_CORTEX_M: dict[str, CostHook] = {
    "cortex_m::quantized_conv2d.out": _conv("conv", "arm_convolve_wrapper_s8"),
    "cortex_m::quantized_conv2d_nhwc.out": _conv("conv", "arm_convolve_wrapper_s8"),
    "cortex_m::quantized_depthwise_conv2d.out": _conv("depthwise", "arm_depthwise_conv_wrapper_s8"),
    "cortex_m::quantized_depthwise_conv2d_nhwc.out": _conv("depthwise", "arm_depthwise_conv_wrapper_s8"),
    "cortex_m::quantized_transpose_conv2d.out": _conv("transpose", "arm_transpose_conv_wrapper_s8"),
    "cortex_m::quantized_transpose_conv2d_nhwc.out": _conv("transpose", "arm_transpose_conv_wrapper_s8"),
    "cortex_m::quantized_linear.out": _linear,
    "cortex_m::quantized_batch_matmul.out": _bmm,
    "cortex_m::quantized_add.out": _block("arm_elementwise_add_s8"),
    "cortex_m::quantized_mul.out": _block("arm_elementwise_mul_s8"),
    "cortex_m::maximum.out": _minmax("arm_maximum_s8"),
    "cortex_m::minimum.out": _minmax("arm_minimum_s8"),
    "cortex_m::quantized_activation.out": _lut,
    "cortex_m::quantized_avg_pool2d.out": _pool("arm_avgpool_s8"),
    "cortex_m::quantized_avg_pool2d_nhwc.out": _pool("arm_avgpool_s8"),
    "cortex_m::quantized_max_pool2d.out": _pool("arm_max_pool_s8"),
    "cortex_m::quantized_max_pool2d_nhwc.out": _pool("arm_max_pool_s8"),
    "cortex_m::softmax.out": _softmax,
    "cortex_m::pad.out": _pad,
    "cortex_m::transpose.out": _transpose,
    "cortex_m::quantize_per_tensor.out": _quantize,
    "cortex_m::dequantize_per_tensor.out": _quantize,
    # ExecuTorch's own float loop per element: two subtractions, a float division, scale, round.
    "cortex_m::quantized_div.out": _float_elementwise(adds=3, muls=1, divs=1),
}

_LAYOUT = (
    "aten::view_copy.out", "aten::clone.out", "aten::cat.out", "aten::slice_copy.Tensor_out",
    "aten::squeeze_copy.dim_out", "aten::squeeze_copy.dims_out", "aten::unsqueeze_copy.out",
    "dim_order_ops::_clone_dim_order.out", "dim_order_ops::_to_dim_order_copy.out",
)  # fmt: skip

_FLOAT: dict[str, CostHook] = {
    "aten::add.out": _float_elementwise(adds=1, muls=1, kernel="add"),  # a + alpha * b
    "aten::sub.out": _float_elementwise(adds=1, muls=1, kernel="sub"),
    "aten::mul.out": _float_elementwise(muls=1, kernel="mul"),
    "aten::div.out": _float_elementwise(divs=1, kernel="div"),
    "aten::neg.out": _float_elementwise(kernel="neg"),  # a sign flip: the element move only
    "aten::relu.out": _float_elementwise(adds=1),
    "aten::clamp.out": _float_elementwise(adds=2),
    "aten::hardtanh.out": _float_elementwise(adds=2),
    "aten::hardsigmoid.out": _float_elementwise(adds=3, muls=1),
    "aten::hardswish.out": _float_elementwise(adds=3, muls=2),
    "aten::exp.out": _float_elementwise(trans=1, kernel="exp"),
    "aten::sigmoid.out": _float_elementwise(adds=1, divs=1, trans=1, kernel="sigmoid"),
    "aten::tanh.out": _float_elementwise(trans=1, kernel="tanh"),
    "aten::gelu.out": _float_elementwise(adds=2, muls=3, trans=1),
    "aten::sqrt.out": _float_elementwise(divs=1, kernel="sqrt"),
    "aten::rsqrt.out": _float_elementwise(divs=2),
    "aten::_softmax.out": _float_elementwise(adds=2, divs=1, trans=1),
    "aten::_native_batch_norm_legit_no_training.out": _float_elementwise(adds=1, muls=1),
    "aten::mean.out": _float_elementwise(adds=1),
    "aten::sum.IntList_out": _float_elementwise(adds=1),
    "quantized_decomposed::quantize_per_tensor.out": _quantize,
    "quantized_decomposed::dequantize_per_tensor.out": _quantize,
    "quantized_decomposed::quantize_per_channel.out": _quantize,
    "quantized_decomposed::dequantize_per_channel.out": _quantize,
}

_FLOAT_MACS = (
    "aten::convolution.out", "aten::addmm.out", "aten::mm.out", "aten::bmm.out", "aten::linear.out",
    "aten::avg_pool2d.out", "aten::max_pool2d_with_indices.out",
)  # fmt: skip


def attach() -> None:
    """Give every registered op its cost hook (idempotent)."""
    ops = load_all()
    for name, op in ops.items():
        if op.cost is not None:
            continue
        if name in _CORTEX_M:
            op.cost = _CORTEX_M[name]
        elif name in _LAYOUT:
            op.cost = _copy
        elif name == "aten::permute_copy.out":
            op.cost = _permute
        elif name in _FLOAT:
            op.cost = _FLOAT[name]
        elif name in _FLOAT_MACS and op.macs is not None:
            op.cost = _float_macs(op)
        elif name in _FLOAT_MACS:
            op.cost = _no_estimate("no MAC count for this fp32 op")


def cost_hook(op: OpDef) -> CostHook:
    """The op's cost hook; an op registered without one costs "no estimate" (never 0)."""
    attach()
    return op.cost or _no_estimate(f"{op.name} has no cost function")


__all__ = ["attach", "cost_hook"]

"""Which CMSIS-NN calls the Ethos-U takes: Vela's supported-operator rules, restated.

Each rule is a function of one call (:class:`Call`: the CMSIS-NN function and its VECTORS.md
parameters, as refsim's cost hooks describe the op) returning ``None`` when the rule holds or
the detail of the violation. Its docstring is the user-facing message — the same wording as
Vela 5.1.0's ``tflite_supported_operators.py`` constraint it restates (named in brackets), so
``refsim run --estimate-cycles --cpu ethos-u55-128`` says why an op stays on the host core:

    op 7 on CPU: Stride values for both width and height must be between 1 and 3 (stride 4x4)

:func:`npu_rejections` returns the violated messages; an op with none runs on the NPU.
Functions with no Ethos-U mapping at all (fp32 work, a call refsim has no NPU lowering for)
are rejected by :func:`unsupported_function`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Call:
    """One call as the rules see it: function, parameters, the accelerator family, weights."""

    function: str
    params: Mapping[str, int]
    family: str  # "u55", "u65", "u85"
    weights: np.ndarray | None = None  # int8 weights, output channel first, when known
    runtime: str = "executorch"  # whose program: "executorch" (a .pte) or "tflm" (a .tflite)

    def p(self, key: str, default: int = 0) -> int:
        return int(self.params.get(key, default))


Rule = Callable[[Call], str | None]

CONV = ("arm_convolve_wrapper_s8", "arm_depthwise_conv_wrapper_s8", "arm_transpose_conv_wrapper_s8")
POOL = ("arm_avgpool_s8", "arm_max_pool_s8")
NPU_FUNCTIONS = (
    *CONV, *POOL, "arm_fully_connected_s8", "arm_batch_matmul_s8", "arm_elementwise_add_s8",
    "arm_elementwise_mul_s8", "arm_maximum_s8", "arm_minimum_s8", "refsim_lut_s8", "arm_softmax_s8",
    "arm_pad_s8", "arm_transpose_s8",
)  # fmt: skip

TENS_DIM_RANGE = (1, 65535)
STRIDE_RANGE = (1, 3)
DILATED_HEIGHT_RANGE = (1, 64)
DILATED_PRODUCT_RANGE = (1, 64 * 64)
WEIGHTS_LIMIT = 127 * 65536
FILTER_RANGE = (1, 8)
FILTER_HEIGHT_RANGE = (1, 256)
FILTER_PRODUCT_RANGE = (1, 256 * 256)


def _fmt(template: str, *values) -> str:
    return template.format(*values)


def constraint_tens_dimension(c: Call) -> str | None:
    """Tensor dimensions must be in the range [1, 65535] [constraint_tens_dimension]"""
    bad = [f"{k}={v}" for k, v in c.params.items() if k.split(".")[-1] in "nhwc" and "dims" in k
           and not TENS_DIM_RANGE[0] <= int(v) <= TENS_DIM_RANGE[1]]  # fmt: skip
    return ", ".join(bad) or None


def constraint_batch_size(c: Call) -> str | None:
    """IFM Tensor batch size must be 1 [constraint_batch_size; fully connected is exempt]"""
    if c.function in ("arm_fully_connected_s8", "arm_softmax_s8", "arm_pad_s8", "arm_transpose_s8"):
        return None
    n = c.p("input_dims.n", 1) if "input_dims.n" in c.params else c.p("input_1_dims.n", 1)
    return f"batch size {n}" if n != 1 else None


def constraint_stride_range(c: Call) -> str | None:
    """Stride values for both width and height must be between 1 and 3
    [constraint_depthwise_conv_stride, constraint_stride_range; for convolution a wider stride
    width is only taken when the OFM is one wide, constraint_stride_width_no_upper_limit]"""
    if c.function not in (*CONV, "arm_max_pool_s8"):
        return None
    sw, sh = c.p("stride.w", 1), c.p("stride.h", 1)
    ok_h = STRIDE_RANGE[0] <= sh <= STRIDE_RANGE[1] or c.p("output_dims.h", 2) == 1
    ok_w = STRIDE_RANGE[0] <= sw <= STRIDE_RANGE[1] or c.p("output_dims.w", 2) == 1
    return None if ok_h and ok_w else f"stride {sw}x{sh}"


def constraint_dilated_height_range(c: Call) -> str | None:
    """Dilated kernel height must be in the range [1, 64] [constraint_dilated_height_range]"""
    if c.function not in CONV:
        return None
    h = (c.p("filter_dims.h", 1) - 1) * c.p("dilation.h", 1) + 1
    return None if DILATED_HEIGHT_RANGE[0] <= h <= DILATED_HEIGHT_RANGE[1] else f"dilated kernel height {h}"


def constraint_dilated_product_range(c: Call) -> str | None:
    """Product of dilated kernel width and height must be in the range [1, 4096]
    [constraint_dilated_product_range]"""
    if c.function not in CONV:
        return None
    h = (c.p("filter_dims.h", 1) - 1) * c.p("dilation.h", 1) + 1
    w = (c.p("filter_dims.w", 1) - 1) * c.p("dilation.w", 1) + 1
    return None if w * h <= DILATED_PRODUCT_RANGE[1] else f"dilated kernel {w}x{h}"


def constraint_depth_multiplier(c: Call) -> str | None:
    """For depth multipliers > 1, IFM channels must be 1 and OFM channels must be equal to the
    depth multiplier [constraint_depth_multiplier]"""
    if c.function != "arm_depthwise_conv_wrapper_s8" or c.p("ch_mult", 1) <= 1:
        return None
    if c.p("input_dims.c") == 1 and c.p("output_dims.c") == c.p("ch_mult"):
        return None
    return f"IFM channels {c.p('input_dims.c')}, OFM channels {c.p('output_dims.c')}, multiplier {c.p('ch_mult')}"


def constraint_weights_limit(c: Call) -> str | None:
    """The sum of the weights cannot exceed 8323072 [constraint_weights_limit; per output
    channel, of |weight - zero point|]"""
    if c.weights is None or c.function not in (*CONV, "arm_fully_connected_s8"):
        return None
    w = c.weights.astype(np.int64).reshape(c.weights.shape[0], -1)
    if c.function == "arm_depthwise_conv_wrapper_s8":  # [1, H, W, C_out]: channels last
        w = c.weights.astype(np.int64).reshape(-1, c.weights.shape[-1]).T
    limit = int(np.abs(w).sum(axis=1).max(initial=0))
    return None if limit <= WEIGHTS_LIMIT else f"sum of weights {limit}"


def constraint_tconv_stride(c: Call) -> str | None:
    """Stride values WxH must be 1x1 or 2x2 [constraint_tconv_stride; 2x1 only for one-high
    IFM and kernel]"""
    if c.function != "arm_transpose_conv_wrapper_s8":
        return None
    sw, sh = c.p("stride.w", 1), c.p("stride.h", 1)
    ok = (sw, sh) in ((1, 1), (2, 2)) or (
        (sw, sh) == (2, 1) and c.p("input_dims.h") == 1 and c.p("filter_dims.h") == 1
    )
    return None if ok else f"stride {sw}x{sh}"


def constraint_avgpool_filter(c: Call) -> str | None:
    """Kernel filter values for both width and height must be in the range [1, 8] with SAME
    padding; with VALID padding the kernel height must be in [1, 256] and the product of width
    and height in [1, 65536] [constraint_filter_range, constraint_filter_height_range_valid_pad,
    constraint_filter_product_range_valid_pad]"""
    if c.function != "arm_avgpool_s8":
        return None
    kw, kh = c.p("filter_dims.w", 1), c.p("filter_dims.h", 1)
    padded = c.p("padding.w") or c.p("padding.h")
    if padded:
        ok = FILTER_RANGE[0] <= kh <= FILTER_RANGE[1] and (
            FILTER_RANGE[0] <= kw <= FILTER_RANGE[1] or kw == c.p("stride.w")
        )
    else:
        ok = kh <= FILTER_HEIGHT_RANGE[1] and kw * kh <= FILTER_PRODUCT_RANGE[1]
    return None if ok else f"kernel {kw}x{kh}, {'SAME' if padded else 'VALID'} padding"


def constraint_maxpool_filter(c: Call) -> str | None:
    """Kernel filter height must be in the range [1, 256] and the product of kernel filter width
    and height in [1, 65536] [constraint_filter_height_range, constraint_filter_product_range]"""
    if c.function != "arm_max_pool_s8":
        return None
    kw, kh = c.p("filter_dims.w", 1), c.p("filter_dims.h", 1)
    ok = kh <= FILTER_HEIGHT_RANGE[1] and kw * kh <= FILTER_PRODUCT_RANGE[1]
    return None if ok else f"kernel {kw}x{kh}"


def constraint_u85_only(c: Call) -> str | None:
    """Transpose and batched matrix multiply of two activations run on the NPU on Ethos-U85 only
    [Vela 5.1 Ethos-U55/U65 operator list: no Transpose, no MatMul with a non-constant operand]"""
    if c.function in ("arm_transpose_s8", "arm_batch_matmul_s8") and c.family != "u85":
        return f"{c.function} on an Ethos-{c.family.upper()}"
    return None


def constraint_executorch_u55_pool_stride(c: Call) -> str | None:
    """Pooling strides must be between 1 and 3 on Ethos-U55/U65: ExecuTorch's Arm partitioner
    leaves a wider one to the CPU [ExecuTorch 1.5.1 Arm backend, pool_2d_support.py:
    AvgPool2dSupported/MaxPool2dSupported stride_check for the U55 TOSA subset. ExecuTorch's
    rule, not Vela's: on a .tflite Vela 5.2 takes the pool and splits a stride over 3
    (regor ethos_u55_constraints.cpp: ArchProperty::KernelStride decomposition), so the rule
    holds for ExecuTorch programs only]"""
    if c.function not in POOL or c.family == "u85" or c.runtime != "executorch":
        return None
    sw, sh = c.p("stride.w", 1), c.p("stride.h", 1)
    ok = STRIDE_RANGE[0] <= sw <= STRIDE_RANGE[1] and STRIDE_RANGE[0] <= sh <= STRIDE_RANGE[1]
    return None if ok else f"stride {sw}x{sh}"


def unsupported_function(function: str) -> str:
    """The message for work with no NPU mapping (fp32 ops, quantize/dequantize, float div)."""
    return f"no Ethos-U operator for {function} (int8/int16 operators only)"


#: The rules, in the order their messages are shown.
RULES: tuple[Rule, ...] = (
    constraint_tens_dimension,
    constraint_batch_size,
    constraint_stride_range,
    constraint_dilated_height_range,
    constraint_dilated_product_range,
    constraint_depth_multiplier,
    constraint_weights_limit,
    constraint_tconv_stride,
    constraint_avgpool_filter,
    constraint_maxpool_filter,
    constraint_u85_only,
    constraint_executorch_u55_pool_stride,
)


def _message(rule: Rule) -> str:
    doc = " ".join((rule.__doc__ or rule.__name__).split())
    return doc.split(" [", 1)[0]


def npu_rejections(call: Call) -> list[str]:
    """Messages of the rules ``call`` violates (empty: the NPU takes it), each with its detail."""
    if call.function not in NPU_FUNCTIONS:
        return [unsupported_function(call.function)]
    out = []
    for rule in RULES:
        detail = rule(call)
        if detail is not None:
            out.append(f"{_message(rule)} ({detail})")
    return out


def rules_table() -> list[tuple[str, str]]:
    """(rule name, message) for docs."""
    return [(r.__name__, " ".join((r.__doc__ or "").split())) for r in RULES]


__all__ = ["NPU_FUNCTIONS", "RULES", "Call", "npu_rejections", "rules_table", "unsupported_function"]

"""Helpers shared by TFLM's float32 kernels: the fused-activation clamp and the range table."""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from kernels_py._jit import jit

F32 = np.float32
#: ``std::numeric_limits<float>::lowest()`` / ``max()``: the "no activation" bounds.
FLOAT_LOWEST = float(np.finfo(np.float32).min)
FLOAT_MAX = float(np.finfo(np.float32).max)

#: ``CalculateActivationRange`` (tensorflow/lite/kernels/kernel_util.h) by TfLiteFusedActivation:
#: NONE, RELU, RELU_N1_TO_1, RELU6. Any other value (TANH, SIGN_BIT) falls into the C's ``else``,
#: i.e. no clamp at all, which is why a lowering refuses those rather than guess.
ACTIVATION_RANGES = {
    0: (FLOAT_LOWEST, FLOAT_MAX),
    1: (0.0, FLOAT_MAX),
    2: (-1.0, 1.0),
    3: (0.0, 6.0),
}


@jit
def clamp(x: np.float32, lo: np.float32, hi: np.float32) -> np.float32:  # pragma: no cover - compiled
    """``ActivationFunctionWithMinMax`` (kernels/internal/common.h): ``min(max(x, lo), hi)``.

    ``std::max(a, b)`` is ``a < b ? b : a`` and ``std::min(a, b)`` is ``b < a ? b : a``, so a
    NaN ``x`` comes out NaN and ``-0.0`` is kept against a bound of ``0.0``; an infinite ``x``
    is clamped to +-FLT_MAX when there is no activation (the bounds are finite).
    """
    if x < lo:
        x = lo
    if hi < x:
        x = hi
    return x


def as_f32(x: np.ndarray) -> np.ndarray:
    """A C-contiguous float32 array of the same shape (a 0-d array stays 0-d, which
    ``np.ascontiguousarray`` would not keep); ``x`` itself when it already is one."""
    if x.dtype != np.float32:
        raise TypeError(f"expected float32 data, got {x.dtype}")
    return x if x.flags.c_contiguous else x.copy(order="C")


@intrinsic
def fmaf(typingctx, a, b, c):  # pragma: no cover - compiled
    """``fmaf(a, b, c)``: ``a * b + c`` rounded once, as an FPU core's ``VFMA.F32`` computes it
    (LLVM's ``llvm.fma.f32``: the host's FMA instruction, or libm's exact ``fmaf``)."""
    if not all(isinstance(t, types.Float) and t.bitwidth == 32 for t in (a, b, c)):
        return None

    def codegen(context, builder, signature, args):
        f32 = ir.FloatType()
        fn = builder.module.declare_intrinsic("llvm.fma", [f32], ir.FunctionType(f32, [f32, f32, f32]))
        return builder.call(fn, args)

    return types.float32(types.float32, types.float32, types.float32), codegen

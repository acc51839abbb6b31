"""ExecuTorch's portable fp32 kernels: what a mixed program's CPU fallback layers compute.

Each op registers under its exact ``.out`` schema (``torch.ops.aten.<op>.out._schema`` of torch
2.13, the names ExecuTorch 1.5.1's emitter writes) and follows the portable kernel
(``kernels/portable/cpu/op_<op>.cpp``): float32 arithmetic with the few double intermediates
the C++ has, and the same accumulation order, which is what makes refsim agree with a
portable build bit for bit rather than within a tolerance. Every reduction is sequential:

* convolution: ``acc = 0; for ic, ky, kx: acc += x * w`` (out-of-bounds taps skipped), then
  ``+ bias``; transposed: ``out = bias``, then each output's taps in (iy, ix, ic) order.
* addmm / mm / bmm / linear: ``sum = 0; for k: sum += a[i,k] * b[k,j]``, then
  ``sum * alpha + self * beta`` (addmm) or ``+ bias`` (linear).
* mean / sum / softmax denominators: left to right over the reduced elements (row-major in
  the reduced dims) with ``np.add.accumulate``, which is strictly sequential (``np.sum`` is
  pairwise). avg_pool2d: taps in (ky, kx) order, then one division by the count.

Measured against ``executorch.runtime`` 1.5.1 (tests/interop/test_portable_float_interop.py):
conv (incl. grouped, dilated, 1-D, transposed), addmm, pooling, mean, batch norm, the
clamps, add/sub (alpha), mul, div by a tensor, sqrt, rsqrt, neg are bit-exact. Where they
are not, the cause is on the runtime's side and refsim keeps the portable semantics: the
Python wheel links ExecuTorch's *optimized* kernels for mm, bmm and linear (blocked gemm
whose last bits even depend on buffer alignment), sum.IntList, exp, gelu (vectorised erf,
~1e-2 relative in the far negative tail, where refsim is correctly rounded) and div by a
one-element tensor (multiplies by the reciprocal); and transcendentals (exp, tanh, erf,
sigmoid's exp) are evaluated here in float64 and rounded once, i.e. the correctly rounded
float, which glibc's expf/tanhf match to 1 ULP (newlib's on a device may differ by a few
ULP). All of these agree within 1e-5 relative plus 1e-6 of the output's magnitude. A
compiler that contracts ``acc += a*b`` into FMA (GCC does by default for a Cortex-M with an
FPU) would change a device's last bits as well.

Dim order is ExecuTorch's business too: its checks become validators
(``tensors_have_same_dim_order``: all default or all channels-last; the default dim order
where the kernel assumes contiguous data: mean, sum, matrix products, avg_pool2d, batch
norm). Elementwise kernels walk the bytes in memory order, convolution and max-pool honour
strides, softmax reads the bytes as if contiguous in ``sizes`` (``apply_over_dim``), as the
C++ does. Broadcasting a channels-last output is refused: the portable and optimized kernels
compute different things there.

Dtypes: float32, except relu, neg, hardtanh, clamp and max_pool2d_with_indices, which are
dtype-generic (the int8 clamp a Cortex-M program carries is this ``aten::clamp.out``).

One module per op family, named as in every other layer (kernels_py/, isa_models/, tests/ops/):
elementwise (add, sub, mul, div, neg, exp, sqrt, rsqrt), activation (clamp, hardtanh, relu,
sigmoid, tanh, hardsigmoid, hardswish, gelu), reduction (mean, sum), softmax, fully_connected
(addmm, mm, bmm, linear), conv (convolution), pooling (avg_pool2d, max_pool2d_with_indices)
and normalization (batch norm); _common holds the registration decorator, the checks above
and the float helpers they share. Importing this package registers every op.
"""

from refsim.ops.portable_float import (  # noqa: F401 - importing a module registers its ops
    activation,
    conv,
    elementwise,
    fully_connected,
    normalization,
    pooling,
    reduction,
    softmax,
)

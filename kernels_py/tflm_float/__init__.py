"""TFLM's float32 kernels, as TFLM computes them (tensorflow/tflite-micro at 90b983c2).

TFLM's cmsis_nn kernel set hands CMSIS-NN only integer tensors: for float32 every builtin runs
``tensorflow/lite/micro/kernels/<op>.cc`` (or the float branch of ``kernels/cmsis_nn/<op>.cc``,
which calls the same template), i.e. a loop in ``tensorflow/lite/kernels/internal/reference/``.
Each module mirrors one family, loop for loop:

* `conv`: CONV_2D (``reference_ops::Conv``, float overload, groups included) and
  DEPTHWISE_CONV_2D (``reference_ops::DepthwiseConv``, depthwiseconv_float.h).
* `fully_connected`: FULLY_CONNECTED (``reference_ops::FullyConnected``, float overload).
* `pooling`: AVERAGE_POOL_2D and MAX_POOL_2D (``reference_ops::AveragePool`` / ``MaxPool``).
* `elementwise`: ADD and MUL (``reference_ops::Add``/``Mul`` and their 6-D broadcast forms).
* `activations`: RELU, RELU6 (``ReluFloat``/``Relu6Float`` in micro/kernels/activations_common.cc),
  LOGISTIC, TANH, HARD_SWISH; the fused-activation clamp ``ActivationFunctionWithMinMax``.
* `softmax`: SOFTMAX (``reference_ops::Softmax``, float).
* `reduce`: MEAN (``reference_ops::Mean``, both the 4-D H/W special case and the generic one).
* `movement`: PAD, TRANSPOSE, CONCATENATION, STRIDED_SLICE (copies: no arithmetic at all).

**Exactness contract.** Every sum is accumulated in TFLM's order in float32, starting from
``0.f`` (so an all ``-0.0`` sum is ``+0.0``, as in C), bias added once after the sum (``0.f``
when there is none: ``-0.0 + 0.f`` is ``+0.0``), one division where the C divides, the clamp
``min(max(x, lo), hi)`` with ``std::max``/``std::min``'s comparisons (NaN passes through, ``-0.0``
survives a ReLU). Numba compiles these loops without fastmath, so LLVM neither reassociates nor
contracts ``a*b + c`` into a fused multiply-add: with IEEE basic operations in a fixed order the
result is bit-exact with the tflite-micro wheel (whose x86-64 build has no FMA instruction) and
with TFLM built without an FPU. On a core with an FPU, arm-none-eabi-gcc's default
``-ffp-contract=fast`` turns TFLM's ``total += x * w`` into ``VFMA.F32``: conv, depthwise and
fully connected take ``fused=True`` to compute that (``fmaf`` in the same order), which
benchmarks/tflm_float_device.py holds bit-exact against TFLM under QEMU.

Transcendentals (softmax's ``std::exp``, LOGISTIC's ``std::exp``, TANH's ``std::tanh``, all on
float, i.e. ``expf``/``tanhf``) are numba's ``math.exp``/``math.tanh`` on float32, which call the
host C library's ``expf``/``tanhf`` - the very functions the wheel's ``_runtime.so`` imports
(``expf@GLIBC_2.27``, ``tanhf@GLIBC_2.2.5``): bit-exact with the wheel on the same host
(tests/tflite/test_tflm_float.py checks the functions themselves). On a device the libm is
newlib's; docs/tflite.md ("Float32 kernels") states what that means for the last bits
(measured: up to 1 ULP in ``expf`` on a core without a double-precision FPU).
"""

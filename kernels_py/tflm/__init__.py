"""TFLM's reference integer kernels, bit-exact: the ops TFLM's cmsis_nn kernel set does not hand to
CMSIS-NN.

TFLM (tensorflow/tflite-micro at 90b983c2) runs every builtin that has no file under
``tensorflow/lite/micro/kernels/cmsis_nn/`` with its portable kernel,
``tensorflow/lite/micro/kernels/<op>.cc``, whose Eval calls a template in
``tensorflow/lite/kernels/internal/reference/``. Each module here mirrors one family: the
Prepare-time parameter arithmetic (from the tensors' float32 scales and int32 zero points, in
float or double exactly where TFLM computes in float or double) and the Eval loop.

* `fixedpoint`: ``QuantizeMultiplier``, ``MultiplyByQuantizedMultiplier`` and gemmlowp's
  fixed-point ``exp``/``logistic``/``tanh`` (generic over the integer bits), int16 helpers.
* `quantize`: QUANTIZE (float32 -> int8, int8 -> int8) and DEQUANTIZE (int8 -> float32).
* `activations`: RELU, RELU6, LOGISTIC, TANH, HARD_SWISH (int8).
* `reduce`: MEAN (int8).
* `slicing`: STRIDED_SLICE, SQUEEZE, CONCATENATION.

The int8 -> int8 element-wise kernels are a 256-entry table made in Prepare by the scalar
transliteration of TFLM's loop body (each output byte depends only on the input byte), so the
table *is* the reference and Eval is one ``take``.
"""

// OpData of TFLM's CMSIS-NN kernel kernels/cmsis_nn/depthwise_conv.cc: private to that file (an anonymous
// namespace), so the file itself is compiled here and its OpData sized.
#include "tensorflow/lite/micro/kernels/cmsis_nn/depthwise_conv.cc"

#include "probe.h"

REFSIM_PROBE(cmsis_nn_depthwise_conv_OpData, tflite::OpData)

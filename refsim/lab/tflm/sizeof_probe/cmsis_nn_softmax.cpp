// OpData of TFLM's CMSIS-NN softmax (kernels/cmsis_nn/softmax.cc): CMSISNNSoftmaxParams is private
// to that file, so the file itself is compiled here.
#include "tensorflow/lite/micro/kernels/cmsis_nn/softmax.cc"

#include "probe.h"

REFSIM_PROBE(cmsis_nn_softmax_OpData, tflite::CMSISNNSoftmaxParams)
